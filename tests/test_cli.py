"""ssl-train / ssl-predict end to end on sample_data and the shared splits."""

import gzip
import re

import numpy as np
import pytest
from conftest import SAMPLES, run, shared

from ssl_svm.formats.model_file import read_model
from ssl_svm.formats.svmlight import read_dataset
from ssl_svm.solvers.crossval import cross_validate, stratified_folds
from ssl_svm.solvers.registry import ALGORITHMS

PCMAC_TRAIN = SAMPLES / "pcmac.train"
PCMAC_TEST = SAMPLES / "pcmac.test"
SHUTTLE_TRAIN = SAMPLES / "shuttle.train"
SHUTTLE_TEST = SAMPLES / "shuttle.test"


def accuracy_line(stderr):
    m = re.search(r"^Accuracy = ([0-9.e+-]+)% \((\d+)/(\d+)\)$", stderr, re.M)
    assert m, stderr
    return float(m.group(1)), int(m.group(2)), int(m.group(3))


def test_train_predict_binary_default_model_path(tmp):
    r = run("ssl-train", "-a", "svm", "-W", "0.001", PCMAC_TRAIN, cwd=tmp, check=0)
    assert "ignoring 450 unlabeled rows (label 0): svm trains on labeled rows only" in r.stderr
    assert "svm: lambda=0.001 cost_positive=1 cost_negative=1 epsilon=1e-06 bias=1 max_iter=1000" \
        in r.stderr  # the effective parameters, defaults included, are printed
    model = tmp / "pcmac.train.model"
    assert model.exists()
    r = run("ssl-predict", "--values", PCMAC_TEST, model, tmp / "pred", check=0)
    acc, c, t = accuracy_line(r.stderr)
    # in-process: same decision values, bit for bit, and the same accuracy
    m = read_model(str(model))
    d = read_dataset(str(PCMAC_TEST), n_features=m.n_features)
    F = m.decision_function(d.X)[:, 0]
    lines = (tmp / "pred").read_text().splitlines()
    assert [float(ln.split()[1]) for ln in lines] == F.tolist()
    assert [int(ln.split()[0]) for ln in lines] == np.where(F > 0, 1, -1).tolist()
    assert c == int(np.sum(np.where(F > 0, 1, -1) == d.y)) and t == 200
    assert acc == pytest.approx(100 * c / t, abs=1e-4)


def test_svmlin_alias_gives_the_same_model(tmp):
    run("ssl-train", "-q", "-A", "1", "-W", "0.01", PCMAC_TRAIN, tmp / "a", check=0)
    run("ssl-train", "-q", "-a", "svm", "-W", "0.01", PCMAC_TRAIN, tmp / "b", check=0)
    run("ssl-train", "-q", "-A", "0", "-W", "0.01", PCMAC_TRAIN, tmp / "c", check=0)
    a, b, c = (read_model(str(tmp / x)) for x in "abc")
    assert a.function.W.tobytes() == b.function.W.tobytes()
    assert c.algorithm == "rls"


def test_multiclass_one_vs_rest(tmp):
    for algo in ("svm", "rls"):
        run("ssl-train", "-q", "-a", algo, "-W", "0.01", SHUTTLE_TRAIN, tmp / algo, check=0)
        m = read_model(str(tmp / algo))
        assert m.labels == [1, 2, 3, 4, 5, 7] and m.n_functions == 6
        r = run("ssl-predict", "--values", SHUTTLE_TEST, tmp / algo, "-", check=0)
        rows = [ln.split() for ln in r.stdout.splitlines()]
        assert len(rows) == 1000 and all(len(x) == 7 for x in rows)
        vals = np.array([[float(v) for v in x[1:]] for x in rows])
        assert [int(x[0]) for x in rows] == [m.labels[k] for k in vals.argmax(axis=1)]
        acc, _, _ = accuracy_line(r.stderr)
        assert acc >= {"svm": 90.0, "rls": 85.0}[algo]  # majority class alone: 78 %


@pytest.mark.parametrize("path,algo,folds", [(PCMAC_TRAIN, "svm", 5), (SHUTTLE_TRAIN, "svm", 5),
                                             (SHUTTLE_TRAIN, "rls", 3)])
def test_cross_validation_prints_libsvm_line(path, algo, folds):
    r = run("ssl-train", "-q", "-a", algo, "-W", "0.01", "-v", folds, "--seed", 3, path, check=0)
    m = re.fullmatch(r"Cross Validation Accuracy = ([0-9.]+)%\n", r.stdout)
    assert m, r.stdout
    d = read_dataset(str(path))
    lab = d.y != 0
    params = {**ALGORITHMS[algo].defaults(), "lambda": 0.01}
    pred = cross_validate(ALGORITHMS[algo].fit, d.X[lab], d.y[lab], d.cost[lab], params, folds, 3)
    assert float(m.group(1)) == pytest.approx(100 * np.mean(pred == d.y[lab]), abs=1e-4)


def test_stratified_folds_are_balanced_and_deterministic():
    y = np.array([1] * 23 + [-1] * 9 + [0] * 5 + [4] * 3, dtype=float)
    f = stratified_folds(y, 5, seed=0)
    assert np.all(f[y == 0] == -1)
    sizes = np.bincount(f[f >= 0], minlength=5)
    assert sizes.max() - sizes.min() <= 1
    for c in (1, -1, 4):
        per = np.bincount(f[y == c], minlength=5)
        assert per.max() - per.min() <= 1
    assert np.array_equal(f, stratified_folds(y, 5, seed=0))
    assert not np.array_equal(f, stratified_folds(y, 5, seed=1))


def test_stdin_stdout_gzip_pipeline(tmp):
    raw = PCMAC_TRAIN.read_bytes()
    r = run("ssl-train", "-q", "-W", "0.001", "-", "-", input=raw, check=0)
    (tmp / "m").write_bytes(r.stdout)
    m = read_model(str(tmp / "m"))
    run("ssl-train", "-q", "-W", "0.001", PCMAC_TRAIN, tmp / "ref", check=0)
    assert m.function.W.tobytes() == read_model(str(tmp / "ref")).function.W.tobytes()
    (tmp / "t.gz").write_bytes(gzip.compress(PCMAC_TEST.read_bytes()))
    a = run("ssl-predict", tmp / "t.gz", tmp / "m", input=b"", check=0)
    b = run("ssl-predict", "-", tmp / "m", "-", input=PCMAC_TEST.read_bytes(), check=0)
    assert a.stdout == b.stdout and len(a.stdout.splitlines()) == 200
    r = run("ssl-train", "-W", "0.001", "-", input=raw)
    assert r.returncode == 2
    assert b"give MODEL when the training data come from stdin" in r.stderr


def test_svmlin_layout_and_extra_test_features(tmp):
    rows = PCMAC_TRAIN.read_text().splitlines()
    (tmp / "feat").write_text("\n".join(r.split(" ", 1)[1] for r in rows) + "\n")
    (tmp / "lab").write_text("\n".join(r.split(" ", 1)[0] for r in rows) + "\n")
    run("ssl-train", "-q", "--labels", tmp / "lab", tmp / "feat", tmp / "m1", check=0)
    run("ssl-train", "-q", PCMAC_TRAIN, tmp / "m2", check=0)
    assert read_model(str(tmp / "m1")).function.W.tobytes() == \
        read_model(str(tmp / "m2")).function.W.tobytes()
    # test rows carrying features the model never saw: ignored, as LIBSVM does
    extra = [ln + " 99999:5 100000:-3" for ln in PCMAC_TEST.read_text().splitlines()]
    (tmp / "wide").write_text("\n".join(extra) + "\n")
    a = run("ssl-predict", "--values", PCMAC_TEST, tmp / "m2", check=0)
    b = run("ssl-predict", "--values", tmp / "wide", tmp / "m2", check=0)
    assert a.stdout == b.stdout
    tl = [ln.split(" ", 1) for ln in PCMAC_TEST.read_text().splitlines()]
    (tmp / "tfeat").write_text("\n".join(x[1] for x in tl) + "\n")
    (tmp / "tlab").write_text("\n".join(x[0] for x in tl) + "\n")
    c = run("ssl-predict", "--values", "--labels", tmp / "tlab", tmp / "tfeat", tmp / "m2",
            check=0)
    assert c.stdout == a.stdout and accuracy_line(c.stderr) == accuracy_line(a.stderr)


def test_quiet_and_row_costs(tmp):
    r = run("ssl-train", "-q", PCMAC_TRAIN, tmp / "m", check=0)
    assert r.stderr == "" and r.stdout == ""
    r = run("ssl-predict", "-q", PCMAC_TEST, tmp / "m", tmp / "p", check=0)
    assert r.stderr == ""
    # cost:3 on a row equals that row three times
    lines = [ln for ln in PCMAC_TRAIN.read_text().splitlines() if not ln.startswith("0 ")]
    costed = [ln.replace(" ", " cost:3 ", 1) if i == 4 else ln for i, ln in enumerate(lines)]
    (tmp / "c.svm").write_text("\n".join(costed) + "\n")
    (tmp / "d.svm").write_text("\n".join(lines + [lines[4]] * 2) + "\n")
    run("ssl-train", "-q", "-W", "0.01", "-e", "1e-10", tmp / "c.svm", tmp / "mc", check=0)
    run("ssl-train", "-q", "-W", "0.01", "-e", "1e-10", tmp / "d.svm", tmp / "md", check=0)
    np.testing.assert_allclose(read_model(str(tmp / "mc")).function.W,
                               read_model(str(tmp / "md")).function.W, rtol=1e-7, atol=1e-12)


# SVMlin's svm (-A 1, λ = 0.001) test accuracy on every shared split (REFERENCE.md): we solve
# the same problem to the same objective, so we must land on the same figure.
SVMLIN_SVM = {"pcmac-svmlin": 66.46, "a9a-100": 76.59, "w8a-200": 97.34, "mnist38-80": 93.09,
              "rcv1-small-50": 80.33, "secstr-1000": 64.10, "usps49-10": 89.12}


@pytest.mark.parametrize("split", sorted(SVMLIN_SVM))
def test_svm_matches_svmlin_accuracy_on_bench_splits(tmp, split):
    run("ssl-train", "-q", "-A", "1", "-W", "0.001", shared("bench", split, "train.svm"),
        tmp / "m", check=0)
    r = run("ssl-predict", shared("bench", split, "test.svm"), tmp / "m", tmp / "p", check=0)
    acc, _, _ = accuracy_line(r.stderr)
    assert abs(acc - SVMLIN_SVM[split]) <= 0.15, acc


def _digits_012(tmp, n_labeled=60):
    """USPS digits 0, 1, 2: a training file whose unlabeled rows carry -1 (label 0 is the
    digit), and a test file with the true digits."""
    import gzip
    import random

    rows = [ln for ln in gzip.open(shared("datasets", "usps", "usps.gz"), "rt")
            if ln.split()[0] in ("0", "+1", "2")]
    random.Random(0).shuffle(rows)
    train = [(str(int(ln.split(" ", 1)[0])) if i < n_labeled else "-1") + " "
             + ln.split(" ", 1)[1] for i, ln in enumerate(rows[:900])]
    test = [str(int(ln.split(" ", 1)[0])) + " " + ln.split(" ", 1)[1] for ln in rows[900:1300]]
    (tmp / "d.svm").write_text("".join(train))
    (tmp / "d.test").write_text("".join(test))
    return tmp / "d.svm", tmp / "d.test"


def test_unlabeled_label_makes_zero_a_class(tmp):
    train, test = _digits_012(tmp)
    r = run("ssl-train", "-a", "lapsvm", "-g", "0.03125", "--unlabeled-label", "-1", "--check",
            "none", train, tmp / "m", "-l", tmp / "l", check=0)
    assert "label -1 marks the unlabeled rows (840 rows); label 0 is a class" in r.stderr
    m = read_model(str(tmp / "m"))
    assert sorted(m.labels) == [0, 1, 2]
    assert set((tmp / "l").read_text().split()) == {"0", "1", "2"}
    p = run("ssl-predict", test, tmp / "m", tmp / "p", check=0)
    acc = re.search(r"Accuracy = ([0-9.]+)% \((\d+)/(\d+)\)", p.stderr)
    assert acc and acc.group(3) == "400" and float(acc.group(1)) > 95  # class 0 rows counted
    assert "0" in (tmp / "p").read_text().split()
    # without the option, -1 would be a class and 0 the unlabeled rows: a different problem
    r = run("ssl-train", "-a", "svm", train, tmp / "m2", check=0)
    assert read_model(str(tmp / "m2")).labels != m.labels
    r = run("ssl-train", "-a", "svm", "-v", "3", "--unlabeled-label", "-1", train, check=0)
    assert re.fullmatch(r"Cross Validation Accuracy = [0-9.]+%\n", r.stdout)
    r = run("ssl-tune", "-a", "svm", "-v", "3", "-G", "lambda=1,0.1", "--unlabeled-label", "-1",
            "--out", tmp / "best", train, check=0)
    assert sorted(read_model(str(tmp / "best")).labels) == [0, 1, 2]
    # a validation file in the same convention: its rows must carry a class
    (tmp / "v.svm").write_text("-1 1:0.5\n")
    r = run("ssl-train", "-a", "lapsvm", "--early-stop", "validation", "--validation",
            tmp / "v.svm", "--unlabeled-label", "-1", train, tmp / "m3", check=1)
    assert f"{tmp / 'v.svm'}:1: validation rows must be labeled (label -1 found)" in r.stderr
    (tmp / "pu.svm").write_text("1 1:1\n0 1:2\n5 1:3\n")
    r = run("ssl-train", "-a", "usmo", "--unlabeled-label", "5", tmp / "pu.svm", tmp / "m4",
            check=1)
    assert r.stderr.rstrip().endswith(
        "pu.svm:2: label 0: positive-unlabeled learning takes +1 (labeled positive) and 5 "
        "(unlabeled, --unlabeled-label)")


def test_the_commands_and_the_estimators_code_a_class_0_alike(tmp):
    """One label coder (training.class_codes): classes 0, 1, 2 with 3 marking the unlabeled
    rows (the code a class 0 takes, had the marker been a class) give ssl-train and the
    estimator the same model file."""
    import ssl_svm

    train, _ = _digits_012(tmp)
    lines = [("3" if x.startswith("-1 ") else x.split(" ", 1)[0]) + " " + x.split(" ", 1)[1]
             for x in train.read_text().splitlines()]
    (tmp / "m3.svm").write_text("\n".join(lines) + "\n")
    run("ssl-train", "-a", "svm", "--unlabeled-label", "3", tmp / "m3.svm", tmp / "cli",
        check=0)
    X, y = ssl_svm.load_svmlight(str(tmp / "m3.svm"))
    ssl_svm.SVM(unlabeled_label=3).fit(X, y).save(tmp / "py")
    cli, py = read_model(str(tmp / "cli")), read_model(str(tmp / "py"))
    assert sorted(cli.labels) == [0, 1, 2] and cli.labels == py.labels
    np.testing.assert_array_equal(cli.function.W, py.function.W)


def test_keep_comments_carries_row_ids_to_predictions(tmp):
    rows = [f"{'1' if i % 2 else '-1'} 1:{(i % 7) - 3.5} 2:{i % 3} # rec-{i}" for i in range(3000)]
    rows[5] = "1 1:1 2:2"  # a row without a comment
    rows[9] = "-1 1:-2 #   "  # an empty comment
    test = tmp / "t.svm"
    test.write_text("# a header comment line\n\n" + "\n".join(rows) + "\n")
    run("ssl-train", "-q", SAMPLES / "pcmac.train", tmp / "m", check=0)
    r = run("ssl-predict", "-q", "--keep-comments", "--values", test, tmp / "m", "-", check=0)
    lines = r.stdout.splitlines()
    assert len(lines) == 3000
    assert re.fullmatch(r"-?1 \S+ # rec-0", lines[0])
    assert re.fullmatch(r"-?1 \S+", lines[5]) and re.fullmatch(r"-?1 \S+", lines[9])
    assert all(ln.endswith(f" # rec-{i}") for i, ln in enumerate(lines) if i not in (5, 9))
    plain = run("ssl-predict", "-q", "--values", test, tmp / "m", "-", check=0).stdout
    assert [ln.split(" # ")[0] for ln in lines] == plain.splitlines()
    par = run("ssl-predict", "-q", "--keep-comments", "--values", "-j", "2", "--chunk-mb", "1",
              test, tmp / "m", "-", check=0)
    assert par.stdout == r.stdout


def test_train_keep_comments_on_the_transductive_output(tmp):
    import gzip

    (tmp / "t.svm").write_text("1 1:1 2:0.5 # rec-1\n0 1:-1 # u-2\n-1 1:-1 # rec-3\n0 1:2\n"
                               "0 1:-2 #   u-5\n")
    with gzip.open(tmp / "x.svm.gz", "wt") as f:
        f.write("0 1:3 # x-1\n\n0 1:-3 # x-3\n")
    run("ssl-train", "-q", "-a", "tsvm", "-l", tmp / "l", "--keep-comments", "--unlabeled",
        tmp / "x.svm.gz", tmp / "t.svm", tmp / "m", check=0)
    got = [ln.split(" ", 1)[1] if " " in ln else "" for ln in (tmp / "l").read_text().splitlines()]
    assert got == ["# u-2", "", "# u-5", "# x-1", "# x-3"]
    r = run("ssl-train", "--keep-comments", tmp / "t.svm", tmp / "m", check=2)
    assert "ssl-train: error: --keep-comments goes with -l FILE" in r.stderr
    r = run("ssl-train", "-l", tmp / "l2", "--keep-comments", "-", tmp / "m",
            input=(tmp / "t.svm").read_text(), check=2)
    assert "TRAIN and --unlabeled must be files, not stdin" in r.stderr
    assert not (tmp / "l2").exists()


def test_gamma_auto_and_features(tmp):
    from ssl_svm.solvers.kernels import median_gamma

    data = read_dataset(str(SAMPLES / "pcmac.train"))
    run("ssl-train", "-q", "-a", "usmo", "--negatives-as-unlabeled", "-t", "rbf",
        SAMPLES / "pcmac.train", tmp / "a", check=0)
    m = read_model(str(tmp / "a"))
    assert m.params["gamma"] == "auto"
    assert m.function.kernel.gamma == median_gamma(data.X)  # the width recorded is the one used
    # a graph solver's auto width is the graph's: 1/(2t²), t its heat width
    run("ssl-train", "-q", "-a", "laprls", SAMPLES / "pcmac.train", tmp / "a", check=0)
    m = read_model(str(tmp / "a"))
    t = m.stats["heat_width"][0]
    assert m.params["gamma"] == "auto" and m.function.kernel.gamma == 1 / (2 * t * t)
    run("ssl-train", "-q", "-a", "laprls", "-g", "features", SAMPLES / "pcmac.train", tmp / "f",
        check=0)
    m = read_model(str(tmp / "f"))
    assert m.params["gamma"] == "features" and m.function.kernel.gamma == 1 / m.n_features
    run("ssl-predict", "-q", SAMPLES / "pcmac.train", tmp / "f", tmp / "p", check=0)
    r = run("ssl-train", "-a", "laprls", "-g", "wide", SAMPLES / "pcmac.train", tmp / "x",
            check=2)
    assert "-g/--gamma must be a number or auto or features (got 'wide')" in r.stderr
