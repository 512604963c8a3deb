"""The compiled kernels (numba) of the Laplacian solvers (:mod:`ssl_svm.solvers.lapsvm`): the
exact line search and the Newton matrix of the exact form, the landmark system's products and
the graph stage's CG. :mod:`ssl_svm.solvers.lapsvm` has numpy versions of the exact form's two
(its numpy backend, :mod:`ssl_svm.solvers.backend`)."""


import numpy as np
from numba import prange

from ssl_svm.solvers.jit import njit

CG_BLOCK = 4096  # rows per partial sum of the CG's dot products (fixed: same sums on any threads)


@njit(cache=True)
def line_search(A, B, Y, c, o, do, hinge):
    """Exact minimiser t ≥ 0 of φ(t) = A t + B t²/2 + 1/2 Σ_i c_i loss(Y_i, o_i + t do_i).

    Rows with Y_i = 0 carry no loss. φ′ is piecewise linear: with the active set of a piece it
    is ``S0 + t S1``; walk the breakpoints (where a margin y(o + t do) crosses 1) in increasing
    order until φ′ changes sign. With ``hinge=False`` (squared loss) there are no breakpoints.
    """
    n = Y.size
    S0 = A
    S1 = B
    bps = np.empty(n)
    who = np.empty(n, np.int64)
    sgn = np.empty(n)
    p = 0
    for i in range(n):
        y = Y[i]
        if y == 0.0 or c[i] == 0.0:
            continue
        d = do[i]
        if not hinge:
            S0 += c[i] * (o[i] - y) * d
            S1 += c[i] * d * d
            continue
        m = y * o[i]
        s = y * d
        if m < 1.0 or (m == 1.0 and s < 0.0):
            S0 += c[i] * (o[i] - y) * d
            S1 += c[i] * d * d
            if s > 0.0:  # leaves the active set
                bps[p] = (1.0 - m) / s
                who[p] = i
                sgn[p] = -1.0
                p += 1
        elif s < 0.0:  # enters the active set
            bps[p] = (1.0 - m) / s
            who[p] = i
            sgn[p] = 1.0
            p += 1
    if S0 >= 0.0:
        return 0.0
    order = np.argsort(bps[:p])
    for j in range(p):
        k = order[j]
        if S1 > 0.0 and -S0 / S1 <= bps[k]:
            return -S0 / S1
        i = who[k]
        d = do[i]
        S0 += sgn[k] * c[i] * (o[i] - Y[i]) * d
        S1 += sgn[k] * c[i] * d * d
    if S1 <= 0.0:
        return bps[order[p - 1]] if p > 0 else 0.0
    return -S0 / S1


@njit(cache=True, parallel=True)
def newton_matrix(indptr, indices, data, B, K, cE, gamma_i, gamma_a, H):
    """H[:n, :n] = γ_I L B + C_E K + γ_A I, row by row into H (no n×n temporaries).

    (L in CSR; B = L^{p-1} K, so L B = L^p K.)
    """
    n = K.shape[0]
    for i in prange(n):
        c = cE[i]
        for j in range(n):
            H[i, j] = c * K[i, j]
        for t in range(indptr[i], indptr[i + 1]):
            v = gamma_i * data[t]
            r = indices[t]
            for j in range(n):
                H[i, j] += v * B[r, j]
        H[i, i] += gamma_a


@njit(parallel=True, cache=True)
def csr_times(indptr, indices, data, B, out):
    """out = A B for A in CSR (indptr, indices, data) and a dense C-ordered B, by rows of A on
    every thread (scipy's product of a sparse and a dense matrix runs on one)."""
    c = B.shape[1]
    for i in prange(out.shape[0]):
        row = out[i]
        for j in range(c):
            row[j] = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            v = data[t]
            src = B[indices[t]]
            for j in range(c):
                row[j] += v * src[j]


@njit(parallel=True, cache=True)
def graph_apply(indptr, indices, data, degree, diag, gamma_i, v, tmp, out):
    """out = diag ∘ v + γ_I L^p v (L in CSR), p sparse products by rows on every thread; tmp
    is scratch of v's size."""
    n = v.size
    src = v
    for k in range(degree):
        dst = out if (degree - k) % 2 == 1 else tmp
        for i in prange(n):
            acc = 0.0
            for t in range(indptr[i], indptr[i + 1]):
                acc += data[t] * src[indices[t]]
            dst[i] = acc
        src = dst
    for i in prange(n):
        out[i] = diag[i] * v[i] + gamma_i * out[i]


@njit(parallel=True, cache=True)
def blocked_dot(a, b, partial):
    """Σ a_i b_i summed per block of CG_BLOCK rows, then over the blocks in order."""
    n = a.size
    nb = partial.size
    for j in prange(nb):
        acc = 0.0
        for i in range(j * CG_BLOCK, min(n, (j + 1) * CG_BLOCK)):
            acc += a[i] * b[i]
        partial[j] = acc
    total = 0.0
    for j in range(nb):
        total += partial[j]
    return total


@njit(parallel=True, cache=True)
def cg_update(x, r, z, p, q, dinv, a, partial):
    """x += a p, r -= a q, z = dinv ∘ r in one pass; returns (rᵀz, rᵀr), blocked sums."""
    n = x.size
    nb = partial.shape[0]
    for j in prange(nb):
        rz = 0.0
        rr = 0.0
        for i in range(j * CG_BLOCK, min(n, (j + 1) * CG_BLOCK)):
            x[i] += a * p[i]
            r[i] -= a * q[i]
            z[i] = dinv[i] * r[i]
            rz += r[i] * z[i]
            rr += r[i] * r[i]
        partial[j, 0] = rz
        partial[j, 1] = rr
    rz = 0.0
    rr = 0.0
    for j in range(nb):
        rz += partial[j, 0]
        rr += partial[j, 1]
    return rz, rr


@njit(parallel=True, cache=True)
def cg_direction(p, z, beta):
    for i in prange(p.size):
        p[i] = z[i] + beta * p[i]


@njit(parallel=True, cache=True)
def axpy(a, x, y):
    """y += a x in place, on every thread."""
    for i in prange(y.size):
        y[i] += a * x[i]


@njit(parallel=True, cache=True)
def csr_vec(indptr, indices, data, x, out):
    """out = A x for A in CSR (indptr, indices, data) and a vector x, by rows on every
    thread."""
    for i in prange(out.size):
        acc = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            acc += data[t] * x[indices[t]]
        out[i] = acc
