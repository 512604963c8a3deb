"""ssl-predict -j N: byte-identical to sequential prediction for every input kind, errors
with the sequential messages."""

import gzip

import pytest
from conftest import SAMPLES, run, shared


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("m")
    run("ssl-train", "-q", "-a", "tsvm", "-W", "1e-3", SAMPLES / "pcmac.train", d / "m",
        check=0)
    run("ssl-train", "-q", "-a", "lapsvm", "-t", "rbf", SAMPLES / "pcmac.train", d / "k",
        check=0)
    # a kernel model whose prediction goes through dense BLAS products (a9a: 123 binary
    # features), where the rounding depends on BLAS's thread count
    a9a = shared("datasets", "a9a", "a9a").read_text().splitlines(keepends=True)
    (d / "a9a.head").write_text("".join(a9a[:1500]))
    run("ssl-train", "-q", "-a", "lapsvm", "-t", "rbf", d / "a9a.head", d / "a9a.k", check=0)
    return d


@pytest.mark.parametrize("kind,data", [("m", ("datasets", "pcmac", "pcmac")),
                                       ("k", ("datasets", "pcmac", "pcmac")),
                                       ("a9a.k", ("datasets", "a9a", "a9a"))])
def test_j2_is_byte_identical(model, tmp, kind, data):
    data = shared(*data)  # 2.6 and 2.2 MB: three 1 MB pieces
    seq = run("ssl-predict", "--values", "--chunk-mb", "1", data, model / kind, tmp / "a",
              check=0)
    par = run("ssl-predict", "-j", "2", "--values", "--chunk-mb", "1", data, model / kind,
              tmp / "b", check=0)
    a = (tmp / "a").read_bytes()
    assert a == (tmp / "b").read_bytes()
    assert a.count(b"\n") == {"pcmac": 1946, "a9a": 32561}[data.name]
    assert seq.stderr == par.stderr  # the same accuracy line


def test_j2_stdin_gzip_and_labels_file(model, tmp):
    data = shared("datasets", "pcmac", "pcmac").read_bytes()
    (tmp / "plain").write_bytes(data)
    ref = run("ssl-predict", "--values", "--chunk-mb", "1", tmp / "plain", model / "m", check=0)
    (tmp / "d.gz").write_bytes(gzip.compress(data))
    gz = run("ssl-predict", "--values", "-j", "2", "--chunk-mb", "1", tmp / "d.gz", model / "m",
             check=0)
    stdin = run("ssl-predict", "--values", "-j", "2", "--chunk-mb", "1", "-", model / "m",
                input=data, check=0)
    assert gz.stdout == ref.stdout == stdin.stdout.decode() and gz.stderr == ref.stderr
    assert "Accuracy = " in ref.stderr
    # SVMlin's layout: features only, labels in their own file
    lines = data.decode().splitlines()
    (tmp / "x").write_text("".join(x.split(" ", 1)[1] + "\n" for x in lines))
    (tmp / "y").write_text("".join(x.split(" ", 1)[0] + "\n" for x in lines))
    lab = run("ssl-predict", "--values", "-j", "2", "--chunk-mb", "1", "--labels", tmp / "y",
              tmp / "x", model / "m", check=0)
    assert lab.stdout == ref.stdout and lab.stderr == ref.stderr


def test_j2_error_in_a_later_piece(model, tmp):
    lines = shared("datasets", "pcmac", "pcmac").read_text().splitlines()
    lines[1500] = lines[1500].replace(":", "=", 1)
    (tmp / "bad").write_text("\n".join(lines) + "\n")
    seq = run("ssl-predict", "--chunk-mb", "1", tmp / "bad", model / "m", tmp / "a", check=1)
    par = run("ssl-predict", "-j", "2", "--chunk-mb", "1", tmp / "bad", model / "m", tmp / "b",
              check=1)
    assert par.stderr == seq.stderr and f"{tmp / 'bad'}:1501: " in par.stderr
    assert not (tmp / "b").exists()  # no half output


def test_j_usage():
    r = run("ssl-predict", "-j", "0", SAMPLES / "pcmac.test", SAMPLES / "pcmac.test", check=2)
    assert "'-j': must not be 0 (1 = no parallelism, -1 = all cores)" in r.stderr
