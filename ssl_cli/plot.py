"""ssl-tune --plot: the cross-validated score over the grid, as PNG or SVG.

One axis: the score against the values (a line; log x where the values are geometric). Two
axes: a heat map with contour lines (LIBSVM's grid.py draws contours), log axes where
geometric. Failed points are gaps; the best point is marked. matplotlib is an optional
dependency (``pip install matplotlib``) imported only here, only when a plot is drawn.
"""

from __future__ import annotations

import importlib.util
import io
import math

FORMATS = {".png": "png", ".svg": "svg"}
SIZE = (6.4, 4.8)  # inches
DPI = 100  # a PNG of 640 × 480 pixels


def available() -> bool:
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        return False


def image_format(path: str) -> str | None:
    """'png' or 'svg' by the file name's extension, else None."""
    for ext, fmt in FORMATS.items():
        if path.lower().endswith(ext):
            return fmt
    return None


def _numeric(values: list) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def is_geometric(values: list) -> bool:
    """Positive numbers whose consecutive ratios are equal (a ``START:STOP:xFACTOR`` axis or a
    list like 1e-4,1e-3,1e-2), or that span two decades or more."""
    if not _numeric(values) or len(values) < 2 or min(values) <= 0:
        return False
    ratios = [b / a for a, b in zip(values, values[1:])]
    same = all(abs(r / ratios[0] - 1) < 1e-6 for r in ratios) and ratios[0] > 1
    return (same and len(values) >= 3) or max(values) / min(values) >= 100


def _edges(values: list, log: bool) -> list[float]:
    """Cell edges around sorted numeric values (geometric midpoints on a log axis)."""
    t = [math.log(v) for v in values] if log else [float(v) for v in values]
    if len(t) == 1:
        mids, lo, hi = [], t[0] - 0.5, t[0] + 0.5
    else:
        mids = [(a + b) / 2 for a, b in zip(t, t[1:])]
        lo, hi = t[0] - (mids[0] - t[0]), t[-1] + (t[-1] - mids[-1])
    e = [lo, *mids, hi]
    return [math.exp(x) for x in e] if log else e


def draw(axes: list[tuple[str, list]], score_of, best: tuple, metric: str, title: str,
         fmt: str) -> bytes:
    """The image bytes. ``score_of(index tuple)`` gives a point's score (nan if it failed or
    was not run); ``best`` is the best point's index tuple."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    matplotlib.rcParams["svg.hashsalt"] = "ssl-tune"  # equal runs, equal bytes
    fig, ax = plt.subplots(figsize=SIZE, dpi=DPI)
    try:
        if len(axes) == 1:
            name, values = axes[0]
            y = [score_of((i,)) for i in range(len(values))]
            x = values if _numeric(values) else list(range(len(values)))
            ax.plot(x, y, "o-", color="tab:blue", label=metric)
            if not _numeric(values):
                ax.set_xticks(x, [str(v) for v in values])
            elif is_geometric(values):
                ax.set_xscale("log")
            bx = x[best[0]]
            ax.plot([bx], [y[best[0]]], marker="*", markersize=16, color="tab:red",
                    linestyle="none", label=f"best: {name}={values[best[0]]:g}"
                    if _numeric(values) else f"best: {name}={values[best[0]]}")
            ax.set_xlabel(name)
            ax.set_ylabel(metric)
            ax.grid(True, alpha=0.3)
            ax.legend(loc="best")
        else:
            (nx, vx), (ny, vy) = axes[0], axes[1]
            Z = np.array([[score_of((i, j)) for i in range(len(vx))] for j in range(len(vy))])
            Zm = np.ma.masked_invalid(Z)

            def coords(values):
                if _numeric(values):
                    log = is_geometric(values)
                    order = sorted(range(len(values)), key=lambda k: values[k])
                    return [values[k] for k in order], order, log
                return list(range(len(values))), list(range(len(values))), False

            xs, ox, logx = coords(vx)
            ys, oy, logy = coords(vy)
            Zs = Zm[np.ix_(oy, ox)]
            ex, ey = _edges(xs, logx), _edges(ys, logy)
            mesh = ax.pcolormesh(ex, ey, Zs, cmap="viridis", shading="flat")
            fig.colorbar(mesh, ax=ax, label=metric)
            if Zs.count() >= 4 and len(xs) >= 2 and len(ys) >= 2:
                cs = ax.contour(xs, ys, Zs, colors="white", linewidths=0.8, alpha=0.8)
                ax.clabel(cs, fontsize=7, fmt="%.3g")
            if logx:
                ax.set_xscale("log")
            if logy:
                ax.set_yscale("log")
            if not _numeric(vx):
                ax.set_xticks(xs, [str(v) for v in vx])
            if not _numeric(vy):
                ax.set_yticks(ys, [str(v) for v in vy])
            bx = vx[best[0]] if _numeric(vx) else best[0]
            by = vy[best[1]] if _numeric(vy) else best[1]
            ax.plot([bx], [by], marker="*", markersize=18, color="tab:red",
                    markeredgecolor="white", linestyle="none",
                    label=f"best: {nx}={vx[best[0]]}, {ny}={vy[best[1]]}: "
                          f"{Z[best[1], best[0]]:.4g}")
            ax.legend(loc="upper right", fontsize=8)
            ax.set_xlabel(nx)
            ax.set_ylabel(ny)
        ax.set_title(title, fontsize=10)
        fig.tight_layout()
        buf = io.BytesIO()
        meta = {"Software": None} if fmt == "png" else {"Date": None}
        fig.savefig(buf, format=fmt, dpi=DPI, metadata=meta)
        return buf.getvalue()
    finally:
        plt.close(fig)
