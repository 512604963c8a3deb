"""Graph total variation building blocks (issue 6): TV prox and simplex projection."""

import clarabel
import numpy as np
import pytest
import scipy.sparse as sp

from ssl_svm.solvers import graph, tv


def _exact_rof(edges, z, gamma, rho):
    """argmin_g γ‖Dg‖₁ + ρ/2‖g − z‖² by an interior-point QP (Clarabel), variables (g, t) with
    −t ≤ Dg ≤ t."""
    n, m = edges.n, edges.m
    D = edges.matrix()
    P = sp.block_diag([rho * sp.identity(n), sp.csc_matrix((m, m))], format="csc")
    q = np.concatenate([-rho * z, gamma * np.ones(m)])
    Im = sp.identity(m)
    A = sp.vstack([sp.hstack([D, -Im]), sp.hstack([-D, -Im])], format="csc")
    b = np.zeros(2 * m)
    st = clarabel.DefaultSettings()
    st.verbose = False
    st.tol_gap_abs = st.tol_gap_rel = st.tol_feas = 1e-12
    sol = clarabel.DefaultSolver(P, q, A, b, [clarabel.NonnegativeConeT(2 * m)], st).solve()
    assert str(sol.status) == "Solved"
    return np.asarray(sol.x[:n])


def _random_graph(n, k, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    idx, dist = graph.knn(X, k)
    W, _ = graph.adjacency(idx, dist, "heat")
    return tv.Edges.from_adjacency(W), rng


def test_edges_tv_is_the_papers_double_sum():
    e, rng = _random_graph(40, 5, 0)
    W = sp.csr_matrix((e.c / 2, (e.i, e.j)), shape=(40, 40))
    W = (W + W.T).toarray()
    f = rng.normal(size=40)
    assert e.tv(f) == pytest.approx(np.sum(W * np.abs(f[:, None] - f[None, :])), rel=1e-12)
    assert e.tv(f) == pytest.approx(np.abs(e.matrix() @ f).sum(), rel=1e-12)
    assert np.linalg.norm(e.matrix().toarray(), 2) ** 2 <= e.norm_bound() * (1 + 1e-12)


def test_step_bound_is_above_the_norm_and_below_the_degree_bound():
    """The prox's steps come from ‖D‖² raised by 1 % (dense eigenvalues on small graphs,
    Lanczos on larger ones): an upper bound, as the method needs, and well below the degree
    bound, twice too large on kNN graphs."""
    for n in (40, 600):
        e, _ = _random_graph(n, 8, 3)
        true = np.linalg.norm(e.matrix().toarray(), 2) ** 2
        assert true <= e.step_bound() <= 1.0101 * true
        assert e.step_bound() < 0.8 * e.norm_bound()
        assert e.step_bound() == e.step_bound()  # computed once, the same every call


@pytest.mark.parametrize("seed,gamma,rho", [(0, 0.05, 1.0), (1, 0.5, 1.0), (2, 0.2, 10.0),
                                            (3, 2.0, 0.5)])
def test_tv_prox_equals_an_exact_qp(seed, gamma, rho):
    e, rng = _random_graph(60, 6, seed)
    z = rng.normal(size=60) + np.where(np.arange(60) < 30, 1.0, -1.0)
    r = tv.tv_prox(e, z, gamma, rho, tol=1e-12)
    exact = _exact_rof(e, z, gamma, rho)
    np.testing.assert_allclose(r.g, exact, atol=1e-6)
    assert 0 <= r.gap <= 1e-10 * max(1.0, r.primal)
    obj = gamma * e.tv(r.g) + 0.5 * rho * np.sum((r.g - z) ** 2)
    assert obj == pytest.approx(r.primal, rel=1e-12)


def test_tv_prox_on_a_chain_against_the_exact_path():
    """On a two-node chain the ROF solution is closed form: the two values move towards each
    other by γc/ρ each and merge at their mean when they would cross."""
    for a, b, gamma, rho in [(1.0, -1.0, 0.1, 1.0), (1.0, -1.0, 2.0, 1.0), (0.3, 0.1, 0.01, 2.0)]:
        e = tv.Edges(np.array([0]), np.array([1]), np.array([1.0]), 2)
        r = tv.tv_prox(e, np.array([a, b]), gamma, rho, tol=1e-14)
        step = gamma / rho
        if abs(a - b) > 2 * step:
            want = [a - np.sign(a - b) * step, b + np.sign(a - b) * step]
        else:
            want = [(a + b) / 2] * 2
        np.testing.assert_allclose(r.g, want, atol=1e-7)


def test_tv_prox_gap_vanishes_and_warm_start_helps():
    e, rng = _random_graph(300, 8, 5)
    z = rng.normal(size=300)
    gaps = [tv.tv_prox(e, z, 0.3, 1.0, tol=0.0, max_iter=k).gap for k in (10, 100, 1000, 10000)]
    assert all(b < a for a, b in zip(gaps, gaps[1:])), gaps
    assert gaps[-1] < 1e-8
    cold = tv.tv_prox(e, z, 0.3, 1.0, tol=1e-9)
    z2 = z + 0.01 * rng.normal(size=300)
    warm = tv.tv_prox(e, z2, 0.3, 1.0, g0=cold.g, p0=cold.p, tol=1e-9)
    again = tv.tv_prox(e, z2, 0.3, 1.0, tol=1e-9)
    assert warm.iterations < again.iterations
    np.testing.assert_allclose(warm.g, again.g, atol=1e-5)


def test_tv_prox_columns_is_tv_prox_per_column():
    """The batched prox (every class of a multi-class step in parallel threads) gives each
    column bit for bit what tv_prox gives it, cold and warm-started, with a zero γ column
    (the prox of no penalty: z itself) among them, and on a graph with no edges."""
    e, rng = _random_graph(200, 6, 7)
    Z = rng.normal(size=(200, 4))
    gammas, rhos = np.array([0.3, 0.0, 1.0, 0.05]), np.array([1.0, 2.0, 0.5, 10.0])
    cold = tv.tv_prox_columns(e, Z, gammas, rhos, tol=1e-6)
    Z2 = Z + 0.01 * rng.normal(size=Z.shape)
    warm = tv.tv_prox_columns(e, Z2, gammas, rhos, G0=[r.g for r in cold],
                              P0=[r.p for r in cold], tol=1e-6)
    for k in range(4):
        one = tv.tv_prox(e, Z[:, k], gammas[k], rhos[k], tol=1e-6)
        again = tv.tv_prox(e, Z2[:, k], gammas[k], rhos[k], g0=one.g, p0=one.p, tol=1e-6)
        for batched, single in ((cold[k], one), (warm[k], again)):
            assert np.array_equal(batched.g, single.g) and np.array_equal(batched.p, single.p)
            assert (batched.iterations, batched.primal, batched.dual, batched.restarts) == (
                single.iterations, single.primal, single.dual, single.restarts)
    assert cold[0].iterations > 0 and np.array_equal(cold[1].g, Z[:, 1])
    empty = tv.Edges(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), 200)
    assert all(np.array_equal(r.g, Z[:, k])
               for k, r in enumerate(tv.tv_prox_columns(empty, Z, 0.3, 1.0)))


def _sort_projection(v):
    """Held, Wolfe & Crowder / Duchi et al.: the simplex projection by sorting."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.nonzero(u - css / np.arange(1, v.size + 1) > 0)[0][-1]
    return np.maximum(v - css[k] / (k + 1), 0.0)


def test_michelot_equals_the_sorting_projection():
    rng = np.random.default_rng(0)
    V = np.vstack([rng.normal(size=(500, 7)) * s for s in (0.01, 1.0, 10.0)])
    V[0] = [1.0, 0, 0, 0, 0, 0, 0]  # already on the simplex
    V[1] = 5.0  # all equal
    P = tv.project_simplex(V)
    want = np.array([_sort_projection(v) for v in V])
    np.testing.assert_allclose(P, want, atol=1e-12)
    assert np.all(P >= 0) and np.allclose(P.sum(axis=1), 1.0)
