"""--cluster end to end on a dask.distributed LocalCluster bound to 127.0.0.1: ssl-tune and
ssl-predict give the local results; a worker killed mid-run is survived."""

import os
import signal
import subprocess
import time

import pytest
from conftest import BIN, SAMPLES, run, shared
from test_tune import LINE, best_line, results

distributed = pytest.importorskip("distributed")  # a test extra: pip install .[test]

PCMAC = SAMPLES / "pcmac.train"
GRID = ["-a", "tsvm", "--no-warm-start", "-G", "lambda=1e-5:1e-1:x10", "-G",
        "lambda_u=0.1,1,10"]


@pytest.fixture(scope="module")
def cluster():
    c = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                 host="127.0.0.1", dashboard_address=None)
    client = distributed.Client(c)
    yield c, client
    client.close()
    c.close()


@pytest.fixture(scope="module")
def local_grid():
    return run("ssl-tune", "-q", *GRID, PCMAC, check=0).stdout


def test_tune_on_cluster_equals_local(cluster, local_grid):
    c, _ = cluster
    r = run("ssl-tune", *GRID, "--cluster", c.scheduler_address, PCMAC, check=0)
    assert f"Dask cluster {c.scheduler_address} (2 workers, 2 threads)" in r.stderr
    assert results(r.stdout) == results(local_grid) and len(results(r.stdout)) == 15
    assert best_line(r.stdout) == best_line(local_grid)


@pytest.mark.parametrize("algo", ["tsvm", "lapsvm"])  # linear and rbf kernel-expansion models
def test_predict_on_cluster_is_byte_identical(cluster, tmp, algo):
    c, _ = cluster
    data = shared("datasets", "a9a", "a9a")  # 2.2 MB: three 1 MB pieces
    lines = data.read_text().splitlines(keepends=True)
    (tmp / "train").write_text("".join(lines[:1000]))
    run("ssl-train", "-q", "-a", algo, tmp / "train", tmp / "m", check=0)
    seq = run("ssl-predict", "--values", "--chunk-mb", "1", data, tmp / "m", tmp / "a", check=0)
    par = run("ssl-predict", "--values", "--chunk-mb", "1", "--cluster", c.scheduler_address,
              data, tmp / "m", tmp / "b", check=0)
    assert (tmp / "a").read_bytes() == (tmp / "b").read_bytes()
    assert seq.stderr.splitlines()[-1] == par.stderr.splitlines()[-1]  # the accuracy line


def test_worker_killed_mid_run_is_survived(cluster, local_grid):
    c, client = cluster
    p = subprocess.Popen([str(BIN / "ssl-tune"), "-q", *GRID, "--cluster", c.scheduler_address,
                          str(PCMAC)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    first = p.stdout.readline()
    assert LINE.match(first.rstrip("\n")), first
    pids = client.run(os.getpid)
    victim = sorted(pids.values())[0]
    os.kill(victim, signal.SIGKILL)  # the nanny starts a new worker; its tasks run again
    # not communicate(): it reads the pipes' file descriptors and would drop whatever the
    # readline above already buffered; -q keeps stderr far below a pipe's capacity
    rest = p.stdout.read()
    err = p.stderr.read()
    p.wait(timeout=600)
    assert p.returncode == 0, err
    out = first + rest
    assert results(out) == results(local_grid)
    assert best_line(out) == best_line(local_grid)
    deadline = time.time() + 60  # the cluster recovers its second worker
    while len(client.scheduler_info()["workers"]) < 2 and time.time() < deadline:
        time.sleep(0.2)
