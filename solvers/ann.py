"""Approximate k nearest neighbours of every row among all rows (Euclidean, dense rows):
a random-projection forest, then NN-descent (Dong, Moses & Li 2011).

1. **Forest.** Each tree splits a node's rows by the hyperplane halfway between two of them
   drawn at random, until a node holds at most ``leaf_size`` rows; every pair of rows in a leaf
   is a candidate. Trees are built in parallel, one per thread.
2. **Descent.** A neighbour's neighbour is likely a neighbour: each row takes as hops its
   neighbours and the rows that have it as a neighbour, and as candidates the hops' neighbours
   and the rows that have a hop as a neighbour ("pull": a row writes only its own list, so
   rows run in parallel without locks), keeping the k nearest. Only paths through an entry
   that changed in the last round are followed, at most ``FANOUT`` hops and candidates per
   hop; rounds stop when fewer than ``DELTA``·n·k entries change.

Written here rather than taken from pynndescent because the result must not depend on the
number of threads (pynndescent's parallel updates race; its single-threaded build takes
minutes) and its compilation (~50 s a process) is not cached. Every random choice is a hash of
(seed, tree, node) or (seed, row), and each parallel loop writes disjoint rows, so the graph
is the same on any number of threads. Lists are ordered by (distance, index): a row's k
nearest among the candidates it saw does not depend on the order it saw them.

Memory: the rows, 2·n·k·17 bytes of lists and three n-long index arrays per tree.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ssl_svm.solvers.jit import njit

N_TREES = 8
LEAF_MIN = 24  # leaf size: at least this, at least k + 1
# hops followed per row and neighbours taken per hop, per round: at least this, at least k/2
# (at k = 50, 16 found 95 % of g241c's neighbours, 25 found 98 % for 10 % more time)
FANOUT = 16
ROUNDS = 12
DELTA = 0.001

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S32 = np.uint64(32)
_ONE = np.uint64(1)


@njit(cache=True)
def _mix(z):
    """splitmix64's finaliser: a uint64 to a well-mixed uint64."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True)
def _hash(seed, a, b):
    """A uint64 from three integers (the random choices are all of this form)."""
    z = _mix(np.uint64(seed) * _GOLD + np.uint64(a))
    return _mix(z + np.uint64(b) * _GOLD)


@njit(cache=True, fastmath=True)
def _sqdist(X, p, q):
    s = 0.0
    for c in range(X.shape[1]):
        t = X[p, c] - X[q, c]
        s += t * t
    return s


@njit(cache=True)
def _tree(X, seed, tree, leaf_size, perm, starts, ends):
    """One random-projection tree: perm holds the rows leaf after leaf, leaf l is
    perm[starts[l]:ends[l]]; returns the number of leaves."""
    n, d = X.shape
    for i in range(n):
        perm[i] = i
    buf = np.empty(n, np.int64)
    side = np.empty(n, np.float64)
    stack = np.empty((n + 2, 2), np.int64)
    stack[0, 0] = 0
    stack[0, 1] = n
    top = 1
    n_leaves = 0
    node = 0
    normal = np.empty(d)
    while top > 0:
        top -= 1
        s = stack[top, 0]
        e = stack[top, 1]
        node += 1
        size = e - s
        if size <= leaf_size:
            starts[n_leaves] = s
            ends[n_leaves] = e
            n_leaves += 1
            continue
        # two distinct rows of the node (a few draws: duplicates give no hyperplane)
        a = -1
        b = -1
        for attempt in range(8):
            h = _hash(seed, tree * 1000003 + attempt, node)
            ia = perm[s + np.int64(h % np.uint64(size))]
            ib = perm[s + np.int64((h >> _S32) % np.uint64(size))]
            if ia != ib and _sqdist(X, ia, ib) > 0.0:
                a = ia
                b = ib
                break
        n_left = 0
        if a >= 0:
            # x is nearer a than b iff x·(a - b) > (|a|² - |b|²)/2
            off = 0.0
            for c in range(d):
                normal[c] = X[a, c] - X[b, c]
                off += 0.5 * (X[a, c] * X[a, c] - X[b, c] * X[b, c])
            for t in range(s, e):
                i = perm[t]
                m = -off
                for c in range(d):
                    m += X[i, c] * normal[c]
                side[t] = m
                if m > 0.0 or (m == 0.0 and (_hash(seed, tree, i) & _ONE) == _ONE):
                    n_left += 1
        if n_left == 0 or n_left == size:
            n_left = size // 2  # no split found (duplicates): halves, as the rows are
        else:
            lo = s
            hi = e - 1
            for t in range(s, e):
                i = perm[t]
                m = side[t]
                if m > 0.0 or (m == 0.0 and (_hash(seed, tree, i) & _ONE) == _ONE):
                    buf[lo] = i
                    lo += 1
                else:
                    buf[hi] = i
                    hi -= 1
            for t in range(s, e):
                perm[t] = buf[t]
        stack[top, 0] = s + n_left
        stack[top, 1] = e
        stack[top + 1, 0] = s
        stack[top + 1, 1] = s + n_left
        top += 2
    return n_leaves


@njit(parallel=True, cache=True)
def _forest(X, seed, leaf_size, perms, starts, ends, counts):
    for t in prange(perms.shape[0]):
        counts[t] = _tree(X, seed, t, leaf_size, perms[t], starts[t], ends[t])


@njit(cache=True)
def _has(idx, i, j):
    for t in range(idx.shape[1]):
        if idx[i, t] == j:
            return True
    return False


@njit(cache=True)
def _push(idx, dist, flag, i, d, j):
    """Offer (d, j) to row i's max-heap of its k nearest by (distance, index); 1 if kept."""
    if d > dist[i, 0] or (d == dist[i, 0] and j >= idx[i, 0]):
        return 0
    if _has(idx, i, j):
        return 0
    k = idx.shape[1]
    pos = 0
    while True:
        c = 2 * pos + 1
        if c >= k:
            break
        r = c + 1
        if r < k and (dist[i, r] > dist[i, c] or (dist[i, r] == dist[i, c]
                                                  and idx[i, r] > idx[i, c])):
            c = r
        if dist[i, c] > d or (dist[i, c] == d and idx[i, c] > j):
            dist[i, pos] = dist[i, c]
            idx[i, pos] = idx[i, c]
            flag[i, pos] = flag[i, c]
            pos = c
        else:
            break
    dist[i, pos] = d
    idx[i, pos] = j
    flag[i, pos] = 1
    return 1


@njit(parallel=True, cache=True)
def _leaf_join(X, perm, starts, ends, n_leaves, idx, dist, flag):
    """Every pair of rows in a leaf of one tree, offered to both rows' lists (the leaves of
    a tree are disjoint: no two threads write one row)."""
    for lf in prange(n_leaves):
        s = starts[lf]
        e = ends[lf]
        for a in range(s, e):
            p = perm[a]
            for b in range(a + 1, e):
                q = perm[b]
                if _has(idx, p, q) and _has(idx, q, p):
                    continue
                d = _sqdist(X, p, q)
                _push(idx, dist, flag, p, d, q)
                _push(idx, dist, flag, q, d, p)


@njit(cache=True)
def _fill(X, seed, idx, dist, flag):
    """Rows the forest left short of k candidates take rows drawn at random."""
    n, k = idx.shape
    for i in range(n):
        if idx[i, 0] >= 0:
            continue  # the root is the largest: a full list has no -1
        start = np.int64(_hash(seed, n, i) % np.uint64(n))
        for t in range(n):
            j = (start + t) % n
            if j != i:
                _push(idx, dist, flag, i, _sqdist(X, i, j), j)
            if idx[i, 0] >= 0:
                break


@njit(cache=True)
def _reverse(idx, flag):
    """Rows that have row i among their neighbours, as CSR (ptr, rows, edge is new)."""
    n, k = idx.shape
    ptr = np.zeros(n + 1, np.int64)
    for i in range(n):
        for t in range(k):
            ptr[idx[i, t] + 1] += 1
    for i in range(n):
        ptr[i + 1] += ptr[i]
    pos = ptr[:-1].copy()
    rows = np.empty(ptr[n], np.int64)
    new = np.empty(ptr[n], np.uint8)
    for i in range(n):
        for t in range(k):
            j = idx[i, t]
            rows[pos[j]] = i
            new[pos[j]] = flag[i, t]
            pos[j] += 1
    return ptr, rows, new


@njit(cache=True)
def _closest_first(dist, idx, i, flag, want_new, out):
    """Positions t of row i's list with flag == want_new, nearest first, in out; returns how
    many there are."""
    k = idx.shape[1]
    m = 0
    for t in range(k):
        if flag[i, t] == want_new:
            out[m] = t
            m += 1
    # insertion sort of the chosen positions by (distance, index): k is small
    for a in range(1, m):
        v = out[a]
        b = a - 1
        while b >= 0 and (dist[i, out[b]] > dist[i, v] or (dist[i, out[b]] == dist[i, v]
                                                          and idx[i, out[b]] > idx[i, v])):
            out[b + 1] = out[b]
            b -= 1
        out[b + 1] = v
    return m


@njit(parallel=True, cache=True)
def _descend(X, idx, dist, flag, rptr, rrows, rnew, fanout, idx2, dist2, flag2, changed):
    """One round: row i (in parallel; it writes only row i of idx2/dist2/flag2) follows up to
    ``fanout`` hops — its new neighbours nearest first, then the rows that took it as a new
    neighbour, then old ones — and from each hop up to ``fanout`` of the hop's neighbours
    (new ones first unless the hop itself is new), offering them to its list."""
    n, k = idx.shape
    for i in prange(n):
        for t in range(k):
            idx2[i, t] = idx[i, t]
            dist2[i, t] = dist[i, t]
            flag2[i, t] = 0
        pos_new = np.empty(k, np.int64)
        pos_old = np.empty(k, np.int64)
        n_new = _closest_first(dist, idx, i, flag, 1, pos_new)
        nn = min(n_new, fanout)
        no = _closest_first(dist, idx, i, flag, 0, pos_old)
        # new edges beyond the fanout are not followed now: they stay new for the next round
        for a in range(nn, n_new):
            flag2[i, pos_new[a]] = 1
        # hops: (row, edge is new)
        hops = np.empty(fanout + 2 * fanout, np.int64)
        hop_new = np.empty(fanout + 2 * fanout, np.uint8)
        nh = 0
        for a in range(nn):
            hops[nh] = idx[i, pos_new[a]]
            hop_new[nh] = 1
            nh += 1
        r0 = rptr[i]
        r1 = rptr[i + 1]
        taken = 0
        for u in range(r0, r1):
            if taken >= fanout:
                break
            if rnew[u] == 1:
                hops[nh] = rrows[u]
                hop_new[nh] = 1
                nh += 1
                taken += 1
        for a in range(min(no, fanout - min(nn, fanout))):
            hops[nh] = idx[i, pos_old[a]]
            hop_new[nh] = 0
            nh += 1
        cand = np.empty(nh * (2 * fanout + 1), np.int64)
        nc = 0
        pos_j = np.empty(k, np.int64)
        for h in range(nh):
            j = hops[h]
            # the rows that took the hop as a neighbour (all if the hop is new, else the new)
            taken = 0
            for u in range(rptr[j], rptr[j + 1]):
                if taken >= fanout:
                    break
                if hop_new[h] == 1 or rnew[u] == 1:
                    cand[nc] = rrows[u]
                    nc += 1
                    taken += 1
            if hop_new[h] == 1:
                cand[nc] = j  # a row that took i as neighbour is a candidate itself
                nc += 1
                m = min(fanout, _closest_first(dist, idx, j, flag, 1, pos_j))
                for a in range(m):
                    cand[nc] = idx[j, pos_j[a]]
                    nc += 1
                if m < fanout:
                    m2 = min(fanout - m,
                             _closest_first(dist, idx, j, flag, 0, pos_j))
                    for a in range(m2):
                        cand[nc] = idx[j, pos_j[a]]
                        nc += 1
            else:
                m = min(fanout, _closest_first(dist, idx, j, flag, 1, pos_j))
                for a in range(m):
                    cand[nc] = idx[j, pos_j[a]]
                    nc += 1
        c = np.sort(cand[:nc])
        count = 0
        prev = -1
        for a in range(nc):
            v = c[a]
            if v == prev or v == i or v < 0:
                continue
            prev = v
            if _has(idx2, i, v):
                continue
            count += _push(idx2, dist2, flag2, i, _sqdist(X, i, v), v)
        changed[i] = count


def knn(X: np.ndarray, k: int, seed: int = 0, n_trees: int = N_TREES,
        leaf_size: int | None = None, fanout: int | None = None, rounds: int = ROUNDS,
        delta: float = DELTA) -> tuple[np.ndarray, np.ndarray, dict]:
    """Approximate (indices (n, k), Euclidean distances (n, k), statistics) of each row's k
    nearest other rows of the dense float64 matrix X, sorted by (distance, index), as
    :func:`ssl_svm.solvers.graph.knn` gives them exactly. Requires 1 <= k <= n - 1."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    n = X.shape[0]
    leaf = max(LEAF_MIN, k + 1) if leaf_size is None else int(leaf_size)
    fanout = min(k, max(FANOUT, (k + 1) // 2) if fanout is None else int(fanout))
    idx = np.full((n, k), -1, dtype=np.int64)
    dist = np.full((n, k), np.inf)
    flag = np.zeros((n, k), dtype=np.uint8)
    perms = np.empty((n_trees, n), dtype=np.int64)
    starts = np.empty((n_trees, n), dtype=np.int64)
    ends = np.empty((n_trees, n), dtype=np.int64)
    counts = np.zeros(n_trees, dtype=np.int64)
    _forest(X, seed, leaf, perms, starts, ends, counts)
    for t in range(n_trees):
        _leaf_join(X, perms[t], starts[t], ends[t], counts[t], idx, dist, flag)
    del perms, starts, ends
    _fill(X, seed, idx, dist, flag)
    idx2 = np.empty_like(idx)
    dist2 = np.empty_like(dist)
    flag2 = np.empty_like(flag)
    changed = np.zeros(n, dtype=np.int64)
    done = 0
    while done < rounds:
        done += 1
        rptr, rrows, rnew = _reverse(idx, flag)
        _descend(X, idx, dist, flag, rptr, rrows, rnew, fanout, idx2, dist2, flag2,
                 changed)
        idx, idx2 = idx2, idx
        dist, dist2 = dist2, dist
        flag, flag2 = flag2, flag
        if changed.sum() <= delta * n * k:
            break
    order = np.lexsort((idx, dist), axis=1)
    idx = np.take_along_axis(idx, order, axis=1)
    dist = np.sqrt(np.take_along_axis(dist, order, axis=1))
    return idx, dist, {"trees": n_trees, "leaf_size": leaf, "fanout": fanout, "rounds": done}
