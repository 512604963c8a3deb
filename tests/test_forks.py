"""A command's check folds in forked children (ssl_svm.solvers.host.forks): the same results
and warnings as one after another, failures raised as the serial run raises them, nothing
left running. Each case runs in a fresh interpreter, as a command does: a test process has
threads of its own, where nothing forks."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import BIN, SAMPLES, run

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux")

PRELUDE = """
import json, os, sys, warnings
import numpy as np
from ssl_svm.solvers.host import forks
from ssl_svm.exceptions import UnverifiedWarning
"""


def run_script(body: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    code = PRELUDE + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONWARNINGS": ""})


def test_children_give_the_serial_results_and_warnings_in_task_order():
    out = run_script("""
        def fn(i):
            if i % 2:
                warnings.warn(f"task {i} in {'child' if os.getpid() != PARENT else 'here'}",
                              UnverifiedWarning)
            return np.arange(i + 1) * 1.5 + i

        PARENT = os.getpid()
        said = {}
        for children in (0, 2, 3):
            forks.allow(children)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                batch = forks.Batch(fn, range(5))
                started = len(batch.children)
                got = [v.tolist() for v in batch.results()]
            said[children] = [started, got, [(w.category.__name__, str(w.message))
                                             for w in caught]]
        print(json.dumps(said))
    """)
    assert out.returncode == 0, out.stderr
    said = json.loads(out.stdout)
    serial = said["0"]
    assert serial[0] == 0
    assert serial[1] == [[j * 1.5 + k for j in range(k + 1)] for k in range(5)]
    assert serial[2] == [["UnverifiedWarning", "task 1 in here"],
                         ["UnverifiedWarning", "task 3 in here"]]
    for children in ("2", "3"):
        started, got, warned = said[children]
        assert started == int(children)
        assert got == serial[1]
        # the same warnings, of the same class, in task order (raised in the children)
        assert warned == [["UnverifiedWarning", "task 1 in child"],
                          ["UnverifiedWarning", "task 3 in child"]]


def test_a_task_that_fails_or_dies_in_a_child_runs_again_here():
    out = run_script("""
        PARENT = os.getpid()

        def dies(i):
            if i == 2 and os.getpid() != PARENT:
                os.kill(os.getpid(), 9)  # killed (out of memory, say): its tasks run here
            return np.full(3, float(i))

        def fails(i):
            if i == 3:
                where = "a child" if os.getpid() != PARENT else "here"
                raise ValueError(f"task {i} failed in {where}")
            return np.zeros(1)

        forks.allow(2)
        batch = forks.Batch(dies, range(5))
        assert len(batch.children) == 2
        print(json.dumps([v.tolist() for v in batch.results()]))
        batch = forks.Batch(fails, range(5))
        try:
            batch.results()
        except ValueError as e:
            print(e)
    """)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert json.loads(lines[0]) == [[float(i)] * 3 for i in range(5)]
    assert lines[1] == "task 3 failed in here"  # the serial run's error, raised here


def test_every_childs_output_is_read_as_it_comes(tmp_path):
    """A child whose results fill its pipe goes on while another child still works: task 0
    (child 0, read first) waits for a mark that child 1 leaves after its large task 1, so a
    parent that read child 0 to its end before child 1 left child 1 stuck on a full pipe
    and task 0 without its mark."""
    mark = tmp_path / "mark"
    out = run_script(f"""
        import time
        MARK = {str(mark)!r}

        def fn(i):
            if i == 0:
                end = time.monotonic() + 20
                while not os.path.exists(MARK) and time.monotonic() < end:
                    time.sleep(0.01)
                return np.array([float(os.path.exists(MARK))])
            if i == 1:
                return np.arange(200_000, dtype=np.float64)  # 1.6 MB: 25 pipes' worth
            if i == 3:
                open(MARK, "w").close()
            return np.array([float(i)])

        forks.allow(2)
        batch = forks.Batch(fn, range(4))
        assert len(batch.children) == 2
        got = batch.results()
        print(json.dumps([got[0].tolist(), float(got[1].sum()), got[3].tolist()]))
    """)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [[1.0], float(sum(range(200_000))), [3.0]]


def test_nothing_forks_in_the_library_beside_a_thread_or_for_one_task():
    out = run_script("""
        import threading
        print(forks.processes(5))  # the library: none allowed
        forks.allow(4)
        print(forks.processes(5), forks.processes(3), forks.processes(1))
        stop = threading.Event()
        t = threading.Thread(target=stop.wait)
        t.start()
        print(forks.processes(5))  # another thread may hold a lock the child would need
        stop.set()
        t.join()
        print(len(forks.Batch(lambda i: np.zeros(1), range(5)).children))
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "4", "3", "0", "0", "4"]


@pytest.mark.parametrize("layer", ["tbb", "workqueue", "omp"])
def test_numba_tasks_fork_on_a_layer_that_survives_it_one_thread_each_same_sums(layer):
    """With numba loaded: children fork before its pool starts and, once it runs, only on TBB
    or the workqueue (GNU OpenMP's pool does not survive a fork); each child runs numba and the
    BLAS on one thread but splits the row products' sums into its parent's blocks, so the
    bytes are the serial run's."""
    env = {**os.environ, "PYTHONWARNINGS": "", "NUMBA_NUM_THREADS": "2",
           "OPENBLAS_NUM_THREADS": "2", "NUMBA_THREADING_LAYER": layer}
    code = PRELUDE + textwrap.dedent("""
        from ssl_svm.solvers.host import pools
        pools.preload_tbb()
        import numba
        import scipy.sparse as sp
        forks.allow(2)
        before = forks.processes(3)  # numba loaded, its pool not started
        from ssl_svm.solvers import linalg
        X = sp.random(3000, 40, density=0.5, format="csr", random_state=1)
        rows = np.arange(3000, dtype=np.int64)

        def fn(i):
            z = np.linspace(-1.0, 1.0 + i, 3000)
            r = np.zeros(41)
            buf = np.empty((linalg.threads(), 41))
            zz = linalg.xt_times(X.indptr, X.indices, X.data, 1.0, rows, z, r, buf, True)
            return np.concatenate([[numba.get_num_threads(), linalg.threads(),
                                    pools.blas_threads(), zz], r])

        serial = [fn(i) for i in range(3)]  # starts the pool
        after = forks.processes(3)
        batch = forks.Batch(fn, range(3))
        started = len(batch.children)
        got = batch.results()
        print(json.dumps([numba.threading_layer(), before, after, started,
                          [v[:3].tolist() for v in serial], [v[:3].tolist() for v in got],
                          all(a[3:].tobytes() == b[3:].tobytes()
                              for a, b in zip(serial, got))]))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    name, before, after, started, serial, got, same = json.loads(out.stdout)
    assert name == layer and before == 2
    assert serial == [[2.0, 2.0, 2.0]] * 3 and same  # numba's threads, its blocks, BLAS's
    if layer == "omp":
        assert after == started == 0 and got == serial
    else:
        assert after == started == 2 and got == [[1.0, 2.0, 1.0]] * 3


def test_closing_a_batch_ends_its_children_at_once():
    out = run_script("""
        import time
        forks.allow(2)
        batch = forks.Batch(lambda i: (time.sleep(60), np.zeros(1))[1], range(4))
        pids = [pid for pid, _ in batch.children]
        t = time.perf_counter()
        batch.close()
        gone = []
        for pid in pids:
            try:
                os.kill(pid, 0)
                gone.append(False)
            except ProcessLookupError:
                gone.append(True)
        print(json.dumps([len(pids), gone, time.perf_counter() - t]))
    """)
    assert out.returncode == 0, out.stderr
    n, gone, seconds = json.loads(out.stdout)
    assert n == 2 and all(gone) and seconds < 5.0


def check_line(stderr: str) -> str:
    import re

    line = next(x for x in stderr.splitlines() if "check against the supervised svm" in x)
    return re.sub(r"\(\d+\.\d+ s\)", "", line)


def test_a_commands_forked_folds_give_the_serial_check_and_model(tmp_path):
    args = ["--verbose", "-a", "tsvm", "-W", "0.001", SAMPLES / "pcmac.train"]
    forked = run("ssl-train", *args, tmp_path / "forked.model", env={"NUMBA_NUM_THREADS": "2"})
    serial = run("ssl-train", *args, tmp_path / "serial.model", env={"NUMBA_NUM_THREADS": "1"})
    assert forked.returncode == serial.returncode == 0, forked.stderr + serial.stderr
    assert "check: its 5 folds in 2 processes forked from this one" in forked.stderr
    assert "forked from this one" not in serial.stderr
    assert check_line(forked.stderr) == check_line(serial.stderr)
    assert "no harm" in check_line(forked.stderr)
    assert (tmp_path / "forked.model").read_bytes() == (tmp_path / "serial.model").read_bytes()


def test_a_commands_numba_folds_fork_and_give_the_serial_check_and_model(tmp_path):
    """da's check runs on numba: its folds fork on TBB, not on GNU OpenMP, with the same
    check line and model bytes (the same two threads' blocks in both)."""
    args = ["--verbose", "-a", "da", SAMPLES / "pcmac.train"]
    forked = run("ssl-train", *args, tmp_path / "forked.model",
                 env={"NUMBA_NUM_THREADS": "2"})
    serial = run("ssl-train", *args, tmp_path / "serial.model",
                 env={"NUMBA_NUM_THREADS": "2", "NUMBA_THREADING_LAYER": "omp"})
    assert forked.returncode == serial.returncode == 0, forked.stderr + serial.stderr
    assert "backend=numba" in forked.stderr and "(tbb layer)" in forked.stderr
    assert "check: its 5 folds in 2 processes forked from this one" in forked.stderr
    assert "forked from this one" not in serial.stderr and "(omp layer)" in serial.stderr
    assert check_line(forked.stderr) == check_line(serial.stderr)
    assert (tmp_path / "forked.model").read_bytes() == (tmp_path / "serial.model").read_bytes()


def test_folds_that_would_start_numba_run_in_turn_in_the_command(tmp_path):
    """A fit on numpy whose check is planned on numba (its folds' work over the budget): the
    folds start numba in the command, one after another, not once in each child."""
    code = textwrap.dedent(f"""
        import sys
        from ssl_svm.solvers.host import budget
        budget.CHECK_NUMPY_WORK = 0  # any check's folds: on numba
        from ssl_svm.cli.train import main
        sys.argv = ["ssl-train", "--verbose", "-a", "tsvm", "-W", "0.001",
                    {str(SAMPLES / "pcmac.train")!r}, {str(tmp_path / "m.model")!r}]
        main()
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "NUMBA_NUM_THREADS": "2"})
    assert out.returncode == 0, out.stderr
    assert "backend=numpy" in out.stderr
    assert "forked from this one" not in out.stderr
    assert "no harm" in check_line(out.stderr)


def test_a_commands_prior_estimate_forks_its_fits_with_the_serial_estimate(tmp_path):
    """usmo's --prior auto and λ auto: the prior's logistic fits and the λ search's fits in
    children (on TBB), the same estimate line and model bytes as one after another (GNU
    OpenMP: no fork)."""
    import re

    args = ["--verbose", "-a", "usmo", "--negatives-as-unlabeled", SAMPLES / "pcmac.train"]
    forked = run("ssl-train", *args, tmp_path / "forked.model",
                 env={"NUMBA_NUM_THREADS": "2"})
    serial = run("ssl-train", *args, tmp_path / "serial.model",
                 env={"NUMBA_NUM_THREADS": "2", "NUMBA_THREADING_LAYER": "omp"})
    assert forked.returncode == serial.returncode == 0, forked.stderr + serial.stderr
    assert "prior estimate: its 10 fits in 2 processes forked from this one" in forked.stderr
    assert "the λ search's 18 fits in 2 processes forked from this one" in forked.stderr
    assert "forked from this one" not in serial.stderr

    def estimate(stderr):
        line = next(x for x in stderr.splitlines() if "estimated prior" in x)
        return re.sub(r"\d+\.\d+ s;", "", line)

    assert estimate(forked.stderr) == estimate(serial.stderr)
    assert "π = 0.2104" in estimate(forked.stderr)
    assert (tmp_path / "forked.model").read_bytes() == (tmp_path / "serial.model").read_bytes()


def _children(pid: int) -> set[int]:
    found = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found.update(int(x) for x in f.read().split())
        except OSError:
            pass
    return found


def test_terminating_a_command_in_its_forked_check_ends_the_children(tmp_path):
    model = tmp_path / "m.model"
    p = subprocess.Popen([str(BIN / "ssl-train"), "--verbose", "-a", "tsvm", "-W", "0.001",
                          str(SAMPLES / "pcmac.train"), str(model)], stderr=subprocess.PIPE,
                         text=True, env={**os.environ, "NUMBA_NUM_THREADS": "2"})
    children = set()
    for line in p.stderr:
        if "forked from this one" in line:
            children = _children(p.pid)
            p.send_signal(signal.SIGTERM)
            break
    rest = p.stderr.read()
    assert p.wait(timeout=60) == 143, rest
    assert children, "the check forked no children"
    assert "terminated" in rest and "Traceback" not in rest
    assert not model.exists()
    deadline = time.monotonic() + 10
    alive = children
    while alive and time.monotonic() < deadline:
        alive = {c for c in alive if os.path.exists(f"/proc/{c}")}
        time.sleep(0.05)
    assert not alive


def test_kernel_folds_fork_only_as_many_as_one_fits_memory_holds(tmp_path):
    from ssl_svm import trust
    from ssl_svm.solvers.registry import ALGORITHMS

    per_fold = trust.FOLD_MATRICES * 8 * 500 * 500
    assert trust.fold_children(ALGORITHMS["lapsvm"], 500, {"max_memory": 2 * per_fold}) == 2
    assert trust.fold_children(ALGORITHMS["lapsvm"], 500, {"max_memory": 2 * per_fold - 1}) == 1
    assert trust.fold_children(ALGORITHMS["tsvm"], 500, {}) is None  # no n×n matrices
    args = ["--verbose", "-a", "lapsvm", SAMPLES / "pcmac.train"]
    env = {"NUMBA_NUM_THREADS": "2"}
    tight = run("ssl-train", "--max-memory", "15M", *args, tmp_path / "a", env=env, check=0)
    roomy = run("ssl-train", "--max-memory", "30M", *args, tmp_path / "b", env=env, check=0)
    assert "forked from this one" not in tight.stderr
    assert "two at once would pass the memory one fit is allowed" in tight.stderr
    assert "check: its 5 folds in 2 processes forked from this one" in roomy.stderr
    assert check_line(tight.stderr) == check_line(roomy.stderr)
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
