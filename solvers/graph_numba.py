"""The kNN graph's compiled kernel (numba): :func:`ssl_svm.solvers.graph.knn`'s candidate
selection on numba's backend (:mod:`ssl_svm.solvers.backend`);
:func:`ssl_svm.solvers.graph.smallest` is the numpy one."""

import numpy as np
from numba import prange

from ssl_svm.solvers.jit import njit


@njit(parallel=True, cache=True)
def smallest(D, out):
    """Column indices of the out.shape[1] smallest entries of every row of D, smallest by
    (value, index): one pass per row that keeps the current candidates and replaces their
    largest (the largest index among equal values) when a smaller value comes. About 10×
    faster than np.argpartition on 60,000-wide rows, and deterministic on ties."""
    kk = out.shape[1]
    n = D.shape[1]
    for r in prange(D.shape[0]):
        row = D[r]
        vals = np.empty(kk)
        ids = out[r]
        for j in range(kk):
            vals[j] = row[j]
            ids[j] = j
        m = 0
        for j in range(1, kk):
            if vals[j] >= vals[m]:
                m = j
        for j in range(kk, n):
            v = row[j]
            if v < vals[m]:
                vals[m] = v
                ids[m] = j
                m = 0
                for t in range(1, kk):
                    if vals[t] > vals[m] or (vals[t] == vals[m] and ids[t] > ids[m]):
                        m = t


# -- the cluster's approximate search (:mod:`ssl_svm.solvers.graph_blocks`): a row's leaf in
# each random-projection tree, and each leaf's pairs


@njit(cache=True)
def _dot_csr(ip, ix, dv, i, np_, nx, nv, r):
    """Row i of CSR (ip, ix, dv) times row r of CSR (np_, nx, nv); sorted indices."""
    a, ae = ip[i], ip[i + 1]
    b, be = np_[r], np_[r + 1]
    s = 0.0
    while a < ae and b < be:
        ca, cb = ix[a], nx[b]
        if ca == cb:
            s += dv[a] * nv[b]
            a += 1
            b += 1
        elif ca < cb:
            a += 1
        else:
            b += 1
    return s


@njit(parallel=True, cache=True)
def route(ip, ix, dv, np_, nx, nv, offsets, level_row, node):
    """Each CSR row (ip, ix, dv) down the levels of a random-projection tree: from node v
    (``node``, in and out) of a level to node 2v + (x·w_v ≥ c_v) of the next; the levels'
    hyperplanes are the CSR rows (np_, nx, nv) and ``offsets``, level l's node v at row
    level_row[l] + v. Sorted indices."""
    for i in prange(ip.size - 1):
        v = node[i]
        for lev in range(level_row.size):
            r = level_row[lev] + v
            m = _dot_csr(ip, ix, dv, i, np_, nx, nv, r)
            v = 2 * v + (1 if m >= offsets[r] else 0)
        node[i] = v


@njit(cache=True)
def _offer(cand, cd, i, d, g):
    """Offer (d, g) to row i's list, kept ascending by (distance, index); -1/inf: empty."""
    last = cand.shape[1] - 1
    if d > cd[i, last] or (d == cd[i, last] and cand[i, last] >= 0 and cand[i, last] <= g):
        return
    pos = last
    while pos > 0 and (cd[i, pos - 1] > d or (cd[i, pos - 1] == d and cand[i, pos - 1] > g)):
        cd[i, pos] = cd[i, pos - 1]
        cand[i, pos] = cand[i, pos - 1]
        pos -= 1
    cd[i, pos] = d
    cand[i, pos] = g


@njit(parallel=True, cache=True)
def leaf_pairs_dense(X, bounds, gid, cand, cd):
    """In each leaf (rows bounds[l]:bounds[l + 1] of X), each row's cand.shape[1] nearest
    others by squared distance from the differences, ties by index (``gid``: the rows'
    global indices): cand, cd ascending by (distance, index), -1 and inf where a leaf has
    fewer rows (filled so on entry). Leaves are disjoint: each thread writes its own rows."""
    d = X.shape[1]
    for lf in prange(bounds.size - 1):
        a, e = bounds[lf], bounds[lf + 1]
        for i in range(a, e):
            for j in range(i + 1, e):
                s = 0.0
                for c in range(d):
                    t = X[i, c] - X[j, c]
                    s += t * t
                _offer(cand, cd, i, s, gid[j])
                _offer(cand, cd, j, s, gid[i])


@njit(cache=True)
def _sqdist_csr(ip, ix, dv, i, j):
    a, ae = ip[i], ip[i + 1]
    b, be = ip[j], ip[j + 1]
    s = 0.0
    while a < ae or b < be:
        if b >= be or (a < ae and ix[a] < ix[b]):
            s += dv[a] * dv[a]
            a += 1
        elif a >= ae or ix[b] < ix[a]:
            s += dv[b] * dv[b]
            b += 1
        else:
            t = dv[a] - dv[b]
            s += t * t
            a += 1
            b += 1
    return s


@njit(parallel=True, cache=True)
def leaf_pairs_csr(ip, ix, dv, bounds, gid, cand, cd):
    """:func:`leaf_pairs_dense` on CSR rows (sorted indices)."""
    for lf in prange(bounds.size - 1):
        a, e = bounds[lf], bounds[lf + 1]
        for i in range(a, e):
            for j in range(i + 1, e):
                s = _sqdist_csr(ip, ix, dv, i, j)
                _offer(cand, cd, i, s, gid[j])
                _offer(cand, cd, j, s, gid[i])


@njit(parallel=True, cache=True)
def merge_lists(cand, cd, rows, new, new_d):
    """Rows ``rows`` of (cand, cd) merged with (new, new_d), row by row: each list ascending
    by (distance, index), -1/inf empty; the result keeps the cand.shape[1] first, each index
    once."""
    kk = cand.shape[1]
    w = new.shape[1]
    for t in prange(rows.size):
        i = rows[t]
        oi = np.empty(kk, np.int64)
        od = np.empty(kk)
        a = 0
        b = 0
        m = 0
        while m < kk and (a < kk or b < w):
            if b >= w or (a < kk and (cd[i, a] < new_d[t, b] or (
                    cd[i, a] == new_d[t, b] and cand[i, a] <= new[t, b]))):
                g, d = cand[i, a], cd[i, a]
                a += 1
            else:
                g, d = new[t, b], new_d[t, b]
                b += 1
            if g < 0:
                continue
            seen = False
            for u in range(m):
                if oi[u] == g:
                    seen = True
                    break
            if not seen:
                oi[m] = g
                od[m] = d
                m += 1
        for u in range(m, kk):
            oi[u] = -1
            od[u] = np.inf
        for u in range(kk):
            cand[i, u] = oi[u]
            cd[i, u] = od[u]
