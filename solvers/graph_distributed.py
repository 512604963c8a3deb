"""LapSVM and LapRLS over a cluster's blocks (:class:`solvers.graph_blocks.GraphBlock`), in
the projected landmark form: the same fit as :func:`ssl_svm.solvers.lapsvm.fit_lapsvm` on the
same rows (decision values within rounding), with the rows and every per-row vector on the
blocks.

The stages, as in one process: the graph metric (from the blocks' summed statistics), the
automatic graph (its neighbour contrast from a sample's distances to every block), the exact
kNN graph across blocks (each block's rows searched in every block, the candidates merged
here), W = max(W, Wᵀ) (each reversed edge routed to the block that holds its row), the
Laplacian's rows on each block over its own rows and its halo (the other blocks' rows its rows
have an edge to), the landmark system's sums, then per one-vs-rest task the graph Newton-CG of
:func:`lapsvm.graph_newton` over :class:`BlockGraph` (each product with L^p exchanges the
halo's values through this process: p exchanges per CG iteration) and the landmark expansion
fitted to the values where they are. This process holds vectors of the labeled rows, the
landmarks' rows and (m + 1)² matrices, and one block's rows and neighbour lists at a time while
the graph is built.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np
import scipy.sparse as sp

from ssl_svm.solvers import graph as graph_mod
from ssl_svm.solvers import kernels, lapsvm
from ssl_svm.solvers.distributed import block_sum
from ssl_svm.solvers.errors import ProblemError
from ssl_svm.solvers.graph_blocks import leaves
from ssl_svm.solvers.models import KernelExpansion, Model
from ssl_svm.solvers.multiclass import binary_tasks

log = logging.getLogger("ssl.solver.lapsvm")

ALGORITHMS = ("lapsvm", "laprls")


class RemoteRows:
    """The rows the graph sees (metric applied), held on the blocks, as the sampling helpers
    read them: ``shape``, ``nnz`` and ``R[idx]`` (the rows idx, CSR, gathered here)."""

    def __init__(self, blocks, starts: np.ndarray, d: int, nnz: int):
        self.blocks = blocks
        self.starts = starts
        self.shape = (int(starts[-1]), d)
        self.nnz = nnz

    def __getitem__(self, idx) -> sp.csr_matrix:
        idx = np.asarray(idx, dtype=np.int64)
        order = np.argsort(idx, kind="stable")
        s = idx[order]
        owner = np.searchsorted(self.starts, s, side="right") - 1
        parts = [self.blocks.call_one(b, "rows", s[owner == b] - self.starts[b])
                 for b in np.unique(owner)]
        got = sp.vstack(parts, format="csr") if parts else sp.csr_matrix((0, self.shape[1]))
        back = np.empty_like(order)
        back[order] = np.arange(order.size)
        return sp.csr_matrix(got[back], shape=(idx.size, self.shape[1]))


class BlockGraph:
    """The graph stage's operator (:class:`lapsvm.LocalGraph`'s methods) over a cluster's
    blocks: each per-row vector lives on the blocks, a product with L^p takes p exchanges of
    the halo's values, each dot product a sum of the blocks' in block order. The block calls
    are fused so that a CG iteration makes p + 2 round trips: the step that makes a vector
    returns its halo values, and the last power of a product goes on to the CG's step."""

    def __init__(self, graph: GraphOnBlocks, Yl: np.ndarray, cl: np.ndarray, counts):
        self.g = graph
        self.blocks = graph.blocks
        self.n = graph.n
        self.Yl, self.cl = Yl, cl
        self.cuts = np.cumsum([0] + list(counts))
        self.sends = None  # the halo values of the vector the next product starts from

    def system(self, cE_l, gamma_a: float, gamma_i: float) -> None:
        c = self.cuts
        self.sends = self.blocks.call_each("system", [(cE_l[c[b]:c[b + 1]], gamma_a, gamma_i)
                                                      for b in range(c.size - 1)])

    def rhs_norm2(self) -> float:
        return block_sum(self.blocks.call("rhs_norm2"))

    def cg_zero(self) -> None:
        self.blocks.call("cg_zero")

    def cg_start(self) -> tuple[float, float]:
        parts = self.g.power("x", "_lp", self.sends, ("applied", "x", "_lp", "cg_start"))
        self.sends = [p[2] for p in parts]
        return block_sum([p[0] for p in parts]), block_sum([p[1] for p in parts])

    def cg_apply(self) -> float:
        return block_sum(self.g.power("p", "_lp", self.sends, ("applied", "p", "_lp", "pq")))

    def cg_update(self, a: float) -> tuple[float, float]:
        parts = self.blocks.call("cg_update", a)
        return block_sum([p[0] for p in parts]), block_sum([p[1] for p in parts])

    def cg_direction(self, beta: float) -> None:
        self.sends = self.blocks.call("cg_direction", beta)

    def direction(self) -> tuple:
        parts = self.g.power("d", "Ld", self.blocks.call("step"), ("direction",))
        return tuple(block_sum([p[i] for p in parts]) for i in range(4)) + (
            np.concatenate([p[4] for p in parts]), np.concatenate([p[5] for p in parts]))

    def move(self, t: float) -> None:
        self.blocks.call("move", t)

    def norms(self) -> tuple[float, float]:
        parts = self.blocks.call("norms")
        return block_sum([p[0] for p in parts]), block_sum([p[1] for p in parts])

    def labeled(self) -> np.ndarray:
        return np.concatenate(self.blocks.call("labeled"))


# the query rows of the cross-block search sent at once (each block gets them all)
QUERY_BYTES = 64 << 20
# the approximate search: random-projection trees, rows per leaf aimed at, sample rows per
# leaf the trees' hyperplanes are drawn from, rows its recall is measured on
APPROX_TREES = 8
APPROX_LEAF = 128
LEAF_CAP = 4 * APPROX_LEAF  # a larger leaf is split on the block that searches it
TREE_SAMPLE_PER_LEAF = 8
RECALL_ROWS = 200
# the graph stage's halo exchanged by the blocks' hosts among themselves (False: relayed
# through the driver, one message per block and power)
DIRECT = True
# rows a block searches at once in the approximate search (a tree's leaves in groups)
GROUP_ROWS = 1 << 20


def rp_trees(R: RemoteRows, trees: int, depth: int, seed: int = 0) -> list:
    """``trees`` random-projection trees of ``depth`` levels over the rows of R, drawn on a
    seeded sample (:data:`TREE_SAMPLE_PER_LEAF` rows per leaf): node v's hyperplane lies
    halfway between two of its sample rows drawn at random (normal a - b, offset
    (|a|² - |b|²)/2), a node with fewer than two sample rows sends all right. Each tree is a
    list per level of (normals, CSR with a row per node of the level; offsets)."""
    n = R.shape[0]
    rng = np.random.default_rng(seed)
    S = sp.csr_matrix(R[kernels.sample_rows(n, min(n, TREE_SAMPLE_PER_LEAF << depth), seed)])
    S.sort_indices()
    S.indptr, S.indices = S.indptr.astype(np.int64), S.indices.astype(np.int64)
    sq = kernels.sqnorms(S)
    out = []
    for _ in range(trees):
        node = np.zeros(S.shape[0], np.int64)
        levels = []
        for lev in range(depth):
            width = 1 << lev
            # two distinct sample rows of each node, drawn at random (the nodes' members in
            # row order, then offsets into them)
            order = np.argsort(node, kind="stable")
            bounds = np.searchsorted(node[order], np.arange(width + 1))
            size = np.diff(bounds)
            u = rng.random((width, 2))
            has = size >= 2
            ia = np.minimum((u[:, 0] * size).astype(np.int64), np.maximum(size - 1, 0))
            ib = np.minimum((u[:, 1] * (size - 1)).astype(np.int64), np.maximum(size - 2, 0))
            ib += ib >= ia
            a = np.where(has, order[np.minimum(bounds[:-1] + ia, S.shape[0] - 1)], -1)
            b = np.where(has, order[np.minimum(bounds[:-1] + ib, S.shape[0] - 1)], -1)
            c = np.full(width, -np.inf)
            # a row per node: its normal, or an empty row (the last) where it has none
            Nh = sp.vstack([S[a[has]] - S[b[has]], sp.csr_matrix((1, S.shape[1]))],
                           format="csr")
            N = Nh[np.where(has, np.cumsum(has) - 1, Nh.shape[0] - 1)]
            c[has] = 0.5 * (sq[a[has]] - sq[b[has]])
            levels.append((N, c))
            node = leaves(S, [(N, c)], node)
        out.append(levels)
    return out


class GraphOnBlocks:
    """The kNN graph and its Laplacian built on the blocks (:meth:`build`), and the halo
    exchange a product with L^p makes (:meth:`power`)."""

    def __init__(self, blocks, starts: np.ndarray, degree: int):
        self.blocks = blocks
        self.starts = starts
        self.n = int(starts[-1])
        self.B = starts.size - 1
        self.degree = degree
        self.bytes_per_row = 8  # of the rows as searched (set by the caller)
        self.direct = False  # the blocks' hosts exchange the halo (:meth:`use_direct`)

    def use_direct(self) -> bool:
        """Have the blocks' hosts exchange the halo's values among themselves (each to the
        hosts whose blocks need them), not through this process, when the blocks can
        (:data:`DIRECT`, and ``exchange_then``); the steps then return no halo values.
        Returns whether they do."""
        connect = getattr(self.blocks, "connect_peers", None)
        self.direct = bool(DIRECT and hasattr(self.blocks, "exchange_then"))
        if self.direct and connect is not None:
            connect()
        self.blocks.call("set_relay", not self.direct)
        return self.direct

    def exchange(self, name: str) -> None:
        """Every block's halo values of vector ``name``, from the blocks that hold them."""
        if self.direct:
            self.blocks.exchange_then(name)
            return
        sends = self.blocks.call("halo_send", name)
        self.blocks.call_each("halo_take", [(name, [sends[o][b] for o in range(self.B)])
                                            for b in range(self.B)])

    def power(self, src: str, dst: str, sends=None, then=None, times=None) -> list:
        """dst = L^p src on every block: p calls, each taking the halo's values of the last
        power and making the next (:meth:`GraphBlock.lap_step`); ``sends``: src's
        :meth:`GraphBlock.halo_send` from each block (None: asked first). ``then``: the call
        each block makes after the last power (its results are returned); ``times``: a
        power other than p."""
        times = self.degree if times is None else times
        cur = src
        out = None
        if self.direct:  # the hosts exchange each power's halo among themselves
            for k in range(times):
                last = k == times - 1
                nxt = dst if last else f"_t{k % 2}"
                out = self.blocks.exchange_then(cur, "lap_step", [
                    (cur, None, nxt, then if last else None)] * self.B)
                cur = nxt
            return out
        if sends is None:
            sends = self.blocks.call("halo_send", src)
        for k in range(times):
            last = k == times - 1
            nxt = dst if last else f"_t{k % 2}"
            out = self.blocks.call_each("lap_step", [
                (cur, [sends[o][b] for o in range(self.B)], nxt, then if last else "send")
                for b in range(self.B)])
            sends = out
            cur = nxt
        return out

    def knn(self, k: int) -> tuple[float, int]:
        """Each block's rows' k nearest other rows among all blocks (exact, as
        :func:`graph.knn`: candidates by the fast formula in each block, their distances from
        the differences, sorted by distance then index), set on the blocks. Returns (the sum
        of the distances, their count)."""
        kk = min(self.n - 1, k + graph_mod.REFINE)
        total, count = 0.0, 0
        for b in range(self.B):
            rows = int(self.starts[b + 1] - self.starts[b])
            step = max(1, QUERY_BYTES // max(1, self.bytes_per_row))
            idx = np.empty((rows, k), np.int64)
            dist = np.empty((rows, k))
            for a in range(0, rows, step):  # the queries a piece at a time: bounded here
                e = min(rows, a + step)
                Q = self.blocks.call_one(b, "prepared", a, e)
                parts = self.blocks.call("candidates", Q, int(self.starts[b]) + a, kk)
                cand = np.hstack([p[0] for p in parts])
                cd = np.hstack([p[1] for p in parts])
                order = np.lexsort((cand, cd), axis=1)[:, :k]
                idx[a:e] = np.take_along_axis(cand, order, axis=1)
                dist[a:e] = np.sqrt(np.take_along_axis(cd, order, axis=1))
            self.blocks.call_one(b, "set_neighbours", idx, dist)
            total += float(dist.sum())
            count += dist.size
        return total, count

    def knn_approximate(self, k: int, R: RemoteRows, seed: int = 0) -> tuple[float, int]:
        """Each block's rows' approximate k nearest other rows among all blocks: every pair
        of rows sharing a leaf of one of :data:`APPROX_TREES` random-projection trees
        (:func:`rp_trees`, leaves of about :data:`APPROX_LEAF` rows) is a candidate, each
        tree's leaves searched by the blocks in turn (leaf mod blocks), in groups of about
        :data:`GROUP_ROWS` rows a block, the candidates merged on the rows' own blocks. Each
        row's leaves and candidates do not depend on how the rows are cut into blocks: the
        graph is the same on any number of blocks. Returns (the sum of the distances, their
        count) as :meth:`knn`."""
        depth = max(1, math.ceil(math.log2(max(2, self.n / APPROX_LEAF))))
        t0 = time.perf_counter()
        trees = rp_trees(R, APPROX_TREES, depth, seed)
        self.blocks.call("route", trees)
        log.info("graph: %d random-projection trees of %d levels drawn on %d sampled rows, "
                 "every row routed: %.1f s", len(trees), depth,
                 min(self.n, TREE_SAMPLE_PER_LEAF << depth), time.perf_counter() - t0)
        kk = min(self.n - 1, k + graph_mod.REFINE)
        starts = [int(s) for s in self.starts]
        groups = max(1, math.ceil(self.n / (self.B * GROUP_ROWS)))
        for t in range(len(trees)):
            t0 = time.perf_counter()
            for g in range(groups):
                out = self.blocks.call("leaf_rows", t, self.B, g, groups)
                res = self.blocks.call_each("leaf_candidates", [
                    ([out[b][o] for b in range(self.B)], kk, starts, t, LEAF_CAP)
                    for o in range(self.B)])
                del out
                self.blocks.call_each("merge_candidates", [
                    ([res[o][b] for o in range(self.B)],) for b in range(self.B)])
                del res
            log.info("graph: tree %d of %d searched (%d groups of leaves): %.1f s", t + 1,
                     len(trees), groups, time.perf_counter() - t0)
        parts = self.blocks.call("finish_candidates", k)
        short = sum(p[2] for p in parts)
        if short:
            log.warning("graph: %d rows found fewer than %d neighbours in the approximate "
                        "search (a leaf of their own)", short, k)
        return sum(p[0] for p in parts), sum(p[1] for p in parts)

    def recall(self, k: int, R: RemoteRows, dense: bool, rows: int = None) -> float:
        """The approximate graph's recall against the exact one on a seeded sample of
        ``rows`` rows (:data:`RECALL_ROWS`): the share of their exact k nearest rows it
        holds."""
        rows = RECALL_ROWS if rows is None else rows
        sample = kernels.sample_rows(self.n, rows, seed=1)
        Q = R[sample]
        if dense:
            Q = Q.toarray()
        kk = min(self.n - 1, k + graph_mod.REFINE)
        parts = self.blocks.call("candidates", Q, sample, kk)
        cand = np.hstack([p[0] for p in parts])
        cd = np.hstack([p[1] for p in parts])
        exact = np.take_along_axis(cand, np.lexsort((cand, cd), axis=1)[:, :k], axis=1)
        owner = np.searchsorted(self.starts, sample, side="right") - 1
        found = 0
        for b in np.unique(owner):
            got = self.blocks.call_one(b, "neighbours_of", sample[owner == b] - self.starts[b])
            found += sum(len(set(a) & set(e)) for a, e in zip(got, exact[owner == b]))
        return found / (k * sample.size)

    def laplacian(self, weights: str, width: float, normalized: bool) -> int:
        """W = max(W, Wᵀ) with ``weights`` of width ``width``, its rows' halos and the sends
        that fill them, and each block's rows of L (:meth:`GraphBlock.laplacian_rows`).
        Returns the graph's edges."""
        starts = [int(s) for s in self.starts]
        if weights == "self-tuning":  # each edge needs both ends' scales
            asks = self.blocks.call("scale_requests", starts)
            got = self.blocks.call_each("scales_of", [([asks[b][o] for b in range(self.B)],)
                                                      for o in range(self.B)])
            self.blocks.call_each("take_scales", [([got[o][b] for o in range(self.B)],)
                                                  for b in range(self.B)])
        out = self.blocks.call("edges", weights, width, starts)
        self.blocks.call_each("take_edges", [([out[o][b] for o in range(self.B)],)
                                             for b in range(self.B)])
        del out
        halos = self.blocks.call("weights_rows")
        sends = [[np.zeros(0, np.int64)] * self.B for _ in range(self.B)]
        for b, halo in enumerate(halos):
            owner = np.searchsorted(self.starts, halo, side="right") - 1
            for o in np.unique(owner):
                sends[o][b] = halo[owner == o] - self.starts[o]
        self.blocks.call_each("set_sends", [(s,) for s in sends])
        if normalized:
            deg = self.blocks.call("degrees")
            self.blocks.call_each("put", [("s", np.where(d > 0, 1.0 / np.sqrt(
                np.where(d > 0, d, 1.0)), 0.0)) for d in deg])
            self.exchange("s")
        nnz = block_sum(self.blocks.call("laplacian_rows", normalized, self.degree))
        self.halo_values = int(sum(h.size for h in halos))
        return int(nnz) // 2


def _metric(blocks, metric: str, n: int, d: int) -> tuple[str, str, np.ndarray | None]:
    """(metric, how chosen, column factors or None) of --graph-metric ``metric`` on the
    blocks' rows (:func:`graph.resolve_metric`, from their summed statistics)."""
    if metric == "auto":
        stats = blocks.call("metric_stats")
        stored = sum(s[0] for s in stats)
        negative = stored > 0 and min(s[1] for s in stats if s[0]) < 0
        unit = max(s[2] for s in stats) <= graph_mod.UNIT_TOLERANCE
        hi = np.max([s[3] for s in stats], axis=0)
        lo = np.min([s[4] for s in stats], axis=0)

        def spread():
            r = (hi - lo)[hi - lo > 0]
            return (0.0, 1.0) if r.size == 0 else (float(r.max()),
                                                   float(r.max()) / float(np.median(r)))

        metric, how = graph_mod.metric_choice(stored / max(n * d, 1), negative, unit, spread)
    else:
        how = "given"
        stats = blocks.call("metric_stats") if metric == "scaled" else None
    scale = None
    if metric == "scaled":
        stats = stats or blocks.call("metric_stats")
        r = np.max([s[3] for s in stats], axis=0) - np.min([s[4] for s in stats], axis=0)
        scale = np.divide(1.0, r, out=np.ones_like(r, dtype=np.float64), where=r > 0)
    return metric, how, scale


def _contrast(blocks, R: RemoteRows, dense: bool) -> float:
    """:func:`graph.neighbour_contrast` of the blocks' rows: the sample's distances to every
    block, merged here."""
    n = R.shape[0]
    med = kernels.median_sqdist(R)
    if n < 2 or not med > 0:
        return 0.0
    idx = kernels.sample_rows(n)
    A = R[idx]
    if dense:
        A = A.toarray()
    kk = min(graph_mod.CONTRAST_NEIGHBOR, n - 1)
    parts = blocks.call("nearest_sqdist", A, idx, kk)
    best = np.partition(np.hstack(parts), kk - 1, axis=1)[:, :kk]
    return float(np.median(np.sqrt(best.max(axis=1)))) / float(np.sqrt(med))


def fit_model(blocks, name: str, labels: list, params: dict, *, costs: bool = True,
              max_memory: int | None = None, keep: bool = False) -> Model:
    """``name`` (lapsvm or laprls) on the blocks' rows with ``params``, in internal label
    codes (``labels``: the classes): the model one process fits on the same rows with the
    same landmark fit (its expansion on the landmark rows; the values on the training rows
    kept on the blocks, :meth:`GraphBlock.values_at`). ``keep``: the model's ``warm`` holds
    the :class:`GraphFit` (the check's folds solve on it)."""
    t0 = time.perf_counter()
    fit = build(blocks, name, params, max_memory)
    ts = time.perf_counter()
    model = fit.solve(fit.y)
    solve_time = time.perf_counter() - ts
    log.info("landmark system %.2f s, %s %.2f s%s", fit.kernel_time, "graph stage and "
             "expansion" if fit.how_fit == "project" else "landmark newton and the rows' "
             "values", solve_time, f" ({sum(model.stats['cg_iterations'])} CG iterations)"
             if fit.how_fit == "project" else "")
    for key, v in fit.stats.items():
        model.stats[key] = [v]
    model.stats["solve_time"] = [solve_time]
    model.stats["train_time"] = [time.perf_counter() - t0]
    model.stats["landmarks"] = model.stats.pop("landmarks")  # last, as in one process
    if keep:
        model.warm = {"cluster_fit": fit}
    return model


def build(blocks, name: str, params: dict, max_memory: int | None = None) -> GraphFit:
    """What a fit of ``name`` builds on the blocks before it solves: the metric, the graph and
    its Laplacian, the kernel, the landmarks and their system (:class:`GraphFit`)."""
    hinge = name == "lapsvm"
    summaries = blocks.call("summary")
    counts = [s["rows"] for s in summaries]
    starts = np.cumsum([0] + counts).astype(np.int64)
    n = int(starts[-1])
    d = int(blocks.d)
    blocks.call_each("place", [(int(starts[b]), n) for b in range(len(counts))])
    y = np.concatenate(blocks.call("labels"))
    nnz = sum(s["nnz"] for s in summaries)
    metric, how, scale = _metric(blocks, params["graph_metric"], n, d)
    if how != "given":
        log.info("%s: graph metric %s (%s)", name, metric, how)
    dense = bool(n * d and nnz >= kernels.DENSE_FRACTION * n * d
                 and n * d * 8 <= kernels.DENSE_COPY_BYTES)
    blocks.call("use_metric", metric, scale, dense)
    R = RemoteRows(blocks, starts, d, nnz)
    k_nn, lap_deg, how = graph_mod.auto_graph(R, params["neighbors"],
                                              params["laplacian_degree"],
                                              lambda: _contrast(blocks, R, dense))
    if how != "given":
        log.info("graph: %d neighbours, Laplacian degree %d (%s)", k_nn, lap_deg, how)
    if not 1 <= k_nn <= n - 1:
        raise ProblemError(f"a {k_nn}-nearest-neighbour graph needs more than {k_nn} rows "
                           f"(have {n}); give fewer neighbours (-k / --neighbors)")
    search = params["knn"]
    if search == "auto":
        search = "exact" if n <= graph_mod.APPROX_KNN_ROWS else "approximate"
        log.info("graph: %s neighbour search (auto: %d rows, %s %d)", search, n,
                 "at most" if search == "exact" else "over", graph_mod.APPROX_KNN_ROWS)
    n_lab = int(np.sum(y != 0))
    m = params["landmarks"]
    m = min(int(m), n) if m else kernels.auto_landmarks(n, n_lab, max_memory, 0)
    how_fit = params["landmark_fit"]
    if how_fit == "auto":
        how_fit = "restrict" if m >= n else "project"
        log.info("%s: landmark fit %s (auto: %s)", name, how_fit,
                 "every row is a landmark" if m >= n else "fewer landmarks than rows")
    log.info("%s: %d rows (%d unlabeled) on %d blocks; %s on %d landmark rows", name, n,
             n - n_lab, len(counts), "graph newton-CG projected" if how_fit == "project"
             else "landmark newton", m)

    tg = time.perf_counter()
    g = GraphOnBlocks(blocks, starts, lap_deg)
    direct = g.use_direct()
    g.bytes_per_row = 8 * d if dense else int(12 * nnz / max(n, 1)) + 8
    recall = None
    if search == "approximate":
        dist_sum, dist_count = g.knn_approximate(k_nn, R)
        recall = g.recall(k_nn, R, dense)
        log.info("graph: the approximate search holds %.1f %% of the exact %d nearest rows of "
                 "%d sampled rows", 100 * recall, k_nn, min(n, RECALL_ROWS))
    else:
        dist_sum, dist_count = g.knn(k_nn)
    mean_distance = dist_sum / dist_count
    weights = params["graph_weights"]
    t = float("nan")
    if weights == "heat":
        t = mean_distance if params["heat_width"] is None else float(params["heat_width"])
    edges = g.laplacian(weights, t, params["laplacian"] == "normalized")
    graph_mod.say_graph(k_nn, search, edges, weights, t, params["laplacian"] == "normalized",
                        lap_deg, f" on {len(counts)} blocks")
    graph_time = time.perf_counter() - tg
    log.info("graph on the blocks %.2f s; a product with L exchanges %d halo values (%.3g per "
             "row), %s", graph_time, g.halo_values, g.halo_values / n,
             "among the workers" if direct else "through this process")

    tk = time.perf_counter()
    spec = lapsvm.kernel_spec(params, R, {"heat_width": t, "mean_distance": mean_distance})
    landmarks = kernels.choose_landmarks(y, m)
    raw = R[landmarks]  # the model's expansion rows
    rows = kernels.landmark_rows(raw.toarray() if dense else raw, np.arange(landmarks.size))
    zn = kernels.sqnorms(rows) if spec.name == "rbf" else None
    T = kernels.nystrom_factor(spec, rows, zn)
    spec_t = (spec.name, spec.gamma, spec.degree, spec.coef0)
    fit = GraphFit(g, name, hinge, params, spec, spec_t, landmarks, raw, rows, T, how_fit,
                   metric, scale, d)
    fit.y = y
    fit.search = search
    fit.system = (_system_projected if how_fit == "project" else _system_restricted)(fit, y)
    fit.kernel_time = time.perf_counter() - tk
    fit.stats = {"n_rows": n, "n_unlabeled": n - n_lab, "graph_edges": edges,
                 "neighbors": k_nn, "laplacian_degree": lap_deg}
    if weights == "heat":
        fit.stats["heat_width"] = t
    if recall is not None:
        fit.stats["knn_recall"] = recall
    fit.stats.update(kernel_gamma=spec.gamma, graph_time=graph_time,
                     kernel_time=fit.kernel_time, landmarks=m)
    return fit


class GraphFit:
    """What a fit built on the blocks (the graph, the kernel, the landmark rows and system),
    so that the check's folds solve again with labels hidden (:meth:`solve`) and nothing is
    built twice, as one process reuses them (``warm``)."""

    def __init__(self, g, name, hinge, params, spec, spec_t, landmarks, raw, rows, T, how_fit,
                 metric, scale, d):
        self.g, self.name, self.hinge, self.params = g, name, hinge, params
        self.spec, self.spec_t, self.landmarks, self.raw = spec, spec_t, landmarks, raw
        self.rows, self.T, self.how_fit = rows, T, how_fit
        self.metric, self.scale, self.d = metric, scale, d
        self.system = None
        self.search = "exact"
        self.local = None  # the projected form's fit rows, per block

    def solve(self, y) -> Model:
        """Every one-vs-rest task on labels ``y`` (the blocks' view of them: a fold's are
        hidden there too) over the built system; the rows' values kept on the blocks.
        Returns the model (its statistics: the solves')."""
        solve = _solve_projected if self.how_fit == "project" else _solve_restricted
        coef, bs, stats = solve(self, y)
        order, _ = binary_tasks(y)
        return Model(self.name, order, self.d, KernelExpansion(
            self.spec, self.raw, coef, bs, unit_rows=self.metric == "cosine",
            column_scale=self.scale),
            params={p.name: {"graph_metric": self.metric, "knn": self.search,
                             "landmark_fit": self.how_fit}.get(p.name, self.params[p.name])
                    for p in lapsvm.PARAMS[self.name]}, stats=stats)

    def refit(self) -> Model:
        """:meth:`solve` on the blocks' labels as they are now (a fold's hidden)."""
        return self.solve(np.concatenate(self.g.blocks.call("labels")))

    def values(self, model, b: int, local) -> np.ndarray:
        """``model``'s decision values (its expansion) at block b's rows ``local``."""
        fn = model.function
        return self.g.blocks.call_one(b, "expansion_at", self.spec_t, self.rows, fn.coef, fn.b,
                                      local)


def _system_projected(fit: GraphFit, y) -> lapsvm.LandmarkSystem:
    """The projected form's system on the blocks: P's sums over the fit rows."""
    g = fit.g
    blocks, starts, n = g.blocks, g.starts, g.n
    B = starts.size - 1
    fit_rows = lapsvm.projection_rows(y, fit.landmarks)
    fit.local = [None] * B if fit_rows is None else [
        fit_rows[(fit_rows >= starts[b]) & (fit_rows < starts[b + 1])] - starts[b]
        for b in range(B)]
    H = block_sum(blocks.call_each("gram_sums", [(fit.spec_t, fit.rows, loc) for loc in fit.local]))
    return lapsvm.LandmarkSystem.projected(fit.spec, fit.landmarks, fit.rows, fit.T, H,
                                           fit_rows, n)


def _solve_projected(fit: GraphFit, y) -> tuple:
    """Each task's graph Newton-CG (:class:`BlockGraph`) on the blocks, then the expansion
    fitted to the values kept there. Returns (coefficients, biases, statistics)."""
    blocks = fit.g.blocks
    params = fit.params
    _, tasks = binary_tasks(y)
    stats: dict[str, list] = {}
    for k, pos in enumerate(tasks):
        tag = "" if len(tasks) == 1 else f"class {pos} vs rest: "
        parts = blocks.call("task", float(pos))
        Yl = np.concatenate([p[0] for p in parts])
        cl = np.concatenate([p[1] for p in parts])
        op = BlockGraph(fit.g, Yl, cl, [p[0].size for p in parts])
        res = lapsvm.graph_newton(op, params["gamma_a"], params["gamma_i"], fit.hinge,
                                  params["max_iter"] or 50, tag=tag)
        blocks.call("keep_values", k, len(tasks))
        _said(stats, tag, fit.name, res, cg=True)
    rhs = block_sum(blocks.call_each("projection_sums", [(fit.spec_t, fit.rows, fit.T, loc)
                                                    for loc in fit.local]))
    beta, bs = fit.system.solve_projection(rhs, params["gamma_a"], params["bias"] > 0)
    return fit.T @ beta, bs, stats


def _said(stats: dict, tag: str, name: str, res, cg: bool) -> None:
    log.info("%s%s: objective %.10g after %d Newton steps (%s)", tag, name, res.objective,
             res.iterations, res.reason)
    for key, v in (("objective", res.objective), ("iterations", res.iterations)) + (
            (("cg_iterations", res.cg_iterations),) if cg else ()):
        stats.setdefault(key, []).append(v)


def _system_restricted(fit: GraphFit, y) -> lapsvm.LandmarkSystem:
    """The restricted form's system on the blocks: G = T̃ᵀ [K 1]ᵀ L^p [K 1] T̃ (each block's
    [K 1] taken through the powers of L a block of columns at a time, the halo's rows
    exchanged as for a vector)."""
    g = fit.g
    blocks, n = g.blocks, g.n
    m1 = fit.landmarks.size + 1
    blocks.call("landmark_columns", fit.spec_t, fit.rows)
    q, odd = divmod(g.degree, 2)
    step = max(1, kernels.BLOCK_BYTES // max(1, 8 * n))
    if q:
        for a in range(0, m1, step):
            e = min(m1, a + step)
            g.power("_c", "_c", blocks.call("columns", "A", a, e, "_c"), times=q)
            blocks.call("set_columns", "A", a, "_c")
    if not odd:
        H = block_sum(blocks.call("gram_of", "A", "A"))
    else:
        H = np.zeros((m1, m1))
        for a in range(0, m1, step):
            e = min(m1, a + step)
            g.power("_c", "_c", blocks.call("columns", "A", a, e, "_c"), times=1)
            H[:, a:e] = block_sum(blocks.call("gram_of", "A", "_c"))
    blocks.call("drop", "A")
    blocks.call("drop", "_c")
    return lapsvm.LandmarkSystem(fit.spec, fit.landmarks, fit.rows, fit.T,
                                 lapsvm.landmark_sandwich(fit.T, H), n=n)


def _solve_restricted(fit: GraphFit, y) -> tuple:
    """Each task's landmark Newton here (the labeled rows' features gathered), then the
    values of every row kept on the blocks. Returns (coefficients, biases, statistics)."""
    g = fit.g
    blocks = g.blocks
    params = fit.params
    c = np.concatenate(blocks.call("costs"))
    R = RemoteRows(blocks, g.starts, blocks.d, 0)
    _, tasks = binary_tasks(y)
    coef = np.zeros((fit.landmarks.size, len(tasks)))
    bs = np.zeros(len(tasks))
    stats: dict[str, list] = {}
    for k, pos in enumerate(tasks):
        tag = "" if len(tasks) == 1 else f"class {pos} vs rest: "
        Y = np.where(y == 0, 0.0, np.where(y == pos, 1.0, -1.0))
        res = lapsvm.landmark_newton(fit.system, R, Y, c, params["gamma_a"],
                                     params["gamma_i"], params["bias"] > 0, fit.hinge,
                                     params["max_iter"] or 50, tag)
        coef[:, k] = fit.T @ res.alpha
        bs[k] = res.b
        _said(stats, tag, fit.name, res, cg=False)
    blocks.call("expansion_values", fit.spec_t, fit.rows, coef, bs)
    return coef, bs, stats
