"""ssl-train --probability / ssl-predict --probability: calibration, agreement with the label,
model file round trip and errors."""

import numpy as np
import pytest
from conftest import SAMPLES, run, shared, ssl_train
from scipy.special import expit

from ssl_svm.formats.model_file import model_to_text, read_model
from ssl_svm.solvers.calibration import cross_entropy, fit_slope, targets

PCMAC = shared("bench", "pcmac-svmlin")


def read_probabilities(path, header=None):
    """(labels, values) of a prediction file; ``header``: the model's labels, which a
    --probability file names first (``labels 1 -1``, as svm-predict -b 1 writes)."""
    rows = [ln.split() for ln in open(path).read().splitlines()]
    if header is not None:
        assert rows[0] == ["labels", *map(str, header)], rows[0]
        rows = rows[1:]
    return np.array([int(r[0]) for r in rows]), np.array([[float(v) for v in r[1:]]
                                                          for r in rows])


def test_fit_slope_minimises_the_smoothed_cross_entropy():
    rng = np.random.default_rng(0)
    f = rng.normal(size=(400, 1)) * 2
    y_idx = np.where(rng.random(400) < expit(1.7 * f[:, 0]), 0, 1)  # true slope 1.7
    a, loss = fit_slope(f, y_idx, 2)
    T = targets(y_idx, 2)
    grid = np.exp(np.linspace(np.log(0.01), np.log(100), 20001))
    brute = grid[np.argmin([cross_entropy(f, T, g) for g in grid])]
    assert a == pytest.approx(brute, rel=1e-3) and 1.2 < a < 2.3
    assert loss == pytest.approx(cross_entropy(f, T, a))
    # separable values: the smoothed targets (3/4 and 1/4 here) keep the slope finite
    fs, ys = np.array([[-3.0], [-1.0], [1.0], [2.0]]), np.array([1, 1, 0, 0])
    a_sep, _ = fit_slope(fs, ys, 2)
    Ts = targets(ys, 2)
    assert Ts[0, 0] == 0.25 and Ts[2, 0] == 0.75
    assert a_sep == pytest.approx(grid[np.argmin([cross_entropy(fs, Ts, g) for g in grid])],
                                  rel=1e-3)


def test_binary_probabilities_agree_with_the_label(tmp):
    r = ssl_train("-a", "tsvm", "-W", "0.001", "--probability", PCMAC / "train.svm",
            tmp / "m", check=0)
    assert "probability calibration: slope A = " in r.stderr
    assert "5-fold cross-validated decision values of 50 labeled rows" in r.stderr
    m = read_model(str(tmp / "m"))
    assert m.probability is not None and m.probability > 0
    assert model_to_text(m) == (tmp / "m").read_text()  # the slope round-trips exactly
    run("ssl-predict", "-q", "--probability", PCMAC / "test.svm", tmp / "m", tmp / "p", check=0)
    run("ssl-predict", "-q", "--values", PCMAC / "test.svm", tmp / "m", tmp / "v", check=0)
    labels, P = read_probabilities(tmp / "p", header=m.labels)
    lab_v, V = read_probabilities(tmp / "v")
    assert P.shape == (486, 2)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    assert np.array_equal(labels, lab_v)  # the label is the decision values' label
    assert np.array_equal(labels, np.array(m.labels)[np.argmax(P, axis=1)])
    np.testing.assert_allclose(P[:, 0], expit(m.probability * V[:, 0]), rtol=1e-12)
    # calibrated: on the test rows the log loss beats a coin and the probabilities of the
    # predicted label average near the accuracy
    truth = np.array([int(ln.split()[0]) for ln in open(PCMAC / "test.svm")])
    p_true = np.where(truth == m.labels[0], P[:, 0], P[:, 1])
    assert -np.mean(np.log(p_true)) < 0.5 * np.log(2)
    acc = np.mean(labels == truth)
    assert abs(np.mean(P.max(axis=1)) - acc) < 0.06, (np.mean(P.max(axis=1)), acc)
    par = run("ssl-predict", "-q", "--probability", "-j", "2", "--chunk-mb", "1",
              PCMAC / "test.svm", tmp / "m", "-", check=0)
    assert par.stdout == (tmp / "p").read_text()


def test_multiclass_probabilities_sum_to_one(tmp):
    import gzip
    import random

    rows = [ln for ln in gzip.open(shared("datasets", "usps", "usps.gz"), "rt")
            if ln.split()[0] in ("3", "5", "8")]
    random.Random(0).shuffle(rows)
    train = [(ln if i < 90 else "0 " + ln.split(" ", 1)[1]) for i, ln in enumerate(rows[:900])]
    (tmp / "d.svm").write_text("".join(train))
    (tmp / "t.svm").write_text("".join(rows[900:1300]))
    ssl_train("-q", "-a", "lapsvm", "-g", "0.03125", "--probability", tmp / "d.svm",
        tmp / "m", check=0)
    m = read_model(str(tmp / "m"))
    r = run("ssl-predict", "--probability", tmp / "t.svm", tmp / "m", tmp / "p", check=0)
    labels, P = read_probabilities(tmp / "p", header=m.labels)
    assert P.shape == (400, 3)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert np.array_equal(labels, np.array(m.labels)[np.argmax(P, axis=1)])
    plain = run("ssl-predict", "-q", tmp / "t.svm", tmp / "m", "-", check=0).stdout.split()
    assert [str(v) for v in labels] == plain
    assert "Accuracy = " in r.stderr


def test_probability_errors(tmp):
    ssl_train("-q", SAMPLES / "pcmac.train", tmp / "m", check=0)
    r = run("ssl-predict", "--probability", SAMPLES / "pcmac.train", tmp / "m", check=1)
    assert r.stderr.strip() == (f"ssl-predict: error: {tmp / 'm'}: the model has no probability "
                                "calibration: train it with ssl-train --probability")
    r = run("ssl-predict", "--probability", "--values", SAMPLES / "pcmac.train", tmp / "m",
            check=2)
    assert ("ssl-predict: error: give --values (decision values) or --probability, not both"
            in r.stderr)
    r = ssl_train("-v", "3", "--probability", SAMPLES / "pcmac.train", check=2)
    assert ("ssl-train: error: -v writes no model, so --probability has nothing to calibrate"
            in r.stderr)
    r = ssl_train("-a", "usmo", "--negatives-as-unlabeled", "--probability",
            SAMPLES / "pcmac.train", tmp / "u", check=2)
    assert "usmo's labeled rows are all positive" in r.stderr
    (tmp / "one.svm").write_text("1 1:1\n1 1:2\n-1 1:-1\n0 1:0.5\n")
    r = ssl_train("-a", "tsvm", "--probability", tmp / "one.svm", tmp / "o", check=1)
    assert r.stderr.strip().endswith("one.svm: --probability cross-validates the labeled rows, "
                                     "but class -1 has 1 labeled row; it needs at least 2 per "
                                     "class")
    assert not (tmp / "o").exists()


@pytest.mark.parametrize("line,message", [
    ("probability -1\n", "probability slope -1 is out of range [0, 1e+15]"),
    ("probability 0\n", "the probability slope must be positive"),
    ("probability nan\n", "probability slope 'nan' is not finite"),
    ("probability 1 2\n", "'probability' needs one value, once"),
    ("probability 2\nprobability 2\n", "'probability' needs one value, once")])
def test_model_loader_checks_the_probability_line(tmp, line, message):
    ssl_train("-q", SAMPLES / "pcmac.train", tmp / "m", check=0)
    text = (tmp / "m").read_text().replace("intercept ", line + "intercept ", 1)
    (tmp / "bad").write_text(text)
    r = run("ssl-predict", SAMPLES / "pcmac.train", tmp / "bad", check=1)
    assert message in r.stderr, r.stderr


def test_libsvm_b_flag_is_probability(tmp):
    """LIBSVM's -b 1 / -b 0 on both commands: the same files as --probability / without."""
    ssl_train("-q", "-a", "svm", "-b", "1", SAMPLES / "pcmac.train", tmp / "b", check=0)
    ssl_train("-q", "-a", "svm", "--probability", SAMPLES / "pcmac.train", tmp / "p",
        check=0)
    assert (tmp / "b").read_bytes() == (tmp / "p").read_bytes()
    ssl_train("-q", "-a", "svm", "-b", "0", SAMPLES / "pcmac.train", tmp / "z", check=0)
    assert read_model(str(tmp / "z")).probability is None
    b = run("ssl-predict", "-q", "-b", "1", SAMPLES / "pcmac.test", tmp / "b", "-", check=0)
    p = run("ssl-predict", "-q", "--probability", SAMPLES / "pcmac.test", tmp / "b", "-",
            check=0)
    assert b.stdout == p.stdout and b.stdout.startswith("labels 1 -1\n")
    r = run("ssl-predict", "-b", "0", "--probability", SAMPLES / "pcmac.test", tmp / "b",
            check=2)
    assert "give one" in r.stderr
