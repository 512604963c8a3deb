"""The rows of a distributed graph fit (lapsvm, laprls): one :class:`GraphBlock` per part of
the training rows, holding its rows, their rows of the kNN graph's Laplacian, and every
per-row vector of the graph stage (:func:`ssl_svm.solvers.lapsvm.graph_newton`).

The driver (:mod:`solvers.graph_distributed`) sends the steps; a block returns what the
driver sums or routes: statistics, candidate neighbours of another block's rows, the edges
whose other end another block holds, the values of its rows that other blocks' graph rows
need (the halo), dot products. Rows are numbered globally in block order (``first_row`` on);
a block's Laplacian rows are CSR over its own rows first, then its halo (the other blocks'
rows it has an edge to; received in ascending order, read by the product in the order its
rows first need them, :attr:`GraphBlock.halo_perm`). Nothing here knows of Dask.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph

from ssl_svm.solvers import graph as graph_mod
from ssl_svm.solvers import kernels
from ssl_svm.solvers.blocks import BlockRows


def _nb():
    from ssl_svm.solvers import lapsvm_numba

    return lapsvm_numba


class GraphBlock(BlockRows):
    """Rows ``first_row``... of the training data (X CSR, y labels in internal codes, 0 =
    unlabeled, cost factors) and the graph fit's state on them."""

    def __init__(self, X, y, cost, first_row: int = 0, threads: int = 1):
        super().__init__(X, y, cost, first_row, threads)
        self.v: dict[str, np.ndarray] = {}  # per-row vectors of the graph stage, by name
        self.h: dict[str, np.ndarray] = {}  # their values on the halo rows
        self.yv = self.y
        self.relay = True  # the steps return their halo values (the driver routes them)

    def _changed(self) -> None:
        self.yv = self.y

    def set_view(self, held_out) -> int:
        """Fit with the labels of the local rows ``held_out`` hidden (a cross-validation
        fold: the rows stay in the graph, unlabeled); None: every label. Returns the rows."""
        self.yv = self.y.copy()
        if held_out is not None:
            self.yv[np.asarray(held_out, dtype=np.int64)] = 0.0
        return int(self.y.size)

    def labeled_in_view(self) -> np.ndarray:
        """The rows whose labels the fit sees (local, ascending)."""
        return np.flatnonzero(self.yv != 0)

    def labels_of_labeled(self) -> np.ndarray:
        """Their labels, in row order."""
        return self.yv[self.yv != 0]

    def labeled_rows(self, rows) -> tuple:
        """(X, y, cost) of the local rows ``rows`` as read (the svm baseline's rows)."""
        rows = np.asarray(rows, dtype=np.int64)
        return self.X[rows], self.y[rows], self.cost[rows]

    def place(self, first_row: int, n: int) -> int:
        """This block's rows are ``first_row``... of ``n``; returns its row count."""
        self.first_row = int(first_row)
        self.n = int(n)
        return int(self.y.size)

    def labels(self) -> np.ndarray:
        """The labels the fit sees of every row (internal codes, 0 = unlabeled; a fold's
        hidden, :meth:`set_view`)."""
        return self.yv

    # ----------------------------------------------------------------- the rows the graph sees

    def metric_stats(self) -> tuple:
        """What --graph-metric auto decides on (:func:`graph.resolve_metric`), summed or
        combined over blocks by the driver: (stored values, smallest stored value, the
        largest distance of a nonzero row's length from 1, the columns' largest and smallest
        values, unstored entries counting as zeros)."""
        X = self.X
        norms = np.sqrt(kernels.sqnorms(X))
        dev = np.abs(norms[norms > 0] - 1.0)
        lo = float(X.data.min()) if X.nnz else 0.0
        if X.shape[0]:
            C = sp.csc_matrix(X)
            hi_c = np.asarray(C.max(axis=0).todense()).ravel()
            lo_c = np.asarray(C.min(axis=0).todense()).ravel()
        else:
            hi_c = lo_c = np.zeros(X.shape[1])
        return int(X.nnz), lo, float(dev.max()) if dev.size else 0.0, hi_c, lo_c

    def use_metric(self, metric: str, scale, dense: bool) -> None:
        """The rows the graph and the kernel see: X at unit length (cosine), its columns times
        ``scale`` (scaled), or X; ``dense``: held dense, as the whole would be
        (:func:`kernels.prepare`)."""
        if scale is not None:
            Xm = kernels.scale_columns(self.X, np.asarray(scale))
        elif metric == "cosine":
            Xm = kernels.unit_rows(self.X)
        else:
            Xm = self.X
        self.Xm = sp.csr_matrix(Xm)
        self.Xp = self.Xm.toarray() if dense else self.Xm
        self.xn = kernels.sqnorms(self.Xp)

    def rows(self, local) -> sp.csr_matrix:
        """The rows ``local`` (local indices) as the graph sees them (CSR)."""
        return self.Xm[np.asarray(local, dtype=np.int64)]

    def prepared(self, a: int = 0, e: int | None = None) -> object:
        """Rows [a, e) as the graph sees them, dense or CSR (what other blocks search)."""
        return self.Xp[a:e]

    # ----------------------------------------------------------------- the kNN graph

    def nearest_sqdist(self, A, skip, kk: int) -> np.ndarray:
        """The ``kk`` smallest squared distances (fast formula, at least 0) from each row of A
        to this block's rows, a row of A never compared with itself (``skip``: its global row,
        or -1): inf where this block has fewer (:func:`graph.neighbour_contrast`'s part), over
        blocks of this block's rows."""
        sa = kernels.sqnorms(A)
        skip = np.asarray(skip, dtype=np.int64) - self.first_row
        best = np.full((A.shape[0], kk), np.inf)
        nb = self.y.size
        step = kernels.block_rows_for(A.shape[0])
        for s in range(0, nb, step):
            e = min(nb, s + step)
            D = np.maximum(sa[:, None] + self.xn[None, s:e]
                           - 2.0 * kernels.dot_block(A, self.Xp[s:e]), 0.0)
            own = (skip >= s) & (skip < e)
            D[np.flatnonzero(own), skip[own] - s] = np.inf
            best = np.partition(np.concatenate([best, D], axis=1), kk - 1, axis=1)[:, :kk]
        return best

    def candidates(self, Q, qfirst, kk: int) -> tuple[np.ndarray, np.ndarray]:
        """Each row of Q's (rows ``qfirst``... of the data, or the global rows ``qfirst``
        lists) ``kk`` nearest rows of this block by the fast formula (ties by index; a row
        never its own), with their squared distances recomputed from the differences
        (:func:`graph.exact_sqdist`): (global indices, squared distances), q × min(kk, the
        rows it may have). Q is taken in blocks of rows (:func:`kernels.block_rows_for`): one
        block of distances held at a time."""
        from ssl_svm.solvers import graph_numba

        nb = self.y.size
        q = Q.shape[0]
        gids = (int(qfirst) + np.arange(q) if np.ndim(qfirst) == 0
                else np.asarray(qfirst, dtype=np.int64))
        own = gids - self.first_row
        mine = (own >= 0) & (own < nb)
        # rows of this block only: each has nb - 1 others here; a mix (a sample) takes nb, a
        # row's own entry then given distance inf below
        t = min(kk, nb - 1 if q and mine.all() else nb)
        cand = np.empty((q, max(t, 0)), dtype=np.int64)
        if t <= 0:
            return cand, np.empty((q, 0))
        qn = kernels.sqnorms(Q)
        step = kernels.block_rows_for(nb)
        for s in range(0, q, step):
            e = min(q, s + step)
            D = kernels.dot_block(Q[s:e], self.Xp)
            D *= -2.0
            D += qn[s:e, None]
            D += self.xn[None, :]
            r = np.flatnonzero(mine[s:e])
            D[r, own[s:e][r]] = np.inf
            graph_numba.smallest(D, cand[s:e])
            del D
        cd = graph_mod.exact_sqdist(Q, np.arange(q), cand, self.Xp)
        cand += self.first_row
        cd[cand == gids[:, None]] = np.inf
        return cand, cd

    # -- the approximate search: random-projection trees over all blocks' rows

    def route(self, trees: list) -> None:
        """Each row's leaf in each tree (``trees``: per tree, per level, the hyperplanes
        (normals CSR, offsets) of that level's nodes, as :func:`graph_distributed.rp_trees`
        makes them): a row goes to child 2v + (w_v·x ≥ c_v) of node v (:func:`leaves`)."""
        self.leaf = np.zeros((self.y.size, len(trees)), np.int64)
        for t, levels in enumerate(trees):
            self.leaf[:, t] = leaves(self.Xm, levels)
        self.cand_idx = np.zeros((self.y.size, 0), np.int64)
        self.cand_sq = np.zeros((self.y.size, 0))

    def leaf_rows(self, t: int, blocks: int, group: int = 0, groups: int = 1) -> list:
        """This block's rows for each block that searches a share of tree t's leaves (leaf
        mod ``blocks``), of group ``group`` of ``groups`` (leaf // blocks mod ``groups``: a
        block searches its share a group at a time, holding a fraction of the rows):
        [(global rows, leaves, the rows as the graph sees them)]."""
        leaf = self.leaf[:, t]
        mine = (leaf // blocks) % groups == group
        out = []
        for o in range(blocks):
            sel = np.flatnonzero(mine & (leaf % blocks == o))
            out.append((sel + self.first_row, leaf[sel], self.Xp[sel]))
        return out

    def leaf_candidates(self, parts: list, kk: int, starts, tree: int = 0,
                        leaf_cap: int = 512) -> list:
        """The rows of this block's share of tree ``tree``'s leaves, from every block
        (``parts``); a leaf of more than ``leaf_cap`` rows is split further
        (:func:`split_leaves`). In each leaf, each row's ``kk`` nearest others by squared
        distance from the differences, ties by index (one compiled pass over the leaves,
        :func:`graph_numba.leaf_pairs_dense`). Returns, per block the rows came from, (their
        global rows, candidates, squared distances), ascending, -1 and inf where a leaf has
        fewer rows."""
        from ssl_svm.solvers import graph_numba

        parts = [p for p in parts if len(p[0])]
        starts = np.asarray(starts, dtype=np.int64)
        B = starts.size - 1
        if not parts:
            return [(np.zeros(0, np.int64), np.zeros((0, kk), np.int64), np.zeros((0, kk)))
                    for _ in range(B)]
        gid = np.concatenate([p[0] for p in parts])
        leaf = np.concatenate([p[1] for p in parts])
        order = np.lexsort((gid, leaf))
        gid, leaf = gid[order], leaf[order]
        bounds = np.flatnonzero(np.r_[True, leaf[1:] != leaf[:-1], True])
        sparse = sp.issparse(parts[0][2])
        rows = (sp.vstack([p[2] for p in parts], format="csr") if sparse
                else np.vstack([p[2] for p in parts]))[order]
        del parts
        order, bounds = split_leaves(rows, leaf, bounds, tree, leaf_cap)
        del leaf
        if order is not None:
            gid, rows = gid[order], rows[order]
        cand = np.full((gid.size, kk), -1, np.int64)
        cd = np.full((gid.size, kk), np.inf)
        if sparse:
            rows.sort_indices()
            graph_numba.leaf_pairs_csr(rows.indptr.astype(np.int64),
                                       rows.indices.astype(np.int64), rows.data, bounds, gid,
                                       cand, cd)
        else:
            graph_numba.leaf_pairs_dense(rows, bounds, gid, cand, cd)
        del rows
        src = np.searchsorted(starts, gid, side="right") - 1
        return [(gid[src == b], cand[src == b], cd[src == b]) for b in range(B)]

    def merge_candidates(self, parts: list) -> None:
        """Add the candidates a tree's leaves gave this block's rows (from the blocks that
        searched them; each row's list ascending by (distance, index)) to theirs, keeping
        each row's best ``kk`` (the width of the parts' candidates; each candidate once), in
        one compiled pass (:func:`graph_numba.merge_lists`): the k <= kk nearest of all
        trees' candidates are among them, and the block holds kk per row, not kk per tree."""
        from ssl_svm.solvers import graph_numba

        for rows, cand, cd in parts:
            if not len(rows):
                continue
            kk = cand.shape[1]
            if self.cand_idx.shape[1] != kk:
                self.cand_idx = np.full((self.y.size, kk), -1, np.int64)
                self.cand_sq = np.full((self.y.size, kk), np.inf)
            graph_numba.merge_lists(self.cand_idx, self.cand_sq,
                                    np.asarray(rows, dtype=np.int64) - self.first_row,
                                    np.asarray(cand, dtype=np.int64),
                                    np.asarray(cd, dtype=np.float64))

    def finish_candidates(self, k: int) -> tuple:
        """Each row's k nearest among its candidates (each counted once; by distance, ties by
        index) as its neighbours; returns (the sum of their distances, their count, the rows
        with fewer than k)."""
        nb = self.y.size
        # the lists are ascending by (distance, index), each candidate once
        # (:meth:`merge_candidates`)
        idx, sq = self.cand_idx[:, :k], self.cand_sq[:, :k]
        short = int(np.sum(~np.isfinite(sq).all(axis=1)))
        # a row with fewer than k candidates (a leaf of its own) takes itself at distance 0
        # for the rest: no edge (W has no diagonal), as a row with fewer neighbours
        own = np.arange(nb)[:, None] + self.first_row
        idx = np.where(np.isfinite(sq), idx, own)
        sq = np.where(np.isfinite(sq), sq, 0.0)
        self.set_neighbours(idx, np.sqrt(sq))
        del self.cand_idx, self.cand_sq
        return float(self.dist[self.idx != own].sum()), int(np.sum(self.idx != own)), short

    def neighbours_of(self, local) -> np.ndarray:
        """The neighbours (global rows) of the local rows ``local``."""
        return self.idx[np.asarray(local, dtype=np.int64)]

    def set_neighbours(self, idx: np.ndarray, dist: np.ndarray) -> None:
        """This block's rows' neighbours (global indices, n_b × k) and distances."""
        self.idx = np.asarray(idx, dtype=np.int64)
        self.dist = np.asarray(dist, dtype=np.float64)

    def scale_requests(self, starts) -> list:
        """Self-tuning weights' local scales: σ_i, the distance from row i to its farthest
        kept neighbour (:func:`graph.adjacency`), kept; returns, for each block (``starts``:
        every block's first row, then n), its rows (local to it, ascending) whose σ this
        block's edges need."""
        nb = self.y.size
        own = np.arange(nb)[:, None] + self.first_row
        real = self.idx != own  # the approximate search's stand-ins for missing neighbours
        self.sigma = (np.where(real, self.dist, 0.0).max(axis=1) if self.idx.shape[1]
                      else np.zeros(nb))
        cols = np.unique(self.idx[real])
        self.need = cols[(cols < self.first_row) | (cols >= self.first_row + nb)]
        starts = np.asarray(starts, dtype=np.int64)
        owner = np.searchsorted(starts, self.need, side="right") - 1
        return [self.need[owner == b] - starts[b] for b in range(starts.size - 1)]

    def scales_of(self, requests: list) -> list:
        """σ of this block's local rows that each block asked for (:meth:`scale_requests`)."""
        return [self.sigma[np.asarray(r, dtype=np.int64)] for r in requests]

    def take_scales(self, parts: list) -> None:
        """σ of the other blocks' rows this block asked for, from the blocks in order."""
        self.need_sigma = (np.concatenate(parts) if parts else np.zeros(0)).astype(np.float64)

    def edges(self, weights: str, width: float, starts) -> list:
        """The weights of this block's kNN edges (:func:`graph.adjacency`'s heat, binary or
        self-tuning, the last after :meth:`take_scales`), kept, and the reversed edges for
        each block (``starts``: every block's first row, then n): [(their rows, local to that
        block; this block's global rows; weights)]."""
        nb, k = self.idx.shape
        if weights == "heat":
            w = (np.ones_like(self.dist) if not width > 0 else
                 np.exp(-(self.dist * self.dist) / (2.0 * width * width)))
        elif weights == "self-tuning":
            # as graph.adjacency: a row without a scale (all its neighbours duplicates, or
            # none) weighs 1 to them
            sig = np.where(self.sigma > 0, self.sigma, np.inf)
            mine = (self.idx >= self.first_row) & (self.idx < self.first_row + nb)
            other = np.where(self.need_sigma > 0, self.need_sigma, np.inf)
            sig_j = np.where(mine, sig[np.clip(self.idx - self.first_row, 0, max(nb - 1, 0))],
                             other[np.clip(np.searchsorted(self.need, self.idx), 0,
                                           max(other.size - 1, 0))] if other.size else np.inf)
            scale = sig[:, None] * sig_j
            with np.errstate(invalid="ignore"):
                w = np.where(np.isfinite(scale), np.exp(-(self.dist * self.dist) / scale), 1.0)
        else:
            w = np.ones_like(self.dist)
        rows = np.repeat(np.arange(nb) + self.first_row, k)
        cols = self.idx.ravel()
        w = w.ravel()
        loop = rows == cols  # the approximate search's stand-in for a missing neighbour
        if loop.any():
            rows, cols, w = rows[~loop], cols[~loop], w[~loop]
        self.own_edges = (rows - self.first_row, cols, w)
        self.got = []
        starts = np.asarray(starts, dtype=np.int64)
        owner = np.searchsorted(starts, cols, side="right") - 1
        out = []
        for b in range(starts.size - 1):
            sel = owner == b
            out.append((cols[sel] - starts[b], rows[sel], w[sel]))
        return out

    def take_edges(self, parts: list) -> None:
        """Reversed edges from the blocks (:meth:`edges`' output for this block)."""
        self.got.extend(parts)

    def weights_rows(self) -> np.ndarray:
        """This block's rows of W = max(W_kNN, W_kNNᵀ) (CSR over the global columns, sorted),
        kept; returns the halo: the other blocks' rows they reach (ascending)."""
        r = [self.own_edges[0]] + [p[0] for p in self.got]
        c = [self.own_edges[1]] + [p[1] for p in self.got]
        w = [self.own_edges[2]] + [p[2] for p in self.got]
        r, c, w = np.concatenate(r), np.concatenate(c), np.concatenate(w)
        key = r * np.int64(self.n) + c
        order = np.argsort(key, kind="stable")
        key, w = key[order], w[order]
        first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else key
        wmax = np.maximum.reduceat(w, first) if w.size else w
        key = key[first]
        rr, cc = key // self.n, key % self.n
        nb = self.y.size
        self.W = sp.csr_matrix((wmax, (rr, cc)), shape=(nb, self.n))
        self.W.sort_indices()
        self.got = []
        self.deg = np.asarray(self.W.sum(axis=1)).ravel()
        cols = self.W.indices
        mine = (cols >= self.first_row) & (cols < self.first_row + nb)
        self.halo = np.unique(cols[~mine])
        return self.halo

    def set_sends(self, sends: list) -> None:
        """Which of this block's rows (local) each block's halo holds, in that block's halo
        order (empty for itself and blocks it shares no edge with)."""
        self.sends = [np.asarray(s, dtype=np.int64) for s in sends]

    def degrees(self) -> np.ndarray:
        """The rows' degrees (sums of W's rows)."""
        return self.deg

    def put(self, name: str, values) -> None:
        """Set vector ``name`` on this block's rows."""
        self.v[name] = np.asarray(values, dtype=np.float64).copy()

    def halo_send(self, name: str) -> list:
        """Vector ``name``'s values that each block's halo holds (:meth:`set_sends`)."""
        x = self.v[name]
        return [x[s] for s in self.sends]

    def set_relay(self, relay: bool) -> None:
        """Whether the steps that make a vector return its :meth:`halo_send` for the driver
        to route (True), or nothing: the blocks' hosts exchange the halo among themselves
        (:meth:`ssl_svm.solvers.distributed.LocalBlocks.exchange_then`)."""
        self.relay = bool(relay)

    def _sends(self, name: str):
        return self.halo_send(name) if self.relay else None

    def halo_take(self, name: str, parts: list) -> None:
        """Vector ``name``'s values on the halo rows, from the blocks in order (into the
        graph stage's buffer of a vector: a Dask worker's allocator maps every large array
        afresh, so the CG's vectors are allocated once)."""
        parts = [p for p in parts if len(p)]
        if self.v[name].ndim == 1 and self.halo.size:
            out = self.h.get(name)
            if out is None or out.shape != (self.halo.size,):
                out = self.h[name] = np.empty(self.halo.size)
            if parts:
                np.concatenate(parts, out=out)
            return
        self.h[name] = (np.concatenate(parts) if parts else
                        np.zeros((0,) + self.v[name].shape[1:])).astype(np.float64)

    def laplacian_rows(self, normalized: bool, degree: int) -> int:
        """This block's rows of L (``I - D^{-1/2} W D^{-1/2}`` or ``D - W``, as
        :meth:`graph.Laplacian.from_weights`), CSR over [own rows, halo] (the halo of vector
        's', D^{-1/2}, taken first when normalized), for L^``degree``. Returns the edges
        (stored entries of W) in its rows."""
        nb = self.y.size
        W = self.W
        cols = W.indices
        mine = (cols >= self.first_row) & (cols < self.first_row + nb)
        local = np.where(mine, cols - self.first_row,
                         nb + np.searchsorted(self.halo, cols))
        rows = np.repeat(np.arange(nb), np.diff(W.indptr))
        if normalized:
            s = self.v["s"]
            s_ext = np.concatenate([s, self.h["s"]])
            vals = -(s[rows] * W.data * s_ext[local])
            diag = np.ones(nb)
        else:
            vals = -W.data
            diag = self.deg
        ar = np.arange(nb)
        L = sp.csr_matrix((np.concatenate([vals, diag]),
                           (np.concatenate([rows, ar]), np.concatenate([local, ar]))),
                          shape=(nb, nb + self.halo.size))
        L.sum_duplicates()
        self.degree = int(degree)
        self.dL = L.diagonal() ** self.degree
        # the rows renumbered by reverse Cuthill-McKee of their own edges (as
        # lapsvm.local_order): the products then read mostly nearby values, not scattered
        # ones; order[i] is the local row that row i of L is, and L's own columns follow it
        own = L[:, :nb].tocsr()
        self.order = (scipy.sparse.csgraph.reverse_cuthill_mckee(
            own + own.T, symmetric_mode=True).astype(np.int64) if nb else np.zeros(0, np.int64))
        inv = np.empty(nb, np.int64)
        inv[self.order] = np.arange(nb)
        P = L[self.order].tocsr()
        idx = P.indices.astype(np.int64)
        # the halo's columns renumbered in the order the renumbered rows first read them
        # (halo_perm[j]: the halo row that column nb + j holds): the product then reads the
        # halo's values about in sequence, not scattered over the whole halo by global index
        # (at 10⁷ rows on 2 workers the scattered reads were most of a CG iteration)
        far = idx >= nb
        seen, first = np.unique(idx[far] - nb, return_index=True)
        self.halo_perm = np.concatenate([seen[np.argsort(first, kind="stable")],
                                         np.setdiff1d(np.arange(self.halo.size), seen)])
        slot = np.empty(self.halo.size, np.int64)
        slot[self.halo_perm] = np.arange(self.halo.size)
        new = np.empty_like(idx)
        new[far] = nb + slot[idx[far] - nb]
        new[~far] = inv[idx[~far]]
        P.indices = new.astype(P.indices.dtype)
        P.has_sorted_indices = False
        P.sort_indices()
        self.L = P
        return int(W.nnz)

    # ----------------------------------------------------------------- the graph stage

    def lap(self, src: str, dst: str) -> None:
        """dst = L src on this block's rows (src's halo taken): gathered into L's row order
        (:attr:`order`), the product by rows on every thread, scattered back; a vector in
        place."""
        x = self.v[src]
        nb = self.y.size
        if x.ndim == 2:
            out = np.empty_like(x)
            out[self.order] = self.L @ np.concatenate([x[self.order],
                                                       self.h[src][self.halo_perm]])
            self.v[dst] = out
            return
        ext = self.ext
        np.take(x, self.order, out=ext[:nb])
        if self.halo.size:
            np.take(self.h[src], self.halo_perm, out=ext[nb:])
        out = self.v.get(dst)
        if out is None or out.shape != (nb,) or out is x:
            out = self.v[dst] = np.empty(nb)
        L = self.L
        _nb().csr_vec(L.indptr, L.indices, L.data, ext, self.tmp)
        out[self.order] = self.tmp

    def lap_step(self, src: str, parts: list, dst: str, then):
        """One power of a product with L^p in one call: src's halo from ``parts``
        (:meth:`halo_take`; None: taken already, by the hosts' exchange), dst = L src, then
        ``then``: None, "send" (dst's :meth:`halo_send`, for the next power), or (method,
        args...) of this block (the CG's step that follows, fused), whose result is
        returned."""
        if parts is not None:
            self.halo_take(src, parts)
        self.lap(src, dst)
        if then == "send":
            return self._sends(dst)
        if then is not None:
            return getattr(self, then[0])(*then[1:])
        return None

    def task(self, pos: float) -> tuple:
        """The binary task whose positive class is ``pos`` (one-vs-rest: Y = ±1 on labeled
        rows, 0 elsewhere); f = L^p f = 0, the CG's vectors allocated. Returns (Y, c) on the
        labeled rows."""
        y = self.yv
        self.Y = np.where(y == 0, 0.0, np.where(y == pos, 1.0, -1.0))
        self.lab = np.flatnonzero(y != 0)
        nb = y.size
        for name in ("f", "Lf", "x", "r", "z", "p", "q", "d", "Ld", "_lp", "_t0", "_t1"):
            self.v[name] = np.zeros(nb)
        self.ext = np.empty(nb + self.halo.size)
        self.tmp = np.empty(nb)
        self.partial = np.empty(max(1, -(-nb // _nb().CG_BLOCK)))
        self.partial2 = np.empty((self.partial.size, 2))
        return self.Y[self.lab], self.cost[self.lab]

    def system(self, cE_l, gamma_a: float, gamma_i: float) -> list:
        """:meth:`lapsvm.LocalGraph.system` on this block's rows (``cE_l``: its labeled
        rows'); returns x's :meth:`halo_send`."""
        nb = self.y.size
        cE = np.zeros(nb)
        cE[self.lab] = cE_l
        pre = cE + gamma_a + gamma_i * self.dL
        self.dinv = np.where(pre > 0.0, 1.0 / np.where(pre > 0.0, pre, 1.0), 1.0)
        self.rhs = cE * self.Y
        self.diag = cE + gamma_a
        self.gamma_i = gamma_i
        self.v["x"][:] = self.v["f"]
        return self._sends("x")

    def _dot(self, a, b) -> float:
        return _nb().blocked_dot(a, b, self.partial)

    def rhs_norm2(self) -> float:
        return self._dot(self.rhs, self.rhs)

    def cg_zero(self) -> None:
        self.v["x"][:] = 0.0

    def applied(self, src: str, power: str, then: str):
        """q = diag ∘ src + γ_I ``power`` (power = L^p src, made by :meth:`lap`), then
        :meth:`cg_start` or :meth:`pq` (``then``), whose result is returned."""
        q = self.v["q"]
        np.multiply(self.diag, self.v[src], out=q)
        _nb().axpy(self.gamma_i, self.v[power], q)
        return self.cg_start() if then == "cg_start" else self.pq()

    def cg_start(self) -> tuple:
        """r = rhs - q (q = A x), z = M⁻¹r, p = z; returns (rᵀz, rᵀr) of this block and p's
        :meth:`halo_send`."""
        v = self.v
        np.subtract(self.rhs, v["q"], out=v["r"])
        np.multiply(self.dinv, v["r"], out=v["z"])
        v["p"][:] = v["z"]
        return self._dot(v["r"], v["z"]), self._dot(v["r"], v["r"]), self._sends("p")

    def pq(self) -> float:
        return self._dot(self.v["p"], self.v["q"])

    def cg_update(self, a: float) -> tuple:
        """x += a p, r -= a q, z = M⁻¹r; returns (rᵀz, rᵀr) of this block."""
        v = self.v
        return _nb().cg_update(v["x"], v["r"], v["z"], v["p"], v["q"], self.dinv, a,
                               self.partial2)

    def cg_direction(self, beta: float) -> list:
        """p = z + β p; returns p's :meth:`halo_send`."""
        _nb().cg_direction(self.v["p"], self.v["z"], beta)
        return self._sends("p")

    def step(self) -> list:
        """d = x - f; returns d's :meth:`halo_send`."""
        np.subtract(self.v["x"], self.v["f"], out=self.v["d"])
        return self._sends("d")

    def direction(self) -> tuple:
        """(fᵀd, (L^p f)ᵀd, dᵀd, dᵀL^p d, f and d on the labeled rows) of this block."""
        v = self.v
        f, d = v["f"], v["d"]
        return (float(f @ d), float(v["Lf"] @ d), float(d @ d), float(d @ v["Ld"]),
                f[self.lab], d[self.lab])

    def move(self, t: float) -> None:
        v = self.v
        _nb().axpy(t, v["d"], v["f"])
        _nb().axpy(t, v["Ld"], v["Lf"])

    def norms(self) -> tuple:
        v = self.v
        return float(v["f"] @ v["f"]), float(v["f"] @ v["Lf"])

    def labeled(self) -> np.ndarray:
        return self.v["f"][self.lab]

    def keep_values(self, k: int, tasks: int) -> None:
        """Keep f as the values of task ``k`` of ``tasks`` (the graph's solution here)."""
        if k == 0:
            self.F = np.zeros((self.y.size, tasks))
        self.F[:, k] = self.v["f"]

    # ----------------------------------------------------------------- the landmark expansion

    def gram_sums(self, spec: tuple, rows, local) -> np.ndarray:
        """[K 1]ᵀ[K 1] over this block's rows ``local`` (None: all), K = K(them, ``rows``)
        (:func:`kernels.landmark_gram`); ``spec``: the kernel's (name, γ, degree, coef0)."""
        X = self.Xp if local is None else self.Xp[np.asarray(local, dtype=np.int64)]
        return kernels.landmark_gram(kernels.KernelSpec(*spec), X, rows)

    def projection_sums(self, spec: tuple, rows, T, local) -> np.ndarray:
        """[K 1]ᵀ F over this block's rows ``local`` (None: all), F the kept values
        (:meth:`lapsvm.LandmarkSystem.projection_sums`)."""
        from ssl_svm.solvers.lapsvm import LandmarkSystem

        sel = slice(None) if local is None else np.asarray(local, dtype=np.int64)
        system = LandmarkSystem(kernels.KernelSpec(*spec), np.zeros(np.shape(rows)[0]), rows,
                                T, None)
        return system.projection_sums(self.Xp[sel], self.F[sel])

    def landmark_columns(self, spec: tuple, rows) -> int:
        """A = [K 1] (K = K(this block's rows, ``rows``), rows × (m + 1)) kept as vector
        "A" for the restricted form's G (a power of L taken by :meth:`lap_step` as for a
        vector, a block of columns at a time: :meth:`columns`); returns its columns."""
        spec = kernels.KernelSpec(*spec)
        nb, m = self.y.size, np.shape(rows)[0]
        A = np.empty((nb, m + 1))
        A[:, m] = 1.0
        zn = kernels.sqnorms(rows) if spec.name == "rbf" else None
        b = kernels.block_rows_for(m)
        for s in range(0, nb, b):
            A[s:s + b, :m] = kernels.kernel_block(spec, self.Xp[s:s + b], rows, zn)
        self.v["A"] = A
        return m + 1

    def columns(self, src: str, a: int, b: int, dst: str) -> list:
        """Vector ``dst`` = columns [a, b) of matrix ``src``; returns its
        :meth:`halo_send`."""
        self.v[dst] = np.ascontiguousarray(self.v[src][:, a:b])
        return self._sends(dst)

    def set_columns(self, dst: str, a: int, src: str) -> None:
        """Columns [a, a + width) of matrix ``dst`` = matrix ``src``."""
        self.v[dst][:, a:a + self.v[src].shape[1]] = self.v[src]

    def gram_of(self, left: str, right: str) -> np.ndarray:
        """leftᵀ right over this block's rows (matrices kept by name)."""
        return self.v[left].T @ self.v[right]

    def drop(self, name: str) -> None:
        """Free vector ``name``."""
        self.v.pop(name, None)
        self.h.pop(name, None)

    def expansion_values(self, spec: tuple, rows, coef, b) -> None:
        """Keep K(these rows, ``rows``) coef + b (rows × tasks) as the values of the rows
        (the restricted form's outputs)."""
        self.F = kernels.kernel_times(kernels.KernelSpec(*spec), self.Xp, rows,
                                      np.asarray(coef)) + np.asarray(b)

    def costs(self) -> np.ndarray:
        """The rows' cost factors."""
        return self.cost

    def stash_values(self) -> None:
        """Keep the values of the rows (the fit's) aside while the check's folds solve."""
        self.F_fit = self.F

    def restore_values(self) -> None:
        """The values kept aside by :meth:`stash_values` back."""
        self.F = self.F_fit

    def values_at(self, local) -> np.ndarray:
        """The kept values (rows × tasks) of the rows ``local``."""
        return self.F[np.asarray(local, dtype=np.int64)]

    def expansion_at(self, spec: tuple, rows, coef, b, local) -> np.ndarray:
        """K(the rows ``local``, ``rows``) coef + b: a kernel expansion's decision values
        (rows × tasks) at this block's rows, as the graph sees them."""
        return kernels.kernel_times(kernels.KernelSpec(*spec),
                                    self.Xp[np.asarray(local, dtype=np.int64)], rows,
                                    np.asarray(coef)) + np.asarray(b)


def split_leaves(rows, leaf, bounds, tree: int, cap: int) -> tuple:
    """Leaves of more than ``cap`` rows split at the median of the rows' projections on the
    difference of two of their rows drawn at random, until every piece holds at most ``cap``
    (a tree drawn on a sample can leave a few leaves far larger than the rest, and a leaf's
    pairs cost its size squared). ``rows`` are sorted by leaf, then global index; the
    draws are seeded by (tree, leaf), so a leaf splits the same on any block. Returns (the
    new order of the rows, or None when no leaf is split; the pieces' bounds)."""
    size = np.diff(bounds)
    big = np.flatnonzero(size > cap)
    if not big.size:
        return None, bounds
    order = np.arange(int(bounds[-1]))
    cuts = [bounds]
    for lf in big:
        a, e = int(bounds[lf]), int(bounds[lf + 1])
        rng = np.random.default_rng([tree, int(leaf[a])])
        stack = [(a, e)]
        while stack:
            s, t = stack.pop()
            if t - s <= cap:
                continue
            piece = order[s:t]
            X = rows[piece]
            i, j = rng.choice(t - s, 2, replace=False)
            w = X[i] - X[j]
            w = np.asarray(w.todense()).ravel() if sp.issparse(w) else np.ravel(w)
            proj = np.asarray(X @ w).ravel()
            order[s:t] = piece[np.argsort(proj, kind="stable")]
            m = s + (t - s) // 2
            cuts.append(np.array([m]))
            stack += [(s, m), (m, t)]
    return order, np.unique(np.concatenate(cuts))


def leaves(X, levels: list, node: np.ndarray | None = None) -> np.ndarray:
    """Each row of X (CSR)'s node after ``levels`` levels of a random-projection tree (per
    level, the hyperplanes: normals CSR, a row per node; offsets), from ``node`` (None: the
    root): node v sends a row x to 2v + (w_v·x ≥ c_v), in one compiled pass
    (:func:`graph_numba.route`)."""
    from ssl_svm.solvers import graph_numba

    X = sp.csr_matrix(X)
    X.sort_indices()
    N = sp.vstack([lev[0] for lev in levels], format="csr")
    N.sort_indices()
    c = np.concatenate([np.asarray(lev[1], dtype=np.float64) for lev in levels])
    first = np.cumsum([0] + [lev[0].shape[0] for lev in levels[:-1]]).astype(np.int64)
    out = (np.zeros(X.shape[0], np.int64) if node is None
           else np.array(node, dtype=np.int64, copy=True))
    # no copies where X already holds int64 indices (rp_trees routes its sample once a level)
    graph_numba.route(X.indptr.astype(np.int64, copy=False),
                      X.indices.astype(np.int64, copy=False),
                      X.data.astype(np.float64, copy=False), N.indptr.astype(np.int64),
                      N.indices.astype(np.int64), N.data.astype(np.float64), c, first, out)
    return out
