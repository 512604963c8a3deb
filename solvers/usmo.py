"""Positive–unlabeled learning with the double hinge loss: USMO (Sansone et al.
2016).

Data: p labeled positives (label +1) and n unlabeled rows (label 0), class prior π = the
positive fraction of the unlabeled rows. With ``c1 = π/(2λp)`` and ``c2 = 1/(2λn)`` the dual
over the unlabeled variables σ ∈ [0, c2]^n is

    min_σ  D(σ) = 1/2 aᵀKa + Σ_u V(σ_u)   s.t.  Σ_u σ_u = c1·p,   a = [c1·1_p ; −σ]

with ``V(s) = max(−s, s − c2)`` (V-shaped, kink at c2/2), and ``f(x) = Σ_i a_i k(x, x_i) + β``.

Solver: SMO on pairs (σ_i + t, σ_j − t) with the exact minimiser of the 1-D convex piecewise
quadratic (kinks where σ_i or σ_j cross c2/2, ends at the bounds), the pair chosen as the
maximal violating pair under one-sided derivatives (increase: −g_i + V′₊(σ_i), decrease: −g_j +
V′₋(σ_j), g = Ka on the unlabeled rows; σ within KINK_RTOL·c2 of the kink counts as on it); stop
when the violation is ≤ τ. The gradient g is kept for every unlabeled row and updated with two
kernel rows per step, the rows held in an LRU cache bounded in MB (the linear kernel too, unless
the cache holds under two rows: then w is kept explicitly, CSR). Nothing n×n is ever stored. β:
average of ∓1 − g_u over the free variables, or the midpoint of the interval the KKT conditions
allow when none is free.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ssl_svm.solvers import kernels, progress, usmo_dcd
from ssl_svm.solvers.errors import ProblemError
from ssl_svm.solvers.kernels import KernelSpec
from ssl_svm.solvers.models import KernelExpansion, LinearFunctions, Model
from ssl_svm.solvers.params import SOLVER_PARAMS, parse_prior
from ssl_svm.solvers.prior import (
    MAX_ROWS,
    Q_FROM,
    Q_LOW,
    UPPER_CONFIDENCE,
    PriorEstimate,
    estimate_prior,
    sample_rows,
)

log = logging.getLogger("ssl.solver.usmo")

KIND = {"linear": 0, "poly": 1, "rbf": 2}
CHUNK = 2000  # iterations between progress checks
# A σ this close to the kink c2/2 (relative to c2) counts as at the kink when the one-sided
# derivatives are taken. Without it, a σ a few ulps below the kink (the rounding of
# σ_i + σ_j − c2/2 after a step that put its partner on the kink) has increase derivative −1
# although +1 starts within those ulps: a spurious violation of up to 2 whose exact pair step
# is nil in floating point, and the solver stopped there (isolet, raw features, λ = 0.01:
# violation 0.96 after 1,329 steps).
KINK_RTOL = 1e-12
PARALLEL_NNZ = 200_000
# how the linear kernel is solved: coordinate descent (auto), the SMO's explicit w or its
# kernel-row cache
LINEAR_PATHS = ("auto", "dcd", "w", "cache")


# --------------------------------------------------------------------------- numba kernels

# --------------------------------------------------------------------------- driver

@dataclass
class Result:
    sigma: np.ndarray  # unlabeled variables
    g: np.ndarray  # Ka on the unlabeled rows (f without β)
    beta: float
    objective: float  # the dual D(σ), constant term included
    iterations: int
    violation: float
    converged: bool
    c1: float
    c2: float
    w: np.ndarray | None  # linear path: the weight vector (f = x·w + β)
    cache_hits: int = 0
    cache_misses: int = 0
    path: str = "smo"  # smo (pair steps) or dcd (the linear kernel's coordinate descent)
    # dcd: why it stopped short and the bias constraint's relative residual
    # (:class:`ssl_svm.solvers.usmo_dcd.DcdResult`)
    stop: str = ""
    residual: float = 0.0


def compute_beta(sig: np.ndarray, g: np.ndarray, c2: float) -> float:
    """β: mean of −1 − g_u (free, σ_u < c2/2) and 1 − g_u (free, σ_u > c2/2); with no free
    variable, the midpoint of the interval allowed by the bound and kink conditions."""
    half = 0.5 * c2
    kink = np.abs(sig - half) <= KINK_RTOL * c2
    free_lo = (sig > 0) & (sig < half) & ~kink
    free_hi = (sig > half) & (sig < c2) & ~kink
    if free_lo.any() or free_hi.any():
        vals = np.concatenate([-1.0 - g[free_lo], 1.0 - g[free_hi]])
        return float(vals.mean())
    # σ = 0: f ≤ −1 → β ≤ −1 − g; σ = c2: f ≥ 1 → β ≥ 1 − g; σ = c2/2: −1 ≤ f ≤ 1
    upper = np.concatenate([-1.0 - g[sig == 0], 1.0 - g[kink]])
    lower = np.concatenate([1.0 - g[sig == c2], -1.0 - g[kink]])
    hi = upper.min() if upper.size else np.inf
    lo = lower.max() if lower.size else -np.inf
    if np.isfinite(hi) and np.isfinite(lo):
        return float(0.5 * (lo + hi))
    return float(hi if np.isfinite(hi) else lo)


def kkt_violation(sig: np.ndarray, g: np.ndarray, c2: float) -> float:
    """max over pairs of (decrease derivative − increase derivative): ≤ τ means τ-optimal."""
    return float(_nb().select_pair(sig, g, c2)[2])


def usmo(X, y, lam: float, prior: float, spec: KernelSpec, tau: float = 1e-3,
         max_iter: int = 10_000_000, cache_mb: float = 100.0, tag: str = "",
         linear_path: str = "auto") -> Result:
    """Solve the dual for rows X (CSR) with y = +1 (labeled positive) or 0 (unlabeled).

    With the linear kernel, ``linear_path`` 'w' keeps w explicitly and updates g by one pass
    over X per step (no cache; memory O(n + d)); 'cache' goes through the kernel-row cache like
    any other kernel and forms w at the end; 'auto' takes the cache whenever ``cache_mb``
    holds two rows or more, else the w path. A step of either costs at most two passes over
    X (the cache path only for the rows it misses), so the cache is never slower however small:
    mnist, 50K rows, 1000 MB (5 % of the rows): 253 s against 538 s; a9a, 48,742 rows,
    100 MB (0.5 %): 62.8 s against 76.6 s, same solution.
    """
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sort_indices()
    P = np.flatnonzero(y > 0)
    U = np.flatnonzero(y == 0)
    p, n = P.size, U.size
    if p == 0 or n < 2:
        raise ProblemError(f"usmo needs labeled positives and at least 2 unlabeled rows "
                           f"(have {p} and {n})")
    c1 = prior / (2.0 * lam * p)
    c2 = 1.0 / (2.0 * lam * n)
    if linear_path not in LINEAR_PATHS:
        raise ValueError(f"linear_path must be one of {', '.join(LINEAR_PATHS)} "
                         f"(got {linear_path!r})")
    # auto: coordinate descent, far faster on many rows (mnist, 20,000 rows: 0.3 s against
    # the SMO's 62 s; text, 2,739 rows: 0.01-0.03 s against 0.5-1 s) and within a second of
    # the SMO on the small dense sets of Table III
    if spec.name == "linear" and linear_path in ("auto", "dcd"):
        return _usmo_dcd(X, P, U, c1, c2, tau, max_iter, tag)
    sig = np.full(n, c1 * p / n)  # feasible: c1·p/n = π·c2 ≤ c2
    t0 = time.perf_counter()
    Xu = X[U]
    # g = c1 K_UP 1 − K_UU σ and h = K_UP 1 (the positives' constant part): one pass
    if spec.name == "linear":
        sp_ = np.asarray(X[P].sum(axis=0)).ravel()
        su = np.asarray(Xu.sum(axis=0)).ravel()
        h = Xu @ sp_
        kuu1 = Xu @ su
        spp = float(sp_ @ sp_)
    else:
        Xp = kernels.prepare(X[P])
        h = kernels.kernel_times(spec, Xu, Xp, np.ones((p, 1)))[:, 0]
        kuu1 = kernels.kernel_times(spec, Xu, kernels.prepare(Xu), np.ones((n, 1)))[:, 0]
        spp = float(kernels.kernel_times(spec, Xp, Xp, np.ones((p, 1)))[:, 0].sum())
    g = c1 * h - sig[0] * kuu1
    sqn = kernels.sqnorms(X)
    kind = KIND[spec.name]
    ksq = sqn[U]
    if spec.name == "linear":
        kdiag = ksq.copy()
    elif spec.name == "poly":
        kdiag = (spec.gamma * ksq + spec.coef0) ** spec.degree
    else:
        kdiag = np.ones(n)
    log.info("%susmo: %d positives, %d unlabeled, prior %.6g, c1 %.6g, c2 %.6g, start-up "
             "%.2f s", tag, p, n, prior, c1, c2, time.perf_counter() - t0)
    indptr = X.indptr.astype(np.int64)
    indices = X.indices.astype(np.int64)
    data = X.data
    urows = U.astype(np.int64)
    buf = np.zeros(X.shape[1])
    w = None
    it_total = 0
    viol = np.inf
    stats = np.zeros(2, np.int64)
    fit = int(cache_mb * 2**20 // (8 * n))  # kernel rows of n values within cache_mb
    slots = max(2, min(n, fit))
    use_w = spec.name == "linear" and (linear_path == "w" or fit < 2)
    if use_w:
        w = c1 * sp_ - sig[0] * su
        dw = np.zeros(X.shape[1])
        krow = np.empty(n)
    else:
        rows_mem = np.empty((slots, n))
        slot_of = np.full(n, -1, np.int64)
        owner = np.full(slots, -1, np.int64)
        stamp = np.zeros(slots, np.int64)
        clock = 0
        log.info("%skernel row cache: %d rows of %d (%s)", tag, slots, n,
                 kernels.human_bytes(rows_mem.nbytes))
    converged = False
    while it_total < max_iter:
        step = min(CHUNK, max_iter - it_total)
        if w is not None:
            done, viol = _nb()._smo_linear(sig, g, kdiag, c2, tau, step, indptr, indices,
                                           data, urows, w, dw, krow)
        else:
            done, viol, clock = _nb()._smo_kernel(sig, g, kdiag, c2, tau, step, slot_of, owner,
                                                  stamp, rows_mem, clock, indptr, indices, data,
                                                  sqn, urows, kind, spec.gamma, spec.coef0,
                                                  spec.degree, buf, stats)
        it_total += done
        obj = _dual(sig, g, h, c1, c2, spp)
        progress.beat(log, "usmo: %d steps, violation %.3g (τ = %g)", it_total, viol, tau)
        hits = ""
        if w is None and stats.sum():
            hits = f", cache hit rate {100.0 * stats[0] / stats.sum():.1f} %"
        log.info("%susmo iteration %d: max violation %.3g, objective %.10g%s, %.2f s", tag,
                 it_total, viol, obj, hits, time.perf_counter() - t0)
        if done < step:
            converged = viol <= tau
            break
    if w is not None:  # refresh g from w: no drift from the incremental updates
        g = np.zeros(n)
        _nb().row_dots(indptr, indices, data, urows, w, g, False)
    elif spec.name == "linear":  # the cached path: w = c1 Σ_P x − Σ_U σ_u x_u
        w = c1 * sp_ - np.asarray(Xu.T @ sig).ravel()
    beta = compute_beta(sig, g, c2)
    obj = _dual(sig, g, h, c1, c2, spp)
    return Result(sig, g, beta, obj, it_total, float(viol), converged, c1, c2, w,
                  int(stats[0]), int(stats[1]))


def _usmo_dcd(X, P, U, c1, c2, tau, max_passes, tag) -> Result:
    """The linear kernel by dual coordinate descent (:mod:`ssl_svm.solvers.usmo_dcd`)."""

    log.info("%susmo: %d positives, %d unlabeled, c1 %.6g, c2 %.6g, linear kernel by dual "
             "coordinate descent", tag, P.size, U.size, c1, c2)
    r = usmo_dcd.solve(X, P, U, c1, c2, tau, max_passes, tag)
    sp_ = np.asarray(X[P].sum(axis=0)).ravel()
    h = usmo_dcd.row_values(X, U.astype(np.int64), sp_)
    obj = _dual(r.sigma, r.g, h, c1, c2, float(sp_ @ sp_))
    beta = compute_beta(r.sigma, r.g, c2)
    return Result(r.sigma, r.g, beta, obj, r.passes, r.violation, r.converged, c1, c2, r.w,
                  path="dcd", stop=r.stop, residual=r.residual)


def _dual(sig, g, h, c1, c2, spp) -> float:
    """D(σ) = 1/2 aᵀKa + Σ V(σ_u), with 1/2 aᵀKa = 1/2 c1² 1ᵀK_PP1 − 1/2 c1 σᵀh − 1/2 σᵀg."""
    quad = 0.5 * c1 * c1 * spp - 0.5 * c1 * float(sig @ h) - 0.5 * float(sig @ g)
    return quad + float(np.sum(np.maximum(-sig, sig - c2)))


# --------------------------------------------------------------------------- registry glue

def estimate_and_report_prior(X, y) -> PriorEstimate:
    """--prior auto: :func:`solvers.prior.estimate_prior`, its figures logged, and the
    warning :attr:`PriorEstimate.warning` picks: that the estimate is an upper bound (scores
    that do not separate), else the interval when it is too wide to trust (both directions,
    by how much), else that it is likely too high (a ratio still falling at the top)."""
    t0 = time.perf_counter()
    log.info("usmo: estimating the class prior π (--prior auto: cross-fitted linear scores "
             "of %s)", f"the {y.size} rows" if y.size <= MAX_ROWS else
             f"a seeded sample of {MAX_ROWS} of the {y.size} rows")
    e = estimate_prior(X, y)
    log.info("usmo: estimated prior π = %s: mixture proportion (Scott 2015) from %s scores "
             "(held-out AUC %.2f) at the top %.0f %% of the labeled positives, %d fits, %.2f s; "
             "π ≤ %.2f with %.0f %% confidence (DKW bound on the held-out scores)",
             e.text(), e.scorer, e.auc, 100 * e.at, e.fits, time.perf_counter() - t0,
             e.upper, 100 * UPPER_CONFIDENCE)
    kind = e.warning
    if kind == "upper bound":
        log.warning("the class prior estimate %.2f (%.0f %% interval %.2f–%.2f) is an upper "
                    "bound only: the scores hardly separate the labeled positives from the "
                    "unlabeled rows (held-out AUC %.2f), so π lies below it, or above it by "
                    "at most the interval's noise (π ≤ %.2f), and either nearly every "
                    "unlabeled row is positive or the features do not tell the classes apart; "
                    "give --prior if you know it", e.value, 100 * e.level, e.low, e.high,
                    e.auc, e.high)
    elif kind == "uncertain":
        log.warning("the class prior is uncertain: π lies between %.2f and %.2f (%.0f %% "
                    "interval, %d labeled positives), so the estimate %.2f may be up to %.2f "
                    "too high or %.2f too low; give --prior if you know it, label more "
                    "positives, or try the interval's values: ssl-tune -a usmo -G prior=auto",
                    e.low, e.high, 100 * e.level, int(np.sum(y > 0)), e.value,
                    e.value - e.low, e.high - e.value)
    elif kind == "too high":
        log.warning("the class prior estimate %.2f (%.0f %% interval %.2f–%.2f) is likely too "
                    "high: the ratio of unlabeled to labeled-positive rows still falls among "
                    "the top-scoring rows (by %.2f from the top %.0f %% to the top %.0f %% of "
                    "the labeled positives), so negatives score among the highest and π may "
                    "lie below the interval; give --prior if you know it", e.value,
                    100 * e.level, e.low, e.high, e.fall, 100 * Q_FROM, 100 * Q_LOW)
    return e


PARAMS = SOLVER_PARAMS["usmo"]
# λ auto: this path, largest first, on a seeded sample of at most LAMBDA_ROWS rows (linear
# kernel; LAMBDA_ROWS_KERNEL for the others, whose fits cost n² per pass), LAMBDA_FOLDS-fold
LAMBDA_PATH = (0.1, 0.01, 1e-3, 1e-4, 1e-5, 1e-6)
LAMBDA_ROWS = 20_000
LAMBDA_ROWS_KERNEL = 2_000
LAMBDA_FOLDS = 3


def decision_values(r: Result, X, P, U, spec: KernelSpec, Xt) -> np.ndarray:
    """f(x) on the rows Xt of a fit ``r`` to the rows P (positive) and U (unlabeled) of X."""
    if r.w is not None:
        return np.asarray(Xt @ r.w).ravel() + r.beta
    rows = sp.vstack([X[P], X[U]], format="csr")
    coef = np.concatenate([np.full(P.size, r.c1), -r.sigma])[:, None]
    return kernels.kernel_times(spec, sp.csr_matrix(Xt), kernels.prepare(rows), coef)[:, 0] \
        + r.beta


def _lambda_folds(Xs, ys, folds, prior, spec, tau, max_iter, cache_mb, pred) -> tuple:
    """pred[j, held-out rows] = the sign of the fit at LAMBDA_PATH[j] on the other folds;
    returns (fits, children). The fits are independent: in children forked from a command
    where it may (:class:`ssl_svm.solvers.host.forks.Batch`; after :func:`load_kernels` here,
    so that no child loads the compiled code again), the same values as one after
    another."""
    from ssl_svm.solvers.host import forks

    parts = []
    for f in range(LAMBDA_FOLDS):
        tr, te = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
        ytr = ys[tr]
        if np.sum(ytr > 0) > 0 and np.sum(ytr == 0) >= 2:
            parts.append((tr, te))
    # λ by λ, the folds within: a child takes every other task, so the smallest λs' fits,
    # most of the time (a9a: 95 % in those of 1e-5 and 1e-6), go to both children, two of
    # one λ's three to one and two of the next's to the other
    tasks = [(tr, te, j) for j in range(len(LAMBDA_PATH)) for tr, te in parts]

    def one(t):
        tr, te, j = tasks[t]
        Xtr, ytr = Xs[tr], ys[tr]
        r = usmo(Xtr, ytr, LAMBDA_PATH[j], prior, spec, tau, max_iter, cache_mb)
        return (decision_values(r, Xtr, np.flatnonzero(ytr > 0), np.flatnonzero(ytr == 0),
                                spec, Xs[te]) > 0).astype(np.float64)

    if tasks and forks.processes(len(tasks)):
        load_kernels(Xs, ys, spec, tau, cache_mb)
    batch = forks.Batch(one, range(len(tasks)))
    children = len(batch.children)
    for (_, te, j), v in zip(tasks, batch.results()):
        pred[j, te] = v > 0
    return len(tasks), children


def load_kernels(X, y, spec: KernelSpec, tau: float, cache_mb: float) -> None:
    """Load the compiled code a fit of :func:`usmo` on rows X, y runs (numba's start and its
    cached functions' loads: about 0.16 s, more than a small fit) by a fit of two of its
    labeled positives and two of its unlabeled rows, thrown away: before forking children
    that would each load it again. Nothing when the rows have too few of either."""
    P, U = np.flatnonzero(y > 0)[:2], np.flatnonzero(y == 0)[:2]
    if P.size == 0 or U.size < 2:
        return
    rows = np.sort(np.concatenate([P, U]))
    with progress.quiet_solvers():
        usmo(X[rows], y[rows], 1.0, 0.5, spec, tau, 100, cache_mb)


def choose_lambda(X, y, prior: float, spec: KernelSpec, tau: float, max_iter: int,
                  cache_mb: float, cap: int | None = None) -> tuple[float, float]:
    """(λ, its score) for ``lambda`` auto: the best of LAMBDA_PATH by Lee & Liu's PU metric
    recall² / P(ŷ = +1) (recall on the held-out labeled positives, P over all held-out rows),
    pooled over LAMBDA_FOLDS folds stratified by label; among equals the middle one. The
    metric needs no negatives: under the SCAR assumption it is (precision · recall) / π_all.
    Beyond ``cap`` rows (default LAMBDA_ROWS, LAMBDA_ROWS_KERNEL for a nonlinear kernel; the
    landmark form's dense features take the latter too) on a seeded sample of ``cap`` rows
    holding a quarter of labeled positives (or all there are, if more of a proportional
    share), and P then over the held-out unlabeled rows only, which SCAR makes the
    population: a proportional sample of 2,000 of 10⁶ rows with 1,000 labeled positives held
    2 of them, and their recall chose λ by chance."""
    from ssl_svm.solvers.crossval import stratified_folds

    t0 = time.perf_counter()
    if cap is None:
        cap = LAMBDA_ROWS if spec.name == "linear" else LAMBDA_ROWS_KERNEL
    sampled = y.size > cap
    rows = sample_rows(y, cap, 0, least=max(LAMBDA_FOLDS, cap // 4)) if sampled \
        else np.arange(y.size)
    Xs = sp.csr_matrix(X[rows])
    Xs = Xs[:, np.unique(Xs.indices)]  # the columns the sample uses: the same kernel values
    ys = y[rows]
    folds = stratified_folds(np.where(ys > 0, 1.0, -1.0), LAMBDA_FOLDS, 0)
    pred = np.zeros((len(LAMBDA_PATH), ys.size), bool)
    with progress.quiet_solvers():
        fits, children = _lambda_folds(Xs, ys, folds, prior, spec, tau, max_iter, cache_mb,
                                       pred)
    if children:
        log.debug("usmo: the λ search's %d fits in %d processes forked from this one", fits,
                  children)
    pos = ys > 0
    recall = pred[:, pos].mean(axis=1)
    rate = pred[:, ~pos].mean(axis=1) if sampled else pred.mean(axis=1)
    score = np.where(rate > 0, recall * recall / np.where(rate > 0, rate, 1.0), 0.0)
    # all rows positive scores 1 (recall 1 over a rate of 1) and all negative 0 whatever the
    # data: a λ that puts every held-out row in one class loses to any that separates
    one_class = (rate == 0) | (rate == 1)
    score = np.where(one_class, -1.0, score) if not one_class.all() else score
    tied = np.flatnonzero(score >= score.max() - 1e-12)
    j = int(tied[(tied.size - 1) // 2])
    log.info("usmo: λ = %g (auto: %d-fold PU metric recall²/P(ŷ=1) = %.3g on %d rows%s, best "
             "of %s; %.2f s)", LAMBDA_PATH[j], LAMBDA_FOLDS, score[j], ys.size,
             f", a sample of {y.size}" if ys.size < y.size else "",
             ", ".join(f"{v:g}" for v in LAMBDA_PATH), time.perf_counter() - t0)
    return float(LAMBDA_PATH[j]), float(score[j])


def dense_csr(Z: np.ndarray) -> sp.csr_matrix:
    """The dense n×r matrix Z as a CSR matrix that shares Z's values (every entry stored,
    column indices 0…r−1 in each row; int32 indices while they fit: 12 bytes a value where a
    conversion takes 20), for the CSR routines of the linear kernel."""
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    n, r = Z.shape
    idx = np.int32 if n * r < 2**31 - 1 else np.int64
    M = sp.csr_matrix((Z.reshape(-1), np.tile(np.arange(r, dtype=idx), n),
                       np.arange(0, n * r + 1, max(r, 1), dtype=idx)[:n + 1]),
                      shape=(n, r), copy=False)
    M.has_sorted_indices = True
    return M


@dataclass
class LandmarkFeatures:
    """The landmark form of a nonlinear kernel: the rows ``landmarks`` of the training rows,
    T with K(Z, Z) = U S Uᵀ, T = U_r S_r^{-1/2}, and the features F = K(X, Z)·T (CSR over
    dense values), on which the kernel problem restricted to span{k(·, z_j)} is the linear
    one: a weight vector w there is the expansion α = T·w over the landmarks."""
    landmarks: np.ndarray
    T: np.ndarray
    F: sp.csr_matrix


def landmark_features(X, spec: KernelSpec, m: int, memory_limit=None) -> LandmarkFeatures:
    """:class:`LandmarkFeatures` over m landmark rows of X (a seeded uniform sample: the
    labeled positives are not favoured, the unlabeled rows hold both classes)."""
    t0 = time.perf_counter()
    landmarks = kernels.choose_landmarks(np.zeros(X.shape[0]), m, 0)
    Z, T = kernels.nystrom(spec, kernels.prepare(X), landmarks, memory_limit)
    log.info("usmo: landmark form: %d landmark rows, Nyström features %d×%d (%s), %.2f s",
             landmarks.size, Z.shape[0], Z.shape[1], kernels.human_bytes(12 * Z.size),
             time.perf_counter() - t0)
    return LandmarkFeatures(landmarks, T, dense_csr(Z))


# the exact kernel form's SMO costs about n² kernel values a pass; above this many rows a
# nonlinear kernel takes the landmark form (--landmarks auto): on 20,000 rows of the rolls
# both take about 12 s, on 5,000 the exact form 5 s against 13 s
EXACT_ROWS = kernels.EXACT_MAX_ROWS


def fit_usmo(X, y, cost, params, negatives_as_unlabeled=False, max_memory=None):
    """Train on +1 (labeled positive) and 0 (unlabeled) rows; see the module docstring. A
    nonlinear kernel on more than :data:`EXACT_ROWS` rows (or with --landmarks M) is fitted
    on :func:`landmark_features`: the linear problem there is the kernel problem over the
    landmarks' span (the exact one when every row is a landmark)."""
    t0 = time.perf_counter()
    X = sp.csr_matrix(X)
    y = np.asarray(y, dtype=np.float64).copy()
    if negatives_as_unlabeled:
        y[y < 0] = 0.0
    bad = np.flatnonzero((y != 0) & (y != 1))
    if bad.size:
        raise ProblemError(f"usmo takes labels +1 (labeled positive) and 0 (unlabeled); "
                           f"found {y[bad[0]]:g} (use --negatives-as-unlabeled to treat -1 "
                           "rows as unlabeled)")
    if cost is not None and np.any(np.asarray(cost) != 1.0):
        log.warning("usmo does not use per-row cost: factors; they are ignored")
    gamma, chosen = kernels.resolve_gamma(params["gamma"], params["kernel"], X)
    if chosen != "given" and params["kernel"] != "linear":
        log.info("usmo: kernel γ = %.6g (%s)", gamma, chosen)
    spec = KernelSpec(params["kernel"], float(gamma), int(params["degree"]),
                      float(params["coef0"]))
    lf = None
    if spec.name != "linear":
        m = kernels.kernel_form("usmo", params.get("landmarks"), y.size, int(np.sum(y > 0)),
                                [], max_memory, copies=2, exact_rows=EXACT_ROWS)
        if m is not None:
            lf = landmark_features(X, spec, m, max_memory)
    # what the solver sees: the landmark form is the linear problem on its features
    Xs, fspec = (X, spec) if lf is None else (lf.F, KernelSpec("linear"))
    prior = parse_prior(params["prior"])
    estimate = None
    if prior is None:
        estimate = estimate_and_report_prior(Xs, y)
        prior = estimate.value
    lam = params["lambda"]
    if lam is None:
        lam, _ = choose_lambda(Xs, y, prior, fspec, params["epsilon"], params["max_iter"],
                               params["cache_mb"], None if lf is None else LAMBDA_ROWS_KERNEL)
    r = usmo(Xs, y, lam, prior, fspec, params["epsilon"], params["max_iter"],
             params["cache_mb"])
    # the linear kernel's dual coordinate descent counts passes over the unlabeled rows, and
    # stops when its solves stall, not on a nil pair step: its own words
    dcd = r.path == "dcd"
    steps = "passes over the unlabeled rows" if dcd else "pair steps"
    # features on very different scales are what stalls the coordinate descent on raw data
    scale = _scale_advice(X) if dcd and lf is None and not r.converged else ""
    if not r.converged and r.iterations >= params["max_iter"]:
        log.warning("usmo stopped at its iteration limit (%d %s) with violation %.3g > τ = %g"
                    "%s", r.iterations, steps, r.violation, params["epsilon"],
                    f": {scale}" if scale else "")
    elif not r.converged and dcd and r.stop == "updates":
        log.warning("usmo (%s, dual coordinate descent) stopped after %d updates of the "
                    "bias's multiplier with the constraint Σσ = c1·p still off by %.2g of c1·p "
                    "(not τ-optimal); each σ lies in [0, c2], c2 = 1/(2λn) = %.3g: %s",
                    "linear" if lf is None else "landmark features", usmo_dcd.OUTER_STEPS,
                    r.residual, r.c2, (f"{scale}; or " if scale else "")
                    + _lambda_advice(params, lam, "smaller"))
    elif not r.converged and dcd:
        log.warning("usmo (%s, dual coordinate descent) stopped after %d passes over the "
                    "unlabeled rows: %d solves in a row used their %d passes without reaching "
                    "τ, violation %.3g > τ = %g (not τ-optimal); it crawls when λ is small (c2 "
                    "= 1/(2λn) large): %s",
                    "linear" if lf is None else "landmark features", r.iterations,
                    usmo_dcd.STALLED, usmo_dcd.INNER_PASSES, r.violation, params["epsilon"],
                    (f"{scale}; or " if scale else "") + _lambda_advice(params, lam, "larger"))
    elif not r.converged:
        log.warning("usmo stopped after %d pair steps: the maximal violating pair's exact step "
                    "is nil in floating point, violation %.3g > τ = %g (not τ-optimal)",
                    r.iterations, r.violation, params["epsilon"])
    log.info("usmo: objective %.10g after %d %s (max violation %.3g), β %.6g",
             r.objective, r.iterations, steps, r.violation, r.beta)
    P = np.flatnonzero(y > 0)
    U = np.flatnonzero(y == 0)
    if lf is not None:
        function = KernelExpansion(spec, sp.csr_matrix(X[lf.landmarks]),
                                   (lf.T @ r.w)[:, None], np.array([r.beta]))
    elif r.w is not None:
        function = LinearFunctions(r.w[:, None], np.array([r.beta]))
    else:
        keep = r.sigma != 0
        rows = sp.vstack([X[P], X[U[keep]]], format="csr")
        coef = np.concatenate([np.full(P.size, r.c1), -r.sigma[keep]])[:, None]
        function = KernelExpansion(spec, rows, coef, np.array([r.beta]))
    model = Model("usmo", [1, -1], X.shape[1], function,
                  params={p.name: params[p.name] for p in PARAMS})
    low, high = (prior, prior) if estimate is None else (estimate.low, estimate.high)
    model.stats = {"lambda": [lam], "prior": [prior],
                   "prior_estimated": [float(estimate is not None)],
                   "prior_low": [low], "prior_high": [high],
                   "prior_upper": [prior if estimate is None else estimate.upper],
                   "objective": [r.objective],
                   "iterations": [r.iterations], "max_violation": [r.violation],
                   "n_positive": [int(P.size)], "n_unlabeled": [int(U.size)],
                   "train_time": [time.perf_counter() - t0]}
    if lf is not None:
        model.stats["landmarks"] = [int(lf.landmarks.size)]
    elif r.w is None:
        model.stats["cache_hits"] = [r.cache_hits]
        model.stats["cache_misses"] = [r.cache_misses]
    F = np.zeros((y.size, 1))
    F[U, 0] = r.g + r.beta
    F[P, 0] = model.decision_function(X[P])[:, 0]
    model.train_values = F
    if not np.any(F[:, 0] > 0):
        log.warning("usmo predicts no positive row at λ = %g with π = %.4g (every training "
                    "row has f ≤ 0): %s", lam, prior,
                    "; ".join(one_class_remedies(False, params, lam, prior, estimate,
                                                 y.size)))
    elif np.all(F[U, 0] > 0):
        log.warning("usmo predicts every unlabeled row positive at λ = %g with π = %.4g: %s",
                    lam, prior, "; ".join(one_class_remedies(True, params, lam, prior,
                                                             estimate, y.size)))
    return model




def _scale_advice(X) -> str:
    """'' or, when the columns of X span ranges up to more than the graph metric's
    RANGE_RATIO times the median one (:func:`kernels.range_spread`), the advice to scale
    them: the dual's conditioning grows with that ratio squared and coordinate descent crawls
    (1,000 rows of bank-marketing, ranges up to 47,000× the median: 30,000 passes and
    violation 38 raw; τ-optimal after 1,603 passes in 0.5 s with every column scaled to
    [0, 1])."""
    from ssl_svm.solvers.graph import RANGE_RATIO

    _, ratio = kernels.range_spread(X)
    if ratio <= RANGE_RATIO:
        return ""
    return (f"the columns' ranges reach {ratio:.0f}× the median one: scale the features "
            "first (each column to [0, 1], as LIBSVM's svm-scale), on which it converges "
            "sooner")


def _lambda_advice(params: dict, lam: float, direction: str) -> str:
    """What to do about λ when the coordinate descent stopped short: a ``direction`` (larger
    or smaller) -W; '-W auto' only when λ was given (with λ auto it is what ran)."""
    if params["lambda"] is None:
        return (f"λ = {lam:g} was chosen on a sample (-W auto): give a {direction} -W, e.g. "
                f"{lam * (10.0 if direction == 'larger' else 0.1):g}")
    return f"a {direction} -W, or -W auto, converges sooner"


def one_class_remedies(all_positive: bool, params: dict, lam: float, prior: float,
                       estimate, n: int) -> list[str]:
    """What may help a fit that put every row in one class (``all_positive``: every unlabeled
    row positive; else no row positive), for this run's settings only: a λ given that a
    search might lower, a prior given or estimated that its interval would move, and for the
    linear kernel a kernel (the classes may not be linearly separable; with λ auto the search
    already found no λ that separates them linearly)."""
    out = []
    if params["kernel"] == "linear":
        cost = "" if n <= EXACT_ROWS else (
            f" (on {n} rows it takes the landmark form: {kernels.LANDMARKS} landmark rows "
            "by default, --landmarks M for more)")
        out.append("the classes may not be linearly separable in these features: rerun with "
                   f"-t rbf, the kernel form (λ auto again){cost}")
    if params["lambda"] is not None:
        out.append(f"λ = {lam:g} was given: leave it auto (-W auto) to search it" +
                   ("" if all_positive else ", or give a smaller one"))
    if estimate is not None:
        lo, hi = estimate.low, estimate.high
        if all_positive and lo < prior:
            out.append(f"the prior {prior:.4g} is an estimate whose {100 * estimate.level:.0f} "
                       f"% interval reaches down to {lo:.2g}: try --prior {lo:.2g}, or give "
                       "--prior if you know it")
        elif not all_positive and hi > prior:
            out.append(f"the prior {prior:.4g} is an estimate whose {100 * estimate.level:.0f} "
                       f"% interval reaches up to {hi:.2g}: try --prior {hi:.2g}, or give "
                       "--prior if you know it")
        else:
            out.append("the prior is an estimate: give --prior if you know it")
    else:
        out.append(f"the prior π = {prior:.4g} was given: it may be too "
                   f"{'large' if all_positive else 'small'} for these data")
    return out


def _nb():
    """The compiled kernels (:mod:`ssl_svm.solvers.usmo_numba`), imported on first use."""
    from ssl_svm.solvers import usmo_numba

    return usmo_numba
