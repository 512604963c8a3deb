"""Cross-validation for semi-supervised data: folds over the labeled rows only, the unlabeled
rows in every training part, as ``ssl-tune`` and ``ssl-train -v`` make them."""

from __future__ import annotations

import numpy as np


class SemiSupervisedKFold:
    """Stratified k-fold splits of the labeled rows of y (``unlabeled_label`` marks the others):
    each split trains on every unlabeled row and the labeled rows of the other folds, and
    tests on its fold's labeled rows only. For scikit-learn's ``cv=`` (``cross_val_score``,
    ``GridSearchCV``); the folds are those of ``ssl-tune --seed random_state`` (each class
    shuffled, then dealt round-robin)."""

    def __init__(self, n_splits: int = 5, unlabeled_label=-1, random_state: int = 0):
        self.n_splits = n_splits
        self.unlabeled_label = unlabeled_label
        self.random_state = random_state

    def get_n_splits(self, X=None, y=None, groups=None) -> int:
        return self.n_splits

    def split(self, X, y, groups=None):
        """Yield (train rows, test rows) per fold."""
        from ssl_svm.estimators import _equal
        from ssl_svm.solvers.crossval import stratified_folds

        if self.n_splits < 2:
            raise ValueError(f"SemiSupervisedKFold needs n_splits >= 2 (got {self.n_splits})")
        y = np.asarray(y)
        unl = _equal(y, self.unlabeled_label)
        codes = np.zeros(y.size)
        _, inverse = np.unique(y[~unl], return_inverse=True)
        codes[~unl] = inverse + 1
        counts = np.bincount(inverse)
        if counts.size and counts.min() < self.n_splits:
            raise ValueError(f"a class has {int(counts.min())} labeled rows, fewer than "
                             f"n_splits={self.n_splits}")
        folds = stratified_folds(codes, self.n_splits, self.random_state)
        for k in range(self.n_splits):
            yield np.flatnonzero(folds != k), np.flatnonzero(folds == k)

    def __repr__(self) -> str:
        return (f"SemiSupervisedKFold(n_splits={self.n_splits}, unlabeled_label="
                f"{self.unlabeled_label!r}, random_state={self.random_state!r})")
