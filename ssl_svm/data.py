"""SVMlight / LIBSVM files as arrays for the estimators, read by the parser the commands use
(the same rows, bit for bit, as ``ssl-train`` trains on)."""

from __future__ import annotations


def load_svmlight(path: str, *, zero_based: bool = False, n_features: int | None = None):
    """(X, y) of a data file: X CSR float64 (rows × features), y int64 labels as written
    (0 = unlabeled in the files' convention: pass ``unlabeled_label=0`` to an estimator, or
    map 0 to -1). ``.gz``/``.bz2`` and ``-`` (stdin) are read as by the commands;
    ``n_features``: X exactly that wide, indices beyond it ignored (LIBSVM's rule for a test
    file; pass ``clf.n_features_in_``). Errors are
    :class:`ssl_svm.DataError` naming the file and the line."""
    import numpy as np

    from ssl_svm.formats.svmlight import read_dataset

    data = read_dataset(path, zero_based=zero_based, n_features=n_features)
    return data.X, data.y.astype(np.int64)


SAMPLES = ("pcmac.train", "pcmac.test", "shuttle.train", "shuttle.test")


def sample_path(name: str) -> str:
    """Path of a sample file installed with the package: ``pcmac.train`` (two classes, 50
    labeled text rows and 450 unlabeled), ``pcmac.test``, ``shuttle.train`` (seven classes),
    ``shuttle.test`` (the repository's ``sample_data/``)."""
    from importlib.resources import files

    if name not in SAMPLES:
        raise ValueError(f"no sample file {name!r}: there are {', '.join(SAMPLES)}")
    return str(files("ssl_svm.sample_data").joinpath(name))
