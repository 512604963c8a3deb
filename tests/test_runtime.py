"""Thread pools and start-up: CPU quotas, the user's thread variables, TBB, -j capped at the
CPUs, --help without numpy/scipy/numba, the first-run compilation notice."""

import os
import platform
import subprocess
import sys

import pytest
from conftest import BIN, SAMPLES, run, shared

from ssl_svm.solvers.host import numba_start, pools

# the variables configure() reads or sets: tests start each command without the ones the test
# process itself inherited from ssl_svm.solvers/__init__
THREAD_VARS = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS",
               "OPENBLAS_THREAD_TIMEOUT", "NUMBA_THREADING_LAYER")
CLEAN = {k: None for k in THREAD_VARS}


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_cgroup_v2_quota_is_the_smallest_along_the_ancestors(tmp):
    _write(tmp / "proc", "0::/job/step\n")
    _write(tmp / "root" / "job" / "step" / "cpu.max", "max 100000\n")
    _write(tmp / "root" / "job" / "cpu.max", "150000 100000\n")
    _write(tmp / "root" / "cpu.max", "400000 100000\n")
    assert pools.cgroup_cpu_limit(str(tmp / "root"), str(tmp / "proc")) == 1.5


def test_cgroup_v1_quota_and_no_quota(tmp):
    _write(tmp / "proc", "4:memory:/x\n2:cpu,cpuacct:/job\n")
    _write(tmp / "root" / "cpu,cpuacct" / "job" / "cpu.cfs_quota_us", "50000\n")
    _write(tmp / "root" / "cpu,cpuacct" / "job" / "cpu.cfs_period_us", "100000\n")
    assert pools.cgroup_cpu_limit(str(tmp / "root"), str(tmp / "proc")) == 0.5
    _write(tmp / "root" / "cpu,cpuacct" / "job" / "cpu.cfs_quota_us", "-1\n")
    assert pools.cgroup_cpu_limit(str(tmp / "root"), str(tmp / "proc")) is None
    assert pools.cgroup_cpu_limit(str(tmp / "root"), str(tmp / "missing")) is None


def test_available_cpus_rounds_a_quota_up_and_never_exceeds_the_affinity(monkeypatch):
    affinity = len(os.sched_getaffinity(0))
    monkeypatch.setattr(pools, "cgroup_cpu_limit", lambda: 0.3)
    assert pools.available_cpus() == 1
    monkeypatch.setattr(pools, "cgroup_cpu_limit", lambda: 1000.0)
    assert pools.available_cpus() == affinity
    monkeypatch.setattr(pools, "cgroup_cpu_limit", lambda: None)
    assert pools.available_cpus() == affinity


def test_configure_keeps_what_the_user_set():
    env = {}
    pools.configure(env)
    assert env["OMP_WAIT_POLICY"] == "passive"
    assert env["OPENBLAS_THREAD_TIMEOUT"] == "4"
    assert env["NUMBA_NUM_THREADS"] == str(pools.available_cpus())
    assert env["OPENBLAS_NUM_THREADS"] == str(pools.available_cpus())
    env = {"OMP_NUM_THREADS": "3,2", "OMP_WAIT_POLICY": "active"}
    pools.configure(env)
    assert env["NUMBA_NUM_THREADS"] == "3"
    assert env["OMP_WAIT_POLICY"] == "active"
    assert "OPENBLAS_NUM_THREADS" not in env  # OpenBLAS reads OMP_NUM_THREADS itself
    env = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "4", "OPENBLAS_THREAD_TIMEOUT": "28"}
    pools.configure(env)
    assert env["NUMBA_NUM_THREADS"] == "1" and env["OPENBLAS_THREAD_TIMEOUT"] == "28"
    env = {"NUMBA_NUM_THREADS": "zero", "OMP_NUM_THREADS": "nonsense"}
    pools.configure(env)
    assert env["NUMBA_NUM_THREADS"] == str(pools.available_cpus())


def _threads_line(**env):
    r = run("ssl-train", "--verbose", "-a", "tsvm", "-W", "0.001",
            shared("bench", "pcmac-svmlin", "train.svm"), "-", check=0, env={**CLEAN, **env})
    return next(line for line in r.stderr.splitlines() if line.startswith("threads: "))


@pytest.mark.skipif(not (sys.platform.startswith("linux") and platform.machine() == "x86_64"),
                    reason="the tbb dependency has wheels for x86-64 only")
def test_training_runs_on_tbb_with_the_cpus_available():
    """pcmac tsvm runs threaded products (its rows hold more than PARALLEL_NNZ values): on the
    tbb layer, whose loops do not stall when another process holds a core."""
    n = pools.available_cpus()
    line = _threads_line()
    assert f"numba {n} threads (tbb layer)" in line, line
    assert f"{n} CPUs available" in line


def test_the_users_thread_counts_are_honoured():
    assert "numba 1 threads" in _threads_line(OMP_NUM_THREADS="1")
    assert "numba 1 threads" in _threads_line(NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="2")
    line = _threads_line(NUMBA_THREADING_LAYER="workqueue")
    assert "(workqueue layer)" in line, line


def test_jobs_are_capped_at_the_cpus(tmp):
    data = SAMPLES / "pcmac.test"
    model = tmp / "m"
    run("ssl-train", "-q", "-a", "svm", SAMPLES / "pcmac.train", model, check=0)
    one = run("ssl-predict", data, model, check=0)
    many = run("ssl-predict", "-j", "64", "--chunk-mb", "1", data, model, check=0)
    n = pools.available_cpus()
    assert many.stdout == one.stdout
    if n < 64:
        assert (f"-j 64: {n} CPU{'' if n == 1 else 's'} available to this process; running "
                f"{n} worker") in many.stderr


def _modules_loaded(prog, *args):
    """The numerical modules a command imported before exiting."""
    code = ("import sys\n"
            f"from ssl_svm.cli import {prog} as m\n"
            "try:\n"
            f"    m.main({list(args)!r})\n"
            "except SystemExit:\n"
            "    pass\n"
            "print('LOADED:', *sorted(n for n in ('numpy', 'scipy', 'numba') if n in sys.modules))")
    r = subprocess.run([str(BIN / "python"), "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return next(line for line in r.stdout.splitlines() if line.startswith("LOADED:"))[7:].strip()


@pytest.mark.parametrize("prog,args", [
    ("train", ["--help"]),
    ("train", ["-a", "tsvm", "-h"]),
    ("train", ["-a", "tsvm", "-W", "-1", "x.svm"]),      # option error
    ("train", ["-a", "nonsense", "x.svm"]),
    ("train", ["-a", "svm", "--prior", "0.5", "x.svm"]),  # an option of another solver
    ("predict", ["--help"]),
    ("predict", ["x.svm"]),                               # missing argument
    ("export", ["--help"]),
    ("export", ["-f", "nonsense", "m", "o"]),
])
def test_help_and_option_errors_load_no_numerical_library(prog, args):
    assert _modules_loaded(prog, *args) == ""


def test_numba_starts_once_inside_the_guard(monkeypatch):
    """svm and rls start numba inside the fit, when it needs it: the start holds the signals
    (the Start's guard) once, and names the solver for the compile notice unless a command
    named it first."""
    monkeypatch.setattr(numba_start, "_started", set())
    monkeypatch.setattr(numba_start, "_start", numba_start.Start())
    held = []

    class Guard:
        def __enter__(self):
            held.append(True)

        def __exit__(self, *exc):
            return False

    with numba_start.starting(guard=Guard):
        numba_start.start_numba(("ssl_svm.solvers.linalg",), what="the linear solvers")
        numba_start.start_numba(("ssl_svm.solvers.linalg",), what="the linear solvers")
        assert held == [True]
        assert numba_start.current_start().label == "the linear solvers"
    assert numba_start.current_start() == numba_start.Start()  # put back after the block
    numba_start.set_start(label="svm")
    monkeypatch.setattr(numba_start, "_started", set())
    numba_start.start_numba(("ssl_svm.solvers.linalg",), what="the linear solvers")
    assert numba_start.current_start().label == "svm"


def test_a_warm_clock_leaves_out_compiling():
    """What numba's compiler takes (here a fresh function's compile) is one-time work: a
    WarmClock around it counts the rest of the block only. The check after a fit estimates
    its folds from this: a first fit on a cold cache compiled for seconds, and the check was
    skipped as too slow."""
    import time

    import numba

    from ssl_svm.solvers import jit

    jit.install()

    @numba.njit(cache=False)
    def affine(x):
        return 2.0 * x + 1.0

    with numba_start.WarmClock() as clock:
        before = numba_start.one_time_seconds()
        t0 = time.perf_counter()
        assert affine(1.0) == 3.0
        first = time.perf_counter() - t0
        counted = numba_start.one_time_seconds() - before
        time.sleep(0.1)
    assert first > 0.01 and 0.9 * first <= counted <= first
    assert 0.1 <= clock.seconds < 0.1 + first / 2
    with numba_start.WarmClock() as again:  # compiled now: nothing left out
        before = numba_start.one_time_seconds()
        affine(2.0)
    assert numba_start.one_time_seconds() == before and again.seconds < 0.01


def test_the_collector_pauses_while_numba_compiles_and_comes_back_as_it_was():
    """numba's compiler runs with the garbage collector paused (its objects made the collector
    run full passes); afterwards the collector is as the host left it, on or off, and
    overlapping pauses (threads) end with the last."""
    import gc
    import threading

    import numba

    from ssl_svm.solvers import jit

    jit.install()
    seen = []

    @numba.njit(cache=False)
    def twice(x):
        return 2.0 * x

    class Spy(numba.core.event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            seen.append(gc.isenabled())

    assert gc.isenabled()
    with numba.core.event.install_listener("numba:compile", Spy()):
        assert twice(1.0) == 2.0
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        with numba_start.gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the host had it off: still off
    finally:
        gc.enable()
    numba_start.pause_gc()
    other = threading.Thread(target=lambda: (numba_start.pause_gc(), numba_start.resume_gc()))
    other.start()
    other.join()
    assert not gc.isenabled()  # the other thread's pause ended; this one's has not
    numba_start.resume_gc()
    assert gc.isenabled()


def test_the_compile_notice_comes_once_per_process_and_only_when_compiling(tmp):
    """A cache miss of a package function calls jit.notice once; a hit does not."""
    code = ("import numpy as np\n"
            "from ssl_svm.solvers import jit\n"
            "from ssl_svm.solvers.host import numba_start\n"
            "numba_start.set_start(label='svm')\n"
            "jit.notice = lambda text, warning: print('NOTICE', warning, text)\n"
            "from ssl_svm.solvers import linalg\n"
            "linalg.sq_norm(np.ones(3)); linalg.sq_norm(np.ones(3))\n"
            "linalg.squared_loss(np.ones(3), np.ones(3), np.ones(3))\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp / "cache")}
    outs = [subprocess.run([str(BIN / "python"), "-c", code], capture_output=True, text=True,
                           env=env) for _ in range(2)]
    assert [o.returncode for o in outs] == [0, 0], outs[0].stderr
    assert outs[0].stdout == ("NOTICE False first run of svm: compiling its numba code once (up "
                              "to a minute; later runs load it from the cache)\n")
    assert outs[1].stdout == ""


@pytest.mark.parametrize("algorithm", ["svm", "rls"])
def test_a_small_linear_fit_never_starts_numba(tmp, algorithm):
    """A linear fit on a small file reads, trains and writes its model on numpy and scipy
    alone (numba's start would cost more than the whole run), and the model is the one the
    same command always writes."""
    args = ["-q", "-a", algorithm, str(SAMPLES / "pcmac.train")]
    assert _modules_loaded("train", *args, str(tmp / "a")) == "numpy scipy"
    run("ssl-train", *args, tmp / "b", check=0)
    assert (tmp / "a").read_bytes() == (tmp / "b").read_bytes()
    assert _modules_loaded("predict", str(SAMPLES / "pcmac.test"), str(tmp / "a"),
                           str(tmp / "p")) == "numpy scipy"


def test_svm_on_a_split_file_of_mostly_unlabeled_rows_never_starts_numba(tmp):
    """pcmac-svmlin's training file (79,000 values, 50 labeled rows): the Python parser reads it
    in less time than numba's start alone, and the fit on its labeled rows runs on numpy."""
    train = shared("bench", "pcmac-svmlin", "train.svm")
    assert _modules_loaded("train", "-q", "-a", "svm", str(train), str(tmp / "m")) == \
        "numpy scipy"
    assert (tmp / "m").read_bytes()


@pytest.mark.parametrize("algo", ["tsvm", "da"])
def test_tsvm_and_da_on_a_small_file_never_start_numba(tmp, algo):
    """The sample file (500 rows, 27,000 values): the semi-supervised linear fits, λ auto's
    cross-validation included, run on numpy from start to end (numba's start-up alone costs
    more than such a fit)."""
    assert _modules_loaded("train", "-q", "--check", "none", "-a", algo,
                           str(SAMPLES / "pcmac.train"), str(tmp / "m")) == "numpy scipy"
    assert (tmp / "m").read_bytes()


def test_a_task_share_set_before_numba_starts_sizes_its_pool():
    """A -j worker's share of the CPUs, set while numba is not loaded (small linear fits never
    load it), becomes the size of numba's pool when something starts it."""
    code = ("import os, sys\n"
            "from ssl_svm.solvers.host import pools\n"
            "pools.limit_threads(1)\n"
            "assert 'numba' not in sys.modules\n"
            "import numba\n"
            "print(numba.get_num_threads(), numba.config.NUMBA_NUM_THREADS)")
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    r = subprocess.run([str(BIN / "python"), "-c", code], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "1"]


def test_a_dask_task_takes_its_workers_share_of_the_cpus(monkeypatch):
    """On a Dask worker running 2 tasks at once, each task's numba loops get half the CPUs."""
    import types

    import numba

    class Worker:
        nthreads = 2

    fake = types.ModuleType("distributed")
    fake.get_worker = lambda: Worker()
    monkeypatch.setitem(sys.modules, "distributed", fake)
    before = numba.get_num_threads()
    try:
        pools.limit_threads(None)
        want = max(1, min(pools.available_cpus() // 2, numba.config.NUMBA_NUM_THREADS))
        assert numba.get_num_threads() == want
        pools.limit_threads(1)
        assert numba.get_num_threads() == 1
    finally:
        numba.set_num_threads(before)
    fake.get_worker = lambda: (_ for _ in ()).throw(ValueError("no worker"))
    pools.limit_threads(None)  # outside a worker: unchanged
    assert numba.get_num_threads() == before
