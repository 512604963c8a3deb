"""tsvm's and da's per-row steps in numba (:mod:`solvers.s3vm`): the switching of labels, the
annealing's probabilities and sums. :mod:`solvers.s3vm_numpy` holds the same functions without
numba, for fits too small to pay numba's start-up; both compute the same values, up to the
order in which sums are taken.
"""

from __future__ import annotations

import math

import numpy as np

from ssl_svm.solvers.jit import njit
from ssl_svm.solvers.linalg import first_k

# switching usually stops after a few pairs: the first this many candidates are ordered alone,
# and all of them only when more pairs switch (two full sorts of 100,000 outputs took 25 ms a
# round)
SWITCH_BATCH = 64


@njit(cache=True)
def switch_labels(Y, o, unl, S):
    """SVMlin's multiple switching: candidates are unlabeled rows labeled +1 with o < 1 (sorted
    by o ascending) and labeled -1 with o > -1 (sorted by o descending), ties in row order;
    switch pairs from the tops while o_pos < o_neg, at most S pairs. Returns the number of
    pairs switched."""
    pos = np.empty(unl.size, np.int64)
    neg = np.empty(unl.size, np.int64)
    npos = 0
    nneg = 0
    for t in range(unl.size):
        i = unl[t]
        if Y[i] > 0.0 and o[i] < 1.0:
            pos[npos] = i
            npos += 1
        elif Y[i] < 0.0 and -o[i] < 1.0:
            neg[nneg] = i
            nneg += 1
    k = min(S, npos, nneg)
    if k <= 0:
        return 0
    pos = pos[:npos]
    neg = neg[:nneg]
    kpos = np.empty(npos)
    for t in range(npos):
        kpos[t] = o[pos[t]]
    kneg = np.empty(nneg)
    for t in range(nneg):
        kneg[t] = -o[neg[t]]
    s = 0
    batch = min(SWITCH_BATCH, k)
    while True:
        top_pos = first_k(pos, kpos, batch)
        top_neg = first_k(neg, kneg, batch)
        while s < batch and o[top_pos[s]] < o[top_neg[s]]:
            s += 1
        if s < batch or batch == k:
            break
        batch = k
    for t in range(s):
        Y[top_pos[t]] = -1.0
        Y[top_neg[t]] = 1.0
    return s


@njit(cache=True)
def _sigmoid(x):
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@njit(cache=True)
def balance_sums(g, T, nu):
    """(Σ p_j, Σ p_j (1 - p_j)) for p_j = σ((ν - g_j)/T)."""
    s = 0.0
    ds = 0.0
    for j in range(g.size):
        p = _sigmoid((nu - g[j]) / T)
        s += p
        ds += p * (1.0 - p)
    return s, ds


@njit(cache=True)
def probabilities(g, T, nu):
    """p_j = σ((ν - g_j)/T)."""
    p = np.empty(g.size)
    for j in range(g.size):
        p[j] = _sigmoid((nu - g[j]) / T)
    return p


@njit(cache=True)
def _xlogy_ratio(a, b):
    if a <= 0.0:
        return 0.0
    return a * math.log(a / b)


@njit(cache=True)
def kl_sum(p, q):
    """Σ_j KL(Bernoulli(p_j) || Bernoulli(q_j)), with 0 log 0 = 0."""
    s = 0.0
    for j in range(p.size):
        qj = min(max(q[j], 1e-300), 1.0 - 1e-16)
        s += _xlogy_ratio(p[j], qj) + _xlogy_ratio(1.0 - p[j], 1.0 - qj)
    return s


@njit(cache=True)
def entropy_sum(p):
    """Σ_j of the Bernoulli(p_j) entropies (natural log)."""
    s = 0.0
    for j in range(p.size):
        a = p[j]
        if 0.0 < a < 1.0:
            s -= a * math.log(a) + (1.0 - a) * math.log(1.0 - a)
    return s
