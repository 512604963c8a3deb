"""Model files: exact round trips for every model kind, and every malformed file refused."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import shared

from ssl_svm.formats.errors import DataError
from ssl_svm.formats.model_file import model_from_text, model_to_text, read_model, write_model
from ssl_svm.formats.svmlight import read_dataset
from ssl_svm.solvers.kernels import KernelSpec
from ssl_svm.solvers.models import KernelExpansion, Model
from ssl_svm.solvers.registry import ALGORITHMS


def trained(name, path, **over):
    d = read_dataset(str(path))
    lab = d.y != 0
    params = {**ALGORITHMS[name].defaults(), **over}
    return ALGORITHMS[name].fit(d.X[lab], d.y[lab], d.cost[lab], params), d


def assert_bit_identical(a: Model, b: Model, X):
    Fa, Fb = a.decision_function(X), b.decision_function(X)
    assert Fa.tobytes() == Fb.tobytes()
    assert np.array_equal(a.predict(X), b.predict(X))


def test_linear_binary_round_trip(tmp):
    m, d = trained("svm", shared("bench", "pcmac-svmlin", "train.svm"), **{"lambda": 0.001})
    write_model(m, str(tmp / "m"))
    m2 = read_model(str(tmp / "m"))
    assert m2.algorithm == "svm" and m2.labels == [1, -1] and m2.n_features == m.n_features
    assert m2.params == m.params
    assert m2.stats["objective"] == m.stats["objective"]
    assert m2.function.W.tobytes() == m.function.W.tobytes()
    assert m2.function.b.tobytes() == m.function.b.tobytes()
    assert_bit_identical(m, m2, d.X)
    assert model_to_text(m2) == model_to_text(m)


def test_one_vs_rest_round_trip(tmp):
    m, d = trained("rls", shared("datasets", "shuttle", "shuttle.t"), **{"lambda": 0.1})
    assert m.labels == [1, 2, 3, 4, 5, 6, 7] and m.n_functions == 7
    write_model(m, str(tmp / "m"))
    assert_bit_identical(m, read_model(str(tmp / "m")), d.X)


def test_kernel_expansion_round_trip(tmp):
    rng = np.random.default_rng(0)
    rows = sp.random(12, 9, density=0.5, random_state=rng, format="csr")
    rows.data = rng.normal(size=rows.nnz) * 1e-3 ** rng.integers(0, 3, rows.nnz)
    X = sp.random(50, 9, density=0.5, random_state=rng, format="csr")
    for spec, k, labels in ((KernelSpec("rbf", gamma=0.37), 1, [2, 1]),
                            (KernelSpec("poly", gamma=0.5, degree=3, coef0=1.25), 3, [0, 5, 9]),
                            (KernelSpec("linear"), 1, [1, -1])):
        if 0 in labels:
            labels = [7, 5, 9]
        m = Model("lapsvm", labels, 9,
                  KernelExpansion(spec, rows, rng.normal(size=(12, k)), rng.normal(size=k)),
                  params={"gamma_a": 1e-6, "neighbors": 6, "laplacian": "normalized"},
                  stats={"objective": [0.1] * k, "iterations": [3] * k})
        write_model(m, str(tmp / "k"))
        m2 = read_model(str(tmp / "k"))
        assert m2.function.kernel == spec
        assert m2.params == m.params
        assert_bit_identical(m, m2, X)



def test_expansion_rows_out_of_order_are_written_in_order(tmp):
    """A CSR array a Python user built (indices in any order, a duplicate entry) as the
    expansion rows: the file lists each row's features increasing, once each, so it loads
    and predicts as the model does."""
    Z = sp.csr_matrix((np.array([0.5, 2.0, -1.0, 0.25, 0.25]), np.array([3, 0, 2, 1, 1]),
                       np.array([0, 3, 5])), shape=(2, 4))
    assert not Z.has_canonical_format
    m = Model("lapsvm", [1, -1], 4, KernelExpansion(KernelSpec("rbf", gamma=0.3), Z,
                                                    np.array([[1.0], [-2.0]]), np.array([0.1])))
    write_model(m, str(tmp / "k"))
    m2 = read_model(str(tmp / "k"))
    np.testing.assert_array_equal(m2.function.rows.toarray(), Z.toarray())
    X = sp.csr_matrix(np.random.default_rng(0).normal(size=(6, 4)))
    np.testing.assert_allclose(m2.decision_function(X), m.decision_function(X), rtol=1e-15)
    assert not Z.has_canonical_format  # the model's own rows are left as they were

def test_write_is_atomic_and_leaves_no_temp_files(tmp):
    m, _ = trained("svm", shared("bench", "a9a-100", "train.svm"))
    write_model(m, str(tmp / "m"))
    assert sorted(p.name for p in tmp.iterdir()) == ["m"]


def test_kernel_decision_equals_direct_formula():
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(7, 4))
    X = rng.normal(size=(5, 4))
    coef = rng.normal(size=(7, 1))
    spec = KernelSpec("rbf", gamma=0.3)
    m = Model("k", [1, -1], 4, KernelExpansion(spec, sp.csr_matrix(Z), coef, np.array([0.2])))
    K = np.exp(-0.3 * ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1))
    np.testing.assert_allclose(m.decision_function(sp.csr_matrix(X))[:, 0],
                               K @ coef[:, 0] + 0.2, rtol=1e-12)


GOOD = """ssl-model 1
algorithm svm
kind linear
n_features 3
labels 1 -1
functions 1
param lambda 0.5
stat objective 1.25
intercept 0.5
weights 2
1 0.25
3 -1.5
end
"""


def test_good_text_parses():
    m = model_from_text(GOOD, "m")
    assert m.function.W[:, 0].tolist() == [0.25, 0.0, -1.5]
    assert m.params == {"lambda": 0.5}


def test_the_version_line_is_written_and_read_and_older_files_without_it_load():
    from importlib.metadata import version

    text = model_to_text(model_from_text(GOOD, "m"))
    assert text.splitlines()[:2] == ["ssl-model 1", f"version {version('ssl-svm')}"]
    assert text.replace(f"version {version('ssl-svm')}\n", "") == GOOD  # the older layout
    newer = GOOD.replace("ssl-model 1\n", "ssl-model 1\nversion 9.9.9\n")
    assert model_from_text(newer, "m").params == {"lambda": 0.5}
    with pytest.raises(DataError, match="m:2: 'version' needs one value"):
        model_from_text(GOOD.replace("ssl-model 1\n", "ssl-model 1\nversion\n"), "m")


BAD = [
    ("", "m: empty model file"),
    ("svm_type c_svc\nkernel_type rbf\n",
     "m:1: not an ssl-model file (the first line starts with 'svm_type') (it looks like a "
     "LIBSVM/liblinear model)"),
    ("0.25\n-1.5\n", "m:1: not an ssl-model file (the first line starts with '0.25')"),
    (GOOD.replace("ssl-model 1", "ssl-model 2"),
     "m:1: model format version 2 is newer than this program reads (version 1); upgrade ssl-svm"),
    (GOOD.replace("ssl-model 1", "ssl-model one"),
     "m:1: malformed version line (expected 'ssl-model 1')"),
    ("\n".join(GOOD.splitlines()[:11]) + "\n",
     "m: truncated model file (ends before the 2 weight lines)"),
    ("\n".join(GOOD.splitlines()[:12]) + "\n", "m: truncated model file (ends before the final "
     "'end' line)"),
    ("\n".join(GOOD.splitlines()[:4]) + "\n", "m: truncated model file (ends before the "
     "'labels' line)"),
    (GOOD.replace("kind linear", "kind tree"), "m:3: unknown model kind 'tree' (expected linear "
     "or kernel)"),
    (GOOD.replace("n_features 3", "n_features x"), "m:4: malformed n_features 'x'"),
    (GOOD.replace("labels 1 -1", "labels 1"), "m:5: 'labels' needs at least two distinct labels"),
    (GOOD.replace("functions 1", "functions 2"), "m:6: 2 functions do not fit 2 labels (binary: "
     "1, one-vs-rest: one per label)"),
    (GOOD.replace("3 -1.5", "4 -1.5"), "m:12: feature index 4 exceeds n_features 3"),
    (GOOD.replace("3 -1.5", "1 -1.5"), "m:12: feature indices of the weight lines must increase"),
    (GOOD.replace("3 -1.5", "3 nan"), "m:12: weight 'nan' is not finite"),
    (GOOD.replace("3 -1.5", "3 -1.5 2"), "m:12: a weight line needs a feature index and 1 weight"),
    (GOOD.replace("intercept 0.5", "intercept"), "m:9: 'intercept' needs 1 value, found 0"),
    (GOOD.replace("param lambda 0.5", "param lambda"), "m:7: 'param' needs a name and one value"),
    (GOOD + "extra\n", "m:14: unexpected lines after 'end'"),
    (GOOD.replace("end", "fin"), "m:13: expected the final 'end' line"),
    (GOOD.replace("algorithm svm", "algo svm"), "m:2: expected 'algorithm', found 'algo'"),
]


@pytest.mark.parametrize("text,message", BAD)
def test_malformed_models_are_refused(text, message):
    with pytest.raises(DataError) as e:
        model_from_text(text, "m")
    assert str(e.value) == message


def test_binary_and_missing_files(tmp):
    (tmp / "bin").write_bytes(b"\x00\xff\x10garbage")
    with pytest.raises(DataError, match="not an ssl-model file"):
        read_model(str(tmp / "bin"))
    with pytest.raises(DataError, match="cannot open model: No such file or directory"):
        read_model(str(tmp / "missing"))
