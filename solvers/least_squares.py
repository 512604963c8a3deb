"""CGLS and the exact line search of L2-SVM-MFN's Newton steps, written once over whatever holds
the rows (SVMlin's routines, Sindhwani & Keerthi 2006; ALGORITHMS.md, the linear family).

Both algorithms see the rows only through a few sums, so the rows of this process on numba's
kernels (:class:`solvers.linalg.KernelRows`), the same rows on numpy and scipy
(:class:`solvers.linalg_numpy.ArrayRows`) and the blocks of a cluster
(:class:`solvers.distributed.BlockSums`) are implementations of one operator, as LIBLINEAR's
and dask-glm's Newton solvers are written over products. Every method returns a list of parts
(one per block; one for the rows of this process), which are summed here in that order, so the
same blocks give the same bytes.

CGLS's rows: the active rows J with targets Y, costs C and outputs ō, ō_J = X̃_J β kept:

- ``cg_start(precondition)`` -> parts of (|J|, diag(X̃_Jᵀ C X̃_J) or None, X̃_Jᵀ z, ‖z‖²),
  z = C(Y - ō) on J;
- ``cg_step(γ, p)`` -> parts of (‖z‖² after the step γ along the last product, None for no
  step; X̃_Jᵀ C X̃_J p; Σ C q², q = X̃_J p): ō_J += γ q and z -= γ C q for the last q, then the
  product for direction p;
- ``cg_residual()`` -> parts of (X̃_Jᵀ z, ‖z‖²) from z itself.

The line search's rows (outputs o at w, ō at w̄; every row or its virtual copies):

- ``line_terms(L₀, R₀)`` -> parts of (L, R, L₁, R₁): φ′ at δ = 0 and 1 with the active set
  at δ = 0, from the regulariser's L₀ and R₀ (the first part's sums start from them, so that
  one part sums as SVMlin does), and the same with the changes the breakpoints δ < 1 make;
- ``line_batch(upper, k)`` -> parts of (δ, ΔL, ΔR), the next k breakpoints of one side
  (δ >= 1 when ``upper``, else δ < 1) in increasing δ (ties in row order), after those given
  before on that side; k None: all that are left. :class:`Breakpoints` holds one part's;
- ``vectors.line_start(w, w̄, λ)`` -> (L₀, R₀) = (λ w·(w̄ - w), λ w̄·(w̄ - w)).

Imports no numba.
"""

from __future__ import annotations

import logging

import numpy as np

from ssl_svm.solvers import linalg_numpy as C0
from ssl_svm.solvers import progress

log = logging.getLogger("ssl.solver.linear")

# the line search's root lies near δ = 1, a few breakpoints past it: the first this many of
# each part are ordered alone (17,000 breakpoints a search on w8a's tsvm, 0.7 ms to sort them
# all); then the rest of one part, or of several parts this many times more at each round up
# to BATCH_MAX (what a cluster's client holds of them: 0.2 MB a block a round)
FIRST_BATCH = 64
BATCH_GROWTH = 64
BATCH_MAX = 8192


def part_sum(parts):
    """Σ of the parts in order (scalars or arrays; an array sum is a new array)."""
    total = parts[0]
    if isinstance(total, np.ndarray):
        total = total.copy()
    for p in parts[1:]:
        total = total + p
    return total


def _total(parts):
    """Σ of the parts in order; one part is returned as it is (the caller uses it before the
    rows are called again)."""
    return parts[0] if len(parts) == 1 else part_sum(parts)


def cgls(rows, lam, beta, eps, itermax, precondition, forcing=0.0):
    """Seeded (preconditioned) conjugate gradient for the regularised least-squares problem

        (λI + X̃_Jᵀ C_J X̃_J) β = X̃_Jᵀ C_J Y_J

    over the active rows of ``rows``, from β (updated in place; the rows' ō_J follows X̃_J β).
    Stops when ``‖r‖² <= eps² ‖z‖²`` with z = C(Y - ō) and r = X̃_Jᵀ z - λβ (SVMlin's rule, on
    the unpreconditioned residual) or after ``itermax`` iterations. With ``precondition`` the
    directions use M = λI + α·diag(X̃_Jᵀ C X̃_J) (the same iterates' limit, a shorter path on
    badly scaled data). With ``forcing`` > 0 it also stops, not converged, once
    ‖r‖ <= forcing ‖r₀‖ (a truncated Newton step). Returns (converged, iterations).

    One ``cg_step`` per iteration: the rows apply the last step γ and form the next product in
    the same call (on a cluster, one round trip an iteration). ``rows.vectors`` does the work
    on the n-long vectors (:class:`solvers.linalg_numpy.NumpyVectors` or numba's).
    """
    n = beta.size
    vec = rows.vectors
    parts = rows.cg_start(bool(precondition))
    if sum(p[0] for p in parts) == 0:  # no rows: the minimiser of λ/2‖β‖² is β = 0
        beta[:] = 0.0
        return True, 0
    m_inv = np.ones(n)
    if precondition:
        m_inv = 1.0 / (lam + C0.ALPHA * part_sum([p[1] for p in parts if p[1] is not None]))
    r = part_sum([p[2] for p in parts]) - lam * beta
    omega_z = part_sum([p[3] for p in parts])
    omega1, rho = vec.norms(r, m_inv)
    eps2 = eps * eps
    if omega1 <= eps2 * omega_z:
        return True, 0
    p = np.empty(n)
    p_next = np.zeros(n)
    omega_p = vec.direction(p, r, p_next, m_inv, 0.0)  # p = M⁻¹r
    inexact = forcing * forcing * omega1
    gained = 0.0
    stalls = 0
    it = 0
    res = rows.cg_step(None, p)
    while True:
        if it >= itermax:
            return False, it
        it += 1
        t = _total([x[1] for x in res])
        curv = lam * omega_p + _total([x[2] for x in res])
        if not curv > 0.0:  # p underflowed to 0 (or overflowed): nothing left to reduce
            return True, it - 1
        gamma = rho / curv
        # this step lowers the quadratic objective by γρ/2; once steps lower it by less than
        # its rounding (STALL of all that was gained), the residual is at the floor the
        # products' rounding sets, and more iterations only drift: converged, as far as double
        # precision goes
        gain = 0.5 * gamma * rho
        gained += gain
        stalls = stalls + 1 if gain <= C0.STALL * gained else 0
        omega1, rho_new = vec.step(beta, r, p, t, gamma, lam, m_inv)  # r by recurrence
        omega_p_next = vec.direction(p_next, r, p, m_inv, rho_new / rho)
        res = rows.cg_step(gamma, p_next)
        omega_z = _total([x[0] for x in res])
        if omega1 <= eps2 * omega_z or omega1 == 0.0 or stalls >= 3:
            # the test is on the residual itself: recompute it from z (the recurrence drifts
            # by rounding); when it fails, CG goes on from it
            parts = rows.cg_residual()
            r = part_sum([x[0] for x in parts]) - lam * beta
            omega_z = part_sum([x[1] for x in parts])
            omega1, rho_new = vec.norms(r, m_inv)
            if omega1 <= eps2 * omega_z or omega1 == 0.0 or stalls >= 3:
                return True, it
            omega_p_next = vec.direction(p_next, r, p, m_inv, rho_new / rho)
            res = rows.cg_step(None, p_next)
        if omega1 <= inexact:
            return False, it
        rho = rho_new
        p, p_next = p_next, p
        omega_p = omega_p_next
        progress.beat(log, "conjugate gradient: %d iterations of at most %d", it, itermax)


def line_search(rows, lam, w, w_bar) -> float:
    """Exact minimiser δ >= 0 of φ(δ) = f(w + δ(w̄ - w)) for the L2-SVM objective.

    φ′ is piecewise linear in δ: on each piece it is L + δ(R - L), where L and R are φ′ at
    δ = 0 and δ = 1 with the active set of that piece. The breakpoints are where a row's margin
    y·o crosses 1; they are walked in increasing δ until φ′ turns non-negative. Newton steps
    usually end near δ = 1, so φ′ is first evaluated there and only the side of 1 that holds
    the root is walked, its first breakpoints first (:data:`FIRST_BATCH`). With several parts,
    the breakpoints merged from the batches are in order up to the smallest last one of a part
    that has more; past it, the next batches are asked for (growing to :data:`BATCH_MAX`).
    """
    terms = rows.line_terms(*rows.vectors.line_start(w, w_bar, lam))
    L = part_sum([t[0] for t in terms])
    R = part_sum([t[1] for t in terms])
    if L >= 0.0:  # not a descent direction: δ = 0 is the minimiser over δ >= 0
        return 0.0
    L1 = part_sum([t[2] for t in terms])
    R1 = part_sum([t[3] for t in terms])
    upper = not R1 >= 0.0  # φ′(1) < 0: the root lies past 1
    if upper:
        L, R = L1, R1
    nparts = len(terms)
    pending = [(np.empty(0), np.empty(0), np.empty(0))] * nparts
    more = [True] * nparts
    k = FIRST_BATCH
    while any(more):
        got = rows.line_batch(upper, k)
        for i, (d, dl, dr) in enumerate(got):
            if not more[i]:
                continue
            if k is None or d.size < k:
                more[i] = False
            pd, pl, pr = pending[i]
            pending[i] = (np.concatenate([pd, d]), np.concatenate([pl, dl]),
                          np.concatenate([pr, dr]))
        # every part with more to give has given breakpoints up to its last: the merge is
        # complete up to the smallest of those
        limit = min((pending[i][0][-1] for i in range(nparts) if more[i] and pending[i][0].size),
                    default=np.inf)
        take = [int(np.searchsorted(pd, limit, "right")) for pd, _, _ in pending]
        d = np.concatenate([pending[i][0][:take[i]] for i in range(nparts)])
        order = np.argsort(d, kind="stable")  # ties: part order, then row order
        d = d[order]
        Ls = np.cumsum(np.concatenate([[L], np.concatenate(
            [pending[i][1][:take[i]] for i in range(nparts)])[order]]))
        Rs = np.cumsum(np.concatenate([[R], np.concatenate(
            [pending[i][2][:take[i]] for i in range(nparts)])[order]]))
        past = np.flatnonzero(Ls[:-1] + d * (Rs[:-1] - Ls[:-1]) >= 0.0)
        if past.size:
            L, R = Ls[past[0]], Rs[past[0]]
            break
        L, R = Ls[-1], Rs[-1]
        pending = [(pd[t:], pl[t:], pr[t:]) for (pd, pl, pr), t in zip(pending, take)]
        k = min(k * BATCH_GROWTH, BATCH_MAX) if nparts > 1 else None
    if R - L <= 0.0:  # w̄ == w: nothing to move
        return 0.0
    return -L / (R - L)


class Breakpoints:
    """One part's line-search terms from its rows' (L, R) and breakpoints δ with their (ΔL, ΔR)
    in row order (:func:`solvers.linalg.line_pieces`): :func:`line_search`'s ``line_terms`` and
    ``line_batch`` for it. ``first_k(rows, keys, k)``: the rows of the k smallest keys in
    stable order (:func:`solvers.linalg.first_k` or :func:`solvers.linalg_numpy.first_k`)."""

    def __init__(self, L, R, deltas, dl, dr, first_k):
        self.L, self.R = float(L), float(R)
        self.deltas, self.dl, self.dr = deltas, dl, dr
        self.first_k = first_k
        below = deltas < 1.0
        self.side = {False: np.flatnonzero(below), True: np.flatnonzero(~below)}
        self.given = {False: 0, True: 0}

    def terms(self) -> tuple:
        """(L, R, L₁, R₁): L₁ = L + the changes below δ = 1, added in row order."""
        lo = self.side[False]
        L1 = np.add.accumulate(np.concatenate([[self.L], self.dl[lo]]))[-1]
        R1 = np.add.accumulate(np.concatenate([[self.R], self.dr[lo]]))[-1]
        return self.L, self.R, float(L1), float(R1)

    def batch(self, upper: bool, k) -> tuple:
        sel = self.side[upper]
        done = self.given[upper]
        want = sel.size if k is None else min(sel.size, done + k)
        if want <= done:
            idx = sel[:0]
        else:
            idx = self.first_k(sel, self.deltas[sel], want)[done:want]
        self.given[upper] = want
        return self.deltas[idx], self.dl[idx], self.dr[idx]


class PieceRows:
    """The line search's rows in this process: one part, from targets Y, costs C and the
    outputs o and ō of every row (or virtual copy), on the kernels of ``la``
    (:mod:`solvers.linalg` or :mod:`solvers.linalg_numpy`)."""

    def __init__(self, la, Y, C, o, o_bar):
        self.la, self.Y, self.C, self.o, self.o_bar = la, Y, C, o, o_bar
        self.vectors = la.VECTORS

    def line_terms(self, L0, R0) -> list:
        self.part = Breakpoints(*self.la.line_pieces(self.Y, self.C, self.o, self.o_bar,
                                                     L0, R0), self.la.first_k)
        return [self.part.terms()]

    def line_batch(self, upper: bool, k) -> list:
        return [self.part.batch(upper, k)]
