"""Graph total-variation classifiers of Bresson & Zhang (2012) — issue 6, binary Cheeger-RLS.

Shared pieces: the kernel matrix K over all N rows (labeled and unlabeled), the Cholesky factor
of ``λI + rK`` (the RLS smoothing step ``e = K(λI + rK)⁻¹ r g``, paper eq. 37-38, factored
once), and the kNN graph as an ``Edges`` incidence (``solvers.tv``) for the TV steps.

Normalisation: the paper writes ``f ← N·f/‖f‖₂``; with labels ±1 written into f at the labeled
rows that puts the unlabeled entries on a scale √N larger than the labels. We use
``f ← √N·f/‖f‖₂`` (a ±1 labeling has exactly this norm), which keeps labels and unlabeled
entries on one scale; with N·f/‖f‖₂ the error on USPS 4 vs 9 with one label per class was 17.6 %
against 27.5 % (c = 1) and the √N form reached 3.0 % (c = 0.1).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from ssl_svm.solvers import backend as backends
from ssl_svm.solvers import graph, kernels, tv
from ssl_svm.solvers.errors import ProblemError
from ssl_svm.solvers.kernels import KernelSpec
from ssl_svm.solvers.models import KernelExpansion, Model
from ssl_svm.solvers.multiclass import class_labels
from ssl_svm.solvers.params import (
    CUT_SHARE_Z,
    SOLVER_PARAMS,
    TV_GAMMA_BINARY,
    TV_GAMMA_MULTICLASS,
)
from ssl_svm.solvers.progress import beat

log = logging.getLogger("ssl.solver.tv")


class _KernelStep:
    """The RLS smoothing step, the same for every kernel system (``solve`` and ``kmul``)."""

    def rls(self, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(e, α) with α = (λI + rK)⁻¹ r g and e = Kα: argmin_e λ/2‖e‖²_K + r/2‖e − g‖²."""
        alpha = self.solve(self.r * g)
        return self.kmul(alpha), alpha

    def label_columns(self, L: np.ndarray) -> tuple:
        """((λI + rK)⁻¹[:, L], G[:, L], G[L, L]) with G = K(λI + rK)⁻¹: the first two as
        anything with ``@`` (here dense n × |L|), the last dense."""
        E = np.zeros((self.n, L.size))
        E[L, np.arange(L.size)] = 1.0
        ainv = self.solve(E)
        GL = self.kmul(ainv)
        return ainv, GL, GL[L]


@dataclass
class TVSetup(_KernelStep):
    """Kernel, factored RLS system and graph edges shared by every run on the same rows
    (exact kernel: K is the dense n×n matrix, ``chol`` the Cholesky factor of λI + rK).

    The solvers reach K only through ``kmul``, ``solve``, ``rls``, ``label_solve`` and
    ``expansion``, which ``LowRankSetup`` implements for a Nyström kernel."""
    K: np.ndarray
    chol: tuple
    edges: tv.Edges
    lam: float
    r: float
    X: object = None  # the training rows, for the out-of-sample expansion
    numpy: bool = False  # the TV steps and SMO on numpy's backend, not numba's
    _label_factor: tuple | None = field(default=None, repr=False)

    @property
    def n(self) -> int:
        return self.K.shape[0]

    def kmul(self, a: np.ndarray) -> np.ndarray:
        """K a (a: vector or n×c)."""
        return self.K @ a

    def solve(self, b: np.ndarray) -> np.ndarray:
        """(λI + rK)⁻¹ b (b: vector or n×c)."""
        # K comes from parsed, finite data; a finiteness check scans the n² factor every call
        return sla.cho_solve(self.chol, b, check_finite=False)

    def label_columns(self, L: np.ndarray) -> tuple:
        """:meth:`_KernelStep.label_columns` with no more n × |L| copies than it needs: with
        every row labeled (L = 0..n−1), G[L, L] is G[:, L] itself. (G = (I − λ(λI + rK)⁻¹)/r
        would spare the product by K, but its rounding leaves G an eigenvalue of −1e-16
        where K is singular, and SMO then stalls above its 1e-10 on duplicated rows.)"""
        cols = np.arange(L.size)
        E = np.zeros((self.n, L.size), order="F")
        E[L, cols] = 1.0
        ainv = sla.cho_solve(self.chol, E, overwrite_b=True, check_finite=False)
        GL = self.kmul(ainv)
        return ainv, GL, GL if L.size == self.n else GL[L]

    def label_solve(self, lab: np.ndarray, eta: float, b: np.ndarray) -> np.ndarray:
        """α with (ηJK + rK + λI)α = b, J = diag(lab) (the multi-class TV-RLS f-step, paper
        eq. 106), as (K + λM⁻¹)α = M⁻¹b with M = ηJ + rI: symmetric positive definite. The
        factor is cached per (label set, η)."""
        key = (lab.tobytes(), float(eta))
        if self._label_factor is None or self._label_factor[0] != key:
            self._label_factor = None  # free the old factor first
            m = eta * lab + self.r
            A = self.K.copy()
            A[np.diag_indices_from(A)] += self.lam / m
            self._label_factor = (key, sla.cho_factor(A, lower=True, overwrite_a=True,
                                                      check_finite=False), m)
        _, fac, m = self._label_factor
        return sla.cho_solve(fac, b / (m[:, None] if b.ndim == 2 else m), check_finite=False)

    def expansion(self, alpha: np.ndarray) -> tuple[object, np.ndarray]:
        """(rows, coefficients) of f(x) = Σ_j k(x, rows_j) coef_j equal to Kα on the
        training rows: all training rows with α itself."""
        return self.X, alpha


@dataclass
class LowRankSetup(_KernelStep):
    """The same interface as ``TVSetup`` for the Nyström kernel K̃ = C W⁺ Cᵀ = ZZᵀ
    (Williams & Seeger 2001): C = K(X, X_M) over m landmark rows M drawn at random, W =
    K(X_M, X_M), Z = C V Λ^(−1/2) from the eigenvectors of W with eigenvalues above
    1e-10·max (so Z has r ≤ m columns). Memory O(n·m), time O(n·m) per product instead of
    O(n²), and no n×n matrix: (λI + rZZᵀ)⁻¹ and (ZZᵀ + D)⁻¹ (D diagonal) by the Woodbury
    identity with r×r Cholesky factors. Out of sample f(x) = k(x, X_M) T Zᵀα, T = VΛ^(−1/2),
    which equals K̃α on the training rows."""
    Z: np.ndarray
    T: np.ndarray
    landmarks: np.ndarray
    edges: tv.Edges
    lam: float
    r: float
    X: object = None
    numpy: bool = False  # as TVSetup's (the landmark form runs on numba)
    _S: tuple = field(default=None, repr=False)
    _label_factor: tuple | None = field(default=None, repr=False)

    def __post_init__(self):
        S = self.r * (self.Z.T @ self.Z)
        S[np.diag_indices_from(S)] += self.lam
        self._S = sla.cho_factor(S, lower=True, check_finite=False)

    @property
    def n(self) -> int:
        return self.Z.shape[0]

    def kmul(self, a: np.ndarray) -> np.ndarray:
        return self.Z @ (self.Z.T @ a)

    def solve(self, b: np.ndarray) -> np.ndarray:
        # (λI + rZZᵀ)⁻¹ = (I − rZ(λI + rZᵀZ)⁻¹Zᵀ)/λ
        return (b - self.r * (self.Z @ sla.cho_solve(self._S, self.Z.T @ b))) / self.lam

    def label_columns(self, L: np.ndarray) -> tuple:
        """:meth:`TVSetup.label_columns` held as Z and C = S⁻¹Z_Lᵀ (S = λI + rZᵀZ, r × |L|):
        G = ZS⁻¹Zᵀ (push-through), so G[:, L] = ZC and (λI + rK̃)⁻¹[:, L] = (I[:, L] −
        rZC)/λ; O((n + |L|)·r) memory instead of two n × |L| matrices."""
        C = sla.cho_solve(self._S, self.Z[L].T, check_finite=False)
        n, m = self.n, L.size
        Z, lam, r = self.Z, self.lam, self.r

        def gmul(v):
            return Z @ (C @ v)

        def amul(v):
            out = -r * gmul(v)
            out[L] += v
            return out / lam

        return (LinearOperator((n, m), matvec=amul, matmat=amul, dtype=np.float64),
                LinearOperator((n, m), matvec=gmul, matmat=gmul, dtype=np.float64),
                Z[L] @ C)

    def label_solve(self, lab: np.ndarray, eta: float, b: np.ndarray) -> np.ndarray:
        """α with (ηJK̃ + rK̃ + λI)α = b, as (ZZᵀ + D)α = M⁻¹b with D = λM⁻¹, M = ηJ + rI:
        (ZZᵀ + D)⁻¹ = D⁻¹ − D⁻¹Z(I + ZᵀD⁻¹Z)⁻¹ZᵀD⁻¹."""
        key = (lab.tobytes(), float(eta))
        if self._label_factor is None or self._label_factor[0] != key:
            dinv = (eta * lab + self.r) / self.lam
            S = self.Z.T @ (self.Z * dinv[:, None])
            S[np.diag_indices_from(S)] += 1.0
            self._label_factor = (key, sla.cho_factor(S, lower=True, check_finite=False), dinv)
        _, fac, dinv = self._label_factor
        c = b / self.lam  # = D⁻¹M⁻¹b
        return c - (dinv[:, None] if b.ndim == 2 else dinv) * (
            self.Z @ sla.cho_solve(fac, self.Z.T @ c))

    def expansion(self, alpha: np.ndarray) -> tuple[object, np.ndarray]:
        """The landmark rows with coefficients T Zᵀα (m per column of α)."""
        return self.X[self.landmarks], self.T @ (self.Z.T @ alpha)


def setup(X, spec: KernelSpec, neighbors: int = 10, weights: str = "heat",
          width: float | None = None, lam: float = 1.0, r: float = 1.0,
          memory_limit: int | None = None, factor: bool = True,
          landmarks: np.ndarray | None = None,
          W: sp.csr_matrix | None = None, search: str = "exact",
          numpy: bool = False) -> TVSetup | LowRankSetup:
    """Build the kNN graph (OR-symmetrised, heat weights with t = mean kNN distance unless
    ``width``; or take the weights ``W`` already built) and the kernel system: with
    ``landmarks`` None the exact K (n×n, announced and bounded by ``memory_limit``) and the
    factor of λI + rK; else the Nyström factorisation over those rows (``LowRankSetup``,
    :func:`kernels.nystrom`); the neighbours by ``search`` (:func:`graph.knn`); ``numpy``: the
    fit's backend (the exact kernel only)."""
    Xp = kernels.prepare(X)
    if W is None:
        W, _ = graph.adjacency(*graph.knn(Xp, neighbors, search, numpy=numpy), weights, width)
    edges = tv.Edges.from_adjacency(W)
    if landmarks is not None:
        Z, T = kernels.nystrom(spec, Xp, landmarks, memory_limit)
        return LowRankSetup(Z, T, landmarks, edges, lam, r, X=X)
    try:
        K = kernels.gram(spec, Xp, memory_limit)
        kernels.reserve(K.nbytes, "factor of λI + rK" if factor else
                        "factor of K + λ(ηJ + rI)⁻¹", memory_limit)
    except ProblemError as e:
        raise ProblemError(f"{e}; or use a low-rank kernel (--landmarks M)") from None
    if not factor:
        return TVSetup(K, None, edges, lam, r, X=X, numpy=numpy)
    A = r * K
    A[np.diag_indices_from(A)] += lam
    chol = sla.cho_factor(A, lower=True, overwrite_a=True, check_finite=False)
    return TVSetup(K, chol, edges, lam, r, X=X, numpy=numpy)


DISAGREE_WARN = 0.05  # fraction of training rows on which -l and the model may differ (at
# convergence they differ on 0-2 %, rows near the decision boundary)


def _check_outputs(name: str, model: Model, F: np.ndarray, Fk: np.ndarray, unl: np.ndarray,
                   res) -> None:
    """Warn when the two outputs of a TV fit tell different stories.

    The transductive values F (``-l``: the graph function g, or the simplex solution) and the
    model's kernel function Fk = Kα (``ssl-predict``) are two variables of one splitting that
    agree only once it has converged (f = g). Where a kernel cannot follow the graph function
    (an rbf width that makes K nearly constant) the splitting never converges and the two
    can give opposite classes on half the rows; that is said here with the figure, and so is a
    collapse: one class for every unlabeled row, or a kernel function that is ~0."""
    lab_g = model.labels_from_values(F)
    lab_f = model.labels_from_values(Fk)
    dis = float(np.mean(lab_g != lab_f))
    if dis > DISAGREE_WARN:
        gap = float(np.linalg.norm(Fk - F)) / max(float(np.linalg.norm(F)), 1e-300)
        log.warning("%s: the transductive values (what -l writes) and the model's kernel "
                    "function (ssl-predict) give different classes on %.1f %% of the training rows "
                    "(relative |f - g| %.3g%s): the splitting did not reach f = g; a kernel "
                    "width that suits the data (-g) or more iterations (--max-iter) is needed "
                    "before either output can be trusted", name, 100 * dis, gap,
                    "" if res.converged else ", iteration limit")
    if float(np.linalg.norm(Fk)) <= 1e-6 * float(np.linalg.norm(F)):
        log.warning("%s: the kernel function has collapsed to ~0 on the training rows (|Kα| = "
                    "%.3g): ssl-predict's classes are noise", name, float(np.linalg.norm(Fk)))
    if unl.sum() >= 2:
        classes = np.unique(lab_g[unl])
        if classes.size == 1:
            log.warning("%s: every unlabeled row is class %s in the transductive values (what "
                        "-l writes): the solution has collapsed", name, classes[0])


def _level(it: int, last: bool) -> int:
    """Per-iteration progress: INFO for the first, every tenth and the last, else DEBUG
    (shown with --verbose)."""
    return logging.INFO if it == 1 or it % 10 == 0 or last else logging.DEBUG


def normalize(v: np.ndarray) -> np.ndarray:
    """√N·v/‖v‖₂ (see the module docstring); v unchanged if it is zero."""
    nrm = float(np.linalg.norm(v))
    return v * (math.sqrt(v.size) / nrm) if nrm > 0 else v


@dataclass
class TVResult:
    f: np.ndarray  # transductive values on all N rows (sign = class)
    alpha: np.ndarray  # out-of-sample expansion f(x) = Σ_j K(x, x_j) α_j
    iterations: int
    converged: bool
    energy: list = field(default_factory=list)
    residual: list = field(default_factory=list)  # TV splitting: relative primal ‖f − g‖


class _SVMBase:
    """The parts of the SVM step shared by every class: for the labeled rows L,
    (λI + rK)⁻¹[:, L] and G[:, L] with G = K(λI + rK)⁻¹, and G[L, L] for the duals."""

    def __init__(self, st: TVSetup, lab: np.ndarray):
        self.L = np.flatnonzero(lab)
        self.AinvL, self.GL, GLL = st.label_columns(self.L)
        # G[L, L] symmetric to the last bit: SMO reads its rows for its columns, so it is
        # kept C-ordered (for a symmetric matrix, the transpose of a Fortran-ordered one)
        self.GLL = GLL if GLL.flags.c_contiguous else GLL.T
        kernels.symmetrize(self.GLL)
        if GLL is self.GL:
            self.GL = self.GLL  # every row labeled: one n × n matrix, not two
        self.st = st


class _SVMStep:
    """SVM(g) of eqs. 92-96 for the labeled rows L: e = G r g + G[:, L] Y_L β with
    G = K(λI + rK)⁻¹ and β the dual maximiser (eq. 94 with Q = Y_L G[L, L] Y_L, solved exactly
    by SMO over the classes' shared G[L, L]); yl ∈ {±1} on L. β is warm-started from the
    previous call."""

    def __init__(self, st: TVSetup, yl: np.ndarray, mu: float, base: _SVMBase | None = None):
        self.base = base if base is not None else _SVMBase(st, yl != 0)
        self.L = self.base.L
        self.yL = yl[self.L].astype(np.float64)
        self.mu = mu
        self.beta = np.zeros(self.L.size)
        self.st = st

    def __call__(self, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.correct(*self.st.rls(g))

    def correct(self, e0: np.ndarray, alpha0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The SVM step from the RLS step (e0, α0) of the same g (lets several classes share
        one blocked RLS solve)."""
        svm_dual_smo(self.base.GLL, self.dual_q(e0), self.yL, self.mu, self.beta, SMO_TOL,
                     SMO_STEPS, self.st.numpy)
        return self.add_dual(e0, alpha0)

    def dual_q(self, e0: np.ndarray) -> np.ndarray:
        """The dual's linear term q = 1 − y_L e0_L for the RLS step's e0."""
        return 1.0 - self.yL * e0[self.L]

    def add_dual(self, e0: np.ndarray, alpha0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(e, α) of the RLS step (e0, α0) corrected by the current β."""
        yb = self.yL * self.beta
        return e0 + self.base.GL @ yb, alpha0 + self.base.AinvL @ yb


# the SVM step's SMO: its maximal violation at the stop, and its pair steps at most
SMO_TOL = 1e-10
SMO_STEPS = 100_000


def correct_classes(steps: list, E0: np.ndarray, A0: np.ndarray) -> tuple[np.ndarray,
                                                                          np.ndarray]:
    """:meth:`_SVMStep.correct` of every class k (``steps`` sharing one :class:`_SVMBase` and
    μ) from column k of the RLS step (E0, A0): the classes' duals solved together
    (:func:`svm_dual_smo_classes`, on numba's threads), the same bits as one class after
    another."""
    base = steps[0].base
    Q = np.stack([s.dual_q(E0[:, k]) for k, s in enumerate(steps)])
    Y = np.stack([s.yL for s in steps])
    B = np.stack([s.beta for s in steps])
    svm_dual_smo_classes(base.GLL, Q, Y, steps[0].mu, B, SMO_TOL, SMO_STEPS, base.st.numpy)
    E = np.empty_like(E0)
    A = np.empty_like(A0)
    for k, s in enumerate(steps):
        s.beta = B[k]
        E[:, k], A[:, k] = s.add_dual(E0[:, k], A0[:, k])
    return E, A


def _labels_start(yl: np.ndarray, seed: int) -> np.ndarray:
    """Labels on the labeled rows, tiny seeded noise elsewhere, normalised."""
    rng = np.random.default_rng(seed)
    return normalize(np.where(yl != 0, yl, 1e-2 * rng.standard_normal(yl.size)))


def _hinge_step(e: np.ndarray, yl: np.ndarray, r2: float, mu: float) -> np.ndarray:
    """The TV-SVM h-step (eqs. 67-70): argmin_h μΣ_L ξ_i + r2/2‖h − e‖² s.t.
    y_i(h_i + b) ≥ 1 − ξ_i, ξ ≥ 0 on the labeled rows L (the unlabeled rows have no label
    and take h = e). Its dual (69) has Q = I/r2 on L: separable but for yᵀβ = 0, solved
    exactly by :func:`separable_dual`."""
    L = np.flatnonzero(yl != 0)
    yL = yl[L]
    beta = separable_dual(1.0 - yL * e[L], yL, r2, mu)
    h = e.copy()
    h[L] += yL * beta / r2
    return h


def separable_dual(q: np.ndarray, y: np.ndarray, r2: float, mu: float) -> np.ndarray:
    """argmin ½‖β‖²/r2 − qᵀβ s.t. yᵀβ = 0, 0 ≤ β ≤ μ (y = ±1), exactly. With a multiplier ν
    for yᵀβ = 0 the minimiser is β(ν) = clip(r2(q − νy), 0, μ), and φ(ν) = yᵀβ(ν) is
    continuous, non-increasing and piecewise linear with knots at y_i q_i and
    y_i(q_i − μ/r2), positive or zero below them all and negative or zero above: the root
    lies between the two neighbouring knots a bisection over the sorted knots finds, where φ
    is linear. The strictly convex objective makes β unique (SMO reaches it to its
    tolerance; this is the exact point, in O(L log L))."""
    if q.size == 0:
        return np.zeros(0)

    def beta(nu: float) -> np.ndarray:
        return np.clip(r2 * (q - nu * y), 0.0, mu)

    def phi(nu: float) -> float:
        return float(y @ beta(nu))

    knots = np.unique(np.concatenate([y * q, y * (q - mu / r2)]))
    lo, hi = 0, knots.size - 1  # φ(knots[lo]) ≥ 0 ≥ φ(knots[hi]) (see above)
    f_lo, f_hi = phi(knots[lo]), phi(knots[hi])
    if f_lo <= 0.0:
        return beta(knots[lo])
    if f_hi >= 0.0:
        return beta(knots[hi])
    while hi - lo > 1:
        mid = (lo + hi) // 2
        f = phi(knots[mid])
        if f == 0.0:
            return beta(knots[mid])
        if f > 0.0:
            lo, f_lo = mid, f
        else:
            hi, f_hi = mid, f
    # φ is linear between the two knots: its root
    nu = knots[lo] + f_lo * (knots[hi] - knots[lo]) / (f_lo - f_hi)
    return beta(nu)


def _binary_start(st: TVSetup, yl: np.ndarray, start: str | np.ndarray, max_iter: int,
                  prox_tol: float, seed: int, name: str, progress: bool,
                  r: float) -> np.ndarray:
    """The normalised start of :func:`tv_binary` (see there)."""
    if not isinstance(start, str):
        return normalize(np.asarray(start, dtype=np.float64))
    if start == "labels":
        return _labels_start(yl, seed)
    if start != "cheeger":
        raise ValueError(f"start must be 'cheeger', 'labels' or an array, not {start!r}")
    t0 = time.perf_counter()
    c = cheeger(st, yl, "rls", max_iter=max_iter, prox_tol=prox_tol, seed=seed, progress=False,
                r=r)
    if progress:
        log.info("%s start: the Cheeger-RLS solution (%d iterations%s, Cheeger ratio %.6g), "
                 "%.2f s", name, c.iterations, "" if c.converged else ", not converged",
                 c.energy[-1], time.perf_counter() - t0)
    return normalize(c.f)


def tv_binary(st: TVSetup, yl: np.ndarray, loss: str = "rls", eta: float = 100.0,
              gamma: float = TV_GAMMA_BINARY, r2: float = 1.0, mu: float = 100.0,
              max_iter: int = 100, tol: float = 1e-2, prox_tol: float = 1e-4, seed: int = 0,
              start: str | np.ndarray = "cheeger", progress: bool = True,
              r: float = 0.5) -> TVResult:
    """Binary TV-RLS (paper section 2.3, eqs. 21-27; ``loss='rls'``) or TV-SVM (2.7,
    eqs. 73-80; ``loss='svm'``) for labels yl ∈ {+1, −1, 0 = none}, by the paper's
    augmented-Lagrangian splitting with f (kernel, r1 = ``st.r``), h (labels, r2) and g (TV):

        α = (λI + r1K)⁻¹(r1 g − λ1), f = Kα
        h = (ηJ + r2I)⁻¹(ηy + r2 g − λ2)           (RLS)   or the exact hinge step (SVM)
        ḡ = argmin γ‖Dg‖ + (r1+r2)/2 ‖g − (r1 f + λ1 + r2 h + λ2)/(r1+r2)‖²
        g = √N·ḡ/‖ḡ‖ − mean,  λ1 += r1(f − g),  λ2 += r2(h − g)

    ``r`` ≠ ½ (the share of rows wanted in the positive class) subtracts the (1−r)-quantile
    instead of the mean: the mean pulls the solution towards equal halves (on the SSL book's
    USPS, 20 % positives, 35-55 % of the rows came out positive). r = ½ is the paper's.

    Start (``start``; the paper does not give one): ``'cheeger'`` = the binary Cheeger-RLS
    solution on the same graph and kernel (:func:`cheeger` with c = 0.1, its own tolerance
    1e-4, at most ``max_iter`` iterations, at the same share r), ``'labels'`` =
    labels with tiny seeded noise elsewhere, or an array (normalised). Why the Cheeger start:
    the normalisation makes the problem non-convex, and from the labels start, with few
    labels, the iteration settles on a wrong cut (USPS 4 vs 9, heat graph, 10 draws, 1 label
    per class: 32.7 % error for TV-RLS and 31.1 % for TV-SVM against 3.6 % from the Cheeger
    start at γ = 0.01; 40.5 and 27.1 % against 4.3 % at γ = 0.1). The energy does not tell
    the two apart: at γ = 0.01 the labels start's wrong cut ends lower for TV-SVM in 9 of the
    10 draws. Stops when
    ‖gⁿ⁺¹ − gⁿ‖ ≤ tol·‖gⁿ‖ or after ``max_iter``. Transductive values: g (sign = class).
    Out of sample: the last f-step's expansion f(x) = Σ_j K(x, x_j) α_j. The normalisation
    (the paper's, with √N instead of N, see the module docstring) makes the iteration
    non-convex; the energy printed is η/2‖y − Jh‖² (or μΣξ) + λ/2 αᵀKα + γ‖Dg‖.
    """
    n = st.n
    lab = yl != 0
    r1 = st.r
    name = "tv" + loss
    g = _binary_start(st, yl, start, max_iter, prox_tol, seed, name, progress, r)
    g = g - _centre(g, r)
    l1 = np.zeros(n)
    l2 = np.zeros(n)
    gbar = p = None
    energy = []
    residual = []
    t0 = time.perf_counter()
    converged = False
    it = 0
    alpha = np.zeros(n)
    for it in range(1, max_iter + 1):
        beat(log, "outer iteration %d of at most %d", it, max_iter)
        alpha = st.solve(r1 * g - l1)
        f = st.kmul(alpha)
        if loss == "rls":
            h = (eta * yl + r2 * g - l2) / (eta * lab + r2)
            data = 0.5 * eta * float(np.sum((yl[lab] - h[lab]) ** 2))
        else:
            h = _hinge_step(g - l2 / r2, yl, r2, mu)
            data = mu * float(np.sum(np.maximum(0.0, 1.0 - yl[lab] * h[lab])))
        z = (r1 * f + l1 + r2 * h + l2) / (r1 + r2)
        res = tv.tv_prox(st.edges, z, gamma, r1 + r2, g0=gbar, p0=p, tol=prox_tol,
                         numpy=st.numpy)
        gbar, p = res.g, res.p
        g_new = normalize(gbar)
        g_new -= _centre(g_new, r)
        l1 += r1 * (f - g_new)
        l2 += r2 * (h - g_new)
        gn = max(float(np.linalg.norm(g_new)), 1e-300)
        res_f = float(np.linalg.norm(f - g_new)) / gn
        res_h = float(np.linalg.norm(h - g_new)) / gn
        change = float(np.linalg.norm(g_new - g)) / max(float(np.linalg.norm(g)), 1e-300)
        g = g_new
        E = data + 0.5 * st.lam * float(alpha @ f) + gamma * st.edges.tv(g)
        energy.append(E)
        residual.append(res_f)
        if progress:
            log.log(_level(it, change <= tol or it == max_iter),
                    "%s iteration %d: energy %.6g, primal residuals |f-g| %.3g |h-g| %.3g, "
                     "dual residual %.3g, TV steps %d, %.2f s", name, it, E, res_f, res_h,
                     change, res.iterations, time.perf_counter() - t0)
        if change <= tol:
            converged = True
            break
    return TVResult(g, alpha, it, converged, energy, residual)


def _centre(g: np.ndarray, r: float) -> float:
    """What the normalisation subtracts: the mean (the paper's) for r = ½, else the
    (1−r)-quantile, so that a share r of the rows is positive (as in :func:`cheeger`)."""
    return float(g.mean()) if r == 0.5 else _quantile(g, r)


# the labeled rows' class counts are taken as the classes' sizes only when a χ² test rejects
# equal sizes at this level; else the classes count as equal (the paper's norms): noisy shares
# of balanced classes (16 / 20 / 24 labels of three classes of 100) kept TV-RLS from converging
SHARE_TEST_LEVEL = 0.01


def label_shares(Y: np.ndarray, lab: np.ndarray) -> np.ndarray:
    """The classes' shares p_k for the column norms: the labeled rows' shares when their
    counts differ from equal ones at :data:`SHARE_TEST_LEVEL` (Pearson's χ², c − 1 degrees of
    freedom), else 1/c each."""
    from scipy.special import chdtrc

    counts = Y[np.asarray(lab, bool)].sum(axis=0)
    c, total = counts.size, float(counts.sum())
    if c < 2 or total <= 0:
        return np.full(c, 1.0 / max(c, 1))
    expected = total / c
    stat = float(np.sum((counts - expected) ** 2) / expected)
    if chdtrc(c - 1, stat) > SHARE_TEST_LEVEL:
        return np.full(c, 1.0 / c)
    return counts / total


def class_scale(Y: np.ndarray, lab: np.ndarray, class_norm: str) -> np.ndarray:
    """Norm given to each class column of the multi-class solutions, from the classes' shares
    p_k (:func:`label_shares` of Y, one-hot N×c on the rows ``lab``): √(N·c·p_k) for ``'n'``
    and √(N·p_k) for ``'n/c'`` (the norm of a one-hot column whose class has share p_k). With
    equal classes these are the paper's √N, the binary formulations' scale, and √(N/c).

    Equal norms for classes of unequal size break the splitting: on the shuttle sample
    (classes of 1,570 to 1 rows) each small class's column was blown up to √N, f could not
    follow g, the multipliers grew every iteration and TV-RLS predicted 58 % right at 10 %
    labels. Neither form wins everywhere; 'n' stays the default, which wins on USPS
    (BENCHMARKS.md, settings behind the defaults)."""
    n, c = Y.shape
    share = label_shares(Y, lab)
    if class_norm == "n":
        return np.sqrt(n * c * share)
    if class_norm == "n/c":
        return np.sqrt(n * share)
    raise ValueError(f"class_norm must be 'n' or 'n/c', not {class_norm!r}")


def class_norm(asked: str, lab: np.ndarray, name: str = "tv") -> str:
    """The column norm (:func:`class_scale`) of a multi-class fit asked ``asked`` with labeled
    rows ``lab``: as asked, or for 'auto' 'n/c' when every row is labeled, else 'n' (said).
    With every row labeled the simplex solution g must match the one-hot labels on every row,
    whose columns have the norms 'n/c' gives; 'n' makes them √c times larger, the labels'
    term and the splitting pull f apart, and on the shuttle sample (6 classes, 2,000 rows,
    all labeled) TV-RLS oscillated to its iteration limit (4.9 s) where 'n/c' converges in 3
    iterations with the same test accuracy (99.8 %)."""
    if asked != "auto":
        return asked
    if bool(np.all(lab)):
        log.info("%s: class norm n/c (auto: every row is labeled, so the columns take the "
                 "labels' own norm)", name)
        return "n/c"
    return "n"


def tv_multiclass(st: TVSetup, Y: np.ndarray, lab: np.ndarray, loss: str = "rls",
                  eta: float = 100.0, gamma: float = TV_GAMMA_MULTICLASS, mu: float = 100.0,
                  max_iter: int = 100, tol: float = 1e-2, prox_tol: float = 1e-4,
                  class_norm: str = "n", progress: bool = True) -> TVResult:
    """Multi-class TV-RLS (paper section 3.2, eqs. 106-111; ``loss='rls'``) or TV-SVM (3.5,
    eqs. 134-143; ``loss='svm'``). Y is N×c one-hot on the labeled rows ``lab`` (zero
    elsewhere). One splitting variable g per class on the simplex, penalty r = ``st.r``:

        RLS: α^k = (ηJK + rK + λI)⁻¹(ηy^k + r g^k − l^k)   (factored once as K + λM⁻¹)
        SVM: α^k = (λI + rK)⁻¹(Y^kβ^k + r e^k), e^k = g^k − l^k/r, β^k the exact dual (136)
             with y^k = ±1 one-vs-rest on the labeled rows
        f^k = Kα^k;  ĝ^k = argmin γ‖Dg‖ + r/2‖g − (f^k + l^k/r)‖²  (warm-started)
        ḡ = Michelot's projection of every row onto the simplex;  g^k = s ḡ^k/‖ḡ^k‖
        l^k += r(f^k − g^k)

    s_k is class k's column norm (``class_norm``, :func:`class_scale`): with balanced labels
    'n' gives √N, the binary formulations' scale, and 'n/c' √(N/c), the norm of a one-hot
    column, so the unlabeled entries keep the labels' size; classes the labels show to be
    unequal (:func:`label_shares`) get norms in proportion to the square roots of their
    labeled shares.

    Start: g = Y on the labeled rows, 1/c elsewhere. Stops on ‖Gⁿ⁺¹ − Gⁿ‖ ≤ tol‖Gⁿ‖ or
    ``max_iter``. Transductive values and out of sample: f^k = Kα^k of the last f-step
    (class = argmax), as the paper classifies (eq. 111); on USPS 0/1/4/9 with 50 labels per
    class f erred on 1.6 % of the unlabeled rows and g on 3.5 %.
    """
    n, c = Y.shape
    r = st.r
    lab = np.asarray(lab, bool)
    if loss == "rls":
        labf = lab.astype(np.float64)
    else:
        base = _SVMBase(st, lab)
        steps = [_SVMStep(st, np.where(lab, 2.0 * Y[:, k] - 1.0, 0.0), mu, base)
                 for k in range(c)]
    G = np.where(lab[:, None], Y, 1.0 / c)
    s = class_scale(Y, lab, class_norm)
    G = G * (s / np.linalg.norm(G, axis=0))
    Lm = np.zeros((n, c))
    gb = [None] * c
    ps = [None] * c
    energy = []
    residual = []
    t0 = time.perf_counter()
    converged = False
    it = 0
    A = np.zeros((n, c))
    for it in range(1, max_iter + 1):
        beat(log, "outer iteration %d of at most %d", it, max_iter)
        if loss == "rls":
            A = st.label_solve(labf, eta, eta * Y * lab[:, None] + r * G - Lm)
            F = st.kmul(A)
        else:
            F0, A0 = st.rls(G - Lm / r)  # all classes in one blocked solve
            F, A = correct_classes(steps, F0, A0)
        Gh = np.empty((n, c))
        tv_it = 0
        results = tv.tv_prox_columns(st.edges, F + Lm / r, gamma, r, G0=gb, P0=ps,
                                     tol=prox_tol, numpy=st.numpy)
        for k, res in enumerate(results):
            gb[k], ps[k] = res.g, res.p
            Gh[:, k] = res.g
            tv_it += res.iterations
        Gs = tv.project_simplex(Gh, st.numpy)
        Gs *= s / np.maximum(np.linalg.norm(Gs, axis=0), 1e-300)
        Lm += r * (F - Gs)
        change = float(np.linalg.norm(Gs - G)) / max(float(np.linalg.norm(G)), 1e-300)
        res_f = float(np.linalg.norm(F - Gs)) / max(float(np.linalg.norm(Gs)), 1e-300)
        G = Gs
        E = gamma * sum(st.edges.tv(G[:, k]) for k in range(c)) + 0.5 * st.lam * float(
            np.sum(A * F))
        if loss == "rls":
            E += 0.5 * eta * float(np.sum((Y[lab] - F[lab]) ** 2))
        energy.append(E)
        residual.append(res_f)
        if progress:
            log.log(_level(it, change <= tol or it == max_iter),
                    "tv%s (%d classes) iteration %d: energy %.6g, primal residual |f-g| "
                     "%.3g, dual residual %.3g, TV steps %d, %.2f s", loss, c, it, E, res_f,
                     change, tv_it, time.perf_counter() - t0)
        if change <= tol:
            converged = True
            break
    return TVResult(st.kmul(A), A, it, converged, energy, residual)


def balance(f: np.ndarray, r: float) -> tuple[float, float]:
    """(B_r(f), q): the asymmetric balance B_r(f) = min_q Σ_i 2(1−r)(f_i − q)₊ + 2r(q − f_i)₊,
    reached at q = the (1−r)-quantile of f (a share r of the entries above it). For r = ½ it
    is Σ|f − median f|, the Cheeger cut's balance; on an indicator 1_S it is
    2N·min((1−r)s, r(1−s)) with s = |S|/N, largest at s = r, so TV(1_S)/B_r(1_S) is the ratio
    cut that favours a set of share r (Bresson, Laurent, Uminsky & von Brecht 2013)."""
    q = _quantile(f, r)
    d = f - q
    if r == 0.5:
        return float(np.sum(np.abs(d))), q
    return float(np.sum(np.where(d > 0, 2.0 * (1.0 - r) * d, -2.0 * r * d))), q


def cheeger_ratio(edges, f: np.ndarray, r: float = 0.5) -> tuple[float, float]:
    """(Eⁿ, q): the ratio the Cheeger iteration lowers, ‖Df‖ / B_r(f) (:func:`balance`:
    Σ|f − median f| at r = ½), and the split point q of B_r (the median at r = ½)."""
    b, q = balance(f, r)
    return edges.tv(f) / max(b, 1e-300), q


def _quantile(f: np.ndarray, r: float) -> float:
    """The (1−r)-quantile of f; the median, computed as the median, for r = ½."""
    return float(np.median(f)) if r == 0.5 else float(np.quantile(f, 1.0 - r))


def cut_share(yl: np.ndarray) -> tuple[float, str]:
    """(r, why): the positive share the binary Cheeger cut takes by default for labels
    yl ∈ {+1, −1, 0 = none}: ½, the paper's balanced cut, unless the labeled rows' positive
    fraction p is further from ½ than CUT_SHARE_Z binomial standard errors (½/√l for l
    labeled rows), then p."""
    lab = yl[yl != 0]
    p = float(np.mean(lab > 0))
    z = abs(p - 0.5) / (0.5 / math.sqrt(lab.size))
    if z > CUT_SHARE_Z:
        return p, (f"the labeled rows' positive fraction, {z:.2f} standard errors from 0.5: "
                   "the classes are unbalanced")
    return 0.5, (f"the balanced cut: the labeled rows' positive fraction {p:.3g} is "
                 f"{z:.2f} standard errors from 0.5, within {CUT_SHARE_Z:g}")


def cheeger(st: TVSetup, yl: np.ndarray, step: str = "rls", c: float = 0.1, mu: float = 1.0,
            max_iter: int = 100, tol: float = 1e-4, prox_tol: float = 1e-4, seed: int = 0,
            progress: bool = True, r: float = 0.5) -> TVResult:
    """Binary Cheeger-RLS / Cheeger-SVM (paper sections 2.4 and 2.8, eqs. 29-36 / 84-91) for
    labels yl ∈ {+1, −1, 0 = none}.

    Iterates: g = f + c·v with v = sign(f); e = RLS(g) (``step='rls'``, eq. 37) or SVM(g)
    (``'svm'``, eq. 92 with slack weight μ); h = argmin TV(h) + Eⁿ/(2c)‖h − e‖² with
    Eⁿ = ‖Dfⁿ‖/Σ|fⁿ − median fⁿ| the current Cheeger ratio; t = h − median(h); s = labels on
    the labeled rows, t elsewhere; f = √N·s/‖s‖. Start: labels on the labeled rows, tiny
    seeded noise elsewhere. Stops when ‖fⁿ⁺¹ − fⁿ‖ ≤ tol·‖fⁿ‖ or after ``max_iter``.

    ``r`` ≠ ½ (the share of rows wanted in the positive class) replaces the balance
    Σ|f − median f| by the asymmetric :func:`balance` B_r: its subgradient v = 2(1−r) where
    f > 0 and −2r where f < 0, Eⁿ = ‖Dfⁿ‖/B_r(fⁿ), and the shift t = h − (1−r)-quantile(h),
    so that a share r of the rows is positive at every step as ½ is with the median. r = ½
    is the paper's iteration exactly.
    Out of sample: the expansion α of the last smoothing step applied to the final f,
    f(x) = Σ_j K(x, x_j) α_j. Each TV step stops at a relative duality gap ``prox_tol``
    (warm-started): on USPS 4 vs 9, 1e-4 gives the errors of 1e-6 at 3-5x less time.
    """
    n = st.n
    lab = yl != 0
    smooth = st.rls if step == "rls" else _SVMStep(st, yl, mu)
    rng = np.random.default_rng(seed)
    f = normalize(np.where(lab, yl, 1e-2 * rng.standard_normal(n)))
    name = "cheeger-" + step
    if labels_fix_f(lab):
        return _labels_only(name, f, smooth, [cheeger_ratio(st.edges, f, r)[0]], progress)
    h = p = None
    energy = []
    t0 = time.perf_counter()
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        beat(log, "outer iteration %d of at most %d", it, max_iter)
        E = cheeger_ratio(st.edges, f, r)[0]
        energy.append(E)
        v = np.sign(f) if r == 0.5 else np.where(f > 0, 2.0 * (1.0 - r), -2.0 * r)
        e, _ = smooth(f + c * v)
        # argmin TV(h) + E/(2c)‖h − e‖²: the ROF prox with γ = 1, ρ = E/c, warm-started
        res = tv.tv_prox(st.edges, e, 1.0, max(E, 1e-12) / c, g0=h, p0=p, tol=prox_tol,
                         numpy=st.numpy)
        h, p = res.g, res.p
        f_new = normalize(np.where(lab, yl, h - _quantile(h, r)))
        change = float(np.linalg.norm(f_new - f)) / max(float(np.linalg.norm(f)), 1e-300)
        f = f_new
        if progress:
            log.log(_level(it, change <= tol or it == max_iter),
                    "%s iteration %d: energy %.6g, change %.3g, TV steps %d (gap %.2g), "
                     "%.2f s", name, it, E, change, res.iterations, res.gap,
                     time.perf_counter() - t0)
        if change <= tol:
            converged = True
            break
    _, alpha = smooth(f)
    return TVResult(f, alpha, it, converged, energy)


def labels_fix_f(lab: np.ndarray) -> bool:
    """Whether the Cheeger iteration's f is fixed by the labels alone: every row labeled."""
    return bool(np.all(lab))


def _labels_only(name: str, f: np.ndarray, smooth, energy: list,
                 progress: bool) -> TVResult:
    """The Cheeger iteration's result when every row is labeled: each step puts the labels
    back on every labeled row, so f is the (scaled) labels from the start and never changes;
    what remains is the final smoothing step's expansion of them. Skips the start, the
    iteration's smoothing and its TV steps, whose results nothing would read (on the
    2,000-row shuttle sample, 6 classes: 9 of cheeger-svm's 12 s)."""
    if progress:
        log.info("%s: every row is labeled, so f is the labels at every step: the fit is the "
                 "smoothing step of the labels, no iteration", name)
    _, alpha = smooth(f)
    return TVResult(f, alpha, 0, True, energy)


def cheeger_start(Y: np.ndarray, lab: np.ndarray, start: str) -> str:
    """The start multi-class Cheeger takes for ``start``: 'auto' is 'tv' when some class has a
    single labeled row (Y one-hot on the labeled rows ``lab``), else 'labels' (see
    :func:`cheeger_multiclass` for the measurements behind it); 'tv' and 'labels' as given."""
    if start == "auto":
        fewest = int(np.asarray(Y)[np.asarray(lab, bool)].sum(axis=0).min())
        return "tv" if fewest <= 1 else "labels"
    if start not in ("tv", "labels"):
        raise ValueError(f"start must be 'auto', 'tv', 'labels' or an array, not {start!r}")
    return start


def cheeger_multiclass(st: TVSetup, Y: np.ndarray, lab: np.ndarray, step: str = "rls",
                       c: float = 0.1, mu: float = 1.0, max_iter: int = 100, tol: float = 1e-4,
                       prox_tol: float = 1e-4, seed: int = 0,
                       start: str | np.ndarray = "auto", progress: bool = True) -> TVResult:
    """Multi-class Cheeger-RLS / Cheeger-SVM (paper sections 3.3 and 3.6, eqs. 114-122 /
    144-153). Y is N×c one-hot on the labeled rows ``lab``. Per class k, with
    E_k = ‖Df^k‖/Σ|f^k − median f^k|:

        e^k = RLS or SVM(f^k + c·sign(f^k − median f^k))   (SVM: y^k = ±1 one-vs-rest)
        h^k = argmin TV(h) + E_k/(2c)‖h − e^k‖²;  t^k = h^k − median(h^k)
        s = Y on the labeled rows, t elsewhere;  ŝ = Michelot's simplex projection of each row
        f^k = s_k ŝ^k/‖ŝ^k‖   (s_k = √(N·c·p_k), :func:`label_shares`: √N if balanced)

    Departures from the paper's text, both needed for the iteration to move: after the simplex
    step f ≥ 0, so the paper's sign(f^k) is constant; we take the sign about the median, the
    split point of the Cheeger ratio. E is per class (the paper writes one Eⁿ). Out of sample:
    the last smoothing step's expansion of the final f^k. Stops on relative change ≤ tol.

    Start (``start``; the paper does not give one): ``'tv'`` = the multi-class TV-SVM solution
    f = Kα on the same graph and kernel (:func:`tv_multiclass` with its defaults, at most
    ``max_iter`` iterations), ``'labels'`` = Y on the labeled rows and 1/c plus tiny seeded
    noise elsewhere, ``'auto'`` = :func:`cheeger_start`, or an N×c array for the unlabeled
    rows. The iteration refines its start more than it leaves it, so neither start wins
    everywhere (error %, Cheeger-RLS; USPS 0/1/4/9 10 draws, mnist 10 classes 2,000 rows):

        labels per class        1             2       5             10
        USPS, labels / tv       70.8 / 2.0    -       2.4 / 2.0     2.4 / 2.0
        mnist, labels / tv      68.0 / 48.5   31.5 / 34.5   18.3 / 22.1   17.1 / 24.6

    From the labels with one label per class every class function drifts to a balanced cut;
    from TV-SVM the result inherits TV-SVM's errors, which grow with ten classes (at 60,000
    mnist rows, 10 labels per class: 50.9 % against 3.6 % from the labels).
    """
    n, k_cls = Y.shape
    lab = np.asarray(lab, bool)
    if step == "svm":
        base = _SVMBase(st, lab)
        steps = [_SVMStep(st, np.where(lab, 2.0 * Y[:, k] - 1.0, 0.0), mu, base)
                 for k in range(k_cls)]

    def smooth(V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # every class in one blocked RLS solve (one pass over the factor, not c), then the
        # classes' SVM corrections, their duals together
        E, A = st.rls(V)
        if step == "svm":
            E, A = correct_classes(steps, E, A)
        return E, A
    scale = class_scale(Y, lab, "n")
    if labels_fix_f(lab):
        F = Y * (scale / np.linalg.norm(Y, axis=0))
        E_all = sum(cheeger_ratio(st.edges, F[:, k])[0] for k in range(k_cls))
        return _labels_only(f"cheeger-{step} ({k_cls} classes)", F, smooth, [E_all], progress)
    rng = np.random.default_rng(seed)
    if isinstance(start, str):
        start = cheeger_start(Y, lab, start)
        if start == "labels":
            f0 = 1.0 / k_cls + 1e-2 * rng.standard_normal((n, k_cls))
        elif start == "tv":
            t0 = time.perf_counter()
            r = tv_multiclass(st, Y, lab, "svm", max_iter=max_iter, prox_tol=prox_tol,
                              progress=False)
            f0 = r.f
            if progress:
                log.info("cheeger-%s start: the multi-class TV-SVM solution (%d iterations%s), "
                         "%.2f s", step, r.iterations, "" if r.converged else
                         ", not converged", time.perf_counter() - t0)
    else:
        f0 = np.asarray(start, dtype=np.float64)
    F = np.where(lab[:, None], Y, f0)
    F = F * (scale / np.linalg.norm(F, axis=0))
    hs = [None] * k_cls
    ps = [None] * k_cls
    energy = []
    t0 = time.perf_counter()
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        beat(log, "outer iteration %d of at most %d", it, max_iter)
        T = np.empty((n, k_cls))
        V = np.empty((n, k_cls))
        rho = np.empty(k_cls)
        E_all = 0.0
        tv_it = 0
        for k in range(k_cls):
            fk = F[:, k]
            E, med = cheeger_ratio(st.edges, fk)
            E_all += E
            V[:, k] = fk + c * np.sign(fk - med)
            rho[k] = max(E, 1e-12) / c
        e, _ = smooth(V)
        results = tv.tv_prox_columns(st.edges, e, 1.0, rho, G0=hs, P0=ps, tol=prox_tol,
                                     numpy=st.numpy)
        for k, res in enumerate(results):
            hs[k], ps[k] = res.g, res.p
            T[:, k] = res.g - np.median(res.g)
            tv_it += res.iterations
        S = tv.project_simplex(np.where(lab[:, None], Y, T), st.numpy)
        F_new = S * (scale / np.maximum(np.linalg.norm(S, axis=0), 1e-300))
        change = float(np.linalg.norm(F_new - F)) / max(float(np.linalg.norm(F)), 1e-300)
        F = F_new
        energy.append(E_all)
        if progress:
            log.log(_level(it, change <= tol or it == max_iter),
                    "cheeger-%s (%d classes) iteration %d: energy %.6g, change %.3g, TV steps "
                     "%d, %.2f s", step, k_cls, it, E_all, change, tv_it,
                     time.perf_counter() - t0)
        if change <= tol:
            converged = True
            break
    _, A = smooth(F)
    return TVResult(F, A, it, converged, energy)


# --------------------------------------------------------------------------- SVM step

def svm_dual_smo(G, q, y, mu, beta, tol, max_iter, numpy: bool = False):
    """min ½βᵀQβ − qᵀβ s.t. yᵀβ = 0, 0 ≤ β ≤ μ with Q_ij = y_i y_j G_ij (y = ±1, G symmetric
    PSD) by SMO with the second-order working set and the exact clipped pair step, to a
    maximal violation ``tol``; β a feasible start, updated in place; returns (iterations,
    final violation). numba's loop
    (:func:`ssl_svm.solvers.tv_numba.svm_dual_smo`), or with ``numpy`` the same steps by
    whole-array passes: the same pairs (the first best index, as the loop's strict
    comparisons pick) and the same arithmetic per entry."""
    if not numpy:
        from ssl_svm.solvers import tv_numba

        return tv_numba.svm_dual_smo(G, q, y, mu, beta, tol, max_iter)
    if q.size == 0:  # as the loop: no pair, the violation of empty sets
        return 0, -np.inf
    grad = y * (G @ (y * beta)) - q
    pos = y > 0
    diag = np.diag(G).copy()
    viol = np.inf
    for it in range(max_iter):
        v = -y * grad
        low = np.where(pos, beta > 0, beta < mu)
        vu = np.where(np.where(pos, beta < mu, beta > 0), v, -np.inf)
        i = int(np.argmax(vu))
        gmax = vu[i]
        gmin = np.min(np.where(low, v, np.inf))
        viol = gmax - gmin
        if gmax == -np.inf or gmin == np.inf or viol <= tol:
            return it, float(viol)
        b = gmax + y * grad
        eta = G[i, i] + diag - 2.0 * G[i]
        gain = np.where(low & (b > 0.0), b * b / np.where(eta > 1e-12, eta, 1e-12), -1.0)
        j = int(np.argmax(gain))
        eta_j = eta[j]
        s = b[j] / eta_j if eta_j > 1e-15 else np.inf
        s = min(s, (mu - beta[i]) if y[i] > 0 else beta[i])
        s = min(s, beta[j] if y[j] > 0 else (mu - beta[j]))
        beta[i] += y[i] * s
        beta[j] += -y[j] * s
        grad += y * (G[i] * s - G[j] * s)
    return max_iter, float(viol)


def svm_dual_smo_classes(G, Q, Y, mu, B, tol, max_iter, numpy: bool = False) -> list:
    """:func:`svm_dual_smo` of each class k (rows Q[k], Y[k], B[k], B updated in place) over
    the classes' shared G: on numba's threads
    (:func:`ssl_svm.solvers.tv_numba.svm_dual_smo_classes`), or with ``numpy`` one after
    another; the duals are independent, so the same β either way. Returns each class's
    (iterations, final violation)."""
    if numpy:
        return [svm_dual_smo(G, Q[k], Y[k], mu, B[k], tol, max_iter, numpy=True)
                for k in range(Q.shape[0])]
    from ssl_svm.solvers import tv_numba

    stats = np.zeros((Q.shape[0], 2))
    tv_numba.svm_dual_smo_classes(G, Q, Y, mu, B, tol, max_iter, stats)
    return [(int(it), float(v)) for it, v in stats]


# --------------------------------------------------------------------------- ssl-train

PARAMS = {name: SOLVER_PARAMS[name] for name in ("tvrls", "tvsvm", "cheeger-rls",
                                                   "cheeger-svm")}


def _share(name: str, params: dict, yl: np.ndarray) -> float:
    """-R as given, else :func:`cut_share` of the labels, said."""
    r = params["positive_fraction"]
    if r is None:
        r, how = cut_share(yl)
        log.info("%s: r = %.6g (%s; -R sets it)", name, r, how)
    return r


@dataclass
class _Plan:
    """What a TV fit will build, decided before anything is: the landmarks (None: the exact
    kernel), the neighbour search, the backend, whether the RLS system is factored."""
    m: int | None
    search: str
    numpy: bool
    factor: bool


def _plan(name: str, X, y: np.ndarray, multi: bool, params: dict, max_memory,
          backend) -> _Plan:
    """The form of the fit (exact or landmarks) within ``max_memory``, refused before the graph
    when it cannot fit; the neighbour search; the backend (:func:`backends.backend`)."""
    n = X.shape[0]
    # what setup() holds at once: K and the factor of λI + rK (exact kernel) or the Nyström
    # factor and its copy (the landmark form: Z and LowRankSetup's label system)
    exact = [(f"kernel matrix {n}×{n}", 8 * n * n), (f"factor {n}×{n}", 8 * n * n)]
    m = kernels.kernel_form(name, params["landmarks"], n, int(np.sum(y != 0)), exact,
                            max_memory, copies=2)
    kernels.check_plan([(f"Nyström factor {n}×{m}", kernels.landmark_bytes(n, m, 2))]
                       if m else exact, max_memory)
    search, _ = graph.knn_search(params["knn"], X, max_memory)
    on = backends.backend(name, n, X.nnz, {"backend": backend, **params, "landmarks": m,
                                           "knn": search, "unlabeled": int(np.sum(y == 0))})
    return _Plan(m, search, on.numpy, not (multi and name == "tvrls"))


def _system(name: str, X, y: np.ndarray, params: dict, plan: _Plan,
            max_memory) -> tuple[TVSetup | LowRankSetup, KernelSpec]:
    """The graph and the kernel system of the rows X (:func:`setup`) as the plan says, and
    the kernel (γ auto resolved on the graph's scale, said)."""
    landmarks = kernels.choose_landmarks(y, plan.m) if plan.m else None
    idx, dist = graph.knn(kernels.prepare(X), params["neighbors"], plan.search,
                          numpy=plan.numpy)
    W, t = graph.adjacency(idx, dist, params["graph_weights"], params["heat_width"])
    if params["gamma"] is None and params["kernel"] == "rbf":
        gamma, how = graph.graph_gamma(t, float(np.mean(dist)), X)
    else:
        gamma, how = kernels.resolve_gamma(params["gamma"], params["kernel"], X)
    if how != "given" and params["kernel"] != "linear":
        log.info("%s: kernel γ = %.6g (%s)", name, gamma, how)
    spec = KernelSpec(params["kernel"], float(gamma), int(params["degree"]),
                      float(params["coef0"]))
    st = setup(X, spec, params["neighbors"], params["graph_weights"], params["heat_width"],
               params["lambda"], params["r1"], max_memory, factor=plan.factor,
               landmarks=landmarks, W=W, numpy=plan.numpy)
    return st, spec


def _solve(name: str, st, y: np.ndarray, classes: list, params: dict) -> tuple:
    """The splitting (TV) or inverse-power (Cheeger) iteration on the system ``st`` for labels
    y (0 = none), binary or multi-class by the classes; returns (result, class order, the
    defaults taken, more statistics)."""
    method, loss = ("cheeger", name.split("-")[1]) if name.startswith("cheeger") else \
        ("tv", name[2:])
    common = dict(max_iter=params["max_iter"], tol=params["epsilon"],
                  prox_tol=params["prox_tol"])
    extra = {}
    more_stats = {}
    if len(classes) > 2:
        if params.get("positive_fraction") is not None:
            log.warning("%s: -R is for two classes; with %d classes it is ignored", name,
                        len(classes))
        lab = y != 0
        Y = (y[:, None] == np.asarray(classes, dtype=np.float64)[None, :]).astype(float)
        if method == "tv":
            extra["tv_gamma"] = (TV_GAMMA_MULTICLASS if params["tv_gamma"] is None
                                 else params["tv_gamma"])
            extra["class_norm"] = class_norm(params["class_norm"], lab, name)
            res = tv_multiclass(st, Y, lab, loss, eta=params.get("eta", 100.0),
                                gamma=extra["tv_gamma"], mu=params.get("mu", 100.0),
                                class_norm=extra["class_norm"], **common)
            extra["start"] = "labels"  # the multi-class splitting starts from the labels
        else:
            extra["start"] = cheeger_start(Y, lab, params["start"])
            why = ""
            if params["start"] == "auto":
                why = (" (auto: one labeled row in some class)" if extra["start"] == "tv"
                       else " (auto: at least two labeled rows per class)")
            if not labels_fix_f(lab):  # else no start is needed (_labels_only)
                log.info("%s start: %s%s", name, extra["start"], why)
            res = cheeger_multiclass(st, Y, lab, loss, c=params["cheeger_step"],
                                     mu=params.get("mu", 1.0), start=extra["start"], **common)
        return res, list(classes), extra, more_stats
    yl = np.where(y == 0, 0.0, np.where(y == classes[1], 1.0, -1.0))
    r = _share(name, params, yl)
    more_stats["positive_fraction"] = [r]
    if method == "tv":
        extra["tv_gamma"] = (TV_GAMMA_BINARY if params["tv_gamma"] is None
                             else params["tv_gamma"])
        res = tv_binary(st, yl, loss, eta=params.get("eta", 100.0), gamma=extra["tv_gamma"],
                        r2=params["r2"], mu=params.get("mu", 100.0), start=params["start"],
                        r=r, **common)
    else:
        extra["start"] = "labels"  # binary Cheeger starts from the labels
        res = cheeger(st, yl, loss, c=params["cheeger_step"], mu=params.get("mu", 1.0), r=r,
                      **common)
    return res, [classes[1], classes[0]], extra, more_stats


def _fit_tv(name: str):
    def fit(X, y, cost, params, max_memory=None, backend=None):
        """Train on all rows of X (label 0 = unlabeled); binary or multi-class by the labels.
        ``backend`` as :func:`ssl_svm.solvers.linear.fit_svm`'s (numpy: the exact kernel with
        the exact neighbour search)."""
        t0 = time.perf_counter()
        X = sp.csr_matrix(X)
        n, d = X.shape
        metric, X, scale = graph.metric_rows(params["graph_metric"], X, name)
        y = np.asarray(y, dtype=np.float64)
        classes = class_labels(y)
        if len(classes) < 2:
            raise ProblemError(f"{name} needs at least two classes among the labeled rows")
        if cost is not None and np.any(np.asarray(cost) != 1.0):
            log.warning("%s: per-row cost factors (cost:) are ignored", name)
        plan = _plan(name, X, y, len(classes) > 2, params, max_memory, backend)
        ts = time.perf_counter()
        st, spec = _system(name, X, y, params, plan, max_memory)
        setup_time = time.perf_counter() - ts
        log.info("%s: %d rows (%d unlabeled), %d classes (%s formulation), kernel %s", name, n,
                 int(np.sum(y == 0)), len(classes),
                 "multi-class" if len(classes) > 2 else "binary", spec.describe())
        log.info("graph (%d edges), kernel and factor%s: %.2f s", st.edges.m,
                 f" (Nyström, {st.Z.shape[1]} of {st.landmarks.size} landmark directions)"
                 if plan.m else "", setup_time)
        res, order, extra, more_stats = _solve(name, st, y, classes, params)
        if not res.converged:
            log.warning("%s stopped at its iteration limit (%d) before the relative change "
                        "fell to %g", name, res.iterations, params["epsilon"])
        log.info("%s: energy %.10g after %d outer iterations", name, res.energy[-1],
                 res.iterations)
        used = dict(params)
        used.update(extra)  # the defaults actually taken for this class count
        used["graph_metric"] = metric
        used["knn"] = plan.search
        coef = res.alpha.reshape(n, -1)
        rows, coef = st.expansion(coef)
        model = Model(name, order, d, KernelExpansion(spec, rows, coef, np.zeros(coef.shape[1]),
                                                      unit_rows=metric == "cosine",
                                                      column_scale=scale),
                      params={p.name: used[p.name] for p in PARAMS[name]})
        model.stats = {"energy": [res.energy[-1]], "iterations": [res.iterations],
                       "converged": [float(res.converged)], "n_rows": [n],
                       "n_unlabeled": [int(np.sum(y == 0))], "graph_edges": [st.edges.m],
                       "kernel_gamma": [spec.gamma], "setup_time": [setup_time],
                       "train_time": [time.perf_counter() - t0], **more_stats}
        F = res.f.reshape(n, -1)
        model.train_values = F
        _check_outputs(name, model, F, st.kmul(res.alpha.reshape(n, -1)), y == 0, res)
        return model

    return fit


fit_tvrls = _fit_tv("tvrls")
fit_tvsvm = _fit_tv("tvsvm")
fit_cheeger_rls = _fit_tv("cheeger-rls")
fit_cheeger_svm = _fit_tv("cheeger-svm")
