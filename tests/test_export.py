"""ssl-export: LIBLINEAR and LIBSVM's own loaders and predictors (liblinear-official,
libsvm-official) give ssl-predict's labels and decision values."""

import numpy as np
import pytest
from conftest import SAMPLES, run, shared, ssl_train
from liblinear import liblinearutil as ll
from libsvm import svmutil as ls
from sklearn.datasets import dump_svmlight_file, make_classification

from ssl_svm.formats.model_file import read_model
from ssl_svm.formats.svmlight import read_dataset

PCMAC = shared("bench", "pcmac-svmlin")


def ours(tmp, model, test, *extra):
    r = run("ssl-predict", "-q", *extra, test, model, "-", check=0)
    rows = [ln.split() for ln in r.stdout.splitlines()]
    if "--probability" in extra:  # the columns' labels first, as svm-predict -b 1 writes
        assert rows[0][0] == "labels"
        rows = rows[1:]
    return np.array([int(x[0]) for x in rows]), np.array([[float(v) for v in x[1:]]
                                                          for x in rows])


def same_values(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(b).max()))


def liblinear_predict(path, X):
    m = ll.load_model(str(path))
    labels, _, dec = ll.predict([], X, m, "-q")
    return np.array(labels, dtype=int), np.array(dec)


def libsvm_predict(path, X, prob=False):
    m = ls.svm_load_model(str(path))
    labels, _, dec = ls.svm_predict([], X, m, "-q" + (" -b 1" if prob else ""))
    return np.array(labels, dtype=int), np.array(dec)


@pytest.mark.parametrize("algo,args", [("svm", ["-W", "0.001"]), ("tsvm", ["-W", "0.001"]),
                                       ("rls", ["-W", "0.01"]), ("da", ["-W", "0.001"])])
def test_linear_models_as_liblinear_files(tmp, algo, args):
    ssl_train("-q", "-a", algo, *args, PCMAC / "train.svm", tmp / "m", check=0)
    run("ssl-export", "-q", "--format", "liblinear", tmp / "m", tmp / "m.ll", check=0)
    test = read_dataset(str(PCMAC / "test.svm"))
    lab, dec = liblinear_predict(tmp / "m.ll", test.X.tocsr())
    our_lab, our_val = ours(tmp, tmp / "m", PCMAC / "test.svm", "--values")
    assert np.array_equal(lab, our_lab)
    same_values(dec, our_val)
    # the same model as one LIBSVM support vector with the linear kernel
    run("ssl-export", "-q", "-f", "libsvm", tmp / "m", tmp / "m.ls", check=0)
    lab, dec = libsvm_predict(tmp / "m.ls", test.X.tocsr())
    assert np.array_equal(lab, our_lab)
    same_values(dec, our_val)


def test_one_vs_rest_linear_model_as_liblinear(tmp):
    import gzip
    import random

    rows = [ln for ln in gzip.open(shared("datasets", "usps", "usps.gz"), "rt")
            if ln.split()[0] in ("3", "5", "8")]
    random.Random(0).shuffle(rows)
    (tmp / "d.svm").write_text("".join(ln if i < 90 else "0 " + ln.split(" ", 1)[1]
                                       for i, ln in enumerate(rows[:900])))
    (tmp / "t.svm").write_text("".join(rows[900:1300]))
    ssl_train("-q", "-a", "tsvm", "-W", "0.01", tmp / "d.svm", tmp / "m", check=0)
    run("ssl-export", "-q", "-f", "liblinear", tmp / "m", tmp / "m.ll", check=0)
    X = read_dataset(str(tmp / "t.svm")).X.tocsr()
    lab, dec = liblinear_predict(tmp / "m.ll", X)
    our_lab, our_val = ours(tmp, tmp / "m", tmp / "t.svm", "--values")
    assert np.array_equal(lab, our_lab) and dec.shape == (400, 3)
    same_values(dec, our_val)
    r = run("ssl-export", "-f", "libsvm", tmp / "m", tmp / "m.ls", check=1)
    assert r.stderr.strip() == (f"ssl-export: error: {tmp / 'm'}: a 3-class one-vs-rest model "
                                "has no LIBSVM form (LIBSVM's multi-class models vote "
                                "one-vs-one); --format liblinear holds one-vs-rest linear "
                                "models")
    assert not (tmp / "m.ls").exists()


USPS = shared("bench", "usps49-10")


@pytest.mark.parametrize("algo,args", [
    ("lapsvm", ["-g", "0.03125"]), ("laprls", ["-t", "poly", "-g", "0.01", "-d", "2", "-r", "1"]),
    ("tvrls", ["-g", "0.03125", "-k", "10"]), ("cheeger-svm", ["-g", "0.03125", "-k", "10"]),
    ("lapsvm", ["-t", "linear", "-B", "1"])])
def test_kernel_models_as_libsvm_files(tmp, algo, args):
    ssl_train("-q", "-a", algo, *args, "--probability", USPS / "train.svm", tmp / "m",
        check=0)
    run("ssl-export", "-q", "--format", "libsvm", tmp / "m", tmp / "m.ls", check=0)
    X = read_dataset(str(USPS / "test.svm"), n_features=256).X.tocsr()
    lab, dec = libsvm_predict(tmp / "m.ls", X)
    our_lab, our_val = ours(tmp, tmp / "m", USPS / "test.svm", "--values")
    assert np.array_equal(lab, our_lab)
    same_values(dec, our_val)
    # LIBSVM's -b 1 with the exported probA/probB: the same probabilities and labels
    lab_p, prob = libsvm_predict(tmp / "m.ls", X, prob=True)
    our_lab_p, our_prob = ours(tmp, tmp / "m", USPS / "test.svm", "--probability")
    assert np.array_equal(lab_p, our_lab_p)
    np.testing.assert_allclose(prob, our_prob, rtol=1e-7, atol=1e-9)
    m = read_model(str(tmp / "m"))
    if m.function.kernel.name == "linear":  # a linear-kernel expansion also fits LIBLINEAR
        run("ssl-export", "-q", "-f", "liblinear", tmp / "m", tmp / "m.ll", check=0)
        lab, dec = liblinear_predict(tmp / "m.ll", X)
        assert np.array_equal(lab, our_lab)
        same_values(dec, our_val)
    else:
        r = run("ssl-export", "-f", "liblinear", tmp / "m", tmp / "m.ll", check=1)
        assert "kernel is not linear; LIBLINEAR holds linear models only" in r.stderr


def test_usmo_models_export(tmp):
    train = SAMPLES / "pcmac.train"
    ssl_train("-q", "-a", "usmo", "--negatives-as-unlabeled", train, tmp / "lin", check=0)
    run("ssl-export", "-q", "-f", "liblinear", tmp / "lin", tmp / "lin.ll", check=0)
    X = read_dataset(str(PCMAC / "test.svm")).X.tocsr()
    lab, dec = liblinear_predict(tmp / "lin.ll", X)
    our_lab, our_val = ours(tmp, tmp / "lin", PCMAC / "test.svm", "--values")
    assert np.array_equal(lab, our_lab)
    same_values(dec, our_val)
    ssl_train("-q", "-a", "usmo", "--negatives-as-unlabeled", "-t", "rbf", "-g", "0.5",
        train, tmp / "rbf", check=0)
    run("ssl-export", "-q", "-f", "libsvm", tmp / "rbf", tmp / "rbf.ls", check=0)
    # the test rows have a feature the training sample lacks: ssl-predict ignores it, LIBSVM's
    # rbf distance would count it, so LIBSVM gets the model's columns
    width = read_model(str(tmp / "rbf")).n_features
    assert X.shape[1] > width
    lab, dec = libsvm_predict(tmp / "rbf.ls", X[:, :width])
    our_lab, our_val = ours(tmp, tmp / "rbf", PCMAC / "test.svm", "--values")
    assert np.array_equal(lab, our_lab)
    same_values(dec, our_val)


def test_export_errors(tmp):
    r = run("ssl-export", SAMPLES / "pcmac.train", tmp / "x", check=1)
    assert "not an ssl-model file" in r.stderr and not (tmp / "x").exists()
    r = run("ssl-export", "-f", "liblinear", SAMPLES / "pcmac.train", tmp / "x", check=1)
    assert "not an ssl-model file" in r.stderr and not (tmp / "x").exists()
    ssl_train("-q", SAMPLES / "pcmac.train", tmp / "m", check=0)
    r = run("ssl-export", "-f", "liblinear", tmp / "m", tmp / "m", check=2)
    assert "same file" in r.stderr
    assert read_model(str(tmp / "m")).algorithm == "svm"  # the input is intact
    r = run("ssl-export", "-q", "-f", "liblinear", tmp / "m", "-", check=0)
    assert r.stdout.startswith("solver_type L2R_L2LOSS_SVC\nnr_class 2\nlabel 1 -1\n")


def test_export_keeps_the_contract(tmp):
    ssl_train("-q", SAMPLES / "pcmac.train", tmp / "m", check=0)
    r = run("ssl-export", "-f", "liblinear", tmp / "m", "/dev/full", check=1)
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith("ssl-export: error: ")
    (tmp / "old").write_text("keep me\n")
    (tmp / "bad").write_text((tmp / "m").read_text().replace("end\n", ""))
    r = run("ssl-export", "-f", "liblinear", tmp / "bad", tmp / "old", check=1)
    assert "truncated" in r.stderr or "final 'end' line" in r.stderr
    assert (tmp / "old").read_text() == "keep me\n"
    assert not [p for p in tmp.iterdir() if p.name.startswith(".tmp")]
    one = run("ssl-export", "-q", "-f", "libsvm", tmp / "m", tmp / "a", check=0)
    two = run("ssl-export", "-q", "-f", "libsvm", tmp / "m", tmp / "b", check=0)
    assert one.returncode == two.returncode == 0
    assert (tmp / "a").read_bytes() == (tmp / "b").read_bytes()  # same model, same bytes


def test_the_format_is_inferred_from_the_model(tmp):
    """Without --format: a weight vector goes to LIBLINEAR, a binary kernel expansion to
    LIBSVM, a one-vs-rest linear-kernel expansion to LIBLINEAR (LIBSVM has no form of it),
    each byte for byte what --format writes, and the message says it was inferred; a
    one-vs-rest rbf expansion has neither form: exit 1, nothing written."""
    ssl_train("-q", SAMPLES / "pcmac.train", tmp / "lin", check=0)
    r = run("ssl-export", tmp / "lin", tmp / "lin.out", check=0)
    assert "liblinear model (svm, 2 labels; format inferred, --format to choose)" in r.stderr
    run("ssl-export", "-q", "-f", "liblinear", tmp / "lin", tmp / "lin.ll", check=0)
    assert (tmp / "lin.out").read_bytes() == (tmp / "lin.ll").read_bytes()
    ssl_train("-q", "-a", "lapsvm", "-t", "rbf", SAMPLES / "pcmac.train", tmp / "rbf", check=0)
    run("ssl-export", "-q", tmp / "rbf", tmp / "rbf.out", check=0)
    run("ssl-export", "-q", "-f", "libsvm", tmp / "rbf", tmp / "rbf.ls", check=0)
    assert (tmp / "rbf.out").read_bytes() == (tmp / "rbf.ls").read_bytes()
    multi = tmp / "multi.svm"
    X, y = make_classification(n_samples=90, n_features=5, n_informative=4, n_redundant=0,
                               n_classes=3, random_state=0)
    y = y + 1.0
    y[::3] = 0.0
    dump_svmlight_file(X, y, str(multi), zero_based=False)
    ssl_train("-q", "-a", "lapsvm", "-t", "linear", "-k", "5", multi, tmp / "ovr", check=0)
    r = run("ssl-export", tmp / "ovr", tmp / "ovr.out", check=0)
    assert "liblinear model (lapsvm, 3 labels; format inferred" in r.stderr
    ssl_train("-q", "-a", "lapsvm", "-t", "rbf", "-k", "5", multi, tmp / "ovr-rbf", check=0)
    r = run("ssl-export", tmp / "ovr-rbf", tmp / "ovr-rbf.out", check=1)
    assert "no liblinear form either" in r.stderr and not (tmp / "ovr-rbf.out").exists()
