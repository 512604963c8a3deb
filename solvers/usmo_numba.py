"""The compiled kernels (numba) of usmo (:mod:`ssl_svm.solvers.usmo`): the kernel rows and
their cache, the SMO's pair steps and selection, and the linear kernel's dual coordinate descent
(:mod:`ssl_svm.solvers.usmo_dcd`). Both algorithm modules take them from here, so neither
imports the other's kernels nor numba."""

import math

import numpy as np
from numba import prange

from ssl_svm.solvers.jit import njit
from ssl_svm.solvers.usmo import KINK_RTOL, PARALLEL_NNZ  # the algorithm's own constants


@njit(cache=True)
def _kval(kind, s, ni, nu, gamma, coef0, degree):
    if kind == 0:
        return s
    if kind == 1:
        return (gamma * s + coef0) ** degree
    d = ni + nu - 2.0 * s
    if d < 0.0:
        d = 0.0
    return math.exp(-gamma * d)


@njit(cache=True)
def _krow_block(ni, indptr, indices, data, sqn, rows, kind, gamma, coef0, degree, buf, out,
                lo, hi):
    for k in range(lo, hi):
        u = rows[k]
        s = 0.0
        for t in range(indptr[u], indptr[u + 1]):
            s += data[t] * buf[indices[t]]
        out[k] = _kval(kind, s, ni, sqn[u], gamma, coef0, degree)


@njit(cache=True, parallel=True)
def _krow_par(ni, indptr, indices, data, sqn, rows, kind, gamma, coef0, degree, buf, out, nb):
    step = (rows.size + nb - 1) // nb
    for b in prange(nb):
        _krow_block(ni, indptr, indices, data, sqn, rows, kind, gamma, coef0, degree, buf, out,
                    b * step, min(rows.size, (b + 1) * step))


@njit(cache=True)
def _kernel_row(i, indptr, indices, data, sqn, rows, kind, gamma, coef0, degree, buf, out):
    """out[k] = K(x_i, x_rows[k]); buf is a zeroed dense work vector (left zeroed)."""
    for t in range(indptr[i], indptr[i + 1]):
        buf[indices[t]] = data[t]
    if indptr[-1] < PARALLEL_NNZ:
        _krow_block(sqn[i], indptr, indices, data, sqn, rows, kind, gamma, coef0, degree, buf,
                    out, 0, rows.size)
    else:
        _krow_par(sqn[i], indptr, indices, data, sqn, rows, kind, gamma, coef0, degree, buf,
                  out, 8)
    for t in range(indptr[i], indptr[i + 1]):
        buf[indices[t]] = 0.0


@njit(cache=True)
def _vfun(s, c2):
    return max(-s, s - c2)


@njit(cache=True)
def pair_step(si, sj, gi, gj, eta, c2):
    """Exact minimiser of φ(t) = (g_j − g_i) t + η t²/2 + V(σ_i + t) + V(σ_j − t) over the
    feasible t; returns the new (σ_i, σ_j) with Σ kept and kinks / bounds hit exactly."""
    s = si + sj
    lo = max(-si, sj - c2)
    hi = min(c2 - si, sj)
    if hi <= lo:
        return si, sj
    half = 0.5 * c2
    pts = np.empty(4)
    kinds = np.empty(4, np.int64)  # 0 lo, 1 hi, 2 σ_i at kink, 3 σ_j at kink
    m = 0
    pts[m] = lo
    kinds[m] = 0
    m += 1
    k1 = half - si
    k2 = sj - half
    if lo < k1 < hi:
        pts[m] = k1
        kinds[m] = 2
        m += 1
    if lo < k2 < hi:
        pts[m] = k2
        kinds[m] = 3
        m += 1
    pts[m] = hi
    kinds[m] = 1
    m += 1
    order = np.argsort(pts[:m])
    lin = gj - gi
    best_t = 0.0
    best_v = np.inf
    best_kind = -1
    for a in range(m):
        t = pts[order[a]]
        v = lin * t + 0.5 * eta * t * t + _vfun(si + t, c2) + _vfun(sj - t, c2)
        if v < best_v:
            best_v, best_t, best_kind = v, t, kinds[order[a]]
        if a + 1 < m and eta > 0.0:
            ta = t
            tb = pts[order[a + 1]]
            mid = 0.5 * (ta + tb)
            slope_i = -1.0 if si + mid < half else 1.0
            slope_j = 1.0 if sj - mid < half else -1.0
            tt = -(lin + slope_i + slope_j) / eta
            if ta < tt < tb:
                v = lin * tt + 0.5 * eta * tt * tt + _vfun(si + tt, c2) + _vfun(sj - tt, c2)
                if v < best_v:
                    best_v, best_t, best_kind = v, tt, 4
    if best_kind == 0:
        if -si >= sj - c2:
            return 0.0, s
        return s - c2, c2
    if best_kind == 1:
        if c2 - si <= sj:
            return c2, s - c2
        return s, 0.0
    if best_kind == 2:
        return half, s - half
    if best_kind == 3:
        return s - half, half
    ni = si + best_t
    return ni, s - ni


@njit(cache=True)
def select_pair(sig, g, c2):
    """Maximal violating pair: (i to increase, j to decrease, violation). A σ within
    KINK_RTOL·c2 of the kink counts as at the kink (see KINK_RTOL)."""
    half = 0.5 * c2
    ktol = KINK_RTOL * c2
    amin = np.inf
    bmax = -np.inf
    ia = -1
    jb = -1
    for u in range(sig.size):
        s = sig[u]
        if s < c2:
            a = -g[u] + (-1.0 if s < half - ktol else 1.0)
            if a < amin:
                amin = a
                ia = u
        if s > 0.0:
            b = -g[u] + (-1.0 if s <= half + ktol else 1.0)
            if b > bmax:
                bmax = b
                jb = u
    return ia, jb, bmax - amin


@njit(cache=True)
def select_partner(i, sig, g, c2, Ki, kdiag):
    """Partner j of the maximal violator i (LIBSVM's second-order rule, Fan et al. 2005):
    among the rows whose decrease violates with i, the largest (B_j − A_i)² / η_ij."""
    half = 0.5 * c2
    ktol = KINK_RTOL * c2
    ai = -g[i] + (-1.0 if sig[i] < half - ktol else 1.0)
    best = -1.0
    jb = -1
    for u in range(sig.size):
        s = sig[u]
        if s <= 0.0 or u == i:
            continue
        b = -g[u] + (-1.0 if s <= half + ktol else 1.0) - ai
        if b <= 0.0:
            continue
        eta = kdiag[i] + kdiag[u] - 2.0 * Ki[u]
        if eta <= 1e-12:
            eta = 1e-12
        gain = b * b / eta
        if gain > best:
            best = gain
            jb = u
    return jb


@njit(cache=True)
def _move_pair(i, j, sig, g, eta, c2):
    """Take the exact pair step on (σ_i, σ_j); returns their changes (the caller updates g)."""
    ni, nj = pair_step(sig[i], sig[j], g[i], g[j], max(eta, 0.0), c2)
    di = ni - sig[i]
    dj = nj - sig[j]
    sig[i] = ni
    sig[j] = nj
    return di, dj


@njit(cache=True)
def _get_row(u, slot_of, owner, stamp, rows_mem, clock, indptr, indices, data, sqn, urows,
             kind, gamma, coef0, degree, buf, stats):
    """Kernel row of unlabeled variable u over all unlabeled rows, through the LRU cache."""
    s = slot_of[u]
    if s >= 0:
        stats[0] += 1
        stamp[s] = clock
        return s
    stats[1] += 1
    s = 0
    for k in range(owner.size):  # free slot, else least recently used
        if owner[k] < 0:
            s = k
            break
        if stamp[k] < stamp[s]:
            s = k
    if owner[s] >= 0:
        slot_of[owner[s]] = -1
    owner[s] = u
    slot_of[u] = s
    stamp[s] = clock
    _kernel_row(urows[u], indptr, indices, data, sqn, urows, kind, gamma, coef0, degree, buf,
                rows_mem[s])
    return s


@njit(cache=True)
def _smo_kernel(sig, g, kdiag, c2, tau, max_iter, slot_of, owner, stamp, rows_mem, clock0,
                indptr, indices, data, sqn, urows, kind, gamma, coef0, degree, buf, stats):
    """Up to max_iter pair steps; returns (iterations, last violation, clock)."""
    clock = clock0
    viol = np.inf
    for it in range(max_iter):
        i, j, viol = select_pair(sig, g, c2)
        if viol <= tau or i < 0 or j < 0 or i == j:
            return it, viol, clock
        clock += 1
        si_ = _get_row(i, slot_of, owner, stamp, rows_mem, clock, indptr, indices, data, sqn,
                       urows, kind, gamma, coef0, degree, buf, stats)
        Ki = rows_mem[si_]  # stamped with this clock: fetching j cannot evict it (≥ 2 slots)
        j = select_partner(i, sig, g, c2, Ki, kdiag)
        sj_ = _get_row(j, slot_of, owner, stamp, rows_mem, clock, indptr, indices, data, sqn,
                       urows, kind, gamma, coef0, degree, buf, stats)
        Kj = rows_mem[sj_]
        di, dj = _move_pair(i, j, sig, g, kdiag[i] + kdiag[j] - 2.0 * Ki[j], c2)
        if di == 0.0 and dj == 0.0:
            return it, viol, clock
        for u in range(g.size):
            g[u] -= di * Ki[u] + dj * Kj[u]
    return max_iter, viol, clock


@njit(cache=True)
def _xdot_block(indptr, indices, data, urows, w, out, add, lo, hi):
    for k in range(lo, hi):
        u = urows[k]
        s = 0.0
        for t in range(indptr[u], indptr[u + 1]):
            s += data[t] * w[indices[t]]
        out[k] = out[k] + s if add else s


@njit(cache=True, parallel=True)
def _xdot_par(indptr, indices, data, urows, w, out, add, nb):
    step = (urows.size + nb - 1) // nb
    for b in prange(nb):
        _xdot_block(indptr, indices, data, urows, w, out, add, b * step,
                    min(urows.size, (b + 1) * step))


@njit(cache=True)
def row_dots(indptr, indices, data, urows, w, out, add):
    """out[k] (+)= x_urows[k]·w; threaded only when the rows hold enough values to pay for
    starting the threads (thousands of calls per second on small sets)."""
    if indptr[-1] < PARALLEL_NNZ:
        _xdot_block(indptr, indices, data, urows, w, out, add, 0, urows.size)
    else:
        _xdot_par(indptr, indices, data, urows, w, out, add, 8)


@njit(cache=True)
def _smo_linear(sig, g, kdiag, c2, tau, max_iter, indptr, indices, data, urows, w, dw, Ki):
    """Linear kernel: g_u = x_u·w kept by adding Δw·x_u over all rows after each step."""
    viol = np.inf
    for it in range(max_iter):
        i, j, viol = select_pair(sig, g, c2)
        if viol <= tau or i < 0 or j < 0 or i == j:
            return it, viol
        ri = urows[i]
        for t in range(indptr[ri], indptr[ri + 1]):  # row i of K: x_i·x_u for every u
            dw[indices[t]] = data[t]
        row_dots(indptr, indices, data, urows, dw, Ki, False)
        for t in range(indptr[ri], indptr[ri + 1]):
            dw[indices[t]] = 0.0
        j = select_partner(i, sig, g, c2, Ki, kdiag)
        rj = urows[j]
        di, dj = _move_pair(i, j, sig, g, kdiag[i] + kdiag[j] - 2.0 * Ki[j], c2)
        if di == 0.0 and dj == 0.0:
            return it, viol
        # a_u = −σ_u, so w changes by −di·x_i − dj·x_j
        for t in range(indptr[ri], indptr[ri + 1]):
            dw[indices[t]] -= di * data[t]
        for t in range(indptr[rj], indptr[rj + 1]):
            dw[indices[t]] -= dj * data[t]
        row_dots(indptr, indices, data, urows, dw, g, True)
        for t in range(indptr[ri], indptr[ri + 1]):
            w[indices[t]] += dw[indices[t]]
            dw[indices[t]] = 0.0
        for t in range(indptr[rj], indptr[rj + 1]):
            w[indices[t]] += dw[indices[t]]
            dw[indices[t]] = 0.0
    return max_iter, viol


@njit(cache=True)
def coordinate_step(s, f, q, c2):
    """argmin over t ∈ [0, c2] of q/2 (t − s)² − f (t − s) + V(t), V(t) = max(−t, t − c2):
    the minimiser below the kink c2/2 if it lies there, else the one above, else the kink."""
    half = 0.5 * c2
    if q <= 0.0:  # an empty row: f does not depend on σ_u
        if f < -1.0:
            return 0.0
        if f > 1.0:
            return c2
        return half
    a = s + (f + 1.0) / q
    if a < half:
        return max(a, 0.0)
    b = s + (f - 1.0) / q
    if b > half:
        return min(b, c2)
    return half


@njit(cache=True)
def _xorshift(state):
    x = state[0]
    x ^= (x << np.uint64(13))
    x ^= (x >> np.uint64(7))
    x ^= (x << np.uint64(17))
    state[0] = x
    return x


@njit(cache=True)
def _solve_al(indptr, indices, data, urows, qd, sig, w, mu, rho, res, c2, eps, max_passes,
              index, rng):
    """Coordinate descent on the augmented Lagrangian D(σ) + μ·r + ρ/2·r², r = Σσ − c1·p
    (given as res, kept up to date), from the given σ (w kept equal to w(σ)), until every
    coordinate's one-sided derivatives violate by at most eps, with shrinking. The bias
    b = −(μ + ρ·r) moves with every step: coordinate u sees f = x_u·w + b and curvature
    ‖x_u‖² + ρ. Returns (passes, coordinate steps, last max − min projected derivative, r)."""
    n = sig.size
    half = 0.5 * c2
    for k in range(n):
        index[k] = k
    active = n
    pg_max_old = np.inf
    pg_min_old = -np.inf
    steps = 0
    spread = np.inf
    for it in range(max_passes):
        pg_max = -np.inf
        pg_min = np.inf
        for k in range(active - 1):  # Fisher–Yates over the active set
            j = k + np.int64(_xorshift(rng) % np.uint64(active - k))
            t = index[k]
            index[k] = index[j]
            index[j] = t
        s = 0
        while s < active:
            u = index[s]
            r = urows[u]
            f = -(mu + rho * res)
            for t in range(indptr[r], indptr[r + 1]):
                f += data[t] * w[indices[t]]
            su = sig[u]
            up = -f + (-1.0 if su < half else 1.0)  # derivative when σ_u increases
            dn = -f + (-1.0 if su <= half else 1.0)  # … when it decreases
            pg = 0.0
            shrink = False
            if su < c2 and up < 0.0:
                pg = up
            elif su > 0.0 and dn > 0.0:
                pg = dn
            elif su == 0.0:
                shrink = up > pg_max_old
            elif su == c2:
                shrink = dn < pg_min_old
            elif su == half:
                shrink = up > pg_max_old and dn < pg_min_old
            if shrink:
                active -= 1
                index[s] = index[active]
                index[active] = u
                continue
            if pg > pg_max:
                pg_max = pg
            if pg < pg_min:
                pg_min = pg
            if pg != 0.0:
                ns = coordinate_step(su, f, qd[u] + rho, c2)
                d = ns - su
                if d != 0.0:
                    sig[u] = ns
                    res += d
                    for t in range(indptr[r], indptr[r + 1]):
                        w[indices[t]] -= d * data[t]
                    steps += 1
            s += 1
        spread = pg_max - pg_min
        if spread <= eps:
            if active == n:
                return it + 1, steps, spread, res
            active = n  # check the shrunk variables before stopping
            pg_max_old = np.inf
            pg_min_old = -np.inf
            continue
        pg_max_old = pg_max if pg_max > 0.0 else np.inf
        pg_min_old = pg_min if pg_min < 0.0 else -np.inf
    return max_passes, steps, spread, res


@njit(cache=True)
def _row_sqnorms(indptr, data, urows, out):
    for k in range(urows.size):
        r = urows[k]
        s = 0.0
        for t in range(indptr[r], indptr[r + 1]):
            s += data[t] * data[t]
        out[k] = s


@njit(cache=True)
def _add_rows(indptr, indices, data, urows, coef, w):
    """w += Σ_k coef[k] x_urows[k]."""
    for k in range(urows.size):
        c = coef[k]
        if c != 0.0:
            r = urows[k]
            for t in range(indptr[r], indptr[r + 1]):
                w[indices[t]] += c * data[t]
