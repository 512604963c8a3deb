"""Kernels, the kNN graph Laplacian, LapSVM / LapRLS in the primal (issue 4)."""

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from conftest import SAMPLES, run, shared, ssl_train
from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel

from ssl_svm.formats.model_file import read_model
from ssl_svm.formats.svmlight import read_dataset
from ssl_svm.solvers import graph, graph_numba, kernels, lapsvm, lapsvm_numba
from ssl_svm.solvers.errors import ProblemError
from ssl_svm.solvers.kernels import KernelSpec
from ssl_svm.solvers.registry import ALGORITHMS


def _data(n=120, d=6, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[: n // 2, 0] += 2.5
    y = np.where(np.arange(n) < n // 2, 1.0, -1.0)
    if sparse:
        X[rng.random(X.shape) < 0.6] = 0.0
        X = sp.csr_matrix(X)
    return X, y


# --------------------------------------------------------------------------- kernels

@pytest.mark.parametrize("sparse", [False, True])
def test_gram_matches_sklearn_and_is_blockwise(sparse, monkeypatch):
    X, _ = _data(97, 9, sparse=sparse)
    monkeypatch.setattr(kernels, "BLOCK_BYTES", 8 * 97 * 10)  # 10-row blocks
    Xd = X.toarray() if sparse else X
    cases = [(KernelSpec("linear"), Xd @ Xd.T),
             (KernelSpec("rbf", 0.3), rbf_kernel(Xd, gamma=0.3)),
             (KernelSpec("poly", 0.2, 3, 1.5), polynomial_kernel(Xd, degree=3, gamma=0.2,
                                                                 coef0=1.5))]
    for spec, want in cases:
        K = kernels.gram(spec, X)
        np.testing.assert_allclose(K, want, rtol=1e-12, atol=1e-12)
        assert np.array_equal(K, K.T)
        np.testing.assert_allclose(kernels.kernel_times(spec, X[:13], X, np.eye(97)),
                                   want[:13], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("strip", [1, 3, 256])
def test_strip_symmetrizers_equal_their_whole_matrix_forms(strip, monkeypatch):
    """mirror_lower and symmetrize by strips of rows: the bytes of tril + tril(-1)ᵀ and of
    0.5 (A + Aᵀ), on C- and Fortran-ordered matrices and on sizes around a strip's."""
    monkeypatch.setattr(kernels, "STRIP_ROWS", strip)
    rng = np.random.default_rng(0)
    for m in (1, 2, 7, 255, 256, 257, 600):
        A = rng.normal(size=(m, m))
        for order in "CF":
            B = np.array(A, order=order)
            kernels.mirror_lower(B)
            assert np.array_equal(B, np.tril(A) + np.tril(A, -1).T)
            B = np.array(A, order=order)
            kernels.symmetrize(B)
            assert np.array_equal(B, 0.5 * (A + A.T))


def test_memory_guard_refuses_with_message():
    X, _ = _data(50)
    with pytest.raises(ProblemError, match=r"kernel matrix 50×50 needs 19\.53 KiB, above the "
                                           r"memory limit of 1000 B"):
        kernels.gram(KernelSpec("rbf"), X, memory_limit=1000)
    assert kernels.parse_memory("500M") == 500 << 20
    assert kernels.parse_memory("2G") == 2 << 30
    assert kernels.parse_memory("64") == 64 << 20
    for bad in ("x", "-5", "0", "12Q"):
        with pytest.raises(ValueError):
            kernels.parse_memory(bad)


# --------------------------------------------------------------------------- graph

def test_knn_of_sparse_rows_taken_dense_is_the_same_graph(monkeypatch):
    """Above graph.DENSE_KNN_ROWS (here 100) rows stored sparsely (5 % of the entries, which
    prepare() keeps sparse) are taken dense for the products: the same neighbours, the same
    distances to rounding."""
    rng = np.random.default_rng(5)
    X = sp.random(400, 60, density=0.05, random_state=rng, format="csr")
    assert sp.issparse(kernels.prepare(X))
    idx, dist = graph.knn(X, 8)
    monkeypatch.setattr(graph, "DENSE_KNN_ROWS", 100)
    idx2, dist2 = graph.knn(X, 8)
    assert np.array_equal(idx, idx2)
    np.testing.assert_allclose(dist, dist2, rtol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_exact_distances_do_not_depend_on_their_chunks(sparse, monkeypatch):
    """The candidates' exact distances are summed per row: one row a chunk, the default
    chunks and one chunk for all give the same bits (dense rows: einsum's sum over one row's
    differences; sparse: that row's stored values)."""
    rng = np.random.default_rng(4)
    X = (sp.random(300, 60, density=0.05, random_state=rng, format="csr") if sparse
         else rng.normal(size=(300, 40)))
    Xp = kernels.prepare(X)
    assert sp.issparse(Xp) == sparse
    cand = np.random.default_rng(0).integers(0, 300, size=(300, 18))
    rows = np.arange(300)
    got = []
    for block in (1, None, 1 << 30):
        if block is not None:
            monkeypatch.setattr(graph, "BLOCK_BYTES_EXACT", block)
            monkeypatch.setattr(graph, "DENSE_BLOCK_BYTES_EXACT", block)
        got.append(graph.exact_sqdist(Xp, rows, cand))
    Xd = Xp.toarray() if sparse else Xp
    np.testing.assert_allclose(got[0], ((Xd[rows][:, None, :] - Xd[cand]) ** 2).sum(-1),
                               rtol=1e-12)
    assert np.array_equal(got[0], got[1]) and np.array_equal(got[1], got[2])


@pytest.mark.parametrize("sparse", [False, True])
def test_knn_equals_brute_force(sparse, monkeypatch):
    X, _ = _data(151, 7, seed=3, sparse=sparse)
    monkeypatch.setattr(kernels, "BLOCK_BYTES", 8 * 151 * 16)  # 16-row blocks
    Xd = X.toarray() if sparse else X
    D = np.sqrt(((Xd[:, None, :] - Xd[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(D, np.inf)
    for k in (1, 6, 20):
        idx, dist = graph.knn(X, k)
        want = np.argsort(D, axis=1, kind="stable")[:, :k]
        assert np.array_equal(idx, want)
        np.testing.assert_allclose(dist, np.take_along_axis(D, want, 1), rtol=1e-10)


def test_knn_ties_are_broken_by_index():
    """Duplicate rows (many equal distances): neighbours by (distance, index), as documented,
    and the candidate selection equals a lexicographic sort on random and tied values."""
    X = np.repeat(np.arange(5.0)[:, None], 12, axis=0)  # 5 values, 12 copies each
    idx, dist = graph.knn(X, 15)
    D = np.abs(X - X.T)
    np.fill_diagonal(D, np.inf)
    n = X.shape[0]
    for i in range(n):
        want = np.lexsort((np.arange(n), D[i]))[:15]
        assert np.array_equal(idx[i], want), i
    rng = np.random.default_rng(0)
    for trial in range(100):
        b, m, kk = rng.integers(1, 20), rng.integers(20, 200), rng.integers(1, 19)
        V = rng.integers(0, 6, (b, m)).astype(float) if trial % 2 else rng.random((b, m))
        V[rng.random((b, m)) < 0.05] = np.inf
        for smallest in (graph_numba.smallest, graph.smallest):  # both backends
            out = np.empty((b, kk), dtype=np.int64)
            smallest(V, out)
            for r in range(b):
                assert set(out[r]) == set(np.lexsort((np.arange(m), V[r]))[:kk]), (trial, r)


def test_self_tuning_weights_with_duplicate_rows():
    """A row whose neighbours are all duplicates (σ = 0) gets weight 1 to them, not nan."""
    X = np.vstack([np.zeros((8, 2)), np.random.default_rng(0).random((20, 2))])
    idx, dist = graph.knn(X, 3)
    W, _ = graph.adjacency(idx, dist, "self-tuning")
    assert np.all(np.isfinite(W.data)) and W[0, idx[0, 0]] == 1.0


def test_knn_needs_more_rows_than_k():
    with pytest.raises(ProblemError, match="needs more than 6 rows"):
        graph.knn(np.zeros((6, 2)), 6)


@pytest.mark.parametrize("weights", ["heat", "binary", "self-tuning"])
def test_weights_and_laplacians(weights):
    X, _ = _data(80, 4, seed=5)
    idx, dist = graph.knn(X, 6)
    W, t = graph.adjacency(idx, dist, weights)
    Wd = W.toarray()
    assert np.array_equal(Wd, Wd.T) and np.all(np.diag(Wd) == 0) and np.all(Wd >= 0)
    # OR symmetrisation: an edge where either end lists the other
    E = np.zeros_like(Wd, bool)
    E[np.repeat(np.arange(80), 6), idx.ravel()] = True
    assert np.array_equal(Wd > 0, E | E.T)
    if weights == "heat":
        assert t == pytest.approx(dist.mean())
        i, j = 3, idx[3, 0]
        assert Wd[i, j] == pytest.approx(np.exp(-dist[3, 0] ** 2 / (2 * t * t)))
    elif weights == "self-tuning":
        sig = dist[:, -1]  # distance to the 6th neighbour
        for i in (3, 17, 40):
            for a in range(6):
                j = idx[i, a]
                assert Wd[i, j] == pytest.approx(np.exp(-dist[i, a] ** 2 / (sig[i] * sig[j])),
                                                 rel=1e-12)
    else:
        assert set(np.unique(Wd)) == {0.0, 1.0}
    Lu = graph.Laplacian.from_weights(W, normalized=False)
    np.testing.assert_allclose(Lu.L @ np.ones(80), 0.0, atol=1e-12)
    Ln = graph.Laplacian.from_weights(W, normalized=True)
    deg = Wd.sum(1)
    np.testing.assert_allclose(Ln.L @ np.sqrt(deg), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.diag(Ln.L.toarray()), 1.0)
    for lap in (Lu, Ln):
        Ld = lap.L.toarray()
        assert np.allclose(Ld, Ld.T, atol=0)
        assert np.linalg.eigvalsh(Ld).min() > -1e-10
        for p in (2, 3):
            lp = graph.Laplacian(lap.L, p)
            V = np.random.default_rng(p).normal(size=(80, 3))
            P = np.linalg.matrix_power(Ld, p)
            np.testing.assert_allclose(lp.apply(V), P @ V, rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(lp.dense_power(), P, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- objective pieces

def _problem(n=90, seed=1, normalized=True, degree=1, labeled=15):
    X, y = _data(n, 5, seed=seed)
    rng = np.random.default_rng(seed)
    Y = np.zeros(n)
    lab = rng.choice(n, labeled, replace=False)
    Y[lab] = y[lab]
    lap, _ = graph.build(X, 5, normalized=normalized, degree=degree)
    K = kernels.gram(KernelSpec("rbf", 0.25), X)
    c = np.where(Y != 0, rng.uniform(0.5, 2.0, n), 0.0)
    return K, lap, Y, c, y


@pytest.mark.parametrize("hinge", [True, False])
@pytest.mark.parametrize("normalized", [True, False])
def test_gradient_matches_finite_differences(hinge, normalized):
    K, lap, Y, c, _ = _problem(normalized=normalized, degree=2)
    rng = np.random.default_rng(7)
    alpha = rng.normal(scale=0.3, size=K.shape[0])
    b = 0.2
    ga, gi = 0.05, 0.7
    g, gb = lapsvm.gradient(K, lap, Y, c, ga, gi, alpha, b, hinge)

    def F(a, bb):
        return lapsvm.objective(K, lap, Y, c, ga, gi, a, bb, hinge)

    h = 1e-6
    for i in rng.choice(K.shape[0], 12, replace=False):
        e = np.zeros_like(alpha)
        e[i] = h
        fd = (F(alpha + e, b) - F(alpha - e, b)) / (2 * h)
        assert fd == pytest.approx(g[i], rel=1e-5, abs=1e-7)
    assert (F(alpha, b + h) - F(alpha, b - h)) / (2 * h) == pytest.approx(gb, rel=1e-5)


def test_line_search_is_the_exact_minimiser():
    rng = np.random.default_rng(11)
    for trial in range(200):
        n = 30
        Y = rng.choice([-1.0, 0.0, 1.0], n)
        c = rng.uniform(0.2, 3.0, n)
        o = rng.normal(size=n)
        do = rng.normal(size=n)
        B = rng.uniform(0.0, 2.0)
        A = -rng.uniform(0.1, 5.0)
        hinge = trial % 4 != 0

        def phi(t, A=A, B=B, Y=Y, c=c, o=o, do=do, hinge=hinge):
            m = o + t * do
            loss = np.where(Y != 0, np.maximum(0.0, 1.0 - Y * m) ** 2 if hinge
                            else (Y - m) ** 2, 0.0)
            return A * t + 0.5 * B * t * t + 0.5 * np.sum(c * loss)

        ref = scipy.optimize.minimize_scalar(phi, bounds=(0, 100), method="bounded",
                                             options={"xatol": 1e-12})
        for line_search in (lapsvm_numba.line_search, lapsvm.line_search):  # both backends
            t = line_search(A, B, Y, c, o, do, hinge)
            assert phi(t) <= ref.fun + 1e-10
            # and t is stationary, φ′(t) = 0, or t = 0 with φ′(0) ≥ 0 (φ is differentiable)
            h = 1e-7
            if t > 0:
                assert abs((phi(t + h) - phi(t - h)) / (2 * h)) < 1e-5 * (1 + abs(A))
            else:
                assert (phi(h) - phi(0)) / h > -1e-5


# --------------------------------------------------------------------------- solvers

@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("hinge", [True, False])
@pytest.mark.parametrize("normalized", [True, False])
def test_newton_and_pcg_reach_the_same_objective(bias, hinge, normalized):
    K, lap, Y, c, _ = _problem(n=140, normalized=normalized, degree=2, labeled=25)
    ga, gi = 1e-3, 0.3
    rn = lapsvm.newton(K, lap, Y, c, ga, gi, bias, hinge)
    rp = lapsvm.pcg(K, lap, Y, c, ga, gi, bias, hinge, early_stop="none", eps=1e-10,
                    max_iter=100_000)
    assert rn.reason == "error vectors unchanged"
    assert rp.reason == "gradient tolerance"
    assert rp.objective == pytest.approx(rn.objective, rel=1e-6)
    # the reported objective is the objective of the returned (α, b)
    for r in (rn, rp):
        assert lapsvm.objective(K, lap, Y, c, ga, gi, r.alpha, r.b, hinge) == \
            pytest.approx(r.objective, rel=1e-10)
        np.testing.assert_allclose(r.f, K @ r.alpha + r.b, atol=1e-8)
    if not bias:
        assert rn.b == 0.0 and rp.b == 0.0
    # optimality: gradient vanishes
    g, gb = lapsvm.gradient(K, lap, Y, c, ga, gi, rn.alpha, rn.b, hinge)
    assert np.abs(g).max() < 1e-8 and (not bias or abs(gb) < 1e-8)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("hinge", [True, False])
def test_tasks_with_the_same_newton_matrix_share_its_factors(bias, hinge, monkeypatch):
    """One-vs-rest tasks of one fit share Newton's last LU factors: a step with the last
    step's error set and costs (laprls: every task's first) reuses them, with the very same
    result; a step with another error set factors its own matrix."""
    K, lap, Y, c, y = _problem(n=120, labeled=30)
    Y2 = np.where(Y == 0, 0.0, np.where(np.arange(Y.size) % 3 == 0, 1.0, -1.0))
    alone = [lapsvm.newton(K, lap, Yk, c, 1e-3, 0.3, bias, hinge) for Yk in (Y, Y2)]
    calls = []
    real = lapsvm.scipy.linalg.lu_factor
    monkeypatch.setattr(lapsvm.scipy.linalg, "lu_factor",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    factors: dict = {}
    shared = [lapsvm.newton(K, lap, Yk, c, 1e-3, 0.3, bias, hinge, factors=factors)
              for Yk in (Y, Y2)]
    for a, b in zip(alone, shared):
        np.testing.assert_array_equal(a.alpha, b.alpha)
        assert a.b == b.b and a.objective == b.objective
    steps = sum(r.iterations for r in shared)
    if hinge:  # the error sets differ between the tasks
        assert len(calls) <= steps
    else:  # laprls: one factorization for both tasks
        assert len(calls) == 1 and steps == 2


@pytest.mark.parametrize("bias", [False, True])
def test_laprls_direct_equals_dense_closed_form(bias):
    K, lap, Y, c, _ = _problem(n=110, normalized=True, degree=3, labeled=20)
    c = (Y != 0).astype(float)
    ga, gi = 0.01, 0.5
    n = K.shape[0]
    J = np.diag(c)
    Lp = np.linalg.matrix_power(lap.L.toarray(), 3)
    if bias:  # the bordered system, written from the objective's stationarity conditions
        M = np.zeros((n + 1, n + 1))
        M[:n, :n] = J @ K + ga * np.eye(n) + gi * Lp @ K
        M[:n, n] = J @ np.ones(n) + gi * Lp @ np.ones(n)
        M[n, :n] = np.ones(n) @ (J @ K + gi * Lp @ K)
        M[n, n] = np.ones(n) @ J @ np.ones(n) + gi * np.ones(n) @ Lp @ np.ones(n)
        sol = np.linalg.solve(M, np.concatenate([J @ Y, [np.ones(n) @ J @ Y]]))
        alpha, b = sol[:n], sol[n]
    else:
        alpha, b = np.linalg.solve(J @ K + ga * np.eye(n) + gi * Lp @ K, J @ Y), 0.0
    r = lapsvm.newton(K, lap, Y, c, ga, gi, bias, hinge=False)
    assert r.iterations == 1
    np.testing.assert_allclose(r.alpha, alpha, rtol=1e-8, atol=1e-10)
    assert r.b == pytest.approx(b, abs=1e-10)
    rp = lapsvm.pcg(K, lap, Y, c, ga, gi, bias, hinge=False, early_stop="none", eps=1e-11,
                    max_iter=100_000)
    np.testing.assert_allclose(rp.f, K @ alpha + b, rtol=1e-6, atol=1e-7)


def _usps49():
    tr = read_dataset(str(shared("bench", "usps49-10", "train.svm")), n_features=256)
    te = read_dataset(str(shared("bench", "usps49-10", "test.svm")), n_features=256)
    return tr, te


def test_early_stopping_stability_on_usps49():
    tr, te = _usps49()
    p = ALGORITHMS["lapsvm"].defaults()
    p.update(gamma=1.0 / (2 * 9.4 ** 2), neighbors=10, laplacian_degree=2)
    conv = ALGORITHMS["lapsvm"].fit(tr.X, tr.y, None, {**p, "early_stop": "none",
                                                       "epsilon": 1e-8})
    early = ALGORITHMS["lapsvm"].fit(tr.X, tr.y, None, p)
    it_conv = conv.stats["iterations"][0]
    it_early = early.stats["iterations"][0]
    err_conv = 100 * np.mean(conv.predict(te.X) != te.y)
    err_early = 100 * np.mean(early.predict(te.X) != te.y)
    assert it_early % lapsvm.check_period(tr.X.shape[0]) == 0
    assert it_early * 5 <= it_conv, (it_early, it_conv)
    assert abs(err_early - err_conv) <= 0.5, (err_early, err_conv)
    assert err_conv < 11.0  # SVMlin's supervised svm: 10.9 % (REFERENCE.md)


def test_validation_early_stop_keeps_the_best_check():
    tr, te = _usps49()
    p = ALGORITHMS["lapsvm"].defaults()
    p.update(gamma=1.0 / (2 * 9.4 ** 2), neighbors=10, laplacian_degree=1, early_stop="validation")
    V = (te.X[:100], te.y[:100])
    m = ALGORITHMS["lapsvm"].fit(tr.X, tr.y, None, p, validation=V)
    err = np.sum(m.predict(V[0]) != V[1])
    # every check's validation error, recomputed by running the same PCG step by step
    K = kernels.gram(m.function.kernel, tr.X)
    lap, _ = graph.build(tr.X, 10)
    Kv = kernels.kernel_block(m.function.kernel, V[0], kernels.prepare(tr.X))
    period = lapsvm.check_period(tr.X.shape[0])
    errs = []
    for stop in range(period, m.stats["iterations"][0] + 1, period):
        r = lapsvm.pcg(K, lap, tr.y, np.ones(tr.y.size), 1e-6, 1.0, early_stop="none",
                       eps=0.0, max_iter=stop)
        errs.append(int(np.sum(np.where(Kv @ r.alpha + r.b > 0, 1, -1) != V[1])))
    assert err == min(errs)
    assert errs[-1] >= min(errs)  # it stopped because the last check did not improve


# --------------------------------------------------------------------------- command line

def test_cli_lapsvm_binary_roundtrip_and_transductive(tmp):
    train = shared("bench", "usps49-10", "train.svm")
    model = tmp / "m"
    r = ssl_train("-a", "lapsvm", "-t", "2", "-g", "0.00566", "-k", "10",
            "--laplacian-degree", "2", "--gamma-a", "0.01", train, model, "-l", tmp / "u",
            "--values", check=0)
    assert "pcg iteration" in r.stderr and "stable predictions" in r.stderr
    assert "kernel matrix 1296×1296: 12.81 MiB" in r.stderr
    m = read_model(str(model))
    assert m.function.kernel == KernelSpec("rbf", 0.00566, 3, 0.0)
    assert m.params["kernel"] == "rbf" and m.params["early_stop"] == "stability"
    tr = read_dataset(str(train), n_features=256)
    unl = tr.X[tr.y == 0]
    lines = (tmp / "u").read_text().splitlines()
    assert len(lines) == unl.shape[0]
    vals = np.array([float(s.split()[1]) for s in lines])
    # the -l values (solver's own outputs) equal the saved model's out-of-sample values
    np.testing.assert_allclose(m.decision_function(unl)[:, 0], vals, rtol=1e-9, atol=1e-9)
    truth = np.loadtxt(shared("bench", "usps49-10", "train.truth"))[tr.y == 0]
    labels = np.array([int(s.split()[0]) for s in lines])
    assert np.mean(labels == truth) > 0.9
    r = run("ssl-predict", shared("bench", "usps49-10", "test.svm"), model, tmp / "p",
            check=0)
    acc = float(r.stderr.split("Accuracy = ")[1].split("%")[0])
    assert acc > 90.0  # SVMlin's supervised svm on this split: 89.12 %


def test_cli_multiclass_one_vs_rest(tmp):
    full = read_dataset(str(shared("datasets", "uspst", "uspst.gz")))
    rng = np.random.default_rng(0)
    rows = rng.choice(full.n_rows, 600, replace=False)
    y = np.where(full.y[rows] == 0, 10, full.y[rows]).astype(int)
    lab = np.zeros(600, bool)
    for c in np.unique(y):
        lab[np.flatnonzero(y == c)[:5]] = True
    X = full.X[rows]
    with open(tmp / "train.svm", "w") as f:
        for i in range(600):
            row = X[i]
            feats = " ".join(f"{j + 1}:{v:.17g}" for j, v in zip(row.indices, row.data))
            f.write(f"{y[i] if lab[i] else 0} {feats}\n")
    for algo in ("lapsvm", "laprls"):
        ssl_train("-a", algo, "-g", "0.00566", "-k", "10", tmp / "train.svm",
            tmp / algo, "-l", tmp / f"{algo}.l", check=0)
        m = read_model(str(tmp / algo))
        assert m.labels == list(range(1, 11)) and m.n_functions == 10
        pred = np.loadtxt(tmp / f"{algo}.l", dtype=int)
        assert np.mean(pred == y[~lab]) > 0.8


def test_cli_usage_errors(tmp):
    train = SAMPLES / "pcmac.train"
    r = ssl_train("-a", "lapsvm", "--early-stop", "validation", train, tmp / "m")
    assert r.returncode == 2 and "--early-stop validation needs --validation FILE" in r.stderr
    r = ssl_train("-a", "svm", "-k", "5", train, tmp / "m")
    assert r.returncode == 2 and "option -k/--neighbors is not used by -a svm" in r.stderr
    r = ssl_train("-a", "svm", "--validation", train, train, tmp / "m")
    assert r.returncode == 2 and "option --validation is not used by -a svm" in r.stderr
    r = ssl_train("-a", "lapsvm", "-t", "sigmoid", train, tmp / "m")
    assert r.returncode == 2 and "linear (0), poly (1), rbf (2)" in r.stderr
    r = ssl_train("-a", "lapsvm", "--max-memory", "1K", train, tmp / "m")
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == (
        f"ssl-train: error: {train}: 500 rows: lapsvm needs 1.91 MiB at once (kernel matrix "
        "500×500 1.91 MiB), above the memory limit of 1.00 KiB; raise --max-memory if the "
        "machine has the room, or use fewer rows")
    assert not (tmp / "m").exists()
    r = ssl_train("-a", "lapsvm", "--max-memory", "lots", train, tmp / "m")
    assert r.returncode == 2 and "'lots' is not a memory size" in r.stderr
    # a validation row without a label
    (tmp / "v.svm").write_text("0 1:1\n")
    r = ssl_train("-a", "lapsvm", "--early-stop", "validation", "--validation",
            tmp / "v.svm", train, tmp / "m")
    assert r.returncode == 1 and "v.svm:1: validation rows must be labeled" in r.stderr


def test_cli_cross_validation_works_with_lapsvm():
    r = ssl_train("-a", "laprls", "-v", "3", "-g", "0.07", "-k", "20",
            "--laplacian-degree", "3", SAMPLES / "pcmac.train", check=0)
    acc = float(r.stdout.split("= ")[1].rstrip("%\n"))
    assert acc > 75.0  # svm on the same folds: 70 %


# --------------------------------------------------------------------------- landmarks

@pytest.mark.parametrize("degree", [1, 2, 5])
@pytest.mark.parametrize("normalized", [True, False])
def test_landmark_graph_matrix_is_the_dense_product(degree, normalized):
    """G = [Z 1]ᵀ L^p [Z 1] from q = ⌊p/2⌋ sparse products (and one more for odd p), in
    column blocks, equals the dense product."""
    X, y = _data(150, 5, seed=3)
    lap, _ = graph.build(X, 7, normalized=normalized, degree=degree)
    spec = KernelSpec("rbf", 0.2, 3, 0.0)
    S = lapsvm.LandmarkSystem.build(spec, X, lap, kernels.choose_landmarks(y, 60))
    Z = np.hstack([S.features(X, np.arange(150)), np.ones((150, 1))])
    dense = Z.T @ lap.dense_power() @ Z
    assert np.abs(S.G - dense).max() <= 1e-12 * np.abs(dense).max()


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("hinge", [True, False])
@pytest.mark.parametrize("degree", [1, 2, 5])
def test_every_row_a_landmark_is_the_exact_solution(bias, hinge, degree):
    """With m = n landmarks the landmark form solves the exact problem: the same objective
    (to 1e-12) and the same outputs as the exact Newton on the n×n kernel."""
    X, y = _data(160, 5, seed=4)
    y[40:] = 0
    lap, _ = graph.build(X, 8, degree=degree)
    spec = KernelSpec("rbf", 0.3, 3, 0.0)
    K = kernels.gram(spec, X)
    c = np.ones(y.size)
    exact = lapsvm.newton(K, lap, y, c, 1e-3, 1.0, bias=bias, hinge=hinge)
    S = lapsvm.LandmarkSystem.build(spec, X, lap, kernels.choose_landmarks(y, 160))
    res = lapsvm.landmark_newton(S, X, y, c, 1e-3, 1.0, bias=bias, hinge=hinge)
    f = S.values(X, (S.T @ res.alpha)[:, None])[:, 0] + res.b
    assert res.objective == pytest.approx(exact.objective, rel=1e-12)
    np.testing.assert_allclose(f, exact.f, atol=1e-9)


def test_landmarks_keep_the_labeled_rows_and_a_seeded_sample():
    y = np.zeros(1000)
    y[[3, 500, 998]] = [1, -1, 1]
    a = kernels.choose_landmarks(y, 50)
    assert a.size == 50 and np.all(np.diff(a) > 0) and {3, 500, 998} <= set(a.tolist())
    assert np.array_equal(a, kernels.choose_landmarks(y, 50))
    assert np.array_equal(kernels.choose_landmarks(y, 5000), np.arange(1000))


def test_auto_landmarks_stay_within_half_the_memory_limit():
    for n, limit in ((75311, 12 << 30), (10 ** 6, 12 << 30), (1296, 5 << 20)):
        m = kernels.auto_landmarks(n, 1000, limit)
        assert kernels.landmark_bytes(n, m) <= limit / 2 < kernels.landmark_bytes(n, m + 1) \
            or m == 2000
    assert kernels.auto_landmarks(500, 10, None) == 500


@pytest.mark.parametrize("hinge", [True, False])
@pytest.mark.parametrize("degree", [1, 2])
def test_graph_newton_minimises_the_value_problem(hinge, degree):
    """The projected form's graph stage: f minimises J(f) = 1/2 [Σ c loss + γ_A ‖f‖² +
    γ_I fᵀL^p f] over all n values, as a quasi-Newton run on the dense J finds it (and for
    the squared loss as the dense linear solve does)."""
    X, y = _data(160, 5, seed=5)
    y[np.arange(160) % 5 != 0] = 0
    c = np.where(np.arange(160) % 3 == 0, 2.0, 1.0)
    lap, _ = graph.build(X, 8, degree=degree)
    Lp = lap.dense_power()
    ga, gi = 1e-3, 1.0
    res = lapsvm.graph_values(lap, y, c, ga, gi, hinge=hinge, tol=1e-12)

    def J(f):
        act = (y != 0) & ((y * f < 1) if hinge else True)
        r = np.where(act, f - y, 0.0)
        val = 0.5 * (np.sum(c * r * r) + ga * f @ f + gi * f @ Lp @ f)
        return val, c * r + ga * f + gi * Lp @ f

    ref = scipy.optimize.minimize(J, np.zeros(160), jac=True, method="L-BFGS-B",
                                  options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 20000})
    assert res.objective == pytest.approx(J(res.f)[0], rel=1e-12)
    assert res.objective <= ref.fun * (1 + 1e-9)
    np.testing.assert_allclose(res.f, ref.x, atol=1e-5)
    assert np.linalg.norm(J(res.f)[1]) <= 1e-8 * np.linalg.norm(J(np.zeros(160))[1])
    if not hinge:
        exact = np.linalg.solve(np.diag(np.where(y != 0, c, 0.0)) + ga * np.eye(160) + gi * Lp,
                                np.where(y != 0, c * y, 0.0))
        np.testing.assert_allclose(res.f, exact, atol=1e-9)


def test_graph_values_are_the_same_on_one_thread_and_two_and_in_local_order():
    """The graph stage's CG sums over fixed blocks of rows: the same bytes on 1 and 2 threads;
    renumbering the rows (local_order, as the fit does) gives the same values to the CG's
    tolerance."""
    import numba

    X, y = _data(9000, 4, seed=8)  # three blocks of CG_BLOCK rows
    y[np.arange(9000) % 100 != 0] = 0
    lap, _ = graph.build(X, 6, degree=2)
    c = np.ones(9000)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = lapsvm.graph_values(lap, y, c, 1e-6, 1.0)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = lapsvm.graph_values(lap, y, c, 1e-6, 1.0)
    finally:
        numba.set_num_threads(threads)
    assert one.cg_iterations > 10 and one.f.tobytes() == two.f.tobytes()
    plap, order = lapsvm.local_order(lap)
    assert np.array_equal(np.sort(order), np.arange(9000))
    local = lapsvm.graph_values(plap, y[order], c[order], 1e-6, 1.0)
    f = np.empty(9000)
    f[order] = local.f
    np.testing.assert_allclose(f, one.f, atol=1e-5 * np.abs(one.f).max())


@pytest.mark.parametrize("bias", [False, True])
def test_projection_is_the_regularised_least_squares_fit(bias):
    """P = [Z 1]ᵀ[Z 1] summed over kernel blocks equals the dense product, and project()
    returns the ridge solution of Zβ + b ≈ f for every column of F."""
    X, y = _data(150, 5, seed=6)
    lap, _ = graph.build(X, 7)
    spec = KernelSpec("rbf", 0.2, 3, 0.0)
    S = lapsvm.LandmarkSystem.build(spec, X, lap, kernels.choose_landmarks(y, 60),
                                    fit="project")
    assert S.G is None and S.fit == "project"
    Z = np.hstack([S.features(X, np.arange(150)), np.ones((150, 1))])
    np.testing.assert_allclose(S.P, Z.T @ Z, rtol=1e-10, atol=1e-10 * np.abs(S.P).max())
    F = np.random.default_rng(0).normal(size=(150, 2))
    beta, b = S.project(X, F, 1e-3, bias)
    Zb = Z if bias else Z[:, :-1]
    D = np.eye(Zb.shape[1])
    if bias:
        D[-1, -1] = 0.0
    ref = np.linalg.solve(Zb.T @ Zb + 1e-3 * D, Zb.T @ F)
    np.testing.assert_allclose(beta, ref[:beta.shape[0]], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(b, ref[-1] if bias else 0.0, rtol=1e-7, atol=1e-9)


def test_projection_over_a_row_sample_weights_it_to_all_rows():
    """projection_rows: all rows up to the limit, else every labeled row and landmark and a
    seeded sample, the limit in all; over a sample S, P sums S's rows and project() is the
    ridge fit on S with γ_A·|S|/n (the squares weighted n/|S|)."""
    X, y = _data(300, 5, seed=8)
    y[np.arange(300) % 10 != 0] = 0
    lm = kernels.choose_landmarks(y, 40)
    assert lapsvm.projection_rows(y, lm, most=300) is None
    S = lapsvm.projection_rows(y, lm, most=120)
    assert S.size == 120 and np.all(np.diff(S) > 0)
    assert set(np.flatnonzero(y)) <= set(S) and set(lm) <= set(S)
    assert np.array_equal(S, lapsvm.projection_rows(y, lm, most=120))  # seeded
    lap, _ = graph.build(X, 7)
    spec = KernelSpec("rbf", 0.2, 3, 0.0)
    sysS = lapsvm.LandmarkSystem.build(spec, X, lap, lm, fit="project", fit_rows=S)
    Z = np.hstack([sysS.features(X, S), np.ones((S.size, 1))])
    np.testing.assert_allclose(sysS.P, Z.T @ Z, rtol=1e-10, atol=1e-10 * np.abs(sysS.P).max())
    F = np.random.default_rng(1).normal(size=(300, 2))
    beta, b = sysS.project(X, F, 1e-2, True)
    D = np.eye(Z.shape[1])
    D[-1, -1] = 0.0
    ref = np.linalg.solve(Z.T @ Z + 1e-2 * S.size / 300 * D, Z.T @ F[S])
    np.testing.assert_allclose(beta, ref[:-1], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(b, ref[-1], rtol=1e-7, atol=1e-9)


def test_landmark_fit_auto_projects_below_n_and_restricts_at_n():
    """auto: fewer landmarks than rows → the projected form (recorded in the model, its CG
    iterations in the stats); every row a landmark → the restricted form, the exact problem
    (the same outputs as --landmarks 0 with Newton)."""
    X, y = _data(200, 5, seed=7)
    y[np.arange(200) % 10 != 0] = 0
    p = ALGORITHMS["lapsvm"].defaults()
    p.update(landmarks=50, neighbors=8)
    fewer = ALGORITHMS["lapsvm"].fit(X, y, None, p)
    assert fewer.params["landmark_fit"] == "project" and fewer.stats["cg_iterations"][0] > 0
    assert fewer.function.rows.shape[0] == 50
    p.update(landmarks=200)
    every = ALGORITHMS["lapsvm"].fit(X, y, None, p)
    assert every.params["landmark_fit"] == "restrict" and "cg_iterations" not in every.stats
    p.update(landmarks=0, solver="newton")
    exact = ALGORITHMS["lapsvm"].fit(X, y, None, p)
    np.testing.assert_allclose(every.train_values, exact.train_values, atol=1e-8)


def test_projected_landmarks_keep_the_exact_forms_accuracy_on_two_moons():
    """Two moons, 10 labels, 600 rows: 60 projected landmarks label the unlabeled rows
    within 2 points of the exact form (the restricted form is allowed to be worse)."""
    from sklearn.datasets import make_moons

    X, t = make_moons(600, noise=0.08, random_state=0)
    t = np.where(t > 0, 1.0, -1.0)
    y = np.zeros(600)
    lab = np.concatenate([np.flatnonzero(t > 0)[:5], np.flatnonzero(t < 0)[:5]])
    y[lab] = t[lab]
    p = ALGORITHMS["lapsvm"].defaults()
    errs = {}
    for form, m in (("exact", 0), ("project", 60)):
        p.update(landmarks=m, landmark_fit="project" if m else "auto")
        model = ALGORITHMS["lapsvm"].fit(sp.csr_matrix(X), y, None, p)
        errs[form] = 100 * np.mean(model.predict(X)[y == 0] != t[y == 0])
    assert errs["exact"] <= 5.0
    assert errs["project"] <= errs["exact"] + 2.0


@pytest.mark.parametrize("how", ["project", "restrict"])
@pytest.mark.parametrize("algo", ["lapsvm", "laprls"])
def test_cli_landmark_model_predicts_as_the_estimator(tmp, algo, how):
    """--landmarks 120: the model keeps 120 rows (all 50 labeled among them); ssl-predict's
    values equal the estimator's decision_function with landmarks=120; the transductive
    values (-l) are the model's own function on the training rows (restrict) or the graph
    stage's values, of which the model is the landmark fit (project)."""
    import ssl_svm

    train = SAMPLES / "pcmac.train"
    r = ssl_train("-a", algo, "--check", "none", "--landmarks", "120", train, tmp / "m",
                  "-l", tmp / "u", "--values", "--landmark-fit", how)
    assert ("solver landmark newton (120 landmark rows)" if how == "restrict" else
            "solver graph newton-CG projected on 120 landmark rows") in r.stderr
    m = read_model(str(tmp / "m"))
    assert m.function.rows.shape[0] == 120 and m.params["landmarks"] == 120
    assert m.params["landmark_fit"] == how
    run("ssl-predict", "--values", SAMPLES / "pcmac.test", tmp / "m", tmp / "p", check=0)
    cli = np.array([float(s.split()[1]) for s in (tmp / "p").read_text().splitlines()])
    X, y = ssl_svm.load_svmlight(str(train))[:2]
    Xt = ssl_svm.load_svmlight(str(SAMPLES / "pcmac.test"), n_features=X.shape[1])[0]
    est = ssl_svm.estimator(algo)(landmarks=120, landmark_fit=how, check="none")
    est.fit(X, np.where(y == 0, -1, np.where(y > 0, 1, 0)))
    np.testing.assert_allclose(est.decision_function(Xt), cli, rtol=1e-6, atol=1e-9)
    tr = read_dataset(str(train))
    u = np.array([float(s.split()[1]) for s in (tmp / "u").read_text().splitlines()])
    f = m.function.decision(tr.X[tr.y == 0])[:, 0]
    if how == "restrict":
        np.testing.assert_allclose(u, f, rtol=1e-6, atol=1e-9)
        return
    p = ALGORITHMS[algo].defaults()
    p.update(landmarks=120, landmark_fit=how)
    lap = ALGORITHMS[algo].fit(tr.X, tr.y, None, p).warm["lap"]
    Y = np.where(tr.y == 0, 0.0, np.where(tr.y == m.labels[0], 1.0, -1.0))
    g = lapsvm.graph_values(lap, Y, np.ones(Y.size), p["gamma_a"], p["gamma_i"],
                            hinge=algo == "lapsvm").f
    np.testing.assert_allclose(u, g[tr.y == 0], atol=1e-5)  # (the fit renumbers the rows)
    assert not np.allclose(u, f, atol=1e-3)  # the expansion only fits them
    assert np.mean(np.sign(u) == np.sign(f)) >= 0.8


@pytest.mark.parametrize("how", ["project", "restrict"])
@pytest.mark.parametrize("algo", ["lapsvm", "laprls"])
def test_a_fold_fit_reusing_the_landmark_system_equals_a_cold_fit_on_those_landmarks(
        algo, how, monkeypatch):
    """The check's folds hide labels and reuse the fit's graph and landmark system (warm):
    the same model as a fit from nothing on the hidden labels with the same landmark rows
    (which choose_landmarks would otherwise draw anew: the held-out rows are unlabeled now)."""
    tr = read_dataset(str(SAMPLES / "pcmac.train"))
    p = ALGORITHMS[algo].defaults()
    p.update(landmarks=120, neighbors=10, laplacian_degree=2, landmark_fit=how)
    full = ALGORITHMS[algo].fit(tr.X, tr.y, None, p)
    rows = full.warm["system"].landmarks
    yf = tr.y.copy()
    yf[np.flatnonzero(tr.y != 0)[::5]] = 0.0  # a fold's held-out labeled rows
    warm = ALGORITHMS[algo].fit(tr.X, yf, None, p, warm=full.warm)
    assert warm.stats["kernel_time"] == [0.0] and warm.stats["graph_time"] == [0.0]
    drawn = kernels.choose_landmarks(yf, 120)
    assert not np.array_equal(drawn, rows)
    monkeypatch.setattr(kernels, "choose_landmarks", lambda y, m, seed=0: rows)
    cold = ALGORITHMS[algo].fit(tr.X, yf, None, p)
    assert cold.stats["kernel_time"][0] > 0.0
    np.testing.assert_allclose(warm.train_values, cold.train_values, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(warm.function.coef, cold.function.coef, rtol=1e-7, atol=1e-9)
