"""Recall and time of the approximate kNN graph (--knn approximate) against the exact one.

For each set the rows are taken as the graph solvers take them (--graph-metric auto) and the
neighbours as -k auto chooses them (or --k); recall is the mean fraction of a row's exact k
neighbours that the approximate search returns, and, where distances tie (binary rows), the
fraction of its approximate neighbours no farther than its exact k-th one.

    python bench/bench_ann.py                        # the book's seven sets, mnist38
    python bench/bench_ann.py --sets mnist --rows 70000 --k 10
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file

from ssl_svm.solvers import ann, graph

SHARED = Path(__file__).resolve().parents[2] / "shared"
FILES = {"mnist38": "datasets/mnist38/mnist38.gz", "mnist": "datasets/mnist/mnist.gz",
         "secstr": "bench/secstr-1000/train.svm", "usps49": "bench/usps49-10/train.svm"}


def rows_of(name: str, limit: int | None):
    if name in FILES:
        X = load_svmlight_file(str(SHARED / FILES[name]))[0]
    else:
        import book

        X = book.load(name, 0, 100)[0]
    X = X[:limit] if limit else X
    return graph.metric_rows("auto", X, name)[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="g241c,g241d,Digit1,USPS,COIL2,BCI,Text,mnist38")
    ap.add_argument("--rows", type=int, default=None, help="first rows of each set only")
    ap.add_argument("--k", type=int, default=None, help="neighbours (default -k auto's)")
    ap.add_argument("--no-exact", action="store_true", help="time the approximate search only")
    a = ap.parse_args()
    print("| set | rows | features | k | exact s | approximate s | rounds | recall | "
          "recall with ties |")
    print("|---|---|---|---|---|---|---|---|---|")
    ann.knn(np.random.default_rng(0).normal(size=(200, 5)), 5)  # compile outside the timing
    for name in a.sets.split(","):
        X = rows_of(name, a.rows)
        k = a.k or graph.auto_graph(X, None, None)[0]
        Xd = X.toarray() if hasattr(X, "toarray") else X
        t = time.perf_counter()
        ia, da, st = ann.knn(Xd, k)
        ta = time.perf_counter() - t
        if a.no_exact:
            print(f"| {name} | {X.shape[0]} | {X.shape[1]} | {k} | | {ta:.1f} | "
                  f"{st['rounds']} | | |", flush=True)
            continue
        t = time.perf_counter()
        ie, de = graph.knn(X, k)
        te = time.perf_counter() - t
        rec = np.mean([np.intersect1d(ia[i], ie[i]).size for i in range(len(ia))]) / k
        ties = np.mean(np.sum(da <= de[:, -1:] * (1 + 1e-9) + 1e-12, axis=1)) / k
        print(f"| {name} | {X.shape[0]} | {X.shape[1]} | {k} | {te:.1f} | {ta:.1f} | "
              f"{st['rounds']} | {rec:.3f} | {ties:.3f} |", flush=True)


if __name__ == "__main__":
    main()
