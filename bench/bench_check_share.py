"""The check's power against the share of the unlabeled rows its folds fit on: bench_trust's
splits (its tune half by default, 10 and 50 labels, 3 draws) and solvers (tsvm, lapsvm,
cheeger-rls), each fit checked with its folds on a fixed share of the unlabeled rows
(``--check auto`` takes 1 up to 2,000 unlabeled rows, above that 2,000 of them or 1/(2k),
whichever is more: ``ssl_svm.trust.check_share``).

    python bench/bench_check_share.py [--sets australian,heart] [--shares 1,0.5,0.2,0.1]
        [--algos tsvm,lapsvm,cheeger-rls,tvsvm,da] [--no-fold-reuse] [--no-rows-reuse]
        [--draws 3] [--json F]

``--no-fold-reuse``: the folds choose every auto parameter again, as the fit did, instead of
taking the fit's choice (``Algorithm.fold_reuse``: tsvm's and da's λ); the two are compared by
running once with it and once without. ``--no-rows-reuse``: the folds of the solvers with
``Algorithm.rows_reuse`` (lapsvm, laprls) fit without their held-out rows
instead of hiding those rows' labels and reusing the fit's graph and kernel.

In process, through the estimators (``unlabeled_label=0``); errors on the unlabeled rows. Prints,
per share: harmful fits (more than 2 points worse than the svm), those called "no harm",
fits that are not harmful called "harm", and how many verdicts equal those on every row.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import sys
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_trust as bt  # noqa: E402


def records(sets, shares, algos, fold_reuse=True, rows_reuse=True, draws=3):
    """One dict per split and solver: the svm's and the fit's error, whether each share's
    check warned."""
    from sklearn.datasets import load_svmlight_file

    import ssl_svm
    from ssl_svm import trust

    est = {"tsvm": ssl_svm.TSVM, "lapsvm": ssl_svm.LapSVM, "cheeger-rls": ssl_svm.CheegerRLS,
           "tvsvm": ssl_svm.TVSVM, "da": ssl_svm.DAS3VM}
    est = {a: est[a] for a in algos}
    if not fold_reuse:
        trust.fold_params = lambda algo, params, model: dict(params)
    if not rows_reuse:
        import dataclasses

        from ssl_svm.solvers.registry import ALGORITHMS

        for name, a in ALGORITHMS.items():
            ALGORITHMS[name] = dataclasses.replace(a, rows_reuse=False)
    logging.disable(logging.WARNING)
    for name in sets:
        rows = bt.rows_of(name)
        text = "\n".join(f"{label} {feats}" for label, feats in rows) + "\n"
        X, truth = load_svmlight_file(io.BytesIO(text.encode()))
        X = sp.csr_matrix(X)
        for labels in (10, 50):
            for d in range(draws):
                idx = bt.draw(rows, labels, d)
                y = np.zeros(len(rows))
                y[idx] = truth[idx]
                unl = y == 0
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    svm = ssl_svm.SVM(unlabeled_label=0).fit(X, y)
                rec0 = {"set": name, "labels": labels, "draw": d,
                        "svm": 100 * float(np.mean(svm.predict(X[unl]) != truth[unl]))}
                for algo, cls in est.items():
                    rec = {**rec0, "algo": algo}
                    for share in shares:
                        trust.check_share = lambda k, u, s=share: s
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            m = cls(unlabeled_label=0, random_state=0).fit(X, y)
                        rec["err"] = 100 * float(np.mean(m.predict(X[unl]) != truth[unl]))
                        rec[f"verdict{share:g}"] = (None if m.check_ is None
                                                    else m.check_.verdict)
                        rec[f"seconds{share:g}"] = (0.0 if m.check_ is None
                                                    else m.check_.seconds)
                    print(json.dumps(rec), flush=True)
                    yield rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default=",".join(bt.TUNE))
    ap.add_argument("--shares", default="1,0.5,0.2,0.1")
    ap.add_argument("--algos", default="tsvm,lapsvm,cheeger-rls")
    ap.add_argument("--no-fold-reuse", action="store_true")
    ap.add_argument("--no-rows-reuse", action="store_true")
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    shares = [float(s) for s in a.shares.split(",")]
    unknown = set(a.algos.split(",")) - {"tsvm", "lapsvm", "cheeger-rls", "tvsvm", "da"}
    if unknown:
        ap.error(f"--algos: unknown {', '.join(sorted(unknown))}")
    recs = list(records(a.sets.split(","), shares, a.algos.split(","), not a.no_fold_reuse,
                        not a.no_rows_reuse, a.draws))
    if a.json:
        Path(a.json).write_text(json.dumps(recs, indent=1))
    harm = [r for r in recs if r["err"] > r["svm"] + 2]
    fine = [r for r in recs if r["err"] <= r["svm"] + 2]
    print(f"{len(recs)} fits, {len(harm)} harmful")
    for s in shares:
        key = f"verdict{s:g}"
        same = sum(r[key] == r[f"verdict{shares[0]:g}"] for r in recs)
        print(f"share {s:g}: harmful called no harm {sum(r[key] == 'no harm' for r in harm)} "
              f"of {len(harm)}, others called harm {sum(r[key] == 'harm' for r in fine)} of "
              f"{len(fine)}, unverified {sum(r[key] == 'unverified' for r in recs)}, {same} "
              f"verdicts as at {shares[0]:g}; the checks took "
              f"{sum(r[f'seconds{s:g}'] for r in recs):.1f} s")


if __name__ == "__main__":
    main()
