"""The check's three verdicts on constructed data, where the truth is known: a fit that is
worse than the supervised svm (harm proven), one that labels the unlabeled rows as the svm
does (no harm), one the labeled rows cannot decide (unverified, with a bound)."""

import warnings

import numpy as np
import pytest

import ssl_svm


def _fit(est, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    return est, [w for w in caught if issubclass(w.category, ssl_svm.SSLWarning)]


def _loss(est, X, y, truth):
    """The fit's error on the unlabeled rows minus the supervised svm's, in points."""
    u = y == 0
    svm = ssl_svm.SVM(unlabeled_label=0).fit(X, y)
    return 100.0 * (np.mean(est.predict(X[u]) != truth[u]) - np.mean(svm.predict(X[u]) != truth[u]))


def _labeled(truth, labels, rng):
    y = np.zeros(truth.size)
    while True:
        lab = rng.choice(truth.size, labels, replace=False)
        if np.unique(truth[lab]).size == 2:
            y[lab] = truth[lab]
            return y


def test_a_fit_that_follows_a_gap_the_classes_cut_across_is_proven_worse():
    """Two long blobs with a gap between them, the classes split by a vertical line through
    both (the gallery's "when it hurts"): the graph cut follows the gap."""
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal([0, -2.5], [2.0, 0.8], (300, 2)),
                   rng.normal([0, 2.5], [2.0, 0.8], (300, 2))])
    truth = np.where(X[:, 0] > 0, 1, -1)
    y = np.zeros(600)
    lab = rng.choice(600, 100, replace=False)
    y[lab] = truth[lab]
    est, said = _fit(ssl_svm.CheegerRLS(unlabeled_label=0, check="cv", random_state=0), X, y)
    c = est.check_
    assert c.verdict == "harm" and c.harm_p <= 0.10 and c.worse > c.better
    hurt = [w for w in said if w.category is ssl_svm.UnlabeledHurtWarning]
    assert len(hurt) == 1 and "harm proven" in str(hurt[0].message)
    assert not [w for w in said if w.category is ssl_svm.UnverifiedWarning]
    loss = _loss(est, X, y, truth)
    assert loss > 2.0 and c.upper_bound >= loss  # really worse, and by no more than said


def test_a_fit_that_labels_the_unlabeled_rows_as_the_svm_does_is_no_harm():
    """Classes 6 standard deviations apart: the svm and lapsvm agree on every unlabeled row,
    so lapsvm cannot be worse there, whatever 40 labeled rows would say."""
    rng = np.random.default_rng(2)
    truth = np.where(rng.random(600) < 0.5, 1, -1)
    X = rng.normal(0, 1, (600, 5))
    X[:, 0] += 6 * truth
    y = np.zeros(600)
    lab = rng.choice(600, 40, replace=False)
    y[lab] = truth[lab]
    est, said = _fit(ssl_svm.LapSVM(unlabeled_label=0, check="cv", random_state=0), X, y)
    c = est.check_
    assert c.verdict == "no harm" and c.disagreement == 0.0 and c.upper_bound == 0.0
    assert c.bound_from == "unlabeled"
    assert not [w for w in said if w.category in (ssl_svm.UnlabeledHurtWarning,
                                                  ssl_svm.UnverifiedWarning)]
    assert _loss(est, X, y, truth) == 0.0


def test_a_fit_ten_labels_cannot_judge_is_unverified_with_its_bound():
    """Two moons, 10 labeled rows: lapsvm is right on 3 held-out rows the svm gets wrong and
    wrong on none, which 10 rows cannot prove; it and the svm disagree on 15.6 % of the
    unlabeled rows, the loss the check cannot rule out (the truth: lapsvm is 15 points
    better)."""
    rng = np.random.default_rng(0)
    truth = np.where(rng.random(600) < 0.5, 1, -1)
    t = rng.uniform(0, np.pi, 600)
    X = np.where(truth[:, None] > 0, np.c_[np.cos(t), np.sin(t)],
                 np.c_[1 - np.cos(t), 0.5 - np.sin(t)]) + 0.12 * rng.standard_normal((600, 2))
    y = _labeled(truth, 10, rng)
    est, said = _fit(ssl_svm.LapSVM(unlabeled_label=0, check="cv", random_state=0), X, y)
    c = est.check_
    assert c.verdict == "unverified" and c.n == 10 and c.harm_p > 0.10
    assert c.upper_bound == pytest.approx(c.disagreement) and c.upper_bound > 2.0
    unverified = [w for w in said if w.category is ssl_svm.UnverifiedWarning]
    assert len(unverified) == 1 and not issubclass(ssl_svm.UnverifiedWarning,
                                                   ssl_svm.UnlabeledHurtWarning)
    text = str(unverified[0].message)
    assert f"up to {c.upper_bound:.1f} points worse" in text
    assert "10 held-out rows are too few to bound it" in text and "label more rows" in text
    assert _loss(est, X, y, truth) <= c.upper_bound
