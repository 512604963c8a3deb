"""The approximate nearest-neighbour graph (solvers/ann.py) against the exact one, and the
choice between them (--knn)."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import SAMPLES, run, shared
from sklearn.datasets import load_svmlight_file

from ssl_svm.solvers import ann, graph


def _recall(a, e):
    return np.mean([np.intersect1d(a[i], e[i]).size for i in range(a.shape[0])]) / a.shape[1]


@pytest.fixture(scope="module")
def mnist_rows():
    X, _ = load_svmlight_file(str(shared("datasets", "mnist38", "mnist38.gz")))
    return X[:4000].toarray()


@pytest.mark.parametrize("k", [10, 50])
def test_recall_on_mnist(mnist_rows, k):
    ia, da = graph.knn(mnist_rows, k, "approximate")
    ie, de = graph.knn(mnist_rows, k)
    assert _recall(ia, ie) >= 0.95
    # the distances are the true ones of the indices returned, sorted, never below the exact
    true = np.sqrt(((mnist_rows[:, None, :] - mnist_rows[ia]) ** 2).sum(-1)) if k == 10 else None
    if true is not None:
        np.testing.assert_allclose(da, true, rtol=1e-9, atol=1e-9)
    assert np.all(np.diff(da, axis=1) >= 0)
    assert np.all(da >= de - 1e-9)
    assert not np.any(ia == np.arange(len(ia))[:, None])
    assert all(np.unique(r).size == k for r in ia)


def test_recall_on_the_book_usps_set():
    X, _ = load_svmlight_file(str(shared("datasets", "sslbook-usps", "sslbook-usps.gz")))
    X = X.toarray()
    for k in (6, 10, 50):
        assert _recall(graph.knn(X, k, "approximate")[0], graph.knn(X, k)[0]) >= 0.95


def test_the_same_graph_on_one_thread_and_on_two(mnist_rows):
    import numba

    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = ann.knn(mnist_rows[:1500], 10, seed=3)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = ann.knn(mnist_rows[:1500], 10, seed=3)
    finally:
        numba.set_num_threads(threads)
    assert one[0].tobytes() == two[0].tobytes() and one[1].tobytes() == two[1].tobytes()
    other = ann.knn(mnist_rows[:1500], 10, seed=4)
    assert other[0].tobytes() != one[0].tobytes()  # the seed matters: the test can fail


def test_duplicates_tiny_sets_and_all_neighbours():
    rng = np.random.default_rng(0)
    # every row four times: no hyperplane separates copies, the trees halve such nodes
    X = np.repeat(rng.normal(size=(50, 3)), 4, axis=0)
    ia, da = graph.knn(X, 3, "approximate")
    ie, de = graph.knn(X, 3)
    np.testing.assert_array_equal(ia, ie)
    np.testing.assert_array_equal(da, 0.0)
    # k = n - 1: every other row, as the exact search gives them
    Y = rng.normal(size=(9, 4))
    ia, da = graph.knn(Y, 8, "approximate")
    ie, de = graph.knn(Y, 8)
    np.testing.assert_array_equal(ia, ie)
    np.testing.assert_allclose(da, de, rtol=1e-12)


def test_the_search_chosen(monkeypatch, caplog):
    X = sp.random(300, 20, density=0.5, format="csr", random_state=0)
    assert graph.knn_search("auto", X)[0] == "exact"
    assert graph.knn_search("approximate", X) == ("approximate", "given")
    monkeypatch.setattr(graph, "APPROX_KNN_ROWS", 100)
    assert graph.knn_search("auto", X)[0] == "approximate"
    assert graph.knn_search("exact", X) == ("exact", "given")
    # sparse rows whose dense copy is over a quarter of the limit: the exact search, said
    search, how = graph.knn_search("auto", X, max_memory=4 * 8 * 300 * 20 - 1)
    assert search == "exact" and "do not fit" in how
    assert "needs the rows dense" in caplog.text


def test_cli_model_with_the_approximate_graph_records_it_and_predicts_as_the_estimator(
        tmp_path):
    """--knn approximate: said, recorded in the model; ssl-predict's values equal the
    estimator's with knn='approximate'; the default on 500 rows is the exact search."""
    import ssl_svm

    train = SAMPLES / "pcmac.train"
    model = tmp_path / "m"
    r = run("ssl-train", "-a", "lapsvm", "--check", "none", "--knn", "approximate", train,
            model)
    assert r.returncode == 0, r.stderr
    assert "(approximate search)" in r.stderr
    assert "param knn approximate\n" in model.read_text()
    out = tmp_path / "p"
    r = run("ssl-predict", "--values", SAMPLES / "pcmac.test", model, out)
    assert r.returncode == 0, r.stderr
    cli = np.array([float(s.split()[1]) for s in out.read_text().splitlines()])
    X, y = ssl_svm.load_svmlight(str(train))[:2]
    Xt = ssl_svm.load_svmlight(str(SAMPLES / "pcmac.test"), n_features=X.shape[1])[0]
    est = ssl_svm.estimator("lapsvm")(knn="approximate", check="none")
    est.fit(X, np.where(y == 0, -1, np.where(y > 0, 1, 0)))
    np.testing.assert_allclose(est.decision_function(Xt), cli, rtol=1e-6, atol=1e-9)
    r = run("ssl-train", "-a", "lapsvm", "--check", "none", train, model)
    assert r.returncode == 0, r.stderr
    assert "exact neighbour search (auto: 500 rows" in r.stderr
    assert "param knn exact\n" in model.read_text()


@pytest.mark.parametrize("algo", ["laprls", "tvrls"])
def test_small_data_keeps_the_exact_graph_byte_for_byte(tmp_path, algo):
    """Below the switch, --knn auto is the exact search: the same model bytes as --knn exact;
    --knn approximate builds another graph (the test can tell them apart)."""
    train = SAMPLES / "pcmac.train"
    files = {}
    for how in ("auto", "exact", "approximate"):
        files[how] = tmp_path / how
        r = run("ssl-train", "-a", algo, "--check", "none", "--knn", how, train, files[how])
        assert r.returncode == 0, r.stderr
    assert files["auto"].read_bytes() == files["exact"].read_bytes()
    assert files["approximate"].read_bytes() != files["exact"].read_bytes()
