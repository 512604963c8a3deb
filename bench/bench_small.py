"""Small data: whole-process times of every solver at its defaults, the backend each took, and
scikit-learn's semi-supervised classifiers on the same sets.

Sets: the 500-row pcmac sample (50 labeled rows; its 200-row test file), the 2,000-row shuttle
sample (all labeled, six classes; its 1,000-row test file) and usps49-10 (1,296 rows, 20
labeled; its test file). Each row: the median wall seconds of ``--reps`` runs after one warm-up
(numba's cache warm), the backend ``ssl-train`` printed, and the test accuracy of the model.
A run over ``--timeout`` seconds is stopped and reported as such.

scikit-learn (``--sklearn``): ``LabelSpreading()`` and
``SelfTrainingClassifier(SVC(probability=True))`` at their defaults, each a whole process
(``python -c``: import, read both files with ``load_svmlight_file``, fit, predict the test
file), the same rows, unlabeled rows marked -1 as scikit-learn wants.

Usage: python bench/bench_small.py [--reps N] [--timeout S] [--only NAME ...] [--sklearn]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SSL_SHARED", ROOT.parent / "shared"))
BIN = Path(sys.executable).parent
SETS = {
    "pcmac-500": (ROOT / "sample_data" / "pcmac.train", ROOT / "sample_data" / "pcmac.test"),
    "shuttle-2000": (ROOT / "sample_data" / "shuttle.train",
                     ROOT / "sample_data" / "shuttle.test"),
    "usps49-10": (SHARED / "bench" / "usps49-10" / "train.svm",
                  SHARED / "bench" / "usps49-10" / "test.svm"),
}
SOLVERS = ("svm", "rls", "tsvm", "da", "lapsvm", "laprls", "tvrls", "tvsvm", "cheeger-rls",
           "cheeger-svm", "usmo")
SKLEARN = {
    "LabelSpreading": "from sklearn.semi_supervised import LabelSpreading as C; c = C()",
    "SelfTraining(SVC)": ("from sklearn.semi_supervised import SelfTrainingClassifier as C; "
                          "from sklearn.svm import SVC; c = C(SVC(probability=True))"),
}
SKLEARN_RUN = """
import sys, numpy as np
from sklearn.datasets import load_svmlight_file
X, y = load_svmlight_file(sys.argv[1])
Xt, yt = load_svmlight_file(sys.argv[2], n_features=X.shape[1])
{make}
binary = set(np.unique(y[y != 0])) <= {{-1.0, 1.0}}
code = (lambda v: np.where(v > 0, 1, 0)) if binary else (lambda v: v.astype(int))
yy = np.where(y == 0, -1, code(y))
c.fit(X.toarray(), yy)
print("accuracy", 100.0 * np.mean(c.predict(Xt.toarray()) == code(yt)))
"""


def args_for(solver: str, train: Path) -> list[str] | None:
    """ssl-train's arguments for ``solver`` at its defaults on ``train`` (None: it cannot
    train on that set: usmo needs two classes marked positive and negative)."""
    if solver == "usmo":
        return None if "shuttle" in str(train) else ["-a", "usmo", "--negatives-as-unlabeled",
                                                       str(train)]
    if solver == "tsvm":
        return ["-a", "tsvm", "-W", "0.001", str(train)]  # the command
    return ["-a", solver, str(train)]


def timed(cmd: list[str], timeout: float) -> tuple[float | None, str]:
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, ""
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr[-500:]}")
    return time.perf_counter() - t0, r.stdout + r.stderr


def median_run(cmd: list[str], reps: int, timeout: float) -> tuple[float | None, str]:
    first, text = timed(cmd, timeout)  # the warm-up (numba's cache)
    if first is None:
        return None, text
    times = []
    for _ in range(reps):
        t, text = timed(cmd, timeout)
        if t is None:
            return None, text
        times.append(t)
    return statistics.median(times), text


def accuracy(model: Path, test: Path, tmp: Path) -> float:
    out = tmp / "pred"
    r = subprocess.run([str(BIN / "ssl-predict"), "-q", str(test), str(model), str(out)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    pred = [float(x.split()[0]) for x in out.read_text().splitlines() if x.strip()]
    truth = [float(x.split()[0]) for x in test.read_text().splitlines() if x.strip()]
    return 100.0 * sum(p == t for p, t in zip(pred, truth)) / len(truth)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--only", nargs="*", default=None, help="solvers (default: all)")
    ap.add_argument("--sklearn", action="store_true", help="also scikit-learn's")
    a = ap.parse_args()
    print("| set | solver | median s | backend | test accuracy % |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for set_name, (train, test) in SETS.items():
            for solver in a.only or SOLVERS:
                args = args_for(solver, train)
                if args is None:
                    continue
                model = tmp / "m"
                cmd = [str(BIN / "ssl-train"), *args, str(model)]
                t, text = median_run(cmd, a.reps, a.timeout)
                if t is None:
                    print(f"| {set_name} | {solver} | > {a.timeout:g} (stopped) | | |",
                          flush=True)
                    continue
                m = re.search(r"backend=(\w+)", text)
                print(f"| {set_name} | {solver} | {t:.2f} | {m.group(1) if m else '?'} | "
                      f"{accuracy(model, test, tmp):.1f} |", flush=True)
            if not a.sklearn:
                continue
            for name, make in SKLEARN.items():
                cmd = [sys.executable, "-c", SKLEARN_RUN.format(make=make), str(train),
                       str(test)]
                t, text = median_run(cmd, a.reps, a.timeout)
                if t is None:
                    print(f"| {set_name} | {name} | > {a.timeout:g} (stopped) | | |",
                          flush=True)
                    continue
                acc = float(re.search(r"accuracy (\S+)", text).group(1))
                print(f"| {set_name} | {name} (scikit-learn) | {t:.2f} | | {acc:.1f} |",
                      flush=True)


if __name__ == "__main__":
    main()
