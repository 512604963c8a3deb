"""ssl-tune -a auto and ssl_svm.Auto: one selection (ssl_svm.selection.auto) from both front
ends, the same winner and bytes; any number of labels; the threshold that allows for choosing
the best of several points; the label conventions that would train the wrong problem."""

import re
import warnings

import numpy as np
import pytest
from conftest import SAMPLES, run

import ssl_svm
from ssl_svm.selection import auto, rules

PCMAC = SAMPLES / "pcmac.train"
PCMAC_TEST = SAMPLES / "pcmac.test"


def few_labels(path, positives: int, negatives: int):
    """pcmac.train with only the first ``positives`` +1 and ``negatives`` -1 rows labeled."""
    out, pos, neg = [], 0, 0
    for line in PCMAC.read_text().splitlines():
        label, _, rest = line.partition(" ")
        if label == "+1":
            pos += 1
            label = label if pos <= positives else "0"
        elif label == "-1":
            neg += 1
            label = label if neg <= negatives else "0"
        out.append(f"{label} {rest}")
    path.write_text("\n".join(out) + "\n")
    return path


# --------------------------------------------------------------------------- the rule's parts

def test_the_folds_follow_the_smallest_class():
    y = np.r_[np.ones(3), -np.ones(9), np.zeros(20)]
    assert auto.fold_plan(y, 5) == (3, "class 1 has 3 labeled rows: 3-fold cross-validation "
                                       "instead of 5")
    assert auto.fold_plan(y, 2) == (2, None)
    y[1:3] = 0
    k, why = auto.fold_plan(y, 5)
    assert k == 0 and why.startswith("class 1 has 1 labeled row")
    # the class named as the file has it (class 0 under --unlabeled-label -1: code 2 inside)
    assert auto.fold_plan(np.r_[2.0, -np.ones(5)], 5, {2: 0})[1].startswith("class 0 has 1")


def test_max_t_grows_with_independent_points_not_with_copies():
    rng = np.random.default_rng(1)
    n = 200
    one = rng.choice([-100.0, 0.0, 100.0], size=(n, 1), p=[0.2, 0.6, 0.2])
    # one point: the single test's 1.645
    assert rules.max_t_threshold(one, 0) == rules.Z
    # eight copies of the same point: still one test (the bootstrap's quantile of it)
    assert rules.max_t_threshold(np.repeat(one, 8, axis=1), 0) == pytest.approx(rules.Z,
                                                                                abs=0.1)
    # eight independent points: near Bonferroni's 2.50 for 8 (max-T is a little below it)
    eight = rng.choice([-100.0, 0.0, 100.0], size=(n, 8), p=[0.2, 0.6, 0.2])
    z8 = rules.max_t_threshold(eight, 0)
    assert 2.1 < z8 <= rules.bonferroni_threshold(8) + 0.1
    assert rules.bonferroni_threshold(8) == pytest.approx(2.4977, abs=1e-4)
    # seeded: the same value again; points that never differ from the baseline do not count
    assert rules.max_t_threshold(eight, 0) == z8
    assert rules.max_t_threshold(np.c_[eight, np.zeros((n, 3))], 0) == z8


def test_the_selection_names_its_threshold():
    right = np.r_[np.full(90, 100.0), np.zeros(10)]
    svm = np.r_[np.full(85, 100.0), np.zeros(15)]
    d, se = rules.paired_difference(right, svm)
    assert 1.645 < d / se < 2.5
    scores = {"svm": 85.0, "tsvm": 90.0}
    # +5 points at 2.3 standard errors: taken at the single test's level ...
    assert rules.select(scores, {"svm": svm, "tsvm": right}).chosen == "tsvm"
    # ... not as the best of many points
    s = rules.select(scores, {"svm": svm, "tsvm": right}, z=2.6)
    assert s.chosen == "svm" and "it must exceed 2.6 standard errors" in s.text("accuracy",
                                                                                 scores)


# --------------------------------------------------------------------------- few labels

def test_one_labeled_row_in_a_class_keeps_the_svm_of_ssl_train(tmp):
    train = few_labels(tmp / "one.svm", 1, 5)
    r = run("ssl-tune", "-a", "auto", "--out", tmp / "auto.model", train, check=0)
    assert r.stdout.splitlines() == [
        "# kept the supervised svm at its settings: class 1 has 1 labeled row: no fold can "
        "hold it out and still train on it, so no candidate can be cross-validated and "
        "nothing can be checked", "best algorithm=svm"]
    run("ssl-train", "-a", "svm", train, tmp / "svm.model", check=0)
    assert (tmp / "auto.model").read_bytes() == (tmp / "svm.model").read_bytes()
    # the estimator: the same model, and the same words as a warning
    X, y = ssl_svm.load_svmlight(str(train))
    with pytest.warns(ssl_svm.UncheckedWarning, match="nothing can be checked"):
        clf = ssl_svm.Auto(unlabeled_label=0).fit(X, y)
    assert clf.folds_ == 0 and clf.best_estimator_.__class__ is ssl_svm.SVM
    assert [r["verdict"] for r in clf.selection_] == ["chosen", "not scored", "not scored",
                                                      "not scored"]
    clf.save(tmp / "py.model")
    assert (tmp / "py.model").read_bytes() == (tmp / "svm.model").read_bytes()


def test_two_labeled_rows_in_a_class_give_two_folds(tmp):
    train = few_labels(tmp / "two.svm", 2, 6)
    r = run("ssl-tune", "-a", "auto", "--out", tmp / "auto.model", train, check=0)
    assert "class 1 has 2 labeled rows: 2-fold cross-validation instead of 5" in r.stderr
    points = [x for x in r.stdout.splitlines() if x.startswith("algorithm=")]
    assert len(points) == 6 + 4 + 3 + 1  # every candidate's grid ran, on 2 folds
    assert r.stdout.splitlines()[-1].startswith("best algorithm=")
    X, y = ssl_svm.load_svmlight(str(train))
    with pytest.warns(ssl_svm.UncheckedWarning, match="2-fold cross-validation instead of 5"):
        clf = ssl_svm.Auto(unlabeled_label=0).fit(X, y)
    assert clf.folds_ == 2
    clf.save(tmp / "py.model")
    assert (tmp / "py.model").read_bytes() == (tmp / "auto.model").read_bytes()


def test_semi_supervised_kfold_takes_any_number_of_labels():
    from sklearn.model_selection import cross_val_score

    X, y = ssl_svm.load_svmlight(str(PCMAC))
    y = np.where(y == 0, -1, (y == 1).astype(int))
    lab1 = np.flatnonzero(y == 1)
    y[lab1[3:]] = -1  # class 1: 3 labeled rows
    cv = ssl_svm.SemiSupervisedKFold()
    assert cv.get_n_splits() == 5 and cv.get_n_splits(X, y) == 3
    with pytest.warns(ssl_svm.UncheckedWarning, match="3 splits instead of n_splits=5"):
        splits = list(cv.split(X, y))
    assert len(splits) == 3
    for train, test in splits:
        assert set(y[test]) == {0, 1}
        assert np.isin(np.flatnonzero(y == -1), train).all()
    with pytest.warns(ssl_svm.UncheckedWarning):
        scores = cross_val_score(ssl_svm.SVM(), X, y, cv=cv)
    assert scores.shape == (3,)
    # one labeled row of class 1: it trains in every split and is never tested
    y[lab1[1:3]] = -1
    with pytest.warns(ssl_svm.UncheckedWarning, match="class 1 has one labeled row"):
        splits = list(cv.split(X, y))
    assert len(splits) == 5
    for train, test in splits:
        assert lab1[0] in train and lab1[0] not in test
    with pytest.raises(ValueError, match="no class has two labeled rows"):
        list(cv.split(X[:3], np.array([0, 1, -1])))


# --------------------------------------------------------------------------- the two front ends

def test_auto_estimator_is_ssl_tune_auto_byte_for_byte(tmp):
    r = run("ssl-tune", "-q", "-a", "auto", "--out", tmp / "cli.model", PCMAC, check=0)
    cli_lines = [x.split(" time=")[0] for x in r.stdout.splitlines()]
    X, y = ssl_svm.load_svmlight(str(PCMAC))
    clf = ssl_svm.Auto(unlabeled_label=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ssl_svm.SolverWarning)  # cheeger-rls's own remarks
        clf.fit(X, y)
    clf.save(tmp / "py.model")
    assert (tmp / "py.model").read_bytes() == (tmp / "cli.model").read_bytes()
    # the same winner, reason and table
    assert cli_lines[-1] == "best algorithm=cheeger-rls accuracy=94"
    assert f"# {clf.decision_}" == cli_lines[-2]
    assert isinstance(clf.best_estimator_, ssl_svm.CheegerRLS)
    rows = {row["algorithm"]: row for row in clf.selection_}
    assert list(rows) == ["svm", "tsvm", "lapsvm", "cheeger-rls"]
    assert rows["cheeger-rls"]["verdict"] == "chosen"
    assert rows["svm"]["verdict"] == "baseline"
    for name, row in rows.items():
        line = next(x for x in cli_lines if x.startswith(f"# best of {name}: "))
        assert line.endswith(f"accuracy={row['score']:.6g}"), (line, row)
    d, se = rows["cheeger-rls"]["difference"], rows["cheeger-rls"]["se"]
    assert f"+{d:.3g} (standard error {se:.3g}" in clf.decision_
    # ssl-predict's predictions of either model are the estimator's
    run("ssl-predict", PCMAC_TEST, tmp / "cli.model", tmp / "pred", check=0)
    Xt, yt = ssl_svm.load_svmlight(str(PCMAC_TEST), n_features=clf.n_features_in_)
    assert np.array_equal(np.loadtxt(tmp / "pred"), clf.predict(Xt))
    assert clf.score(Xt, yt) == clf.best_estimator_.score(Xt, yt) > 0.9
    assert ssl_svm.estimator("auto") is ssl_svm.Auto


def test_auto_estimator_options_and_errors():
    X, y = ssl_svm.load_svmlight(str(PCMAC))
    y = np.where(y == 0, -1, (y == 1).astype(int))
    clf = ssl_svm.Auto(candidates=["tsvm"], grids={"tsvm": {"lam": [0.1, 0.01]}}, cv=3,
                       probability=True, n_jobs=2).fit(X, y)
    assert [r["algorithm"] for r in clf.selection_] == ["svm", "tsvm"]  # the svm added
    assert clf.predict_proba(X[:5]).shape == (5, 2)
    assert set(clf.transduction_[y == -1]) <= {0, 1}
    serial = ssl_svm.Auto(candidates=["tsvm"], grids={"tsvm": {"lam": [0.1, 0.01]}},
                          cv=3).fit(X, y)
    assert serial.selection_ == clf.selection_  # processes change nothing
    for kwargs, text in [({"candidates": ["nosuch"]}, "unknown solver 'nosuch'"),
                         ({"candidates": ["usmo"]}, "use ssl_svm.USMO"),
                         ({"grids": {"da": {"lam": [1]}}}, "da is not among the candidates"),
                         ({"grids": {"tsvm": {"gamma": [1]}}}, "tsvm has no parameter"),
                         ({"cv": 1}, "at least 2"), ({"metric": "pu"}, "accuracy, f1, auc")]:
        with pytest.raises(ValueError, match=re.escape(text)):
            ssl_svm.Auto(**kwargs).fit(X, y)


# --------------------------------------------------------------------------- label conventions

def test_svmlight_labels_in_scikit_learns_convention_are_warned_about(tmp):
    X, y = ssl_svm.load_svmlight(str(PCMAC))  # -1, +1, 0 = unlabeled
    with pytest.warns(ssl_svm.LabelWarning, match="pass unlabeled_label=0"):
        ssl_svm.SVM().fit(X, y)
    # scikit-learn's own convention (classes 0/1, -1 unlabeled, the most rows): no warning
    y01 = np.where(y == 0, -1, (y == 1).astype(int))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ssl_svm.LabelWarning)
        ssl_svm.SVM().fit(X, y01).save(tmp / "m01")
        ssl_svm.SVM(unlabeled_label=0).fit(X, y)
    # that model's classes are 0/1; ssl-predict on the ±1 test file says so rather than
    # counting every -1 row wrong
    r = run("ssl-predict", PCMAC_TEST, tmp / "m01", tmp / "p", check=0)
    assert re.search(r"warning: .*pcmac\.test: 91 labeled rows with label -1, not a class of "
                     r"the model \(0, 1\): the accuracy counts the other 109 rows only", r.stderr)
    assert re.search(r"^Accuracy = [0-9.]+% \(\d+/109\)$", r.stderr, re.M)


# --------------------------------------------------------------------------- the check's power

def test_a_check_says_the_loss_its_folds_cannot_see():
    from ssl_svm.selection.stats import MARGIN, Comparison, Coverage, paired_se

    # Agresti & Min: 7 rows on which the two agree everywhere are not certainty
    assert paired_se(0, 0, 7) == pytest.approx(100 / 9, rel=1e-12)
    # ... and on 100 rows it is the plain standard error, near enough
    d = np.r_[np.full(15, 100.0), np.full(5, -100.0), np.zeros(80)]
    assert paired_se(15, 5, 100) == pytest.approx(np.std(d, ddof=1) / 10, rel=0.01)
    # 10 labeled rows, even on the folds (one discordant row each way): a 20-point loss goes
    # unseen by them, and so few held-out rows bound nothing; the fit and the svm disagree
    # on 30 % of the unlabeled rows: unverified, up to 30 points
    cover = Coverage(held_out=20.0, n=10, unlabeled=30.0, u=500)
    c = Comparison("lapsvm", 5, 10, 70.0, 70.0, 1.0, 50.0, 1, 1, coverage=cover)
    assert c.upper_bound == 30.0 and c.verdict == "unverified" and MARGIN == 2.0
    # the same folds, but the two agree on all but 1.5 % of the unlabeled rows: it cannot be
    # worse by more than that there
    c.coverage = Coverage(held_out=20.0, n=10, unlabeled=1.5, u=500)
    assert c.upper_bound == pytest.approx(1.5) and c.verdict == "no harm"
    # 100 labeled rows, right on 5 more and 3 fewer than the svm (Digit1's lapsvm): up to
    # 2.8 points worse at 95 %: unverified; with 15 more and 3 fewer, no harm
    c = Comparison("lapsvm", 5, 100, 96.0, 94.0, 1.0, 52.0, 5, 3,
                   coverage=Coverage(8.0, 100, 9.4, 1400))
    assert c.upper_bound == pytest.approx(-2.0 + 1.645 * paired_se(5, 3, 100))
    assert c.verdict == "unverified"
    c = Comparison("lapsvm", 5, 100, 96.0, 84.0, 1.0, 52.0, 15, 3,
                   coverage=Coverage(18.0, 100, 19.4, 1400))
    assert c.upper_bound == 0.0 and c.verdict == "no harm"


def test_a_candidate_too_large_for_the_memory_limit_is_skipped_and_the_selection_goes_on(tmp):
    """At 3 MiB cheeger-rls's folds fit neither the exact kernel nor 100 landmarks (its
    landmark form holds two n×m copies) while lapsvm's take landmarks and the linear ones need
    no kernel: cheeger-rls's point fails with the reason, one line says it was skipped, and
    ssl-tune -a auto ends with a model of another candidate (exit 0), never an error after the
    others' work. Alone, the same limit stops ssl-tune as before."""
    from conftest import shared

    train = shared("bench", "usps49-10", "train.svm")
    r = run("ssl-tune", "-a", "auto", "--max-memory", "3M", "--out", tmp / "m", train)
    assert r.returncode == 0, r.stderr
    assert re.search(r"algorithm=cheeger-rls failed \(fold \d of 5, 1 attempts\): cannot run on "
                     r"these rows: needs .* above the memory limit of 3\.00 MiB", r.stdout)
    assert ("cheeger-rls skipped: none of its points ran (the lines above say why); the "
            "selection goes on without it") in r.stderr
    assert re.search(r"algorithm=lapsvm gamma_i=\S+ accuracy=", r.stdout)
    best = r.stdout.strip().splitlines()[-1]
    assert best.startswith("best algorithm=") and "cheeger-rls" not in best
    assert (tmp / "m").exists()
    alone = run("ssl-tune", "-a", "cheeger-rls", "-G", "lambda=1,0.1", "--max-memory", "3M",
                train)
    assert alone.returncode == 1 and "above the memory limit of 3.00 MiB" in alone.stderr
    assert alone.stdout == ""
