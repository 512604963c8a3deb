"""USMO's problem with the linear kernel by dual coordinate descent (LIBLINEAR's manner).

The primal of USMO's dual (see :mod:`ssl_svm.solvers.usmo`) for f(x) = w·x + b is

    J(w, b) = 1/2 ‖w‖² − c1 Σ_P f(x_i) + c2 Σ_U ℓ(f(x_u)),   ℓ(f) = max(0, (1 + f)/2, f),

ℓ being the double hinge of the unlabeled rows taken as negatives (½ max(0, 1 + f) + ½
max(0, f − 1)); its conjugate gives σ_u ∈ [0, c2] and V(σ) = max(−σ, σ − c2), and
w = c1 Σ_P x_i − Σ_U σ_u x_u. For a fixed b the problem in σ has no equality constraint:

    D_b(σ) = 1/2 ‖w(σ)‖² + Σ_U V(σ_u) − b Σ_U σ_u,   ∂D_b/∂σ_u = −f(x_u) + V′(σ_u),

which coordinate descent solves one σ_u at a time, exactly (a 1-D quadratic with one kink),
at the cost of row u's stored values (Hsieh et al. 2008, with their shrinking). The bias's
constraint Σσ = c1·p is kept by an augmented Lagrangian: the coordinate steps minimise
D(σ) + μ·r + ρ/2·r² with r = Σσ − c1·p, whose bias b = −(μ + ρ·r) moves with every step, and
μ ← μ + ρ·r after each solve (two or three solves on large data). A solve's last point has
its small r put right on the free variables (derivative ≈ 0), and it is taken when its full
optimality violation (USMO's pair condition, b-free) is ≤ τ.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

log = logging.getLogger("ssl.solver.usmo")

INNER_PASSES = 1000  # passes of one solve at fixed b (LIBLINEAR's limit)
OUTER_STEPS = 100  # multiplier updates
STALLED = 30  # solves in a row at INNER_PASSES: stop there (not converged)
# xorshift seed of the visiting order: the same bytes every run
SEED = 0x9E3779B97F4A7C15


def row_values(X: sp.csr_matrix, urows: np.ndarray, w: np.ndarray) -> np.ndarray:
    """x_u·w for the rows urows of X (each row's sum in its stored order: the same bytes on
    any number of threads)."""
    out = np.empty(urows.size)
    _nb().row_dots(X.indptr, X.indices, X.data, urows, w, out, False)
    return out


@dataclass
class DcdResult:
    sigma: np.ndarray
    w: np.ndarray
    g: np.ndarray  # x_u·w on the unlabeled rows (f without β)
    b: float  # the multiplier's bias (β is taken by the KKT rule afterwards, as the SMO's)
    passes: int
    steps: int
    solves: int
    violation: float
    converged: bool
    # why it stopped short: "stalled" (STALLED solves in a row at INNER_PASSES), "updates"
    # (OUTER_STEPS multiplier updates without Σσ put right), "passes" (max_passes); "" if not
    stop: str = ""
    residual: float = 0.0  # |Σσ − c1·p| / (c1·p) of the point returned


@dataclass
class _Point:
    b: float
    r: float  # Σσ − c1·p
    sig: np.ndarray
    w: np.ndarray
    g: np.ndarray


def _repair(X, urows, pt: _Point, c2: float, tau: float, max_norm: float) -> _Point | None:
    """The point with Σσ put right by moving the free σ_u (derivative ≈ 0) toward their
    next corner in proportion to their room, or None when they have too little room or the
    repaired point's violation would stay above tau."""
    half = 0.5 * c2
    s = pt.sig
    free = (s > 0) & (s < c2) & (s != half)
    if pt.r < 0:  # raise: room up to the kink (below it) or c2 (above)
        room = np.where(s < half, half - s, c2 - s)
    else:
        room = np.where(s < half, s, s - half)
    room = np.where(free, room, 0.0)
    total = float(np.sum(room))
    if total < abs(pt.r):
        return None
    d = (-pt.r / total) * room  # signed: −r in all
    dw = np.zeros_like(pt.w)
    _nb()._add_rows(X.indptr, X.indices, X.data, urows, -d, dw)
    # |Δg_u| ≤ ‖x_u‖·‖Δw‖: the pair violation moves by at most twice max ‖x_u‖·‖Δw‖. Within
    # tau that way, the point is taken without a pass over the rows (the caller refreshes g);
    # a repair that may move it by more than 10·tau is not tried
    move = 2.0 * max_norm * float(np.linalg.norm(dw))
    if violation(s, pt.g, c2) + move <= tau:
        return _Point(pt.b, 0.0, s + d, pt.w + dw, pt.g)
    if move > 10.0 * tau:
        return None
    return _Point(pt.b, 0.0, s + d, pt.w + dw, pt.g + row_values(X, urows, dw))


def solve(X: sp.csr_matrix, P: np.ndarray, U: np.ndarray, c1: float, c2: float,
          tau: float, max_passes: int, tag: str = "") -> DcdResult:
    """Minimise USMO's dual for the linear kernel; X CSR with sorted indices (float64)."""
    t0 = time.perf_counter()
    n, p = U.size, P.size
    target = c1 * p
    urows = U.astype(np.int64)
    qd = np.empty(n)
    _nb()._row_sqnorms(X.indptr, X.data, urows, qd)
    max_norm = float(np.sqrt(qd.max()))
    # ρ of the size of ‖x_u‖²: the bias moves about as freely as a weight (LIBLINEAR's -B 1
    # on rows of that norm), and a change of b by δ moves Σσ by about δ·(free rows)/ρ, so
    # the multiplier's error shrinks by that factor every solve
    rho = float(np.mean(qd)) if qd.any() else 1.0
    sig = np.full(n, target / n)  # π·c2: feasible
    w = c1 * np.asarray(X[P].sum(axis=0)).ravel()
    _nb()._add_rows(X.indptr, X.indices, X.data, urows, -sig, w)
    mu = 0.0
    index = np.empty(n, np.int64)
    rng = np.array([SEED], np.uint64)
    eps = 0.5 * tau  # the pair condition adds two coordinates' violations
    passes = steps = solves = 0
    best = None
    viol = np.inf
    stalled = 0
    b = 0.0
    while solves < OUTER_STEPS and passes < max_passes:
        r = float(np.sum(sig) - target)
        it, st, _, r = _nb()._solve_al(X.indptr, X.indices, X.data, urows, qd, sig, w, mu, rho,
                                       r, c2, eps, min(INNER_PASSES, max_passes - passes),
                                       index, rng)
        passes += it
        steps += st
        solves += 1
        stalled = stalled + 1 if it >= INNER_PASSES else 0
        r = float(np.sum(sig) - target)
        b = -(mu + rho * r)
        log.debug("%susmo dcd: μ %.12g, b %.12g, Σσ − c1·p %.3g, %d passes", tag, mu, b, r, it)
        pt = _Point(b, r, sig, w, row_values(X, urows, w))
        cand = pt if r == 0.0 else _repair(X, urows, pt, c2, tau, max_norm)
        if cand is not None:
            v = violation(cand.sig, cand.g, c2)
            if v < viol:
                best, viol = _Point(cand.b, 0.0, cand.sig.copy(), cand.w.copy(), cand.g), v
            if viol <= tau:
                break
        if stalled >= STALLED:  # coordinate descent crawls at this τ (dense rows, large c2)
            break
        mu += rho * r
    if best is None:  # no point within the limits: the last, its sum not put right
        best = _Point(b, 0.0, sig, w, None)
    # the repaired point's g is exact in arithmetic only: refresh it from w
    g_out = row_values(X, urows, best.w)
    viol = violation(best.sig, g_out, c2)
    log.info("%susmo (dual coordinate descent): %d augmented-Lagrangian solves, %d passes, %d "
             "coordinate steps, violation %.3g, %.2f s", tag, solves, passes, steps, viol,
             time.perf_counter() - t0)
    residual = abs(float(np.sum(best.sig)) - target) / target
    converged = bool(viol <= tau and residual <= 1e-9)
    stop = "" if converged else ("stalled" if stalled >= STALLED else
                                 "passes" if passes >= max_passes else "updates")
    return DcdResult(best.sig, best.w, g_out, best.b, passes, steps, solves, float(viol),
                     converged, stop, residual)


def violation(sig, g, c2) -> float:
    """USMO's pair optimality violation (b-free): see
    :func:`ssl_svm.solvers.usmo_numba.select_pair`."""
    return float(_nb().select_pair(sig, g, c2)[2])


def _nb():
    """The compiled kernels (:mod:`ssl_svm.solvers.usmo_numba`), imported on first use."""
    from ssl_svm.solvers import usmo_numba

    return usmo_numba
