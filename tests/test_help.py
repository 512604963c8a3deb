"""Help per solver, grouped option texts, and shell completion (through the real commands)."""

import re

import pytest
from conftest import SAMPLES, run


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("prog", ["ssl-train", "ssl-tune"])
def test_help_for_one_solver_shows_its_options_only(prog):
    full = run(prog, "--help", check=0).stdout
    r = run(prog, "-a", "tsvm", "-h", check=0)
    own = r.stdout
    assert "tsvm options:" in own and len(own.splitlines()) < len(full.splitlines()) / 2
    text = flat(own)
    for opt in ("-U, --lambda-u FLOAT", "-S, --max-switch INT", "-R, --positive-fraction FLOAT",
                "-W, --lambda FLOAT", "--max-iter INT"):
        assert opt in text, opt
    assert "maximum number of Newton steps per retraining. Range [1, 1000000], default 1000" \
        in text
    for other in ("--gamma-i", "--tv-gamma", "--validation", "--max-memory", "--prior"):
        assert other not in text, other
    assert "tsvm (SVMlin's -A 2): transductive L2-SVM with multiple label switching" in text
    assert run(prog, "-A", "2", "-h", check=0).stdout == own  # SVMlin's number works too
    assert run(prog, "--algorithm=tsvm", "--help", check=0).stdout == own
    lap = flat(run(prog, "-alapsvm", "-h", check=0).stdout)
    assert "lapsvm options:" in lap and "--gamma-i FLOAT" in lap and "-U, --lambda-u" not in lap


@pytest.mark.parametrize("prog", ["ssl-train", "ssl-tune"])
def test_short_usage_on_h_and_every_option_on_help(prog):
    """-h without -a is LIBSVM's kind of usage (at most 45 lines): every solver on a line, the
    common options, examples; every option it names is one of the command's; --help (and
    -h with --help) prints every option of every solver."""
    short = run(prog, "-h", check=0).stdout
    lines = short.splitlines()
    assert len(lines) <= 45 and lines[0].startswith(f"Usage: {prog} [OPTIONS] TRAIN")
    assert f"'{prog} --help' lists every option of every solver" in flat(short)
    for name in ("rls", "tsvm", "lapsvm", "usmo", "cheeger-svm"):
        assert re.search(rf"^  {name} +\S", short, re.M), name
    from ssl_svm.cli import train, tune
    command = {"ssl-train": train._train, "ssl-tune": tune._tune}[prog]
    flags = {f for p in command.params for f in getattr(p, "opts", [])}
    named = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", short))
    assert named - {"-h", "--help"} <= flags, named - flags
    full = run(prog, "--help", check=0).stdout
    assert len(full.splitlines()) > 300 and "--cheeger-step" in full
    assert run(prog, "-h", "--help", check=0).stdout == full


@pytest.mark.parametrize("prog", ["ssl-train", "ssl-tune"])
def test_all_solver_help_says_each_text_once(prog):
    text = flat(run(prog, "--help", check=0).stdout)
    assert text.count("the objective is λ/2·||w||² + loss (SVMlin's -W)") == 1
    assert ("rls, svm, tsvm, da: regularisation λ: the objective is λ/2·||w||² + loss "
            "(SVMlin's -W); range (0, 1e+15], default auto;") in text  # da's auto its own
    # one meaning, defaults that differ by solver: said once, the defaults grouped by value
    assert ("linear (0), poly (1), rbf (2), default rbf (lapsvm, laprls, tvrls, tvsvm, "
            "cheeger-rls, cheeger-svm), linear (usmo)") in text.replace("cheeger- ", "cheeger-")
    # texts that differ are said per solver
    assert ("tvrls, tvsvm, cheeger-rls, cheeger-svm: number of nearest neighbours of each row "
            "in the graph (Euclidean); range [1, 2147483647], default 10"
            ) in text.replace("cheeger- ", "cheeger-")
    assert ("lapsvm, laprls: number of nearest neighbours of each row in the graph (Euclidean); "
            "auto: from c =") in text


def test_shell_completion():
    r = run("ssl-train", env={"_SSL_TRAIN_COMPLETE": "bash_source"}, check=0)
    assert "_ssl_train_completion()" in r.stdout and "complete " in r.stdout
    r = run("ssl-train", env={"_SSL_TRAIN_COMPLETE": "bash_complete",
                              "COMP_WORDS": "ssl-train -a t", "COMP_CWORD": "2"}, check=0)
    assert r.stdout.split() == ["plain,tsvm", "plain,tvrls", "plain,tvsvm"]
    r = run("ssl-tune", env={"_SSL_TUNE_COMPLETE": "bash_complete",
                             "COMP_WORDS": "ssl-tune --lambda-", "COMP_CWORD": "1"}, check=0)
    assert r.stdout.split() == ["plain,--lambda-u"]
    r = run("ssl-predict", env={"_SSL_PREDICT_COMPLETE": "zsh_source"}, check=0)
    assert "#compdef ssl-predict" in r.stdout


@pytest.mark.parametrize("prog,words,cword", [
    ("ssl-predict", "ssl-predict pcm", "1"),              # TEST
    ("ssl-predict", "ssl-predict x.svm pcm", "2"),        # MODEL
    ("ssl-predict", "ssl-predict x.svm m pcm", "3"),      # OUTPUT
    ("ssl-predict", "ssl-predict --labels pcm", "2"),
    ("ssl-train", "ssl-train pcm", "1"),
    ("ssl-tune", "ssl-tune pcm", "1"),
    ("ssl-export", "ssl-export pcm", "1"),
])
def test_file_names_complete_for_every_command(prog, words, cword):
    var = "_" + prog.upper().replace("-", "_") + "_COMPLETE"
    r = run(prog, env={var: "bash_complete", "COMP_WORDS": words, "COMP_CWORD": cword},
            check=0, cwd=SAMPLES)
    assert r.stdout.split() == ["file,pcm"]  # bash then lists pcmac.train, pcmac.test
