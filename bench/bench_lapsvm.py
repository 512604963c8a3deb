"""LapSVM / LapRLS benchmarks: the paper's Tables 3 and 4 on this machine (issue 4).

    python bench/bench_lapsvm.py select [DATASET ...]   # γ_A, γ_I on the validation sets
    python bench/bench_lapsvm.py table4 [DATASET ...]   # errors U / V / T, 12 splits
    python bench/bench_lapsvm.py table3 [DATASET ...]   # training times, Newton vs PCG, memory

Datasets: g50c coil20b pcmac uspstb coil20 uspst (paper protocol, bench/lapsvm_protocol.py),
mnist38 (../shared/bench/mnist38-80: 80 labeled, the rest unlabeled, test file), facemit
(../shared/datasets/facemit train file: 2 labeled, 50 validation, the rest unlabeled; the
paper's training set, the 24K test set, is not in ../shared).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lapsvm_protocol as P  # noqa: E402

from ssl_svm.formats.svmlight import read_dataset  # noqa: E402
from ssl_svm.solvers import graph, kernels, lapsvm  # noqa: E402
from ssl_svm.solvers.multiclass import binary_tasks  # noqa: E402
from ssl_svm.solvers.registry import ALGORITHMS  # noqa: E402

GRID = (1e-6, 1e-4, 1e-2, 1e-1, 1.0, 10.0, 100.0)
PROTOCOL = ("g50c", "coil20b", "pcmac", "uspstb", "coil20", "uspst")


def select(name: str) -> None:
    """Mean validation error of every (γ_A, γ_I) in GRID², exact (Newton) solutions.

    Kernel and graph are built once per split and shared by the 49 pairs. Ties are broken by
    the grid order (smaller γ_A, then smaller γ_I first).
    """
    X, y = P.load(name)
    t = P.TASKS[name]
    spec = kernels.KernelSpec("rbf", P.sigma_gamma(t["sigma"]))
    errs = np.zeros((len(GRID), len(GRID)))
    errU = np.zeros_like(errs)
    nsplit = 0
    t0 = time.perf_counter()
    for L, V, U, _T in P.splits(P.split_labels(name), t["labeled"], t["validation"]):
        rows = np.concatenate([L, U])
        Xr = X[rows]
        K = kernels.gram(spec, Xr)
        lap, _ = graph.build(Xr, t["neighbors"], width=t["sigma"], degree=t["degree"])
        Kv = kernels.kernel_block(spec, X[V], kernels.prepare(Xr))
        yl = np.zeros(rows.size)
        yl[: L.size] = y[L]
        order, tasks = binary_tasks(yl)
        for a, ga in enumerate(GRID):
            for b, gi in enumerate(GRID):
                Fv = np.zeros((V.size, len(tasks)))
                Fu = np.zeros((rows.size, len(tasks)))
                for k, pos in enumerate(tasks):
                    Y = np.where(yl == 0, 0.0, np.where(yl == pos, 1.0, -1.0))
                    r = lapsvm.newton(K, lap, Y, np.ones(rows.size), ga, gi)
                    Fv[:, k] = Kv @ r.alpha
                    Fu[:, k] = r.f
                errs[a, b] += 100 * np.mean(_labels(order, Fv) != y[V])
                errU[a, b] += 100 * np.mean(_labels(order, Fu)[L.size:] != y[U])
        nsplit += 1
        print(f"  split {nsplit} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    errs /= nsplit
    errU /= nsplit
    print(f"\n{name}: mean validation error % (rows γ_A, columns γ_I)")
    print("γ_A \\ γ_I " + " ".join(f"{g:>7g}" for g in GRID))
    for a, ga in enumerate(GRID):
        print(f"{ga:>9g} " + " ".join(f"{v:7.2f}" for v in errs[a]))
    a, b = np.unravel_index(np.argmin(errs), errs.shape)
    print(f"best: gamma_a={GRID[a]:g} gamma_i={GRID[b]:g}: V {errs[a, b]:.2f} %, "
          f"U {errU[a, b]:.2f} % (paper U {P.PAPER_U.get(name)})")


def _labels(order, F):
    order = np.asarray(order)
    return np.where(F[:, 0] > 0, order[0], order[1]) if F.shape[1] == 1 else \
        order[np.argmax(F, axis=1)]


def _params(algo: str, name: str, **extra) -> dict:
    p = ALGORITHMS[algo].defaults()
    p.update(P.params_for(name))
    p.update(extra)
    return p


def table4(names) -> None:
    print("| dataset | paper U (Newton) | ours Newton U / V / T | ours PCG+stability U / V / T "
          "| ours LapRLS U / V / T |")
    print("|---|---|---|---|---|")
    for name in names:
        X, y = P.load(name)
        t = P.TASKS[name]
        cells = []
        for algo, solver in (("lapsvm", "newton"), ("lapsvm", "pcg"), ("laprls", "newton")):
            p = _params(algo, name, solver=solver)
            res = np.array([P.run_split(ALGORITHMS[algo].fit, X, y, L, V, U, T, p)[:3]
                            for L, V, U, T in P.splits(P.split_labels(name), t["labeled"],
                                                       t["validation"])])
            m, s = res.mean(0), res.std(0)
            cells.append(" / ".join(f"{a:.2f} ({b:.2f})" for a, b in zip(m, s)))
        print(f"| {name} | {P.PAPER_U[name]} | " + " | ".join(cells) + " |", flush=True)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _large(name):
    """(X train, y train with 0 = unlabeled, X test, y test)."""
    if name == "mnist38":
        d = P.SHARED / "bench" / "mnist38-80"
        tr = read_dataset(str(d / "train.svm"), n_features=784)
        te = read_dataset(str(d / "test.svm"), n_features=784)
        return tr.X, tr.y, te.X, te.y
    d = read_dataset(str(P.SHARED / "datasets" / "facemit" / "facemit-train.gz"))
    rng = np.random.default_rng(0)
    L = np.concatenate([rng.choice(np.flatnonzero(d.y == c), 1) for c in (-1, 1)])
    rest = np.setdiff1d(np.arange(d.n_rows), L)
    V = rng.choice(rest, 50, replace=False)
    y = np.zeros(d.n_rows)
    y[L] = d.y[L]
    keep = np.setdiff1d(np.arange(d.n_rows), V)
    return d.X[keep], y[keep], d.X[V], d.y[V]


def _solve(kind, K, lap, Y, ga, gi, val=None):
    c = np.ones(Y.size)
    if kind == "newton":
        return lapsvm.newton(K, lap, Y, c, ga, gi)
    if kind == "pcg":
        return lapsvm.pcg(K, lap, Y, c, ga, gi)
    if kind == "pcg-val":
        return lapsvm.pcg(K, lap, Y, c, ga, gi, early_stop="validation", validation=val)
    if Y.size <= lapsvm.DIRECT_MAX_ROWS:  # laprls as `-a laprls` (solver auto) does it
        return lapsvm.newton(K, lap, Y, c, ga, gi, hinge=False)
    return lapsvm.pcg(K, lap, Y, c, ga, gi, hinge=False)


def _table3_row(name) -> str:
    if name in PROTOCOL:
        X, y = P.load(name)
        t = P.TASKS[name]
        L, V, U, T = next(P.splits(P.split_labels(name), t["labeled"], t["validation"]))
        rows = np.concatenate([L, U])
        Xtr, ytr = X[rows], np.concatenate([y[L], np.zeros(U.size)])
        Xte, yte = X[T], y[T]
        Xv, yv = X[V], y[V]
    else:
        Xtr, ytr, Xte, yte = _large(name)
        Xv = yv = None
    params = P.params_for(name)
    spec = lapsvm.kernel_spec({**ALGORITHMS["lapsvm"].defaults(), **params}, Xtr)
    t0 = time.perf_counter()
    lap, _ = graph.build(Xtr, params["neighbors"], width=params.get("heat_width"),
                         degree=params["laplacian_degree"])
    tg = time.perf_counter() - t0
    t0 = time.perf_counter()
    K = kernels.gram(spec, Xtr)
    tk = time.perf_counter() - t0
    Kt = kernels.kernel_block(spec, Xte, kernels.prepare(Xtr))
    Kv = None if Xv is None else kernels.kernel_block(spec, Xv, kernels.prepare(Xtr))
    order, tasks = binary_tasks(ytr)
    out = {}
    for kind in ("newton", "pcg", "pcg-val", "laprls"):
        if kind == "pcg-val" and Kv is None:  # no validation rows in these splits
            out[kind] = (float("nan"), 0, float("nan"))
            continue
        F = np.zeros((Xte.shape[0], len(tasks)))
        secs = 0.0
        its = 0
        for k, pos in enumerate(tasks):
            Y = np.where(ytr == 0, 0.0, np.where(ytr == pos, 1.0, -1.0))
            t0 = time.perf_counter()
            val = None if Kv is None else lapsvm.Validation(Kv, np.where(yv == pos, 1.0, -1.0))
            r = _solve(kind, K, lap, Y, params["gamma_a"], params["gamma_i"], val)
            secs += time.perf_counter() - t0
            its += r.iterations
            F[:, k] = Kt @ r.alpha + r.b
        pred = _labels(order, F)
        if name == "facemit":  # macro error, as the paper (classes are unbalanced)
            err = 100 * 0.5 * sum(np.mean(pred[yte == c] != c) for c in (-1, 1))
        else:
            err = 100 * np.mean(pred != yte)
        out[kind] = (secs, its / len(tasks), err)
    nw, pc, pv, rl = out["newton"], out["pcg"], out["pcg-val"], out["laprls"]
    pv_time = "n/a" if pv[0] != pv[0] else f"{pv[0]:.3f} ({pv[1]:.0f})"
    pv_err = "n/a" if pv[0] != pv[0] else f"{pv[2]:.2f}"
    return (f"| {name} | {Xtr.shape[0]} | {tg:.2f} | {tk:.2f} | {nw[0]:.3f} ({nw[1]:.1f}) | "
            f"{pc[0]:.3f} ({pc[1]:.0f}) | {nw[0] / pc[0]:.1f}× | {pv_time} | {rl[0]:.3f} | "
            f"{nw[2]:.2f} / {pc[2]:.2f} / {pv_err} / {rl[2]:.2f} | {_rss_mb():.0f} |")


def table3(names) -> None:
    """Solver seconds (kernel and graph built once, as the paper's Table 3), test errors, and
    the process's peak memory so far (one dense n×n kernel; Newton adds its n×n system)."""
    print("| dataset | n | graph s | kernel s | Newton s (steps) | PCG+stability s (iters) | "
          "Newton/PCG | PCG+validation s (iters) | LapRLS s | test err % Newton / PCG / "
          "PCG+val / LapRLS | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in names:  # one process per dataset, so the peak RSS is that dataset's
        r = subprocess.run([sys.executable, __file__, "row", name], capture_output=True,
                           text=True, check=True)
        print(r.stdout.strip(), flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("select", "table4", "table3", "row"))
    ap.add_argument("datasets", nargs="*")
    a = ap.parse_args(argv)
    if a.what == "select":
        for name in a.datasets or ("g50c", "coil20b", "pcmac", "uspstb"):
            select(name)
    elif a.what == "table4":
        table4(a.datasets or PROTOCOL)
    elif a.what == "row":
        print(_table3_row(a.datasets[0]))
    else:
        table3(a.datasets or (*PROTOCOL, "mnist38", "facemit"))


if __name__ == "__main__":
    main()
