"""Two interleaved Swiss rolls: a two-class manifold set of any size, for the graph solvers at
10⁴–10⁶ rows (bench_scale.py --split DIR).

Class +1 lies on the roll (t cos t, h, t sin t), class -1 on the roll of radius t + π (halfway
between +1's turns), t uniform on [1.5π, 4.5π], h on [0, 10]; Gaussian noise of deviation
``--noise`` on ``--dims`` coordinates (the three of the rolls and dims − 3 of noise only), then
a fixed random rotation. A linear classifier cannot separate the rolls; one that follows the
manifold can. Writes DIR/train.svm (``--labeled`` rows labeled, half of each class, first;
the rest 0 = unlabeled), DIR/train.truth (every training row's class) and DIR/test.svm.

    python bench/make_rolls.py --rows 1000000 --out /tmp/rolls-1m
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def rolls(n: int, dims: int, noise: float, rng) -> tuple[np.ndarray, np.ndarray]:
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    t = rng.uniform(1.5 * np.pi, 4.5 * np.pi, n)
    h = rng.uniform(0.0, 10.0, n)
    r = t + np.where(y > 0, 0.0, np.pi)
    X = np.zeros((n, dims))
    X[:, 0] = r * np.cos(t)
    X[:, 1] = h
    X[:, 2] = r * np.sin(t)
    X += rng.normal(scale=noise, size=X.shape)
    return X, y


def write(path: Path, X: np.ndarray, y: np.ndarray, block: int = 100_000) -> None:
    with open(path, "w") as f:
        for s in range(0, len(X), block):
            lines = []
            for xi, yi in zip(X[s:s + block], y[s:s + block]):
                feats = " ".join(f"{j + 1}:{v:.5g}" for j, v in enumerate(xi))
                lines.append(f"{int(yi):+d} {feats}" if yi else f"0 {feats}")
            f.write("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000, help="training rows")
    ap.add_argument("--test", type=int, default=20_000, help="test rows")
    ap.add_argument("--labeled", type=int, default=100)
    ap.add_argument("--dims", type=int, default=10)
    ap.add_argument("--noise", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    Q = np.linalg.qr(rng.normal(size=(a.dims, a.dims)))[0]
    X, y = rolls(a.rows + a.test, a.dims, a.noise, rng)
    X = X @ Q
    Xtr, ytr, Xte, yte = X[:a.rows], y[:a.rows], X[a.rows:], y[a.rows:]
    pos = np.flatnonzero(ytr > 0)[:a.labeled // 2]
    neg = np.flatnonzero(ytr < 0)[:a.labeled - a.labeled // 2]
    lab = np.concatenate([pos, neg])
    order = np.concatenate([lab, np.setdiff1d(np.arange(a.rows), lab)])
    Xtr, ytr = Xtr[order], ytr[order]
    shown = ytr.copy()
    shown[a.labeled:] = 0.0
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    write(out / "train.svm", Xtr, shown)
    np.savetxt(out / "train.truth", ytr, fmt="%+d")
    write(out / "test.svm", Xte, yte)


if __name__ == "__main__":
    main()
