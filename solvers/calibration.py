"""Probability calibration of decision values (ssl-train --probability).

Platt's sigmoid (1999), LIBSVM's ``-b 1``, fitted on cross-validated decision values of the
labeled rows, with one change: the sigmoid has no offset, ``P = σ(A f)`` (binary) and
``P_k ∝ σ(A f_k)`` (one-vs-rest, one slope for all classes). Every probability is then
increasing in its own decision value and 1/2 at the decision boundary, so the most probable
class is always the predicted one — LIBSVM's offset B lets them disagree near the boundary,
its most reported surprise. The slope minimises the cross-entropy against Platt's smoothed
targets (binary: (N₊ + 1)/(N₊ + 2) and 1/(N₋ + 2); one-vs-rest: 1 - ε on the true class and
ε/(K - 1) on the others, ε = 1/(N + 2)), which keeps A finite when the values separate the
classes.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_expit, log_softmax

A_RANGE = (1e-8, 1e8)


def targets(y_idx: np.ndarray, n_labels: int) -> np.ndarray:
    """Smoothed target probabilities (rows × labels) for true label indices ``y_idx``."""
    n = y_idx.size
    T = np.empty((n, n_labels))
    if n_labels == 2:
        n_pos = int(np.sum(y_idx == 0))
        n_neg = n - n_pos
        hi, lo = (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0)
        T[:, 0] = np.where(y_idx == 0, hi, lo)
        T[:, 1] = 1.0 - T[:, 0]
        return T
    eps = 1.0 / (n + 2.0)
    T[:] = eps / (n_labels - 1)
    T[np.arange(n), y_idx] = 1.0 - eps
    return T


def log_probabilities(F: np.ndarray, a: float) -> np.ndarray:
    """log P (rows × labels) of :meth:`solvers.models.Model.probabilities` for slope a."""
    T = a * F
    if F.shape[1] == 1:
        return np.column_stack([log_expit(T[:, 0]), log_expit(-T[:, 0])])
    return log_softmax(log_expit(T), axis=1)


def cross_entropy(F: np.ndarray, T: np.ndarray, a: float) -> float:
    """Mean cross-entropy of the targets T under slope a."""
    return float(-np.sum(T * log_probabilities(F, a)) / F.shape[0])


def fit_slope(F: np.ndarray, y_idx: np.ndarray, n_labels: int) -> tuple[float, float]:
    """(A, mean cross-entropy at A): the slope in A_RANGE that minimises the cross-entropy
    of the smoothed targets, searched in log A (the loss is convex in A for two classes and
    unimodal along log A in practice; a coarse scan picks the bracket first)."""
    T = targets(y_idx, n_labels)
    grid = np.linspace(np.log10(A_RANGE[0]), np.log10(A_RANGE[1]), 65)
    losses = [cross_entropy(F, T, 10.0 ** g) for g in grid]
    j = int(np.argmin(losses))
    lo, hi = grid[max(j - 1, 0)], grid[min(j + 1, grid.size - 1)]
    res = minimize_scalar(lambda g: cross_entropy(F, T, 10.0 ** g), bounds=(lo, hi),
                          method="bounded", options={"xatol": 1e-10})
    g = float(res.x) if res.fun <= losses[j] else float(grid[j])
    return 10.0 ** g, cross_entropy(F, T, 10.0 ** g)
