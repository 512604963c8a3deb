"""Kernels in LIBSVM's conventions, evaluated blockwise, and the memory guard for n×n matrices.

linear: ``x·z``; rbf: ``exp(-gamma ||x - z||^2)``; poly: ``(gamma x·z + coef0)^degree``.
(A Gaussian of width σ, ``exp(-||x - z||² / (2σ²))``, is rbf with ``gamma = 1 / (2σ²)``.)

Inputs are CSR (or dense) row matrices. Every kernel matrix is produced ``block_rows`` rows at a
time. Dense-enough data (≥ 10 % nonzeros) are expanded to a dense array for the BLAS products
when that copy is small (``DENSE_COPY_BYTES``): a sparse×sparse product of 20 %-full rows is
10-50× slower than BLAS, and the copy is smaller than the kernel matrix it serves. Sparse data
(text) stay CSR.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ssl_svm.solvers.errors import MemoryLimitError

log = logging.getLogger("ssl.solver.kernel")

KERNELS = ("linear", "poly", "rbf")
LIBSVM_KERNEL_NUMBERS = {"0": "linear", "1": "poly", "2": "rbf"}
DENSE_COPY_BYTES = 1 << 30
DENSE_FRACTION = 0.1
BLOCK_BYTES = 64 << 20  # size of one block of kernel values or distances


@dataclass(frozen=True)
class KernelSpec:
    """A kernel and its parameters (LIBSVM's -t, -g, -d, -r)."""

    name: str
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 0.0

    def __post_init__(self):
        if self.name not in KERNELS:
            raise ValueError(f"unknown kernel '{self.name}' (choose from {', '.join(KERNELS)})")

    def describe(self) -> str:
        if self.name == "linear":
            return "linear"
        if self.name == "rbf":
            return f"rbf gamma={self.gamma:g}"
        return f"poly gamma={self.gamma:g} degree={self.degree} coef0={self.coef0:g}"


# --------------------------------------------------------------------------- memory guard

def physical_memory() -> int:
    """Bytes of RAM on this machine (0 if unknown)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def default_memory_limit() -> int:
    """Half the machine's RAM: room for the n×n matrices plus the data and the OS."""
    ram = physical_memory()
    return ram // 2 if ram else 8 << 30


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024.0
    return f"{n:.2f} TiB"


MAX_MEMORY = 1 << 60  # the largest --max-memory taken, in bytes (1 EiB)


def parse_memory(text: str) -> int:
    """Bytes from '500M', '12G', '2048' (MiB when no unit, as LIBSVM's -m); ValueError if bad."""
    t = str(text).strip().upper().removesuffix("B").removesuffix("I")
    scale = 1 << 20
    if t and t[-1] in "KMGT":
        scale = 1 << (10 * ("KMGT".index(t[-1]) + 1))
        t = t[:-1]
    try:
        v = float(t)
    except ValueError:
        raise ValueError(f"'{text}' is not a memory size (e.g. 500M, 12G; plain numbers are "
                         "MiB)") from None
    if not v > 0 or v != v or v == float("inf"):
        raise ValueError(f"memory size must be positive (got '{text}')")
    if v * scale > MAX_MEMORY:
        raise ValueError(f"memory size '{text}' is larger than any machine's (at most "
                         "1048576T)")
    return int(v * scale)


def reserve(nbytes: int, what: str, limit: int | None) -> None:
    """Log the size of a large allocation about to be made; refuse it above ``limit`` bytes."""
    limit = default_memory_limit() if limit is None else limit
    log.info("%s: %s (memory limit %s)", what, human_bytes(nbytes), human_bytes(limit))
    if nbytes > limit:
        raise MemoryLimitError(
            f"{what} needs {human_bytes(nbytes)}, above the memory limit of "
            f"{human_bytes(limit)}; raise --max-memory if the machine has the room, or use "
            "fewer rows")


def check_plan(parts: list[tuple[str, int]], limit: int | None) -> None:
    """Refuse a fit whose large matrices, held at the same time, exceed ``limit`` bytes, before
    any of them (or the graph that precedes them) is built. ``parts``: (what, bytes)."""
    limit = default_memory_limit() if limit is None else limit
    total = sum(b for _, b in parts)
    if total > limit:
        items = " + ".join(f"{w} {human_bytes(b)}" for w, b in parts)
        raise MemoryLimitError(
            f"needs {human_bytes(total)} at once ({items}), above the memory limit of "
            f"{human_bytes(limit)}; raise --max-memory if the machine has the room, or use "
            "fewer rows")


# --------------------------------------------------------------------------- products

def prepare(X):
    """X as the blockwise products want it: dense if dense enough and small, else CSR."""
    if not sp.issparse(X):
        return np.ascontiguousarray(X, dtype=np.float64)
    X = sp.csr_matrix(X)
    n, d = X.shape
    if n * d and X.nnz >= DENSE_FRACTION * n * d and n * d * 8 <= DENSE_COPY_BYTES:
        return X.toarray()
    return X


def unit_rows(X):
    """X with every row scaled to unit Euclidean length (a zero row stays zero): Euclidean
    distances between such rows are √(2 − 2·cos), so a kNN graph and an rbf kernel on them
    follow the cosine similarity of the original rows (--graph-metric cosine). CSR stays CSR
    (same pattern), dense stays dense; float64."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        nrm = np.sqrt(sqnorms(X))
        scale = np.divide(1.0, nrm, out=np.ones_like(nrm), where=nrm > 0)
        X.data *= np.repeat(scale, np.diff(X.indptr))
        return X
    X = np.array(X, dtype=np.float64)
    nrm = np.sqrt(sqnorms(X))
    X /= np.where(nrm > 0, nrm, 1.0)[:, None]
    return X


def scale_columns(X, scale: np.ndarray):
    """X with column j multiplied by ``scale[j]`` (columns beyond ``scale`` unchanged): the
    rows a --graph-metric scaled graph and kernel see. CSR stays CSR (same pattern), dense
    stays dense; float64."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        full = np.ones(X.shape[1])
        full[:min(X.shape[1], scale.size)] = scale[:X.shape[1]]
        X.data *= full[X.indices]
        return X
    X = np.array(X, dtype=np.float64)
    m = min(X.shape[1], scale.size)
    X[:, :m] *= scale[:m]
    return X


def column_ranges(X) -> np.ndarray:
    """max − min of every column of X (a sparse column's unstored entries are zeros)."""
    if sp.issparse(X):
        X = sp.csc_matrix(X)
        hi = np.asarray(X.max(axis=0).todense()).ravel()
        lo = np.asarray(X.min(axis=0).todense()).ravel()
        return hi - lo
    X = np.asarray(X)
    if X.shape[0] == 0:
        return np.zeros(X.shape[1])
    return X.max(axis=0) - X.min(axis=0)


def range_spread(X) -> tuple[float, float]:
    """(the largest column range of X, that range over the median one), over the columns
    that vary (:func:`column_ranges`); (0, 1) when none does or X has no row."""
    if X.shape[0] == 0:
        return 0.0, 1.0
    ranges = column_ranges(X)
    ranges = ranges[ranges > 0]
    if ranges.size == 0:
        return 0.0, 1.0
    top = float(ranges.max())
    return top, top / float(np.median(ranges))


def sqnorms(A) -> np.ndarray:
    """Squared Euclidean norm of every row."""
    if sp.issparse(A):
        return np.asarray(A.multiply(A).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", A, A)


def dot_block(A, Z) -> np.ndarray:
    """The dense matrix A Zᵀ for row matrices A, Z (either dense or CSR)."""
    if sp.issparse(A) and not sp.issparse(Z):
        A = A.toarray() if A.shape[0] * A.shape[1] * 8 <= BLOCK_BYTES else A
    if sp.issparse(A):
        out = A @ Z.T
        return out.toarray() if sp.issparse(out) else np.asarray(out)
    if sp.issparse(Z):
        return np.asarray((Z @ A.T).T)
    return A @ Z.T


def _apply(spec: KernelSpec, G: np.ndarray, an, zn) -> np.ndarray:
    """Turn the inner products G = A Zᵀ into kernel values, in place."""
    if spec.name == "linear":
        return G
    if spec.name == "poly":
        G *= spec.gamma
        G += spec.coef0
        _int_power(G, int(spec.degree))
        return G
    G *= -2.0
    G += an[:, None]
    G += zn[None, :]
    np.maximum(G, 0.0, out=G)  # rounding can make tiny distances negative
    G *= -spec.gamma
    np.exp(G, out=G)
    return G


def _int_power(G: np.ndarray, p: int) -> None:
    """G ← G**p in place by repeated squaring (np.power with a float exponent is ~10× slower)."""
    if p == 1:
        return
    if p == 0:
        G.fill(1.0)
        return
    base = G.copy()
    G.fill(1.0)
    while p:
        if p & 1:
            G *= base
        p >>= 1
        if p:
            base *= base


def kernel_block(spec: KernelSpec, A, Z, z_sqnorms: np.ndarray | None = None) -> np.ndarray:
    """The dense kernel matrix K(A, Z), shape (rows of A, rows of Z)."""
    G = dot_block(A, Z)
    if spec.name != "rbf":
        return _apply(spec, G, None, None)
    zn = sqnorms(Z) if z_sqnorms is None else z_sqnorms
    return _apply(spec, G, sqnorms(A), zn)


def block_rows_for(m: int, bytes_per_value: int = 8) -> int:
    """Rows per block so that one block of m-wide values takes about BLOCK_BYTES."""
    return max(1, min(8192, BLOCK_BYTES // max(1, m * bytes_per_value)))


def kernel_times(spec: KernelSpec, A, Z, C: np.ndarray, z_sqnorms: np.ndarray | None = None
                 ) -> np.ndarray:
    """K(A, Z) @ C computed over blocks of rows of A; C has shape (rows of Z, k).

    Z may be given already :func:`prepare`d (then it is used as is) with its squared row norms.
    """
    n = A.shape[0]
    out = np.empty((n, C.shape[1]))
    Zp = prepare(Z)
    zn = None
    if spec.name == "rbf":
        zn = sqnorms(Zp) if z_sqnorms is None else z_sqnorms
    b = block_rows_for(Z.shape[0])
    for s in range(0, n, b):
        out[s:s + b] = kernel_block(spec, A[s:s + b], Zp, zn) @ C
    return out


def gram(spec: KernelSpec, X, memory_limit: int | None = None, what: str = "kernel matrix"
         ) -> np.ndarray:
    """The full n×n kernel matrix K(X, X), built blockwise, after the memory check.

    Only the lower block triangle is computed; the upper part is copied (K is symmetric).
    """
    n = X.shape[0]
    reserve(8 * n * n, f"{what} {n}×{n}", memory_limit)
    Xp = prepare(X)
    xn = sqnorms(Xp)
    K = np.empty((n, n))
    b = block_rows_for(n)
    for s in range(0, n, b):
        e = min(n, s + b)
        G = dot_block(Xp[s:e], Xp[:e])
        K[s:e, :e] = _apply(spec, G, xn[s:e], xn[:e])
        K[:s, s:e] = K[s:e, :s].T
        # BLAS need not round the two halves alike: mirror the lower one
        mirror_lower(K[s:e, s:e])
    return K


STRIP_ROWS = 256  # rows of the strips below: a strip's copy stays within the caches


def mirror_lower(D: np.ndarray) -> None:
    """D's strict upper triangle ← its strict lower one transposed, in place (D square), by
    strips of rows: no index arrays (2·10⁶ pairs of them took 0.1-0.4 s at n = 2,000)."""
    m = D.shape[0]
    for a in range(0, m, STRIP_ROWS):
        b = min(m, a + STRIP_ROWS)
        D[a:b, b:] = D[b:, a:b].T
        blk = D[a:b, a:b]
        for i in range(b - a - 1):
            blk[i, i + 1:] = blk[i + 1:, i]


def symmetrize(A: np.ndarray) -> None:
    """A ← (A + Aᵀ)/2 in place (A square), by strips of rows: the same values as
    ``0.5 * (A + A.T)`` without an n × n temporary."""
    m = A.shape[0]
    for a in range(0, m, STRIP_ROWS):
        b = min(m, a + STRIP_ROWS)
        upper, lower = A[a:b, a:], A[a:, a:b]
        avg = upper + lower.T
        avg *= 0.5
        upper[...] = avg
        lower[...] = avg.T


def landmark_rows(Xp, landmarks: np.ndarray):
    """The rows ``landmarks`` of Xp, dense when they take at most BLOCK_BYTES so: a block of
    sparse rows times them is then one dense product (:func:`dot_block`) rather than a sparse
    one with a dense result."""
    L = Xp[landmarks]
    if sp.issparse(L) and L.shape[0] * L.shape[1] * 8 <= BLOCK_BYTES:
        return L.toarray()
    return L


def landmark_gram(spec: KernelSpec, X, rows, zn: np.ndarray | None = None) -> np.ndarray:
    """[K 1]ᵀ[K 1] ((m + 1)², the last row and column the constant's) over the rows of X,
    K = K(X, ``rows``) (m landmark rows, :func:`landmark_rows`; ``zn`` their squared norms
    for rbf), summed over blocks of kernel rows: no n × m matrix held."""
    m = rows.shape[0]
    if zn is None and spec.name == "rbf":
        zn = sqnorms(rows)
    m1 = m + 1
    ns = X.shape[0]
    H = np.zeros((m1, m1))
    bl = block_rows_for(m)
    A = np.empty((min(bl, ns), m1))
    A[:, m] = 1.0
    for s in range(0, ns, bl):
        e = min(ns, s + bl)
        A[:e - s, :m] = kernel_block(spec, X[s:e], rows, zn)
        H += A[:e - s].T @ A[:e - s]
    return H


def nystrom(spec: KernelSpec, Xp, landmarks: np.ndarray, memory_limit: int | None = None,
            extra_column: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(Z, T) of the Nyström factorisation K ≈ ZZᵀ over the rows ``landmarks`` of Xp
    (:func:`prepare`d): with K(L, L) = U S Uᵀ, T = U_r S_r^{-1/2} over the eigenvalues above
    1e-10 of the largest and Z = K(X, L) T (n × r). A function Zβ + b is the kernel expansion
    Σ_j α_j k(·, x_{L_j}) + b with α = Tβ, and αᵀK(L, L)α = ‖β‖²; with every row a landmark
    ZZᵀ = K to rounding. Z is built in blocks of rows: K(X, L) is never held whole.
    ``extra_column``: Z gets one more column, left for the caller to fill."""
    n = Xp.shape[0]
    m = landmarks.size
    reserve(8 * n * m + 3 * 8 * m * m, f"Nyström features {n}×{m}", memory_limit)
    L = landmark_rows(Xp, landmarks)
    zn = sqnorms(L) if spec.name == "rbf" else None
    T = nystrom_factor(spec, L, zn)
    r = T.shape[1]
    Z = np.empty((n, r + 1 if extra_column else r))
    b = block_rows_for(m)
    for s in range(0, n, b):
        Z[s:s + b, :r] = kernel_block(spec, Xp[s:s + b], L, zn) @ T
    return Z, T


def nystrom_factor(spec: KernelSpec, L, zn: np.ndarray | None = None) -> np.ndarray:
    """T = U_r S_r^{-1/2} of the landmark rows L's kernel K(L, L) = U S Uᵀ, over the
    eigenvalues above 1e-10 of the largest (m × r); ``zn``: the rows' squared norms (rbf)."""
    W = kernel_block(spec, L, L, zn)
    W = 0.5 * (W + W.T)
    w, V = np.linalg.eigh(W)
    keep = w > 1e-10 * max(float(w[-1]), 1e-300)
    return V[:, keep] / np.sqrt(w[keep])


# --------------------------------------------------------------------------- landmarks
# The kernel solvers' two forms (--landmarks): the exact n×n kernel, or an expansion over m
# landmark rows (a Nyström factor). auto keeps the exact form up to EXACT_MAX_ROWS rows when
# it fits the memory limit; else LANDMARKS (or every labeled row and half as many more), at
# most what keeps the landmark form within half the limit, and never fewer than LANDMARKS_MIN
EXACT_MAX_ROWS = 20000
LANDMARKS = 2000
LANDMARKS_MIN = 100


def choose_landmarks(y: np.ndarray, m: int, seed: int = 0) -> np.ndarray:
    """The landmark rows (ascending) of a fit with m of them on labels y (0 = unlabeled):
    every labeled row (a seeded sample of them when they are more than m), then a seeded
    uniform sample of the unlabeled rows; every row when m ≥ n."""
    n = y.size
    if m >= n:
        return np.arange(n)
    rng = np.random.default_rng(seed)
    lab = np.flatnonzero(y != 0)
    if lab.size >= m:
        return np.sort(rng.choice(lab, m, replace=False))
    unl = np.flatnonzero(y == 0)
    return np.sort(np.concatenate([lab, rng.choice(unl, m - lab.size, replace=False)]))


def landmark_bytes(n: int, m: int, copies: int = 1) -> int:
    """What a landmark form holds at once on n rows with m landmarks: ``copies`` n × m
    matrices (the features Z, and what the solver makes of them) and three m×m ones (the
    landmarks' kernel, its eigenvectors, the solver's system)."""
    return 8 * copies * n * m + 24 * m * m


def auto_landmarks(n: int, n_labeled: int, memory_limit: int | None, copies: int = 1) -> int:
    """m of landmarks auto on n rows with n_labeled labeled: :data:`LANDMARKS` (or the
    labeled rows and half as many more), at most what keeps :func:`landmark_bytes` within half
    the memory limit."""
    limit = default_memory_limit() if memory_limit is None else memory_limit
    m = min(n, max(LANDMARKS, n_labeled + LANDMARKS // 2))
    a, b = 24.0, 8.0 * copies * n  # the largest m with a·m² + b·m ≤ limit/2
    fit = int((-b + math.sqrt(b * b + 2.0 * a * limit)) / (2.0 * a))
    return max(1, min(m, fit))


def kernel_form(name: str, given, n: int, n_labeled: int, exact_plan: list,
                memory_limit: int | None, copies: int = 1,
                exact_rows: int = EXACT_MAX_ROWS) -> int | None:
    """The landmarks of a fit (--landmarks ``given``), or None for the exact form: 0 the
    exact form; M ≥ 1 min(M, n) landmarks; None (auto) the exact form up to ``exact_rows``
    rows when ``exact_plan`` (check_plan's parts) fits the memory limit, else
    :func:`auto_landmarks` (said); when fewer than :data:`LANDMARKS_MIN` would fit, the exact
    plan's refusal (:func:`check_plan`) is raised."""
    if given is not None:
        return None if int(given) == 0 else min(int(given), n)
    limit = default_memory_limit() if memory_limit is None else memory_limit
    if n <= exact_rows and sum(b for _, b in exact_plan) <= limit:
        return None
    m = auto_landmarks(n, n_labeled, memory_limit, copies)
    if m < min(n, LANDMARKS_MIN):
        check_plan(exact_plan, memory_limit)  # neither form fits: say the exact one's needs
    log.info("%s: %d landmark rows (auto: %s; --landmarks M sets them, 0 the exact form)",
             name, m, f"{n} rows, above the exact form's {exact_rows}"
             if n > exact_rows else "the exact n×n kernel exceeds the memory limit of "
             f"{human_bytes(limit)}")
    return m


SAMPLE_ROWS = 256  # rows sampled for the median-distance width


def sample_rows(m: int, rows: int = SAMPLE_ROWS, seed: int = 0) -> np.ndarray:
    """Sorted indices of ``rows`` of m rows drawn without replacement (all when fewer): the
    sample every data-driven default (kernel width, graph) is judged on."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(m, rows, replace=False)) if m > rows else np.arange(m)


def _sample_distances(X, rows: int, seed: int) -> np.ndarray:
    """Squared distances between ``rows`` rows of X drawn without replacement (all rows when
    there are fewer), as a square matrix."""
    A = X[sample_rows(X.shape[0], rows, seed)]
    sq = sqnorms(A)
    return np.maximum(sq[:, None] + sq[None, :] - 2.0 * dot_block(A, A), 0.0)


def median_sqdist(X, rows: int = SAMPLE_ROWS, seed: int = 0) -> float:
    """Median squared distance between distinct sampled rows (0 when all coincide)."""
    D = _sample_distances(X, rows, seed)
    d = D[~np.eye(D.shape[0], dtype=bool)]
    d = d[d > 0]
    return float(np.median(d)) if d.size else 0.0


def median_gamma(X, rows: int = SAMPLE_ROWS, seed: int = 0) -> float:
    """1 / median squared distance between distinct sampled rows (the rbf kernel is then e⁻¹
    at the median distance: the median heuristic); 1 when all sampled rows coincide."""
    med = median_sqdist(X, rows, seed)
    return 1.0 / med if med > 0 else 1.0


def resolve_gamma(gamma, kernel: str, X) -> tuple[float, str]:
    """(γ, how it was chosen) for the gamma parameter: a number, None (auto: the median
    heuristic for rbf, 1/features for poly and linear) or "features" (LIBSVM's 1/features)."""
    d = max(1, X.shape[1])
    if gamma is None and kernel == "rbf":
        return median_gamma(X), (f"auto: 1/median squared distance between {SAMPLE_ROWS} "
                                 "sampled rows; -g features for LIBSVM's 1/features")
    if gamma is None or gamma == "features":
        return 1.0 / d, f"1/features ({d})"
    return float(gamma), "given"


def rbf_width_check(X, gamma: float, rows: int = SAMPLE_ROWS,
                    seed: int = 0) -> tuple[str | None, float]:
    """Whether ``exp(-γ||x - z||²)`` is degenerate on X, judged on a sample of ``rows`` rows:
    "identity" when even each sampled row's nearest sampled neighbour has kernel value < 0.01
    (median over rows), "constant" when even its farthest has > 0.99; else None. Also returns
    the median-distance width ``1 / median ||x - z||²`` over the sampled pairs (the kernel is
    e⁻¹ at the median distance), the width to suggest. Cost: rows² distances."""
    D = _sample_distances(X, rows, seed)
    if D.shape[0] < 3:
        return None, float("nan")
    off = ~np.eye(D.shape[0], dtype=bool)
    d_off = D[off]
    med = float(np.median(d_off[d_off > 0])) if np.any(d_off > 0) else 0.0
    g_med = 1.0 / med if med > 0 else float("nan")
    Dm = np.where(off, D, np.inf)
    nearest = np.median(np.exp(-gamma * Dm.min(axis=1)))
    farthest = np.median(np.exp(-gamma * np.where(off, D, -np.inf).max(axis=1)))
    if nearest < 0.01:
        return "identity", g_med
    if farthest > 0.99:
        return "constant", g_med
    return None, g_med
