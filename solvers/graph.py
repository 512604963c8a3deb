"""The kNN graph and its Laplacian (Belkin, Niyogi & Sindhwani 2006; shared by the manifold and TV
families).

* :func:`knn` — k nearest neighbours (Euclidean) of every row among all rows: exact, in blocks
  of rows (never more than one block of distances, ``kernels.BLOCK_BYTES``, at once; n² work),
  or approximate (:mod:`ssl_svm.solvers.ann`, near n·log n work), by :func:`knn_search`.
* :func:`adjacency` — sparse symmetric weights: heat ``exp(-d²/(2t²))`` (t = mean kNN distance
  by default) or binary, symmetrised by "OR": ``W = max(W, Wᵀ)``.
* :class:`Laplacian` — ``L = D - W`` or ``I - D^{-1/2} W D^{-1/2}``, raised to a power p as an
  operator (p sparse products), so ``L^p`` is never formed.
"""

from __future__ import annotations

import hashlib
import logging
import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ssl_svm.solvers.errors import NonFiniteError, ProblemError
from ssl_svm.solvers.kernels import (
    DENSE_COPY_BYTES,
    SAMPLE_ROWS,
    block_rows_for,
    column_ranges,
    default_memory_limit,
    dot_block,
    human_bytes,
    median_gamma,
    median_sqdist,
    prepare,
    range_spread,
    sample_rows,
    scale_columns,
    sqnorms,
    unit_rows,
)

log = logging.getLogger("ssl.solver.graph")

WEIGHTS = ("heat", "binary", "self-tuning")
LAPLACIANS = ("normalized", "unnormalized")
REFINE = 8  # extra candidates whose distances are recomputed exactly
# Data-driven graph of the manifold solvers (-k auto, --laplacian-degree auto): the contrast
# (median distance of sampled rows to their 2nd nearest row / median distance between rows)
# says how much more the nearest neighbours tell than a typical row does; the graph grows
# denser and its regulariser smoother as it rises. (The 2nd, not the 1st: one duplicate row
# does not make the data look like a manifold; not the 10th: that one moves with the number
# of rows, and the paper's subsets crossed a threshold.) Calibrated on the paper's sets
# (bench/lapsvm_protocol.py, 4 splits, error on the unlabeled rows at defaults; contrast on the
# whole set / the training parts): coil20 0.18 / 0.22 — a sharp manifold, 6 neighbours and L
# (10 and L² cost coil20 6 points); uspst 0.37 / 0.39, usps 4-9 0.46 — 10 and L² (uspstb
# LapRLS 10.3 → 6.7 % against 6 and L); g50c 0.76 / 0.77, pcmac 0.84 / 0.87 — distances
# concentrate, a 10-NN graph is mostly noise, and 50 neighbours with L⁵ (Sindhwani et al.'s
# setting for these sets) take g50c from 17 to 6 % and pcmac from 30 to 10 %.
CONTRAST_NEIGHBOR = 2
# (contrast below which, neighbours, Laplacian degree), the last applies to all larger
AUTO_GRAPHS = ((0.3, 6, 1), (0.6, 10, 2), (float("inf"), 50, 5))
# the exact distances' chunks: sparse rows, the differences' stored values (fewer, larger
# sparse operations); dense rows, the differences themselves, small enough to stay in
# cache (usps49-10: 53 ms at 32 MiB, 25 at 4); a row's sum is the same in any chunk
BLOCK_BYTES_EXACT = 32 << 20
DENSE_BLOCK_BYTES_EXACT = 4 << 20
# above this many rows knn() takes sparse rows dense (when the copy is small): below, the
# graph stays exactly as it was built before
DENSE_KNN_ROWS = 20000
# --knn auto: the exact search up to this many rows (mnist's 70,000 rows, 784 features, take
# about 4 minutes on 2 cores; its cost grows as n²), the approximate one above
APPROX_KNN_ROWS = 100_000
# the approximate search works on dense rows: sparse ones are copied dense when the copy takes
# at most this fraction of the memory limit (else the exact search, which keeps them sparse)
APPROX_DENSE_SHARE = 0.25


def knn_search(search: str, X, max_memory: int | None = None) -> tuple[str, str]:
    """(exact or approximate, why) for ``--knn`` ``search`` on the rows X; a choice not
    given is said."""
    search, why = _knn_search(search, X, max_memory)
    if why != "given":
        log.info("graph: %s neighbour search (%s)", search, why)
    return search, why


def _knn_search(search: str, X, max_memory: int | None) -> tuple[str, str]:
    n, d = X.shape
    if search == "auto":
        if n <= APPROX_KNN_ROWS:
            return "exact", f"auto: {n} rows, at most {APPROX_KNN_ROWS}"
        why = f"auto: {n} rows, over {APPROX_KNN_ROWS}"
    else:
        why = "given"
    if search == "exact":
        return "exact", why
    limit = default_memory_limit() if max_memory is None else max_memory
    if sp.issparse(X) and 8 * n * d > APPROX_DENSE_SHARE * limit:
        log.warning("graph: exact neighbour search: the approximate one needs the rows dense "
                    "(%s), over %d %% of the memory limit of %s", human_bytes(8 * n * d),
                    round(100 * APPROX_DENSE_SHARE), human_bytes(limit))
        return "exact", why + "; the dense rows do not fit"
    return "approximate", why


# ssl-tune fits every grid point of a fold on the same rows, and -a auto several graph
# solvers: with keep_neighbours() on, knn() keeps its latest results (by the rows' content
# and its arguments) within a share of the memory limit, so a fold's neighbours are searched
# once. The tasks visit the folds in turn for each point, so the bound must hold every fold's
# graph: at a fixed 256 MiB, secstr's five 60 MB graphs evicted each other and none was reused
KNN_CACHE_SHARE = 0.25
_knn_cache: dict | None = None
_knn_cache_bytes = 0


def keep_neighbours(memory_limit: int | None = None) -> None:
    """From now on in this process, :func:`knn` keeps its latest results (the most recent
    within :data:`KNN_CACHE_SHARE` of ``memory_limit``, default :func:`default_memory_limit`;
    a larger one is not kept) and returns a copy when asked again for the same rows and
    arguments: a pure cache, the same arrays as a new search. Tuning's workers turn it on;
    :func:`drop_neighbours` turns it off and frees it."""
    global _knn_cache, _knn_cache_bytes
    limit = default_memory_limit() if memory_limit is None else memory_limit
    _knn_cache_bytes = int(KNN_CACHE_SHARE * limit)
    if _knn_cache is None:
        _knn_cache = {}


def drop_neighbours() -> None:
    """Turn :func:`keep_neighbours` off in this process and free what it kept."""
    global _knn_cache
    _knn_cache = None


def _rows_key(X) -> bytes:
    """sha1 of the rows' shape, storage and values (CSR or dense)."""
    h = hashlib.sha1(repr((type(X).__name__, X.shape, str(X.dtype))).encode())
    parts = (X.indptr, X.indices, X.data) if sp.issparse(X) else (X,)
    for a in parts:
        h.update(np.ascontiguousarray(a).view(np.uint8).reshape(-1))
    return h.digest()


def knn(X, k: int, search: str = "exact", seed: int = 0, numpy: bool = False
        ) -> tuple[np.ndarray, np.ndarray]:
    """Indices (n, k) and Euclidean distances (n, k) of each row's k nearest other rows:
    ``search`` exact, or approximate (:func:`ssl_svm.solvers.ann.knn`, seeded by ``seed``).
    ``numpy``: the exact search's candidate selection by numpy (:func:`smallest`), not numba.
    With :func:`keep_neighbours` on, a search already made on the same rows is not made
    again.

    Neighbours are sorted by distance (ties by index). A row is never its own neighbour, but a
    duplicate row is a neighbour at distance 0.
    """
    n = X.shape[0]
    if not 1 <= k <= n - 1:
        raise ProblemError(f"a {k}-nearest-neighbour graph needs more than {k} rows "
                           f"(have {n}); give fewer neighbours (-k / --neighbors)")
    if _knn_cache is None:
        return _knn(X, k, search, seed, numpy)
    key = (_rows_key(X), k, search, seed, numpy)
    if key in _knn_cache:
        log.info("graph: the %d nearest neighbours of these %d rows reused (searched for an "
                 "earlier fit)", k, n)
        _knn_cache[key] = hit = _knn_cache.pop(key)  # the latest used last
        return hit[0].copy(), hit[1].copy()
    idx, dist = _knn(X, k, search, seed, numpy)
    if idx.nbytes + dist.nbytes <= _knn_cache_bytes:
        _knn_cache[key] = (idx.copy(), dist.copy())
        while sum(a.nbytes + b.nbytes for a, b in _knn_cache.values()) > _knn_cache_bytes:
            del _knn_cache[next(iter(_knn_cache))]  # the least recently used
    return idx, dist


def _knn(X, k: int, search: str, seed: int, numpy: bool) -> tuple[np.ndarray, np.ndarray]:
    """:func:`knn`'s search itself (k checked)."""
    n = X.shape[0]
    if search == "approximate":
        from ssl_svm.solvers import ann

        idx, dist, _ = ann.knn(X.toarray() if sp.issparse(X) else X, k, seed=seed)
        return idx, dist
    Xp = prepare(X)
    if sp.issparse(Xp) and n > DENSE_KNN_ROWS and n * Xp.shape[1] * 8 <= DENSE_COPY_BYTES:
        # the n² products as dense blocks: a sparse product with a dense result costs more
        # (secstr's 75,311 rows, 50 neighbours: 212 → 141 s)
        Xp = Xp.toarray()
    xn = sqnorms(Xp)
    idx = np.empty((n, k), dtype=np.int64)
    dist = np.empty((n, k))
    b = block_rows_for(n)
    for s in range(0, n, b):
        e = min(n, s + b)
        D = dot_block(Xp[s:e], Xp)
        D *= -2.0
        D += xn[s:e, None]
        D += xn[None, :]
        rows = np.arange(e - s)
        D[rows, s + rows] = np.inf
        # candidates by the fast formula, then their distances recomputed from the
        # differences: the formula's rounding could otherwise reorder near-ties
        kk = min(n - 1, k + REFINE)
        cand = np.empty((e - s, kk), dtype=np.int64)
        if numpy:
            smallest(D, cand)
        else:
            from ssl_svm.solvers import graph_numba

            graph_numba.smallest(D, cand)
        del D
        cd = exact_sqdist(Xp, np.arange(s, e), cand)
        order = np.lexsort((cand, cd), axis=1)[:, :k]  # by distance, ties by index
        idx[s:e] = np.take_along_axis(cand, order, axis=1)
        dist[s:e] = np.sqrt(np.take_along_axis(cd, order, axis=1))
    return idx, dist


def smallest(D: np.ndarray, out: np.ndarray) -> None:
    """out[r] = column indices of the out.shape[1] smallest entries of row r of D, smallest by
    (value, index), in no particular order: :func:`ssl_svm.solvers.graph_numba.smallest`'s
    set, by whole-row numpy passes (a partition for the threshold value, then the entries
    below it and the first ones equal to it)."""
    kk = out.shape[1]
    t = np.partition(D, kk - 1, axis=1)[:, kk - 1:kk]
    below = D < t
    need = kk - below.sum(axis=1, keepdims=True)
    equal = D == t
    keep = below | (equal & (np.cumsum(equal, axis=1) <= need))
    out[:] = np.nonzero(keep)[1].reshape(out.shape)


def exact_sqdist(Xp, rows: np.ndarray, cand: np.ndarray, Xc=None) -> np.ndarray:
    """Squared distances |x_rows[i] - z_cand[i, j]|² from the differences, in row chunks: x
    rows of Xp, z rows of ``Xc`` (default Xp; of the same storage)."""
    Xc = Xp if Xc is None else Xc
    kk = cand.shape[1]
    out = np.empty(cand.shape)
    if sp.issparse(Xp):  # a difference row stores at most two rows' values, 16 bytes each
        per_row = 32 * max(1.0, Xp.nnz / max(1, Xp.shape[0]))
        step = max(1, int(BLOCK_BYTES_EXACT // (kk * per_row)))
    else:
        step = max(1, DENSE_BLOCK_BYTES_EXACT // max(1, 8 * kk * Xp.shape[1]))
    for a in range(0, rows.size, step):
        r = rows[a:a + step]
        c = cand[a:a + step]
        if sp.issparse(Xp):
            diff = Xp[np.repeat(r, kk)] - Xc[c.ravel()]
            out[a:a + step] = np.asarray(diff.multiply(diff).sum(axis=1)).reshape(c.shape)
        else:
            diff = Xp[r][:, None, :] - Xc[c]
            out[a:a + step] = np.einsum("ijk,ijk->ij", diff, diff)
    return out


def adjacency(idx: np.ndarray, dist: np.ndarray, weights: str = "heat",
              width: float | None = None) -> tuple[sp.csr_matrix, float]:
    """Symmetric weight matrix W (CSR, zero diagonal) and the heat width t used (nan if binary).

    Heat weights ``exp(-d²/(2t²))``; ``width=None`` takes t = mean kNN distance. Self-tuning
    weights (Zelnik-Manor & Perona 2004) ``exp(-d_ij²/(σ_i σ_j))`` with σ_i the distance from
    row i to its k-th (farthest kept) neighbour: a local scale per row, so dense and sparse
    regions of the data get comparable weights. Symmetrised by OR: an edge exists if either end
    has the other among its k neighbours, with the larger weight.
    """
    n, k = idx.shape
    if weights not in WEIGHTS:
        raise ValueError(f"graph weights must be one of {', '.join(WEIGHTS)}")
    t = float("nan")
    if weights == "heat":
        t = float(np.mean(dist)) if width is None else float(width)
        if not t > 0:
            # every neighbour at distance 0 (all rows identical): weights are all 1
            w = np.ones_like(dist)
        else:
            w = np.exp(-(dist * dist) / (2.0 * t * t))
    elif weights == "self-tuning":
        sig = dist[:, -1].copy()
        # a row whose k neighbours are all duplicates has no scale: weight 1 to them
        sig[sig <= 0] = np.inf
        scale = sig[:, None] * sig[idx]
        with np.errstate(invalid="ignore"):
            w = np.where(np.isfinite(scale), np.exp(-(dist * dist) / scale), 1.0)
    else:
        w = np.ones_like(dist)
    rows = np.repeat(np.arange(n), k)
    W = sp.csr_matrix((w.ravel(), (rows, idx.ravel())), shape=(n, n))
    W = W.maximum(W.T).tocsr()
    W.sort_indices()
    return W, t


def neighbour_contrast(X, k: int = CONTRAST_NEIGHBOR, rows: int = SAMPLE_ROWS,
                       seed: int = 0) -> float:
    """Median over ``rows`` sampled rows of the Euclidean distance to their k-th nearest other
    row (among all rows), divided by the median distance between sampled rows (the sample of
    kernels.median_sqdist, the rbf default's): near 1 when distances concentrate, small on a
    manifold; 0 when the sampled rows coincide. Cost: sample × all rows distances, in blocks
    of columns."""
    Xp = prepare(X)
    n = Xp.shape[0]
    med = median_sqdist(Xp, rows, seed)
    if n < 2 or not med > 0:
        return 0.0
    idx = sample_rows(n, rows, seed)
    A = Xp[idx]
    sa = sqnorms(A)
    kk = min(k, n - 1)
    best = np.full((idx.size, kk), np.inf)
    step = block_rows_for(idx.size)
    for s in range(0, n, step):
        e = min(n, s + step)
        B = Xp[s:e]
        D = sa[:, None] + sqnorms(B)[None, :] - 2.0 * dot_block(A, B)
        own = (idx >= s) & (idx < e)
        D[np.flatnonzero(own), idx[own] - s] = np.inf
        both = np.concatenate([best, np.maximum(D, 0.0)], axis=1)
        best = np.partition(both, kk - 1, axis=1)[:, :kk]
    return float(np.median(np.sqrt(best.max(axis=1)))) / float(np.sqrt(med))


# --graph-metric auto takes cosine for rows stored sparsely (at most this fraction of the
# entries stored) with no negative value: documents, counts, tf-idf, where a row's length is
# its document's length and the direction is what it says; dense or signed rows (images,
# measurements) keep Euclidean distances
COSINE_DENSITY = 0.1
UNIT_TOLERANCE = 1e-6  # rows this close to unit length count as normalised already
# auto scales the columns when the largest range exceeds the median range by this factor: a
# feature of range 1,000 among features of range 1 decides every distance alone (LIBSVM's
# guide scales every feature to [-1, 1] for the same reason). Against the median, not the
# smallest: pixels (a border pixel's small range is no unit of its own) and features
# standardised already stay as given
RANGE_RATIO = 10.0


def resolve_metric(metric: str, X) -> tuple[str, str]:
    """('euclidean', 'cosine' or 'scaled', how chosen) of --graph-metric ``metric`` on the
    training rows X; auto is cosine for sparse non-negative rows (:data:`COSINE_DENSITY`)
    unless every row is at unit length already; else scaled where the largest column range
    is over :data:`RANGE_RATIO` times the median one, else euclidean."""
    if metric != "auto":
        return metric, "given"
    n, d = X.shape
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        stored, negative = X.nnz, bool(X.nnz) and float(X.data.min()) < 0
    else:
        X = np.asarray(X)
        stored, negative = int(np.count_nonzero(X)), bool(X.size) and float(X.min()) < 0
    density = stored / max(n * d, 1)
    unit = False
    if density <= COSINE_DENSITY and not negative:
        norms = np.sqrt(sqnorms(X))
        unit = bool(np.all(np.abs(norms[norms > 0] - 1.0) <= UNIT_TOLERANCE))
    return metric_choice(density, negative, unit, lambda: range_spread(X))


def metric_choice(density: float, negative: bool, unit: bool, spread) -> tuple[str, str]:
    """:func:`resolve_metric`'s auto choice from the rows' statistics: the fraction of entries
    stored, whether a value is negative, whether every nonzero row is at unit length, and
    ``spread()`` (:func:`kernels.range_spread`'s pair; asked only when needed). The rows may
    be anywhere (a cluster's blocks sum their statistics)."""
    if density <= COSINE_DENSITY and not negative:
        if unit:
            # the same graph either way; euclidean keeps the model free of a row scaling that
            # LIBSVM's and LIBLINEAR's predictors cannot repeat (ssl-export)
            return "euclidean", "auto: the rows are at unit length already"
        return "cosine", (f"auto: sparse non-negative rows, {100 * density:.2g} % of the "
                          "entries stored, of different lengths")
    why = "rows with negative values" if negative else (f"dense rows, {100 * density:.2g} % "
                                                         "of the entries stored")
    top, ratio = spread()
    if ratio > RANGE_RATIO:
        return "scaled", (f"auto: {why}, the largest column range {top:.3g} is "
                          f"{ratio:.3g} times the median one: "
                          "each column divided by its range, at training and at prediction")
    return "euclidean", "auto: " + why


def metric_scale(metric: str, X) -> np.ndarray | None:
    """The column factors of --graph-metric ``metric`` (resolved) on the training rows X:
    1 / each column's range for scaled (1 where the column is constant), else None."""
    if metric != "scaled":
        return None
    r = column_ranges(X)
    return np.divide(1.0, r, out=np.ones_like(r, dtype=np.float64), where=r > 0)


def metric_rows(metric: str, X, name: str):
    """(metric taken, the rows the graph and kernel see, the column factors or None) for
    --graph-metric ``metric``: X itself for euclidean, its rows at unit length for cosine, its
    columns divided by their ranges for scaled; the choice is logged when auto."""
    metric, how = resolve_metric(metric, X)
    if how != "given":
        log.info("%s: graph metric %s (%s)", name, metric, how)
    scale = metric_scale(metric, X)
    if scale is not None:
        return metric, scale_columns(X, scale), scale
    return metric, (unit_rows(X) if metric == "cosine" else X), None


def auto_graph(X, neighbors: int | None, degree: int | None, contrast=None
               ) -> tuple[int, int, str]:
    """(neighbours, Laplacian degree, how chosen) for the manifold solvers: given values kept;
    None (auto) from :func:`neighbour_contrast` by AUTO_GRAPHS (``contrast``: a function of
    no argument giving it, where the rows are elsewhere); the neighbours at most rows − 1."""
    if neighbors is not None and degree is not None:
        return int(neighbors), int(degree), "given"
    c = neighbour_contrast(X) if contrast is None else contrast()
    if not math.isfinite(c):  # the squared distances overflowed (or a value is not finite)
        raise NonFiniteError("the distances between rows are not finite numbers (values too "
                             "large to square: rescale the features)")
    k, p = next((k, p) for below, k, p in AUTO_GRAPHS if c < below)
    k = min(k, max(1, X.shape[0] - 1))
    how = (f"auto: a row's {'2nd' if CONTRAST_NEIGHBOR == 2 else f'{CONTRAST_NEIGHBOR}th'} "
           f"nearest row is at {c:.2f} of the median distance between rows")
    return (k if neighbors is None else int(neighbors),
            p if degree is None else int(degree), how)


def graph_gamma(heat_width: float, mean_distance: float, X) -> tuple[float, str]:
    """(γ, how chosen) of the rbf kernel at the graph's scale t: the heat width (given or the
    mean distance to the k neighbours; ``exp(-γ d²) = exp(-d²/(2t²))``), or the mean kNN
    distance when the weights are not heat (``heat_width`` nan); γ = 1/(2t²). The median
    heuristic when t is 0 (every neighbour a duplicate)."""
    t = mean_distance if math.isnan(heat_width) else heat_width
    if t > 0:
        return 1.0 / (2.0 * t * t), f"auto: 1/(2t²), t = {t:.6g} the graph's heat width"
    return median_gamma(X), "auto: 1/median squared distance (every neighbour a duplicate)"


@dataclass
class Laplacian:
    """The graph Laplacian ``L`` (CSR, symmetric PSD) used as the operator ``L^degree``.

    normalized: ``I - D^{-1/2} W D^{-1/2}`` (rows of zero degree get L_ii = 1, no off-diagonal
    entries), else ``D - W``.
    """

    L: sp.csr_matrix
    degree: int = 1
    normalized: bool = True

    @classmethod
    def from_weights(cls, W: sp.csr_matrix, normalized: bool = True, degree: int = 1
                     ) -> Laplacian:
        n = W.shape[0]
        d = np.asarray(W.sum(axis=1)).ravel()
        if normalized:
            with np.errstate(divide="ignore"):
                s = np.where(d > 0, 1.0 / np.sqrt(d), 0.0)
            S = sp.diags(s)
            L = sp.identity(n, format="csr") - S @ W @ S
        else:
            L = sp.diags(d) - W
        L = sp.csr_matrix(L)
        L.sort_indices()
        return cls(L, degree, normalized)

    @property
    def n(self) -> int:
        return self.L.shape[0]

    def apply(self, V: np.ndarray) -> np.ndarray:
        """L^p V for a vector or a dense matrix V (p sparse products)."""
        out = self.L @ V
        for _ in range(self.degree - 1):
            out = self.L @ out
        return np.asarray(out)

    def dense_power(self) -> np.ndarray:
        """L^p as a dense matrix (tests and small problems only)."""
        return np.linalg.matrix_power(self.L.toarray(), self.degree)

    def quad(self, f: np.ndarray) -> float:
        """fᵀ L^p f."""
        return float(f @ self.apply(f))


def build(X, k: int = 6, weights: str = "heat", width: float | None = None,
          normalized: bool = True, degree: int = 1, search: str = "exact",
          numpy: bool = False) -> tuple[Laplacian, dict]:
    """kNN graph Laplacian of the rows of X and a few statistics (edges, width used); the
    neighbours by ``search`` (exact or approximate, :func:`knn`; ``numpy`` as there)."""
    idx, dist = knn(X, k, search, numpy=numpy)
    W, t = adjacency(idx, dist, weights, width)
    lap = Laplacian.from_weights(W, normalized, degree)
    stats = {"graph_edges": W.nnz // 2, "heat_width": t, "mean_distance": float(np.mean(dist))}
    say_graph(k, search, W.nnz // 2, weights, t, normalized, degree)
    return lap, stats


def say_graph(k: int, search: str, edges: int, weights: str, t: float, normalized: bool,
              degree: int, where: str = "") -> None:
    """The line that describes a graph built (:func:`build`, or on a cluster's blocks)."""
    log.info("graph: %d-NN%s, %d edges, %s weights%s, %s Laplacian%s%s", k,
             " (approximate search)" if search == "approximate" else "", edges, weights,
             f" (t = {t:.6g})" if weights == "heat" else "",
             "normalized" if normalized else "unnormalized",
             f" to the power {degree}" if degree > 1 else "", where)
