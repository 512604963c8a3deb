"""ssl-train --init MODEL: a warm start from a saved model reaches the cold start's objective in
fewer iterations; solvers without one refuse it."""

import pytest
from conftest import SAMPLES, run, shared, ssl_train

from ssl_svm.formats.model_file import read_model

A9A = shared("bench", "a9a-100")
USPS = shared("bench", "usps49-10")


def new_data_arrives(tmp):
    """a9a: the 100 labeled rows + 1000 more (old), then + 2000 more (new), labels from truth."""
    lines = A9A.joinpath("train.svm").read_text().splitlines()
    truth = A9A.joinpath("train.truth").read_text().split()
    lab = [ln for ln in lines if ln.split()[0] != "0"]
    more = [t + ln[1:] for ln, t in zip(lines, truth) if ln.split()[0] == "0"][:2000]
    (tmp / "old.svm").write_text("\n".join(lab + more[:1000]) + "\n")
    (tmp / "new.svm").write_text("\n".join(lab + more) + "\n")


@pytest.mark.parametrize("algo", ["svm", "rls"])
def test_linear_warm_start_reaches_the_cold_objective_sooner(tmp, algo):
    new_data_arrives(tmp)
    ssl_train("-q", "-a", algo, "-W", "0.001", tmp / "old.svm", tmp / "old", check=0)
    ssl_train("-q", "-a", algo, "-W", "0.001", tmp / "new.svm", tmp / "cold", check=0)
    r = ssl_train("-a", algo, "-W", "0.001", "--init", tmp / "old", tmp / "new.svm",
            tmp / "warm", check=0)
    assert f"--init {tmp / 'old'}: seeds w from the model (122 features)" in r.stderr
    cold, warm = read_model(str(tmp / "cold")), read_model(str(tmp / "warm"))
    f_cold, f_warm = cold.stats["objective"][0], warm.stats["objective"][0]
    assert f_warm == pytest.approx(f_cold, rel=1e-8)
    key = "iterations" if algo == "svm" else "cg_iterations"
    assert warm.stats[key][0] < cold.stats[key][0], (warm.stats, cold.stats)
    # retraining in place: MODEL may be the --init file itself
    ssl_train("-q", "-a", algo, "-W", "0.001", "--init", tmp / "old", tmp / "new.svm",
        tmp / "old", check=0)
    assert read_model(str(tmp / "old")).stats["objective"][0] == pytest.approx(f_cold, rel=1e-8)


def test_lapsvm_warm_start(tmp):
    common = ["-a", "lapsvm", "-g", "0.03125", "--early-stop", "none"]
    ssl_train("-q", *common, USPS / "train.svm", tmp / "g1", check=0)
    ssl_train("-q", *common, "--gamma-i", "0.5", USPS / "train.svm", tmp / "cold",
        check=0)
    ssl_train("-q", *common, "--gamma-i", "0.5", "--init", tmp / "g1",
        USPS / "train.svm", tmp / "warm", check=0)
    cold, warm = read_model(str(tmp / "cold")), read_model(str(tmp / "warm"))
    assert warm.stats["objective"][0] == pytest.approx(cold.stats["objective"][0], rel=1e-8)
    assert warm.stats["iterations"][0] < cold.stats["iterations"][0]
    # new rows appended to the model's training rows (Newton: exact either way)
    rows = USPS.joinpath("train.svm").read_text().splitlines(keepends=True)
    (tmp / "head.svm").write_text("".join(rows[:800]))
    nt = ["-a", "lapsvm", "-g", "0.03125", "--solver", "newton"]
    ssl_train("-q", *nt, tmp / "head.svm", tmp / "h", check=0)
    ssl_train("-q", *nt, USPS / "train.svm", tmp / "c2", check=0)
    r = ssl_train(*nt, "--init", tmp / "h", USPS / "train.svm", tmp / "w2", check=0)
    assert "seeds α from 800 of the 1296 rows, b from the model" in r.stderr
    assert read_model(str(tmp / "w2")).stats["objective"][0] == pytest.approx(
        read_model(str(tmp / "c2")).stats["objective"][0], rel=1e-9)
    # rows that are not the model's: refused
    (tmp / "tail.svm").write_text("".join(rows[1:]))
    r = ssl_train(*nt, "--init", tmp / "h", tmp / "tail.svm", tmp / "w3", check=1)
    assert "--init: the model's 800 expansion rows are not the first rows of TRAIN" in r.stderr


def test_init_errors(tmp):
    pcmac = SAMPLES / "pcmac.train"
    run("ssl-train", "-q", "-a", "svm", pcmac, tmp / "svm", check=0)
    r = run("ssl-train", "-a", "tsvm", "--init", tmp / "svm", pcmac, tmp / "x", check=2)
    assert ("ssl-train: error: -a tsvm has no warm start from a model; --init works with rls, svm, "
            "lapsvm, laprls") in r.stderr
    r = run("ssl-train", "-a", "rls", "--init", tmp / "svm", pcmac, tmp / "x", check=1)
    assert r.stderr.strip().endswith("svm: --init needs a model of -a rls; this one is svm")
    (tmp / "three.svm").write_text("1 1:1\n2 1:2\n3 1:3\n1 1:1.1\n2 1:2.1\n3 1:3.1\n")
    r = run("ssl-train", "-a", "svm", "--init", tmp / "svm", tmp / "three.svm", tmp / "x",
            check=1)
    assert "--init: the model's labels 1 -1 are not TRAIN's classes 1 2 3" in r.stderr
    r = run("ssl-train", "-a", "svm", "-v", "3", "--init", tmp / "svm", pcmac, check=2)
    assert "-v trains from scratch on each fold; drop --init or -v" in r.stderr
    assert not (tmp / "x").exists()
