"""Stratified k-fold cross-validation over the labeled rows.

Unlabeled rows (label 0) are never held out: they stay in every training part, so
semi-supervised solvers see them in every fold.
"""

from __future__ import annotations

import numpy as np

from ssl_svm.solvers.errors import ProblemError


def stratified_folds(y: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Fold number (0..k-1) of every labeled row, -1 for unlabeled rows.

    Each class is shuffled with ``numpy.random.default_rng(seed)`` and dealt round-robin, the
    next class continuing where the previous one stopped, so fold sizes differ by at most one
    and every class is spread as evenly as it can be.
    """
    rng = np.random.default_rng(seed)
    folds = np.full(y.size, -1, dtype=np.int64)
    start = 0
    for c in np.unique(y[y != 0]):
        rows = np.flatnonzero(y == c)
        rows = rows[rng.permutation(rows.size)]
        folds[rows] = (start + np.arange(rows.size)) % k
        start = (start + rows.size) % k
    return folds


def cross_validate(fit, X, y: np.ndarray, cost: np.ndarray, params: dict, k: int,
                   seed: int, on_fold=None) -> np.ndarray:
    """Predicted label of every labeled row when its fold is held out (0 for unlabeled rows).

    ``fit(X, y, cost, params)`` returns a model with ``predict``; ``on_fold(i, k)`` is called
    before each fold (progress).
    """
    folds = stratified_folds(y, k, seed)
    pred = np.zeros(y.size)
    for i in range(k):
        if on_fold is not None:
            on_fold(i, k)
        test = folds == i
        train = ~test
        try:
            model = fit(X[train], y[train], cost[train], params)
        except ProblemError as e:
            raise ProblemError(f"cross-validation fold {i + 1} of {k}: {e} (a class has too "
                               "few labeled rows for this many folds)") from None
        pred[test] = model.predict(X[test])
    return pred


def cross_val_decisions(fit, X, y: np.ndarray, cost: np.ndarray, params: dict, k: int,
                        seed: int, labels: list[int], **run) -> np.ndarray:
    """Decision values of every labeled row from the model trained without its fold (rows ×
    functions, columns in the order of ``labels``, a model's label order; unlabeled rows
    are 0 and stay in every training part). Fold models whose labels come in another order
    are mapped to it (binary: the sign; one-vs-rest: the columns)."""
    folds = stratified_folds(y, k, seed)
    nf = 1 if len(labels) == 2 else len(labels)
    F = np.zeros((y.size, nf))
    for i in range(k):
        test = folds == i
        train = ~test
        try:
            model = fit(X[train], y[train], cost[train], params, **run)
        except ProblemError as e:
            raise ProblemError(f"cross-validation fold {i + 1} of {k}: {e}") from None
        Fi = model.decision_function(X[test])
        if nf == 1:
            F[test, 0] = Fi[:, 0] if model.labels[0] == labels[0] else -Fi[:, 0]
        else:
            F[test] = Fi[:, [model.labels.index(c) for c in labels]]
    return F
