"""The USPS protocols of Bresson & Zhang (2012), Tables 1 and 2 (issue 6).

Data: the shared USPS files, training and test parts together (the paper uses "the sets of
4's and 9's from USPS" without a split): 4 vs 9 is 1,673 rows (852 fours, 821 nines); digits
0, 1, 4, 9 are 4,495 rows (1,553 / 1,269 / 852 / 821). Pixels as given ([0, 1]). Labels: for
each draw (seed 0-9), the given number of labeled rows per class drawn at random, every other
row unlabeled; error % on the unlabeled rows, averaged over the draws.

Graph and kernel (not given in the paper; chosen on 4 vs 9 and fixed): 10 nearest neighbours,
heat weights with t = mean kNN distance, OR-symmetrised; rbf kernel with σ = 4 (γ = 1/32);
λ = r = 1; Cheeger step c = 0.1, SVM slack weight μ = 1 (Cheeger-SVM); TV-RLS/TV-SVM take the
solvers' defaults (η = 100, μ = 100, γ = 0.1 binary / 0.03 multi-class, r2 = 1).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("SSL_SHARED", ROOT.parent / "shared")).resolve()

from ssl_svm.formats.svmlight import read_dataset  # noqa: E402
from ssl_svm.solvers.kernels import KernelSpec  # noqa: E402

LABELS_PER_CLASS = (1, 5, 10, 50)
DRAWS = 10
SPEC = KernelSpec("rbf", 1.0 / 32.0)
NEIGHBORS = 10
C_STEP = 0.1
MU = 1.0
# error % on the unlabeled rows, 1 / 5 / 10 / 50 labels per class
TABLE1 = {  # 4 vs 9
    "lap-rls": (18.09, 10.48, 7.77, 4.14), "lap-svm": (13.79, 9.84, 7.61, 4.77),
    "tvrls": (3.18, 3.16, 3.13, 3.16), "tvsvm": (3.18, 3.13, 3.13, 3.08),
    "cheeger-rls": (4.06, 3.74, 4.03, 2.84), "cheeger-svm": (3.87, 3.74, 4.00, 2.73),
}
TABLE2 = {  # digits 0, 1, 4, 9
    "lap-rls": (20.06, 6.64, 4.03, 3.3), "lap-svm": (49.95, 14.21, 6.27, 2.82),
    "tvrls": (2.0, 2.06, 1.91, 1.98), "tvsvm": (1.75, 1.82, 1.77, 1.85),
    "cheeger-rls": (3.35, 1.95, 1.85, 1.87), "cheeger-svm": (2.94, 2.08, 1.72, 1.74),
}


def load(digits=(4, 9)):
    """(X dense, y digit) of the given USPS digits, training and test files together."""
    d = SHARED / "datasets" / "usps"
    a = read_dataset(str(d / "usps.gz"), n_features=256)
    b = read_dataset(str(d / "usps.t"), n_features=256)
    X = sp.vstack([a.X, b.X]).toarray()
    y = np.concatenate([a.y, b.y])
    keep = np.isin(y, digits)
    return X[keep], y[keep]


def draw(y: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """Boolean mask of the labeled rows: ``per_class`` random rows of every class."""
    rng = np.random.default_rng(seed)
    lab = np.zeros(y.size, bool)
    for c in np.unique(y):
        lab[rng.choice(np.flatnonzero(y == c), per_class, replace=False)] = True
    return lab
