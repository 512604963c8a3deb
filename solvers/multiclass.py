"""Two-class and one-vs-rest training on top of a binary trainer."""

from __future__ import annotations

import numpy as np

from ssl_svm.solvers.errors import ProblemError
from ssl_svm.solvers.models import LinearFunctions, Model


def class_labels(y: np.ndarray) -> list[int]:
    """The class labels of the labeled rows (label 0 = unlabeled is not a class), ascending."""
    return [int(v) for v in np.unique(y[y != 0])]


def nth_seed(warm, k: int):
    """The warm-start seed of binary task k from a previous fit's ``model.warm`` list, or None
    (no previous fit, or it had fewer tasks)."""
    return warm[k] if warm is not None and len(warm) > k else None


def binary_tasks(y: np.ndarray) -> tuple[list[int], list[int]]:
    """(model label order, positive label of each binary task) for the labels of y
    (:func:`tasks_of`)."""
    return tasks_of(class_labels(y))


def tasks_of(labels: list[int]) -> tuple[list[int], list[int]]:
    """(model label order, positive label of each binary task) for these class labels.

    Two classes: one task whose positive class is the larger label, labels ordered
    [positive, negative]; more: one task per class (one-vs-rest), labels ascending.
    """
    if len(labels) < 2:
        raise ProblemError("needs at least two classes among the labeled rows")
    if len(labels) == 2:
        return [labels[1], labels[0]], [labels[1]]
    return labels, labels


def one_vs_rest(algorithm: str, X, y: np.ndarray, binary) -> Model:
    """Train a linear model: one function for two classes, one per class for more.

    ``binary(Y, tag)`` trains on targets Y ∈ {+1, -1}, 0 for unlabeled rows (same rows as X),
    and returns
    (w of length n_features, intercept, stats dict). With two classes the larger label is the
    positive one (+1 for ±1 data). Stats are collected per function, in label order.
    """
    return one_vs_rest_tasks(
        algorithm, class_labels(y), X.shape[1],
        lambda pos, tag: binary(np.where(y == 0, 0.0, np.where(y == pos, 1.0, -1.0)), tag))


def one_vs_rest_tasks(algorithm: str, labels: list[int], d: int, binary) -> Model:
    """:func:`one_vs_rest` for rows held elsewhere: ``binary(pos, tag)`` trains the task whose
    positive class is ``pos`` on them."""
    try:
        order, tasks = tasks_of(labels)
    except ProblemError:
        raise ProblemError(f"{algorithm} needs at least two classes among the labeled "
                           "rows") from None
    W = np.zeros((d, len(tasks)))
    b = np.zeros(len(tasks))
    stats: dict[str, list] = {}
    for k, pos in enumerate(tasks):
        tag = "" if len(tasks) == 1 else f"class {pos} vs rest: "
        W[:, k], b[k], st = binary(pos, tag)
        for key, v in st.items():
            stats.setdefault(key, []).append(v)
    return Model(algorithm, order, d, LinearFunctions(W, b), stats=stats)
