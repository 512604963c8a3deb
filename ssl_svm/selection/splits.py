"""Cross-validation for semi-supervised data: folds over the labeled rows only, the unlabeled
rows in every training part, as ``ssl-tune`` and ``ssl-train -v`` make them."""

from __future__ import annotations

import numpy as np


def equal_labels(y: np.ndarray, value) -> np.ndarray:
    """Elementwise y == value for any dtype (a str array against a number is all False)."""
    if y.dtype.kind in "iufb" and isinstance(value, (int, float, np.number)):
        return y == value
    return np.fromiter((v == value for v in y.tolist()), dtype=bool, count=y.size)


def fold_plan(y, requested: int, codes=None) -> tuple[int, str | None]:
    """(folds, why they differ from ``requested``) for labels ``y`` (0 = unlabeled; ``codes``
    {internal code: real label} to name a class): at most ``requested``, at most the smallest
    class's labeled rows; 0 when a class has a single labeled row (nothing can be held out
    without taking the class from a training part)."""
    lab = y[y != 0]
    classes, counts = np.unique(lab, return_counts=True)
    if classes.size < 2:
        return 0, "fewer than two classes among the labeled rows"
    smallest = int(counts.min())
    c = classes[int(np.argmin(counts))]
    c = (codes or {}).get(c, c)
    if smallest < 2:
        return 0, (f"class {c:g} has 1 labeled row: no fold can hold it out and still train "
                   "on it")
    if smallest < requested:
        return smallest, (f"class {c:g} has {smallest} labeled rows: {smallest}-fold "
                          f"cross-validation instead of {requested}")
    return requested, None


class SemiSupervisedKFold:
    """Stratified k-fold splits of the labeled rows of y (``unlabeled_label`` marks the others):
    each split trains on every unlabeled row and the labeled rows of the other folds, and
    tests on its fold's labeled rows only. For scikit-learn's ``cv=`` (``cross_val_score``,
    ``GridSearchCV``); the folds are those of ``ssl-tune --seed random_state`` (each class
    shuffled, then dealt round-robin).

    Few labels are no error: with a class of fewer labeled rows than ``n_splits`` the splits
    are as many as its rows (``get_n_splits(X, y)`` says how many), and the rows of a class
    with a single labeled row stay in every training part, never tested (each an
    :class:`ssl_svm.UncheckedWarning`). Only labels with no class of two rows, where nothing
    can be held out, are a ValueError."""

    def __init__(self, n_splits: int = 5, unlabeled_label=-1, random_state: int = 0):
        self.n_splits = n_splits
        self.unlabeled_label = unlabeled_label
        self.random_state = random_state

    def _plan(self, y, say: bool = False):
        """(internal codes, 0 for rows never tested, folds) of labels y."""
        from ssl_svm.exceptions import UncheckedWarning, warn

        n = self.n_splits
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"SemiSupervisedKFold(n_splits={n!r}): an int, at least 2")
        if n < 2:
            raise ValueError(f"SemiSupervisedKFold needs n_splits >= 2 (got {n})")
        if y is None:
            raise ValueError("SemiSupervisedKFold.split needs y: its folds are of the labeled "
                             "rows")
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"SemiSupervisedKFold: y must be 1-D, one label per row (got shape "
                             f"{y.shape}); multi-output labels have no semi-supervised folds")
        unl = equal_labels(y, self.unlabeled_label)
        codes = np.zeros(y.size)
        classes, inverse = np.unique(y[~unl], return_inverse=True)
        counts = np.bincount(inverse, minlength=classes.size)
        single = counts == 1
        kept = np.where(single[inverse], 0.0, inverse + 1.0)
        codes[~unl] = kept
        if not np.any(counts >= 2):
            raise ValueError("SemiSupervisedKFold: no class has two labeled rows, so no row "
                             "can be held out without taking its class from the training "
                             f"part (labeled rows per class: {counts.tolist()})")
        k = min(self.n_splits, int(counts[counts >= 2].min()))
        if say and single.any():
            warn(f"SemiSupervisedKFold: class{'es' if single.sum() > 1 else ''} "
                 f"{', '.join(map(str, classes[single].tolist()))} "
                 f"ha{'ve' if single.sum() > 1 else 's'} one labeled row: it stays in every "
                 "training part and is never tested", UncheckedWarning)
        if say and k < self.n_splits:
            smallest = classes[(counts >= 2) & (counts == k)][0]
            warn(f"SemiSupervisedKFold: class {smallest} has {k} labeled rows: {k} splits "
                 f"instead of n_splits={self.n_splits}", UncheckedWarning)
        return codes, k

    def get_n_splits(self, X=None, y=None, groups=None) -> int:
        """``n_splits``, or with ``y`` the splits it allows (fewer when a class is small)."""
        if y is None:
            return self.n_splits
        return self._plan(y)[1]

    def split(self, X, y, groups=None):
        """Yield (train rows, test rows) per fold."""
        from ssl_svm.solvers.crossval import stratified_folds

        codes, k = self._plan(y, say=True)
        folds = stratified_folds(codes, k, self.random_state)
        for i in range(k):
            yield np.flatnonzero(folds != i), np.flatnonzero(folds == i)

    def __repr__(self) -> str:
        return (f"SemiSupervisedKFold(n_splits={self.n_splits}, unlabeled_label="
                f"{self.unlabeled_label!r}, random_state={self.random_state!r})")
