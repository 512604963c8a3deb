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
        for name in ("usmo", "tvrls", "cheeger-svm"):
            be = backends.backend(name, 10, 10)
            assert be.name == "numba" and "no numpy path" in be.reason
            with pytest.raises(ValueError, match="no numpy path"):
                backends.backend(name, 10, 10, {"backend": "numpy"})
        with pytest.raises(ValueError, match="backend must be one of"):
            backends.backend("svm", 10, 10, {"backend": "gpu"})
    # a command (outside history_free) whose process runs numba already uses it
    import numba  # noqa: F401

    be = backends.backend("svm", 500, 10)
    assert be.name == "numba" and "already runs" in be.reason
    assert backends.has_numpy_path("lapsvm") and not backends.has_numpy_path("tvrls")
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
    assert line.endswith("backend=numba (tvrls has no numpy path)"), line


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


@pytest.mark.parametrize("algo", ["svm", "tsvm", "lapsvm"])
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
