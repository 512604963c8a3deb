"""Bresson & Zhang (2012) Tables 1 and 2 on USPS, and TV training time against graph size.

    python bench/bench_tv.py table1 [--draws 10]      # 4 vs 9, binary formulations
    python bench/bench_tv.py table2 [--draws 10]      # 0/1/4/9, multi-class formulations
    python bench/bench_tv.py table1 --set graph_weights=self-tuning --set start=labels
    python bench/bench_tv.py scaling                  # mnist, cheeger-rls / tvrls, 1K rows up
    python bench/bench_tv.py scaling --digits 0,1,2,3,4,5,6,7,8,9 --nystrom 1000 --sizes 60000

Every run goes through the registered ``fit`` (graph, kernel, factorisation and solve, as
``ssl-train`` does), with the protocol of ``tv_protocol``: rbf σ = 4, 10 neighbours, heat
weights, the solvers' defaults otherwise. LapRLS/LapSVM use the same kernel and graph with
γ_A = 0.01, γ_I = 1, L² of the normalised Laplacian (one-vs-rest for more classes). Error % on the
unlabeled rows from the transductive output (what ``-l`` writes); seconds per run.
"""

from __future__ import annotations

import argparse
import logging
import time

import numpy as np
import scipy.sparse as sp
import tv_protocol as TP

from ssl_svm.solvers.registry import ALGORITHMS

METHODS = ("laprls", "lapsvm", "tvrls", "tvsvm", "cheeger-rls", "cheeger-svm")
PAPER_NAMES = {"laprls": "lap-rls", "lapsvm": "lap-svm"}


OVERRIDES: dict[str, str] = {}  # --set NAME=VALUE, for the methods that have NAME


def _params(algo: str) -> dict:
    p = ALGORITHMS[algo].defaults()
    p.update(kernel="rbf", gamma=TP.SPEC.gamma, neighbors=TP.NEIGHBORS)
    if algo in ("laprls", "lapsvm"):
        # the settings of our LapSVM test on the usps49-10 split (96 % transductive)
        p.update(gamma_a=0.01, laplacian_degree=2)
    for name, value in OVERRIDES.items():
        q = ALGORITHMS[algo].param(name)
        if q is not None:
            p[name] = q.check(value)
    return p


def run(algo: str, X, y, lab) -> tuple[float, float]:
    """(error % on the unlabeled rows, seconds) of one training run."""
    yl = np.where(lab, y, 0.0)
    t0 = time.perf_counter()
    m = ALGORITHMS[algo].fit(sp.csr_matrix(X), yl, None, _params(algo))
    sec = time.perf_counter() - t0
    pred = m.labels_from_values(m.train_values[~lab])
    return 100.0 * float(np.mean(pred != y[~lab])), sec


def table(which: int, draws: int, methods) -> None:
    digits = (4, 9) if which == 1 else (0, 1, 4, 9)
    X, y = TP.load(digits)
    if which == 1:
        y = np.where(y == 4, 1.0, -1.0)
    else:
        y = y + 1.0  # label 0 means unlabeled
    paper = TP.TABLE1 if which == 1 else TP.TABLE2
    print(f"Table {which}: USPS {'/'.join(map(str, digits))}, {X.shape[0]} rows, {draws} draws")
    print("| method | " + " | ".join(f"{k} labels" for k in TP.LABELS_PER_CLASS) +
          " | s per run |")
    print("|---|" + "---|" * (len(TP.LABELS_PER_CLASS) + 1))
    for algo in methods:
        cells = []
        secs = []
        for per in TP.LABELS_PER_CLASS:
            errs = []
            for seed in range(draws):
                e, s = run(algo, X, y, TP.draw(y, per, seed))
                errs.append(e)
                secs.append(s)
            ref = paper[PAPER_NAMES.get(algo, algo)][TP.LABELS_PER_CLASS.index(per)]
            cells.append(f"{np.mean(errs):.2f} ({ref:.2f})")
        print(f"| {algo} | " + " | ".join(cells) + f" | {np.median(secs):.2f} |", flush=True)


def scaling(sizes, methods, digits=(4, 9), nystrom: int = 0) -> None:
    """Training time against the number of rows on mnist (training file, 60,000 rows; pixels
    / 255, rbf γ = 1/64), 10 labels per class. ``digits`` (4, 9) is the pair of Table 1
    (11,791 rows, binary formulations); all ten digits use the multi-class formulations.
    ``nystrom`` > 0 uses the Nyström kernel over that many landmarks (``--nystrom``).
    Cells: total seconds (graph + kernel + factor seconds in brackets) / error %."""
    from ssl_svm.formats.svmlight import read_dataset

    data = read_dataset(str(TP.SHARED / "datasets" / "mnist" / "mnist.gz"), n_features=784)
    data.X.data /= 255.0  # pixels 0-255 in the shared file
    keep = np.flatnonzero(np.isin(data.y, digits))
    rng = np.random.default_rng(0)
    rng.shuffle(keep)
    print(f"digits {','.join(map(str, digits))}, nystrom {nystrom}")
    print("| rows | " + " | ".join(f"{m} s (setup s) / error %" for m in methods) + " |")
    print("|---|" + "---|" * len(methods))
    for n in sizes:
        rows = keep[:n]
        X = data.X[rows]
        if len(digits) == 2:
            y = np.where(data.y[rows] == digits[0], 1.0, -1.0)
        else:
            y = data.y[rows] + 1.0  # labels 1..10: 0 means unlabeled
        lab = TP.draw(y, 10, 0)
        cells = []
        for algo in methods:
            p = _params(algo)
            p["gamma"] = 1.0 / 64.0  # mnist pixels in [0, 1], 784 features
            p["landmarks"] = nystrom  # 0: the exact kernel
            t0 = time.perf_counter()
            m = ALGORITHMS[algo].fit(X, np.where(lab, y, 0.0), None, p)
            sec = time.perf_counter() - t0
            pred = m.labels_from_values(m.train_values[~lab])
            cells.append(f"{sec:.1f} ({m.stats['setup_time'][0]:.1f}) / "
                         f"{100 * np.mean(pred != y[~lab]):.2f}")
        print(f"| {n} | " + " | ".join(cells) + " |", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("table1", "table2", "scaling"))
    ap.add_argument("--draws", type=int, default=TP.DRAWS)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--sizes", default="1000,2000,5000,10000")
    ap.add_argument("--digits", default="4,9", help="scaling: digits, e.g. 0,1,2,3,4,5,6,7,8,9")
    ap.add_argument("--nystrom", type=int, default=0, help="scaling: Nyström landmarks")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="a solver parameter for the methods that have it (model-file names), "
                         "e.g. --set graph_weights=self-tuning --set start=labels")
    a = ap.parse_args(argv)
    for kv in a.set:
        name, _, value = kv.partition("=")
        OVERRIDES[name] = value
    if a.set:
        print("settings: " + ", ".join(a.set))
    logging.getLogger("ssl").setLevel(logging.WARNING)
    methods = a.methods.split(",")
    if a.what == "scaling":
        scaling([int(s) for s in a.sizes.split(",")], methods,
                tuple(int(d) for d in a.digits.split(",")), a.nystrom)
    else:
        table(1 if a.what == "table1" else 2, a.draws, methods)


if __name__ == "__main__":
    main()
