"""mnist's 70,000 rows as one semi-supervised split, 10 classes (bench_scale.py --split DIR).

Training rows: mnist's 60,000 training rows and its 10,000 test rows, pixels scaled by 1/255;
``--labeled`` of them labeled (the same number of each digit, a seeded draw from the training
rows, first), every other row 0 = unlabeled. Digit d is label d + 1 (0 means unlabeled here).
DIR/test.svm holds the 10,000 test rows with their labels: they are among the unlabeled
training rows, so the error on them is the transductive one, predicted out of sample.

    python bench/make_mnist_split.py --out /tmp/mnist70k
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

SHARED = Path(__file__).resolve().parents[2] / "shared"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--labeled", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    folder = SHARED / "datasets" / "mnist"
    Xa, ya = load_svmlight_file(str(folder / "mnist.gz"), n_features=784)
    Xb, yb = load_svmlight_file(str(folder / "mnist.t.gz"), n_features=784)
    rng = np.random.default_rng(a.seed)
    per = a.labeled // 10
    lab = np.concatenate([rng.choice(np.flatnonzero(ya == d), per, replace=False)
                          for d in range(10)])
    rest = np.setdiff1d(np.arange(ya.size), lab)
    X = sp.vstack([Xa[lab], Xa[rest], Xb]).tocsr() / 255.0
    y = np.zeros(X.shape[0])
    y[:lab.size] = ya[lab] + 1
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    dump_svmlight_file(X, y.astype(np.int64), str(out / "train.svm"), zero_based=False)
    dump_svmlight_file(Xb / 255.0, (yb + 1).astype(np.int64), str(out / "test.svm"),
                       zero_based=False)


if __name__ == "__main__":
    main()
