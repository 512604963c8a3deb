"""Linear-family core: CGLS and the exact piecewise-quadratic line search (ALGORITHMS.md §1).

Conventions shared by every routine here:

* X is CSR (m rows, d columns), passed as its three arrays; every row carries an extra constant
  feature of value ``bias`` appended at column d (``bias = 0`` switches it off). Weight vectors
  therefore have length d + 1, the last entry being the bias weight, regularised like any other.
* Y are targets (±1 for the SVM loss), C per-row costs, o the outputs ``o_i = x̃_i·w``.
* The objective is ``λ/2 ||w||² + 1/2 Σ_i C_i loss_i`` with costs summed, not averaged.

All loops are numba-compiled and touch only the stored nonzeros of the rows involved; X is
never densified.
"""

import numpy as np
from numba import njit

BIG_EPSILON = 0.01  # SVMlin: the loose tolerance of the first, cheap phase
SMALL_CGITERMAX = 10  # SVMlin: CG iterations allowed in the very first solve from w = 0
CGITERMAX = 10000
RELATIVE_STOP_EPS = 1e-9
MFNITERMAX = 50


@njit(cache=True)
def outputs(indptr, indices, data, bias, w, rows, o):
    """o[i] = x_i·w[:d] + bias·w[d] for every i in rows."""
    d = w.size - 1
    wb = bias * w[d]
    for t in range(rows.size):
        i = rows[t]
        s = wb
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * w[indices[k]]
        o[i] = s


@njit(cache=True)
def _xt_times(indptr, indices, data, bias, rows, z, r):
    """r[:d] += X_rowsᵀ z, r[d] += bias·Σz (r is not cleared)."""
    d = r.size - 1
    zs = 0.0
    for t in range(rows.size):
        i = rows[t]
        zt = z[t]
        zs += zt
        for k in range(indptr[i], indptr[i + 1]):
            r[indices[k]] += data[k] * zt
    r[d] += bias * zs


@njit(cache=True)
def cgls(indptr, indices, data, bias, Y, C, J, lam, beta, o, eps, itermax):
    """Seeded conjugate gradient for the regularised weighted least-squares problem

        (λI + X_Jᵀ C_J X_J) β = X_Jᵀ C_J Y_J

    over the rows J, starting from β (updated in place); o[J] must equal X_J β on entry and is
    kept equal to it. Stops when ``||r||² < eps² ||z||²`` with ``z = C(Y - o)`` and
    ``r = X_Jᵀ z - λβ`` (SVMlin's rule) or after ``itermax`` iterations.
    Returns (converged, iterations).
    """
    n = beta.size
    d = n - 1
    na = J.size
    if na == 0:  # no rows: the minimiser of λ/2||β||² is β = 0, and o[J] is empty
        beta[:] = 0.0
        return True, 0
    z = np.empty(na)
    q = np.empty(na)
    r = np.zeros(n)
    p = np.empty(n)
    omega_z = 0.0
    for t in range(na):
        i = J[t]
        z[t] = C[i] * (Y[i] - o[i])
        omega_z += z[t] * z[t]
    _xt_times(indptr, indices, data, bias, J, z, r)
    omega1 = 0.0
    for k in range(n):
        r[k] -= lam * beta[k]
        p[k] = r[k]
        omega1 += r[k] * r[k]
    eps2 = eps * eps
    if omega1 <= eps2 * omega_z:
        return True, 0
    omega_p = omega1
    it = 0
    while it < itermax:
        it += 1
        omega_q = 0.0
        pb = bias * p[d]
        for t in range(na):
            i = J[t]
            s = pb
            for k in range(indptr[i], indptr[i + 1]):
                s += data[k] * p[indices[k]]
            q[t] = s
            omega_q += C[i] * s * s
        curv = lam * omega_p + omega_q
        if curv <= 0.0:  # p underflowed to 0: nothing left to reduce
            return True, it - 1
        gamma = omega1 / curv
        inv_omega_old = 1.0 / omega1
        for k in range(n):
            beta[k] += gamma * p[k]
            r[k] = 0.0
        omega_z = 0.0
        for t in range(na):
            i = J[t]
            o[i] += gamma * q[t]
            z[t] -= gamma * C[i] * q[t]
            omega_z += z[t] * z[t]
        _xt_times(indptr, indices, data, bias, J, z, r)
        omega1 = 0.0
        for k in range(n):
            r[k] -= lam * beta[k]
            omega1 += r[k] * r[k]
        if omega1 <= eps2 * omega_z or omega1 == 0.0:
            return True, it
        scale = omega1 * inv_omega_old
        omega_p = 0.0
        for k in range(n):
            p[k] = r[k] + p[k] * scale
            omega_p += p[k] * p[k]
    return False, it


@njit(cache=True)
def split_active(Y, o, C):
    """Active rows J = {i : Y_i o_i < 1}, the rest, and ``1/2 Σ_J C_i (1 - Y_i o_i)²``."""
    m = Y.size
    act = np.empty(m, np.int64)
    ina = np.empty(m, np.int64)
    na = 0
    ni = 0
    loss = 0.0
    for i in range(m):
        diff = 1.0 - Y[i] * o[i]
        if diff > 0.0:
            act[na] = i
            na += 1
            loss += 0.5 * C[i] * diff * diff
        else:
            ina[ni] = i
            ni += 1
    return act[:na], ina[:ni], loss


@njit(cache=True)
def margins_agree(Y, o, J, I, eps):
    """True when every row of J has Y·o <= 1 + eps and every row of I has Y·o >= 1 - eps."""
    for t in range(J.size):
        i = J[t]
        if Y[i] * o[i] > 1.0 + eps:
            return False
    for t in range(I.size):
        i = I[t]
        if Y[i] * o[i] < 1.0 - eps:
            return False
    return True


@njit(cache=True)
def line_search(w, w_bar, lam, o, o_bar, Y, C):
    """Exact minimiser δ ≥ 0 of φ(δ) = f(w + δ(w̄ - w)) for the L2-SVM objective.

    φ′ is piecewise linear in δ: on each piece it is L + δ(R - L), where L and R are φ′ at
    δ = 0 and δ = 1 with the active set of that piece. The breakpoints are where a row's margin
    y·o crosses 1; walk them in increasing order until φ′ changes sign.
    """
    omega_l = 0.0
    omega_r = 0.0
    for k in range(w.size):
        diff = w_bar[k] - w[k]
        omega_l += w[k] * diff
        omega_r += w_bar[k] * diff
    L = lam * omega_l
    R = lam * omega_r
    m = Y.size
    deltas = np.empty(m)
    index = np.empty(m, np.int64)
    sign = np.empty(m)
    p = 0
    for i in range(m):
        yo = Y[i] * o[i]
        diff = Y[i] * (o_bar[i] - o[i])
        if yo < 1.0:
            dd = C[i] * (o_bar[i] - o[i])
            L += (o[i] - Y[i]) * dd
            R += (o_bar[i] - Y[i]) * dd
            if diff > 0.0:  # leaves the active set at this δ
                deltas[p] = (1.0 - yo) / diff
                index[p] = i
                sign[p] = -1.0
                p += 1
        elif diff < 0.0:  # enters the active set at this δ
            deltas[p] = (1.0 - yo) / diff
            index[p] = i
            sign[p] = 1.0
            p += 1
    if L >= 0.0:  # not a descent direction: δ = 0 is the minimiser over δ ≥ 0
        return 0.0
    order = np.argsort(deltas[:p], kind="mergesort")
    for t in range(p):
        j = order[t]
        if L + deltas[j] * (R - L) >= 0.0:
            break
        i = index[j]
        dd = sign[j] * C[i] * (o_bar[i] - o[i])
        L += dd * (o[i] - Y[i])
        R += dd * (o_bar[i] - Y[i])
    if R - L <= 0.0:  # w̄ == w: nothing to move
        return 0.0
    return -L / (R - L)


@njit(cache=True)
def sq_norm(w):
    s = 0.0
    for k in range(w.size):
        s += w[k] * w[k]
    return s


@njit(cache=True)
def squared_loss(Y, o, C):
    """1/2 Σ_i C_i (Y_i - o_i)²."""
    s = 0.0
    for i in range(Y.size):
        e = Y[i] - o[i]
        s += C[i] * e * e
    return 0.5 * s


def svm_objective(X, Y, C, lam, w, bias):
    """λ/2 ||w||² + 1/2 Σ C_i max(0, 1 - Y_i x̃_i·w)² (bias weight included in ||w||)."""
    o = X @ w[:-1] + bias * w[-1]
    h = np.maximum(0.0, 1.0 - Y * o)
    return 0.5 * lam * float(w @ w) + 0.5 * float(C @ (h * h))
