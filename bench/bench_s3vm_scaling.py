"""tsvm and da training time against the number of rows, on SYNTHETIC sparse data.

Rows: ~50 nonzeros each among 100,000 features, unit length; labels from a random sparse
hyperplane (5 % flipped); 200 rows labeled, all others unlabeled; r = the true positive
fraction of the unlabeled rows; λ = 0.001, λ_u = 1. Times are the solver alone (data
generation and loading excluded), one run per size. The growth exponent is the slope of
log(time) against log(rows), least squares over the sizes run.

Usage: python bench/bench_s3vm_scaling.py [--tsvm 10000 100000 ...] [--da 10000 ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_svm import synthetic  # noqa: E402

from ssl_svm.solvers.s3vm import da_binary, tsvm_binary  # noqa: E402


def problem(rows, seed=0):
    X, y = synthetic(rows, d=100_000, nnz=50, seed=seed)
    rng = np.random.default_rng(seed + 1)
    lab = rng.choice(rows, 200, replace=False)
    yy = np.zeros(rows)
    yy[lab] = y[lab]
    r = float(np.mean(y[yy == 0] > 0))
    return X, yy, r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tsvm", type=int, nargs="*", default=[10_000, 30_000, 100_000, 300_000,
                                                             1_000_000, 2_000_000])
    ap.add_argument("--da", type=int, nargs="*", default=[10_000, 30_000, 100_000, 300_000])
    args = ap.parse_args()
    X0, y0, _ = problem(20_000)
    tsvm_binary(X0, y0, 0.001, 1.0, 10000)  # compile outside the timing
    da_binary(X0[:2000], y0[:2000], 0.001, 1.0)
    print("| method | rows | nnz | time | switches / temperatures |")
    print("|---|---|---|---|---|")
    for name, sizes in (("tsvm", args.tsvm), ("da", args.da)):
        pts = []
        for n in sizes:
            X, y, r = problem(n)
            t0 = time.perf_counter()
            if name == "tsvm":
                res = tsvm_binary(X, y, 0.001, 1.0, 10000, r)
                extra = f"{res.stats['switches']} switches"
            else:
                res = da_binary(X, y, 0.001, 1.0, r)
                extra = f"{res.stats['temperatures']} temperatures"
            t = time.perf_counter() - t0
            pts.append((n, t))
            print(f"| {name} | {n:,} | {X.nnz:,} | {t:.1f} s | {extra} |", flush=True)
        if len(pts) >= 2:
            a = np.log([p[0] for p in pts])
            b = np.log([p[1] for p in pts])
            print(f"| {name} | growth exponent | | {np.polyfit(a, b, 1)[0]:.2f} | |", flush=True)


if __name__ == "__main__":
    main()
