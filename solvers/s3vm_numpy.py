"""tsvm's and da's per-row steps without numba: :mod:`solvers.s3vm_jit`'s functions (same
names, arguments and results) as whole-array numpy operations, for fits that begin on numpy
(:class:`solvers.linear.Routines`). The switching is the same to the last row (the same stable
sorts); the sums may differ from the compiled loops' in the last bits (numpy sums pairwise).
This module imports no numba.
"""

from __future__ import annotations

import numpy as np


def switch_labels(Y, o, unl, S):
    """:func:`solvers.s3vm_jit.switch_labels`: switch up to S pairs of unlabeled rows (the
    lowest-o positives with o < 1 against the highest-o negatives with o > -1) while
    o_pos < o_neg; Y changed in place. Returns the number of pairs switched."""
    ou, yu = o[unl], Y[unl]
    pos = unl[(yu > 0.0) & (ou < 1.0)]
    neg = unl[(yu < 0.0) & (-ou < 1.0)]
    k = min(S, pos.size, neg.size)
    if k <= 0:
        return 0
    pos = pos[np.argsort(o[pos], kind="mergesort")][:k]
    neg = neg[np.argsort(-o[neg], kind="mergesort")][:k]
    stop = np.flatnonzero(~(o[pos] < o[neg]))
    s = int(stop[0]) if stop.size else k
    Y[pos[:s]] = -1.0
    Y[neg[:s]] = 1.0
    return s


def probabilities(g, T, nu):
    """p_j = σ((ν - g_j)/T), from exp of a non-positive number only (no overflow)."""
    x = (nu - g) / T
    e = np.exp(-np.abs(x))
    return np.where(x >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e))


def balance_sums(g, T, nu):
    """(Σ p_j, Σ p_j (1 - p_j)) for p_j = σ((ν - g_j)/T)."""
    p = probabilities(g, T, nu)
    return float(p.sum()), float(p @ (1.0 - p))


def _xlogy_ratio(a, b):
    out = np.zeros(a.size)
    on = a > 0.0
    out[on] = a[on] * np.log(a[on] / b[on])
    return out


def kl_sum(p, q):
    """Σ_j KL(Bernoulli(p_j) || Bernoulli(q_j)), with 0 log 0 = 0."""
    q = np.minimum(np.maximum(q, 1e-300), 1.0 - 1e-16)
    return float(np.sum(_xlogy_ratio(p, q) + _xlogy_ratio(1.0 - p, 1.0 - q)))


def entropy_sum(p):
    """Σ_j of the Bernoulli(p_j) entropies (natural log)."""
    a = p[(p > 0.0) & (p < 1.0)]
    return float(-np.sum(a * np.log(a) + (1.0 - a) * np.log(1.0 - a)))
