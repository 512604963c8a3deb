"""Linear-family core on numba: the row products of CGLS and the exact piecewise-quadratic line
search (Sindhwani & Keerthi 2006; the algorithms themselves are :mod:`solvers.least_squares`'s,
over :class:`KernelRows` here), the active sets, the gradient test and the exact Newton
system.

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
from numba import prange

from ssl_svm.solvers.host import pools
from ssl_svm.solvers.jit import njit

# the constants are shared with the numpy versions of these routines
from ssl_svm.solvers.linalg_numpy import (  # noqa: F401 -- the solvers read them as la.NAME
    ALPHA,
    BIG_EPSILON,
    CGITERMAX,
    MFNITERMAX,
    RELATIVE_STOP_EPS,
    ROUNDING,
    SMALL_CGITERMAX,
    STALL,
)

# Indexing note: array subscripts are cast to unsigned (U(...)) in the inner loops. Numba must
# otherwise allow for negative (wrap-around) indices, which costs a branch per access and made
# these loops 1.5-2x slower than scipy's C++ sparse products.
U = np.uint64

# Above this many columns the normal product reads p in one pass over the rows and adds into
# the result in a second: one pass touching both vectors at random missed the cache once they
# outgrew it together (100,000 columns of 50-value rows: 70.7 ms one pass, 46.1 ms two; a9a's
# 123 and mnist38's 752 columns: 0.7 and 3.5 ms one pass, 0.9 and 3.7 two)
TWO_PASS_COLUMNS = 32_768

# Row products switch to the threaded kernels above this many stored values (below it the
# thread start-up costs more than it saves).
PARALLEL_NNZ = 50_000


def threads() -> int:
    """Threads the row products may run on (numba's pool for this process), and so the blocks
    their sums split into (in a forked child, its parent's: :func:`pools.sum_threads`)."""
    return pools.sum_threads()


@njit(cache=True, parallel=True)
def outputs(indptr, indices, data, bias, w, rows, o):
    """o[i] = x_i·w[:d] + bias·w[d] for every i in rows (threaded over rows)."""
    d = w.size - 1
    wb = bias * w[d]
    for t in prange(rows.size):
        i = rows[t]
        s = wb
        for k in range(U(indptr[i]), U(indptr[i + 1])):
            s += data[k] * w[U(indices[k])]
        o[i] = s


# The row products are written once, as kernels over a block [lo, hi) of the row list; the
# serial path runs one block, the threaded path one block per thread and then combines the
# blocks' results in a fixed order (deterministic for a given number of threads).

@njit(cache=True)
def _xxt_block(indptr, indices, data, pb, rows, lo, hi, p, C, q, acc):
    """q[t] = x_rows[t]·p[:d] + pb and ``acc[:d] += x_i C_i q[t]`` for t in [lo, hi), in one
    pass over each row (its values are still in cache for the second product), or, on more
    than TWO_PASS_COLUMNS columns, all q first and then all of acc (the same sums in the same
    order). Returns (Σ_t C_i q[t]², Σ_t C_i q[t])."""
    sqq = 0.0
    sq = 0.0
    if acc.size > TWO_PASS_COLUMNS:
        for t in range(lo, hi):
            i = rows[t]
            s = pb
            for k in range(U(indptr[i]), U(indptr[i + 1])):
                s += data[k] * p[U(indices[k])]
            q[t] = s
            cs = C[i] * s
            sqq += cs * s
            sq += cs
        for t in range(lo, hi):
            i = rows[t]
            cs = C[i] * q[t]
            for k in range(U(indptr[i]), U(indptr[i + 1])):
                acc[U(indices[k])] += data[k] * cs
        return sqq, sq
    for t in range(lo, hi):
        i = rows[t]
        a = U(indptr[i])
        b = U(indptr[i + 1])
        s = pb
        for k in range(a, b):
            s += data[k] * p[U(indices[k])]
        q[t] = s
        cs = C[i] * s
        sqq += cs * s
        sq += cs
        for k in range(a, b):
            acc[U(indices[k])] += data[k] * cs
    return sqq, sq


@njit(cache=True, parallel=True)
def _xxt_times_par(indptr, indices, data, pb, rows, p, C, q, buf):
    """:func:`_xxt_block` over all rows in buf.shape[0] threaded blocks, each scattering into
    its own row of buf, summed in a fixed order into ``buf[0]``; returns (Σ C q², Σ C q)."""
    nb = buf.shape[0]
    n = buf.shape[1]
    na = rows.size
    part2 = np.zeros(nb)
    part1 = np.zeros(nb)
    for b in prange(nb):
        buf[b, :] = 0.0
        part2[b], part1[b] = _xxt_block(indptr, indices, data, pb, rows, b * na // nb,
                                        (b + 1) * na // nb, p, C, q, buf[b])
    for k in prange(n):
        s = buf[0, k]
        for b in range(1, nb):
            s += buf[b, k]
        buf[0, k] = s
    sqq = 0.0
    sq = 0.0
    for b in range(nb):
        sqq += part2[b]
        sq += part1[b]
    return sqq, sq


@njit(cache=True)
def _xt_block(indptr, indices, data, rows, lo, hi, z, acc):
    """``acc[:d] += x_i z[t]`` for t in [lo, hi) (row i = rows[t]). Returns (Σ z[t], Σ z[t]²)."""
    zs = 0.0
    zz = 0.0
    for t in range(lo, hi):
        i = rows[t]
        zt = z[t]
        zs += zt
        zz += zt * zt
        for k in range(U(indptr[i]), U(indptr[i + 1])):
            acc[U(indices[k])] += data[k] * zt
    return zs, zz


@njit(cache=True)
def _diag_block(indptr, indices, data, rows, lo, hi, C, acc):
    """acc[:d] += C_i x_i² (elementwise) for t in [lo, hi); returns Σ C_i."""
    cs = 0.0
    for t in range(lo, hi):
        i = rows[t]
        c = C[i]
        cs += c
        for k in range(U(indptr[i]), U(indptr[i + 1])):
            acc[U(indices[k])] += c * data[k] * data[k]
    return cs


@njit(cache=True, parallel=True)
def _xt_times_par(indptr, indices, data, bias, rows, z, r, buf):
    """:func:`_xt_block` over all rows in buf.shape[0] threaded blocks, each scattering into its
    own row of buf; then ``r += Σ_b buf[b]`` and ``r[d] += bias·Σz``. Returns ||z||²."""
    nb = buf.shape[0]
    n = r.size
    na = rows.size
    zsum = np.zeros(nb)
    zsq = np.zeros(nb)
    for b in prange(nb):
        buf[b, :] = 0.0
        zsum[b], zsq[b] = _xt_block(indptr, indices, data, rows, b * na // nb,
                                    (b + 1) * na // nb, z, buf[b])
    for k in prange(n):
        s = 0.0
        for b in range(nb):
            s += buf[b, k]
        r[k] += s
    zs = 0.0
    zz = 0.0
    for b in range(nb):
        zs += zsum[b]
        zz += zsq[b]
    r[n - 1] += bias * zs
    return zz


@njit(cache=True)
def xt_times(indptr, indices, data, bias, rows, z, r, buf, par):
    """r[:d] += X_rowsᵀ z and r[d] += bias·Σz, threaded over buf.shape[0] blocks when
    ``par``. Returns ||z||². r is not cleared."""
    if par:
        return _xt_times_par(indptr, indices, data, bias, rows, z, r, buf)
    zs, zz = _xt_block(indptr, indices, data, rows, 0, rows.size, z, r)
    r[r.size - 1] += bias * zs
    return zz


@njit(cache=True, parallel=True)
def diag_sums(indptr, indices, data, bias, C, J, out, buf):
    """out = diag(X̃_Jᵀ C_J X̃_J) (the bias column's entry last), the rows scattered in
    buf.shape[0] threaded blocks."""
    n = out.size
    nb = buf.shape[0]
    na = J.size
    part = np.zeros(nb)
    for b in prange(nb):
        buf[b, :] = 0.0
        part[b] = _diag_block(indptr, indices, data, J, b * na // nb, (b + 1) * na // nb, C,
                              buf[b])
    for k in prange(n):
        s = 0.0
        for b in range(nb):
            s += buf[b, k]
        out[k] = s
    cs = 0.0
    for b in range(nb):
        cs += part[b]
    out[n - 1] = bias * bias * cs


@njit(cache=True)
def _xt_diag_block(indptr, indices, data, rows, lo, hi, z, C, acc):
    """:func:`_xt_block` and :func:`_diag_block` in one pass over the rows: ``acc[:d, 0] +=
    x_i z[t]`` and ``acc[:d, 1] += C_i x_i²`` side by side (one cache line per column
    touched), the same sums in the same order. Returns (Σ z[t], Σ z[t]², Σ C_i)."""
    zs = 0.0
    zz = 0.0
    cs = 0.0
    for t in range(lo, hi):
        i = rows[t]
        zt = z[t]
        c = C[i]
        zs += zt
        zz += zt * zt
        cs += c
        for k in range(U(indptr[i]), U(indptr[i + 1])):
            j = U(indices[k])
            v = data[k]
            acc[j, 0] += v * zt
            acc[j, 1] += c * v * v
    return zs, zz, cs


@njit(cache=True, parallel=True)
def xt_diag(indptr, indices, data, bias, C, J, z, r, diag, nb):
    """:func:`xt_times` and :func:`diag_sums` in one pass over the rows in nb threaded
    blocks: r = X̃_Jᵀ z and diag = diag(X̃_Jᵀ C_J X̃_J) (both overwritten), the same sums in
    the same order. Returns ||z||²."""
    n = r.size
    na = J.size
    acc = np.empty((nb, n, 2))
    zsum = np.zeros(nb)
    zsq = np.zeros(nb)
    csum = np.zeros(nb)
    for b in prange(nb):
        acc[b] = 0.0
        zsum[b], zsq[b], csum[b] = _xt_diag_block(indptr, indices, data, J, b * na // nb,
                                                  (b + 1) * na // nb, z, C, acc[b])
    for k in prange(n):
        s = 0.0
        e = 0.0
        for b in range(nb):
            s += acc[b, k, 0]
            e += acc[b, k, 1]
        r[k] = s
        diag[k] = e
    zs = 0.0
    omega_z = 0.0
    cs = 0.0
    for b in range(nb):
        zs += zsum[b]
        omega_z += zsq[b]
        cs += csum[b]
    r[n - 1] += bias * zs
    diag[n - 1] = bias * bias * cs
    return omega_z


@njit(cache=True)
def normal_product(indptr, indices, data, bias, J, p, C, q, buf, par):
    """t = X̃_Jᵀ C X̃_J p into buf[0] with q = X̃_J p (q[t] for row J[t]), in one pass over
    the rows, threaded over buf.shape[0] blocks when ``par``. Returns Σ_t C q[t]²."""
    n = p.size
    pb = bias * p[n - 1]
    if par:
        omega_q, cq = _xxt_times_par(indptr, indices, data, pb, J, p, C, q, buf)
    else:
        buf[0, :] = 0.0
        omega_q, cq = _xxt_block(indptr, indices, data, pb, J, 0, J.size, p, C, q, buf[0])
    buf[0, n - 1] = bias * cq
    return omega_q


@njit(cache=True)
def apply_step(J, C, o, z, q, gamma):
    """A CG step's row updates: o[J] += γq and z -= γCq (z = C(Y - o) on J); returns ‖z‖²."""
    omega_z = 0.0
    for t in range(J.size):
        i = J[t]
        o[i] += gamma * q[t]
        zt = z[t] - gamma * C[i] * q[t]
        z[t] = zt
        omega_z += zt * zt
    return omega_z


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
def split_virtual(Yv, Cv, phys, o, m):
    """The active set when the loss runs over virtual rows: row v is the physical row phys[v]
    with target Yv[v] and cost Cv[v] (a physical row may appear several times, e.g. once per
    candidate label). A copy is active when Yv·o < 1. The active copies of one physical row
    merge into one least-squares row with cost Ce = Σ Cv and target Ye = Σ Cv Yv / Ce (the
    same normal equations), so CGLS touches each physical row once.
    Returns J (physical rows with an active copy), I (the others), the loss
    1/2 Σ_active Cv (1 - Yv o)², Ye, Ce (length m) and the active flag of every copy."""
    V = Yv.size
    Ce = np.zeros(m)
    Yc = np.zeros(m)
    hits = np.zeros(m, np.int64)
    act = np.zeros(V, np.bool_)
    loss = 0.0
    for v in range(V):
        i = phys[v]
        diff = 1.0 - Yv[v] * o[i]
        if diff > 0.0:
            act[v] = True
            hits[i] += 1
            Ce[i] += Cv[v]
            Yc[i] += Cv[v] * Yv[v]
            loss += 0.5 * Cv[v] * diff * diff
    J = np.empty(m, np.int64)
    I = np.empty(m, np.int64)
    nj = 0
    ni = 0
    Ye = np.zeros(m)
    for i in range(m):
        if hits[i] > 0:
            J[nj] = i
            nj += 1
            if Ce[i] > 0.0:
                Ye[i] = Yc[i] / Ce[i]
        else:
            I[ni] = i
            ni += 1
    return J[:nj], I[:ni], loss, Ye, Ce, act


@njit(cache=True)
def margins_agree_virtual(Yv, phys, o, act, eps):
    """:func:`margins_agree` over virtual rows (see :func:`split_virtual`)."""
    for v in range(Yv.size):
        yo = Yv[v] * o[phys[v]]
        if act[v]:
            if yo > 1.0 + eps:
                return False
        elif yo < 1.0 - eps:
            return False
    return True


@njit(cache=True)
def gradient_parts(indptr, indices, data, bias, Y, C, J, w, o, sq):
    """The row sums of :func:`gradient_norms` over J: (X̃_Jᵀz, its rounding bound e, Σz², Σ_J
    of the rows' own rounding bounds) for ``z = C_J(Y_J - o_J)``; ``sq`` = √(|J| + 1), |J|
    counted over all the rows the gradient sums (every block of a distributed fit). e[d]
    lacks the bias column's Σz term, which needs all the rows' Σz² (see gradient_norms)."""
    n = w.size
    g = np.zeros(n)
    e = np.zeros(n)
    zs = 0.0
    es = 0.0
    zz = 0.0
    wb = abs(bias * w[n - 1])
    # w read in one pass, g and e added in another, side by side (one cache line per column
    # touched): on many columns one pass touching three vectors missed the cache, and the sum
    # runs only where the cheaper test of :func:`gradient_norms` fails, or on a cluster's blocks
    ge = np.zeros((n, 2))
    zr = np.empty(J.size)
    er = np.empty(J.size)
    for t in range(J.size):
        i = J[t]
        z = C[i] * (Y[i] - o[i])
        zz += z * z
        zs += z
        a = wb + abs(Y[i])
        for k in range(U(indptr[i]), U(indptr[i + 1])):
            a += abs(data[k] * w[U(indices[k])])
        ea = C[i] * a * ROUNDING * np.sqrt(indptr[i + 1] - indptr[i] + 2.0)
        es += ea
        zr[t] = z
        er[t] = ea + abs(z) * ROUNDING * sq
    for t in range(J.size):
        i = J[t]
        for k in range(U(indptr[i]), U(indptr[i + 1])):
            c = U(indices[k])
            ge[c, 0] += data[k] * zr[t]
            ge[c, 1] += abs(data[k]) * er[t]
    g[:] = ge[:, 0]
    e[:] = ge[:, 1]
    g[n - 1] += bias * zs
    e[n - 1] += abs(bias) * es
    return g, e, zz


@njit(cache=True)
def gradient_finish(g, e, zz, n_rows, bias, lam, w):
    """(||g - λw||², ||z||², f²) of :func:`gradient_norms` from the summed parts of
    :func:`gradient_parts` (g, e, zz over ``n_rows`` rows)."""
    n = w.size
    sq = np.sqrt(n_rows + 1.0)
    e[n - 1] += abs(bias) * ROUNDING * sq * np.sqrt(zz * n_rows)
    gg = 0.0
    ff = 0.0
    for k in range(n):
        r = g[k] - lam * w[k]
        gg += r * r
        f = e[k] + ROUNDING * lam * abs(w[k])
        ff += f * f
    return gg, zz, ff


@njit(cache=True)
def _gradient_sum(indptr, indices, data, bias, Y, C, J, w, o):
    """(X̃_Jᵀz, Σz²) for ``z = C_J(Y_J - o_J)``: the sums of :func:`gradient_parts` without
    the rounding bound, in the same order (the same bytes)."""
    n = w.size
    g = np.zeros(n)
    zs = 0.0
    zz = 0.0
    for t in range(J.size):
        i = J[t]
        z = C[i] * (Y[i] - o[i])
        zz += z * z
        zs += z
        for k in range(U(indptr[i]), U(indptr[i + 1])):
            g[U(indices[k])] += data[k] * z
    g[n - 1] += bias * zs
    return g, zz


@njit(cache=True)
def gradient_norms(indptr, indices, data, bias, Y, C, J, lam, w, o, eps):
    """(||g||², ||z||², f²) at w for ``z = C_J(Y_J - o_J)`` and ``g = X̃_Jᵀz - λw``: g is the
    (negated) gradient of the objective whose active rows are J, ``||g|| <= eps·||z||`` is
    CGLS's test, and f estimates the part of ||g|| that rounding of the outputs and of the sums
    alone produces (below it no iteration can verify a smaller gradient; errors of independent
    terms are taken to grow with the square root of their number, not linearly).
    f² is summed only when CGLS's test fails (0 when it passes: the bound takes a second pass
    over the rows, which a converged step never needs). o must equal X̃w on J."""
    g, zz = _gradient_sum(indptr, indices, data, bias, Y, C, J, w, o)
    gg = 0.0
    for k in range(w.size):
        r = g[k] - lam * w[k]
        gg += r * r
    if gg <= eps * eps * zz:
        return gg, zz, 0.0
    # rounding errors of independent terms add up like a random walk
    g, e, zz = gradient_parts(indptr, indices, data, bias, Y, C, J, w, o,
                              np.sqrt(J.size + 1.0))
    return gradient_finish(g, e, zz, J.size, bias, lam, w)


@njit(cache=True)
def line_pieces(Y, C, o, o_bar, L0, R0):
    """The exact line search's terms from these rows (:func:`solvers.least_squares.
    line_search`): (L, R), L0 and R0 plus the rows' part of φ′ at δ = 0 and 1 with the active
    set at δ = 0 (added in row order), and the breakpoints δ ≥ 0 where a row's margin crosses
    1 with the change (ΔL, ΔR) crossing each makes, in row order."""
    L = L0
    R = R0
    m = Y.size
    deltas = np.empty(m)
    dl = np.empty(m)
    dr = np.empty(m)
    p = 0
    for i in range(m):
        yo = Y[i] * o[i]
        diff = Y[i] * (o_bar[i] - o[i])
        dd = C[i] * (o_bar[i] - o[i])
        if yo < 1.0:
            L += (o[i] - Y[i]) * dd
            R += (o_bar[i] - Y[i]) * dd
            if diff > 0.0:  # leaves the active set at this δ
                deltas[p] = (1.0 - yo) / diff
                dl[p] = -dd * (o[i] - Y[i])
                dr[p] = -dd * (o_bar[i] - Y[i])
                p += 1
        elif diff < 0.0:  # enters the active set at this δ
            deltas[p] = (1.0 - yo) / diff
            dl[p] = dd * (o[i] - Y[i])
            dr[p] = dd * (o_bar[i] - Y[i])
            p += 1
    return L, R, deltas[:p], dl[:p], dr[:p]


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
def first_k(rows, keys, k):
    """The rows of the k smallest keys, in the order a stable sort of all of them gives (ties
    in the order of ``rows``): a partition finds the k-th key, and only the rows at or below
    it are sorted."""
    n = keys.size
    if k >= n:
        return rows[np.argsort(keys, kind="mergesort")]
    v = np.partition(keys, k - 1)[k - 1]
    below = 0
    for t in range(n):
        if keys[t] < v:
            below += 1
    sel = np.empty(k, np.int64)
    c = 0
    ties = k - below  # of the rows at v, the first ones in order
    for t in range(n):
        if keys[t] < v or (keys[t] == v and ties > 0):
            if keys[t] == v:
                ties -= 1
            sel[c] = t
            c += 1
    sel = sel[np.argsort(keys[sel], kind="mergesort")]
    return rows[sel]


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


# gram_system's partial sums: at most this many, each over at least GRAM_CHUNK_WORK · n² of
# the Σ (m_i + 1)(m_i + 2)/2 products (a part's own matrix costs about 2n² to clear and add)
GRAM_CHUNKS = 8
GRAM_CHUNK_WORK = 8.0


@njit(cache=True)
def gram_chunks(indptr, J, n):
    """How many partial sums :func:`gram_system` splits rows J into for n unknowns: 1 to
    GRAM_CHUNKS, from the rows' work alone (never the threads), so the sums and their order
    are the same on any machine."""
    work = 0.0
    for t in range(J.size):
        m = float(indptr[J[t] + 1] - indptr[J[t]])
        work += (m + 1.0) * (m + 2.0) * 0.5
    k = int(work / (GRAM_CHUNK_WORK * n * n))
    return max(1, min(GRAM_CHUNKS, k, J.size))


@njit(cache=True)
def gram_add(indptr, indices, data, bias, rows, w, wy, lo_t, hi_t, H, b):
    """Adds Σ_t w[t] x̃_i x̃_iᵀ (its lower triangle) to H and Σ_t wy[t] x̃_i to b, over
    t = lo_t … hi_t - 1 in order, i = rows[t] (X̃ = [X, bias]; H and b of order n_cols + 1)."""
    n = b.size
    for t in range(lo_t, hi_t):
        i = rows[t]
        c = w[t]
        cy = wy[t]
        lo = U(indptr[i])
        hi = U(indptr[i + 1])
        for k in range(lo, hi):
            a = U(indices[k])
            xa = c * data[k]
            b[a] += cy * data[k]
            for k2 in range(lo, k + 1):
                H[a, U(indices[k2])] += xa * data[k2]
            H[n - 1, a] += xa * bias
        H[n - 1, n - 1] += c * bias * bias
        b[n - 1] += cy * bias


@njit(cache=True, parallel=True)
def gram_system(indptr, indices, data, bias, Y, C, J, lam, n_cols):
    """(H, b) of a Newton step's system ``(λI + X̃_Jᵀ C_J X̃_J) β = X̃_Jᵀ C_J Y_J`` (X̃ = [X, bias]:
    n_cols + 1 unknowns, the bias last), H dense: the lower triangle summed over consecutive
    parts of J's rows (:func:`gram_chunks`; each part in row order, the parts on the threads),
    the parts then added in order: the same sums whatever the threads. Then mirrored. Costs
    Σ_{i∈J} (m_i + 1)(m_i + 2)/2 for rows of m_i values, plus 2n² a part."""
    n = n_cols + 1
    k = gram_chunks(indptr, J, n)
    Hs = np.zeros((k, n, n))
    bs = np.zeros((k, n))
    w = np.empty(J.size)
    wy = np.empty(J.size)
    for t in range(J.size):
        w[t] = C[J[t]]
        wy[t] = C[J[t]] * Y[J[t]]
    size = (J.size + k - 1) // k
    for c in prange(k):
        gram_add(indptr, indices, data, bias, J, w, wy, min(J.size, c * size),
                 min(J.size, (c + 1) * size), Hs[c], bs[c])
    H = Hs[0]
    b = bs[0]
    for a in prange(n):
        for c in range(1, k):
            b[a] += bs[c, a]
            for a2 in range(a + 1):
                H[a, a2] += Hs[c, a, a2]
    for a in range(n):
        H[a, a] += lam
        for a2 in range(a):
            H[a2, a] = H[a, a2]
    return H.copy(), b.copy()


@njit(cache=True)
def cg_norms(r, m_inv):
    """(Σ r², Σ r (m_inv r)), summed in order."""
    omega1 = 0.0
    rho = 0.0
    for k in range(r.size):
        omega1 += r[k] * r[k]
        rho += r[k] * (m_inv[k] * r[k])
    return omega1, rho


@njit(cache=True)
def cg_step(beta, r, p, t, gamma, lam, m_inv):
    """β += γp and r -= γ(t + λp) in place, in one pass; returns (Σ r², Σ r² m_inv)."""
    omega1 = 0.0
    rho = 0.0
    for k in range(r.size):
        beta[k] += gamma * p[k]
        r[k] -= gamma * (t[k] + lam * p[k])
        omega1 += r[k] * r[k]
        rho += r[k] * r[k] * m_inv[k]
    return omega1, rho


@njit(cache=True)
def cg_direction(out, r, p, m_inv, scale):
    """out = m_inv r + scale p in place; returns Σ out²."""
    omega = 0.0
    for k in range(r.size):
        out[k] = m_inv[k] * r[k] + p[k] * scale
        omega += out[k] * out[k]
    return omega


@njit(cache=True)
def line_start(w, w_bar, lam):
    """(λ w·(w̄ - w), λ w̄·(w̄ - w)), summed in order."""
    omega_l = 0.0
    omega_r = 0.0
    for k in range(w.size):
        diff = w_bar[k] - w[k]
        omega_l += w[k] * diff
        omega_r += w_bar[k] * diff
    return lam * omega_l, lam * omega_r


class KernelVectors:
    """:class:`solvers.linalg_numpy.NumpyVectors` in one compiled pass each (a CG iteration
    on 47,000 columns spent more on numpy's ten passes than on its product)."""

    line_start = staticmethod(line_start)
    norms = staticmethod(cg_norms)
    step = staticmethod(cg_step)
    direction = staticmethod(cg_direction)


VECTORS = KernelVectors  # the line search's (solvers.least_squares.PieceRows)


class KernelRows:
    """CGLS's rows (:mod:`solvers.least_squares`) in this process on these kernels: the rows J
    of a CSR matrix (its three arrays) with targets Y, costs C and outputs o (o[J] = X̃_J β,
    updated in place), for n = d + 1 unknowns; the products are threaded over ``threads``
    blocks when the active rows hold at least PARALLEL_NNZ values (and 4n)."""

    vectors = KernelVectors

    def __init__(self, indptr, indices, data, bias, Y, C, J, o, n, threads):
        self.a = (indptr, indices, data, float(bias))
        self.Y, self.C, self.J, self.o = Y, C, J, o
        self.n = int(n)
        J = self.J
        nnz = int(np.sum(indptr[J + 1] - indptr[J])) if J.size else 0
        # threads pay off when the products outweigh the per-iteration merge of n-long buffers
        self.par = threads > 1 and nnz >= PARALLEL_NNZ and nnz >= 4 * self.n
        self.buf = np.empty((int(threads) if self.par else 1, self.n))
        self.q = np.empty(J.size)
        self.z = np.empty(J.size)

    def cg_start(self, precondition: bool) -> list:
        J, C = self.J, self.C
        if J.size == 0:
            return [(0, None, np.zeros(self.n), 0.0)]
        self.z = C[J] * (self.Y[J] - self.o[J])
        r = np.empty(self.n)
        diag = None
        if precondition:
            diag = np.empty(self.n)
            omega_z = xt_diag(*self.a, C, J, self.z, r, diag, self.buf.shape[0])
        else:
            r[:] = 0.0
            omega_z = xt_times(*self.a, J, self.z, r, self.buf, self.par)
        return [(int(J.size), diag, r, omega_z)]

    def cg_step(self, gamma, p) -> list:
        omega_z = None
        if gamma is not None:
            omega_z = apply_step(self.J, self.C, self.o, self.z, self.q, gamma)
        if self.J.size == 0:
            return [(omega_z, np.zeros(p.size), 0.0)]
        omega_q = normal_product(*self.a, self.J, p, self.C, self.q, self.buf, self.par)
        return [(omega_z, self.buf[0], omega_q)]  # summed (copied) before the next step

    def cg_residual(self) -> list:
        r = np.zeros(self.n)
        if self.J.size == 0:
            return [(r, 0.0)]
        return [(r, xt_times(*self.a, self.J, self.z, r, self.buf, self.par))]
