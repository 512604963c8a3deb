"""svm (L2-SVM-MFN) against liblinear -s 2: training time at equal objective.

For each problem: the optimum f* is found by running both solvers to a very tight tolerance
(the lower objective is kept). Then each solver's tolerance is loosened step by step (ours:
-e, liblinear: -e) and the loosest setting whose objective is within 1e-6 (relative) of f* is
timed: median of several runs, in this process, one after the other, so the ratio is measured
under the same machine load. Both solve  λ/2||w̃||² + 1/2 Σ max(0, 1 - y w̃·x̃)²  with x̃ = [x, 1]
(liblinear: -B 1, C = 1/(2λ)).

Usage: python bench/bench_svm.py [--quick] [--rows N]   (SSL_SHARED points at ../shared)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from liblinear.liblinearutil import problem as ll_problem
from liblinear.liblinearutil import train as ll_train

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ssl_svm.formats.svmlight import read_dataset  # noqa: E402
from ssl_svm.solvers.linalg import svm_objective  # noqa: E402
from ssl_svm.solvers.linear import SVM_FORCING, l2svm_mfn  # noqa: E402

SHARED = Path(os.environ.get("SSL_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def synthetic(rows, d=200_000, nnz=50, seed=0):
    """Sparse rows with ~nnz nonzeros, labels from a random sparse hyperplane plus 5% flips."""
    rng = np.random.default_rng(seed)
    indptr = np.arange(0, (rows + 1) * nnz, nnz, dtype=np.int64)
    indices = rng.integers(0, d, size=rows * nnz, dtype=np.int32)
    X = sp.csr_matrix((rng.random(rows * nnz), indices, indptr), shape=(rows, d))
    X.sum_duplicates()
    X.data /= np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel()).repeat(np.diff(X.indptr))
    w = rng.normal(size=d) * (rng.random(d) < 0.2)
    y = np.sign(X @ w + 1e-12)
    flip = rng.random(rows) < 0.05
    y[flip] = -y[flip]
    return X, y


def load(name):
    if name == "a9a":
        d = read_dataset(str(SHARED / "datasets/a9a/a9a"))
    elif name == "w8a":
        d = read_dataset(str(SHARED / "datasets/w8a/w8a"))
    elif name == "mnist38":
        d = read_dataset(str(SHARED / "datasets/mnist38/mnist38.gz"))
        d.X.data /= 255.0  # pixels to [0, 1], as anyone training a linear model would
    elif name == "rcv1-small":
        d = read_dataset(str(SHARED / "datasets/rcv1-small/rcv1-small"))
    else:
        raise KeyError(name)
    return sp.csr_matrix(d.X), d.y


def timed(fn, reps):
    ts = []
    out = None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def bench(name, X, y, lam, reps):
    C = 1.0 / (2.0 * lam)
    ones = np.ones(y.size)
    prob = ll_problem(y.tolist(), X)  # conversion not timed: liblinear's own data structure

    def ours(eps):
        return l2svm_mfn(X, y, ones, lam, eps=eps, forcing=SVM_FORCING)

    def theirs(eps):
        m = ll_train(prob, f"-s 2 -B 1 -c {C!r} -e {eps!r} -q")
        w, b = m.get_decfun()
        w = np.array(list(w) + [b])
        return -w if m.get_labels()[0] != 1 else w

    l2svm_mfn(X[:50], y[:50], ones[:50], lam)  # compile outside the timing
    f_ours = ours(1e-10).objective
    f_ll = svm_objective(X, y, ones, lam, theirs(1e-10), 1.0)
    f_star = min(f_ours, f_ll)
    target = f_star * (1 + 1e-6)

    def loosest(run, objective, grid):
        for eps in grid:
            if objective(run(eps)) <= target:
                return eps
        return grid[-1]

    e_ours = loosest(ours, lambda r: r.objective, [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10])
    e_ll = loosest(theirs, lambda w: svm_objective(X, y, ones, lam, w, 1.0),
                   [1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10])
    t_ours, r = timed(lambda: ours(e_ours), reps)
    t_ll, w = timed(lambda: theirs(e_ll), reps)
    f_ll = svm_objective(X, y, ones, lam, w, 1.0)
    return dict(name=name, rows=X.shape[0], d=X.shape[1], nnz=X.nnz, lam=lam, C=C,
                e_ours=e_ours, e_ll=e_ll, t_ours=t_ours, t_ll=t_ll,
                rel_ours=(r.objective - f_star) / f_star, rel_ll=(f_ll - f_star) / f_star)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip the synthetic problem")
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of the synthetic problem")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--lambda", dest="lams", type=float, nargs="+", default=[0.5, 0.005])
    ap.add_argument("--only", nargs="+", default=None)
    args = ap.parse_args()
    names = args.only or ["a9a", "w8a", "mnist38", "rcv1-small"] + \
        ([] if args.quick else ["synthetic"])
    print("| problem | rows | features | nnz | λ (C) | ours: time (-e) | liblinear -s 2: time "
          "(-e) | ratio ours/liblinear | rel. objective gap ours / liblinear |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        if name == "synthetic":
            X, y = synthetic(args.rows)
            label = f"synthetic ({args.rows:,} rows, 50 nnz/row)"
        else:
            X, y = load(name)
            label = name
        for lam in args.lams:
            r = bench(label, X, y, lam, args.reps)
            print(f"| {r['name']} | {r['rows']:,} | {r['d']:,} | {r['nnz']:,} | {lam:g} "
                  f"({r['C']:g}) | {r['t_ours']:.3f} s ({r['e_ours']:g}) | {r['t_ll']:.3f} s "
                  f"({r['e_ll']:g}) | {r['t_ours'] / r['t_ll']:.2f} | {r['rel_ours']:.1e} / "
                  f"{r['rel_ll']:.1e} |", flush=True)


if __name__ == "__main__":
    main()
