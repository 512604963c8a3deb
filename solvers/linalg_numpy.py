"""The linear family's core routines without numba, for problems too small to pay its start-up.

The first numba function a process calls costs about 0.3 s before any work: numba's import,
its compiler target's set-up and the threading layer's start. On a few hundred labeled rows
the whole L2-SVM-MFN solve takes milliseconds, and shell loops and Makefiles run thousands of
such jobs. These are :mod:`solvers.linalg`'s routines (same names, arguments and conventions;
see there; :class:`ArrayRows` is its :class:`~solvers.linalg.KernelRows`, the rows CGLS in
:mod:`solvers.least_squares` runs over) written as whole-array numpy and scipy.sparse
operations: per call a few dozen C loops instead of one compiled loop, so a small fit
begins on them and moves to numba only if its work outgrows numba's start-up
(:class:`solvers.linear.Routines`). The iterates are the same up to rounding (sums are taken in
another order).

This module imports no numba; :mod:`solvers.linalg` takes the shared constants from here.
"""

import weakref

import numpy as np
import scipy.sparse as sp

from ssl_svm.solvers.params import CG_ITER_MAX, MFN_ITER_MAX

BIG_EPSILON = 0.01  # SVMlin: the loose tolerance of the first, cheap phase
SMALL_CGITERMAX = 10  # SVMlin: CG iterations allowed in the very first solve from w = 0
CGITERMAX = CG_ITER_MAX
RELATIVE_STOP_EPS = 1e-9
MFNITERMAX = MFN_ITER_MAX
# Preconditioner M = λI + α·diag(X_Jᵀ C_J X_J): in liblinear's scaling this is
# (1 - α)I + α·diag(H), the mix Hsia, Chiang & Lin (2018) found robust; α = 1 (pure Jacobi)
# was 3-5x worse than no preconditioner on normalised text (rcv1), α = 0 (none) 8x worse on
# raw pixels (mnist38).
ALPHA = 0.01
STALL = 1e-15  # a CG step that lowers the objective by this fraction of all it gained is noise
ROUNDING = 2.2e-16  # double precision's unit roundoff, twice (products and sums)


def threads() -> int:
    """Threads the row products run on: one."""
    return 1


def _matrix(indptr, indices, data, n):
    """The CSR matrix of the three arrays, n - 1 columns (w has the bias weight last)."""
    return sp.csr_matrix((data, indices, indptr), shape=(indptr.size - 1, n - 1), copy=False)


try:  # scipy's own CSR product kernel, the one ``A @ x`` ends in
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
except ImportError:  # pragma: no cover - a scipy that moved it: A @ x, the same products
    _csr_matvec = None


class Product:
    """x -> A x for a CSR matrix A of float64 values, by scipy's CSR kernel called directly
    when it can take A's arrays (its ``A @ x`` adds 15-35 µs of dispatch to a 25-40 µs product
    on the pcmac sample, and a CG iteration makes two); the same sums in the same order as
    ``A @ x``, so the same bytes."""

    __slots__ = ("A", "direct")

    def __init__(self, A):
        self.A = A
        self.direct = (_csr_matvec is not None and A.format == "csr"
                       and A.data.dtype == np.float64 and A.indices.dtype == A.indptr.dtype)

    def __call__(self, x):
        A = self.A
        if not (self.direct and x.dtype == np.float64 and x.flags.c_contiguous):
            return A @ x
        out = np.zeros(A.shape[0])
        _csr_matvec(A.shape[0], A.shape[1], A.indptr, A.indices, A.data, x, out)
        return out


def _revalued(A, data):
    """A CSR matrix with A's pattern (shared, not copied) and the stored values ``data``."""
    return sp.csr_matrix((data, A.indices, A.indptr), shape=A.shape, copy=False)


def _rows(X, rows):
    """X's rows ``rows`` (X itself when they are all its rows in order)."""
    if _all_rows(rows, X.shape[0]):
        return X
    return X[rows]


def _xt(XT, z, bias, out):
    """out[:d] = X_Jᵀ z, out[d] = bias·Σz (XT = X_Jᵀ)."""
    out[:-1] = XT @ z
    out[-1] = bias * z.sum()


def outputs(indptr, indices, data, bias, w, rows, o):
    """o[i] = x_i·w[:d] + bias·w[d] for every i in rows."""
    if not rows.size:
        return
    held = _held(indptr, indices, data, w.size - 1)
    if held is not None and _most(rows, held):
        o[rows] = held.times(indptr, indices, data, w[:-1])[rows] + bias * w[-1]
    else:
        o[rows] = _rows(_matrix(indptr, indices, data, w.size), rows) @ w[:-1] + bias * w[-1]


def dot(a, b) -> float:
    """Σ a_k b_k by numpy's pairwise summation: the same bytes whatever BLAS's threads (a BLAS
    dot splits long vectors over its threads, and the split moves the rounding)."""
    return float(np.add.reduce(a * b))


def _all_rows(J, m) -> bool:
    """Whether J is 0, 1, ..., m - 1 (every row, in order)."""
    return J.size == m and (m == 0 or (J[0] == 0 and J[-1] == m - 1))


# the matrices whose products :class:`Held` keeps parts for: at most this many stored values
# (the numpy path's sizes; its copies then cost a few MB while the fit runs)
HELD_VALUES = 1 << 21


class Held:
    """What the routines derive from one CSR matrix X (m rows, d columns), each part built the
    first time it is wanted: Xᵀ as CSR, |X|, |X|ᵀ and (X∘X)ᵀ, the dense copy (while it has at most
    :data:`DENSE_GRAM_VALUES` values). With them a product over most of the rows J is taken
    over every row (X w, then the rows J; Xᵀ z with z = 0 off J) instead of on a copy of the
    rows J: scipy's row selection and matrix set-up cost more than the product on a few
    hundred rows (usps49-10's tsvm: about half of its time on numpy). Each row's sum, and each
    column's sum over the rows in order, is the one taken on the rows J (the other rows add
    zeros), so the bytes are the same. Holds copies, never the caller's arrays, and is dropped
    with them (:func:`_held`) or when the next fit begins (:func:`forget_held`)."""

    def __init__(self, indptr, indices, data, d: int):
        self.refs = (weakref.ref(indptr), weakref.ref(indices), weakref.ref(data, _drop))
        self.m, self.d = indptr.size - 1, d
        self.direct = (_csr_matvec is not None and data.dtype == np.float64
                       and indices.dtype == indptr.dtype)
        self._t = self._abs = self._abs_t = self._sq_t = self._dense = None
        self.counts = np.diff(indptr)

    def holds(self, indptr, indices, data, d: int) -> bool:
        return (self.d == d and self.m == indptr.size - 1
                and all(r() is a for r, a in zip(self.refs, (indptr, indices, data))))

    def _rows_product(self, indptr, indices, data, x):
        if not (self.direct and x.dtype == np.float64 and x.flags.c_contiguous):
            return _matrix(indptr, indices, data, self.d + 1) @ x
        out = np.zeros(self.m)
        _csr_matvec(self.m, self.d, indptr, indices, data, x, out)
        return out

    def times(self, indptr, indices, data, x):
        """X x (the caller's arrays: the ones this holds parts of)."""
        return self._rows_product(indptr, indices, data, x)

    def abs_times(self, indptr, indices, data, x):
        """|X| x."""
        if self._abs is None:
            self._abs = np.abs(data)
        return self._rows_product(indptr, indices, self._abs, x)

    def _transpose(self, indptr, indices, data):
        if self._t is None:
            self._t = _matrix(indptr, indices, data, self.d + 1).T.tocsr()
        return self._t

    def times_t(self, indptr, indices, data, z):
        """Xᵀ z."""
        return Product(self._transpose(indptr, indices, data))(z)

    def squares_t(self, indptr, indices, data, z):
        """(X∘X)ᵀ z: Σ_i z_i x_ij², each stored value squared."""
        if self._sq_t is None:
            t = self._transpose(indptr, indices, data)
            self._sq_t = _revalued(t, t.data * t.data)
        return Product(self._sq_t)(z)

    def abs_times_t(self, indptr, indices, data, z):
        """|X|ᵀ z."""
        if self._abs_t is None:
            t = self._transpose(indptr, indices, data)
            self._abs_t = _revalued(t, np.abs(t.data))
        return Product(self._abs_t)(z)

    def dense(self, indptr, indices, data):
        """X as a dense array, or None when it would hold over DENSE_GRAM_VALUES values."""
        if self._dense is None and self.m * self.d <= DENSE_GRAM_VALUES:
            self._dense = _matrix(indptr, indices, data, self.d + 1).toarray()
        return self._dense


_HELD: Held | None = None


def _drop(_ref) -> None:
    """Forget the held parts once the matrix they came from is gone (weakref callback)."""
    global _HELD
    h = _HELD
    if h is not None and h.refs[2] is _ref:
        _HELD = None


def forget_held() -> None:
    """Drop the held parts: each fit begins with this (:class:`solvers.linear.Routines`), so
    that parts kept from a fit before it never outlive a change made in place to the arrays
    between the two fits (a fit never changes its own X)."""
    global _HELD
    _HELD = None


def _held(indptr, indices, data, d: int) -> Held | None:
    """The :class:`Held` parts of the CSR matrix of these arrays with d columns (the last one
    asked for is kept), or None when it stores over :data:`HELD_VALUES` values."""
    global _HELD
    if data.size > HELD_VALUES:
        return None
    h = _HELD
    if h is None or not h.holds(indptr, indices, data, d):
        h = _HELD = Held(indptr, indices, data, d)
    return h


def _most(rows, held: Held) -> bool:
    """Whether products over ``rows`` (ascending, as the active sets are) are taken over every
    row: a third of them or more."""
    return 3 * rows.size >= held.m and _ascending(rows)


def _ascending(rows) -> bool:
    """Whether ``rows`` rise strictly: a sum over them in their order is one in row order."""
    return rows.size < 2 or bool(np.all(rows[1:] > rows[:-1]))


def _scatter(values, rows, m: int):
    """The m-long vector with ``values`` at ``rows`` and zeros elsewhere."""
    z = np.zeros(m)
    z[rows] = values
    return z


class Operators:
    """The products CG makes with the rows XJ of a CSR matrix: ``times`` (XJ x),
    ``times_t`` (XJᵀ z, as the row loop of XJᵀ's CSR copy: no scatter) and ``squares_t``
    (Σ_i z_i x_ij², each stored value squared: the preconditioner's diagonal)."""

    def __init__(self, XJ):
        XT = XJ.T.tocsr()
        self.times, self.times_t = Product(XJ), Product(XT)
        self.squares_t = Product(_revalued(XT, XT.data * XT.data))

    def xt(self, z, bias, out):
        """out[:d] = XJᵀ z, out[d] = bias·Σz (:func:`_xt` by :attr:`times_t`)."""
        out[:-1] = self.times_t(z)
        out[-1] = bias * z.sum()


class HeldOperators(Operators):
    """:class:`Operators` of the rows J (ascending, most of X's rows: :func:`_most`) by
    products over every row of X's :class:`Held` parts: XJ x is the rows J of X x, XJᵀ z is
    Xᵀ of z put at the rows J with zeros elsewhere; the same sums in the same order as on the
    copy of the rows J, without building that copy and its transpose at every Newton point
    (about 1 ms on usps49-10, against a few CG iterations per point)."""

    def __init__(self, held: Held, arrays: tuple, J):
        # not Operators.__init__: that builds the copy of the rows this does without
        self.held, self.arrays, self.J = held, arrays, J

    def times(self, x):
        return self.held.times(*self.arrays, x)[self.J]

    def times_t(self, z):
        return self.held.times_t(*self.arrays, _scatter(z, self.J, self.held.m))

    def squares_t(self, z):
        return self.held.squares_t(*self.arrays, _scatter(z, self.J, self.held.m))


class OperatorCache:
    """The :class:`Operators` of every row of one matrix, kept for the CG solves of one fit
    (tsvm's and da's retrainings solve on every row again and again; a transpose of the
    pcmac sample costs 0.3 ms a solve). Holds the one matrix it was given last."""

    def __init__(self):
        self.key = None
        self.n = 0
        self.ops = None

    def get(self, indptr, indices, data, n):
        key = (indptr, indices, data)
        if (self.key is None or self.n != n or any(a is not b for a, b in zip(self.key, key))):
            self.key, self.n = key, n
            self.ops = Operators(_matrix(indptr, indices, data, n))
        return self.ops


class NumpyVectors:
    """The work of :mod:`solvers.least_squares` on its n-long vectors, in numpy
    (:class:`solvers.linalg.KernelVectors`: the same in one compiled pass each)."""

    @staticmethod
    def line_start(w, w_bar, lam) -> tuple:
        """(λ w·(w̄ - w), λ w̄·(w̄ - w)): φ′ at δ = 0 and 1 of the regulariser."""
        dw = w_bar - w
        return lam * dot(w, dw), lam * dot(w_bar, dw)

    @staticmethod
    def norms(r, m_inv) -> tuple:
        """(Σ r², Σ r (m_inv r))."""
        return dot(r, r), dot(r, m_inv * r)

    @staticmethod
    def step(beta, r, p, t, gamma, lam, m_inv) -> tuple:
        """β += γp and r -= γ(t + λp) in place; returns (Σ r², Σ r (r m_inv))."""
        beta += gamma * p
        r -= gamma * (t + lam * p)
        return dot(r, r), dot(r, r * m_inv)

    @staticmethod
    def direction(out, r, p, m_inv, scale) -> float:
        """out = m_inv r + scale p in place; returns Σ out²."""
        np.multiply(m_inv, r, out=out)
        out += p * scale
        return dot(out, out)


class ArrayRows:
    """:class:`solvers.linalg.KernelRows` on scipy.sparse: CGLS's rows (:mod:`solvers.
    least_squares`) J of a CSR matrix with targets Y, costs C and outputs o (o[J] = X̃_J β,
    updated in place), n = d + 1 unknowns."""

    vectors = NumpyVectors

    def __init__(self, indptr, indices, data, bias, Y, C, J, o, n, cache=None):
        self.n = int(n)
        self.bias = float(bias)
        self.all = _all_rows(J, indptr.size - 1)
        ops = None
        if self.all and cache is not None:
            ops = cache.get(indptr, indices, data, self.n)
        elif not self.all:
            held = _held(indptr, indices, data, self.n - 1)
            if held is not None and _most(J, held):
                ops = HeldOperators(held, (indptr, indices, data), J)
        self.ops = ops or Operators(_rows(_matrix(indptr, indices, data, self.n), J))
        self.Y, self.J, self.o = Y, J, o
        self.CJ = C[J]
        self.z = self.q = self.cq = np.empty(J.size)

    def cg_start(self, precondition: bool) -> list:
        J, CJ, ops = self.J, self.CJ, self.ops
        if J.size == 0:
            return [(0, None, np.zeros(self.n), 0.0)]
        self.z = CJ * ((self.Y - self.o) if self.all else (self.Y[J] - self.o[J]))
        diag = None
        if precondition:
            diag = np.empty(self.n)
            diag[:-1] = ops.squares_t(CJ)
            diag[-1] = self.bias * self.bias * CJ.sum()
        r = np.empty(self.n)
        ops.xt(self.z, self.bias, r)
        return [(int(J.size), diag, r, float(self.z @ self.z))]

    def cg_step(self, gamma, p) -> list:
        omega_z = None
        if gamma is not None:
            if self.all:
                self.o += gamma * self.q
            else:
                self.o[self.J] += gamma * self.q
            self.z -= gamma * self.cq
            omega_z = float(self.z @ self.z)
        if self.J.size == 0:
            return [(omega_z, np.zeros(p.size), 0.0)]
        self.q = self.ops.times(p[:-1]) + self.bias * p[-1]
        self.cq = self.CJ * self.q
        t = np.empty(self.n)
        self.ops.xt(self.cq, self.bias, t)
        return [(omega_z, t, float(self.cq @ self.q))]

    def cg_residual(self) -> list:
        r = np.empty(self.n)
        if self.J.size == 0:
            return [(np.zeros(self.n), 0.0)]
        self.ops.xt(self.z, self.bias, r)
        return [(r, float(self.z @ self.z))]


def split_active(Y, o, C):
    """Active rows J = {i : Y_i o_i < 1}, the rest, and ``1/2 Σ_J C_i (1 - Y_i o_i)²``."""
    diff = 1.0 - Y * o
    on = diff > 0.0
    J = np.flatnonzero(on)
    h = diff[J]
    return J, np.flatnonzero(~on), 0.5 * float(C[J] @ (h * h))


def split_virtual(Yv, Cv, phys, o, m):
    """:func:`solvers.linalg.split_virtual`: the active set over virtual rows (row phys[v],
    target Yv[v], cost Cv[v]); the active copies of a physical row merge into one row of cost
    Ce = Σ Cv and target Ye = Σ Cv Yv / Ce. Returns J, I, the loss, Ye, Ce (length m) and
    the active flag of every copy."""
    diff = 1.0 - Yv * o[phys]
    act = diff > 0.0
    rows = phys[act]
    Ca = Cv[act]
    Ce = np.bincount(rows, weights=Ca, minlength=m)
    Yc = np.bincount(rows, weights=Ca * Yv[act], minlength=m)
    hit = np.bincount(rows, minlength=m) > 0
    h = diff[act]
    Ye = np.zeros(m)
    pos = hit & (Ce > 0.0)
    Ye[pos] = Yc[pos] / Ce[pos]
    return (np.flatnonzero(hit), np.flatnonzero(~hit), 0.5 * float(Ca @ (h * h)), Ye, Ce,
            act)


def margins_agree_virtual(Yv, phys, o, act, eps):
    """:func:`margins_agree` over virtual rows (see :func:`split_virtual`)."""
    yo = Yv * o[phys]
    return bool(np.all(yo[act] <= 1.0 + eps) and np.all(yo[~act] >= 1.0 - eps))


def margins_agree(Y, o, J, I, eps):
    """True when every row of J has Y·o <= 1 + eps and every row of I has Y·o >= 1 - eps."""
    return bool(np.all(Y[J] * o[J] <= 1.0 + eps) and np.all(Y[I] * o[I] >= 1.0 - eps))


def gradient_norms(indptr, indices, data, bias, Y, C, J, lam, w, o, eps):
    """:func:`solvers.linalg.gradient_norms`: (||g||², ||z||², f²) at w, g the negated
    gradient of the objective with active rows J and f its rounding floor (0 when
    ``||g|| <= eps·||z||``)."""
    n = w.size
    held = _held(indptr, indices, data, n - 1)
    if held is None or not _most(J, held):
        held = None
        XJ = _rows(_matrix(indptr, indices, data, n), J)
    CJ = C[J]
    z = CJ * (Y[J] - o[J])
    zz = float(z @ z)
    g = np.empty(n)
    if held is None:
        _xt(XJ.T, z, bias, g)
    else:
        g[:-1] = held.times_t(indptr, indices, data, _scatter(z, J, held.m))
        g[-1] = bias * z.sum()
    g -= lam * w
    gg = float(g @ g)
    if gg <= eps * eps * zz:
        return gg, zz, 0.0
    sq = np.sqrt(J.size + 1.0)
    e = np.empty(n)
    if held is None:
        A = abs(XJ)
        a = abs(bias * w[-1]) + abs(Y[J]) + A @ abs(w[:-1])
        ea = CJ * a * ROUNDING * np.sqrt(np.diff(XJ.indptr) + 2.0)
        e[:-1] = A.T @ (ea + abs(z) * ROUNDING * sq)
    else:
        a = (abs(bias * w[-1]) + abs(Y[J])
             + held.abs_times(indptr, indices, data, abs(w[:-1]))[J])
        ea = CJ * a * ROUNDING * np.sqrt(held.counts[J] + 2.0)
        e[:-1] = held.abs_times_t(indptr, indices, data,
                                  _scatter(ea + abs(z) * ROUNDING * sq, J, held.m))
    e[-1] = abs(bias) * (ea.sum() + ROUNDING * sq * np.sqrt(zz * J.size))
    f = e + ROUNDING * lam * abs(w)
    return gg, zz, float(f @ f)


def gradient_finish(g, e, zz, n_rows, bias, lam, w):
    """:func:`solvers.linalg.gradient_finish` (the distributed driver's: its process needs no
    numba)."""
    e = e.copy()
    e[-1] += abs(bias) * ROUNDING * np.sqrt(n_rows + 1.0) * np.sqrt(zz * n_rows)
    r = g - lam * w
    f = e + ROUNDING * lam * np.abs(w)
    return float(r @ r), zz, float(f @ f)


def line_pieces(Y, C, o, o_bar, L0, R0):
    """:func:`solvers.linalg.line_pieces`: (L, R), L0 and R0 plus the rows' part of φ′ at
    δ = 0 and 1 with the active set at δ = 0, and the breakpoints δ where a row's margin
    crosses 1 with the change (ΔL, ΔR) crossing each makes, in row order."""
    yo = Y * o
    diff = Y * (o_bar - o)
    dd = C * (o_bar - o)
    on = yo < 1.0
    lt = (o - Y) * dd
    rt = (o_bar - Y) * dd
    L = L0 + float(lt[on].sum())
    R = R0 + float(rt[on].sum())
    leave = on & (diff > 0.0)
    cross = np.flatnonzero(leave | (~on & (diff < 0.0)))
    deltas = (1.0 - yo[cross]) / diff[cross]
    sign = np.where(leave[cross], -1.0, 1.0)
    return L, R, deltas, sign * lt[cross], sign * rt[cross]


VECTORS = NumpyVectors  # the line search's (solvers.least_squares.PieceRows)


def first_k(rows, keys, k):
    """:func:`solvers.linalg.first_k`: the rows of the k smallest keys, in the order a stable
    sort of all of them gives."""
    return rows[np.argsort(keys, kind="stable")[:k]]


def sq_norm(w):
    return float(w @ w)


def squared_loss(Y, o, C):
    """1/2 Σ_i C_i (Y_i - o_i)²."""
    e = Y - o
    return 0.5 * float(C @ (e * e))


# gram_system's product on dense rows (the BLAS's symmetric rank-k update) when they hold at
# most this many values and it costs at most DENSE_GRAM_RATIO times the sparse product's
# pairs of values: a BLAS multiply-add costs ~0.1-0.3 ns, scipy's sparse product ~10 ns a
# pair (usps49-10's 1,296 rows of 94 values among 256 columns: 3 s of a 4.5 s fit sparse)
DENSE_GRAM_VALUES = 1 << 22
DENSE_GRAM_RATIO = 16


def _dense_gram(indptr, rows, n_cols) -> bool:
    """Whether the Gram sum over ``rows`` runs on their dense copy (:data:`DENSE_GRAM_VALUES`)."""
    m = np.diff(indptr)[rows].astype(np.float64)
    return (rows.size * n_cols <= DENSE_GRAM_VALUES
            and rows.size * n_cols * n_cols <= DENSE_GRAM_RATIO * float(m @ m))


def _weighted_gram(indptr, XR, rows, w, costs: bool, dense=None):
    """XRᵀ diag(w) XR for XR the rows ``rows`` of the CSR matrix of ``indptr``: by the BLAS on
    their dense copy where :func:`_dense_gram` (``costs``, w ≥ 0: SᵀS with S = √w·XR, its
    symmetric rank-k update), else by scipy's sparse product. ``dense``: that copy, already
    made (XR is then not read)."""
    if dense is None and not _dense_gram(indptr, rows, XR.shape[1]):
        return (XR.T @ XR.multiply(w[:, None]).tocsr()).toarray()
    D = XR.toarray() if dense is None else dense
    if not costs:
        return D.T @ (D * w[:, None])
    D *= np.sqrt(w)[:, None]
    return D.T @ D


def gram_add(indptr, indices, data, bias, rows, w, wy, lo_t, hi_t, H, b):
    """:func:`solvers.linalg.gram_add` on numpy: adds Σ_t w[t] x̃_i x̃_iᵀ to H (its lower
    triangle and its last column) and Σ_t wy[t] x̃_i to b over t = lo_t … hi_t - 1,
    i = rows[t] (X̃ = [X, bias]; H and b of order n_cols + 1)."""
    n = b.size
    R = rows[lo_t:hi_t]
    wt = w[lo_t:hi_t]
    wyt = wy[lo_t:hi_t]
    held = _held(indptr, indices, data, n - 1)
    D = (held.dense(indptr, indices, data) if held is not None and _ascending(R)
         and _dense_gram(indptr, R, n - 1) else None)
    if D is not None:  # as below, without a copy of the rows R in scipy's form
        H[:-1, :-1] += _weighted_gram(indptr, None, R, wt, costs=False, dense=D[R])
        col = bias * held.times_t(indptr, indices, data, _scatter(wt, R, held.m))
        H[-1, :-1] += col
        H[:-1, -1] += col
        H[-1, -1] += bias * bias * wt.sum()
        b[:-1] += held.times_t(indptr, indices, data, _scatter(wyt, R, held.m))
        b[-1] += bias * wyt.sum()
        return
    XR = _matrix(indptr, indices, data, n)[R]
    H[:-1, :-1] += _weighted_gram(indptr, XR, R, wt, costs=False)  # differences: any sign
    col = bias * (XR.T @ wt)
    H[-1, :-1] += col
    H[:-1, -1] += col
    H[-1, -1] += bias * bias * wt.sum()
    b[:-1] += XR.T @ wyt
    b[-1] += bias * wyt.sum()


def gram_system(indptr, indices, data, bias, Y, C, J, lam, n_cols):
    """:func:`solvers.linalg.gram_system` on scipy: (H, b) of ``(λI + X̃_Jᵀ C_J X̃_J) β =
    X̃_Jᵀ C_J Y_J`` for n_cols + 1 unknowns (the bias last); X_Jᵀ C_J X_J by the BLAS on
    dense rows where they are dense enough (C ≥ 0: the costs)."""
    n = n_cols + 1
    CJ = C[J]
    H = np.empty((n, n))
    held = _held(indptr, indices, data, n_cols)
    D = (held.dense(indptr, indices, data) if held is not None and _ascending(J)
         and _dense_gram(indptr, J, n_cols) else None)
    if D is not None:  # the rows' dense copy: the values XJ.toarray() gives
        H[:-1, :-1] = _weighted_gram(indptr, None, J, CJ, costs=True, dense=D[J])
        col = held.times_t(indptr, indices, data, _scatter(CJ, J, held.m))
        b = np.empty(n)
        b[:-1] = held.times_t(indptr, indices, data, _scatter(CJ * Y[J], J, held.m))
        b[-1] = bias * (CJ * Y[J]).sum()
    else:
        XJ = _rows(_matrix(indptr, indices, data, n), J)
        H[:-1, :-1] = _weighted_gram(indptr, XJ, J, CJ, costs=True)
        col = XJ.T @ CJ
        b = np.empty(n)
        _xt(XJ.T.tocsr(), CJ * Y[J], bias, b)
    H[-1, :-1] = bias * col
    H[:-1, -1] = bias * col
    H[-1, -1] = bias * bias * CJ.sum()
    H[np.diag_indices(n)] += lam
    return H, b


class DirectSolves:
    """Whether a fit's Newton steps are solved exactly, by the Cholesky factor of
    ``λI + X̃_Jᵀ C_J X̃_J``, rather than by CG. An exact solve costs Σ (m_i + 1)(m_i + 2)/2 over
    the active rows (m_i values each) for the matrix, n³/6 for its factor and 2n² for the
    two triangular solves; a CG iteration about 2·(values + rows) + 6n. Once the last CG
    solve's iterations cost more than an exact solve would, the fit's later steps are exact
    (for good: few columns, where CG takes up to more iterations than there are unknowns).
    The choice counts work, not seconds, so a fit's iterates never depend on the machine; one
    instance serves a fit's retrainings (tsvm, da), in one process and on a cluster alike."""

    def __init__(self):
        self.on = False
        self.last_cg = 0

    @property
    def deciding(self) -> bool:
        """Whether the next step's work figures are wanted (a CG solve done, not yet exact)."""
        return not self.on and self.last_cg > 0

    def decide(self, pairs: float, values: float, rows: int, n: int) -> None:
        """Exact from this step on when the last CG solve cost more than an exact one would:
        ``pairs`` = Σ (m_i + 1)(m_i + 2)/2 and ``values`` = Σ m_i over the ``rows`` active
        rows (none: no decision), n unknowns."""
        if rows and self.deciding:
            gram = pairs + n ** 3 / 6.0 + 2.0 * n * n
            self.on = self.last_cg * (2.0 * (values + rows) + 6.0 * n) > gram

    def cg_done(self, iterations: int) -> None:
        self.last_cg = iterations


def row_pairs(indptr, J) -> tuple[float, float]:
    """(Σ (m_i + 1)(m_i + 2)/2, Σ m_i) over rows J of m_i stored values (exact in float64)."""
    m = (indptr[J + 1] - indptr[J]).astype(np.float64)
    return float(((m + 1.0) * (m + 2.0)).sum()) / 2.0, float(m.sum())


# the order up to which solve_spd factors on one BLAS thread: OpenBLAS splits a Cholesky of
# order 301 (w8a's Newton system) over its threads, which costs more than it gains (1.9 ms on 2
# threads against 0.7 ms on one, order 601: 16 ms against 3.2 ms, with another job on the
# machine), and it ran with two BLAS threads under NUMBA_NUM_THREADS=1
SERIAL_FACTOR_ORDER = 1024
# up to this order, while scipy.linalg is not imported, solve_spd solves by numpy: general
# solves with the triangular factor, three times a triangular solve's flops (a9a's 124-column
# systems: da 9 % slower); importing scipy.linalg costs a small fit 0.05 s
NUMPY_FACTOR_ORDER = 64
_blas = None  # threadpoolctl's handle on the process's BLAS libraries, made at the first use


def one_blas_thread():
    """A context in which the BLAS libraries loaded in this process run on one thread (put
    back afterwards; 0.06 ms a use, 5 ms the first time)."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        _blas = ThreadpoolController()
    return _blas.limit(limits=1, user_api="blas")


def solve_spd(H, b):
    """The solution of H x = b for a symmetric positive definite H by its Cholesky factor
    (LAPACK; on one BLAS thread up to order SERIAL_FACTOR_ORDER), or None when H is not
    numerically positive definite or x is not finite."""
    import contextlib
    import sys

    if H.shape[0] <= NUMPY_FACTOR_ORDER and "scipy.linalg" not in sys.modules:
        # numpy's own LAPACK: no scipy.linalg to import
        try:
            with one_blas_thread():
                c = np.linalg.cholesky(H)
                x = np.linalg.solve(c.T, np.linalg.solve(c, b))
        except np.linalg.LinAlgError:
            return None
        return x if np.isfinite(x).all() else None
    import scipy.linalg  # only a fit on few columns needs it

    serial = H.shape[0] <= SERIAL_FACTOR_ORDER
    try:
        with one_blas_thread() if serial else contextlib.nullcontext():
            x = scipy.linalg.cho_solve(
                scipy.linalg.cho_factor(H, lower=True, check_finite=False), b,
                check_finite=False)
    except np.linalg.LinAlgError:
        return None
    return x if np.isfinite(x).all() else None
