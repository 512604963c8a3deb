"""The TV family's compiled kernels (numba): the Chambolle–Pock loop of
:func:`ssl_svm.solvers.tv.tv_prox`, Michelot's simplex projection and the SMO of the SVM steps
(:func:`ssl_svm.solvers.tvsvm.svm_dual_smo`), on numba's backend
(:mod:`ssl_svm.solvers.backend`); :mod:`ssl_svm.solvers.tv` holds the numpy ones."""

import math

import numpy as np
from numba import prange

from ssl_svm.solvers.jit import njit


@njit(cache=True)
def apply_D(i, j, c, x, out):
    for e in range(c.size):
        out[e] = c[e] * (x[i[e]] - x[j[e]])


@njit(cache=True)
def apply_Dt(i, j, c, p, out):
    """out = Dᵀp: −c_e p_e into j_e over every edge, then +c_e p_e into i_e summed in a
    register over each run of equal i_e. Adding into out[i_e] edge after edge waited on
    the store of the edge before (a run is a row's edges: 87 % of usps49-10's edges follow
    one of the same i); the register does not (17-20 → 13 µs on that graph). For the
    graph's edges (i < j, sorted by i) every sum is taken in the one-loop order: a node's
    j-side edges come from rows before its own."""
    out[:] = 0.0
    m = c.size
    for e in range(m):
        out[j[e]] -= c[e] * p[e]
    e = 0
    while e < m:
        k = i[e]
        acc = out[k]
        while e < m and i[e] == k:
            acc += c[e] * p[e]
            e += 1
        out[k] = acc


@njit(cache=True)
def gap(i, j, c, x, z, gamma, rho, Dx, Dtp):
    """(primal, dual) at x and at the p whose Dᵀp is already in Dtp; Dx is work space."""
    apply_D(i, j, c, x, Dx)
    primal = 0.0
    for e in range(c.size):
        primal += abs(Dx[e])
    primal *= gamma
    dual = 0.0
    for k in range(x.size):
        d = x[k] - z[k]
        primal += 0.5 * rho * d * d
        dual += Dtp[k] * z[k] - Dtp[k] * Dtp[k] / (2.0 * rho)
    return primal, dual


@njit(cache=True)
def cp_loop(i, j, c, z, gamma, rho, x, p, L2, tol, max_iter, check_every, restart_factor):
    n = x.size
    m = c.size
    tau0 = 1.0 / math.sqrt(L2) if L2 > 0 else 1.0
    sigma0 = 1.0 / (tau0 * L2) if L2 > 0 else 1.0
    tau, sigma = tau0, sigma0
    xbar = x.copy()
    xold = np.empty(n)
    Dx = np.empty(m)
    Dtp = np.empty(n)
    apply_Dt(i, j, c, p, Dtp)
    primal, dual = gap(i, j, c, x, z, gamma, rho, Dx, Dtp)
    gap_at_restart = primal - dual
    it = 0
    restarts = 0
    while it < max_iter and primal - dual > tol * max(1.0, abs(primal)):
        for _ in range(check_every):
            # dual ascent on p, projected onto |p_e| ≤ γ (F* of γ‖·‖₁)
            apply_D(i, j, c, xbar, Dx)
            for e in range(m):
                v = p[e] + sigma * Dx[e]
                p[e] = gamma if v > gamma else (-gamma if v < -gamma else v)
            # primal step: prox of τ·ρ/2‖x − z‖²
            apply_Dt(i, j, c, p, Dtp)
            for k in range(n):
                xold[k] = x[k]
                x[k] = (x[k] - tau * Dtp[k] + tau * rho * z[k]) / (1.0 + tau * rho)
            theta = 1.0 / math.sqrt(1.0 + 2.0 * rho * tau)
            tau *= theta
            sigma /= theta
            for k in range(n):
                xbar[k] = x[k] + theta * (x[k] - xold[k])
            it += 1
        # Dtp = Dᵀp for the current p: the last primal step computed it
        primal, dual = gap(i, j, c, x, z, gamma, rho, Dx, Dtp)
        if primal - dual <= restart_factor * gap_at_restart:
            # restart the step sizes: the O(1/k²) schedule shrinks τ for ever, while from a
            # better point the full steps converge again; on this piecewise-quadratic problem
            # the restarted method converges linearly
            tau, sigma = tau0, sigma0
            for k in range(n):
                xbar[k] = x[k]
            gap_at_restart = primal - dual
            restarts += 1
    return it, primal, dual, restarts


@njit(cache=True, parallel=True)
def cp_columns(i, j, c, Z, gammas, rhos, X, P, L2, tol, max_iter, check_every,
                restart_factor, stats):
    for k in prange(Z.shape[0]):
        it, primal, dual, restarts = cp_loop(i, j, c, Z[k], gammas[k], rhos[k], X[k], P[k],
                                              L2, tol, max_iter, check_every, restart_factor)
        stats[k, 0] = it
        stats[k, 1] = primal
        stats[k, 2] = dual
        stats[k, 3] = restarts


@njit(cache=True)
def michelot_row(v, out, work):
    """Michelot (1986): project v onto {x ≥ 0, Σx = 1} by repeatedly dropping the
    coordinates that would go negative and re-spreading the excess over the rest."""
    n = v.size
    active = work
    for k in range(n):
        active[k] = True
    na = n
    while True:
        s = 0.0
        for k in range(n):
            if active[k]:
                s += v[k]
        shift = (s - 1.0) / na
        dropped = 0
        for k in range(n):
            if active[k] and v[k] - shift <= 0.0:
                active[k] = False
                dropped += 1
        if dropped == 0:
            break
        na -= dropped
    for k in range(n):
        out[k] = v[k] - shift if active[k] else 0.0


@njit(cache=True)
def michelot_rows(V, out):
    work = np.empty(V.shape[1], dtype=np.bool_)
    for r in range(V.shape[0]):
        michelot_row(V[r], out[r], work)


@njit(cache=True, inline="always")
def _can_rise(yt, bt, mu):
    """β_t can move along +y_t (SMO's I_up)."""
    return (yt > 0 and bt < mu) or (yt < 0 and bt > 0)


@njit(cache=True, inline="always")
def _can_fall(yt, bt, mu):
    """β_t can move along −y_t (SMO's I_low)."""
    return (yt > 0 and bt > 0) or (yt < 0 and bt < mu)


@njit(cache=True, inline="always")
def _argmax_first(a):
    """(index, value) of the first maximum of a, as one scan with strict ``>`` from −∞ finds
    it (−1 and −∞ when no entry exceeds −∞), in four interleaved lanes: a single scan waits
    on each comparison before the next, the lanes do not (about 2.3x faster at 2,000
    entries). Lane maxima combine by value, equal values to the smaller index, which is the
    first scan's pick."""
    n = a.size
    m0 = m1 = m2 = m3 = -np.inf
    i0 = i1 = i2 = i3 = -1
    n4 = n - n % 4
    for t in range(0, n4, 4):
        x0 = a[t]
        x1 = a[t + 1]
        x2 = a[t + 2]
        x3 = a[t + 3]
        if x0 > m0:
            m0 = x0
            i0 = t
        if x1 > m1:
            m1 = x1
            i1 = t + 1
        if x2 > m2:
            m2 = x2
            i2 = t + 2
        if x3 > m3:
            m3 = x3
            i3 = t + 3
    for t in range(n4, n):  # past every lane's indices: strict keeps the lanes' ties
        if a[t] > m0:
            m0 = a[t]
            i0 = t
    m0, i0 = _larger(m0, i0, m1, i1)
    m2, i2 = _larger(m2, i2, m3, i3)
    m0, i0 = _larger(m0, i0, m2, i2)
    return i0, m0


@njit(cache=True, inline="always")
def _larger(m0, i0, m1, i1):
    """The larger of two lanes' (value, index), equal values to the smaller index (−1: the
    lane found none)."""
    if m1 > m0 or (m1 == m0 and i1 >= 0 and (i0 < 0 or i1 < i0)):
        return m1, i1
    return m0, i0


@njit(cache=True, inline="always")
def _min_lanes(a):
    """min(a) (+∞ for none) in four interleaved lanes (see :func:`_argmax_first`)."""
    n = a.size
    m0 = m1 = m2 = m3 = np.inf
    n4 = n - n % 4
    for t in range(0, n4, 4):  # strict <, as the one scan: the first of equal values
        m0 = a[t] if a[t] < m0 else m0
        m1 = a[t + 1] if a[t + 1] < m1 else m1
        m2 = a[t + 2] if a[t + 2] < m2 else m2
        m3 = a[t + 3] if a[t + 3] < m3 else m3
    for t in range(n4, n):
        m0 = a[t] if a[t] < m0 else m0
    m0 = m1 if m1 < m0 else m0
    m2 = m3 if m3 < m2 else m2
    return m2 if m2 < m0 else m0


@njit(cache=True)
def svm_dual_smo(G, q, y, mu, beta, tol, max_iter):
    """min ½βᵀQβ − qᵀβ s.t. yᵀβ = 0, 0 ≤ β ≤ μ with Q_ij = y_i y_j G_ij (y = ±1, G symmetric
    PSD, so Q is: the classes of a multi-class fit share one G) by SMO with the
    second-order working set (Fan, Chen & Lin 2005, WSS 2: i the maximal violator, j the
    partner whose exact pair step gains most) and the exact clipped pair step; it stops when
    the maximal violation is at most ``tol``. β is a feasible start, updated in place.
    Returns (iterations, final violation). G's rows are read for its columns (G symmetric):
    contiguous, where the columns of a 2,000-row G cost a cache miss an entry. y = ±1 makes
    every product by y exact, so the steps are those on Q itself to the last bit.

    Each pass computes its per-entry values into an array without branches (compiled to
    vector instructions) and then scans that array for the first maximum, the pick of the
    strict comparisons (in interleaved lanes, :func:`_argmax_first`); the gradient's update
    pass also prepares the next selection's values. The pairs and the arithmetic are those
    of one branching loop a pass; about 2.2x faster on the shuttle sample's 2,000-row duals.
    (Folding the scans into the passes that fill the arrays was slower: their arithmetic no
    longer vectorised.)"""
    n = q.size
    grad = y * (G @ (y * beta)) - q
    diag = np.empty(n)
    up = np.empty(n, dtype=np.bool_)
    low = np.empty(n, dtype=np.bool_)
    work = np.empty(n)
    work2 = np.empty(n)
    work3 = np.empty(n)
    for t in range(n):
        diag[t] = G[t, t]
        up[t] = _can_rise(y[t], beta[t], mu)
        low[t] = _can_fall(y[t], beta[t], mu)
    # −y_t ∇_t over I_up (β can move along +y) and over I_low, −∞ / +∞ elsewhere
    viol = np.inf
    for t in range(n):
        v = -y[t] * grad[t]
        work[t] = v if up[t] else -np.inf
        work2[t] = v if low[t] else np.inf
    for it in range(max_iter):
        i, gmax = _argmax_first(work)
        gmin = _min_lanes(work2)
        viol = gmax - gmin
        if i < 0 or gmin == np.inf or viol <= tol:
            return it, viol
        # the partner j in I_low with −y_j∇_j < gmax that maximises b²/η, the decrease of
        # the unclipped pair step, b = gmax + y_j∇_j, η = Q_ii + Q_jj − 2 y_i y_j Q_ij
        # = G_ii + G_jj − 2 G_ij
        Gi = G[i]
        yi = y[i]
        di_ = diag[i]
        for t in range(n):
            b = gmax + y[t] * grad[t]
            eta = di_ + diag[t] - 2.0 * Gi[t]
            g = b * b / (eta if eta > 1e-12 else 1e-12)
            work3[t] = g if (low[t] and b > 0.0) else -1.0
        j, best = _argmax_first(work3)  # entries are −1 or ≥ 0; some is > 0 (gmax > gmin)
        # move β_i by +y_i·s and β_j by −y_j·s (keeps yᵀβ): the objective changes by
        # −s·b + ½s²·η with b = gmax + y_j∇_j
        b = gmax + y[j] * grad[j]
        eta = diag[i] + diag[j] - 2.0 * Gi[j]
        s = b / eta if eta > 1e-15 else np.inf
        s = min(s, (mu - beta[i]) if yi > 0 else beta[i])
        s = min(s, beta[j] if y[j] > 0 else (mu - beta[j]))
        beta[i] += yi * s
        beta[j] += -y[j] * s
        up[i] = _can_rise(y[i], beta[i], mu)
        low[i] = _can_fall(y[i], beta[i], mu)
        up[j] = _can_rise(y[j], beta[j], mu)
        low[j] = _can_fall(y[j], beta[j], mu)
        # ∇ += Q_i·y_i s − Q_j·y_j s = y ∘ (G_i s − G_j s)
        Gj = G[j]
        for t in range(n):
            g = grad[t] + y[t] * (Gi[t] * s - Gj[t] * s)
            grad[t] = g
            v = -y[t] * g
            work[t] = v if up[t] else -np.inf
            work2[t] = v if low[t] else np.inf
    return max_iter, viol


@njit(cache=True, parallel=True)
def svm_dual_smo_classes(G, Q, Y, mu, B, tol, max_iter, stats):
    """:func:`svm_dual_smo` of each class k (rows Q[k], Y[k], B[k]) over the classes' shared
    G, the classes on numba's threads: the duals are independent, so each β is that of one
    call after another, to the bit. stats[k] = (iterations, final violation)."""
    for k in prange(Q.shape[0]):
        it, viol = svm_dual_smo(G, Q[k], Y[k], mu, B[k], tol, max_iter)
        stats[k, 0] = it
        stats[k, 1] = viol
