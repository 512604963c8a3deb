"""ssl-train --cluster on dask.distributed LocalClusters bound to 127.0.0.1: the rows stay on
the workers (read there, or shipped), the model is the one-process model, errors are one line,
a lost worker's rows are read again on the workers left (an error that leaves the old model
in place when none is left), and the workers' memory holds
their part of the rows, not all of them."""

import gzip
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest
from conftest import BIN, SAMPLES, run, shared

distributed = pytest.importorskip("distributed")  # a test extra: pip install .[test]

PCMAC = SAMPLES / "pcmac.train"


def local_cluster(n=2, **kw):
    return distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                    host="127.0.0.1", dashboard_address=None, **kw)


@pytest.fixture(scope="module")
def cluster():
    c = local_cluster()
    yield c
    c.close()


def stat(model_text: str, name: str) -> list[float]:
    line = next(x for x in model_text.splitlines() if x.startswith(f"stat {name} "))
    return [float(v) for v in line.split()[2:]]


@pytest.mark.parametrize("algo", ["tsvm", "da"])
def test_cluster_model_is_the_one_process_model(cluster, tmp, algo):
    args = ["-a", algo, "-W", "1e-3", PCMAC]
    run("ssl-train", "-q", "--check", "none", *args, tmp / "local", "-l", tmp / "local.l",
        check=0)
    r = run("ssl-train", "--cluster", cluster.scheduler_address, *args, tmp / "c1", "-l",
            tmp / "c1.l", check=0)
    assert "each worker read its own part" in r.stderr
    run("ssl-train", "-q", "--cluster", cluster.scheduler_address, *args, tmp / "c2", check=0)
    local, c1 = (tmp / "local").read_text(), (tmp / "c1").read_text()
    np.testing.assert_allclose(stat(c1, "objective"), stat(local, "objective"), rtol=1e-9)
    assert (tmp / "c1.l").read_bytes() == (tmp / "local.l").read_bytes()
    assert (tmp / "c2").read_bytes() == (tmp / "c1").read_bytes()  # same blocks, same bytes
    pred = [run("ssl-predict", PCMAC, tmp / m, tmp / f"{m}.p", check=0) for m in ("local", "c1")]
    assert (tmp / "local.p").read_bytes() == (tmp / "c1.p").read_bytes()
    assert pred[0].stderr.splitlines()[-1] == pred[1].stderr.splitlines()[-1]


def test_unlabeled_file_shipped_and_one_vs_rest(cluster, tmp):
    """A compressed TRAIN (the workers cannot cut it) is read here and shipped in pieces;
    --unlabeled rows join it; 5 classes train one-vs-rest; λ auto as in one process."""
    lines = (SAMPLES / "shuttle.train").read_text().splitlines(keepends=True)
    with gzip.open(tmp / "lab.svm.gz", "wt") as f:
        f.writelines(lines[::4])
    (tmp / "unl.svm").write_text("".join(lines[1::4]))
    args = ["-a", "tsvm", tmp / "lab.svm.gz", "--unlabeled", tmp / "unl.svm"]
    run("ssl-train", "-q", "--check", "none", *args, tmp / "local", "-l", tmp / "local.l",
        check=0)
    r = run("ssl-train", "--cluster", cluster.scheduler_address, *args, tmp / "c", "-l",
            tmp / "c.l", check=0)
    assert "read here and shipped in pieces" in r.stderr
    assert "each worker read its own part" in r.stderr  # the plain --unlabeled file
    local, c = (tmp / "local").read_text(), (tmp / "c").read_text()
    assert stat(c, "lambda") == stat(local, "lambda")
    assert len(stat(c, "objective")) == len(stat(local, "objective")) == 5
    np.testing.assert_allclose(stat(c, "objective"), stat(local, "objective"), rtol=1e-9)
    assert (tmp / "c.l").read_bytes() == (tmp / "local.l").read_bytes()


def test_cross_validation_on_the_blocks(cluster):
    local = run("ssl-train", "-a", "svm", "-W", "0.01", "-v", "4", "--seed", "3", PCMAC,
                check=0)
    r = run("ssl-train", "-a", "svm", "-W", "0.01", "-v", "4", "--seed", "3", "--cluster",
            cluster.scheduler_address, PCMAC, check=0)
    assert r.stdout == local.stdout and r.stdout.startswith("Cross Validation Accuracy = ")


def test_a_bad_row_on_a_worker_names_the_file_line(cluster, tmp):
    lines = PCMAC.read_text().splitlines(keepends=True)
    lines[400] = "1 5:0.1 3:0.2\n"  # indices must increase: in the second worker's part
    (tmp / "bad.svm").write_text("".join(lines))
    (tmp / "m").write_text("old model\n")
    r = run("ssl-train", "-a", "tsvm", "--cluster", cluster.scheduler_address, tmp / "bad.svm",
            tmp / "m", check=1)
    err = r.stderr.strip().splitlines()
    assert err[-1].startswith(f"ssl-train: error: {tmp / 'bad.svm'}:401: ")
    assert "Traceback" not in r.stderr
    assert (tmp / "m").read_text() == "old model\n"


@pytest.mark.parametrize("extra,message", [
    (["-a", "tvsvm"], "--cluster trains rls, svm, tsvm, da, lapsvm, laprls; -a tvsvm needs "
                      "all its rows in one process: its graph total variation solvers run in one "
                      "process"),
    (["-a", "usmo"], "-a usmo needs all its rows in one process: its solvers update the model "
                     "after every row or pair of rows"),
    (["--labels", "x"], "--cluster does not take --labels"),
])
def test_usage_errors(extra, message):
    r = run("ssl-train", *extra, "--cluster", "tcp://127.0.0.1:1", PCMAC, check=2)
    assert message in r.stderr and "Traceback" not in r.stderr
    r = run("ssl-train", "--cluster", "tcp://127.0.0.1:1", "-", "m", input="", check=2)
    assert "give a file, not stdin" in r.stderr


def _kill_mid_fit(client, p):
    """Once ``p`` (an ssl-train --cluster process) says its fit is under way, SIGKILL the
    process of the last worker (by pid). Returns the rest of p's stderr."""
    for line in p.stderr:  # the fit is under way once the first switching step is said
        if "λ_u step" in line or "Newton step" in line:
            break
    os.kill(sorted(client.run(os.getpid).values())[-1], signal.SIGKILL)
    return p.stderr.read()


def test_a_lost_workers_rows_are_read_again_and_the_fit_starts_over(tmp):
    """A worker killed mid-fit: its rows are read again on the workers left, the fit starts
    over there (said as a warning) and ends with the one-process model; -l too."""
    data = shared("bench", "w8a-200", "train.svm")
    args = ["-a", "tsvm", "-W", "1e-3", str(data)]
    run("ssl-train", "-q", "--check", "none", *args, tmp / "local", "-l", tmp / "local.l",
        check=0)
    c = local_cluster()
    client = distributed.Client(c)
    try:
        (tmp / "m").write_text("old model\n")
        p = subprocess.Popen([str(BIN / "ssl-train"), "--verbose", "--cluster",
                              c.scheduler_address, *args, str(tmp / "m"), "-l", str(tmp / "l")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        err = _kill_mid_fit(client, p)
        p.wait(timeout=300)
        assert p.returncode == 0, err
        said = [x for x in err.splitlines() if "was lost" in x]
        assert len(said) == 1 and re.match(
            r"ssl-train: warning: tcp://127\.0\.0\.1:\d+: the Dask worker was lost during "
            r"the fit \(.*\); its rows are read again on the [12] workers? left and the fit "
            r"starts over \(restart 1 of at most 3\)$", said[0]), err
        assert "Traceback" not in err
        model, local = (tmp / "m").read_text(), (tmp / "local").read_text()
        np.testing.assert_allclose(stat(model, "objective"), stat(local, "objective"),
                                   rtol=1e-9)
        assert (tmp / "l").read_bytes() == (tmp / "local.l").read_bytes()
    finally:
        client.close()
        c.close()


def test_a_lost_worker_with_none_left_is_an_error_and_the_old_model_stays(tmp):
    """The only worker (no nanny to restart it) killed mid-fit: nothing can read its rows
    again; one line names it, exit 1, and the old model stays."""
    c = local_cluster(0)
    worker = subprocess.Popen([str(BIN / "dask"), "worker", c.scheduler_address, "--no-nanny",
                               "--nthreads", "1", "--host", "127.0.0.1",
                               "--no-dashboard"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    client = distributed.Client(c)
    try:
        client.wait_for_workers(1, timeout=60)
        (tmp / "m").write_text("old model\n")
        data = shared("bench", "w8a-200", "train.svm")
        p = subprocess.Popen([str(BIN / "ssl-train"), "-a", "tsvm", "-W", "1e-3", "--verbose",
                              "--cluster", c.scheduler_address, str(data), str(tmp / "m")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        err = _kill_mid_fit(client, p)
        p.wait(timeout=300)
        assert p.returncode == 1, err
        last = err.strip().splitlines()[-1]
        assert re.match(r"ssl-train: error: tcp://127\.0\.0\.1:\d+: the Dask worker was lost "
                        r"during the fit \(.*\), and no worker is left to read its rows "
                        r"again$", last), err
        assert "Traceback" not in err
        assert (tmp / "m").read_text() == "old model\n"
    finally:
        client.close()
        c.close()
        worker.kill()
        worker.wait()


def _binary_rows(path, rows, k, d, seed):
    """rows lines of k binary features among d, labels from a random hyperplane (± 1)."""
    rng = np.random.default_rng(seed)
    table = [f"{j}:1".encode() for j in range(1, d + 1)]
    w = rng.normal(size=d)
    with open(path, "wb") as f:
        for lo in range(0, rows, 20_000):
            n = min(20_000, rows - lo)
            cols = np.sort(rng.integers(0, d, size=(n, k)), axis=1)
            out = []
            for row in cols:
                row = np.unique(row)
                out.append((b"+1 " if w[row].sum() > 0 else b"-1 ") + b" ".join(
                    table[j] for j in row) + b"\n")
            f.write(b"".join(out))


def test_workers_smaller_than_the_data_train_it(tmp):
    """Four workers, each with a memory limit below the whole data set's size in memory
    (800,000 rows of 60 values: 555 MiB as CSR; the limit is what a worker holds with a fit's
    code loaded plus half of that, 470-480 MiB here), train it: each worker's peak resident
    memory stays below its limit, near its quarter of the rows. The client's peak memory is
    that of a 80x smaller file: it never holds the rows. (The rows are one block of 100,000
    written 8 times: what is measured is where rows are held, not what they say.)"""
    rows = 800_000
    big = tmp / "big.svm"
    _binary_rows(tmp / "block.svm", 100_000, 60, 20_000, 0)
    block = (tmp / "block.svm").read_bytes()
    with open(big, "wb") as f:
        for _ in range(rows // 100_000):
            f.write(block)
    _binary_rows(tmp / "small.svm", 10_000, 60, 20_000, 0)
    size = 12 * 60 * rows + 8 * rows  # CSR: float64 values, int32 indices, int64 row starts
    args = ["-a", "svm", "-W", "100", "-e", "0.001"]
    # twice: a first run on a cold numba cache compiles, and compiling leaves a worker (and
    # the client) larger than loading the cached code, which is what the workers below do
    for _ in range(2):
        probe = local_cluster(1)
        try:
            r = _with_peak(["ssl-train", *args, "--cluster", probe.scheduler_address,
                            tmp / "small.svm", tmp / "ms"])
            assert r.returncode == 0, r.stderr
            small_peak = int(r.stdout.split()[-1])
            with distributed.Client(probe) as cl:
                loaded = max(cl.run(_resident).values())
        finally:
            probe.close()
    limit = int(loaded + 0.5 * size)
    assert limit < size, (loaded, size)
    c = local_cluster(4, memory_limit=limit)
    try:
        r = _with_peak(["ssl-train", *args, "--cluster", c.scheduler_address, big, tmp / "m"])
        with distributed.Client(c) as cl:
            peaks = list(cl.run(_peak_resident).values())
    finally:
        c.close()
    assert r.returncode == 0, r.stderr
    assert "800000 rows" in r.stderr and "on 4 workers" in r.stderr
    assert "trained svm" in r.stderr
    assert len(peaks) == 4
    assert max(peaks) < loaded + 0.25 * size + 80 * 2**20 < limit, (peaks, loaded, size)
    assert int(r.stdout.split()[-1]) < small_peak + 30 * 2**20


def _peak_resident() -> int:
    """This process's peak resident memory since its program started (VmHWM; getrusage's
    ru_maxrss also counts the process it was forked from, here the test's)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))


def _resident() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def _with_peak(cmd):
    """Run an installed command; stdout's last word is its peak resident memory (bytes)."""
    code = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024); "
            "sys.exit(r.returncode)")
    return subprocess.run([sys.executable, "-c", code, str(BIN / cmd[0]), *map(str, cmd[1:])],
                          capture_output=True, text=True, timeout=900)


def test_one_worker_drives_the_fit_there(tmp):
    """With one worker every block is in one process: the fit's steps run there (no round
    trip per CG iteration), its progress lines still reach the command's stderr, and the model
    is the one-process model."""
    c = local_cluster(1)
    try:
        args = ["-a", "da", "-W", "1e-3", PCMAC]
        run("ssl-train", "-q", "--check", "none", *args, tmp / "local", "-l", tmp / "local.l",
            check=0)
        r = run("ssl-train", "--cluster", c.scheduler_address, *args, tmp / "c", "-l",
                tmp / "c.l", check=0)
    finally:
        c.close()
    assert "da: T = " in r.stderr and "transductive objective" in r.stderr
    np.testing.assert_allclose(stat((tmp / "c").read_text(), "objective"),
                               stat((tmp / "local").read_text(), "objective"), rtol=1e-9)
    assert (tmp / "c.l").read_bytes() == (tmp / "local.l").read_bytes()


def _cold_commands_cluster(tmp, cache, nworkers, nthreads):
    """A scheduler and workers started with Dask's own commands, as docs/cluster.md says, with
    NUMBA_CACHE_DIR at ``cache`` (an empty folder): (address, the two processes)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    where = tmp / "scheduler.json"
    sched = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host",
                              "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
                              str(where)], env=env, stderr=subprocess.DEVNULL)
    workers = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker",
                                "--scheduler-file", str(where), "--nworkers", str(nworkers),
                                "--nthreads", str(nthreads), "--no-dashboard"], env=env,
                               stderr=subprocess.DEVNULL)
    with distributed.Client(scheduler_file=str(where), timeout=60) as client:
        client.wait_for_workers(nworkers, timeout=120)
        return client.scheduler.address, (workers, sched)


@pytest.mark.parametrize("how", ["commands 2x1", "LocalCluster 1x2"])
def test_a_cold_numba_cache_on_the_workers_trains(tmp, how, monkeypatch):
    """Workers whose numba cache is empty compile the solvers during the fit: numba's compiler
    then reads the environment again, and a host that had changed NUMBA_NUM_THREADS after the
    worker's pool started made every such fit raise (a traceback, exit 1). The model is the
    one-process model, and a second fit on the now warm workers gives the same bytes."""
    from ssl_svm.solvers.host.pools import POOL_VARIABLES

    for k in POOL_VARIABLES:  # the workers start from a user's shell, not from this suite's
        monkeypatch.delenv(k, raising=False)
    cache = tmp / "numba-cache"
    cache.mkdir()
    args = ["-a", "tsvm", "-W", "1e-3", "--check", "none", PCMAC]
    cold = {"NUMBA_CACHE_DIR": str(cache)}
    procs = ()
    if how.startswith("commands"):
        address, procs = _cold_commands_cluster(tmp, cache, 2, 1)
        c = None
    else:
        c = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                                     host="127.0.0.1", dashboard_address=None, env=cold)
        address = c.scheduler_address
    try:
        r = run("ssl-train", "--cluster", address, *args, tmp / "c", env=cold)
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        # the workers say that they compile (the first fit takes that much longer)
        assert re.search(r"tcp://127\.0\.0\.1:\d+: first run of the cluster fit on this "
                         r"worker: compiling its numba code once", r.stderr), r.stderr
        run("ssl-train", "-q", "--cluster", address, *args, tmp / "c2", env=cold, check=0)
    finally:
        if c is not None:
            c.close()
        for p in procs:
            p.terminate()
            p.wait(timeout=60)
    assert any(cache.rglob("*.nbi")), "the workers compiled nothing: the cache was not cold"
    run("ssl-train", "-q", *args, tmp / "local", check=0)
    np.testing.assert_allclose(stat((tmp / "c").read_text(), "objective"),
                               stat((tmp / "local").read_text(), "objective"), rtol=1e-9)
    assert (tmp / "c2").read_bytes() == (tmp / "c").read_bytes()


def test_an_ipv6_cluster_trains(tmp):
    """A LocalCluster at [::1]: the block hosts listen on the workers' IPv6 address (parsed as
    Dask parses it; '[::1]' with its brackets could not be bound) and the model is the
    one-process model."""
    c = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                 host="[::1]", dashboard_address=None)
    try:
        assert "[::1]" in c.scheduler_address
        args = ["-a", "tsvm", "-W", "1e-3", "--check", "none", PCMAC]
        r = run("ssl-train", "--cluster", c.scheduler_address, *args, tmp / "c", check=0)
    finally:
        c.close()
    assert "each worker read its own part" in r.stderr
    run("ssl-train", "-q", *args, tmp / "local", check=0)
    np.testing.assert_allclose(stat((tmp / "c").read_text(), "objective"),
                               stat((tmp / "local").read_text(), "objective"), rtol=1e-9)


def test_the_check_after_a_cluster_fit_is_the_one_process_check(cluster, tmp):
    """The same verdict and figures from ssl-train, the estimator and a --cluster fit (the
    fit's folds trained where the rows are, the svm on the labeled rows gathered)."""
    import warnings

    import ssl_svm

    args = ["-a", "tsvm", "-W", "1e-3", "--check", "cv", PCMAC]
    local = run("ssl-train", *args, tmp / "local", check=0)
    r = run("ssl-train", "--cluster", cluster.scheduler_address, *args, tmp / "c", check=0)
    line = [x for x in local.stderr.splitlines() if "check against the supervised svm" in x]
    said = [x for x in r.stderr.splitlines() if "check against the supervised svm" in x]
    assert len(line) == len(said) == 1 and ": no harm: " in line[0], local.stderr
    assert said[0].split("): ", 1)[1] == line[0].split("): ", 1)[1]  # all but the seconds
    X, y = ssl_svm.load_svmlight(str(PCMAC))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ssl_svm.SSLWarning)
        clf = ssl_svm.TSVM(lam=1e-3, check="cv", unlabeled_label=0, random_state=0).fit(X, y)
    assert clf.check_.verdict == "no harm" and clf.check_.text() in line[0]
    # Auto and ssl-tune -a auto --out: the winner's verdict from the selection's folds, the
    # same figures (tsvm against the svm on the same folds, the svm's λ its best there)
    auto = ssl_svm.Auto(candidates=["svm", "tsvm"], grids={"tsvm": {"lambda": [1e-3]}},
                        unlabeled_label=0).fit(X, y)
    assert auto.best_estimator_.check_ is auto.check_
    assert auto.check_.verdict == "no harm" and auto.check_.text() in line[0]
    tune = run("ssl-tune", "-a", "svm,tsvm", "-G", "tsvm.lambda=1e-3", "--out",
               tmp / "auto.model", PCMAC, check=0)
    said = [x for x in tune.stderr.splitlines() if "check against the supervised svm" in x]
    assert len(said) == 1 and said[0].split("): ", 1)[1] == line[0].split("): ", 1)[1]
    # da's λ auto: the folds take the λ the fit chose, on the cluster as in one process
    da = ["-a", "da", "--check", "cv", PCMAC]
    local = run("ssl-train", *da, tmp / "da.local", check=0)
    r = run("ssl-train", "--cluster", cluster.scheduler_address, *da, tmp / "da.c", check=0)
    line, said = ([x.split("): ", 1)[1] for x in p.stderr.splitlines()
                   if "against the supervised svm" in x or "ignoring the unlabeled" in x]
                  for p in (local, r))
    assert len(line) == 1 and said == line, r.stderr
    assert stat((tmp / "da.c").read_text(), "lambda") == stat(
        (tmp / "da.local").read_text(), "lambda")
    # --check auto on over 2,000 unlabeled rows: the folds fit on a seeded 2,000 of them, the
    # same rows as in one process
    from ssl_svm import trust
    from ssl_svm.formats.svmlight import read_dataset
    from ssl_svm.solvers.registry import ALGORITHMS

    lines = PCMAC.read_text().splitlines(keepends=True)
    big = tmp / "big.svm"
    big.write_text("".join(lines + [x for x in lines if x.startswith("0 ")] * 11))
    r = run("ssl-train", "--cluster", cluster.scheduler_address, *args[:-3], big, tmp / "c",
            check=0)
    said = [x.split("): ", 1)[1] for x in r.stderr.splitlines()
            if "check against the supervised svm" in x or "ignoring the unlabeled rows" in x]
    assert len(said) == 1 and "the folds' fits used 2000 of the 5400 unlabeled rows" in said[0], \
        r.stderr
    data = read_dataset(str(big))
    algo = ALGORITHMS["tsvm"]
    params = {**algo.defaults(), "lambda": 1e-3}
    m = algo.fit(data.X, data.y, data.cost, params)
    unl = m.labels_from_values(m.decision_function(data.X[data.y == 0]))
    c = trust.compare(algo, data.X, data.y, data.cost, params, unlabeled=unl,
                      share=trust.check_share(5, 5400))
    assert c.text() in said[0]
