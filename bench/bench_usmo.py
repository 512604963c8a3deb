"""USMO benchmarks (issue 5): the Table III protocol, and time / memory against an exact QP.

    python bench/bench_usmo.py table3            # F-measure per set and λ, both scalings
    python bench/bench_usmo.py scaling [SET ...] # time and peak RSS vs n, USMO and OSQP
    python bench/bench_usmo.py one SET KERNEL N SOLVER   # one run (used by scaling)
    python bench/bench_usmo.py prior [--draws 10]        # --prior auto on the 9 UCI sets

Prior protocol (issue 5): the 9 UCI sets, 20 % of the positives labeled (draws 0, 1, …), raw
features; target = the positive fraction of the unlabeled rows; a hit = within ±0.05. The
"supervised scores" rows run the same ratio rule on scores of a logistic regression fitted to
the true classes (which PU data do not have): how far the rule can get when the scores are as
good as a linear model can make them.

Scaling protocol (the paper's Figures 4-7): 100 labeled positives, N unlabeled rows drawn at
random from the rest, features min-max scaled to [0, 1], λ = 0.01, rbf γ = 0.5 (σ = 1), true
prior of the unlabeled rows, τ = 1e-3; each run in its own process (peak RSS is that run's).
Sizes beyond a training file append its test file (shuttle, a9a); a set smaller than the
largest size runs there with every row it has (bank-marketing 45,111, a9a 48,742).
OSQP gets the dual as a sparse QP with the dense K_UU block (eps 1e-6); it stops being run
once its n² kernel would pass 1 GiB (n ≈ 11.5K).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import usmo_protocol as UP  # noqa: E402

from ssl_svm.formats.svmlight import read_dataset  # noqa: E402
from ssl_svm.solvers import kernels, usmo  # noqa: E402
from ssl_svm.solvers import prior as prior_  # noqa: E402
from ssl_svm.solvers.kernels import KernelSpec  # noqa: E402

SCALING_SETS = ("bank-marketing", "shuttle", "mnist", "a9a")
SIZES = (1000, 2000, 5000, 10000, 20000, 50000)
QP_MAX_BYTES = 1 << 30


def _minmax(X):
    A = X.toarray()
    lo, hi = A.min(axis=0), A.max(axis=0)
    return sp.csr_matrix((A - lo) / np.where(hi > lo, hi - lo, 1.0))


def _read(path, n_features, with_test):
    d = read_dataset(str(path), n_features=n_features)
    X, y = sp.csr_matrix(d.X), d.y
    if with_test:
        t = read_dataset(str(path) + ".t" if path.suffix != ".gz" else
                         str(path).replace(".gz", ".t.gz"), n_features=X.shape[1])
        X, y = sp.vstack([X, sp.csr_matrix(t.X)], format="csr"), np.concatenate([y, t.y])
    return X, y


def load_big(name, with_test=False):
    """(X, y ±1) of a scaling set; with_test appends the set's test file (shuttle, mnist, a9a)
    for sizes beyond the training file."""
    ds = UP.SHARED / "datasets"
    if name == "bank-marketing":
        X, y = _read(ds / "bank-marketing" / "bank-full", None, False)
        return _minmax(X), y
    if name == "shuttle":  # class 1 against the rest
        X, y = _read(ds / "shuttle" / "shuttle", None, with_test)
        return _minmax(X), np.where(y == 1, 1.0, -1.0)
    if name == "mnist":  # digit 0 against the rest, pixels / 255
        X, y = _read(ds / "mnist" / "mnist.gz", 784, with_test)
        return X / 255.0, np.where(y == 0, 1.0, -1.0)
    return _read(ds / "a9a" / "a9a", 123, with_test)


def one(name, kernel, n, solver) -> dict:
    X, y = load_big(name)
    if n > y.size - 100 and name != "bank-marketing":
        X, y = load_big(name, with_test=True)
    rng = np.random.default_rng(0)
    pos = np.flatnonzero(y > 0)
    P = rng.choice(pos, 100, replace=False)
    rest = np.setdiff1d(np.arange(y.size), P)
    n = min(n, rest.size)  # the largest size takes every row a set has
    U = rng.choice(rest, n, replace=False)
    rows = np.concatenate([P, U])
    Xr = sp.csr_matrix(X[rows])
    yy = np.concatenate([np.ones(100), np.zeros(n)])
    prior = float(np.mean(y[U] > 0))
    spec = KernelSpec(kernel, 0.5)
    lam = 0.01
    if solver == "usmo":  # load (or compile, on the very first run) the numba code untimed
        usmo.usmo(Xr[:120], yy[:120], lam, prior, spec)
    t0 = time.perf_counter()
    if solver == "usmo":
        r = usmo.usmo(Xr, yy, lam, prior, spec, tau=1e-3, cache_mb=1000)
        obj = r.objective
        f = r.g + r.beta
    else:
        import osqp
        c1, c2 = prior / (2 * lam * 100), 1.0 / (2 * lam * n)
        Xu = Xr[100:]
        Kuu = kernels.gram(spec, Xu, QP_MAX_BYTES)
        h = kernels.kernel_times(spec, Xu, Xr[:100], np.ones((100, 1)))[:, 0]
        Iu = sp.identity(n, format="csc")
        Pm = sp.block_diag([sp.csc_matrix(np.triu(Kuu)), sp.csc_matrix((n, n))], format="csc")
        del Kuu
        A = sp.vstack([sp.hstack([sp.csc_matrix(np.ones((1, n))), sp.csc_matrix((1, n))]),
                       sp.hstack([-Iu, -Iu]), sp.hstack([Iu, -Iu]),
                       sp.hstack([Iu, sp.csc_matrix((n, n))])], format="csc")
        lo = np.concatenate([[c1 * 100], np.full(2 * n, -np.inf), np.zeros(n)])
        hi = np.concatenate([[c1 * 100], np.zeros(n), np.full(n, c2), np.full(n, c2)])
        q = np.concatenate([-c1 * h, np.ones(n)])
        m = osqp.OSQP()
        m.setup(Pm, q, A, lo, hi, verbose=False, eps_abs=1e-6, eps_rel=1e-6, max_iter=200000)
        res = m.solve()
        spp = float(kernels.kernel_times(spec, Xr[:100], Xr[:100], np.ones((100, 1))).sum())
        obj = float(res.info.obj_val) + 0.5 * c1 * c1 * spp
        f = None
    secs = time.perf_counter() - t0
    out = {"n": n, "secs": secs, "objective": obj,
           "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}
    if f is not None:
        pred = np.where(f > 0, 1.0, -1.0)
        out["f"] = UP.f_measure(pred, y[U])
    return out


def scaling(names, kernels_=("linear", "rbf"), sizes=SIZES) -> None:
    print("| set | kernel | n | USMO s | USMO RSS MB | OSQP s | OSQP RSS MB | OSQP/USMO | "
          "objective rel. diff | F (USMO) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        for kern in kernels_:
            for n in sizes:
                res = {}
                for solver in ("usmo", "osqp"):
                    if solver == "osqp" and 8 * n * n > QP_MAX_BYTES:
                        res[solver] = None
                        continue
                    p = subprocess.run([sys.executable, __file__, "one", name, kern, str(n),
                                        solver], capture_output=True, text=True)
                    res[solver] = json.loads(p.stdout) if p.returncode == 0 else \
                        {"error": p.stderr.strip().splitlines()[-1:]}
                u, q = res["usmo"], res["osqp"]
                if "secs" not in u:
                    print(f"| {name} | {kern} | {n} | failed: {u} |", flush=True)
                    continue
                if u["n"] < n and n != sizes[-1]:
                    continue  # the set is smaller than this size: only the largest runs
                qs = "—" if q is None or "secs" not in q else f"{q['secs']:.2f}"
                qm = "—" if q is None or "secs" not in q else f"{q['rss_mb']:.0f}"
                ratio = "—" if q is None or "secs" not in q else f"{q['secs'] / u['secs']:.1f}×"
                diff = "—" if q is None or "secs" not in q else \
                    f"{(u['objective'] - q['objective']) / abs(q['objective']):.1e}"
                print(f"| {name} | {kern} | {u['n']} | {u['secs']:.2f} | {u['rss_mb']:.0f} | "
                      f"{qs} | {qm} | {ratio} | {diff} | {100 * u['f']:.1f} |", flush=True)


def table3(prior_from: str = "all", positive: str = "plus", scalings=("01", "raw")) -> None:
    """prior_from 'all' = the class proportion of the whole training set (the paper's footnote
    13), 'unlabeled' = the positive fraction of the unlabeled rows; positive 'plus' = the
    file's +1 class is the positive class, 'majority' = the larger class is."""
    for scaling_ in scalings:
        what = "class proportion of the training set" if prior_from == "all" else \
            "positive fraction of the unlabeled rows"
        print(f"\nfeatures: {'min-max [0, 1]' if scaling_ == '01' else 'raw'}; prior = {what}; "
              f"positive class = {'+1' if positive == 'plus' else 'the majority class'}")
        print("| set | F(+1) at λ = 1e-4 / 1e-3 / 1e-2 / 0.1 | F(minority class) | paper |")
        print("|---|---|---|---|")
        allp, allm = [], []
        for name in UP.SETS:
            X, y = UP.load(name, scaling_)
            if positive == "majority" and np.mean(y > 0) < 0.5:
                y = -y
            yy = UP.pu_split(y)
            unl = yy == 0
            prior = float(np.mean(y[unl] > 0)) if prior_from == "unlabeled" else \
                float(np.mean(y > 0))
            minority = 1.0 if np.mean(y > 0) < 0.5 else -1.0
            fp, fm = [], []
            for lam in UP.LAMBDAS:
                r = usmo.usmo(X, yy, lam, prior, KernelSpec("linear"), tau=1e-3,
                              max_iter=10_000_000)
                pred = np.where(r.g + r.beta > 0, 1.0, -1.0)
                mark = "" if r.converged else "*"
                fp.append(f"{100 * UP.f_measure(pred, y[unl]):.1f}{mark}")
                fm.append(f"{100 * UP.f_measure(pred, y[unl], minority):.1f}{mark}")
                allp.append((name, lam, UP.f_measure(pred, y[unl])))
                allm.append((name, lam, UP.f_measure(pred, y[unl], minority)))
            print(f"| {name} | {' / '.join(fp)} | {' / '.join(fm)} | "
                  f"{' / '.join(map(str, UP.PAPER[name]))} |", flush=True)
        for label, rows in (("F(+1)", allp), ("F(minority)", allm)):
            avg = [100 * np.mean([f for _, lam_, f in rows if lam_ == lam])
                   for lam in UP.LAMBDAS]
            print(f"average {label} over our {len(UP.SETS)} sets: "
                  f"{' / '.join(f'{v:.1f}' for v in avg)}  (paper, 12 sets: "
                  f"{' / '.join(map(str, UP.PAPER_AVERAGE))})")
        print("(* = stopped before τ-optimality)")


def prior(draws: int = 10) -> None:
    """--prior auto (solvers/prior.py) per set and draw, PU scores and supervised scores (an
    oracle); bench_prior.py compares it with other estimators."""
    for label, oracle in (("PU scores (--prior auto)", False),
                          ("supervised scores (oracle)", True)):
        print(f"\n{label}: estimate per draw 0..{draws - 1}")
        print("| set | p | true π | estimates | mean | sd | hits |")
        print("|---|---|---|---|---|---|---|")
        hits = np.zeros(draws, dtype=int)
        for name in UP.PRIOR_SETS:
            X, y = UP.load(name, "raw")
            est = []
            for seed in range(draws):
                yy = UP.pu_split(y, 0.2, seed)
                true = float(np.mean(y[yy == 0] > 0))
                e = prior_.estimate_prior(X, yy, seed=seed,
                                          score_target=(y > 0) if oracle else None).value
                est.append(e)
                hits[seed] += abs(e - true) <= 0.05
            e = np.array(est)
            print(f"| {name} | {int(yy.sum())} | {true:.2f} | "
                  f"{' '.join(f'{v:.2f}' for v in e)} | {e.mean():.2f} | {e.std():.2f} | "
                  f"{int(np.sum(np.abs(e - true) <= 0.05))}/{draws} |", flush=True)
        print(f"sets within ±0.05 per draw: {' '.join(map(str, hits))} "
              f"(mean {hits.mean():.1f}, min {hits.min()})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("table3", "scaling", "one", "prior"))
    ap.add_argument("args", nargs="*")
    ap.add_argument("--kernels", default="linear,rbf", help="scaling: kernels to run")
    ap.add_argument("--prior-from", choices=("all", "unlabeled"), default="all",
                    help="table3: π = class proportion of the training set (the paper's "
                    "footnote 13) or of the unlabeled rows")
    ap.add_argument("--positive", choices=("plus", "majority"), default="plus",
                    help="table3: which class is the positive one")
    ap.add_argument("--scalings", default="01,raw", help="table3: 01 and/or raw")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)),
                    help="scaling: numbers of unlabeled rows")
    ap.add_argument("--draws", type=int, default=10, help="prior: labeled draws per set")
    a = ap.parse_args(argv)
    if a.what == "prior":
        prior(a.draws)
    elif a.what == "table3":
        table3(a.prior_from, a.positive, tuple(a.scalings.split(",")))
    elif a.what == "scaling":
        scaling(a.args or SCALING_SETS, tuple(a.kernels.split(",")),
                tuple(int(v) for v in a.sizes.split(",")))
    else:
        name, kern, n, solver = a.args
        print(json.dumps(one(name, kern, int(n), solver)))


if __name__ == "__main__":
    main()
