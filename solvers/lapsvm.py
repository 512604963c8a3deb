"""Laplacian SVM and Laplacian RLS trained in the primal (Melacci & Belkin 2011).

Convention (lapsvmp's, no 1/l factors): with ``f = Kα + b`` over all n = l + u training rows,

    F(α, b) = 1/2 [ Σ_{i labeled} c_i loss(y_i, f_i) + γ_A αᵀKα + γ_I fᵀ L^p f ]

where loss is the squared hinge ``max(0, 1 - y f)²`` (lapsvm) or the squared error
``(y - f)²`` (laprls), c_i the row's cost factor (1 by default), b is optional and not
regularised by γ_A. With a normalised Laplacian ``L·1 ≠ 0``, so b does enter the graph term;
it is handled exactly (lapsvmp refuses the combination instead).

Solvers:

* Newton: solve ``(C_E K + γ_A I + γ_I L^p K) α + (C_E 1 + γ_I L^p 1) b = C_E y`` (bordered by the
  bias equation when b is used) for the current error set E, exact line search to the solution,
  repeat until E does not change. O(n³) per step and two n×n matrices; for laprls one step is
  the exact solution.
* PCG: conjugate gradient preconditioned by K (the preconditioned gradient is
  ``r = C_E(f - y) + γ_A α + γ_I L^p f``, no extra product), Polak–Ribière with automatic
  restart, exact line search over the hinge breakpoints. One product K·v per iteration.
* Early stopping for PCG (the paper's point): every ⌈√n/2⌉ iterations, ``stability`` stops when
  fewer than 1.5 % of the unlabeled rows' predicted signs changed since the last check;
  ``validation`` stops when the error on a labeled validation set did not drop by at least one
  row since the best check (and keeps the best check's solution; the first check is always the
  best so far); ``mixed`` stops when both hold; ``none`` runs until
  ``sqrt(gᵀ M⁻¹ g / g₀ᵀ M⁻¹ g₀) ≤ ε``.
* Landmarks, f = Σ_j α_j k(·, z_j) + b over m ≪ n rows (no n×n matrix), two ways:
  ``restrict`` (:func:`landmark_newton`) minimises F over that span exactly (m = n: the exact
  problem); ``project`` (:func:`graph_newton`, then :meth:`LandmarkSystem.project`) finds the
  values f on all n rows with γ_A taken on the values, by Newton and CG on the sparse L, then
  fits the expansion to them by least squares. A span of narrow kernel bumps holds functions
  close to the graph's solution that its restricted objective does not find (BENCHMARKS).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.csgraph

from ssl_svm.solvers import backend as backends
from ssl_svm.solvers import graph as graph_mod
from ssl_svm.solvers import kernels, progress
from ssl_svm.solvers.errors import ProblemError
from ssl_svm.solvers.kernels import KernelSpec
from ssl_svm.solvers.models import KernelExpansion, Model
from ssl_svm.solvers.multiclass import binary_tasks, nth_seed
from ssl_svm.solvers.params import SOLVER_PARAMS

log = logging.getLogger("ssl.solver.lapsvm")

STABILITY_TOLERANCE = 0.015  # lapsvmp: stop when < 1.5 % of unlabeled signs change


def check_period(n: int) -> int:
    """Iterations between early-stopping checks: ⌈√n / 2⌉ (lapsvmp)."""
    return max(1, math.ceil(math.sqrt(n) / 2.0))


# --------------------------------------------------------------------------- objective pieces

def loss_mask(Y: np.ndarray, f: np.ndarray, hinge: bool) -> np.ndarray:
    """Rows whose loss is active: labeled rows with y f < 1 (hinge) or every labeled row."""
    lab = Y != 0
    return lab & (Y * f < 1.0) if hinge else lab


def objective(K: np.ndarray, lap: graph_mod.Laplacian, Y, c, gamma_a, gamma_i, alpha, b,
              hinge: bool = True) -> float:
    """F(α, b) as in the module docstring, computed from scratch (tests, reporting)."""
    f = K @ alpha + b
    return _objective(Y, c, gamma_a, gamma_i, alpha, K @ alpha, f, lap.apply(f), hinge)


def _objective(Y, c, gamma_a, gamma_i, alpha, Ka, f, Lf, hinge) -> float:
    E = loss_mask(Y, f, hinge)
    res = (Y - f)[E]
    return 0.5 * (float(np.sum(c[E] * res * res)) + gamma_a * float(alpha @ Ka)
                  + gamma_i * float(f @ Lf))


def gradient(K, lap, Y, c, gamma_a, gamma_i, alpha, b, hinge=True):
    """(∇_α F, ∂F/∂b) at (α, b): ``K r`` and ``Σ (C_E(f - y) + γ_I L^p f)``."""
    f = K @ alpha + b
    h = np.where(loss_mask(Y, f, hinge), c * (f - Y), 0.0)
    Lf = lap.apply(f)
    r = h + gamma_a * alpha + gamma_i * Lf
    return K @ r, float(np.sum(h + gamma_i * Lf))


def line_search(A, B, Y, c, o, do, hinge):
    """Exact minimiser t ≥ 0 of φ(t) = A t + B t²/2 + 1/2 Σ_i c_i loss(Y_i, o_i + t do_i), by
    whole-array numpy: :func:`ssl_svm.solvers.lapsvm_numba.line_search`'s walk (see there),
    its sums taken in the same order (cumulative sums), so the same t up to the order of equal
    breakpoints."""
    on = (Y != 0.0) & (c != 0.0)
    grad = c * (o - Y) * do
    curv = c * do * do
    if not hinge:
        active = on
    else:
        m = Y * o
        s = Y * do
        active = on & ((m < 1.0) | ((m == 1.0) & (s < 0.0)))
    S0 = _sequential_sum(A, grad[active])
    S1 = _sequential_sum(B, curv[active])
    if S0 >= 0.0:
        return 0.0
    if not hinge:
        return -S0 / S1 if S1 > 0.0 else 0.0
    moves = (active & (s > 0.0)) | (on & ~active & (s < 0.0))
    who = np.flatnonzero(moves)
    if who.size == 0:
        return -S0 / S1 if S1 > 0.0 else 0.0
    bps = (1.0 - m[who]) / s[who]
    sgn = np.where(active[who], -1.0, 1.0)
    order = np.argsort(bps)
    k = who[order]
    # S0, S1 before each breakpoint in turn (cumsum adds left to right, as the loop does)
    S0s = np.cumsum(np.concatenate(([S0], sgn[order] * grad[k])))
    S1s = np.cumsum(np.concatenate(([S1], sgn[order] * curv[k])))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = -S0s / S1s
    stop = np.flatnonzero((S1s[:-1] > 0.0) & (t[:-1] <= bps[order]))
    if stop.size:
        return float(t[stop[0]])
    if S1s[-1] <= 0.0:
        return float(bps[order[-1]])
    return float(t[-1])


def _sequential_sum(start: float, values: np.ndarray) -> float:
    """start + values[0] + values[1] + ..., added left to right (a compiled loop's order)."""
    if values.size == 0:
        return float(start)
    return float(np.cumsum(np.concatenate(([start], values)))[-1])


def newton_matrix(indptr, indices, data, B, K, cE, gamma_i, gamma_a, H):
    """H[:n, :n] = γ_I L B + C_E K + γ_A I (L in CSR; B = L^{p-1} K): the numpy backend's
    :func:`ssl_svm.solvers.lapsvm_numba.newton_matrix`, through n×n temporaries."""
    n = K.shape[0]
    L = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    top = H[:n, :n]
    np.multiply(cE[:, None], K, out=top)
    top += (gamma_i * L) @ B
    top[np.diag_indices(n)] += gamma_a


def _nb():
    """The numba kernels (imported on first use: a numpy fit never loads numba)."""
    from ssl_svm.solvers import lapsvm_numba

    return lapsvm_numba


class _NumpyRoutines:
    line_search = staticmethod(line_search)
    newton_matrix = staticmethod(newton_matrix)


def routines(numpy: bool):
    """The exact form's line search and Newton matrix: numpy's (this module's) or numba's
    (:mod:`ssl_svm.solvers.lapsvm_numba`)."""
    return _NumpyRoutines if numpy else _nb()


# --------------------------------------------------------------------------- solvers

def _exact_step(lap, Y, c, gamma_a, gamma_i, hinge, alpha, b, Ka, f, Lf, d, db, Kd, ops):
    """Move (α, b) by the exact minimiser t ≥ 0 along (d, db); Kd = K d. Updates α, Kα, f and
    L^p f in place (no new product with K); returns (t, new b). ``ops``: :func:`routines`."""
    df = Kd + db
    Ldf = lap.apply(df)
    A = gamma_a * float(d @ Ka) + gamma_i * float(df @ Lf)
    Bq = gamma_a * float(d @ Kd) + gamma_i * float(df @ Ldf)
    t = ops.line_search(A, Bq, Y, c, f, df, hinge)
    alpha += t * d
    Ka += t * Kd
    f += t * df
    Lf += t * Ldf
    return t, b + t * db


@dataclass
class Result:
    alpha: np.ndarray
    b: float
    f: np.ndarray  # outputs on the training rows
    objective: float
    iterations: int
    reason: str
    trace: list = field(default_factory=list)  # (iteration, objective) at each check / step
    cg_iterations: int = 0  # the graph stage's CG iterations (graph_newton)


@dataclass
class Validation:
    """Labeled validation rows for early stopping: K(V, X) and ±1 targets."""

    Kv: np.ndarray
    y: np.ndarray


def _start(K, lap, start, n):
    """(α, b, Kα, f, L^p f) at ``start`` = (α, b), or at zero when None."""
    if start is None:
        return np.zeros(n), 0.0, np.zeros(n), np.zeros(n), np.zeros(n)
    alpha = np.array(start[0], dtype=np.float64)
    Ka = K @ alpha
    f = Ka + start[1]
    return alpha, float(start[1]), Ka, f, lap.apply(f)


def newton(K, lap, Y, c, gamma_a, gamma_i, bias=False, hinge=True, max_iter=50,
           memory_limit=None, tag="", start=None, numpy=False, factors: dict | None = None
           ) -> Result:
    """Primal Newton (exact reference, O(n³) per step); ``start`` = (α, b) seeds the first
    active set (a warm start: same optimum, usually fewer steps); ``numpy``: the numpy
    backend's kernels (:func:`routines`). ``factors``: a dict shared by the one-vs-rest tasks
    of one fit, holding the last step's LU factors: a step whose error set and costs are the
    last one's (laprls: every labeled row, in every task) solves with them, the same numbers
    without a new factorization."""
    ops = routines(numpy)
    n = K.shape[0]
    nb = n + 1 if bias else n
    # the system matrix, plus two n×n intermediates of L^{p-1} K when p > 1
    kernels.reserve(8 * nb * nb * (3 if lap.degree > 1 else 1),
                    f"{tag}Newton system {nb}×{nb}", memory_limit)
    B = K if lap.degree == 1 else graph_mod.Laplacian(lap.L, lap.degree - 1).apply(K)
    L = lap.L
    alpha, b, Ka, f, Lf = _start(K, lap, start, n)
    E = loss_mask(Y, f, hinge)
    ones_L = lap.apply(np.ones(n)) if bias else None
    t0 = time.perf_counter()
    trace = []
    reason = "iteration limit"
    it = 0
    for it in range(1, max_iter + 1):
        progress.beat(log, "iteration %d of at most %d (%.0f s)", it, max_iter,
                      time.perf_counter() - t0)
        cE = np.where(E, c, 0.0)
        rhs = np.zeros(nb)
        rhs[:n] = cE * Y
        if bias:
            rhs[n] = float(cE @ Y)
        key = cE.tobytes()
        if factors is not None and factors.get("key") == key:
            lu, piv = factors["lu"]  # the same matrix: another task with the same error set
        else:
            H = np.empty((nb, nb))
            ops.newton_matrix(L.indptr, L.indices, L.data, B, K, cE, gamma_i, gamma_a, H)
            if bias:
                H[:n, n] = cE + gamma_i * ones_L
                H[n, :n] = H[:n, :n].sum(axis=0) - gamma_a
                H[n, n] = cE.sum() + gamma_i * ones_L.sum()
            # LU in place: H is C-ordered, so factor Hᵀ (Fortran order, same memory) and solve
            # the transposed system
            lu, piv = scipy.linalg.lu_factor(H.T, overwrite_a=True, check_finite=False)
            del H
            if factors is not None:
                factors.update(key=key, lu=(lu, piv))
        sol = scipy.linalg.lu_solve((lu, piv), rhs, trans=1, check_finite=False)
        del lu
        d = sol[:n] - alpha
        db = sol[n] - b if bias else 0.0
        t, b = _exact_step(lap, Y, c, gamma_a, gamma_i, hinge, alpha, b, Ka, f, Lf, d, db,
                           K @ d, ops)
        F = _objective(Y, c, gamma_a, gamma_i, alpha, Ka, f, Lf, hinge)
        trace.append((it, F))
        E_new = loss_mask(Y, f, hinge)
        changed = int(np.sum(E_new != E))
        log.info("%snewton step %d: step %.4g, objective %.12g, %d error vectors (%d changed), "
                 "%.2f s", tag, it, t, F, int(E_new.sum()), changed, time.perf_counter() - t0)
        if changed == 0:
            reason = "error vectors unchanged"
            break
        E = E_new
    F = _objective(Y, c, gamma_a, gamma_i, alpha, Ka, f, Lf, hinge)
    return Result(alpha, b, f, F, it, reason, trace)


def pcg(K, lap, Y, c, gamma_a, gamma_i, bias=False, hinge=True, early_stop="stability",
        eps=1e-6, max_iter=10000, validation: Validation | None = None, tag="",
        start=None, numpy=False) -> Result:
    """Preconditioned (by K) nonlinear conjugate gradient with exact line search; ``start`` =
    (α, b) seeds it (a warm start: the early stop then fires sooner). With ``early_stop``
    'none' it stops when the preconditioned gradient norm falls to ``eps`` times its value at
    α = 0 (the cold start's first gradient, also for a seeded start). ``numpy`` as
    :func:`newton`'s."""
    ops = routines(numpy)
    n = K.shape[0]
    unl = Y == 0
    if early_stop in ("stability", "mixed") and not unl.any():
        log.warning("%sno unlabeled rows: stability checks use the labeled rows' predictions",
                    tag)
        unl = np.ones(n, bool)
    if early_stop in ("validation", "mixed") and validation is None:
        raise ProblemError(f"--early-stop {early_stop} needs --validation FILE")
    period = check_period(n)
    alpha, b, Ka, f, Lf = _start(K, lap, start, n)

    def precond_gradient():
        h = np.where(loss_mask(Y, f, hinge), c * (f - Y), 0.0)
        r = h + gamma_a * alpha + gamma_i * Lf
        gb = float(np.sum(h + gamma_i * Lf)) if bias else 0.0
        return r, gb

    r, gb = precond_gradient()
    q = K @ r
    rho = float(r @ q) + gb * gb
    rho0 = rho
    if start is not None:
        # the tolerance is relative to the gradient at α = 0, not at the seed: relative to
        # the seed's (smaller) gradient a warm start would have as far to go as a cold one
        r0 = np.where(Y != 0, -c * Y, 0.0)  # at α = 0, b = 0 every labeled row is active
        gb0 = float(np.sum(r0)) if bias else 0.0
        rho0 = max(float(r0 @ (K @ r0)) + gb0 * gb0, rho)
    d, db, Kd = -r, -gb, -q
    signs = np.where(f[unl] > 0, 1, -1)
    # the first check always becomes the best: α = 0 predicts one class everywhere, and with
    # few positives (one-vs-rest) it can look good on a small validation set
    val_best = None
    best = None
    trace = []
    reason = "iteration limit"
    t0 = time.perf_counter()
    it = 0
    if rho0 <= 0.0:
        reason = "zero gradient at the start"
        max_iter = 0
    for it in range(1, max_iter + 1):
        progress.beat(log, "iteration %d of at most %d (%.0f s)", it, max_iter,
                      time.perf_counter() - t0)
        _, b = _exact_step(lap, Y, c, gamma_a, gamma_i, hinge, alpha, b, Ka, f, Lf, d, db, Kd,
                           ops)
        r_new, gb_new = precond_gradient()
        q_new = K @ r_new
        rho_new = float(r_new @ q_new) + gb_new * gb_new
        beta = max(0.0, (float(q_new @ (r_new - r)) + gb_new * (gb_new - gb)) / rho)
        d = -r_new + beta * d
        db = -gb_new + beta * db
        Kd = -q_new + beta * Kd
        r, gb, q, rho = r_new, gb_new, q_new, rho_new
        if early_stop == "none" or rho <= 0.0:
            if rho <= 0.0 or math.sqrt(rho / rho0) <= eps:
                reason = "gradient tolerance"
                break
            continue
        if it % period:
            continue
        new_signs = np.where(f[unl] > 0, 1, -1)
        changed = float(np.mean(new_signs != signs))
        signs = new_signs
        F = _objective(Y, c, gamma_a, gamma_i, alpha, Ka, f, Lf, hinge)
        trace.append((it, F))
        stable = changed < STABILITY_TOLERANCE
        improved = True
        val_text = ""
        if validation is not None:
            errs = _val_errors(validation, alpha, b)
            improved = val_best is None or errs < val_best
            if improved:
                val_best = errs
                best = (alpha.copy(), b, f.copy(), it)
            val_text = f", validation errors {errs} (best {val_best})"
        log.info("%spcg iteration %d: objective %.10g, %.2f %% of unlabeled signs changed%s, "
                 "%.2f s", tag, it, F, 100 * changed, val_text, time.perf_counter() - t0)
        if early_stop == "stability" and stable:
            reason = f"stable predictions (< {100 * STABILITY_TOLERANCE:g} % sign changes)"
            break
        if early_stop == "validation" and not improved:
            reason = "validation error stopped improving"
            break
        if early_stop == "mixed" and stable and not improved:
            reason = "stable predictions and validation error stopped improving"
            break
        if math.sqrt(max(rho, 0.0) / rho0) <= 1e-14:  # converged before any stop fired
            reason = "gradient vanished"
            break
    if best is not None and early_stop in ("validation", "mixed") and best[3] != it:
        alpha, b, f, at = best
        reason += f"; kept iteration {at}, the best on validation"
        Ka = f - b
        Lf = lap.apply(f)
    F = _objective(Y, c, gamma_a, gamma_i, alpha, Ka, f, Lf, hinge)
    return Result(alpha, b, f, F, it, reason, trace)


# --------------------------------------------------------------------------- landmarks


def landmark_sandwich(T: np.ndarray, H: np.ndarray) -> np.ndarray:
    """T̃ᵀ H T̃ with T̃ = diag(T, 1) (the Nyström factor and the bias's 1), symmetrised: the
    landmark system over [Z 1] from H over [K 1] ((m + 1)², the last row and column the
    constant's)."""
    m, r = T.shape
    Tt = np.zeros((m + 1, r + 1))
    Tt[:m, :r] = T
    Tt[m, r] = 1.0
    M = Tt.T @ (H @ Tt)
    return 0.5 * (M + M.T)  # the products need not round alike on both sides


@dataclass
class LandmarkSystem:
    """What a landmark fit holds for every binary task on the same rows, graph and kernel:
    the landmark rows of Xp (``rows``, :func:`kernels.prepare`d) and T (m × r) of their
    Nyström features Z = K(X, rows) T (:func:`kernels.nystrom`), and one (r + 1)² matrix over
    [Z 1] (its last row and column the bias's): for the restricted form (``fit`` 'restrict')
    the graph term's G = [Z 1]ᵀ L^p [Z 1], for the projected form ('project') the Gram matrix
    P = [Z 1]ᵀ[Z 1] of the least-squares fit over the rows ``fit_rows`` (None: all rows;
    :func:`projection_rows`). Z itself is not kept: the labeled rows' features and the outputs
    on all rows are computed from the kernel when needed."""

    spec: KernelSpec
    landmarks: np.ndarray
    rows: object
    T: np.ndarray
    G: np.ndarray | None
    P: np.ndarray | None = None
    fit: str = "restrict"
    fit_rows: np.ndarray | None = None
    n: int = 0  # the training rows

    @classmethod
    def build(cls, spec: KernelSpec, Xp, lap: graph_mod.Laplacian, landmarks: np.ndarray,
              memory_limit: int | None = None, fit: str = "restrict",
              fit_rows: np.ndarray | None = None) -> LandmarkSystem:
        n = Xp.shape[0]
        m = landmarks.size
        if fit == "project":
            kernels.reserve(kernels.landmark_bytes(n, m + 1, 0), f"landmark system {m}×{m}",
                            memory_limit)
        else:
            kernels.reserve(kernels.landmark_bytes(n, m + 1), f"Nyström features {n}×{m}",
                            memory_limit)
        rows = kernels.landmark_rows(Xp, landmarks)
        zn = kernels.sqnorms(rows) if spec.name == "rbf" else None
        T = kernels.nystrom_factor(spec, rows, zn)
        m1 = m + 1
        if fit == "project":
            # P = T̃ᵀ([K 1]ᵀ[K 1])T̃ summed over blocks of kernel rows: no n × m matrix held
            H = kernels.landmark_gram(spec, Xp if fit_rows is None else Xp[fit_rows], rows, zn)
            return cls.projected(spec, landmarks, rows, T, H, fit_rows, n)
        # G = T̃ᵀ H T̃ with H = [K 1]ᵀ L^p [K 1] over the kernel rows K = K(X, landmarks) and
        # T̃ = diag(T, 1): one n·m² product (forming Z = KT first would be a second)
        A = np.empty((n, m + 1))
        A[:, m] = 1.0
        b = kernels.block_rows_for(m)
        for s in range(0, n, b):
            A[s:s + b, :m] = kernels.kernel_block(spec, Xp[s:s + b], rows, zn)
        # H = AᵀA (p even) or Aᵀ(LA) (p odd) after A ← L^q A, q = ⌊p/2⌋: q + p mod 2 sparse
        # products of n × (m + 1); A is overwritten a block of columns at a time, and LA is
        # made a block of rows at a time, so one block is held besides A
        L = lap.L
        q, odd = divmod(lap.degree, 2)
        step = max(1, kernels.BLOCK_BYTES // max(1, 8 * n))
        if q:
            tmp = np.empty((n, min(step, m1)))
            for s in range(0, m1, step):
                e = min(m1, s + step)
                for _ in range(q):
                    blk = np.ascontiguousarray(A[:, s:e])
                    _nb().csr_times(L.indptr, L.indices, L.data, blk, tmp[:, :e - s])
                    A[:, s:e] = tmp[:, :e - s]
        if not odd:
            H = A.T @ A
        else:
            H = np.zeros((m1, m1))
            rb = max(1, kernels.BLOCK_BYTES // max(1, 8 * m1))
            tmp = np.empty((min(rb, n), m1))
            for s in range(0, n, rb):
                e = min(n, s + rb)
                _nb().csr_times(L.indptr[s:e + 1], L.indices, L.data, A, tmp[:e - s])
                H += A[s:e].T @ tmp[:e - s]
        del A
        return cls(spec, landmarks, rows, T, landmark_sandwich(T, H), n=n)

    @classmethod
    def projected(cls, spec: KernelSpec, landmarks, rows, T, H, fit_rows, n) -> LandmarkSystem:
        """The projected form's system from H = [K 1]ᵀ[K 1] over the fit rows
        (:func:`kernels.landmark_gram`, or its sum over a cluster's blocks)."""
        return cls(spec, landmarks, rows, T, None, landmark_sandwich(T, H), "project", fit_rows,
                   n)

    def features(self, Xp, idx: np.ndarray) -> np.ndarray:
        """The Nyström features Z of the rows ``idx`` of Xp (len(idx) × r)."""
        return kernels.kernel_block(self.spec, Xp[idx], self.rows) @ self.T

    def values(self, Xp, alpha: np.ndarray) -> np.ndarray:
        """K(Xp, rows) α for α of shape (m, k), in blocks of rows."""
        return kernels.kernel_times(self.spec, Xp, self.rows, alpha)

    def project(self, Xp, F: np.ndarray, gamma_a: float, bias: bool
                ) -> tuple[np.ndarray, np.ndarray]:
        """(β, b) of the landmark expansions Zβ + b fitted to the columns of F (n × k, values
        on the rows of Xp) by regularised least squares: each column minimises
        ``1/2 [‖Zβ + b - f‖² + γ_A ‖β‖²]`` (b = 0 without ``bias``); β is r × k, b has k
        entries. With ``fit_rows`` S the squares are summed over S and weighted n/|S| (the
        ridge γ_A·|S|/n) to stand for the sum over all rows. One pass over the kernel rows,
        in blocks, for all columns."""
        if self.fit_rows is not None:
            Xp, F = Xp[self.fit_rows], F[self.fit_rows]
        return self.solve_projection(self.projection_sums(Xp, F), gamma_a, bias)

    def projection_sums(self, Xp, F: np.ndarray) -> np.ndarray:
        """[K(Xp, rows) 1]ᵀ F ((m + 1) × k) over the rows of Xp given: the least squares'
        right-hand side, summed in blocks of rows (a cluster's blocks add theirs)."""
        m = self.landmarks.size
        k = F.shape[1]
        zn = kernels.sqnorms(self.rows) if self.spec.name == "rbf" else None
        rhs = np.zeros((m + 1, k))
        bl = kernels.block_rows_for(m)
        for s in range(0, F.shape[0], bl):
            rhs[:m] += kernels.kernel_block(self.spec, Xp[s:s + bl], self.rows, zn).T @ F[s:s + bl]
            rhs[m] += F[s:s + bl].sum(axis=0)
        return rhs

    def solve_projection(self, rhs: np.ndarray, gamma_a: float, bias: bool
                         ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`project`'s solve from its :meth:`projection_sums` (over ``fit_rows``, or
        all rows)."""
        r = self.T.shape[1]
        if self.fit_rows is not None:
            gamma_a = gamma_a * self.fit_rows.size / self.n
        k = rhs.shape[1]
        rhs = np.vstack([self.T.T @ rhs[:-1], rhs[-1:]])
        nb = r + 1 if bias else r
        Q = self.P[:nb, :nb].copy()
        Q[np.arange(r), np.arange(r)] += gamma_a
        try:
            W = scipy.linalg.solve(Q, rhs[:nb], assume_a="pos", check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            W = scipy.linalg.lstsq(Q, rhs[:nb], check_finite=False)[0]
        return W[:r], (W[r] if bias else np.zeros(k))


CG_TOLERANCE = 1e-6  # graph stage: each CG solve stops at this relative residual

# rows the projected form's least squares is summed over: 100 rows per coefficient at the
# default 2,000 landmarks, while its n·M² Gram matrix was 121 of 281 s at 10⁶ rows
PROJECTION_ROWS = 200_000


def projection_rows(y: np.ndarray, landmarks: np.ndarray, most: int = PROJECTION_ROWS,
                    seed: int = 0) -> np.ndarray | None:
    """The rows (ascending) the projected form fits its expansion on: None (all) up to
    ``most`` rows, else every labeled row and landmark and a seeded uniform sample of the
    others, ``most`` in all (at least the labeled rows and the landmarks)."""
    n = y.size
    if n <= most:
        return None
    keep = np.zeros(n, dtype=bool)
    keep[y != 0] = True
    keep[landmarks] = True
    rest = np.flatnonzero(~keep)
    extra = max(0, most - int(keep.sum()))
    keep[np.random.default_rng(seed).choice(rest, min(extra, rest.size), replace=False)] = True
    return np.flatnonzero(keep)




class LocalGraph:
    """The graph stage's operator on the rows of this process: the Laplacian L (CSR), the
    labeled rows' targets and costs, and every per-row vector of the Newton-CG (f, L^p f, the
    CG's x, r, z, p, q, the step d, L^p d). :func:`graph_newton` and :func:`graph_cg` run
    over it, or over a cluster's blocks (:class:`ssl_svm.solvers.graph_distributed.BlockGraph`)
    with the same methods: the algorithm is written once. CG's dot products are sums over
    fixed blocks of rows (fused numba passes), the same on any number of threads."""

    def __init__(self, lap: graph_mod.Laplacian, Y: np.ndarray, c: np.ndarray):
        self.lap = lap
        self.n = n = Y.size
        self.lab = np.flatnonzero(Y != 0)
        self.Yl, self.cl = Y[self.lab], c[self.lab]
        self.dL = lap.L.diagonal() ** lap.degree
        self.f = np.zeros(n)
        self.Lf = np.zeros(n)
        self.partial = np.empty(max(1, -(-n // _nb().CG_BLOCK)))
        self.partial2 = np.empty((self.partial.size, 2))
        self.tmp = np.empty(n)
        self.q = np.empty(n)

    def system(self, cE_l: np.ndarray, gamma_a: float, gamma_i: float) -> None:
        """The Newton step's system ``(C_E + γ_A I + γ_I L^p) x = C_E y`` (C_E: ``cE_l`` on
        the labeled rows, 0 elsewhere), its diagonal preconditioner, and x = f to start."""
        n = self.n
        cE = np.zeros(n)
        cE[self.lab] = cE_l
        pre = cE + gamma_a + gamma_i * self.dL
        self.dinv = np.where(pre > 0.0, 1.0 / np.where(pre > 0.0, pre, 1.0), 1.0)
        Y = np.zeros(n)
        Y[self.lab] = self.Yl
        self.rhs = cE * Y
        self.diag = cE + gamma_a
        self.gamma_i = gamma_i
        self.x = self.f.copy()

    def _apply(self, v):
        L = self.lap.L
        _nb().graph_apply(L.indptr, L.indices, L.data, self.lap.degree, self.diag, self.gamma_i,
                          v, self.tmp, self.q)
        return self.q

    def rhs_norm2(self) -> float:
        return _nb().blocked_dot(self.rhs, self.rhs, self.partial)

    def cg_zero(self) -> None:
        self.x = np.zeros(self.n)

    def cg_start(self) -> tuple[float, float]:
        """r = rhs - A x, z = M⁻¹r, p = z; returns (rᵀz, rᵀr)."""
        self.r = self.rhs - self._apply(self.x)
        self.z = self.dinv * self.r
        self.p = self.z.copy()
        return (_nb().blocked_dot(self.r, self.z, self.partial),
                _nb().blocked_dot(self.r, self.r, self.partial))

    def cg_apply(self) -> float:
        """q = A p; returns pᵀq."""
        self._apply(self.p)
        return _nb().blocked_dot(self.p, self.q, self.partial)

    def cg_update(self, a: float) -> tuple[float, float]:
        """x += a p, r -= a q, z = M⁻¹r; returns (rᵀz, rᵀr)."""
        return _nb().cg_update(self.x, self.r, self.z, self.p, self.q, self.dinv, a,
                               self.partial2)

    def cg_direction(self, beta: float) -> None:
        """p = z + β p."""
        _nb().cg_direction(self.p, self.z, beta)

    def direction(self) -> tuple:
        """d = x - f and L^p d; returns (fᵀd, (L^p f)ᵀd, dᵀd, dᵀL^p d, f and d on the labeled
        rows)."""
        self.d = self.x - self.f
        self.Ld = self.lap.apply(self.d)
        return (float(self.f @ self.d), float(self.Lf @ self.d), float(self.d @ self.d),
                float(self.d @ self.Ld), self.f[self.lab], self.d[self.lab])

    def move(self, t: float) -> None:
        """f += t d, L^p f += t L^p d."""
        self.f += t * self.d
        self.Lf += t * self.Ld

    def norms(self) -> tuple[float, float]:
        """(fᵀf, fᵀL^p f)."""
        return float(self.f @ self.f), float(self.f @ self.Lf)

    def labeled(self) -> np.ndarray:
        """f on the labeled rows."""
        return self.f[self.lab]


def graph_cg(op, tol: float, max_iter: int) -> int:
    """The CG of a graph Newton step on ``op`` (:class:`LocalGraph`'s methods): x solving the
    system of :meth:`LocalGraph.system`, preconditioned by its diagonal, from x = f; stops
    when ‖rhs - Ax‖ ≤ tol ‖rhs‖. Returns the iterations."""
    bnorm = math.sqrt(op.rhs_norm2())
    if bnorm == 0.0:
        op.cg_zero()
        return 0
    rz, rr = op.cg_start()
    it = 0
    while it < max_iter and math.sqrt(rr) > tol * bnorm:
        pq = op.cg_apply()
        if pq <= 0.0:
            break
        rz_new, rr = op.cg_update(rz / pq)
        op.cg_direction(rz_new / rz)
        rz = rz_new
        it += 1
    return it


def local_order(lap: graph_mod.Laplacian) -> tuple[graph_mod.Laplacian, np.ndarray]:
    """(L permuted, order): the rows renumbered by reverse Cuthill–McKee so that neighbours lie
    close in memory (row i of the result is row order[i]); the CG's sparse products on kNN
    graphs of shuffled rows are bound by scattered reads, which this makes mostly local."""
    order = scipy.sparse.csgraph.reverse_cuthill_mckee(lap.L, symmetric_mode=True)
    L = lap.L[order][:, order].tocsr()
    L.sort_indices()
    return graph_mod.Laplacian(L, lap.degree, lap.normalized), order.astype(np.int64)


def graph_newton(op, gamma_a, gamma_i, hinge=True, max_iter=50, tol=CG_TOLERANCE,
                 tag="") -> Result:
    """The graph stage of the projected landmark form: the values f on all n rows minimising
    J(f) = 1/2 [Σ_labeled c_i loss(y_i, f_i) + γ_A ‖f‖² + γ_I fᵀL^p f] (the module's
    objective with the ambient norm taken on the values, as if K = I), by Newton on the
    labeled error set E: each step solves ``(C_E + γ_A I + γ_I L^p) f = C_E y`` by CG
    (:func:`graph_cg`, preconditioned by the diagonal C_E + γ_A + γ_I diag(L)^p, from the last
    step's f), then an exact line search, until E does not change. ``op`` holds the rows and
    the per-row vectors (:class:`LocalGraph`, or a cluster's blocks): O(n k) memory and
    O(nnz(L) p) per CG iteration. Returns f's labeled values in :attr:`Result.f`; the values
    on every row stay in ``op``."""
    n = op.n
    Yl, cl = op.Yl, op.cl
    fl = np.zeros(Yl.size)
    ff = fLf = 0.0
    E = loss_mask(Yl, fl, hinge)
    t0 = time.perf_counter()
    trace = []
    reason = "iteration limit"
    it = cg_total = 0

    def value():
        A = loss_mask(Yl, fl, hinge)
        res = (Yl - fl)[A]
        return 0.5 * (float(np.sum(cl[A] * res * res)) + gamma_a * ff + gamma_i * fLf)

    for it in range(1, max_iter + 1):
        t_step = time.perf_counter()
        op.system(np.where(E, cl, 0.0), gamma_a, gamma_i)
        cg_it = graph_cg(op, tol, max(1000, n))
        cg_total += cg_it
        fd, Lfd, dd, dLd, fl, dl = op.direction()
        A = gamma_a * fd + gamma_i * Lfd
        B = gamma_a * dd + gamma_i * dLd
        t = _nb().line_search(A, B, Yl, cl, fl, dl, hinge)
        op.move(t)
        fl = op.labeled()
        ff, fLf = op.norms()
        F = value()
        trace.append((it, F))
        E_new = loss_mask(Yl, fl, hinge)
        changed = int(np.sum(E_new != E))
        now = time.perf_counter()
        log.info("%sgraph newton step %d: %d CG iterations, step %.4g, objective %.12g, %d "
                 "error vectors (%d changed), %.2f s (%.2f s in all)", tag, it, cg_it, t, F,
                 int(E_new.sum()), changed, now - t_step, now - t0)
        if changed == 0:
            reason = "error vectors unchanged"
            break
        E = E_new
    return Result(fl, 0.0, fl, value(), it, reason, trace, cg_total)


def graph_values(lap: graph_mod.Laplacian, Y, c, gamma_a, gamma_i, hinge=True, max_iter=50,
                 tol=CG_TOLERANCE, tag="") -> Result:
    """:func:`graph_newton` on the rows of this process (:class:`LocalGraph`): f on every row
    in :attr:`Result.f` (and ``alpha``)."""
    op = LocalGraph(lap, Y, c)
    res = graph_newton(op, gamma_a, gamma_i, hinge, max_iter, tol, tag)
    res.f = res.alpha = op.f
    return res


def landmark_newton(system: LandmarkSystem, Xp, Y, c, gamma_a, gamma_i, bias=False,
                    hinge=True, max_iter=50, tag="", start=None) -> Result:
    """LapSVM / LapRLS over the landmark expansion ``f = Zβ + b`` (``α = Tβ`` on the landmark
    rows), exactly: F(β, b) = 1/2 [Σ_labeled c_i loss(y_i, f_i) + γ_A ‖β‖² + γ_I fᵀL^p f],
    the module's objective restricted to functions spanned by the landmarks (with every row a
    landmark, the same problem). Newton on the labeled rows' error set E: solve
    ``(Z̃_Eᵀ C_E Z̃_E + γ_A D + γ_I G) w = Z̃_Eᵀ C_E y_E`` (Z̃ = [Z 1], D = I but 0 for b, the
    (r + 1)² system), exact line search, until E does not change: no n×n matrix, and each step
    costs O(l r² + r³). ``start`` = (β, b) seeds the first error set. Returns β in
    :attr:`Result.alpha` and no outputs (``f`` None: :meth:`LandmarkSystem.values`)."""
    G = system.G
    r = G.shape[0] - 1
    lab = np.flatnonzero(Y != 0)
    nb = r + 1 if bias else r
    Zl = np.empty((lab.size, nb))
    Zl[:, :r] = system.features(Xp, lab)
    if bias:
        Zl[:, r] = 1.0
    Yl, cl = Y[lab], c[lab]
    Q = gamma_i * G[:nb, :nb]  # the quadratic part: 1/2 wᵀ Q w
    Q[np.arange(r), np.arange(r)] += gamma_a
    w = np.zeros(nb)
    if start is not None and np.size(start[0]) == r:
        w[:r] = start[0]
        if bias:
            w[r] = start[1]
    fl = Zl @ w
    E = loss_mask(Yl, fl, hinge)
    t0 = time.perf_counter()
    trace = []
    reason = "iteration limit"
    it = 0

    def value():
        A = loss_mask(Yl, fl, hinge)
        res = (Yl - fl)[A]
        return 0.5 * (float(np.sum(cl[A] * res * res)) + float(w @ (Q @ w)))

    for it in range(1, max_iter + 1):
        A = Zl[E]
        cE = cl[E]
        H = A.T @ (cE[:, None] * A) + Q
        rhs = A.T @ (cE * Yl[E])
        try:
            sol = scipy.linalg.solve(H, rhs, assume_a="pos", check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            # singular: no active row and nothing fixing b (an unnormalised Laplacian, L1 = 0)
            sol = scipy.linalg.lstsq(H, rhs, check_finite=False)[0]
        d = sol - w
        Qd = Q @ d
        dfl = Zl @ d
        t = _nb().line_search(float(w @ Qd), float(d @ Qd), Yl, cl, fl, dfl, hinge)
        w += t * d
        fl += t * dfl
        F = value()
        trace.append((it, F))
        E_new = loss_mask(Yl, fl, hinge)
        changed = int(np.sum(E_new != E))
        log.info("%slandmark newton step %d: step %.4g, objective %.12g, %d error vectors "
                 "(%d changed), %.2f s", tag, it, t, F, int(E_new.sum()), changed,
                 time.perf_counter() - t0)
        if changed == 0:
            reason = "error vectors unchanged"
            break
        E = E_new
    return Result(w[:r].copy(), float(w[r]) if bias else 0.0, None, value(), it, reason,
                  trace)


def _val_errors(v: Validation, alpha, b) -> int:
    out = v.Kv @ alpha + b
    return int(np.sum(np.where(out > 0, 1.0, -1.0) != v.y))


# --------------------------------------------------------------------------- registry glue

PARAMS = {name: SOLVER_PARAMS[name] for name in ("lapsvm", "laprls")}
DIRECT_MAX_ROWS = 4000


def kernel_spec(params: dict, X, graph_stats: dict | None = None, tag: str = "") -> KernelSpec:
    """The kernel of ``params`` with γ resolved on the training rows X (said when chosen):
    rbf auto at the scale of the graph whose ``graph_stats`` (graph.build's) are given
    (graph.graph_gamma), else the median heuristic."""
    if params["gamma"] is None and params["kernel"] == "rbf" and graph_stats is not None:
        gamma, how = graph_mod.graph_gamma(graph_stats["heat_width"],
                                           graph_stats["mean_distance"], X)
    else:
        gamma, how = kernels.resolve_gamma(params["gamma"], params["kernel"], X)
    if how != "given" and params["kernel"] != "linear":
        log.info("%skernel γ = %.6g (%s)", tag, gamma, how)
    return KernelSpec(params["kernel"], float(gamma), int(params["degree"]),
                      float(params["coef0"]))


@dataclass
class FitPlan:
    """What a fit will build and run, decided before the graph: the solver (``newton``,
    ``pcg``, or ``landmarks``), its iteration limit and early stop, the graph's neighbours and
    Laplacian degree, the form (``m`` landmarks, None for the exact n×n one) and its landmark
    fit, the neighbour search, the backend, the one-vs-rest tasks."""
    solver: str
    early: str
    max_iter: int
    k_nn: int
    lap_deg: int
    m: int | None
    how_fit: str
    search: str
    numpy: bool
    order: list
    tasks: list


def fit_plan(name: str, X, y, params: dict, validation, max_memory, warm, backend) -> FitPlan:
    """The plan of a fit on rows X (metric applied) and labels y: the solver and its limits,
    the graph, the form within ``max_memory`` (refused here, before anything is built, when
    it cannot fit), the backend (:func:`backends.backend`). ``warm``: a previous fit's, whose
    exact-form kernel is not counted again."""
    n = X.shape[0]
    on_numpy = backends.backend(name, n, X.nnz, {"backend": backend, **params}).numpy
    solver = params["solver"]
    if solver == "auto":
        solver = "newton" if n <= DIRECT_MAX_ROWS else "pcg"
    early = params["early_stop"]
    if solver == "newton" and early != "stability" and early != "none":
        log.warning("--early-stop %s applies to pcg only; newton solves exactly", early)
    if early in ("validation", "mixed") and validation is None and solver == "pcg":
        raise ProblemError(f"--early-stop {early} needs --validation FILE")
    max_iter = params["max_iter"]
    if max_iter is None:
        max_iter = 50 if solver == "newton" else 10 * n
    k_nn, lap_deg, how = graph_mod.auto_graph(X, params["neighbors"],
                                              params["laplacian_degree"])
    if how != "given":
        log.info("graph: %d neighbours, Laplacian degree %d (%s)", k_nn, lap_deg, how)
    n_lab = int(np.sum(y != 0))
    nb = n + 1 if params["bias"] > 0 else n
    # what the exact form holds at once: K, and for Newton its system (plus two
    # intermediates of L^{p-1}K when p > 1)
    plan = [(f"kernel matrix {n}×{n}", 8 * n * n)]
    if solver == "newton":
        plan.append((f"Newton system {nb}×{nb}", 8 * nb * nb * (3 if lap_deg > 1 else 1)))
    order, tasks = binary_tasks(y)
    how_fit = params["landmark_fit"]
    m = None
    if not (params["landmarks"] is None and params["solver"] == "newton"):
        # (--solver newton given, landmarks auto: the exact form asked for)
        m = kernels.kernel_form(name, params["landmarks"], n, n_lab, plan, max_memory,
                                1 if how_fit == "restrict" else 0)
    if m is None:
        if warm is None or warm.get("n") != n:  # checked before the graph is built
            kernels.check_plan(plan, max_memory)
    else:
        if how_fit == "auto":
            how_fit = "restrict" if m >= n else "project"
            log.info("%s: landmark fit %s (auto: %s)", name, how_fit,
                     "every row is a landmark" if m >= n else "fewer landmarks than rows")
        if how_fit == "restrict":
            need = [(f"Nyström features {n}×{m}", kernels.landmark_bytes(n, m))]
        else:  # the system, the values of every task and the CG vectors
            need = [(f"landmark system {m}×{m}", kernels.landmark_bytes(n, m, 0)),
                    (f"graph values {n}×{len(tasks) + 6}", 8 * n * (len(tasks) + 6))]
        kernels.check_plan(need, max_memory)
        if solver == "newton" and params["solver"] != "auto":
            log.info("%s: --solver newton: the landmark form is solved by Newton always",
                     name)
        if early != "stability" and early != "none":
            log.warning("--early-stop %s applies to the exact form's pcg only; the landmark "
                        "form solves exactly", early)
        solver = "landmarks"
    search, _ = graph_mod.knn_search(params["knn"], X, max_memory)
    return FitPlan(solver, early, max_iter, k_nn, lap_deg, m, how_fit, search, on_numpy,
                   order, tasks)


def fit_graph(X, metric: str, params: dict, plan: FitPlan, warm) -> tuple:
    """(prepared rows, Laplacian, graph statistics, seconds, key, warm): the graph of the
    plan, or ``warm``'s when built on as many rows with the same key (``warm`` becomes None
    when it is not: its kernel and seeds belong to other rows)."""
    n = X.shape[0]
    gkey = (plan.k_nn, metric, plan.search, params["graph_weights"], params["heat_width"],
            params["laplacian"], plan.lap_deg)
    if warm is not None and warm["graph_key"] == gkey and warm["n"] == n:
        return warm["Xp"], warm["lap"], warm["gstats"], 0.0, gkey, warm
    Xp = kernels.prepare(X)  # once for the graph, the kernel and the validation rows
    tg = time.perf_counter()
    lap, gstats = graph_mod.build(Xp, plan.k_nn, params["graph_weights"],
                                  params["heat_width"], params["laplacian"] == "normalized",
                                  plan.lap_deg, plan.search, numpy=plan.numpy)
    return Xp, lap, gstats, time.perf_counter() - tg, gkey, None


def fit_kernel(spec: KernelSpec, Xp, lap, y, plan: FitPlan, warm, init, max_memory) -> tuple:
    """(K, landmark system, seeds, seconds, reused): the kernel form of the plan, the exact
    n×n matrix (K) or the landmark system, or ``warm``'s when made with the same kernel and
    form (then its seeds, a warm start); else the seeds of ``init`` (ssl-train --init, exact
    form only)."""
    n = Xp.shape[0]
    if (warm is not None and warm["kernel"] == spec and warm.get("landmarks") == plan.m
            and warm.get("n") == n and warm.get("landmark_fit") == plan.how_fit):
        log.info("graph and kernel reused from the previous fit (warm start)")
        return warm.get("K"), warm.get("system"), warm["seeds"], 0.0, True
    tk = time.perf_counter()
    K = system = None
    if plan.m is None:
        K = kernels.gram(spec, Xp, max_memory)
    else:
        landmarks = kernels.choose_landmarks(y, plan.m)
        rows = None
        if plan.how_fit == "project":
            rows = projection_rows(y, landmarks)
            if rows is not None:
                log.info("landmark expansion fitted on %d of the %d rows (every labeled row, "
                         "the landmarks and a seeded sample; the least squares cost rows·M²)",
                         rows.size, n)
        system = LandmarkSystem.build(spec, Xp, lap, landmarks, max_memory, plan.how_fit, rows)
    if init is not None and plan.m is not None:
        log.info("--init: the landmark form solves exactly from its own start")
    return K, system, init if plan.m is None else None, time.perf_counter() - tk, False


@dataclass
class TaskFits:
    """The one-vs-rest tasks' solutions: the expansion (coefficients per task over ``rows``,
    biases), the values on the training rows, the statistics per task, and the landmark
    form's coefficients (the seeds of a next fit)."""
    rows: object
    coef: np.ndarray
    b: np.ndarray
    values: np.ndarray
    stats: dict
    betas: list


def solve_tasks(name: str, hinge: bool, plan: FitPlan, X, Xp, y, c, params: dict, K, system,
                lap, seeds, Kv, yv, max_memory) -> TaskFits:
    """Every one-vs-rest task of the plan on its kernel form: Newton or PCG on the exact
    form (on the plan's backend; Newton's factors shared by tasks with the same matrix), the
    landmark Newton (restricted) or the graph Newton-CG and its projection on the landmarks;
    ``Kv``, ``yv``: the validation rows' kernel block and labels (PCG's early stop)."""
    n = Xp.shape[0]
    how_fit = plan.how_fit
    project = system is not None and how_fit == "project"
    rows = X if system is None else X[system.landmarks]
    if project:
        glap, gorder = local_order(lap)
    tasks = plan.tasks
    coef = np.zeros((rows.shape[0], len(tasks)))
    bs = np.zeros(len(tasks))
    stats: dict[str, list] = {}
    F_train = np.zeros((n, len(tasks)))
    betas = []
    ts = time.perf_counter()
    factors: dict = {}  # Newton's last LU factors, for the next task with the same matrix
    for k, pos in enumerate(tasks):
        Y = np.where(y == 0, 0.0, np.where(y == pos, 1.0, -1.0))
        tag = "" if len(tasks) == 1 else f"class {pos} vs rest: "
        val = None
        if Kv is not None:
            val = Validation(Kv, np.where(yv == pos, 1.0, -1.0))
        seed = nth_seed(seeds, k)
        if project:
            res = graph_values(glap, Y[gorder], c[gorder], params["gamma_a"],
                               params["gamma_i"], hinge, params["max_iter"] or 50, tag=tag)
            res.f = np.empty(n)
            res.f[gorder] = res.alpha
            res.alpha = res.f
        elif system is not None:
            res = landmark_newton(system, Xp, Y, c, params["gamma_a"], params["gamma_i"],
                                  params["bias"] > 0, hinge, params["max_iter"] or 50, tag,
                                  seed)
            betas.append((res.alpha.copy(), res.b))
            res.alpha = system.T @ res.alpha
        elif plan.solver == "newton":
            res = newton(K, lap, Y, c, params["gamma_a"], params["gamma_i"],
                         params["bias"] > 0, hinge, plan.max_iter, max_memory, tag, seed,
                         numpy=plan.numpy, factors=factors)
        else:
            res = pcg(K, lap, Y, c, params["gamma_a"], params["gamma_i"], params["bias"] > 0,
                      hinge, plan.early, params["epsilon"], plan.max_iter, val, tag, seed,
                      numpy=plan.numpy)
        log.info("%s%s: objective %.10g after %d %s (%s)", tag, name, res.objective,
                 res.iterations, "PCG iterations" if plan.solver == "pcg" else "Newton steps",
                 res.reason)
        if system is None or how_fit == "restrict":
            coef[:, k] = res.alpha
            bs[k] = res.b
        if res.f is not None:
            F_train[:, k] = res.f
        for key, v in (("objective", res.objective), ("iterations", res.iterations)):
            stats.setdefault(key, []).append(v)
        if project:
            stats.setdefault("cg_iterations", []).append(res.cg_iterations)
    if project:
        # the second stage: every task's landmark expansion fitted to its graph values
        beta, bs = system.project(Xp, F_train, params["gamma_a"], params["bias"] > 0)
        coef = system.T @ beta
        log.info("landmark expansion fitted to the graph values (%.2f s)",
                 time.perf_counter() - ts)
    if system is not None and how_fit == "restrict":  # the outputs on every row, one pass
        F_train = system.values(Xp, coef) + bs
    # (projected: the training rows keep the graph values, the transductive solution, of
    # which the expansion is the fit for new rows)
    return TaskFits(rows, coef, bs, F_train, stats, betas)


def _fit(name: str):
    hinge = name == "lapsvm"

    def fit(X, y, cost, params, validation=None, max_memory=None, warm=None, backend=None):
        """Train on all rows of X (label 0 = unlabeled); ``validation`` = (Xv, yv) or None;
        ``backend`` as :func:`ssl_svm.solvers.linear.fit_svm`'s (numpy: the exact form with
        the exact neighbour search only). The stages: :func:`fit_plan` → :func:`fit_graph`
        → :func:`fit_kernel` → :func:`solve_tasks` → the model.

        ``warm`` = the ``model.warm`` of a fit on the same rows: its graph and kernel matrix
        are reused when their parameters match, and its (α, b) seed each binary problem (a
        warm start along the γ_A path); or ``{"init": [(α, b) per binary problem]}``, seeds
        alone (ssl-train --init)."""
        t0 = time.perf_counter()
        X = sp.csr_matrix(X)
        n, d_feat = X.shape
        metric, X, scale = graph_mod.metric_rows(params["graph_metric"], X, name)
        init = None  # {"init": seeds}: seeds from a model (ssl-train --init), nothing else
        if warm is not None and "init" in warm:
            init, warm = warm["init"], None
        plan = fit_plan(name, X, y, params, validation, max_memory, warm, backend)
        m, how_fit = plan.m, plan.how_fit
        c = np.ones(n) if cost is None else np.asarray(cost, dtype=np.float64)
        Xp, lap, gstats, graph_time, gkey, warm = fit_graph(X, metric, params, plan, warm)
        spec = kernel_spec(params, X, gstats)
        log.info("%s: %d rows (%d unlabeled), kernel %s, solver %s%s", name, n,
                 int(np.sum(y == 0)), spec.describe(),
                 plan.solver if m is None else f"landmark newton ({m} landmark rows)"
                 if how_fit == "restrict" else f"graph newton-CG projected on {m} landmark rows",
                 f", early stop {plan.early}" if plan.solver == "pcg" else "")
        K, system, seeds, kernel_time, reused = fit_kernel(spec, Xp, lap, y, plan, warm, init,
                                                           max_memory)
        if not reused:
            log.info("graph %.2f s, kernel %.2f s", graph_time, kernel_time)
        Kv = yv = None
        if validation is not None and m is None:
            Xv, yv = validation
            if scale is not None:
                Xv = kernels.scale_columns(Xv, scale)
            if metric == "cosine":
                Xv = kernels.unit_rows(Xv)
            Kv = kernels.kernel_block(spec, Xv, Xp)
        ts = time.perf_counter()
        fits = solve_tasks(name, hinge, plan, X, Xp, y, c, params, K, system, lap, seeds, Kv,
                           yv, max_memory)
        solve_time = time.perf_counter() - ts
        model = Model(name, plan.order, d_feat,
                      KernelExpansion(spec, fits.rows, fits.coef, fits.b,
                                      unit_rows=metric == "cosine", column_scale=scale),
                      params={p.name: {"graph_metric": metric, "knn": plan.search,
                                       "landmark_fit": how_fit}.get(p.name, params[p.name])
                              for p in PARAMS[name]}, stats=fits.stats)
        model.stats["n_rows"] = [n]
        model.stats["n_unlabeled"] = [int(np.sum(y == 0))]
        model.stats["graph_edges"] = [gstats["graph_edges"]]
        model.stats["neighbors"] = [plan.k_nn]
        model.stats["laplacian_degree"] = [plan.lap_deg]
        if params["graph_weights"] == "heat":
            model.stats["heat_width"] = [gstats["heat_width"]]
        model.stats["kernel_gamma"] = [spec.gamma]
        model.stats["graph_time"] = [graph_time]
        model.stats["kernel_time"] = [kernel_time]
        model.stats["solve_time"] = [solve_time]
        model.stats["train_time"] = [time.perf_counter() - t0]
        model.train_values = fits.values
        if system is not None:
            model.stats["landmarks"] = [m]
        model.warm = {"graph_key": gkey, "n": n, "Xp": Xp, "lap": lap, "gstats": gstats,
                      "kernel": spec, "K": K, "system": system, "landmarks": m,
                      "landmark_fit": how_fit,
                      "seeds": fits.betas if system is not None else
                      [(fits.coef[:, k].copy(), fits.b[k]) for k in range(len(plan.tasks))]}
        return model

    return fit


fit_lapsvm = _fit("lapsvm")
fit_laprls = _fit("laprls")
