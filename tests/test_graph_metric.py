"""--graph-metric (issue 31): cosine graphs and kernels for text, recorded in the model and
applied again at prediction."""

import re

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import SAMPLES, run, shared

from ssl_svm.formats.model_file import model_from_text, model_to_text, read_model
from ssl_svm.formats.svmlight import read_dataset
from ssl_svm.solvers import graph, kernels
from ssl_svm.solvers.registry import ALGORITHMS


def _scaled_rows(X, seed=0):
    """X with every row multiplied by a random length (a document-length spread of 30x), as
    unnormalised tf or tf-idf rows come."""
    s = np.exp(np.random.default_rng(seed).uniform(0.0, np.log(30.0), X.shape[0]))
    return sp.diags(s) @ sp.csr_matrix(X)


def _write(path, X, labels):
    X = sp.csr_matrix(X, copy=True)
    X.sort_indices()
    with open(path, "w") as f:
        for i in range(X.shape[0]):
            a, b = X.indptr[i], X.indptr[i + 1]
            feats = " ".join(f"{j + 1}:{v!r}" for j, v in zip(X.indices[a:b].tolist(),
                                                               X.data[a:b].tolist()))
            f.write(f"{int(labels[i])} {feats}\n")


def test_unit_rows_and_the_auto_rule():
    rng = np.random.default_rng(0)
    D = rng.normal(size=(30, 8))
    D[3] = 0.0
    U = kernels.unit_rows(D)
    norms = np.linalg.norm(U, axis=1)
    assert np.allclose(np.delete(norms, 3), 1.0) and norms[3] == 0.0
    S = sp.random(40, 500, density=0.02, random_state=1, format="csr")
    US = kernels.unit_rows(S)
    assert sp.issparse(US) and (US != 0).nnz == (S != 0).nnz
    np.testing.assert_allclose(US.toarray(), kernels.unit_rows(S.toarray()), rtol=1e-15)
    assert S.data.min() >= 0 and kernels.unit_rows(S) is not S
    # auto: cosine for sparse non-negative rows only
    assert graph.resolve_metric("auto", S)[0] == "cosine"
    assert graph.resolve_metric("auto", S.toarray())[0] == "cosine"  # storage does not matter
    assert graph.resolve_metric("auto", D)[0] == "euclidean"  # dense
    neg = S.copy()
    neg.data[0] = -1.0
    metric, how = graph.resolve_metric("auto", neg)
    assert metric == "euclidean" and "negative" in how
    # rows at unit length already: the same graph, and a model LIBSVM can serve
    metric, how = graph.resolve_metric("auto", US)
    assert metric == "euclidean" and "unit length already" in how
    assert graph.resolve_metric("auto", kernels.unit_rows(US * 3.0))[0] == "euclidean"
    assert graph.resolve_metric("auto", sp.vstack([US, 2 * US[:1]]))[0] == "cosine"
    assert graph.resolve_metric("euclidean", S) == ("euclidean", "given")
    assert graph.resolve_metric("cosine", D) == ("cosine", "given")


@pytest.mark.parametrize("algo", ["lapsvm", "laprls", "tvrls", "cheeger-rls"])
def test_cosine_is_euclidean_on_unit_rows_and_predicts_on_raw_rows(algo):
    """A cosine fit on rows of any lengths is the Euclidean fit on the same rows at unit
    length (same graph, kernel, coefficients), and its model gives a row the same value at
    any positive length."""
    data = read_dataset(str(SAMPLES / "pcmac.train"))
    X = _scaled_rows(data.X)
    y = data.y
    fit = ALGORITHMS[algo].fit
    params = ALGORITHMS[algo].defaults()
    cos = fit(X, y, None, {**params, "graph_metric": "auto"})
    euc = fit(kernels.unit_rows(X), y, None, {**params, "graph_metric": "euclidean"})
    assert cos.params["graph_metric"] == "cosine" and euc.params["graph_metric"] == "euclidean"
    assert cos.function.unit_rows and not euc.function.unit_rows
    assert cos.function.kernel == euc.function.kernel
    np.testing.assert_allclose(cos.function.coef, euc.function.coef, rtol=1e-9, atol=1e-12)
    test = read_dataset(str(SAMPLES / "pcmac.test"), n_features=data.X.shape[1]).X
    F = cos.decision_function(test)
    np.testing.assert_allclose(F, euc.decision_function(kernels.unit_rows(test)), rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_allclose(F, cos.decision_function(_scaled_rows(test, seed=5)),
                               rtol=1e-9, atol=1e-12)
    # the model file keeps it
    again = model_from_text(model_to_text(cos), "m")
    assert again.function.unit_rows
    np.testing.assert_array_equal(again.decision_function(test), F)


def _hidden_labels() -> np.ndarray:
    """The true labels of pcmac.train's unlabeled rows: its rows are the 50 labeled and the
    first 450 unlabeled rows of the shared pcmac-svmlin split (sample_data/make_samples.py),
    whose train.truth holds every row's label."""
    rows = shared("bench", "pcmac-svmlin", "train.svm").read_text().splitlines()
    truth = shared("bench", "pcmac-svmlin", "train.truth").read_text().split()
    hidden = [float(t) for ln, t in zip(rows, truth) if ln.startswith("0 ")]
    return np.array(hidden[:450])


def test_cosine_helps_where_row_lengths_vary_through_the_commands(tmp):
    """pcmac's 50 labels and 450 unlabeled rows with document lengths spread 30x: the
    Euclidean kNN graph links rows by length, the cosine one (auto here) by content; the
    model scales new rows too, so ssl-predict on the same rows at other lengths repeats -l."""
    data = read_dataset(str(SAMPLES / "pcmac.train"))
    unl = data.y == 0
    _write(tmp / "raw.svm", _scaled_rows(data.X), data.y)
    _write(tmp / "u.svm", _scaled_rows(data.X, seed=9)[unl], np.zeros(unl.sum()))
    right = {}
    for metric in ("auto", "euclidean"):
        model = tmp / f"{metric}.m"
        r = run("ssl-train", "-a", "lapsvm", "--check", "none", "--graph-metric", metric,
                "-l", tmp / f"{metric}.l", "--values", tmp / "raw.svm", model, check=0)
        text = model.read_text()
        if metric == "auto":
            assert "lapsvm: graph metric cosine (auto: sparse non-negative rows" in r.stderr
            assert "param graph_metric cosine\n" in text and "kernel_rows unit\n" in text
        else:
            assert "graph metric" not in r.stderr and "kernel_rows" not in text
            assert "param graph_metric euclidean\n" in text
        values = np.loadtxt(tmp / f"{metric}.l")[:, 1]  # label, value
        assert values.size == unl.sum() == 450
        p = run("ssl-predict", "--values", tmp / "u.svm", model, tmp / "p", check=0)
        if metric == "auto":
            np.testing.assert_allclose(np.loadtxt(tmp / "p")[:, 1], values, rtol=1e-6,
                                       atol=1e-9)
        right[metric] = float(np.mean(np.where(values > 0, 1.0, -1.0) == _hidden_labels()))
        assert p.returncode == 0
    assert right["auto"] >= 0.85 and right["euclidean"] <= 0.75, right
    # a cosine model has no LIBSVM form (its predictor takes rows as given)
    r = run("ssl-export", "-f", "libsvm", tmp / "auto.m", tmp / "x", check=1)
    assert "--graph-metric cosine" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp / "x").exists()
    run("ssl-export", "-q", "-f", "libsvm", tmp / "euclidean.m", tmp / "x", check=0)


def test_model_file_checks_kernel_rows(tmp):
    data = read_dataset(str(SAMPLES / "pcmac.train"))
    m = ALGORITHMS["lapsvm"].fit(data.X, data.y, None, {**ALGORITHMS["lapsvm"].defaults(),
                                                        "graph_metric": "cosine"})
    text = model_to_text(m)
    assert text.count("kernel_rows unit\n") == 1
    (tmp / "bad").write_text(text.replace("kernel_rows unit\n", "kernel_rows half\n"))
    with pytest.raises(Exception, match="'kernel_rows' takes one value, unit"):
        read_model(str(tmp / "bad"))


# --------------------------------------------------------------------------- scaled (issue 50)

def _units(seed=0, n=120):
    """Two Gaussian classes in 6 features, two of them then given in other units (×1000 and
    ×300): raw distances follow those two columns alone."""
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    X = rng.normal(size=(n, 6)) + 1.2 * y[:, None] * np.array([1, 1, 1, 1, 0, 0])
    X[:, 4] *= 1000.0
    X[:, 5] *= 300.0
    return X, y


def test_columns_of_other_units_are_scaled_by_their_ranges():
    X, _ = _units()
    metric, how = graph.resolve_metric("auto", X)
    assert metric == "scaled" and "times the median one" in how
    scale = graph.metric_scale(metric, X)
    np.testing.assert_allclose(scale, 1.0 / (X.max(axis=0) - X.min(axis=0)), rtol=1e-15)
    S = kernels.scale_columns(X, scale)
    np.testing.assert_allclose(S.max(axis=0) - S.min(axis=0), 1.0, rtol=1e-12)
    # sparse storage: the same factors (an unstored entry is a 0 of its column), CSR kept
    Xs = sp.csr_matrix(np.where(np.abs(X) < 0.5, 0.0, X))
    np.testing.assert_allclose(kernels.column_ranges(Xs), kernels.column_ranges(Xs.toarray()))
    Ss = kernels.scale_columns(Xs, scale)
    assert sp.issparse(Ss) and Ss.nnz == Xs.nnz
    np.testing.assert_allclose(Ss.toarray(), kernels.scale_columns(Xs.toarray(), scale))
    # ranges within 10 of the median: as given (a pixel's small range is no unit of its own)
    P = np.random.default_rng(1).uniform(size=(50, 20))
    P[:, 3] *= 0.001
    assert graph.resolve_metric("auto", P)[0] == "euclidean"
    assert graph.resolve_metric("scaled", P) == ("scaled", "given")
    assert graph.metric_scale("euclidean", X) is None


@pytest.mark.parametrize("algo", ["lapsvm", "cheeger-rls"])
def test_a_scaled_fit_is_the_fit_on_scaled_columns_and_predicts_on_raw_ones(algo, tmp):
    X, y = _units()
    y_train = y.copy()
    y_train[10:] = 0.0
    fit, params = ALGORITHMS[algo].fit, ALGORITHMS[algo].defaults()
    auto = fit(X, y_train, None, {**params, "graph_metric": "auto"})
    scale = graph.metric_scale("scaled", X)
    given = fit(kernels.scale_columns(X, scale), y_train, None,
                {**params, "graph_metric": "euclidean"})
    assert auto.params["graph_metric"] == "scaled"
    np.testing.assert_array_equal(auto.function.column_scale, scale)
    np.testing.assert_allclose(auto.function.coef, given.function.coef, rtol=1e-9, atol=1e-12)
    Xt, yt = _units(seed=3)
    F = auto.decision_function(Xt)  # raw test rows, scaled by the model
    np.testing.assert_allclose(F, given.decision_function(kernels.scale_columns(Xt, scale)),
                               rtol=1e-9, atol=1e-12)
    # the scaling is what makes the fit: raw distances follow the two loud columns
    raw = fit(X, y_train, None, {**params, "graph_metric": "euclidean"})
    right = np.mean(auto.predict(Xt) == yt)
    assert right >= 0.85 > np.mean(raw.predict(Xt) == yt) + 0.1, (right,
                                                                  np.mean(raw.predict(Xt) == yt))
    # the model file keeps the factors; ssl-predict repeats the values; no LIBSVM form
    text = model_to_text(auto)
    assert text.count("kernel_scale ") == 1 and "param graph_metric scaled\n" in text
    again = model_from_text(text, "m")
    np.testing.assert_array_equal(again.function.column_scale, scale)
    np.testing.assert_array_equal(again.decision_function(Xt), F)
    (tmp / "m").write_text(text)
    _write(tmp / "t.svm", Xt, yt)
    run("ssl-predict", "--values", tmp / "t.svm", tmp / "m", tmp / "p", check=0)
    np.testing.assert_allclose(np.loadtxt(tmp / "p")[:, 1], F[:, 0], rtol=1e-9, atol=1e-9)
    r = run("ssl-export", "-f", "libsvm", tmp / "m", tmp / "x", check=1)
    assert "--graph-metric scaled" in r.stderr and not (tmp / "x").exists()
    (tmp / "bad").write_text(re.sub(r"kernel_scale \S+", "kernel_scale -1", text, count=1))
    with pytest.raises(Exception, match="column factor -1 is out of range"):
        read_model(str(tmp / "bad"))
    (tmp / "bad").write_text(text.replace("kernel_scale ", "kernel_scale 1 "))
    with pytest.raises(Exception, match="one factor per feature, 1 to 6"):
        read_model(str(tmp / "bad"))
