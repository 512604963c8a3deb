"""usmo against LIBLINEAR's biased SVM on a large PU set (issues 52 and 67).

    python bench/make_pu_text.py --rows 1000000 --features 1000000 --out /tmp/pu-1m
    python bench/bench_pu_scale.py --split /tmp/pu-1m --liblinear /path/to/liblinear \
        [--repeats 3] [--prior 0.4] [--usmo-args "-t rbf"]

Each repeat runs, as whole processes in turn: LIBLINEAR's ``train -s 3 -w1 n_U/n_P`` on
DIR/train.svm (the unlabeled rows, label 0, taken as the negative class: the class-weighted
"biased SVM"), the same with an intercept (``-B 1``), ``ssl-train -a usmo --prior P`` and
``ssl-train -a usmo --prior auto`` on the same file (``--usmo-args``: more ssl-train
arguments, e.g. ``-t rbf`` for the kernel's landmark form). Printed: median wall time and
peak resident memory of each, the ratios to LIBLINEAR, and each model's F-measure of the
positive class on DIR/test.svm (true ±1 labels), predicted by its own tool. LIBLINEAR is
built outside this repository (``git clone https://github.com/cjlin1/liblinear && make``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tools import peak_rss  # noqa: E402

BIN = Path(sys.executable).parent


def f_measure(pred: np.ndarray, truth: np.ndarray) -> float:
    """F of the positive class, in %."""
    tp = float(np.sum((pred > 0) & (truth > 0)))
    return 200.0 * tp / max(float(np.sum(pred > 0) + np.sum(truth > 0)), 1.0)


def labels_of(path: Path) -> np.ndarray:
    with open(path) as f:
        return np.array([float(line.split(None, 1)[0]) for line in f])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", required=True, type=Path)
    ap.add_argument("--liblinear", required=True, type=Path, help="LIBLINEAR's build folder")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--prior", default="0.4")
    ap.add_argument("--usmo-args", default="", help="more ssl-train arguments for usmo")
    a = ap.parse_args()
    extra = a.usmo_args.split()
    train, test = a.split / "train.svm", a.split / "test.svm"
    y = labels_of(train)
    n_p, n_u = int(np.sum(y > 0)), int(np.sum(y == 0))
    truth = labels_of(test)
    out = Path(tempfile.mkdtemp(prefix="pu-scale-"))
    runs = {
        "liblinear": [a.liblinear / "train", "-q", "-s", "3", "-w1", f"{n_u / n_p:.6g}",
                      train, out / "ll.model"],
        "liblinear-B1": [a.liblinear / "train", "-q", "-s", "3", "-w1", f"{n_u / n_p:.6g}",
                         "-B", "1", train, out / "llb.model"],
        "usmo": [BIN / "ssl-train", "-q", "-a", "usmo", *extra, "--prior", a.prior, train,
                 out / "usmo.model"],
        "usmo-auto": [BIN / "ssl-train", "-q", "-a", "usmo", *extra, "--prior", "auto", train,
                      out / "usmo-auto.model"],
    }
    times = {k: [] for k in runs}
    mems = {k: [] for k in runs}
    for _ in range(a.repeats):
        for k, cmd in runs.items():
            rc, mb, sec, err = peak_rss(cmd)
            if rc:
                sys.exit(f"{k} failed: {err}")
            times[k].append(sec)
            mems[k].append(mb)
    scores = {}
    for k, m in (("liblinear", "ll"), ("liblinear-B1", "llb")):
        subprocess.run([a.liblinear / "predict", "-q", test, out / f"{m}.model",
                        out / f"{m}.pred"], check=True)
        scores[k] = f_measure(np.loadtxt(out / f"{m}.pred"), truth)
    for k in ("usmo", "usmo-auto"):
        subprocess.run([BIN / "ssl-predict", "-q", test, out / f"{k}.model", out / f"{k}.pred"],
                       check=True)
        scores[k] = f_measure(np.loadtxt(out / f"{k}.pred", usecols=0), truth)
    base = statistics.median(times["liblinear"])
    print(f"{y.size} rows ({n_p} labeled positives, {n_u} unlabeled), {a.repeats} repeats")
    print("| command | median time | ratio | peak memory | F (test) |")
    print("|---|---|---|---|---|")
    for k in runs:
        t = statistics.median(times[k])
        print(f"| {k} | {t:.1f} s | {t / base:.2f} | {max(mems[k]) / 1024:.2f} GiB | "
              f"{scores[k]:.1f} |")


if __name__ == "__main__":
    main()
