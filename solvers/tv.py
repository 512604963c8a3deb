"""Graph total variation: the TV proximal step and the simplex projection (issue 6).

Convention (Bresson & Zhang 2012, eq. 11): the graph TV of f is
``‖Df‖ = Σ_{i,j ∈ N} w_ij |f_i − f_j|``, summed over *ordered* pairs, so every undirected edge
{i, j} counts twice. Here D is the weighted incidence operator with one row per undirected edge
e = {i < j} and weight ``c_e = 2·w_ij``: ``(Df)_e = c_e (f_i − f_j)``, and ``‖Df‖ = ‖Df‖₁``.

``tv_prox`` solves the graph ROF problem ``min_g γ‖Dg‖₁ + ρ/2 ‖g − z‖²`` (paper eq. 20/25 with
ρ = r1 + r2) by the accelerated primal–dual method of Chambolle & Pock (2011, Algorithm 2: the
data term is ρ-strongly convex, so the step sizes adapt and the rate is O(1/k²)). It is
warm-started from a previous (g, p) pair and stops on the duality gap, a certificate:
primal ``P(g) = γ‖Dg‖₁ + ρ/2‖g − z‖²`` and dual ``Q(p) = ⟨p, Dz⟩ − ‖Dᵀp‖²/(2ρ)`` over
|p_e| ≤ γ, with ``Q(p) ≤ min P ≤ P(g)``.

Two backends (:mod:`ssl_svm.solvers.backend`) run the same iteration: numba's compiled loops
(:mod:`ssl_svm.solvers.tv_numba`) and this module's whole-array numpy passes (``numpy=True``),
equal up to the order of sums.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp


@dataclass
class Edges:
    """Undirected edges i < j with incidence weights c = 2·w_ij (see the module docstring)."""
    i: np.ndarray  # int64
    j: np.ndarray  # int64
    c: np.ndarray  # float64
    n: int
    _step_bound: float | None = field(default=None, repr=False, compare=False)
    _csr: tuple | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_adjacency(cls, W) -> Edges:
        """Edges of a symmetric sparse adjacency W (zero diagonal); the upper triangle is used."""
        U = sp.triu(sp.csr_matrix(W), k=1).tocoo()
        keep = U.data != 0
        return cls(U.row[keep].astype(np.int64), U.col[keep].astype(np.int64),
                   2.0 * U.data[keep].astype(np.float64), W.shape[0])

    @property
    def m(self) -> int:
        return int(self.c.size)

    def norm_bound(self) -> float:
        """An upper bound of ‖D‖₂²: DᵀD is the graph Laplacian with weights c², whose largest
        eigenvalue is at most twice its largest degree."""
        deg = np.zeros(self.n)
        np.add.at(deg, self.i, self.c * self.c)
        np.add.at(deg, self.j, self.c * self.c)
        return float(2.0 * deg.max()) if deg.size else 0.0

    def step_bound(self) -> float:
        """An upper bound of ‖D‖₂² for the prox's step sizes, near the true value: the largest
        eigenvalue of DᵀD by Lanczos (a Ritz value, at most the true one, converged to 1e-8)
        raised by 1 %, never above :meth:`norm_bound`, which it replaces where Lanczos does not
        converge. On kNN graphs the degree bound is about twice ‖D‖² (USPS 0/1/4/9: 257
        against 134), and steps √2 times longer cut the prox's iterations. Computed once per
        graph, deterministically (a seeded start)."""
        if self._step_bound is None:
            bound = top = self.norm_bound()
            if self.m and self.n > 2:
                D = self.matrix()
                A = (D.T @ D).tocsr()
                if self.n <= 200:
                    top = float(np.linalg.eigvalsh(A.toarray())[-1])
                else:
                    from scipy.sparse.linalg import ArpackNoConvergence, eigsh

                    v0 = np.random.default_rng(0).standard_normal(self.n)
                    try:
                        top = float(eigsh(A, k=1, which="LA", v0=v0, tol=1e-8,
                                          return_eigenvectors=False)[0])
                    except ArpackNoConvergence:
                        pass
            self._step_bound = min(bound, 1.01 * top)
        return self._step_bound

    def operators(self) -> tuple[sp.csr_matrix, sp.csr_matrix]:
        """(D, Dᵀ) as CSR matrices, built once (the numpy prox's products)."""
        if self._csr is None:
            D = self.matrix()
            self._csr = (D, D.T.tocsr())
        return self._csr

    def tv(self, f: np.ndarray) -> float:
        """‖Df‖₁ = Σ_{i,j} w_ij |f_i − f_j| over ordered pairs."""
        return float(np.sum(self.c * np.abs(f[self.i] - f[self.j])))

    def matrix(self) -> sp.csr_matrix:
        """D as an m×n sparse matrix (the numpy prox's products; tests and diagnostics)."""
        r = np.arange(self.m)
        return sp.csr_matrix((np.concatenate([self.c, -self.c]),
                              (np.concatenate([r, r]), np.concatenate([self.i, self.j]))),
                             shape=(self.m, self.n))


def _nb():
    """The numba kernels (imported on first use: a numpy fit never loads numba)."""
    from ssl_svm.solvers import tv_numba

    return tv_numba


def _gap_numpy(D, x, z, gamma, rho, Dtp):
    """(primal, dual) at x and at the p whose Dᵀp is Dtp (tv_numba.gap's sums by numpy)."""
    d = x - z
    primal = gamma * float(np.sum(np.abs(D @ x))) + 0.5 * rho * float(d @ d)
    dual = float(Dtp @ z) - float(Dtp @ Dtp) / (2.0 * rho)
    return primal, dual


def _cp_loop_numpy(D, Dt, z, gamma, rho, x, p, L2, tol, max_iter, check_every,
                   restart_factor):
    """:func:`ssl_svm.solvers.tv_numba.cp_loop` by whole-array passes: D and Dᵀ as CSR
    matrices (2 entries a row of D); x and p updated in place."""
    tau0 = 1.0 / math.sqrt(L2) if L2 > 0 else 1.0
    sigma0 = 1.0 / (tau0 * L2) if L2 > 0 else 1.0
    tau, sigma = tau0, sigma0
    xbar = x.copy()
    xold = np.empty_like(x)
    Dtp = Dt @ p
    primal, dual = _gap_numpy(D, x, z, gamma, rho, Dtp)
    gap_at_restart = primal - dual
    it = 0
    restarts = 0
    while it < max_iter and primal - dual > tol * max(1.0, abs(primal)):
        for _ in range(check_every):
            p += sigma * (D @ xbar)
            np.minimum(p, gamma, out=p)
            np.maximum(p, -gamma, out=p)
            Dtp = Dt @ p
            xold[:] = x
            x -= tau * Dtp
            x += tau * rho * z
            x /= 1.0 + tau * rho
            theta = 1.0 / math.sqrt(1.0 + 2.0 * rho * tau)
            tau *= theta
            sigma /= theta
            np.subtract(x, xold, out=xbar)
            xbar *= theta
            xbar += x
            it += 1
        primal, dual = _gap_numpy(D, x, z, gamma, rho, Dtp)
        if primal - dual <= restart_factor * gap_at_restart:
            tau, sigma = tau0, sigma0  # as tv_numba.cp_loop: restart the step sizes
            xbar[:] = x
            gap_at_restart = primal - dual
            restarts += 1
    return it, primal, dual, restarts


@dataclass
class ProxResult:
    g: np.ndarray
    p: np.ndarray  # dual variable, one per edge (warm start for the next call)
    iterations: int
    primal: float
    dual: float
    restarts: int = 0

    @property
    def gap(self) -> float:
        return self.primal - self.dual


def tv_prox(edges: Edges, z: np.ndarray, gamma: float, rho: float,
            g0: np.ndarray | None = None, p0: np.ndarray | None = None,
            tol: float = 1e-8, max_iter: int = 100_000, check_every: int = 10,
            restart_factor: float = 0.5, numpy: bool = False) -> ProxResult:
    """argmin_g γ‖Dg‖₁ + ρ/2‖g − z‖² by accelerated Chambolle–Pock, warm-started at (g0, p0);
    on numpy's backend (``numpy``) or numba's.

    Steps τ0 = 1/‖D‖, σ0 = 1/(τ0‖D‖²) with the bound of ``Edges.step_bound``; θ = 1/√(1+2ρτ).
    The gap is checked every ``check_every`` iterations; when it has fallen below
    ``restart_factor`` × its value at the last restart the steps restart from (τ0, σ0)
    (0 disables). Stops when the gap is at most ``tol``·max(1, |primal|) or after
    ``max_iter`` iterations.
    """
    z = np.ascontiguousarray(z, dtype=np.float64)
    x = z.copy() if g0 is None else np.array(g0, dtype=np.float64)
    p = np.zeros(edges.m) if p0 is None else np.clip(np.array(p0, dtype=np.float64),
                                                    -gamma, gamma)
    if edges.m == 0 or gamma == 0.0:
        return ProxResult(z.copy(), p, 0, 0.0, 0.0)
    args = (z, float(gamma), float(rho), x, p, edges.step_bound(), float(tol), int(max_iter),
            int(check_every), float(restart_factor))
    if numpy:
        it, primal, dual, restarts = _cp_loop_numpy(*edges.operators(), *args)
    else:
        it, primal, dual, restarts = _nb().cp_loop(edges.i, edges.j, edges.c, *args)
    return ProxResult(x, p, int(it), float(primal), float(dual), int(restarts))


def tv_prox_columns(edges: Edges, Z: np.ndarray, gammas, rhos, G0=None, P0=None,
                    tol: float = 1e-8, max_iter: int = 100_000, check_every: int = 10,
                    restart_factor: float = 0.5, numpy: bool = False) -> list[ProxResult]:
    """``tv_prox`` of every column of Z (n×c) on the same edges, column k with (γ_k, ρ_k),
    warm-started at G0[k], P0[k] (None, or a list with None entries, for a cold start); the
    columns run in parallel threads (numba) or one after the other (``numpy``). Each column's
    result is bit-for-bit ``tv_prox``'s on the same backend: the same loop on the same numbers
    (the multi-class TV and Cheeger steps are c independent proxes)."""
    Z = np.asarray(Z, dtype=np.float64)
    n, k = Z.shape
    gammas = np.broadcast_to(np.asarray(gammas, dtype=np.float64), (k,)).copy()
    rhos = np.broadcast_to(np.asarray(rhos, dtype=np.float64), (k,)).copy()
    G0 = [None] * k if G0 is None else G0
    P0 = [None] * k if P0 is None else P0
    if edges.m == 0 or numpy:
        return [tv_prox(edges, Z[:, t], gammas[t], rhos[t], G0[t], P0[t], tol, max_iter,
                        check_every, restart_factor, numpy) for t in range(k)]
    Zt = np.ascontiguousarray(Z.T)
    X = np.array([Zt[t] if G0[t] is None else np.asarray(G0[t], dtype=np.float64)
                  for t in range(k)])
    P = np.zeros((k, edges.m))
    for t in range(k):
        if P0[t] is not None:
            P[t] = np.clip(np.asarray(P0[t], dtype=np.float64), -gammas[t], gammas[t])
    stats = np.zeros((k, 4))
    run = np.flatnonzero(gammas != 0.0)
    if run.size:
        sub = np.zeros((run.size, 4))
        Xr, Pr = np.ascontiguousarray(X[run]), np.ascontiguousarray(P[run])
        _nb().cp_columns(edges.i, edges.j, edges.c, np.ascontiguousarray(Zt[run]),
                         gammas[run], rhos[run], Xr, Pr, edges.step_bound(), float(tol),
                         int(max_iter), int(check_every), float(restart_factor), sub)
        X[run], P[run], stats[run] = Xr, Pr, sub
    out = []
    for t in range(k):
        if gammas[t] == 0.0:  # tv_prox's shortcut: the prox of a zero penalty is z
            out.append(ProxResult(Zt[t].copy(), P[t], 0, 0.0, 0.0))
        else:
            out.append(ProxResult(X[t], P[t], int(stats[t, 0]), float(stats[t, 1]),
                                  float(stats[t, 2]), int(stats[t, 3])))
    return out


# --------------------------------------------------------------------------- simplex

def project_simplex(V: np.ndarray, numpy: bool = False) -> np.ndarray:
    """Euclidean projection of every row of V onto the unit simplex: Michelot's algorithm
    (numba), or with ``numpy`` the sorting form (Held, Wolfe & Crowder 1974), which finds the
    same support and so the same shift up to the order of its sum."""
    V = np.ascontiguousarray(np.atleast_2d(V), dtype=np.float64)
    if numpy:
        return _sorting_projection(V)
    out = np.empty_like(V)
    _nb().michelot_rows(V, out)
    return out


def _sorting_projection(V: np.ndarray) -> np.ndarray:
    """Rows of V onto the simplex: sort each row down, the support is the longest prefix
    whose entries stay above (prefix sum − 1)/length, the shift that mean."""
    n = V.shape[1]
    U = -np.sort(-V, axis=1)
    excess = np.cumsum(U, axis=1) - 1.0
    size = np.arange(1, n + 1)
    inside = U - excess / size > 0
    k = n - np.argmax(inside[:, ::-1], axis=1)  # the last column still inside, counted from 1
    shift = excess[np.arange(V.shape[0]), k - 1] / k
    return np.maximum(V - shift[:, None], 0.0)
