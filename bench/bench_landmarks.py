"""What the landmark form costs in accuracy against the exact n×n form (LapSVM / LapRLS, and
the TV family with ``--algos tvrls,tvsvm,cheeger-rls,cheeger-svm``).

    python bench/bench_landmarks.py book [--landmarks 300] [--splits 12] [--first-split 0]
        [--sets COIL2,Text]
    python bench/bench_landmarks.py mnist38 [--landmarks 2000]

``book``: the SSL book's seven sets, 100 labels, the book's 12 splits; error % on the
unlabeled rows (the book's measure) from the transductive values (what ``-l`` writes), for the
exact form (``--landmarks 0``) and M landmark rows fitted both ways (``--landmark-fit project``
and ``restrict``; for project also the model's own labels of those rows; the TV family has
the Nyström kernel only, the restricted column), every other parameter at its default.
``mnist38``: the shared mnist38-80 split, error % on its test rows. Every run goes through
the registered ``fit``, as ``ssl-train`` does.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from pathlib import Path

import book
import numpy as np

from ssl_svm.formats.svmlight import read_dataset
from ssl_svm.solvers.registry import ALGORITHMS

FORMS = (("exact", 0, "auto"), ("project", None, "project"), ("restrict", None, "restrict"))


def _fit(algo: str, X, y, landmarks: int, how: str):
    p = ALGORITHMS[algo].defaults()
    p["landmarks"] = landmarks
    if "landmark_fit" in p:
        p["landmark_fit"] = how
    t = time.perf_counter()
    model = ALGORITHMS[algo].fit(X, y, None, p)
    return model, time.perf_counter() - t


def _forms(m: int, algo: str):
    fits = "landmark_fit" in ALGORITHMS[algo].defaults()
    return [(name, m if lm is None else lm, how) for name, lm, how in FORMS
            if fits or name != "project"]


def run_book(algos, m: int, splits, sets) -> None:
    print(f"| set | solver | exact | {m} landmarks, project: -l | project: model | "
          "restrict |")
    print("|---|---|---|---|---|---|")
    cols = ("exact", "project", "project model", "restrict")
    worst = {}
    for name in sets:
        for algo in algos:
            errs = {f: [] for f in cols}
            for s in splits:
                X, y, hidden = book.load(name, s, 100)
                for form, lm, how in _forms(m, algo):
                    model, _ = _fit(algo, X, y, lm, how)
                    # the transductive labels (what -l writes: the book's measure) and, for
                    # the projected form, the model's own on the same rows
                    tr = model.labels_from_values(model.train_values)[y == 0]
                    errs[form].append(100.0 * np.mean(tr != hidden))
                    if form == "project":
                        pred = model.predict(X)[y == 0]
                        errs["project model"].append(100.0 * np.mean(pred != hidden))
            mean = {f: float(np.mean(v)) if v else None for f, v in errs.items()}
            for f in cols[1:]:
                if mean[f] is not None:
                    worst[(algo, f)] = max(worst.get((algo, f), -1e9), mean[f] - mean["exact"])
            print(f"| {name} | {algo} | " + " | ".join("–" if mean[f] is None else
                                                      f"{mean[f]:.2f}" for f in cols) + " |",
                  flush=True)
    for (algo, f), w in sorted(worst.items()):
        print(f"largest gap to exact: {algo} {f} {w:+.2f} points")


def run_mnist38(algos, m: int) -> None:
    folder = Path(os.environ.get("SSL_SHARED", Path(__file__).parents[2] / "shared"))
    split = folder / "bench" / "mnist38-80"
    tr = read_dataset(str(split / "train.svm"))
    te = read_dataset(str(split / "test.svm"), n_features=tr.X.shape[1])
    print("| solver | form | test error % | train s |")
    print("|---|---|---|---|")
    for algo in algos:
        for form, lm, how in _forms(m, algo):
            model, secs = _fit(algo, tr.X, tr.y, lm, how)
            err = 100.0 * float(np.mean(model.predict(te.X) != te.y))
            label = form if lm == 0 else f"{lm} landmarks, {form}"
            print(f"| {algo} | {label} | {err:.2f} | {secs:.1f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("book", "mnist38"))
    ap.add_argument("--landmarks", type=int, default=None,
                    help="M (default 300 on the book's sets, 2000 on mnist38)")
    ap.add_argument("--splits", type=int, default=12)
    ap.add_argument("--first-split", type=int, default=0,
                    help="start at this split (0-based): rows chosen on some splits are "
                         "re-measured on others")
    ap.add_argument("--sets", default=",".join(book.SETS), help="the book's sets to run")
    ap.add_argument("--algos", default="lapsvm,laprls")
    a = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    algos = a.algos.split(",")
    if a.what == "book":
        if a.first_split < 0 or a.splits < 1 or a.first_split + a.splits > 12:
            ap.error("the book has 12 splits: need 0 <= --first-split and "
                     "--first-split + --splits <= 12")
        unknown = set(a.sets.split(",")) - set(book.SETS)
        if unknown:
            ap.error(f"unknown set(s) {', '.join(sorted(unknown))}; the book's are "
                     f"{', '.join(book.SETS)}")
        run_book(algos, a.landmarks or 300, range(a.first_split, a.first_split + a.splits),
                 a.sets.split(","))
    else:
        run_mnist38(algos, a.landmarks or 2000)


if __name__ == "__main__":
    main()
