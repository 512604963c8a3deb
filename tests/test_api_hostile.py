"""Hostile values at the Python API's public boundary: a ValueError or TypeError (or the
package's own error) naming the parameter, never an AttributeError, KeyError, IndexError or
StopIteration from inside a solver."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SAMPLES

import ssl_svm
from ssl_svm import pipeline, training
from ssl_svm.estimators import ESTIMATORS
from ssl_svm.formats.svmlight import read_dataset
from ssl_svm.solvers.registry import ALGORITHMS

PCMAC = SAMPLES / "pcmac.train"


@pytest.fixture(scope="module")
def rows():
    return read_dataset(str(PCMAC))


def _prepared(rows, name):
    return training.prepare(ALGORITHMS[name], rows)


@pytest.mark.parametrize("name", ["svm", "tsvm", "lapsvm", "tvrls"])
def test_a_params_dict_with_keys_left_out_takes_the_defaults(rows, name):
    """{} (or any dict missing keys) used to raise KeyError (e.g. 'graph_metric') inside the
    solver: the parameters left out take their defaults, as ALGORITHMS[name].defaults()."""
    algo = ALGORITHMS[name]
    full = pipeline.train(_prepared(rows, name), pipeline.Request(algo, algo.defaults()))
    part = pipeline.train(_prepared(rows, name), pipeline.Request(algo, {}))
    # (allclose: the second fit of a process may run on numba where the first ran on numpy)
    np.testing.assert_allclose(part.model.decision_function(rows.X),
                               full.model.decision_function(rows.X), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("change,error,text", [
    ({"algo": "tsvm"}, TypeError, "Request.algo must be a solver"),
    ({"algo": None}, TypeError, "Request.algo must be a solver"),
    ({"params": "lambda=1"}, TypeError, "Request.params must be a dict"),
    ({"params": {"gamma": 1}}, ValueError, "tsvm has no parameter 'gamma'"),
    ({"params": {"lambda": "x"}}, ValueError, "Request.params['lambda']"),
    ({"params": {"lambda": -1.0}}, ValueError, "Request.params['lambda']"),
    ({"run": None}, TypeError, "Request.run must be a dict"),
    ({"run": {"max_memory": 1}}, ValueError, "takes no run option 'max_memory'"),
    ({"init": "model"}, TypeError, "Request.init must be None or a model"),
    ({"init": 3}, TypeError, "Request.init must be None or a model"),
    ({"check": "sometimes"}, ValueError, "Request.check must be one of"),
    ({"seed": "1"}, TypeError, "Request.seed must be an int"),
])
def test_a_wrong_request_names_its_field(rows, change, error, text):
    algo = ALGORITHMS["tsvm"]
    kw = {"algo": algo, "params": algo.defaults(), **change}
    with pytest.raises(error) as e:
        pipeline.train(_prepared(rows, "tsvm"), pipeline.Request(**kw))
    assert text in str(e.value)


@pytest.mark.parametrize("bad", [None, "rows", {"X": 1}, 3])
def test_wrong_rows_are_a_type_error(rows, bad):
    algo = ALGORITHMS["svm"]
    with pytest.raises(TypeError, match="rows must be a ssl_svm.training.Training"):
        pipeline.train(bad, pipeline.Request(algo, algo.defaults()))
    with pytest.raises(TypeError, match="request must be a ssl_svm.pipeline.Request"):
        pipeline.train(_prepared(rows, "svm"), {"algo": algo})


@pytest.mark.parametrize("grids,error", [
    ({"svm": "x"}, TypeError), ({"svm": ["lambda=1"]}, TypeError), (["svm"], TypeError),
    ("svm", TypeError), ({"svm": {"gamma": [1]}}, ValueError),
    ({"nosuch": {}}, ValueError),
])
def test_auto_grids_of_the_wrong_shape(grids, error):
    X, y = ssl_svm.load_svmlight(str(PCMAC))
    with pytest.raises(error, match="grids|has no parameter"):
        ssl_svm.Auto(grids=grids, unlabeled_label=0).fit(X, y)


@pytest.mark.parametrize("y,n_splits,error", [
    (np.zeros((20, 2)), 5, ValueError),  # 2-D: was an IndexError
    (np.r_[[1, -1] * 10], "5", TypeError),
    (np.r_[[1, -1] * 10], 2.5, TypeError),
    (None, 5, ValueError),
])
def test_semi_supervised_kfold_on_wrong_labels(y, n_splits, error):
    with pytest.raises(error, match="SemiSupervisedKFold"):
        list(ssl_svm.SemiSupervisedKFold(n_splits=n_splits).split(np.zeros((20, 2)), y))


@pytest.mark.parametrize("landmarks", [None, 10])
def test_rows_whose_distances_overflow_are_a_value_error(landmarks):
    """Values near 1e200 square to inf: the graph's auto choice used to raise StopIteration
    (a bare next() over the thresholds): now the package's NonFiniteError, a ValueError."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)) * 1e200
    y = np.r_[[1, 2] * 5, [-1] * 30]
    with np.errstate(all="ignore"), pytest.raises(ValueError, match="rescale the features"):
        ssl_svm.LapSVM(landmarks=landmarks).fit(X, y)


@pytest.mark.parametrize("prior", ["0.5 ", " 0.5", ""])
def test_a_prior_with_a_space_is_refused_at_fit(prior, tmp_path):
    """USMO(prior='0.5 ') fitted, then save() raised: the value is refused at fit."""
    X, y = ssl_svm.load_svmlight(str(PCMAC))
    with pytest.raises(ValueError, match=r"USMO\(prior=.*without spaces"):
        ssl_svm.USMO(prior=prior).fit(X, (y == 1).astype(int))


HOSTILE = [None, "x", "", " 1", [], {}, -1, 0, 1e308, float("nan"), float("inf"), True,
           object(), 2**70]


def _small():
    rng = np.random.default_rng(3)
    X = np.r_[rng.normal(-1, 0.6, size=(20, 2)), rng.normal(1, 0.6, size=(20, 2))]
    y = np.r_[[1] * 4, [-1] * 16, [2] * 4, [-1] * 16]
    return X, y


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_parameter_with_hostile_values(name):
    """Each constructor parameter of each estimator, set to a hostile value, then fit on small
    data: the fit succeeds (and predicts finite values) or raises ValueError or TypeError (the
    package's errors are ValueErrors), naming the parameter when it is the parameter's fault;
    never AttributeError, KeyError, IndexError, StopIteration or anything else."""
    import inspect
    import warnings

    cls = ESTIMATORS[name]
    X, y = _small()
    if cls.__name__ == "USMO":
        y = np.where(y == 1, 1, 0)
    names = list(inspect.signature(cls).parameters)
    rng = np.random.default_rng(len(name))
    for param in names:
        for value in rng.choice(np.array(HOSTILE, dtype=object), 4, replace=False):
            est = cls(**{param: value})
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.fit(X, y)
                    F = est.decision_function(X)
            except (ValueError, TypeError):
                continue
            except Exception as e:  # the contract's breach: say which value did it
                raise AssertionError(f"{cls.__name__}({param}={value!r}): "
                                     f"{type(e).__name__}: {e}") from e
            assert np.isfinite(F).all(), (param, value)


def test_auto_and_the_folds_with_hostile_values():
    """Auto's and SemiSupervisedKFold's parameters, each set to a hostile value: a fit or a
    ValueError/TypeError, nothing else."""
    import inspect
    import warnings

    X, y = _small()
    rng = np.random.default_rng(7)
    for param in inspect.signature(ssl_svm.Auto).parameters:
        for value in rng.choice(np.array(HOSTILE, dtype=object), 4, replace=False):
            kw = {"candidates": ["svm", "tsvm"], param: value}
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ssl_svm.Auto(**kw).fit(X, y).decision_function(X)
            except (ValueError, TypeError):
                continue
            except Exception as e:
                raise AssertionError(f"Auto({param}={value!r}): {type(e).__name__}: {e}") from e
    for param in inspect.signature(ssl_svm.SemiSupervisedKFold).parameters:
        for value in HOSTILE:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    list(ssl_svm.SemiSupervisedKFold(**{param: value}).split(X, y))
            except (ValueError, TypeError):
                continue
            except Exception as e:
                raise AssertionError(f"SemiSupervisedKFold({param}={value!r}): "
                                     f"{type(e).__name__}: {e}") from e
