"""``rls`` and ``svm`` (L2-SVM-MFN), SVMlin's supervised linear solvers (Sindhwani & Keerthi 2006).

Objective, with x̃ = [x, bias] and costs summed over rows:

    svm:  λ/2 ||w̃||² + 1/2 Σ_i c_i max(0, 1 - y_i w̃·x̃_i)²
    rls:  λ/2 ||w̃||² + 1/2 Σ_i c_i (y_i - w̃·x̃_i)²

with ``c_i = Cp`` or ``Cn`` by class times the row's ``cost:`` factor. This is liblinear's
``-s 2 -B bias`` objective divided by C, i.e. ``C = 1/(2λ)``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ssl_svm.solvers import backend as backends
from ssl_svm.solvers import least_squares, linalg_numpy, progress
from ssl_svm.solvers.host import budget, numba_start
from ssl_svm.solvers.multiclass import nth_seed, one_vs_rest
from ssl_svm.solvers.params import NUMPY_WORK, SOLVER_PARAMS

log = logging.getLogger("ssl.solver.linear")


@dataclass
class LinearResult:
    """w has length d + 1 (last entry: the bias weight); o = X̃w for the training rows."""

    w: np.ndarray
    o: np.ndarray
    objective: float
    iterations: int
    cg_iterations: int
    converged: bool
    reason: str


def _csr(X) -> sp.csr_matrix:
    """X as CSR with each row's indices ascending, without copying when it already is (as the
    reader and the estimators give it): the exact Newton steps' Gram sums a lower triangle."""
    X = X if isinstance(X, sp.csr_matrix) else sp.csr_matrix(X)
    return X if X.has_sorted_indices else X.sorted_indices()


class GramCache:
    """The last Newton system's X̃ᵀ W X̃ and X̃ᵀ W Y (lower triangle, λ left out) of one fit, with
    each row's weight w_i = C_i and w_i Y_i on the active rows, 0 off them. The next system
    differs in the rows whose weight or target changed (a Newton step's few rows entering or
    leaving the active set, tsvm's switched pairs): those rows' differences are added, when
    their work is at most half of summing all active rows, else it is summed anew (and after
    UPDATES_MAX updates, so rounding cannot pile up). The same inputs give the same sums."""

    UPDATES_MAX = 64

    def __init__(self):
        self.key = None

    def system(self, la, indptr, indices, data, bias, Y, C, J, lam, n_cols):
        """(H, b) as :func:`solvers.linalg.gram_system` gives them, by update when it pays;
        only H's lower triangle is meant (:func:`solvers.linalg_numpy.solve_spd` reads no
        other)."""
        m = indptr.size - 1
        w = np.zeros(m)
        w[J] = C[J]
        wy = np.zeros(m)
        wy[J] = C[J] * Y[J]
        rebuild = True
        if (self.key is not None and self.key[0] is indptr and self.key[1] is indices
                and self.key[2] is data and self.key[3] == bias and self.key[4] == n_cols
                and self.updates < self.UPDATES_MAX):
            D = np.flatnonzero((w != self.w) | (wy != self.wy))
            if D.size == 0:
                rebuild = False
            elif (2.0 * linalg_numpy.row_pairs(indptr, D)[0]
                  <= linalg_numpy.row_pairs(indptr, J)[0]):
                la.gram_add(indptr, indices, data, bias, D, w[D] - self.w[D],
                            wy[D] - self.wy[D], 0, D.size, self.H, self.b)
                self.updates += 1
                rebuild = False
        if rebuild:
            self.H, self.b = la.gram_system(indptr, indices, data, bias, Y, C, J, 0.0, n_cols)
            self.key = (indptr, indices, data, bias, n_cols)
            self.updates = 0
        self.w, self.wy = w, wy
        H = self.H.copy()  # its lower triangle is the system's: the factor reads no other
        H.flat[:: H.shape[0] + 1] += lam
        return H, self.b.copy()


class Routines:
    """The routines of one fit (CGLS, the line search, the products): those of
    :mod:`solvers.linalg_numpy` while the fit is small, else :mod:`solvers.linalg`'s numba ones.

    numba's start costs about 0.3 s (:mod:`solvers.linalg_numpy`), more than a whole small solve
    on numpy, but numpy's CG iterations are 2-6x slower (10x and more on a few hundred stored
    values, where scipy's call overhead dominates). With ``numpy`` a fit begins on numpy and
    moves to numba for good once CG iterations have done :data:`solvers.params.NUMPY_WORK`
    units of work (a unit: a stored value, a row or a column touched) counted over all of a
    command's fits (:func:`solvers.host.budget.numpy_work_left`; a library fit, inside
    ``history_free()``, has the whole budget to itself): it has then spent about numba's
    start-up on numpy, so it is never much more than twice the better choice's time; a fit
    that begins after the budget is spent begins on numba. The switch counts work, not
    seconds: a fit's iterates never depend on the machine's load. One instance may serve
    several solves (tsvm's and da's retrainings); the unit is that of each call's matrix.
    """

    def __init__(self, numpy: bool):
        linalg_numpy.forget_held()
        self.direct = linalg_numpy.DirectSolves()
        self.gram = GramCache()
        self.operators = linalg_numpy.OperatorCache()  # numpy's CG products on every row
        # when a check's folds or a path's fits add up to the budget, the rest start on
        # numba, which runs them on all cores
        self.left = budget.numpy_work_left(NUMPY_WORK) if numpy else 0
        if self.left > 0:
            self.la = linalg_numpy
        else:
            self._start()

    def _start(self):
        numba_start.start_numba(("ssl_svm.solvers.linalg",), what="the linear solvers")
        from ssl_svm.solvers import linalg

        self.la = linalg

    @property
    def numba(self) -> bool:
        """Whether the routines are numba's (from the start, or since the work outgrew numpy)."""
        return self.la is not linalg_numpy

    def _solve(self, indptr, indices, data, bias, Y, C, J, lam, beta, o, eps):
        """β = the step's exact solution, o[J] = X̃_J β; True when it passes CG's own residual
        test (else β and o are as they were, for CG)."""
        n = beta.size
        H, b = self.gram.system(self.la, indptr, indices, data, bias, Y, C, J, lam, n - 1)
        x = linalg_numpy.solve_spd(H, b)
        if x is None:
            return False
        oJ = o[J]
        beta_start = beta.copy()
        beta[:] = x
        self.la.outputs(indptr, indices, data, bias, beta, J, o)
        gg, zz, ff = self.la.gradient_norms(indptr, indices, data, bias, Y, C, J, lam, beta, o,
                                            eps)
        if gg <= eps * eps * zz or gg <= ff:
            return True
        beta[:] = beta_start  # (a matrix too ill-conditioned for its factor: CG from the start)
        o[J] = oJ
        return False

    def cgls(self, indptr, indices, data, bias, Y, C, J, lam, beta, o, eps, itermax,
             precondition, forcing=0.0):
        """:func:`solvers.least_squares.cgls` on the rows J of X (β and o[J] updated in place;
        returns (converged, iterations)) on numpy up to the work left, then continued on numba
        from the iterate reached (CG restarted there). On few columns, once CG costs more than
        an exact solve (:class:`solvers.linalg_numpy.DirectSolves`), by Cholesky: 0
        iterations."""
        if self.direct.deciding:
            self.direct.decide(*linalg_numpy.row_pairs(indptr, J), J.size, beta.size)
        if self.direct.on and J.size and self._solve(indptr, indices, data, bias, Y, C, J, lam,
                                                     beta, o, eps):
            return True, 0
        opt, it = self._cgls(indptr, indices, data, bias, Y, C, J, lam, beta, o, eps, itermax,
                             precondition, forcing)
        self.direct.cg_done(it)
        return opt, it

    def _rows(self, indptr, indices, data, bias, Y, C, J, o, n):
        """CGLS's rows (:mod:`solvers.least_squares`) on the routines' kernels."""
        if self.numba:
            return self.la.KernelRows(indptr, indices, data, bias, Y, C, J, o, n,
                                      self.la.threads())
        return linalg_numpy.ArrayRows(indptr, indices, data, bias, Y, C, J, o, n, self.operators)

    def _cgls(self, indptr, indices, data, bias, Y, C, J, lam, beta, o, eps, itermax,
              precondition, forcing=0.0):
        a = (indptr, indices, data, bias, Y, C, J, o, beta.size)
        if self.numba:
            return least_squares.cgls(self._rows(*a), lam, beta, eps, itermax, precondition,
                                      forcing)
        unit = int(indptr[-1]) + indptr.size - 1 + beta.size  # values + rows + columns + 1
        cap = max(1, self.left // unit)
        opt, it = least_squares.cgls(self._rows(*a), lam, beta, eps, min(itermax, cap),
                                     precondition, forcing)
        self.left -= it * unit
        budget.spend_numpy_work(it * unit)
        if opt or it < cap or it >= itermax:
            return opt, it
        log.debug("CG continues on numba after %d iterations on numpy", it)
        self._start()
        opt, more = least_squares.cgls(self._rows(*a), lam, beta, eps, itermax - it,
                                       precondition, forcing)
        return opt, it + more


def newton_loop(rows, lam, w, *, cold, eps, max_iter, forcing, tag):
    """L2-SVM-MFN's outer iterations (SVMlin's heuristics, see :func:`l2svm_mfn`) over
    ``rows``, whatever holds them: the rows of this process (:class:`MfnRows`) or the blocks of
    a cluster (:class:`solvers.distributed.BlockRows`). ``w`` (updated in place) is the start,
    whose outputs the rows already hold. Returns (w, F, iterations, CG iterations, converged,
    reason).

    The protocol (each call after the previous one's state):

    - ``active()`` -> (loss, active rows) at the current outputs;
    - ``sq_norm(w)`` -> ||w̃||²;
    - ``newton_point(w_bar, eps, cgmax, forcing)`` -> (CG converged, iterations, margins agree
      with the active set): the Newton point w̄ (in place, from w) and its outputs;
    - ``exact_bar(w_bar)`` -> (loss, gradient test passed): exact outputs at w̄, its own active
      set, the objective's gradient there under CGLS's relative test; ``accept_bar()`` makes
      w̄'s outputs and active set the current ones;
    - ``line_search(w, w_bar)`` -> δ; ``move(delta)`` -> (loss, active rows) at o + δ(ō - o);
    - ``recompute(w)`` -> (loss, active rows, gradient test passed, active set unchanged
      since the step before): outputs computed anew at w.
    """
    eps_cur = max(linalg_numpy.BIG_EPSILON, eps) if cold else eps
    cgmax = linalg_numpy.SMALL_CGITERMAX if cold else linalg_numpy.CGITERMAX
    loss, nJ = rows.active()
    F = 0.5 * lam * rows.sq_norm(w) + loss
    cg_total = 0
    reason = "iteration limit"
    converged = False
    it = 0
    while it < max_iter:
        it += 1
        w_bar = w.copy()
        opt, cg_it, agree = rows.newton_point(w_bar, eps_cur, cgmax, forcing)
        cg_total += cg_it
        cgmax = linalg_numpy.CGITERMAX
        if opt and agree:
            if eps_cur > eps:
                log.debug("%s  tolerance %g problem solved; continuing with %g", tag, eps_cur, eps)
                eps_cur = eps
                continue
            # the margins agree within eps in output units, but that is not scale-free: when
            # the active rows' residuals are themselves ~eps (nearly separable data, large
            # feature values) a row just outside the margin still carries a large share of
            # the gradient. Optimal only if the gradient of the objective at w_bar, with the
            # active set w_bar itself defines, passes CGLS's own relative test.
            loss_bar, nJ_bar, ok = rows.exact_bar(w_bar)
            if ok:
                rows.accept_bar()
                w = w_bar
                loss, nJ = loss_bar, nJ_bar
                F = 0.5 * lam * rows.sq_norm(w) + loss
                reason, converged = "optimal", True
                log.debug("%sNewton step %d: objective %.10g, %d active rows, %d CG iterations "
                          "(optimal)", tag, it, F, nJ, cg_it)
                break
        delta = rows.line_search(w, w_bar)
        w += delta * (w_bar - w)
        if forcing > 0.0 and delta < FORCING_MIN_STEP:
            # a truncated step the line search cuts this short points nowhere useful (a nearly
            # singular active set: raw pixels, features x100); such steps went on for the whole
            # Newton limit 18x above the optimum. Solve the systems to eps from here
            forcing = 0.0
        F_old = F
        loss, nJ = rows.move(delta)
        F = 0.5 * lam * rows.sq_norm(w) + loss
        log.debug("%sNewton step %d: objective %.10g, step %.4g, %d active rows, %d CG iterations",
                  tag, it, F, delta, nJ, cg_it)
        progress.beat(log, "%sNewton step %d of at most %d: objective %.10g, %d active rows",
                      tag, it, max_iter, F, nJ)
        if abs(F - F_old) < linalg_numpy.RELATIVE_STOP_EPS * abs(F_old):
            # SVMlin stops here outright. A tiny step is also what the exact line search gives
            # when the Newton point of a nearly singular active set lies far off (few active
            # rows, large feature values): the next step, with the rows it reached, moves on.
            # So: optimal if the gradient test passes; stuck if the active set is the same
            # (the next Newton point would be this one's again); otherwise go on.
            loss, nJ, ok, same = rows.recompute(w)
            F = 0.5 * lam * rows.sq_norm(w) + loss
            if ok:
                reason, converged = "optimal (objective change < 1e-9)", True
                break
            if forcing > 0.0:
                # truncated solves no longer move w: solve the systems to eps from here
                forcing = 0.0
                continue
            if same:
                reason = "no progress: the objective changes by less than 1e-9"
                break
    return w, float(F), it, cg_total, converged, reason


class MfnRows:
    """The rows of this process as :func:`newton_loop` uses them: X (CSR), targets Y and costs
    C (per virtual row with ``phys``), the outputs o = X̃w per row of X, the active set."""

    def __init__(self, X, Y, C, lam, bias, eps, o, phys, precondition, routines):
        self.a = (X.indptr, X.indices, X.data, float(bias))
        self.m = X.shape[0]
        self.Y, self.C, self.lam, self.eps = Y, C, lam, eps
        self.o = o
        self.phys = phys
        self.precondition = precondition
        self.routines = routines
        self.state = None  # (J, I, loss, targets and costs for CGLS, per-copy active flags)
        self.J_old = None

    def _active(self, o):
        """(J, I, loss, targets and costs for CGLS, per-copy active flags or None)."""
        la = self.routines.la
        if self.phys is None:
            J, I, loss = la.split_active(self.Y, o, self.C)
            return J, I, loss, self.Y, self.C, None
        return la.split_virtual(self.Y, self.C, self.phys, o, self.m)

    def _kkt(self, state, w, o) -> bool:
        """CGLS's relative residual test on the objective's gradient at w (active set J),
        passed also when the gradient is within what rounding alone produces."""
        J, _, _, Ye, Ce, _ = state
        gg, zz, ff = self.routines.la.gradient_norms(*self.a, Ye, Ce, J, self.lam, w, o,
                                                     self.eps)
        return gg <= self.eps * self.eps * zz or gg <= ff

    def active(self):
        self.state = self._active(self.o)
        return self.state[2], self.state[0].size

    def sq_norm(self, w) -> float:
        return self.routines.la.sq_norm(w)

    def newton_point(self, w_bar, eps_cur, cgmax, forcing):
        J, I, _, Ye, Ce, act = self.state
        self.o_bar = self.o.copy()
        opt, cg_it = self.routines.cgls(*self.a, Ye, Ce, J, self.lam, w_bar, self.o_bar,
                                        eps_cur, cgmax, self.precondition, forcing)
        la = self.routines.la
        la.outputs(*self.a, w_bar, I, self.o_bar)
        agree = (la.margins_agree(self.Y, self.o_bar, J, I, eps_cur) if self.phys is None else
                 la.margins_agree_virtual(self.Y, self.phys, self.o_bar, act, eps_cur))
        return opt, cg_it, agree

    def exact_bar(self, w_bar):
        self.routines.la.outputs(*self.a, w_bar, self.state[0], self.o_bar)
        self.bar = self._active(self.o_bar)
        return self.bar[2], self.bar[0].size, self._kkt(self.bar, w_bar, self.o_bar)

    def accept_bar(self):
        self.o, self.state = self.o_bar, self.bar

    def line_search(self, w, w_bar) -> float:
        o, o_bar = ((self.o, self.o_bar) if self.phys is None else
                    (self.o[self.phys], self.o_bar[self.phys]))
        rows = least_squares.PieceRows(self.routines.la, self.Y, self.C, o, o_bar)
        return least_squares.line_search(rows, self.lam, w, w_bar)

    def move(self, delta):
        self.o += delta * (self.o_bar - self.o)
        self.J_old = self.state[0]
        return self.active()

    def recompute(self, w):
        self.routines.la.outputs(*self.a, w, np.arange(self.m), self.o)
        loss, nJ = self.active()
        return loss, nJ, self._kkt(self.state, w, self.o), np.array_equal(self.state[0],
                                                                          self.J_old)


class GramRows(MfnRows):
    """:class:`MfnRows` whose Newton points are exact on few rows (m ≤ :data:`GRAM_ROWS`;
    :class:`solvers.linalg_numpy.DirectSolves` does the same for few columns): the regularised
    least-squares problem of the active rows J solved in the row space, w̄ = X̃_Jᵀβ with
    (λI + S G_JJ S) γ = S Y_J, β = S γ, S = diag(√C_J), G = X̃X̃ᵀ (formed once). The same
    optimum as CGLS's steps; a step costs |J|³/3 flops instead of hundreds of CG sweeps when
    few rows are nearly separable (the check's svm on 160 labeled rows of w8a: 2,400 CG
    iterations at λ 0.001). A system too ill-conditioned for its factor takes CGLS's step."""

    def __init__(self, X, Y, C, lam, bias, eps, o, routines):
        super().__init__(X, Y, C, lam, bias, eps, o, None, True, routines)
        self.X = X
        self.bias = float(bias)
        self.G = np.asarray((X @ X.T).todense()) + self.bias * self.bias

    def newton_point(self, w_bar, eps_cur, cgmax, forcing):
        J, I, _, Ye, Ce, _ = self.state
        s = np.sqrt(Ce[J])
        A = s[:, None] * self.G[np.ix_(J, J)] * s[None, :]
        A[np.diag_indices_from(A)] += self.lam
        gamma = linalg_numpy.solve_spd(A, s * Ye[J]) if J.size else np.zeros(0)
        if gamma is None:
            return super().newton_point(w_bar, eps_cur, cgmax, forcing)
        beta = s * gamma
        w_bar[:-1] = self.X[J].T @ beta
        w_bar[-1] = self.bias * beta.sum()
        self.o_bar = self.G[:, J] @ beta
        agree = self.routines.la.margins_agree(self.Y, self.o_bar, J, I, eps_cur)
        return True, 0, agree


# l2svm_mfn(gram=True) solves exactly on at most this many rows: a step's factor costs m³/3
# flops (40 M at 500 rows, a few ms), more than CG's whole solve on many more rows
GRAM_ROWS = 500


def l2svm_mfn(X, Y, C, lam, *, bias=1.0, eps=1e-6, max_iter=linalg_numpy.MFNITERMAX, w0=None,
              o0=None, tag="", precondition=True, phys=None, forcing=0.0,
              numpy=False, routines=None, gram=False) -> LinearResult:
    """Minimise ``λ/2||w̃||² + 1/2 Σ C_i max(0, 1 - Y_i x̃_i·w̃)²`` by modified finite Newton
    (:func:`newton_loop` over the rows of this process).

    Each Newton step solves the regularised least-squares problem on the active rows
    (``Y_i o_i < 1``) by seeded CGLS, then moves by the exact line search. SVMlin's heuristics:
    from a cold start (``w0`` None) the first CGLS may take only 10 iterations and the tolerance
    is 0.01 until that loose problem is optimal, then ``eps``. Stops when the Newton point is
    optimal (CGLS converged and every margin agrees with the active set within eps), when the
    objective changes by less than 1e-9 relatively, or after ``max_iter`` Newton steps.

    ``forcing`` > 0 truncates the Newton steps: a step's CG also stops once its residual is
    ``forcing`` times the step's first (the gradient at w), unconverged, so the step is only
    as accurate as the distance to the optimum warrants (inexact Newton); once such steps stop
    moving the objective, or a line search keeps less than :data:`FORCING_MIN_STEP` of one,
    the systems are solved to eps again. The optimality test is the same,
    so is the optimum; 0 keeps SVMlin's steps exactly (tsvm and da follow SVMlin's path).

    A warm start (``w0``, SVMlin's seeding) may pass ``o0 = X̃ w0`` to save one product.
    With ``phys``, the sum runs over virtual rows v: target Y[v] and cost C[v] on the row
    X[phys[v]] (DA-S3VM's two label copies of an unlabeled row); active copies of one row are
    merged so the products touch each row once. The returned o is per row of X.
    ``gram``: exact Newton points (:class:`GramRows`) when there are at most
    :data:`GRAM_ROWS` rows and no ``phys``.
    ``numpy``: begin on :mod:`solvers.linalg_numpy`'s routines (:class:`Routines`);
    ``routines``: those of an enclosing fit (used as they are, ``numpy`` ignored).
    """
    X = _csr(X)
    if routines is None:
        routines = Routines(numpy)
    m, d = X.shape
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    C = np.ascontiguousarray(C, dtype=np.float64)
    cold = w0 is None
    w = np.zeros(d + 1) if cold else np.array(w0, dtype=np.float64)
    if o0 is not None:
        o = np.array(o0, dtype=np.float64)
    else:
        o = np.zeros(m)
        if not cold:
            routines.la.outputs(X.indptr, X.indices, X.data, float(bias), w, np.arange(m), o)
    if gram and phys is None and m <= GRAM_ROWS:
        rows = GramRows(X, Y, C, lam, bias, eps, o, routines)
    else:
        rows = MfnRows(X, Y, C, lam, bias, eps, o, phys, precondition, routines)
    w, F, it, cg_total, converged, reason = newton_loop(
        rows, lam, w, cold=cold, eps=eps, max_iter=max_iter, forcing=forcing, tag=tag)
    return LinearResult(w, rows.o, F, it, cg_total, converged, reason)


def rls_cgls(X, Y, C, lam, *, bias=1.0, eps=1e-6, max_iter=linalg_numpy.CGITERMAX, w0=None,
             precondition=True, numpy=False) -> LinearResult:
    """Minimise ``λ/2||w̃||² + 1/2 Σ C_i (Y_i - x̃_i·w̃)²`` by one CGLS solve (seeded by w0);
    ``numpy`` as in :func:`l2svm_mfn`."""
    X = _csr(X)
    routines = Routines(numpy)
    m, d = X.shape
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    C = np.ascontiguousarray(C, dtype=np.float64)
    a = (X.indptr, X.indices, X.data, float(bias))
    w = np.zeros(d + 1) if w0 is None else np.array(w0, dtype=np.float64)
    rows = np.arange(m)
    o = np.zeros(m)
    if w0 is not None:
        routines.la.outputs(*a, w, rows, o)
    opt, it = routines.cgls(*a, Y, C, rows, lam, w, o, eps, max_iter, precondition)
    la = routines.la
    la.outputs(*a, w, rows, o)  # exact outputs rather than CG's running sum
    F = 0.5 * lam * la.sq_norm(w) + la.squared_loss(Y, o, C)
    return LinearResult(w, o, float(F), it, it, bool(opt),
                        "optimal" if opt else "iteration limit")


def class_costs(Y: np.ndarray, cost: np.ndarray | None, cp: float, cn: float) -> np.ndarray:
    """c_i = Cp (Y_i > 0) or Cn (Y_i < 0), times the row's own cost factor."""
    c = np.where(Y > 0, cp, cn).astype(np.float64)
    return c if cost is None else c * cost


# λ auto cross-validates at most this many labeled rows (a seeded sample of them beyond), and
# scales the λ found by the rows' ratio: the loss is a sum over rows, so the same balance
# between it and λ/2‖w‖² needs λ in proportion to the rows
LAMBDA_ROWS = 5000
LAMBDA_FOLDS = 5


def choose_lambda(fit, X, y, cost, params: dict, name: str,
                  sampled_from: int | None = None) -> float:
    """λ for a fit of ``name`` given ``lambda`` auto: the best of ``LAMBDA_PATH`` by
    ``LAMBDA_FOLDS``-fold stratified cross-validation (seed 0) of the supervised ``fit``
    (fit_svm, or fit_rls for rls) on the labeled rows of X, y (0 = unlabeled), accuracy
    pooled over the folds (a λ whose held-out predictions are all one class only when every λ's
    are), among equals the middle one (the larger of two); each fold runs the path largest λ
    first, warm-started. With a class of fewer than 2 labeled rows, SVMlin's λ = 1. Logged.
    ``sampled_from``: the labeled rows of X are already :func:`lambda_sample`'s sample of that
    many (rows held elsewhere: a distributed fit)."""
    from ssl_svm.solvers.crossval import stratified_folds
    from ssl_svm.solvers.params import LAMBDA_PATH

    t0 = time.perf_counter()
    lab = np.flatnonzero(y != 0)
    _, counts = np.unique(y[lab], return_counts=True)
    k = min(LAMBDA_FOLDS, int(counts.min())) if counts.size >= 2 else 0
    if k < 2:
        log.info("%s: λ = 1 (auto: a class has fewer than 2 labeled rows to cross-validate; "
                 "SVMlin's default)", name)
        return 1.0
    scale = 1.0
    if sampled_from is not None:
        scale = sampled_from / lab.size
    elif lab.size > LAMBDA_ROWS:
        scale = lab.size / LAMBDA_ROWS
        lab = lab[lambda_sample(lab.size)]
    Xl, yl = _csr(X[lab]), y[lab]
    # only the columns the labeled rows use: the others' weights stay exactly 0 in every fit
    # (their gradient is λ w_j, 0 from the cold start and the warm seeds), so the fits and
    # the held-out predictions are the same up to the order of sums, and CG's vectors shrink
    # from all the features to these (a fraction of them on a few hundred text rows)
    Xl = Xl[:, np.unique(Xl.indices)]
    cl = np.ones(lab.size) if cost is None else cost[lab]
    sup = {"cost_positive": params.get("cost_positive", 1.0),
           "cost_negative": params.get("cost_negative", 1.0), "epsilon": params["epsilon"],
           "bias": params["bias"], "max_iter": SOLVER_PARAMS_MAX_ITER[fit.__name__]}
    if fit is fit_svm and yl.size <= GRAM_ROWS:
        fit = fit_svm_gram  # the same optima by exact Newton points: few rows, nearly separable
    folds = stratified_folds(yl, k, 0)
    right = np.zeros(len(LAMBDA_PATH))
    pred = np.zeros((len(LAMBDA_PATH), yl.size))
    with progress.quiet_solvers():  # the path's own fits are not the user's
        for f in range(k):
            test = folds == f
            warm = None
            for j, lam in enumerate(LAMBDA_PATH):
                m = fit(Xl[~test], yl[~test], cl[~test], {**sup, "lambda": lam},
                        **({} if warm is None else {"warm": warm}))
                warm = m.warm
                pred[j, test] = m.predict(Xl[test])
    right = (pred == yl).sum(axis=1)
    # a λ whose held-out predictions are all one class has learnt nothing but the prior (with
    # 10 labels, λ = 10 ties the majority share): it loses to any that separates
    separates = np.array([np.unique(p).size > 1 for p in pred])
    score = np.where(separates, right, -1) if separates.any() else right
    tied = np.flatnonzero(score == score.max())
    # the middle of a plateau of equals (e.g. 0.1 ... 1e-4 on 50 labeled text rows), not its
    # edge: the folds cannot tell them apart, and an edge is where the accuracy falls off
    j = int(tied[(tied.size - 1) // 2])
    lam = float(LAMBDA_PATH[j] * scale)
    log.info("%s: λ = %.6g (auto: %d-fold cross-validated accuracy %.1f %% of the %s on %d "
             "labeled rows%s, best of %s; %.2f s)", name, lam, k, 100.0 * right[j] / lab.size,
             "rls" if fit.__name__ == "fit_rls" else "supervised svm", lab.size,
             f", a sample: λ × {scale:.3g} for all of them" if scale != 1.0 else "",
             ", ".join(f"{v:g}" for v in LAMBDA_PATH), time.perf_counter() - t0)
    return lam


def lambda_sample(n_labeled: int) -> np.ndarray:
    """Which of n_labeled labeled rows (positions, ascending) :func:`choose_lambda`
    cross-validates: all, or a seeded sample of LAMBDA_ROWS."""
    if n_labeled <= LAMBDA_ROWS:
        return np.arange(n_labeled)
    return np.sort(np.random.default_rng(0).choice(n_labeled, LAMBDA_ROWS, replace=False))


def resolve_lambda(fit, X, y, cost, params: dict, name: str,
                   mean_loss: bool = False,
                   sampled_from: int | None = None) -> tuple[dict, float | None]:
    """(params with λ set, the λ chosen or None when given): :func:`choose_lambda` when
    ``params["lambda"]`` is None (auto). ``mean_loss``: the solver's labeled loss is a mean
    over the l labeled rows (tsvm and da, SVMlin's 1/l costs), not a sum as the supervised
    fit's, so the same balance is λ / l. ``sampled_from`` as in :func:`choose_lambda`."""
    if params["lambda"] is not None:
        return params, None
    lam = choose_lambda(fit, X, y, cost, params, name, sampled_from)
    if mean_loss:
        n_lab = sampled_from or int(np.sum(y != 0))
        lam /= n_lab
        log.info("%s: λ = %.6g for its mean loss over the %d labeled rows (λ / %d)", name, lam,
                 n_lab, n_lab)
    return {**params, "lambda": lam}, lam


def _fit(name, solve):
    def fit(X, y, cost, params, warm=None, backend=None):
        """Train; ``warm`` = the ``model.warm`` of a fit on the same rows with another λ
        (seeds each binary problem's w̃: a warm start along the regularisation path); λ None
        (auto): :func:`choose_lambda`. ``backend``: a :class:`solvers.backend.Backend` or the
        name of one (auto when None: :func:`solvers.backend.backend`)."""
        t0 = time.perf_counter()
        X = _csr(X)
        given = params
        small = backends.backend(name, X.shape[0], X.nnz, {"backend": backend}).numpy
        params, lam_auto = resolve_lambda(fit, X, y, cost, params, name)
        bias = params["bias"]
        seeds: list = []

        def binary(Y, tag):
            C = class_costs(Y, cost, params["cost_positive"], params["cost_negative"])
            w0 = nth_seed(warm, len(seeds))
            r = solve(X, Y, C, params, tag, w0, small)
            seeds.append(r.w)
            if not r.converged:
                log.warning("%s%s stopped before converging after %d iterations (%s)",
                            tag, name, r.iterations, r.reason)
            else:
                log.info("%s%s: objective %.10g after %d iterations (%d CG iterations; %s)",
                         tag, name, r.objective, r.iterations, r.cg_iterations, r.reason)
            stats = {"objective": r.objective, "iterations": r.iterations,
                     "cg_iterations": r.cg_iterations}
            return r.w[:-1], bias * r.w[-1], stats

        model = one_vs_rest(name, X, y, binary)
        model.params = {p.name: given[p.name] for p in PARAMS[name]}
        if lam_auto is not None:
            model.stats["lambda"] = [lam_auto]
        model.stats["n_rows"] = [X.shape[0]]
        model.stats["train_time"] = [time.perf_counter() - t0]
        model.warm = seeds
        return model

    fit.__name__ = f"fit_{name}"
    return fit


# Forcing term of the truncated Newton steps of `svm` (l2svm_mfn's ``forcing``): each step's
# CG stops once its residual is 0.1 of the step's starting gradient (liblinear's TRON uses the
# same 0.1), instead of solving every Newton system to -e: the same optimum in fewer CG
# iterations (BENCHMARKS.md, settings behind the defaults).
SVM_FORCING = 0.1
# ... until a line search takes less than this fraction of a truncated step: from then on the
# steps are exact (SVMlin's), as truncated steps can crawl on unnormalised dense rows.
FORCING_MIN_STEP = 1e-3


def _svm(X, Y, C, params, tag, w0, numpy):
    return l2svm_mfn(X, Y, C, params["lambda"], bias=params["bias"], eps=params["epsilon"],
                     max_iter=params["max_iter"], tag=tag, w0=w0, forcing=SVM_FORCING,
                     numpy=numpy)


def _svm_gram(X, Y, C, params, tag, w0, numpy):
    return l2svm_mfn(X, Y, C, params["lambda"], bias=params["bias"], eps=params["epsilon"],
                     max_iter=params["max_iter"], tag=tag, w0=w0, numpy=numpy, gram=True)


def _rls(X, Y, C, params, tag, w0, numpy):
    return rls_cgls(X, Y, C, params["lambda"], bias=params["bias"], eps=params["epsilon"],
                    max_iter=params["max_iter"], w0=w0, numpy=numpy)


PARAMS = {name: SOLVER_PARAMS[name] for name in ("svm", "rls")}
SOLVER_PARAMS_MAX_ITER = {f"fit_{n}": next(p.default for p in PARAMS[n] if p.name == "max_iter")
                          for n in PARAMS}
fit_svm = _fit("svm", _svm)
# the svm's optimum by exact Newton points on few rows (GramRows): the check's supervised bar
fit_svm_gram = _fit("svm", _svm_gram)
fit_rls = _fit("rls", _rls)
