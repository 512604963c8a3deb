"""The class prior of PU data (``--prior auto``) against other estimators, side by side on the
same draws; the interval's coverage; USMO's F-measure with the estimated, swept and true π;
``--prior auto`` time against one fit on 100,000 sparse rows.

    python bench/bench_prior.py [--draws 10] [--sets a,b]   # the 9 UCI sets (BENCHMARKS.md)
    python bench/bench_prior.py held [--draws 10]   # sets the rule was not tuned on
    python bench/bench_prior.py speed [--rows 100000] [--features 5000]   # sparse rows
    python bench/bench_prior.py warnings [--draws 3] [--protocol held|resampled]
        # each PU warning's precision, held sets
    python bench/bench_prior.py biased-svm [--draws 3]   # usmo against the biased SVM
    python bench/bench_prior.py floor [--draws 3] [--protocol held|resampled]
        # the same rule on scores of the true classes: the error a better scorer leaves

The 9 UCI sets of the PU benchmark (usmo_protocol.py): raw features, 20 % of the positives
labeled (draws 0..D−1), target = the positive fraction of the unlabeled rows. Methods:

* ``auto``: ``--prior auto`` (solvers/prior.py), its 90 % bootstrap interval;
* ``halves``: the rule --prior auto used before (linear scores of 20 random halvings, each
  half's ratio curve averaged, minimum over q ≥ 40 %);
* ``dedpul``: DEDPUL's estimate (Ivanov 2020) on the same cross-fitted linear scores: kernel
  densities of the positive and unlabeled scores, their ratio made monotone, π = 1/(its 95th
  percentile) ("dmin"), then its EM refinement ("em");
* ``en``: Elkan & Noto's e1 on the same scores (pulearn's estimator);
* ``km2``: KM2 (Ramaswamy, Scott & Tewari 2016) from the authors' code as DEDPUL's repository
  carries it (KMPE.py), run by the Python in $KM2_PYTHON with $KM2_DIR on its path (cvxopt);
  at most 800 unlabeled and 400 labeled rows per draw (its QP is O(n²)); skipped when unset.

F-measure: USMO (linear, features min-max scaled to [0, 1]: on raw features the solver meets
its iteration limit on several sets) on the unlabeled rows with the true π and the ``auto``
estimate at the default λ (auto), and with the π the sweep picks (``ssl-tune -G prior=auto``:
3 folds, the PU metric) at λ = 0.01.

``held``: the same protocol on sets the rule and its interval were not tuned on: the other
binary sets of ../shared/datasets (the large ones as a seeded sample of their rows) and
generated Gaussian classes (5 features, 1,000 unlabeled rows, π 0.2 / 0.5 / 0.8; separated,
overlapping, and overlapping with 300 labeled positives). ``auto`` against DEDPUL.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp
import usmo_protocol as UP  # noqa: I001 -- puts the repository on sys.path

from ssl_svm.selection.tuning import held_out_labels, make_problem, run_group, score
from ssl_svm.solvers import prior as PR
from ssl_svm.solvers.registry import ALGORITHMS
from ssl_svm.training import sweep_values

LAMBDA = 0.01
KM2_PROGRAM = r"""
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
import KMPE
d = np.load(sys.argv[2])
print(KMPE.wrapper(d["U"], d["P"], disp=False, KM_1=False, KM_2=True))
"""


def halves(X, y, repeats=20, seed=0):
    """The rule --prior auto used before: linear scores of random halvings."""
    s = (y > 0).astype(float)
    A = PR.standardised_rows(sp.csr_matrix(X))
    qs = np.round(np.arange(0.4, 1.0 + 1e-9, 0.05), 10)
    rng = np.random.default_rng(seed)
    curve, k = np.zeros(qs.size), 0
    for _ in range(repeats):
        half = rng.permutation(y.size) % 2
        for h in (0, 1):
            tr, te = half != h, half == h
            if s[tr].sum() < 1 or s[te].sum() < 1:
                continue
            w, b = PR.logistic_fit(A[tr], s[tr], 1e-2)
            sc = A[te] @ w + b
            curve += PR.ratio_curve(np.sort(sc[s[te] > 0]), np.sort(sc[s[te] == 0]), qs)
            k += 1
    return float(np.clip((curve / k).min(), PR.FLOOR, PR.CEILING))


def linear_scores(X, y, seed):
    s = (y > 0).astype(float)
    return PR.cross_fitted_scores(PR.standardised_rows(sp.csr_matrix(X)), s, s, 5, 1e-2,
                                  np.random.default_rng(seed)), s


def _kde(x, at):
    bw = 1.06 * max(float(x.std()), 1e-12) * x.size ** -0.2  # Silverman
    d = (at[:, None] - x[None, :]) / bw
    return np.exp(-0.5 * d * d).sum(axis=1) / (x.size * bw * np.sqrt(2 * np.pi))


def dedpul(sc, s):
    """(dmin, em) of DEDPUL on held-out scores."""
    from sklearn.isotonic import IsotonicRegression

    p, u = sc[s == 1], sc[s == 0]
    ratio = _kde(p, u) / np.maximum(_kde(u, u), 1e-300)
    order = np.argsort(u)
    mono = IsotonicRegression(increasing=True).fit_transform(u[order], ratio[order])
    dmin = min(1.0, 1.0 / max(float(np.quantile(mono, 0.95, method="higher")), 1.0))
    alpha = 0.0  # the negative share of the unlabeled rows
    for _ in range(1000):
        post = np.maximum(0.0, 1.0 - (1.0 - alpha) * mono)
        if abs(post.mean() - alpha) < 1e-5 or post.min() > 0:
            break
        alpha = float(post.mean())
    return float(np.clip(dmin, PR.FLOOR, PR.CEILING)), float(np.clip(1 - alpha, PR.FLOOR,
                                                                     PR.CEILING))


def elkan_noto(sc, s):
    g = 1.0 / (1.0 + np.exp(-sc))
    c = g[s == 1].mean()
    return float(np.clip((g.sum() / c - s.sum()) / (s == 0).sum(), PR.FLOOR, PR.CEILING))


def km2(X, y, seed):
    python, folder = os.environ.get("KM2_PYTHON"), os.environ.get("KM2_DIR")
    if not python or not folder:
        return float("nan")
    A = PR.standardised_rows(sp.csr_matrix(X))
    A = A if isinstance(A, np.ndarray) else A.X.toarray()
    rng = np.random.default_rng(seed)
    P, U = np.flatnonzero(y > 0), np.flatnonzero(y == 0)
    P = rng.choice(P, min(P.size, 400), replace=False)
    U = rng.choice(U, min(U.size, 800), replace=False)
    with tempfile.TemporaryDirectory() as d:
        np.savez(os.path.join(d, "pu.npz"), P=A[P], U=A[U])
        out = subprocess.run([python, "-c", KM2_PROGRAM, folder, os.path.join(d, "pu.npz")],
                             capture_output=True, text=True, check=True)
    return float(np.clip(float(out.stdout.split()[-1]), PR.FLOOR, PR.CEILING))


def usmo_f(X, y, truth, prior):
    fit = ALGORITHMS["usmo"].fit
    params = {p.name: p.default for p in ALGORITHMS["usmo"].params}
    params.update({"prior": str(prior)})
    m = fit(X, y, np.ones(y.size), params)
    U = y == 0
    pred = m.labels_from_values(m.decision_function(X[U]))
    return 100.0 * UP.f_measure(pred, truth[U])


def swept_prior(X, y, e, seed):
    """The π of the -G prior=auto values that the PU metric prefers over 3 folds."""
    values = sweep_values(e)
    params = {p.name: p.default for p in ALGORITHMS["usmo"].params}
    params["lambda"] = LAMBDA
    problem = make_problem("usmo", sp.csr_matrix(X), y, np.ones(y.size), params, {}, 3, seed)
    held = np.concatenate([held_out_labels(problem, f) for f in range(3)])
    points = [(i, {"prior": v}) for i, v in enumerate(values)]
    results = [run_group(problem, points, f, False) for f in range(3)]
    scores = [score("pu", held, [results[f][i] for f in range(3)]) for i in range(len(values))]
    return float(values[int(np.nanargmax(scores))])


def uci(draws: int, sets) -> None:
    methods = ("auto", "halves", "dmin", "em", "en", "km2")
    print(f"draws 0..{draws - 1}; mean absolute error of π per set (mean estimate), the 90 % "
          "interval's coverage and median width, USMO F (%) with the true / estimated / swept π")
    print("| set | p | true π | " + " | ".join(methods) + " | cover | width | F true | F auto "
          "| F swept | s auto |")
    print("|---|---|---|" + "---|" * (len(methods) + 7))
    total = {m: [] for m in methods}
    covered, cells, F, widths = 0, 0, {"true": [], "auto": [], "swept": []}, []
    for name in sets:
        X, y = UP.load(name, "raw")
        X01, _ = UP.load(name, "01")
        err = {m: [] for m in methods}
        est = {m: [] for m in methods}
        cov, width, secs, f = 0, [], [], {k: [] for k in F}
        for seed in range(draws):
            yy = UP.pu_split(y, 0.2, seed)
            true = float(np.mean(y[yy == 0] > 0))
            t0 = time.perf_counter()
            e = PR.estimate_prior(X, yy, seed=seed)
            secs.append(time.perf_counter() - t0)
            sc, s = linear_scores(X, yy, seed)
            got = {"auto": e.value, "halves": halves(X, yy, seed=seed), "en": elkan_noto(sc, s),
                   "km2": km2(X, yy, seed)}
            got["dmin"], got["em"] = dedpul(sc, s)
            for m in methods:
                est[m].append(got[m])
                err[m].append(abs(got[m] - true))
            cov += e.low <= true <= e.high
            width.append(e.width)
            f["true"].append(usmo_f(X01, yy, y, true))
            f["auto"].append(usmo_f(X01, yy, y, e.value))
            f["swept"].append(usmo_f(X01, yy, y, swept_prior(X01, yy, e, seed)))
        for m in methods:
            total[m].append(float(np.mean(err[m])))
        covered += cov
        cells += draws
        widths += width
        for k in F:
            F[k].append(float(np.mean(f[k])))
        print(f"| {name} | {int(yy.sum())} | {true:.2f} | " + " | ".join(
            f"{np.mean(err[m]):.3f} ({np.mean(est[m]):.2f})" for m in methods) +
            f" | {cov}/{draws} | {np.median(width):.2f} | {np.mean(f['true']):.1f} | "
            f"{np.mean(f['auto']):.1f} | {np.mean(f['swept']):.1f} | {np.median(secs):.2f} |",
            flush=True)
    print("| **mean** | | | " + " | ".join(f"**{np.mean(total[m]):.3f}**" for m in methods) +
          f" | **{covered}/{cells}** | **{np.median(widths):.2f}** | "
          f"**{np.mean(F['true']):.1f}** | **{np.mean(F['auto']):.1f}** | "
          f"**{np.mean(F['swept']):.1f}** | |")
    print(json.dumps({"mae": {m: float(np.mean(v)) for m, v in total.items()},
                      "coverage": covered / cells,
                      "F": {k: float(np.mean(v)) for k, v in F.items()},
                      "F per set": {k: dict(zip(sets, v)) for k, v in F.items()}}))


# sets --prior auto was not tuned on: path under ../shared/datasets, rows sampled (None: all)
HELD = {"g50c": ("g50c/g50c", None), "bci": ("sslbook-bci/sslbook-bci", None),
        "usps": ("sslbook-usps/sslbook-usps.gz", None), "pcmac": ("pcmac/pcmac", None),
        "rcv1": ("rcv1-small/rcv1-small", None), "a9a": ("a9a/a9a", 1000),
        "bank": ("bank-marketing/bank-full", 1500), "facemit": ("facemit/facemit-train.gz", 1000),
        "mnist38": ("mnist38/mnist38.t", 800), "isolet": ("isolet-1560/isolet-1560.gz", None)}
# generated: (distance between the class means, labeled positives)
GENERATED = {"separated": (6.0, 50), "overlapping": (2.0, 50), "overlapping, p=300": (2.0, 300)}


def held_set(name: str):
    """(X, y ±1) of a HELD set; isolet: letters A–M against N–Z."""
    from ssl_svm.formats.svmlight import read_dataset

    path, rows = HELD[name]
    d = read_dataset(str(UP.SHARED / "datasets" / path))
    X, y = sp.csr_matrix(d.X), np.asarray(d.y, dtype=float)
    if name == "isolet":
        y = np.where(y <= 13, 1.0, -1.0)
    if rows:
        keep = np.sort(np.random.default_rng(123).choice(y.size, rows, replace=False))
        X, y = X[keep], y[keep]
    return X, y


def generated(distance: float, p: int, pi: float, seed: int):
    """(X, PU labels, y ±1): 5-dimensional unit Gaussians ``distance`` apart, 1,000 unlabeled
    rows with a share ``pi`` of positives, and ``p`` labeled positives."""
    rng = np.random.default_rng(seed)
    npos = int(round(1000 * pi))
    half = distance / 2 / np.sqrt(5)
    X = np.vstack([rng.normal(0, 1, (npos + p, 5)) + half,
                   rng.normal(0, 1, (1000 - npos, 5)) - half])
    y = np.r_[np.ones(npos + p), -np.ones(1000 - npos)]
    yy = np.zeros(y.size)
    yy[npos:npos + p] = 1.0
    return sp.csr_matrix(X), yy, y


def held_draws(draws: int, classes: bool = False):
    """Every (set name, draw, X, PU labels, true π of the unlabeled rows) of the held sets and
    the generated ones, draws 0..draws−1, in order; with ``classes``, each row's true class
    (±1) last."""
    cases = [(n, None) for n in HELD] + [(f"{g}, π {pi}", (g, pi)) for g in GENERATED
                                          for pi in (0.2, 0.5, 0.8)]
    for name, gen in cases:
        if gen is None:
            X, y = held_set(name)
        for seed in range(draws):
            if gen is None:
                yy = UP.pu_split(y, 0.2, seed)
            else:
                X, yy, y = generated(*GENERATED[gen[0]], gen[1], seed)
            truth = float(np.mean(y[yy == 0] > 0))
            yield (name, seed, X, yy, truth, y) if classes else (name, seed, X, yy, truth)


def held(draws: int) -> None:
    print(f"draws 0..{draws - 1}; mean absolute error of π (mean signed error), the 90 % "
          "interval's coverage and median width, the 95 % upper bound's coverage and median "
          "excess over π, DEDPUL on the same scores")
    print("| set | p | true π | auto | cover | width | bound ≥ π | bound − π | warned | dmin "
          "| em |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    mae, covered, widths, bounded, excess, cases = [], 0, [], 0, [], 0
    rows = {}
    for name, seed, X, yy, true in held_draws(draws):
        rows.setdefault(name, []).append((seed, X, yy, true))
    for name, runs in rows.items():
        cases += 1
        err, dm, em, cov, width, warned, held_up, over = [], [], [], 0, [], 0, 0, []
        for seed, X, yy, true in runs:
            e = PR.estimate_prior(X, yy, seed=seed)
            err.append(e.value - true)
            cov += e.low <= true <= e.high
            width.append(e.width)
            held_up += e.upper >= true
            over.append(e.upper - true)
            warned += e.warning is not None
            a, b = dedpul(*linear_scores(X, yy, seed))
            dm.append(abs(a - true))
            em.append(abs(b - true))
        mae.append(float(np.mean(np.abs(err))))
        covered += cov
        widths += width
        bounded += held_up
        excess += over
        print(f"| {name} | {int(yy.sum())} | {true:.2f} | {mae[-1]:.3f} ({np.mean(err):+.3f}) | "
              f"{cov}/{draws} | {np.median(width):.2f} | {held_up}/{draws} | "
              f"{np.median(over):.2f} | {warned}/{draws} | {np.mean(dm):.3f} | "
              f"{np.mean(em):.3f} |", flush=True)
    print(f"| **mean** | | | **{np.mean(mae):.3f}** | **{covered}/{draws * cases}** | "
          f"**{np.median(widths):.2f}** | **{bounded}/{draws * cases}** | "
          f"**{np.median(excess):.2f}** | | | |")


# the fit's warnings after --prior auto, and when each is right (err: the estimate − π)
FIT_WARNINGS = {"every unlabeled row positive (prior too large)": lambda err: err > 0.0,
                "no positive predicted": lambda err: True}
# the estimate's warnings (PriorEstimate.warning), as the table names them
PRIOR_WARNINGS = {"upper bound": "upper bound only (scores hardly separate): π ≤ high end",
                  "uncertain": "uncertain (interval wider than 0.2): π in the interval",
                  "too high": "likely too high (narrow interval, ratio still falls): π < "
                              "estimate"}


def resampled_splits(draws: int, unlabeled: int = 1000, labeled: int = 100, test: int = 500):
    """The issue's protocol on the real HELD sets (all their rows): per true π of 0.2, 0.5
    and 0.8, ``labeled`` labeled positives and ``unlabeled`` unlabeled rows with that share
    of positives, drawn without replacement (fewer unlabeled rows where a set has too few of
    a class), and up to ``test`` rows of the rest at the same π (none where fewer than 50
    fit); yields (name, seed, X, PU labels, true π, the unlabeled rows' classes (bool), test
    rows or None, their classes)."""
    from ssl_svm.formats.svmlight import read_dataset

    for name, (path, _) in HELD.items():
        d = read_dataset(str(UP.SHARED / "datasets" / path))
        X, y = sp.csr_matrix(d.X), np.asarray(d.y, dtype=float)
        if name == "isolet":
            y = np.where(y <= 13, 1.0, -1.0)
        pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y <= 0)
        for pi in (0.2, 0.5, 0.8):
            n = min(unlabeled, int((pos.size - labeled) / pi), int(neg.size / (1 - pi)))
            k = int(round(n * pi))
            for seed in range(draws):
                rng = np.random.default_rng(1000 + seed)
                p = rng.permutation(pos)
                rows = np.concatenate([p[:labeled], p[labeled:labeled + k],
                                       rng.choice(neg, n - k, replace=False)])
                yy = np.zeros(rows.size)
                yy[:labeled] = 1.0
                truth = np.arange(n) < k
                rest_p, rest_n = p[labeled + k:], np.setdiff1d(neg, rows[labeled + k:])
                nt = int(min(test, rest_p.size / pi, rest_n.size / (1 - pi)))
                kt = int(round(nt * pi))
                Xt = (X[np.concatenate([rest_p[:kt], rng.choice(rest_n, nt - kt,
                                                                replace=False)])]
                      if nt >= 50 else None)
                yield (f"{name}, π {pi}, n {n}", seed, X[rows], yy, k / n, truth, Xt,
                       np.arange(nt) < kt)


def resampled_draws(draws: int):
    """(name, seed, X, PU labels, true π) of :func:`resampled_splits`."""
    for name, seed, X, yy, true, *_ in resampled_splits(draws):
        yield name, seed, X, yy, true


def biased_svm(draws: int) -> None:
    """usmo at its defaults (--prior auto) against the biased SVM with and without an
    intercept (scikit-learn's LinearSVC: LIBLINEAR's -s 3, C = 1, the labeled positives
    weighted n_U/n_P: ``liblinear-train -s 3 -w1 n_U/n_P [-B 1]``), F (%) of the positive
    class on the unlabeled rows and on held-out rows at the same π (resampled_splits)."""
    from sklearn.svm import LinearSVC

    def f1(pred, truth):
        tp = int(np.sum(pred & truth))
        return 0.0 if tp == 0 else 200.0 * tp / (int(pred.sum()) + int(truth.sum()))

    fit_usmo = ALGORITHMS["usmo"].fit
    params = {p.name: p.default for p in ALGORITHMS["usmo"].params}
    rows = {}
    for name, seed, X, yy, _, truth, Xt, tt in resampled_splits(draws):
        P = int(yy.sum())
        m = fit_usmo(X, yy, np.ones(yy.size), params)
        r = {"usmo": f1(m.train_values[P:, 0] > 0, truth)}
        if Xt is not None:
            r["usmo test"] = f1(m.decision_function(Xt)[:, 0] > 0, tt)
        for how, kw in (("-B 1", {"intercept_scaling": 1.0}), ("no bias", {"fit_intercept":
                                                                           False})):
            c = LinearSVC(loss="hinge", C=1.0, class_weight={1: (yy.size - P) / P, -1: 1.0},
                          max_iter=10_000, random_state=0, **kw).fit(X, np.where(yy > 0, 1, -1))
            r[how] = f1(c.decision_function(X[P:]) > 0, truth)
            if Xt is not None:
                r[f"{how} test"] = f1(c.decision_function(Xt) > 0, tt)
        rows.setdefault(name.split(",")[0], []).append(r)
        print(f"{name}, draw {seed}: {r}", file=sys.stderr, flush=True)
    cols = ("usmo", "-B 1", "no bias", "usmo test", "-B 1 test", "no bias test")
    print("| set | draws | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    every = [r for rs in rows.values() for r in rs]
    for name, rs in [*rows.items(), ("all", every)]:
        cells = []
        for c in cols:
            v = [r[c] for r in rs if c in r]
            cells.append(f"{np.mean(v):.1f} ({len(v)})" if v else "–")
        print(f"| {name} | {len(rs)} | " + " | ".join(cells) + " |")


def warnings_precision(draws: int, protocol: str = "held") -> None:
    """How often each PU warning of ``ssl-train -a usmo --prior auto`` fires and how often
    its statement is right (PriorEstimate.holds; the fit's: FIT_WARNINGS), and how many
    draws more than 0.1 off carry a warning naming their direction (the interval reaching
    past π on that side, or a warning that the estimate is too high). ``protocol``: the held
    sets as ``held`` draws them, or ``resampled`` (:func:`resampled_draws`)."""
    fired = dict.fromkeys([*PRIOR_WARNINGS, *FIT_WARNINGS], 0)
    right = dict.fromkeys(fired, 0)
    off = {"high": [0, 0], "low": [0, 0]}
    errors, covered = [], 0
    fit_usmo = ALGORITHMS["usmo"].fit
    params = {p.name: p.default for p in ALGORITHMS["usmo"].params}
    total, names = 0, set()
    source = held_draws(draws) if protocol == "held" else resampled_draws(draws)
    for name, seed, X, yy, true in source:
        total += 1
        names.add(name)
        e = PR.estimate_prior(X, yy, seed=seed)
        err = e.value - true
        errors.append(err)
        covered += e.low <= true <= e.high
        m = fit_usmo(X, yy, np.ones(yy.size), {**params, "prior": str(e.value)})
        F = m.train_values[:, 0]
        fit = ("no positive predicted" if not np.any(F > 0) else
               "every unlabeled row positive (prior too large)"
               if np.all(F[yy == 0] > 0) else None)
        if e.warning:
            fired[e.warning] += 1
            right[e.warning] += bool(e.holds(true))
        if fit:
            fired[fit] += 1
            right[fit] += bool(FIT_WARNINGS[fit](err))
        if abs(err) > 0.1:
            side = "high" if err > 0 else "low"
            off[side][0] += 1
            # the interval's statements name both sides, each as far as its end; "upper
            # bound" names the side below and the one above as far as the high end
            named = (e.warning == "uncertain" and (e.low <= true if err > 0 else
                                                   e.high >= true)) or \
                (e.warning == "upper bound" and (err > 0 or e.high >= true)) or \
                (err > 0 and (e.warning == "too high" or fit is not None
                              and fit.startswith("every")))
            off[side][1] += bool(named)
        print(f"{name}, draw {seed}: {err:+.3f} {e.warning}", file=sys.stderr, flush=True)
    print(f"{len(names)} sets × {draws} draws = {total} draws ({protocol}); mean absolute "
          f"error {np.mean(np.abs(errors)):.3f}, interval holds π on {covered}")
    print("| warning | fired | right | precision |")
    print("|---|---|---|---|")
    for w in fired:
        prec = f"{100 * right[w] / fired[w]:.0f} %" if fired[w] else "–"
        print(f"| {PRIOR_WARNINGS.get(w, w)} | {fired[w]} | {right[w]} | {prec} |")
    for side in off:
        print(f"draws more than 0.1 too {side}: {off[side][0]}, of which with a warning naming "
              f"that direction: {off[side][1]}")


def floor(draws: int, protocol: str = "held") -> None:
    """How much of --prior auto's error a better scorer could remove: per draw the estimate
    as it is, and the same rule (the same ratios, thresholds, foldings and interval) with
    scores cross-fitted on every row's true class instead of the labeled-positive indicator
    (``estimate_prior(score_target=…)``, each row scored by fits that did not see its class):
    an oracle no PU data gives. What the oracle still misses is the ratio's own error with
    these sample sizes (the labeled positives' count noise, and the bias where negatives score
    among the positives even for a scorer of the true classes)."""
    if protocol == "held":
        source = held_draws(draws, classes=True)
    else:
        # the labeled positives come first, then the unlabeled rows' classes
        source = ((name, seed, X, yy, true, np.r_[np.ones(int(yy.sum())),
                                                   np.where(truth, 1.0, -1.0)])
                  for name, seed, X, yy, true, truth, *_ in resampled_splits(draws))
    rows: dict[str, list] = {}
    for name, seed, X, yy, true, y in source:
        e = PR.estimate_prior(X, yy, seed=seed)
        o = PR.estimate_prior(X, yy, seed=seed, score_target=(y > 0).astype(float))
        rows.setdefault(name, []).append((e.value - true, o.value - true, o.auc, e.auc))
        print(f"{name}, draw {seed}: auto {e.value - true:+.3f} oracle {o.value - true:+.3f}",
              file=sys.stderr, flush=True)
    print(f"draws 0..{draws - 1} ({protocol}); mean absolute error of π (mean signed error) "
          "and held-out AUC of labeled positives against unlabeled rows, --prior auto and the "
          "same rule on scores of the true classes")
    print("| set | auto | AUC | oracle scores | AUC |")
    print("|---|---|---|---|---|")
    allr = []
    for name, r in rows.items():
        a = np.array(r)
        allr.append(a)
        print(f"| {name} | {np.mean(np.abs(a[:, 0])):.3f} ({np.mean(a[:, 0]):+.3f}) | "
              f"{np.mean(a[:, 3]):.2f} | {np.mean(np.abs(a[:, 1])):.3f} "
              f"({np.mean(a[:, 1]):+.3f}) | {np.mean(a[:, 2]):.2f} |")
    a = np.vstack(allr)
    set_mae = [np.mean(np.abs(r[:, k])) for r in allr for k in (0, 1)]
    print(f"| **mean over sets** | **{np.mean(set_mae[0::2]):.3f}** | | "
          f"**{np.mean(set_mae[1::2]):.3f}** | |")
    print(f"{a.shape[0]} draws: more than 0.1 off: auto {int(np.sum(np.abs(a[:, 0]) > 0.1))}, "
          f"oracle scores {int(np.sum(np.abs(a[:, 1]) > 0.1))}")


def speed(rows: int, features: int) -> None:
    """--prior auto against one fit with the prior given, linear kernel, sparse rows (50
    values a row; classes from a sparse hyperplane, 5 % flipped: bench_svm.synthetic)."""
    sys.path.insert(0, os.path.dirname(__file__))
    from bench_svm import synthetic

    X, y = synthetic(rows, d=features, nnz=50, seed=0)
    rng = np.random.default_rng(0)
    pos = np.flatnonzero(y > 0)
    yy = np.zeros(rows)
    yy[rng.choice(pos, pos.size // 5, replace=False)] = 1.0
    true = float(np.mean(y[yy == 0] > 0))
    params = {p.name: p.default for p in ALGORITHMS["usmo"].params}
    params.update({"lambda": 1e-2, "prior": f"{true:.4f}"})
    t0 = time.perf_counter()
    ALGORITHMS["usmo"].fit(X, yy, np.ones(rows), params)
    fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    e = PR.estimate_prior(X, yy)
    est = time.perf_counter() - t0
    print(f"{rows} rows, {X.nnz} stored values: one usmo fit {fit:.2f} s; --prior auto "
          f"{est:.2f} s ({est / fit:.2f}× the fit, {e.fits} fits); true π {true:.3f}, "
          f"estimate {e.text()}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", nargs="?", choices=("uci", "held", "speed", "warnings",
                                                "biased-svm", "floor"),
                    default="uci")
    ap.add_argument("--draws", type=int, default=10)
    ap.add_argument("--sets", default=",".join(UP.PRIOR_SETS))
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--features", type=int, default=5_000)
    ap.add_argument("--protocol", choices=("held", "resampled"), default="held",
                    help="warnings, floor: the held draws, or 100 labeled positives and 1,000 "
                    "unlabeled rows at π 0.2 / 0.5 / 0.8 from the held real sets")
    a = ap.parse_args(argv)
    if a.what == "speed":
        speed(a.rows, a.features)
    elif a.what == "held":
        held(a.draws)
    elif a.what == "warnings":
        warnings_precision(a.draws, a.protocol)
    elif a.what == "biased-svm":
        biased_svm(a.draws)
    elif a.what == "floor":
        floor(a.draws, a.protocol)
    else:
        uci(a.draws, a.sets.split(","))


if __name__ == "__main__":
    main()
