"""tsvm and da on the shared semi-supervised splits, next to SVMlin's and SVMlight's figures.

Settings as REFERENCE.md: λ = 0.001, λ_u = 1, r = the split's true unlabeled positive
fraction (SPLIT.md). For each split and method: training time (whole `ssl-train` process,
median of --reps runs, and the solver alone, in this process), test accuracy and
transductive accuracy on the unlabeled training rows, and the objective reached.

With the environment variable SVMLIN naming SVMlin v1.0's command-line program (built
outside this repository from its public sources; GPL, never part of the project), SVMlin runs
on the same split in turn with ours (whole processes, alternating, --reps each, medians) and
the ratio is measured in this run; without it the SVMlin column quotes REFERENCE.md.

Usage: [SVMLIN=/path/to/svmlin] python bench/bench_s3vm.py [--only SPLIT ...] [--reps N]
       [--methods svm tsvm-S1 tsvm da] [--splits FOLDER]
       (--splits: generated splits, e.g. bench/make_split.py /tmp/splits/synthetic-1m, then
       --splits /tmp/splits --only synthetic-1m)
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ssl_svm.formats.svmlight import read_dataset  # noqa: E402

SHARED = Path(os.environ.get("SSL_SHARED", Path(__file__).resolve().parents[2] / "shared"))
BIN = Path(sys.executable).parent
SPLITS = SHARED / "bench"  # --splits FOLDER: generated splits (bench/make_split.py)

# REFERENCE.md: test / transductive accuracy (seconds)
SVMLIN = {
    "pcmac-svmlin": {"svm": (66.46, 66.52, 0.0154), "tsvm": (92.80, 91.91, 0.196),
                     "tsvm-S1": (93.00, 92.06, 0.287), "da": (95.27, 96.17, 0.541)},
    "a9a-100": {"svm": (76.59, 76.38, 0.017), "tsvm": (78.07, 78.08, 4.32),
                "tsvm-S1": (78.07, 78.08, 24.2), "da": (77.06, 76.92, 21)},
    "w8a-200": {"svm": (97.34, 97.31, 0.0216), "tsvm": (96.10, 95.78, 3.73),
                "tsvm-S1": (96.05, 95.77, 15.7), "da": (97.52, 97.43, 23.2)},
    "mnist38-80": {"svm": (93.09, 91.65, 0.163), "tsvm": (95.87, 94.70, 33.5),
                   "tsvm-S1": (95.92, 94.77, 70.1), "da": (96.32, 95.46, 213)},
    "rcv1-small-50": {"svm": (80.33, 75.69, 0.0192), "tsvm": (81.67, 79.69, 0.17),
                      "tsvm-S1": (81.67, 79.69, 0.145), "da": (82.00, 78.77, 0.791)},
    "secstr-1000": {"svm": (64.10, 63.59, 0.0547), "tsvm": (63.81, 63.49, 11.1),
                    "tsvm-S1": (63.78, 63.52, 121), "da": (63.71, 63.53, 26.8)},
    "usps49-10": {"svm": (89.12, 89.73, 0.011), "tsvm": (94.96, 96.39, 0.331),
                  "tsvm-S1": (95.49, 96.39, 0.407), "da": (92.31, 93.81, 6.79)},
}
SVMLIGHT = {"pcmac-svmlin": "92.39 / 94.04 (22.8 s)", "a9a-100": "76.51 / 76.33 (155 s)",
            "w8a-200": "95.24 / 94.73 (360 s)", "mnist38-80": "95.97 / 95.45 (104 s)",
            "rcv1-small-50": "84.67 / 80.62 (8.17 s)", "secstr-1000": "timed out (1200 s)",
            "usps49-10": "96.29 / 98.59 (0.691 s)"}
METHODS = {"svm": ("svm", []), "tsvm-S1": ("tsvm", ["-S", "1"]), "tsvm": ("tsvm", []),
           "da": ("da", [])}


def split_r(split):
    text = (SPLITS / split / "SPLIT.md").read_text()
    m = re.search(r"True positive fraction of the unlabeled part: \*?\*?([0-9.]+)", text)
    return float(m.group(1))


SVMLIN_CODE = {"svm": 1, "tsvm": 2, "da": 3}


def svmlin_files(split, tmp, labeled_only=False):
    """SVMlin's layout of a split's training file: examples (features only) and labels
    (its supervised mode aborts on label-0 rows: ``labeled_only`` drops them)."""
    train = (SPLITS / split / "train.svm").read_text().splitlines()
    if labeled_only:
        train = [ln for ln in train if ln.split(" ", 1)[0] != "0"]
    tag = ".labeled" if labeled_only else ""
    ex, lab = tmp / f"{split}{tag}.examples", tmp / f"{split}{tag}.labels"
    ex.write_text("".join((ln.split(" ", 1)[1] if " " in ln else "") + "\n" for ln in train))
    lab.write_text("".join(ln.split(" ", 1)[0] + "\n" for ln in train))
    return ex, lab


def svmlin_accuracy(split, weights):
    """Test and transductive accuracy % of SVMlin's weights file (its last weight: the bias)."""
    w = np.loadtxt(weights)
    test = read_dataset(str(SPLITS / split / "test.svm"))
    train = read_dataset(str(SPLITS / split / "train.svm"))
    truth = np.loadtxt(SPLITS / split / "train.truth")

    def labels(X):
        d = min(X.shape[1], w.size - 1)
        return np.where(X[:, :d] @ w[:d] + w[-1] > 0, 1, -1)

    unl = train.y == 0
    return (100.0 * np.mean(labels(test.X) == test.y),
            100.0 * np.mean(labels(train.X[unl]) == truth[unl]))


def run_cli(split, algo, extra, r, tmp, reps, svmlin=None):
    """Ours (and SVMlin's, given its program) in turn: medians of whole-process seconds."""
    train = SPLITS / split / "train.svm"
    # --check none: SVMlin fits once; the check against the supervised svm (five fold fits
    # when they are short) is a cost of its own, measured in BENCHMARKS.md
    args = [BIN / "ssl-train", "--verbose", "--check", "none", "-a", algo, "-W", "0.001",
            *extra]
    if algo != "svm":
        args += ["-U", "1", "-R", repr(r)]
    args += ["-l", tmp / "trans", train, tmp / "model"]
    ts = []
    fits = []
    ref_ts = []
    if svmlin is not None:
        ex, lab = svmlin_files(split, tmp, labeled_only=algo == "svm")
        ref_args = [svmlin, "-A", str(SVMLIN_CODE[algo]), "-W", "0.001", *extra]
        if algo != "svm":
            ref_args += ["-U", "1", "-R", repr(r)]
        ref_args += [ex, lab]
    for _ in range(reps):
        if svmlin is not None:
            t0 = time.perf_counter()
            subprocess.run([str(a) for a in ref_args], check=True, capture_output=True,
                           cwd=tmp)
            ref_ts.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        done = subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True)
        ts.append(time.perf_counter() - t0)
        # the solver's own time: --verbose prints it (timings are not in the model file)
        fits.append(float(re.search(r"train_time=(\S+) s", done.stderr).group(1)))
    p = subprocess.run([str(BIN / "ssl-predict"), SPLITS / split / "test.svm",
                        tmp / "model", tmp / "pred"], check=True, capture_output=True, text=True)
    test_acc = float(re.search(r"Accuracy = ([0-9.]+)%", p.stderr).group(1))
    truth = np.loadtxt(SPLITS / split / "train.truth")
    y = read_dataset(str(train)).y
    trans = np.loadtxt(tmp / "trans")
    trans_acc = 100.0 * np.mean(trans == truth[y == 0])
    obj = re.search(r"^stat objective (\S+)", (tmp / "model").read_text(), re.M).group(1)
    ref = None
    if svmlin is not None:
        ref = (*svmlin_accuracy(split, str(ex) + ".weights"), statistics.median(ref_ts))
    return statistics.median(ts), statistics.median(fits), test_acc, trans_acc, float(obj), ref


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="+", default=None)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS))
    ap.add_argument("--splits", type=Path, default=None,
                    help="a folder of splits in the shared layout (bench/make_split.py)")
    args = ap.parse_args()
    global SPLITS
    if args.splits is not None:
        SPLITS = args.splits
    splits = args.only or list(SVMLIN)
    svmlin = os.environ.get("SVMLIN")
    source = "measured here, in turn" if svmlin else "REFERENCE.md"
    print(f"| split | method | ours: test / transductive % | ours: time (process) | "
          f"solver alone | SVMlin ({source}): test / transductive % (time) | ratio (process) "
          f"| objective | test ≥ SVMlin's − 0.5 |")
    print("|---|---|---|---|---|---|---|---|---|")
    # the floor tests/test_s3vm.py holds on the shorter splits; this run holds it on all
    below = []
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        for split in splits:
            r = split_r(split)
            for name in args.methods:
                algo, extra = METHODS[name]
                t, fit_t, acc, tacc, obj, measured = run_cli(split, algo, extra, r, tmp,
                                                             args.reps, svmlin)
                ref = measured or SVMLIN.get(split, {}).get(name)
                if ref is None:  # a generated split without SVMLIN: ours alone
                    print(f"| {split} | {name} | {acc:.2f} / {tacc:.2f} | {t:.2f} s | "
                          f"{fit_t:.2f} s | | | {obj:.6g} | |", flush=True)
                    continue
                print(f"| {split} | {name} | {acc:.2f} / {tacc:.2f} | {t:.2f} s | {fit_t:.2f} s"
                      f" | {ref[0]:.2f} / {ref[1]:.2f} ({ref[2]:g} s) | {t / ref[2]:.2f} | "
                      f"{obj:.6g} | {'yes' if acc >= ref[0] - 0.5 else 'NO'} |", flush=True)
                if algo != "svm" and acc < ref[0] - 0.5:
                    below.append(f"{split} {name}")
            if split in SVMLIGHT:
                print(f"| {split} | SVMlight TSVM | | | | {SVMLIGHT[split]} | | | |",
                      flush=True)
    if below:
        sys.exit("test accuracy more than 0.5 below SVMlin's: " + ", ".join(below))


if __name__ == "__main__":
    main()
