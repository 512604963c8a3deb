"""ssl-predict -j N: byte-identical to sequential prediction for every input kind, errors
with the sequential messages. The worker processes start at once here (SSL_SVM_SERIAL_SECONDS
= 0): on inputs this small a -j run would otherwise do all the work in its own process."""

import gzip

import pytest
from conftest import SAMPLES, run, shared, ssl_train

WORKERS = {"SSL_SVM_SERIAL_SECONDS": "0"}


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("m")
    ssl_train("-q", "-a", "tsvm", "-W", "1e-3", SAMPLES / "pcmac.train", d / "m",
        check=0)
    ssl_train("-q", "-a", "lapsvm", "-t", "rbf", SAMPLES / "pcmac.train", d / "k",
        check=0)
    # a kernel model whose prediction goes through dense BLAS products (a9a: 123 binary
    # features), where the rounding depends on BLAS's thread count
    a9a = shared("datasets", "a9a", "a9a").read_text().splitlines(keepends=True)
    (d / "a9a.head").write_text("".join(a9a[:1500]))
    ssl_train("-q", "-a", "lapsvm", "-t", "rbf", d / "a9a.head", d / "a9a.k", check=0)
    return d


@pytest.mark.parametrize("kind,data", [("m", ("datasets", "pcmac", "pcmac")),
                                       ("k", ("datasets", "pcmac", "pcmac")),
                                       ("a9a.k", ("datasets", "a9a", "a9a"))])
def test_j2_is_byte_identical(model, tmp, kind, data):
    data = shared(*data)  # 2.6 and 2.2 MB: three 1 MB pieces
    seq = run("ssl-predict", "--values", "--chunk-mb", "1", data, model / kind, tmp / "a",
              check=0)
    par = run("ssl-predict", "-j", "2", "--values", "--chunk-mb", "1", data, model / kind,
              tmp / "b", check=0, env=WORKERS)
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
             check=0, env=WORKERS)
    stdin = run("ssl-predict", "--values", "-j", "2", "--chunk-mb", "1", "-", model / "m",
                input=data, check=0, env=WORKERS)
    assert gz.stdout == ref.stdout == stdin.stdout.decode() and gz.stderr == ref.stderr
    assert "Accuracy = " in ref.stderr
    # SVMlin's layout: features only, labels in their own file
    lines = data.decode().splitlines()
    (tmp / "x").write_text("".join(x.split(" ", 1)[1] + "\n" for x in lines))
    (tmp / "y").write_text("".join(x.split(" ", 1)[0] + "\n" for x in lines))
    lab = run("ssl-predict", "--values", "-j", "2", "--chunk-mb", "1", "--labels", tmp / "y",
              tmp / "x", model / "m", check=0, env=WORKERS)
    assert lab.stdout == ref.stdout and lab.stderr == ref.stderr


def test_j2_error_in_a_later_piece(model, tmp):
    lines = shared("datasets", "pcmac", "pcmac").read_text().splitlines()
    lines[1500] = lines[1500].replace(":", "=", 1)
    (tmp / "bad").write_text("\n".join(lines) + "\n")
    seq = run("ssl-predict", "--chunk-mb", "1", tmp / "bad", model / "m", tmp / "a", check=1)
    par = run("ssl-predict", "-j", "2", "--chunk-mb", "1", tmp / "bad", model / "m", tmp / "b",
              check=1, env=WORKERS)
    assert par.stderr == seq.stderr and f"{tmp / 'bad'}:1501: " in par.stderr
    assert not (tmp / "b").exists()  # no half output


def test_j_usage():
    r = run("ssl-predict", "-j", "0", SAMPLES / "pcmac.test", SAMPLES / "pcmac.test", check=2)
    assert "'-j': must not be 0 (1 = no parallelism, -1 = all cores)" in r.stderr


def test_a_small_job_runs_in_this_process_and_a_bad_budget_is_one_line(model, tmp):
    """On the default budget (2 s of work) three quick pieces never start a worker: the same
    bytes as -j 1; a value of SSL_SVM_SERIAL_SECONDS that is not a number is the run's error."""
    data = shared("datasets", "pcmac", "pcmac")
    seq = run("ssl-predict", "--values", "--chunk-mb", "1", data, model / "m", tmp / "a")
    par = run("ssl-predict", "--values", "-j", "2", "--chunk-mb", "1", data, model / "m",
              tmp / "b", env={"SSL_SVM_SERIAL_SECONDS": None})
    assert (tmp / "a").read_bytes() == (tmp / "b").read_bytes() and seq.stderr == par.stderr
    bad = run("ssl-predict", "-j", "2", data, model / "m", tmp / "c", check=1,
              env={"SSL_SVM_SERIAL_SECONDS": "soon"})
    assert bad.stderr == ("ssl-predict: error: SSL_SVM_SERIAL_SECONDS: 'soon' is not a number "
                          "of seconds from 0 to 1e6 (the work a -j run does itself before "
                          "starting workers)\n")
    assert not (tmp / "c").exists()


def test_the_first_tasks_run_here_until_the_rest_looks_worth_workers(monkeypatch):
    """Runner.run: quick tasks all in this process (no worker pool); tasks whose mean time
    times the tasks left exceeds the budget: the rest go to the workers, in order."""
    import contextlib
    import time

    from ssl_svm.cli import parallel
    from ssl_svm.solvers.host import pools as host_pools

    pools = []

    @contextlib.contextmanager
    def fake_backend(self, batch_size="auto"):
        class Par:
            return_as = None

            def __call__(self, jobs):
                pools.append(True)
                return [f(*a, **k) for f, a, k in jobs]

        yield Par()

    monkeypatch.setattr(parallel.Runner, "_backend", fake_backend)
    monkeypatch.setattr(parallel, "available_cpus", lambda: 2)
    hosted = []

    def quick(i):
        hosted.append(getattr(host_pools._hosted, "on", False))
        return i * i

    monkeypatch.setenv("SSL_SVM_SERIAL_SECONDS", "2")
    r = parallel.Runner(2, tasks=10)
    assert list(r.run(quick, [(i,) for i in range(10)], ordered=True)) == [i * i for i in range(10)]
    assert pools == [] and all(hosted)

    def slow(i):
        time.sleep(0.05)
        return i

    monkeypatch.setenv("SSL_SVM_SERIAL_SECONDS", "0.2")
    r = parallel.Runner(2, tasks=10)
    assert list(r.run(slow, [(i,) for i in range(10)], ordered=True, window=4)) == list(range(10))
    assert pools  # 0.05 s × 9 left > 0.2 s: the rest went to the workers
    r.close()
