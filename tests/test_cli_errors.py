"""Every class of bad input through the real commands: exact one-line message, exit
status 1 for data/model errors and 2 for usage errors, never a traceback."""

import gzip

import pytest
from conftest import SAMPLES, run

from ssl_svm.solvers.registry import ALGORITHMS

USMO_HINT = "; for positive-unlabeled data use -a usmo" if "usmo" in ALGORITHMS else ""

# (file contents, expected message after "ssl-train: error: F")
ZERO_HINT = (" (if label 0 is a class here, not the mark of unlabeled rows, give "
             "--unlabeled-label -1; in Python unlabeled_label=-1)")
DATA_ERRORS = [
    ("+1 1:1 2:1\n-1 1:2 abc\n", ":2: malformed token 'abc' (expected index:value)"),
    ("+1 1:1\n-1 1:\n", ":2: malformed token '1:' (expected index:value)"),
    ("+1 1:1\n-1 x:2\n", ":2: malformed token 'x:2' (expected index:value)"),
    ("+1 1:1\n-1 2:1e\n", ":2: malformed token '2:1e' (expected index:value)"),
    ("+1 1:1\n-1 2:0x10\n", ":2: malformed token '2:0x10' (expected index:value)"),
    ("# c\nyes 1:1\n", ":2: malformed label 'yes'"),
    ("1:0.5 2:1\n", ":1: malformed label '1:0.5' (the line starts with a feature; for a "
                    "features-only file give the labels with --labels FILE)"),
    ("+1 1:1\n-1 0:1 2:1\n", ":2: feature index 0 in a one-based file (use --zero-based for "
                             "files whose indices start at 0)"),
    ("+1 1:1\n-1 3:1 2:1\n", ":2: feature indices must increase strictly (2 after 3)"),
    ("+1 1:1\n-1 3:1 3:1\n", ":2: feature indices must increase strictly (3 after 3)"),
    ("+1 1:1\n\n-1 -3:1\n", ":3: negative feature index in '-3:1'"),
    ("+1 99999999999:1\n", ":1: feature index too large in '99999999999:1' (at most 2147483647)"),
    ("+1 1:1\n-1 2:nan\n", ":2: value of feature 2 is not a finite number ('2:nan')"),
    ("+1 1:1\n-1 2:inf\n", ":2: value of feature 2 is not a finite number ('2:inf')"),
    ("+1 1:1\n-1 2:1e999\n", ":2: value of feature 2 is not a finite number ('2:1e999')"),
    ("nan 1:1\n", ":1: label 'nan' is not a finite number"),
    ("+1 1:1\n0.5 1:2\n", ":2: label '0.5' is not an integer class label"),
    ("+1 cost:-1 1:1\n", ":1: malformed cost 'cost:-1' (expected cost:<number>, from 0 to 1e+50)"),
    ("", ": no data rows (the file is empty or has only comments)"),
    ("# only a comment\n\n", ": no data rows (the file is empty or has only comments)"),
    ("0 1:1\n0 2:1\n", ": no labeled rows (every label is 0)"),
    ("+1 1:1\n0 2:1\n+1 3:1\n", f": only one class (1) among the labeled rows{ZERO_HINT}; svm "
                                f"needs two{USMO_HINT}"),
]


def check_one_line(r, status, expected, prefix=False):
    assert r.returncode == status, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(expected) if prefix else last == expected, last
    if status in (1, 2):  # a usage error is one line too, not click's three
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.parametrize("content,message", DATA_ERRORS)
def test_train_data_errors(tmp, content, message):
    f = tmp / "bad.svm"
    f.write_text(content)
    r = run("ssl-train", "-q", f, tmp / "m")
    check_one_line(r, 1, f"ssl-train: error: {f}{message}")
    assert not (tmp / "m").exists()


def test_predict_reports_the_line_of_a_bad_row(tmp):
    model = tmp / "m"
    run("ssl-train", "-q", SAMPLES / "pcmac.train", model, check=0)
    bad = tmp / "t.svm"
    lines = (SAMPLES / "pcmac.test").read_text().splitlines()
    lines[150] = lines[150].replace(":", "=", 1)
    bad.write_text("\n".join(lines) + "\n")
    tok = lines[150].split()[1]
    out = tmp / "pred"
    r = run("ssl-predict", bad, model, out, "--chunk-mb", "1")
    check_one_line(r, 1, f"ssl-predict: error: {bad}:151: malformed token '{tok}' "
                         "(expected index:value)")
    assert not out.exists()  # no half-written predictions
    assert [p.name for p in tmp.iterdir() if p.name.startswith(".tmp")] == []


def test_missing_and_unreadable_files(tmp):
    r = run("ssl-train", tmp / "nope.svm", tmp / "m")
    check_one_line(r, 1, f"ssl-train: error: {tmp / 'nope.svm'}: cannot open: No such file or "
                         "directory")
    bad_gz = tmp / "x.gz"
    bad_gz.write_bytes(gzip.compress(b"+1 1:1\n" * 1000)[:-30])
    r = run("ssl-train", bad_gz, tmp / "m")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"ssl-train: error: {bad_gz}: cannot read: ")
    r = run("ssl-predict", SAMPLES / "pcmac.test", tmp / "no.model")
    check_one_line(r, 1, f"ssl-predict: error: {tmp / 'no.model'}: cannot open model: No such "
                         "file or directory")
    (tmp / "lib.model").write_text("solver_type L2R_L2LOSS_SVC\nnr_class 2\n")
    r = run("ssl-predict", SAMPLES / "pcmac.test", tmp / "lib.model")
    check_one_line(r, 1, f"ssl-predict: error: {tmp / 'lib.model'}:1: not an ssl-model file (the "
                         "first line starts with 'solver_type') (it looks like a LIBSVM/liblinear "
                         "model)")


def test_labels_file_errors(tmp):
    (tmp / "f").write_text("1:1\n2:1\n3:1\n")
    (tmp / "short").write_text("1\n-1\n")
    (tmp / "long").write_text("1\n-1\n1\n-1\n")
    (tmp / "bad").write_text("1\nminus\n1\n")
    r = run("ssl-train", "--labels", tmp / "short", tmp / "f", tmp / "m")
    check_one_line(r, 1, f"ssl-train: error: {tmp / 'short'}: has fewer labels than "
                         f"{tmp / 'f'} has rows (2 lines read)")
    r = run("ssl-train", "--labels", tmp / "long", tmp / "f", tmp / "m")
    check_one_line(r, 1, f"ssl-train: error: {tmp / 'long'}:4: has more labels than "
                         f"{tmp / 'f'} has rows")
    r = run("ssl-train", "--labels", tmp / "bad", tmp / "f", tmp / "m")
    check_one_line(r, 1, f"ssl-train: error: {tmp / 'bad'}:2: malformed label 'minus'")


def test_too_many_folds(tmp):
    (tmp / "d").write_text("+1 1:1\n-1 1:-1\n+1 1:2\n")
    r = run("ssl-train", "-q", "-v", 5, tmp / "d")
    check_one_line(r, 1, f"ssl-train: error: {tmp / 'd'}: -v 5 needs at least 5 labeled rows "
                         "(found 3)")


USAGE = [
    (["-a", "nosuch"], "ssl-train: error: Invalid value for '-a': unknown algorithm 'nosuch' "
                       "(available: rls, svm, tsvm, da, lapsvm, laprls, usmo, tvrls, tvsvm, "
                       "cheeger-rls, cheeger-svm)"),
    (["-A", "7"], "ssl-train: error: Invalid value for '-A': '7' is not one of 0, 1, 2, 3 "
                  "(0 = rls, 1 = svm, 2 = tsvm, 3 = da)"),
    (["-A", "0", "-a", "svm"], "ssl-train: error: -A 0 means -a rls, but -a svm was given"),
    (["-W", "-1"], "ssl-train: error: -W/--lambda must be in (0, 1e+15] (got -1)"),
    (["-W", "abc"], "ssl-train: error: -W/--lambda must be a number or auto (got 'abc')"),
    (["-Cp", "0"], "ssl-train: error: -Cp/--cost-positive must be in (0, 1e+15] (got 0)"),
    (["--max-iter", "2.5"], "ssl-train: error: --max-iter must be an integer (got '2.5')"),
    (["-e", "1"], "ssl-train: error: -e/--epsilon must be in [1e-12, 1) (got 1)"),
    (["-v", "1"], "ssl-train: error: Invalid value for '-v': needs at least 2 folds (got 1)"),
    # click's wording after this varies by version
    (["--bogus"], "ssl-train: error: No such option"),
]


@pytest.mark.parametrize("args,last", USAGE, ids=[" ".join(a) for a, _ in USAGE])
def test_usage_errors(tmp, args, last):
    r = run("ssl-train", *args, SAMPLES / "pcmac.train", tmp / "m")
    check_one_line(r, 2, last, prefix=args == ["--bogus"])


def test_option_not_used_by_the_algorithm_is_refused():
    """Options of other solvers are errors, not silently ignored (checked with a registry that
    has a solver without -Cp)."""
    from click.testing import CliRunner

    from ssl_svm.cli import train as train_cli
    from ssl_svm.solvers.registry import Algorithm

    slim = ALGORITHMS["svm"]
    fake = Algorithm("slim", "test solver", tuple(p for p in slim.params
                                                  if p.name != "cost_positive"),
                     slim.fit, uses_unlabeled=False)
    ALGORITHMS["slim"] = fake
    try:
        r = CliRunner().invoke(train_cli._train, ["-a", "slim", "-Cp", "2", "x.svm"])
    finally:
        del ALGORITHMS["slim"]
    assert r.exit_code == 2
    assert r.output.strip().splitlines()[-1] == (
        "Error: option -Cp/--cost-positive is not used by -a slim (it is used by: rls, svm)")


def test_option_of_another_solver_is_refused_for_real_solvers(tmp):
    r = run("ssl-train", "-a", "svm", "-U", "1", SAMPLES / "pcmac.train", tmp / "m")
    check_one_line(r, 2, "ssl-train: error: option -U/--lambda-u is not used by -a svm (it is "
                         "used by: tsvm, da)")


def test_fold_without_a_class(tmp):
    (tmp / "d").write_text("+1 1:1\n-1 1:-1\n-1 1:-2\n-1 1:-3\n")
    r = run("ssl-train", "-q", "-v", 2, tmp / "d")
    check_one_line(r, 1, f"ssl-train: error: {tmp / 'd'}: cross-validation fold 2 of 2: svm needs "
                         "at least two "
                         "classes among the labeled rows (a class has too few labeled rows for "
                         "this many folds)")


def test_a_zero_one_file_names_unlabeled_label_and_trains_with_it(tmp):
    """A LIBSVM file of classes 0 and 1 reads as class 1 and unlabeled rows: the error names
    --unlabeled-label, and with it the file trains 0 against 1."""
    f = tmp / "zo.svm"
    f.write_text("1 1:1\n0 1:-1\n1 1:2 2:1\n0 1:-2 2:-1\n")
    r = run("ssl-train", "-q", "-a", "svm", f, tmp / "m")
    check_one_line(r, 1, f"ssl-train: error: {f}: only one class (1) among the labeled "
                   f"rows{ZERO_HINT}; svm needs two{USMO_HINT}")
    r = run("ssl-train", "-q", "-a", "svm", "--unlabeled-label", "-1", f, tmp / "m")
    assert r.returncode == 0, r.stderr
    assert "labels 1 0" in (tmp / "m").read_text() or "labels 0 1" in (tmp / "m").read_text()


@pytest.mark.parametrize("prog", ["ssl-train", "ssl-predict", "ssl-tune", "ssl-export"])
@pytest.mark.parametrize("env,text", [
    ({"NUMBA_NUM_THREADS": "100000"}, "NUMBA_NUM_THREADS=100000: more threads than numba can "
                                      "start here"),  # was a segfault, exit 139
    ({"NUMBA_THREADING_LAYER": "nosuch"}, "NUMBA_THREADING_LAYER='nosuch' is not one of "
                                          "numba's threading layers"),  # was a traceback
])
def test_a_bad_numba_environment_is_one_line(tmp, prog, env, text):
    args = {"ssl-train": [SAMPLES / "pcmac.train", tmp / "m"],
            "ssl-predict": [SAMPLES / "pcmac.test", SAMPLES / "pcmac.train", tmp / "p"],
            "ssl-tune": ["-a", "svm", SAMPLES / "pcmac.train"],
            "ssl-export": [tmp / "m", tmp / "e"]}[prog]
    r = run(prog, *args, env=env)
    check_one_line(r, 1, f"{prog}: error: {text}", prefix=True)
    assert not (tmp / "m").exists() and not (tmp / "p").exists()


def test_a_prior_with_a_space_is_refused_before_the_fit(tmp):
    """--prior ' 0.5' passed the gate, trained the whole fit, then died with a traceback when
    the model file refused the value: now a usage error, before reading TRAIN."""
    for value in (" 0.5", "0.5 ", ""):
        r = run("ssl-train", "-a", "usmo", "--negatives-as-unlabeled", "--prior", value,
                SAMPLES / "pcmac.train", tmp / "m")
        check_one_line(r, 2, f"ssl-train: error: --prior must be (0, 1) or auto, without "
                             f"spaces (got {value!r})")
        assert "read " not in r.stderr and not (tmp / "m").exists()
