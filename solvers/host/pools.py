"""How many threads this process runs, and how idle threads wait: set before numba starts;
the BLAS's threads; the limits a library call or a ``-j`` worker holds them to.

Users run the toolkit on shared nodes, beside their own ``-j`` workers and inside containers
with a CPU quota, where three defaults of the libraries underneath collapse (measured: the
contention table in BENCHMARKS.md, bench/bench_contention.py):

* numba's ``omp`` layer (GNU OpenMP) ends every parallel region at a barrier that idle threads
  spin at; the linear solvers run thousands of short regions, and beside other CPU-bound work
  each waits for a descheduled thread. TBB's loop needs no check-in from an idle thread, so
  the ``tbb`` package is a dependency where it has wheels, and :func:`configure` loads its
  ``libtbb.so.12`` from the environment's ``lib`` folder (outside the loader's search path).
  Where TBB cannot load, numba falls back to ``omp`` with idle threads asleep (``passive``).
* OpenBLAS's idle threads spin about 0.1 s before sleeping: the dense products of the kernel
  and graph solvers stall the same way; ``OPENBLAS_THREAD_TIMEOUT=4`` cuts the spin.
* numba and OpenBLAS size their pools from the machine's CPU count, ignoring a cgroup quota.

:func:`configure` sets these through the environment before numba is imported (child processes
of ``-j`` inherit it). A variable the user set is left alone: ``NUMBA_NUM_THREADS``, or
``OMP_NUM_THREADS`` (used for numba's pool when ``NUMBA_NUM_THREADS`` is unset),
``OMP_WAIT_POLICY``, ``OPENBLAS_NUM_THREADS``, ``OPENBLAS_THREAD_TIMEOUT``,
``NUMBA_THREADING_LAYER``.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import sys
import sysconfig
import threading

CGROUP_ROOT = "/sys/fs/cgroup"
PROC_CGROUP = "/proc/self/cgroup"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def _ancestors(mount: str, rel: str):
    """mount/rel, then each parent folder of it up to mount."""
    parts = [p for p in rel.split("/") if p]
    for k in range(len(parts), -1, -1):
        yield os.path.join(mount, *parts[:k])


def cgroup_cpu_limit(root: str = CGROUP_ROOT, proc_cgroup: str = PROC_CGROUP) -> float | None:
    """The CPU quota of this process's cgroup in CPUs (quota / period, the smallest along the
    cgroup's ancestors), or None when there is none. Reads cgroup v2 ``cpu.max`` ("max 100000"
    or "QUOTA PERIOD") and v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (quota -1 = none)."""
    text = _read(proc_cgroup)
    if text is None:
        return None
    limits = []
    for line in text.splitlines():
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        _, controllers, rel = fields
        if controllers == "":  # v2 unified hierarchy
            for d in _ancestors(root, rel):
                vals = (_read(os.path.join(d, "cpu.max")) or "").split()
                if len(vals) == 2 and vals[0] != "max":
                    try:
                        q, p = float(vals[0]), float(vals[1])
                    except ValueError:
                        continue
                    if q > 0 and p > 0:
                        limits.append(q / p)
        elif "cpu" in controllers.split(","):
            for mount in (os.path.join(root, "cpu"), os.path.join(root, "cpu,cpuacct"),
                          os.path.join(root, "cpuacct,cpu")):
                if not os.path.isdir(mount):
                    continue
                for d in _ancestors(mount, rel):
                    try:
                        q = float(_read(os.path.join(d, "cpu.cfs_quota_us")) or "-1")
                        p = float(_read(os.path.join(d, "cpu.cfs_period_us")) or "0")
                    except ValueError:
                        continue
                    if q > 0 and p > 0:
                        limits.append(q / p)
                break
    return min(limits) if limits else None


def available_cpus() -> int:
    """The CPUs this process may use: its affinity mask, capped by a cgroup CPU quota (rounded
    up: a quota of 1.5 CPUs lets two threads make progress), at least 1."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        n = os.cpu_count() or 1
    quota = cgroup_cpu_limit()
    if quota is not None:
        n = min(n, max(1, math.ceil(quota)))
    return max(1, n)


def _positive_int(text: str | None) -> int | None:
    """The first entry of an ``OMP_NUM_THREADS``-style list ("4" or "4,2") if a positive int."""
    if not text:
        return None
    try:
        n = int(text.split(",")[0].strip())
    except ValueError:
        return None
    return n if n > 0 else None


def default_threads(environ=None) -> int:
    """Threads for numba's pool: ``NUMBA_NUM_THREADS``, else ``OMP_NUM_THREADS``, else
    :func:`available_cpus`."""
    env = os.environ if environ is None else environ
    return (_positive_int(env.get("NUMBA_NUM_THREADS"))
            or _positive_int(env.get("OMP_NUM_THREADS")) or available_cpus())


def preload_tbb(environ=None) -> bool:
    """Load pip's ``libtbb.so.12`` from the environment's ``lib`` folder (where the ``tbb``
    wheel installs it, outside the loader's search path) so numba's ``tbb`` layer can start.
    Skipped when ``NUMBA_THREADING_LAYER`` names another layer. True if loaded here."""
    env = os.environ if environ is None else environ
    if env.get("NUMBA_THREADING_LAYER", "default") not in ("default", "tbb", "safe", ""):
        return False
    if not sys.platform.startswith("linux"):
        return False
    for folder in {os.path.join(sysconfig.get_paths()["data"], "lib"),
                   os.path.join(sys.prefix, "lib")}:
        path = os.path.join(folder, "libtbb.so.12")
        if os.path.exists(path):
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                return False
            return True
    return False


# numba's threading layers (NUMBA_THREADING_LAYER), and the most threads a pool may be asked
# for: numba starts every thread of its pool at once, and 100,000 crash the process (exit 139)
THREADING_LAYERS = ("default", "safe", "threadsafe", "forksafe", "tbb", "omp", "workqueue")
MAX_THREADS = 4096


def check_environment(environ=None) -> None:
    """A ValueError naming the variable when numba would crash on it or print a traceback:
    ``NUMBA_NUM_THREADS`` above :data:`MAX_THREADS`, ``NUMBA_THREADING_LAYER`` not a layer
    numba has. (A ``NUMBA_NUM_THREADS`` that is no positive integer is replaced by
    :func:`configure`, as before.)"""
    env = os.environ if environ is None else environ
    n = _positive_int(env.get("NUMBA_NUM_THREADS"))
    if n is not None and n > MAX_THREADS:
        raise ValueError(f"NUMBA_NUM_THREADS={n}: more threads than numba can start here (at "
                         f"most {MAX_THREADS}; {available_cpus()} CPUs available): unset it or "
                         "give the CPUs to use")
    layer = env.get("NUMBA_THREADING_LAYER")
    if layer is not None and layer not in THREADING_LAYERS:
        raise ValueError(f"NUMBA_THREADING_LAYER={layer!r} is not one of numba's threading "
                         f"layers ({', '.join(THREADING_LAYERS)}): unset it or name one")


# the variables :func:`configure` may set
POOL_VARIABLES = ("OMP_WAIT_POLICY", "OPENBLAS_THREAD_TIMEOUT", "NUMBA_NUM_THREADS",
                  "OPENBLAS_NUM_THREADS")


def configure(environ=None, pool_size: bool = True) -> None:
    """Set the thread-pool variables this process (and its children) start numba and OpenBLAS
    with, keeping any the user set, and make TBB loadable. Has its full effect only before
    numba is imported and before numba launches its threads. ``NUMBA_NUM_THREADS`` is set only
    with ``pool_size`` and while this process has not imported numba: numba's compiler reads
    the environment again on every compile and raises once its pool runs at another size."""
    env = os.environ if environ is None else environ
    if environ is None:
        preload_tbb(env)
        pool_size = pool_size and "numba" not in sys.modules
    env.setdefault("OMP_WAIT_POLICY", "passive")
    env.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    if pool_size and _positive_int(env.get("NUMBA_NUM_THREADS")) is None:
        env["NUMBA_NUM_THREADS"] = str(default_threads(env))
    if "OPENBLAS_NUM_THREADS" not in env and "OMP_NUM_THREADS" not in env:
        env["OPENBLAS_NUM_THREADS"] = str(available_cpus())


def limit_threads(threads: int | None) -> None:
    """Run this process's numba loops on at most ``threads`` threads (a ``-j`` worker's share
    of the CPUs). None: in a Dask worker, the worker's CPUs divided among its task threads;
    elsewhere unchanged."""
    if getattr(_hosted, "on", False):
        return
    numba = sys.modules.get("numba")
    if threads is None:
        threads = _dask_share()
        if threads is None:
            return
        # a Dask worker, shared with other tasks: its environment stays as it is, and numba's
        # setting is this thread's (set_num_threads is per thread)
        import numba
    threads = max(1, threads)
    if numba is None:
        # not started (a small linear fit may never start it: importing it costs 0.1 s and
        # more); its pool, should it start, is this share
        os.environ["NUMBA_NUM_THREADS"] = str(threads)
        return
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))


_hosted = threading.local()


@contextlib.contextmanager
def thread_flag(local: threading.local, name: str):
    """Inside the block, this thread's flag ``local.name`` is True; put back afterwards."""
    old = getattr(local, name, False)
    setattr(local, name, True)
    try:
        yield
    finally:
        setattr(local, name, old)


def hosted():
    """Inside the block a task meant for a worker process runs in this one as it is:
    :func:`limit_threads` leaves this process's threads alone (the command line runs the
    first tasks of a ``-j`` run itself while they are few and short)."""
    return thread_flag(_hosted, "on")


def _dask_share() -> int | None:
    """available_cpus() // the task threads of the Dask worker running this code, or None
    outside a Dask worker."""
    if "distributed" not in sys.modules:  # not in a Dask worker; importing Dask costs 1 s
        return None
    from distributed import get_worker

    try:
        worker = get_worker()
    except ValueError:  # not in a worker
        return None
    nthreads = getattr(worker, "nthreads", None) or getattr(worker.state, "nthreads", 1)
    return max(1, available_cpus() // max(1, int(nthreads)))



# threads a numba pool that starts inside thread_limit() is held to (in the thread that set it)
_limit = threading.local()


def held_threads() -> int | None:
    """The threads this thread's :func:`thread_limit` block holds numba and the BLAS to, or
    None outside one (a numba pool that starts inside the block starts held to it)."""
    return getattr(_limit, "threads", None)


@contextlib.contextmanager
def thread_limit(threads: int):
    """Inside the block, this thread's numba loops and the BLAS run on at most ``threads``
    threads; put back afterwards. A numba pool that starts inside the block
    (:func:`start_numba`) starts held to it. The library's way (``n_jobs``): no environment
    variable is set, so nothing outlives the block."""
    threads = max(1, int(threads))
    old_limit = getattr(_limit, "threads", None)
    _limit.threads = threads
    numba = sys.modules.get("numba")
    old_numba = None
    if numba is not None:
        old_numba = numba.get_num_threads()
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        with blas_limit(threads):
            yield
    finally:
        _limit.threads = old_limit
        numba = sys.modules.get("numba")
        if numba is not None:
            numba.set_num_threads(old_numba if old_numba is not None
                                  else numba.config.NUMBA_NUM_THREADS)


# in a child forked for a command's tasks (forks): the numba threads its parent's sums split
# over; the child runs numba on one thread (its siblings share the cores) and splits the same
_split_threads: int | None = None
_child_limits: list = []  # share_threads's BLAS limit, held for the child's life


def sum_threads() -> int:
    """The threads numba's threaded sums split into (:func:`ssl_svm.solvers.linalg.threads`,
    which fixes their order): numba's thread count, but in a child forked for a command's
    tasks (:func:`share_threads`) its parent's, so that its sums are its parent's bit for
    bit."""
    if _split_threads is not None:
        return _split_threads
    import numba

    return numba.get_num_threads()


def share_threads(threads: int, blas=None) -> None:
    """In a child forked for a command's tasks, beside its siblings: numba's loops and the BLAS
    (``blas``: a :func:`blas_controller` made before the fork, or None) on at most
    ``threads`` threads for the rest of its life, numba's sums split as before
    (:func:`sum_threads`). Two children on two cores each running the BLAS's two threads
    took 3-10x the time of one thread each (its threads spin while they wait)."""
    global _split_threads
    threads = max(1, int(threads))
    numba = sys.modules.get("numba")
    if numba is not None:
        _split_threads = numba.get_num_threads()
        numba.set_num_threads(min(threads, _split_threads))
    if blas is not None:
        _child_limits.append(blas.limit(limits=threads, user_api="blas"))


def fork_safe_numba() -> bool:
    """Whether numba's thread pool survives a fork of this process: not loaded, not started,
    or started on TBB (which joins its threads before a fork and starts them again after) or
    the workqueue; GNU OpenMP's pool (numba's ``omp`` layer on Linux) does not."""
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    if parallel is None or not getattr(parallel, "_is_initialized", False):
        return True
    return getattr(parallel, "_threading_layer", None) in ("tbb", "workqueue")


def describe_threads() -> str:
    """'numba N threads (LAYER layer), BLAS M threads' for this process, as far as known."""
    parts = []
    numba = sys.modules.get("numba")
    if numba is not None:
        try:
            layer = f"{numba.threading_layer()} layer"
        except ValueError:  # no parallel loop has run yet
            layer = "no parallel loop run"
        parts.append(f"numba {numba.get_num_threads()} threads ({layer})")
    try:
        blas = blas_threads()
        if blas:
            parts.append(f"BLAS {blas} threads")
    except ImportError:
        pass
    parts.append(f"{available_cpus()} CPUs available")
    return ", ".join(parts)


def blas_threads() -> int | None:
    """The threads of this process's BLAS (the largest pool threadpoolctl finds), or None
    when it finds none."""
    from threadpoolctl import threadpool_info

    counts = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    return max(counts) if counts else None


def blas_controller():
    """threadpoolctl's handle on the BLAS libraries loaded in this process now (a few ms to
    find them; each limit it then sets costs about 0.06 ms)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def blas_limit(threads: int):
    """A context manager: inside it the BLAS runs on at most ``threads`` threads (numba's
    pool is left as it is); put back afterwards."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(threads, user_api="blas")
