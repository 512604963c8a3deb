"""Running tasks: in this process, in local processes (joblib/loky, ``-j N``) or on a Dask
cluster (``--cluster ADDRESS``, joblib's dask backend). One code path for all three.

Objects named in ``scatter`` (the training data, a model) go to each Dask worker once;
local processes get them through joblib's memory-mapping of large arrays.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import os
import shutil
import signal
import sys
import tempfile
import time

import click

from ssl_svm.formats.errors import DataError
from ssl_svm.solvers.host.forks import die_with_parent
from ssl_svm.solvers.host.pools import available_cpus, default_threads

# the names on PyPI: ssl-svm itself is installed from its source, where '.[cluster]' works
INSTALL_HINT = ("--cluster needs Dask: pip install 'dask[distributed]' (in a source checkout: "
                "pip install -e '.[cluster]')")


def resolve_jobs(n_jobs: int) -> int:
    """-j N as a number of workers: -1 = all cores, -2 = all but one, ... (joblib's rule)."""
    if n_jobs == 0:
        raise click.BadParameter("must not be 0 (1 = no parallelism, -1 = all cores)",
                                 param_hint="'-j'")
    cpus = available_cpus()
    if n_jobs < -cpus:
        raise click.BadParameter(f"{n_jobs} would leave fewer than one of the {cpus} CPUs "
                                 f"(-1 = all, -{cpus} = one)", param_hint="'-j'")
    return n_jobs if n_jobs > 0 else max(1, available_cpus() + 1 + n_jobs)


def quiet_dask() -> None:
    """Silence Dask's own log handlers in this command (e.g. "Failed to reconnect to
    scheduler" when the scheduler dies): the command's stderr carries its own lines, and what
    went wrong reaches it as the run's one error line."""
    for name in ("distributed", "distributed.client", "tornado", "bokeh"):
        for h in logging.getLogger(name).handlers:
            h.setLevel(logging.CRITICAL + 1)


def connect(address: str):
    """A dask.distributed Client for ``address`` (usage error without Dask installed)."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise click.UsageError(INSTALL_HINT) from None
    quiet_dask()
    try:
        return Client(address, timeout="20s")
    except (OSError, TimeoutError, ValueError, TypeError) as e:
        raise DataError(address, f"cannot connect to the Dask scheduler: {e}") from None


class Runner:
    """Runs ``fn(*args)`` for a stream of tasks; yields results unordered or in task order.

    workers: the number of tasks that may run at once (sets numba's per-worker threads).
    """

    def __init__(self, n_jobs: int = 1, cluster: str | None = None, scatter=(),
                 tasks: int | None = None):
        """``tasks``: how many tasks there will be, where known: no more local workers are
        started than there are tasks (nor than CPUs)."""
        self.cluster = cluster
        self.client = connect(cluster) if cluster else None
        if self.client is not None:
            info = self.client.scheduler_info()
            nthreads = sum(w.get("nthreads", 1) for w in info.get("workers", {}).values())
            self.workers = max(1, nthreads)
        else:
            self.workers = resolve_jobs(n_jobs)
            cpus = available_cpus()
            if self.workers > cpus:
                # more processes than CPUs only queue for the same cores (and each would still
                # hold its memory): the surplus is dropped, saying so
                logging.getLogger("ssl.parallel").info(
                    "-j %d: %d CPU%s available to this process; running %d worker%s",
                    self.workers, cpus, "" if cpus == 1 else "s", cpus, "" if cpus == 1 else "s")
                self.workers = cpus
            if tasks is not None and self.workers > max(1, tasks):
                logging.getLogger("ssl.parallel").debug(
                    "%d task%s: running %d worker%s", tasks, "" if tasks == 1 else "s",
                    max(1, tasks), "" if tasks == 1 else "s")
                self.workers = max(1, tasks)
        self.scatter = list(scatter)
        self.tasks = tasks
        # checked before any work: a bad value is the run's one error line
        self.budget = serial_seconds() if self.client is None else 0.0
        self._notice_dir: str | None = None

    @property
    def threads_per_worker(self) -> int | None:
        """numba threads per task: this process's threads (NUMBA_NUM_THREADS, OMP_NUM_THREADS
        or the CPUs available) shared out among the local workers; None on Dask, where each
        task takes its worker's share (:func:`solvers.host.pools.limit_threads`)."""
        if self.client is not None:
            return None
        return max(1, default_threads() // self.workers)

    def describe(self) -> str:
        if self.client is not None:
            n = len(self.client.scheduler_info().get("workers", {}))
            return f"Dask cluster {self.cluster} ({n} workers, {self.workers} threads)"
        return "1 process" if self.workers == 1 else f"{self.workers} local processes"

    @contextlib.contextmanager
    def _backend(self, batch_size="auto"):
        import joblib

        if self.client is None:
            _children_without_sigint()
            # each worker, before its first task, asks to end with this process
            with joblib.parallel_config(backend="loky", initializer=die_with_parent,
                                        initargs=(os.getpid(),)):
                with joblib.Parallel(n_jobs=self.workers, pre_dispatch="2*n_jobs",
                                     batch_size=batch_size) as par:
                    yield par
            return
        with joblib.parallel_config(backend="dask", scatter=self.scatter or None,
                                    wait_for_workers_timeout=60):
            with joblib.Parallel(n_jobs=-1, pre_dispatch="2*n_jobs",
                                 batch_size=batch_size) as par:
                yield par

    def run(self, fn, tasks, ordered: bool = False, window: int | None = None):
        """Yield fn(*task) for each task (an iterable, consumed lazily).

        ``window``: results in task order, at most that many tasks read from ``tasks`` and
        not yet yielded (joblib refills its workers as tasks finish, not as results are
        consumed, so its own generator does not bound memory).
        """
        if self.client is None and self.workers == 1:
            # in this process, each result as soon as it exists (joblib's sequential backend
            # may run every task before yielding the first)
            for t in tasks:
                yield fn(*t)
            return
        if self.client is None:
            tasks = yield from self._first_here(fn, tasks)
            if tasks is None:
                return
        import joblib

        if self.client is None:
            fn = InWorker(fn, os.getpid(), self._notice())
        if window is None:
            with self._backend() as par:
                par.return_as = "generator" if ordered else "generator_unordered"
                yield from par(joblib.delayed(fn)(*t) for t in tasks)
            return
        it = iter(tasks)
        with self._backend(batch_size=1) as par:
            while True:
                chunk = list(itertools.islice(it, window))
                if not chunk:
                    return
                yield from par(joblib.delayed(fn)(*t) for t in chunk)

    def _first_here(self, fn, tasks):
        """Run the first tasks in this process while the work looks too small for workers:
        starting them (a process each, importing numpy, scipy, numba and the solver) costs
        about a second, more than a grid of quick fits takes (24 pcmac tsvm fits: 3.2 s at -j 2
        against 1.3 s at -j 1 beside another job). Goes on here while the tasks left, at the
        mean time of those done, would take at most :func:`serial_seconds` (or, the number of
        tasks unknown, until that long has been spent); returns an iterator over the tasks
        left for the workers, or None when all are done. Results are those of the workers:
        the same code on the same arguments, with this process's threads."""
        from ssl_svm.solvers.host import pools

        budget = self.budget
        it = iter(tasks)
        spent, done = 0.0, 0
        while budget > 0:
            try:
                t = next(it)
            except StopIteration:
                return None
            t0 = time.perf_counter()
            with pools.hosted():
                result = fn(*t)
            spent += time.perf_counter() - t0
            done += 1
            yield result
            left = None if self.tasks is None else self.tasks - done
            if (left is not None and spent / done * left > budget) or (left is None and
                                                                       spent > budget):
                logging.getLogger("ssl.parallel").debug(
                    "%d task%s in this process (%.2f s); the rest on %d workers", done,
                    "" if done == 1 else "s", spent, self.workers)
                break
        return it

    def _notice(self) -> tuple[str, str, str] | None:
        """What a worker needs to say that it compiles (see :class:`InWorker`)."""
        from ssl_svm.solvers.host import numba_start

        if self._notice_dir is None:
            try:
                self._notice_dir = tempfile.mkdtemp(prefix="ssl-svm-run-")
            except OSError:
                return None
            marker = os.path.join(self._notice_dir, "said")
            numba_start.set_start(marker=marker)  # this process too: one line per run
            jit = sys.modules.get("ssl_svm.solvers.jit")
            if jit is not None and jit.said:
                open(marker, "w").close()  # noqa: SIM115 -- said already, here
        prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "ssl"
        return prog, numba_start.current_start().label, self._notice_dir

    def close(self):
        if self.client is not None:
            self.client.close()
            self.client = None
        if self._notice_dir is not None:
            from ssl_svm.solvers.host import numba_start

            shutil.rmtree(self._notice_dir, ignore_errors=True)
            self._notice_dir = None
            numba_start.set_start(marker=None)


class InWorker:
    """A task function as run by a local worker process, which says when it compiles."""

    def __init__(self, fn, parent: int, notice: tuple[str, str, str] | None = None):
        """``notice``: (the command's name, the solver the compile notice names, a folder of
        the parent's in which the first worker to compile leaves a mark)."""
        self.fn = fn
        self.parent = parent
        self.notice = notice

    def __call__(self, *args):
        if os.getpid() != self.parent:
            if self.notice is not None:
                _say_compiles_once(*self.notice)
        return self.fn(*args)


def _say_compiles_once(prog: str, label: str, folder: str) -> None:
    """In a worker: the compile notice goes straight to stderr (a worker's log prints nothing),
    from the first worker of the run that compiles only (the others find its mark)."""
    from ssl_svm.solvers.host import numba_start

    start = numba_start.current_start()
    if start.hook is not None:
        return

    def say(text: str, warning: bool) -> None:
        from ssl_svm.cli.process import safe_text

        line = safe_text(f"{prog}: {'warning: ' if warning else ''}{text}") + "\n"
        try:
            os.write(2, line.encode("utf-8", "replace"))
        except OSError:
            pass

    numba_start.set_start(label=start.label or label, marker=os.path.join(folder, "said"),
                          hook=say)


SERIAL_SECONDS = 2.0
SERIAL_VARIABLE = "SSL_SVM_SERIAL_SECONDS"


def serial_seconds() -> float:
    """How much work a -j run does in its own process before starting workers: the
    SSL_SVM_SERIAL_SECONDS environment variable (0 = workers at once), default 2 s."""
    text = os.environ.get(SERIAL_VARIABLE)
    if text is None or text.strip() == "":
        return SERIAL_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1e6:
        raise DataError(SERIAL_VARIABLE, f"'{text[:40]}' is not a number of seconds from 0 "
                        "to 1e6 (the work a -j run does itself before starting workers)")
    return value


def _children_without_sigint() -> None:
    """Start local worker processes with SIGINT blocked (a blocked signal mask survives fork
    and exec). Ctrl-C reaches the whole process group; a worker still importing numpy would
    print a traceback of its own. The parent alone handles the interrupt and shuts them down.

    loky starts workers from whichever thread first submits work, at a moment joblib chooses,
    so the mask is applied around loky's own spawn function (once per process; nothing is
    changed if a later loky names it differently)."""
    global _SPAWN_PATCHED
    if _SPAWN_PATCHED:
        return
    _SPAWN_PATCHED = True
    try:
        from joblib.externals.loky.backend import fork_exec as fe
    except ImportError:
        return
    spawn = getattr(fe, "fork_exec", None)
    if spawn is None:
        return

    @functools.wraps(spawn)
    def spawn_without_sigint(*args, **kwargs):
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            return spawn(*args, **kwargs)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    fe.fork_exec = spawn_without_sigint


_SPAWN_PATCHED = False


class Progress:
    """A progress bar with ETA on stderr: redrawn in place on a terminal, otherwise a line at
    most every ``every`` seconds (batch logs); silent when ``enabled`` is False."""

    def __init__(self, total: float, unit: str, enabled: bool = True, every: float = 10.0,
                 width: int = 30):
        self.total = max(total, 1e-12)
        self.unit = unit
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.every = every
        self.width = width
        self.t0 = time.perf_counter()
        self.last = -1e9
        self.done = 0.0
        self.first = None  # (time, done) of the first update

    def text(self, label: str = "") -> str:
        now = time.perf_counter()
        el = now - self.t0
        frac = min(1.0, self.done / self.total + 1e-9)  # done is a sum of 1/k steps
        bar = "#" * int(frac * self.width)
        return (f"[{bar:<{self.width}}] {label or f'{self.done:g}/{self.total:g} {self.unit}'}"
                f"  {_duration(el)} elapsed, ETA {self.eta_text(now)}")

    def eta_text(self, now: float) -> str:
        """The time left at the rate since the first finished piece: the time before it is
        the workers' start, not work ("?" until a second piece has finished)."""
        if self.first is None or self.done >= self.total * (1 - 1e-9):
            return "?" if self.done < self.total * (1 - 1e-9) else _duration(0.0)
        t1, d1 = self.first
        if self.done <= d1 + 1e-12:
            return "?"
        rate = (now - t1) / (self.done - d1)
        return _duration(max(0.0, rate * (self.total - self.done)))

    def update(self, amount: float, label: str = "") -> None:
        self.done += amount
        if self.first is None:
            self.first = (time.perf_counter(), self.done)
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.tty:
            sys.stderr.write("\r" + self.text(label) + "\x1b[K")
            sys.stderr.flush()
        elif now - self.last >= self.every or self.done >= self.total * (1 - 1e-9):  # sums of 1/k
            sys.stderr.write(self.text(label) + "\n")
            sys.stderr.flush()
            self.last = now

    def clear(self) -> None:
        if self.enabled and self.tty:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()

    def message(self, text: str) -> None:
        """A line on stdout that does not tangle with the bar."""
        self.clear()
        click.echo(text)
        sys.stdout.flush()


def _duration(s: float) -> str:
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)}m{int(s % 60):02d}s"
    return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"

