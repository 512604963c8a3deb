"""One backend decision per fit (solvers.backend): what it chooses and why, that the command
prints it with the parameters, and that both backends give the same fits."""

import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import SAMPLES, run, shared, ssl_train

from ssl_svm.formats.svmlight import read_dataset
from ssl_svm.solvers import backend as backends
from ssl_svm.solvers.host import budget
from ssl_svm.solvers.registry import ALGORITHMS


def test_the_decision_from_size_solver_and_options():
    limit = backends.NUMPY_NNZ
    with budget.history_free():  # numba runs in this process: the library ignores that
        for name in ("svm", "rls", "tsvm", "da"):
            assert backends.backend(name, 500, limit).numpy
            be = backends.backend(name, 500, limit + 1)
            assert be.name == "numba" and "over 100,000" in be.reason
            assert backends.backend(name, 500, 10, {"backend": "numba"}).name == "numba"
        # a command's check repeats da's fit in its folds: numba pays; tsvm's stay on numpy
        be = backends.backend("da", 500, 10, {"checked_folds": 5})
        assert be.name == "numba" and "5 folds" in be.reason
        assert backends.backend("tsvm", 500, 10, {"checked_folds": 5}).numpy
        for name in ("lapsvm", "laprls"):
            assert backends.backend(name, 3000, 10**7).numpy
            be = backends.backend(name, 3001, 10)
            assert be.name == "numba" and "3,001 rows, over 3,000" in be.reason
            be = backends.backend(name, 10, 10, {"landmarks": 5})
            assert be.name == "numba" and "landmark form runs on numba" in be.reason
            be = backends.backend(name, 10, 10, {"knn": "approximate"})
            assert be.name == "numba" and "approximate neighbour search" in be.reason
        for name in ("tvrls", "tvsvm", "cheeger-rls", "cheeger-svm"):
            assert backends.backend(name, 1000, 10**7).numpy
            be = backends.backend(name, 1001, 10)
            assert be.name == "numba" and "1,001 rows, over 1,000" in be.reason
            be = backends.backend(name, 10, 10, {"landmarks": 5})
            assert be.name == "numba" and "landmark form runs on numba" in be.reason
        # every row labeled: cheeger-rls's fit is one smoothing step, numpy up to the exact
        # form's rows; the other three still iterate or run SMO
        be = backends.backend("cheeger-rls", 3000, 10, {"unlabeled": 0})
        assert be.numpy and "every row labeled" in be.reason
        be = backends.backend("cheeger-rls", 3001, 10, {"unlabeled": 0})
        assert be.name == "numba" and "3,001 rows, over 3,000 (every row labeled" in be.reason
        assert not backends.backend("cheeger-rls", 1001, 10, {"unlabeled": 1}).numpy
        assert not backends.backend("cheeger-rls", 1001, 10, {"unlabeled": None}).numpy
        for name in ("tvrls", "tvsvm", "cheeger-svm"):
            assert not backends.backend(name, 1001, 10, {"unlabeled": 0}).numpy
        be = backends.backend("usmo", 10, 10)
        assert be.name == "numba" and "no numpy path" in be.reason
        with pytest.raises(ValueError, match="no numpy path"):
            backends.backend("usmo", 10, 10, {"backend": "numpy"})
        with pytest.raises(ValueError, match="backend must be one of"):
            backends.backend("svm", 10, 10, {"backend": "gpu"})
    # a command (outside history_free) whose process runs numba already uses it
    import numba  # noqa: F401

    be = backends.backend("svm", 500, 10)
    assert be.name == "numba" and "already runs" in be.reason
    assert backends.has_numpy_path("lapsvm") and not backends.has_numpy_path("usmo")
    assert all(n in ALGORITHMS for n in backends.NUMPY_PATHS)


@pytest.mark.parametrize("name", ["svm", "rls", "tsvm", "da"])
def test_both_backends_give_the_same_fit(name):
    """The numpy and numba paths: the same predictions, objectives within 1e-9 relative (the
    sums are taken in another order)."""
    d = read_dataset(str(SAMPLES / "pcmac.train"))
    t = read_dataset(str(SAMPLES / "pcmac.test"), n_features=d.X.shape[1])
    algo = ALGORITHMS[name]
    params = {**algo.defaults(), "lambda": 0.001}
    fits = {}
    with budget.history_free():
        for be in ("numpy", "numba"):
            fits[be] = algo.fit(d.X, d.y, np.ones(d.y.size), params, backend=be)
    a, b = fits["numpy"], fits["numba"]
    np.testing.assert_array_equal(a.predict(t.X), b.predict(t.X))
    np.testing.assert_allclose(a.stats["objective"], b.stats["objective"], rtol=1e-9)


def test_the_command_prints_its_backend_with_the_parameters(tmp):
    r = ssl_train("-a", "tsvm", "-W", "0.001", "--check", "none", SAMPLES / "pcmac.train",
                  tmp / "m")
    line = next(x for x in r.stderr.splitlines() if x.startswith("tsvm: lambda="))
    assert line.endswith("backend=numpy (27,345 stored values, at most 100,000: no compiler "
                         "to start)"), line
    # checked: the same backend (the folds follow budget.plan_check)
    r = run("ssl-train", "-a", "tsvm", "-W", "0.001", SAMPLES / "pcmac.train", tmp / "m")
    line = next(x for x in r.stderr.splitlines() if x.startswith("tsvm: lambda="))
    assert line.endswith("backend=numpy (27,345 stored values, at most 100,000: no compiler "
                         "to start)"), line
    assert "check against the supervised svm" in r.stderr
    r = ssl_train("-a", "tvrls", SAMPLES / "pcmac.train", tmp / "m")
    line = next(x for x in r.stderr.splitlines() if x.startswith("tvrls: kernel="))
    assert line.endswith("backend=numpy (500 rows, at most 1,000: no compiler to start)"), line
    # the fully labeled shuttle sample: cheeger-rls's one smoothing step on numpy, as the
    # library's fit decides (no numba started by either)
    r = run("ssl-train", "-a", "cheeger-rls", SAMPLES / "shuttle.train", tmp / "m")
    line = next(x for x in r.stderr.splitlines() if x.startswith("cheeger-rls: kernel="))
    assert line.endswith("backend=numpy (2,000 rows, at most 3,000 (every row labeled: one "
                         "smoothing step): no compiler to start)"), line
    code = ("import sys, numpy as np; from ssl_svm.formats.svmlight import read_dataset; "
            "from ssl_svm.solvers.registry import ALGORITHMS; "
            f"d = read_dataset({str(SAMPLES / 'shuttle.train')!r}); "
            "a = ALGORITHMS['cheeger-rls']; a.fit(d.X, d.y, np.ones(d.y.size), a.defaults()); "
            "print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr[-2000:]
    r = ssl_train("-a", "usmo", "--negatives-as-unlabeled", SAMPLES / "pcmac.train", tmp / "m")
    line = next(x for x in r.stderr.splitlines() if x.startswith("usmo: "))
    assert line.endswith("backend=numba (usmo has no numpy path)"), line


def test_a_commands_check_stays_on_numpy_while_its_folds_cost_less_than_numba(monkeypatch):
    monkeypatch.setattr(budget, "_numpy_spent", 0)
    monkeypatch.setattr(budget, "_numpy_extra", 0)
    assert budget.plan_check(5) is None  # nothing spent on numpy: nothing to plan
    budget.spend_numpy_work(budget.CHECK_NUMPY_WORK // 5)
    assert budget.plan_check(5) is True
    assert budget.numpy_work_left(100) == 100 + budget.CHECK_NUMPY_WORK // 5 * 4
    with budget.history_free():
        assert budget.plan_check(5) is None and budget.numpy_work_left(100) == 100
    monkeypatch.setattr(budget, "_numpy_extra", 0)
    budget.spend_numpy_work(1)
    assert budget.plan_check(5) is False  # more: the folds start on numba
    assert budget.numpy_work_left(10**18) == 0


@pytest.mark.parametrize("algo", ["svm", "tsvm", "lapsvm", "tvsvm", "cheeger-svm"])
def test_a_small_command_loads_no_numba_nor_numpys_unused_parts(tmp, algo):
    """A small fit never starts numba, its check included (tsvm's five folds on numpy), and
    numpy's f2py and testing (which scipy's import touches, 0.1 s) stay unloaded; code that
    uses them still gets them whole."""
    code = ("import sys; sys.argv = ['ssl-train', '-q', '-a', *sys.argv[3:], sys.argv[1], "
            "sys.argv[2]]\n"
            "from ssl_svm.cli.train import main\n"
            "assert main() == 0\n"
            "loaded = sorted(m for m in sys.modules if m.startswith(('numba', "
            "'numpy.f2py.', 'numpy.testing.', 'unittest')))\n"
            "assert not loaded, loaded\n"
            "import numpy.testing\nassert callable(numpy.testing.assert_allclose)\n")
    r = subprocess.run([sys.executable, "-c", code, str(SAMPLES / "pcmac.train"),
                        str(tmp / "m"), algo, *(["-W", "0.001"] if algo == "tsvm" else [])],
                       capture_output=True, text=True,
                       env={**os.environ, "SSL_SVM_SERIAL_SECONDS": "0"})
    assert r.returncode == 0, r.stderr
    assert (tmp / "m").exists()


@pytest.mark.parametrize("name,solver,bias", [("lapsvm", "pcg", 0), ("lapsvm", "newton", 1),
                                              ("laprls", "newton", 0), ("laprls", "pcg", 1)])
def test_both_backends_give_the_same_laplacian_fit(name, solver, bias):
    """The exact form on numpy (its kNN selection, line search and Newton matrix) and on
    numba: the same graph, the same predictions, objectives within 1e-9 relative."""
    d = read_dataset(str(shared("bench", "usps49-10", "train.svm")))
    t = read_dataset(str(shared("bench", "usps49-10", "test.svm")), n_features=d.X.shape[1])
    algo = ALGORITHMS[name]
    params = {**algo.defaults(), "solver": solver, "bias": bias}
    fits = {be: algo.fit(d.X, d.y, np.ones(d.y.size), params, backend=be)
            for be in ("numpy", "numba")}
    a, b = fits["numpy"], fits["numba"]
    assert a.stats["graph_edges"] == b.stats["graph_edges"]
    np.testing.assert_array_equal(a.predict(t.X), b.predict(t.X))
    np.testing.assert_allclose(a.stats["objective"], b.stats["objective"], rtol=1e-9)
    np.testing.assert_allclose(a.decision_function(t.X), b.decision_function(t.X), rtol=1e-6,
                               atol=1e-9)


def test_the_numpy_line_search_and_kernels_equal_numbas():
    from ssl_svm.solvers import graph, graph_numba, lapsvm, lapsvm_numba

    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 40))
        Y = rng.choice([-1.0, 0.0, 1.0], n)
        c = rng.choice([0.0, 0.5, 1.0, 2.0], n)
        o = rng.normal(size=n) * rng.choice([0.0, 1.0])
        do = rng.normal(size=n)
        A, B = float(rng.normal()), float(abs(rng.normal())) * rng.choice([0.0, 1.0])
        for hinge in (True, False):
            assert lapsvm.line_search(A, B, Y, c, o, do, hinge) == pytest.approx(
                lapsvm_numba.line_search(A, B, Y, c, o, do, hinge), rel=1e-12, abs=1e-300)
    D = rng.integers(0, 5, size=(30, 50)).astype(float)  # many ties
    for kk in (1, 3, 10):
        a, b = np.empty((30, kk), np.int64), np.empty((30, kk), np.int64)
        graph.smallest(D, a)
        graph_numba.smallest(D, b)
        np.testing.assert_array_equal(np.sort(a, axis=1), np.sort(b, axis=1))
    import scipy.sparse as sp

    L = sp.random(20, 20, density=0.2, random_state=1, format="csr")
    K, Bm, cE = rng.normal(size=(20, 20)), rng.normal(size=(20, 20)), rng.random(20)
    H1, H2 = np.zeros((21, 21)), np.zeros((21, 21))
    lapsvm.newton_matrix(L.indptr, L.indices, L.data, Bm, K, cE, 0.3, 0.01, H1)
    lapsvm_numba.newton_matrix(L.indptr, L.indices, L.data, Bm, K, cE, 0.3, 0.01, H2)
    np.testing.assert_allclose(H1, H2, rtol=1e-12, atol=1e-14)


def test_the_lazy_import_finder_never_asks_itself():
    """The commands' finder for numpy's unused parts, installed from both names of its module
    (ssl_cli.process, ssl_svm.cli.process) and even twice by hand: numpy.f2py and
    numpy.testing import, lazily, without a loop through the finders."""
    code = ("import sys\n"
            "import ssl_cli.process as P, ssl_svm.cli.process as Q\n"
            "P.defer_unused_imports(); Q.defer_unused_imports()\n"
            "assert sum(getattr(f, 'ssl_svm_deferred', False) for f in sys.meta_path) == 1\n"
            "sys.meta_path[:0] = [P._DeferredFinder(), Q._DeferredFinder()]\n"
            "import scipy.sparse\n"
            "assert type(sys.modules['numpy.f2py']).__name__ == '_LazyModule'\n"
            "import numpy.testing\n"
            "numpy.testing.assert_allclose([1.0], [1.0])\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


def _tv_sets():
    """usps49-10 (binary, 1,296 rows) and three Gaussian classes in 5 dimensions, 300 rows, a
    fifth of them labeled (the multi-class formulations; every solver converges there, as a
    comparison of two backends needs: a splitting stopped at its iteration limit amplifies
    rounding)."""
    import scipy.sparse as sp

    d = read_dataset(str(shared("bench", "usps49-10", "train.svm")))
    rng = np.random.RandomState(0)
    centres = rng.randn(3, 5) * 3
    X = np.vstack([centres[k] + rng.randn(100, 5) for k in range(3)])
    y = np.repeat([1.0, 2.0, 3.0], 100)
    y[rng.rand(300) < 0.8] = 0.0
    return {"usps49-10": (d.X, d.y), "three classes": (sp.csr_matrix(X), y)}


@pytest.mark.parametrize("name", ["tvrls", "tvsvm", "cheeger-rls", "cheeger-svm"])
def test_both_backends_give_the_same_tv_fit(name):
    """The TV family's exact form on numpy (Chambolle-Pock by sparse products, the sorting
    simplex projection, SMO by whole-array passes) and on numba: the same predictions, the
    same iterations, energies within 1e-9 relative; binary and multi-class."""
    algo = ALGORITHMS[name]
    for set_name, (X, y) in _tv_sets().items():
        fits = {be: algo.fit(X, y, np.ones(y.size), algo.defaults(), backend=be)
                for be in ("numpy", "numba")}
        a, b = fits["numpy"], fits["numba"]
        assert a.stats["converged"] == [1.0], set_name
        assert a.stats["iterations"] == b.stats["iterations"], set_name
        np.testing.assert_array_equal(a.predict(X), b.predict(X), err_msg=set_name)
        np.testing.assert_allclose(a.stats["energy"], b.stats["energy"], rtol=1e-9,
                                   err_msg=set_name)
        np.testing.assert_allclose(a.train_values, b.train_values, rtol=1e-6, atol=1e-8)


def _smo_on_both(G, q, y, mu):
    """SMO from β = 0 on numpy and on numba: the same steps, iterations and β to the bit."""
    from ssl_svm.solvers import tvsvm

    b1, b2 = np.zeros(q.size), np.zeros(q.size)
    r1 = tvsvm.svm_dual_smo(G, q, y, mu, b1, 1e-10, 100_000, numpy=True)
    r2 = tvsvm.svm_dual_smo(G, q, y, mu, b2, 1e-10, 100_000)
    assert r1 == r2
    np.testing.assert_array_equal(b1, b2)


def test_the_numpy_tv_kernels_equal_numbas():
    """The prox (the same iterations and result to rounding), the simplex projection and SMO
    (the same pairs: the same β to the last bit) on both backends."""
    import scipy.sparse as sp

    from ssl_svm.solvers import tv, tv_numba, tvsvm

    rng = np.random.default_rng(0)
    W = sp.random(300, 300, density=0.03, random_state=2)
    edges = tv.Edges.from_adjacency(sp.triu(W, 1) + sp.triu(W, 1).T)
    for gamma, rho in ((0.1, 1.0), (1.0, 0.3), (5.0, 2.0)):
        z = rng.normal(size=300)
        a = tv.tv_prox(edges, z, gamma, rho, tol=1e-8, numpy=True)
        b = tv.tv_prox(edges, z, gamma, rho, tol=1e-8)
        assert a.iterations == b.iterations and a.restarts == b.restarts
        np.testing.assert_allclose(a.g, b.g, rtol=1e-9, atol=1e-9)
        assert a.primal == pytest.approx(b.primal, rel=1e-12)
    V = np.vstack([rng.normal(size=(200, 6)) * s for s in (0.01, 1.0, 10.0)])
    V[0], V[1] = [1.0, 0, 0, 0, 0, 0], 5.0
    out = np.empty_like(V)
    tv_numba.michelot_rows(V, out)
    np.testing.assert_allclose(tv.project_simplex(V, numpy=True), out, atol=1e-14)
    empty = np.zeros(0)
    assert (tvsvm.svm_dual_smo(np.zeros((0, 0)), empty, empty, 2.0, empty.copy(), 1e-10, 10,
                               numpy=True)
            == tvsvm.svm_dual_smo(np.zeros((0, 0)), empty, empty, 2.0, empty.copy(), 1e-10, 10))
    for n in (1, 7, 60):
        A = rng.normal(size=(n, n))
        Q = A @ A.T / n
        Q = 0.5 * (Q + Q.T)
        _smo_on_both(Q, rng.normal(size=n), np.where(rng.random(n) < 0.4, 1.0, -1.0), 2.0)


def test_smos_lane_scans_pick_what_one_scan_picks():
    """numba's SMO scans its arrays in interleaved lanes: the first maximum and the minimum
    one strict scan finds, on lengths around the lanes' width with ties and infinities; and
    SMO on duplicated rows (tied pairs at every step) takes numpy's pairs, to the bit."""
    from ssl_svm.solvers import tv_numba

    rng = np.random.default_rng(3)
    for _ in range(3000):
        n = int(rng.integers(0, 23))
        a = rng.integers(-2, 3, n).astype(float)
        a[rng.random(n) < 0.3] = -np.inf
        a[rng.random(n) < 0.1] = np.inf
        i, m = -1, -np.inf
        for t in range(n):
            if a[t] > m:
                i, m = t, a[t]
        assert tv_numba._argmax_first(a) == (i, m), a
        assert tv_numba._min_lanes(a) == (a.min() if n else np.inf), a
    for n in (9, 13, 42):
        A = rng.normal(size=(n // 3, 4))
        X = np.repeat(A, 3, axis=0)[:n] if n % 3 == 0 else np.vstack([np.repeat(A, 3, axis=0),
                                                                      A[: n % 3]])
        _smo_on_both(X @ X.T + 0.1, np.ones(n), np.where(np.arange(n) % 2 == 0, 1.0, -1.0), 1.0)


def test_the_tv_steps_transpose_sums_as_one_loop_does():
    """numba's Dᵀp sums each row's run of edges in a register: on a graph's edges (i < j,
    sorted by i) the one edge loop's sums to the bit; on edges in any order, Dᵀp still."""
    import scipy.sparse as sp

    from ssl_svm.solvers import tv, tv_numba

    rng = np.random.default_rng(7)
    for n in (2, 9, 300):
        W = sp.random(n, n, density=min(1.0, 8 / n), random_state=int(n))
        edges = tv.Edges.from_adjacency(sp.triu(W, 1) + sp.triu(W, 1).T)
        p = rng.normal(size=edges.m)
        loop = np.zeros(n)
        for e in range(edges.m):
            v = edges.c[e] * p[e]
            loop[edges.i[e]] += v
            loop[edges.j[e]] -= v
        out = np.empty(n)
        tv_numba.apply_Dt(edges.i, edges.j, edges.c, p, out)
        np.testing.assert_array_equal(out, loop)
        order = rng.permutation(edges.m)
        tv_numba.apply_Dt(edges.j[order], edges.i[order], -edges.c[order], p[order], out)
        np.testing.assert_allclose(out, loop, rtol=1e-12, atol=1e-12)


def test_the_classes_duals_together_equal_one_after_another():
    """The SVM step's duals of several classes over one G, solved together on numba's threads
    or one after another on numpy: each class's β that of its own call, to the bit, whatever
    the threads."""
    import numba

    from ssl_svm.solvers import tvsvm

    rng = np.random.default_rng(5)
    n, c = 80, 5
    A = rng.normal(size=(n, 6))
    G = A @ A.T / 6 + 0.01 * np.eye(n)
    Y = np.where(rng.random((c, n)) < 0.3, 1.0, -1.0)
    Q = rng.normal(size=(c, n)) + 1.0
    alone = np.zeros((c, n))
    runs = [tvsvm.svm_dual_smo(G, Q[k], Y[k], 5.0, alone[k], 1e-10, 100_000)
            for k in range(c)]
    for threads in (1, 2):
        together = np.zeros((c, n))
        old = numba.get_num_threads()
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        try:
            stats = tvsvm.svm_dual_smo_classes(G, Q, Y, 5.0, together, 1e-10, 100_000)
        finally:
            numba.set_num_threads(old)
        np.testing.assert_array_equal(together, alone)
        assert [it for it, _ in stats] == [it for it, _ in runs]
    on_numpy = np.zeros((c, n))
    tvsvm.svm_dual_smo_classes(G, Q, Y, 5.0, on_numpy, 1e-10, 100_000, numpy=True)
    np.testing.assert_array_equal(on_numpy, alone)


def test_the_exact_hinge_step_is_smos_optimum():
    """TV-SVM's h-step dual (Q = I/r2) solved exactly over the knots of its multiplier: the
    optimum SMO reaches at a tight tolerance, never a worse objective, on random problems
    with ties, one class only, and all at a bound."""
    from ssl_svm.solvers import tvsvm

    rng = np.random.default_rng(0)
    cases = [(np.ones(5), np.array([1.0, 1, 1, 1, 1])), (np.zeros(4), np.array([1.0, -1, 1, -1])),
             (np.full(6, 50.0), np.array([1.0, -1, -1, 1, 1, 1]))]
    for _ in range(300):
        n = int(rng.integers(1, 50))
        y = np.where(rng.random(n) < rng.random(), 1.0, -1.0)
        q = np.round(rng.normal(size=n) * rng.choice([0.1, 1.0, 10.0]), 1)  # ties
        cases.append((q, y))
    for k, (q, y) in enumerate(cases):
        r2, mu = (0.5, 1.0, 3.0)[k % 3], (0.1, 1.0, 100.0)[k % 3]
        beta = tvsvm.separable_dual(q, y, r2, mu)
        ref = np.zeros(q.size)
        tvsvm.svm_dual_smo(np.eye(q.size) / r2, q, y, mu, ref, 1e-13, 10**6)
        assert abs(float(y @ beta)) <= 1e-9 and beta.min() >= 0.0 and beta.max() <= mu
        assert (0.5 * float(beta @ beta) / r2 - float(q @ beta)
                <= 0.5 * float(ref @ ref) / r2 - float(q @ ref) + 1e-10)
        np.testing.assert_allclose(beta, ref, atol=1e-9)
