"""A command's independent small tasks (its check's folds) in children forked from it.

A command checks a small fit by fitting it again in k folds. On numpy each fold runs on one
core, and the folds ran one after another while the machine's other cores waited: on the
pcmac sample the check was two thirds of ``ssl-train -a tsvm``. A process spawned for them
would import numpy and scipy again (0.3 s); a fork of the command costs a few milliseconds
and starts with everything the folds need (the rows, the fit's graph) already in memory.

So a command (only: the library never forks its host, :func:`allow`) runs such tasks in up to
:func:`ssl_svm.solvers.host.pools.default_threads` children, when it is safe to fork
(:func:`processes`: Linux, no other thread in the process, and numba's thread pool not
started or on a layer that survives a fork: :func:`ssl_svm.solvers.host.pools.fork_safe_numba`).
Each child runs numba and the BLAS on its share of the threads (numba's sums still split as
the parent's: :func:`ssl_svm.solvers.host.pools.share_threads`), computes its tasks exactly
as this process would and sends back their float64 arrays and the warnings they raised; the
parent gives the results in task order and raises the warnings again in that order. A task
whose child failed or was killed runs again here, so an error is the one the serial run
raises. The bytes are the same as the serial run's; the children end with the command
(:func:`die_with_parent`) and never run its clean-up (they leave by ``os._exit``).

Imports no numerical library at module level.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import struct
import sys
import threading
import warnings

from ssl_svm.solvers.host import pools

# prctl's request for a signal when the parent thread ends (linux/prctl.h)
PR_SET_PDEATHSIG = 1

_allowed = 0  # children a command allows (allow); 0: none (the library, a test in-process)


def die_with_parent(parent: int) -> None:
    """In a child process: end when the parent does.

    A batch system kills a job past its limit with SIGKILL: the parent cannot stop its
    children, which would go on with their tasks. The child asks Linux for SIGKILL when the
    thread that started it ends (prctl PR_SET_PDEATHSIG) and ends at once if its parent is
    already gone (killed while it started). Also a loky worker's initializer
    (:mod:`ssl_svm.cli.parallel`)."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def allow(children: int) -> None:
    """Let this process (a command's) fork up to ``children`` children for its tasks (fewer
    than 2: none)."""
    global _allowed
    _allowed = max(0, int(children))


def allowed() -> int:
    """The children :func:`allow` set (0 in the library)."""
    return _allowed


def processes(tasks: int, most: int | None = None) -> int:
    """How many children :class:`Batch` would run ``tasks`` tasks in now, at most ``most``
    (None: no bound of the caller's): 0 (here, one after another) unless a command allowed
    children, on Linux, with no other thread in the process and numba's pool fork-safe
    (:func:`ssl_svm.solvers.host.pools.fork_safe_numba`), and at least two would run."""
    n = min(_allowed, tasks, tasks if most is None else most)
    if (n < 2 or not sys.platform.startswith("linux") or not hasattr(os, "fork")
            or not pools.fork_safe_numba() or threading.active_count() > 1):
        return 0
    return n


_HEAD = struct.Struct("<qqq")  # task, values, bytes of the warnings' JSON


def _encode(task: int, values, caught) -> bytes:
    import numpy as np

    values = np.ascontiguousarray(values, dtype=np.float64).ravel()
    said = json.dumps([[w.category.__module__, w.category.__qualname__, str(w.message)]
                       for w in caught]).encode()
    return _HEAD.pack(task, values.size, len(said)) + values.tobytes() + said


def _decode(blob: bytes) -> dict:
    """{task: (values, warnings)} of a child's whole output; a truncated last task is left
    out (its child failed)."""
    import numpy as np

    out = {}
    at = 0
    while at + _HEAD.size <= len(blob):
        task, n, said = _HEAD.unpack_from(blob, at)
        end = at + _HEAD.size + 8 * n + said
        if n < 0 or said < 0 or end > len(blob):
            break
        values = np.frombuffer(blob, np.float64, n, at + _HEAD.size).copy()
        out[task] = (values, json.loads(blob[end - said:end]))
        at = end
    return out


def _category(module: str, name: str):
    """The warning class of that name, or UserWarning when it cannot be found."""
    try:
        obj = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return UserWarning
    return obj if isinstance(obj, type) and issubclass(obj, Warning) else UserWarning


def _child(fn, tasks, fd: int, parent: int, threads: int, blas) -> None:
    """A child's life: its tasks on at most ``threads`` threads (``blas``: see
    :func:`ssl_svm.solvers.host.pools.share_threads`), each result written as it is done;
    never returns."""
    code = 1
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            # the parent's handlers clean up the parent's files: a child ends without them
            if signal.getsignal(sig) is not signal.SIG_IGN:
                signal.signal(sig, signal.SIG_DFL)
        die_with_parent(parent)
        pools.share_threads(threads, blas)
        for task in tasks:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")  # the parent's filters decide what is shown
                values = fn(task)
            data = _encode(task, values, caught)
            while data:
                data = data[os.write(fd, data):]
        code = 0
    except BaseException:  # noqa: BLE001 -- the parent runs the task again and raises it
        pass
    finally:
        os._exit(code)


class Batch:
    """``fn(task)`` (a 1-D float64 array) for every task, in :func:`processes` children
    (at most ``most``) started now, while the caller does other work; :meth:`results`
    collects them in task order (running here what no child gave). With no children,
    :meth:`results` runs them all here, one after another."""

    def __init__(self, fn, tasks, most: int | None = None):
        self.fn = fn
        self.tasks = list(tasks)
        self.children = []  # (pid, read end)
        n = processes(len(self.tasks), most)
        if n == 0:
            return
        parent = os.getpid()
        # found once here, so that a child only sets its limit (finding them took it 20 ms)
        blas = pools.blas_controller() if "numpy" in sys.modules else None
        with warnings.catch_warnings():
            # Python 3.12+ warns of fork beside the BLAS library's native threads, which
            # handle a fork themselves (pthread_atfork)
            warnings.simplefilter("ignore", DeprecationWarning)
            for i in range(n):
                r, w = os.pipe()
                try:
                    pid = os.fork()
                except OSError:  # no more processes: the rest run here
                    os.close(r)
                    os.close(w)
                    break
                if pid == 0:
                    os.close(r)
                    _child(fn, self.tasks[i::n], w, parent, max(1, _allowed // n), blas)
                os.close(w)
                self.children.append((pid, r))

    def _collect(self) -> dict:
        """Every child's output, read from all pipes as it comes: a child whose pipe is full
        (64 KiB: a task's values over 8,192 rows) waits until it is read, and read one child
        after another, a later child stood still behind the first (usmo's λ search on a9a:
        18 fits, no faster than in one process)."""
        import selectors

        got = {}
        try:
            chunks = {fd: [] for _, fd in self.children}
            with selectors.DefaultSelector() as sel:
                for fd in chunks:
                    sel.register(fd, selectors.EVENT_READ)
                while sel.get_map():
                    for key, _ in sel.select():
                        chunk = os.read(key.fd, 1 << 16)
                        if chunk:
                            chunks[key.fd].append(chunk)
                        else:
                            sel.unregister(key.fd)
            for pid, fd in self.children:
                os.waitpid(pid, 0)
                got.update(_decode(b"".join(chunks[fd])))
        finally:
            self.close()
        return got

    def close(self) -> None:
        """End the children that are still running (an interrupted collection)."""
        for pid, fd in self.children:
            try:
                os.close(fd)
            except OSError:
                pass
            try:
                if os.waitpid(pid, os.WNOHANG) == (0, 0):
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self.children = []

    def results(self) -> list:
        got = self._collect() if self.children else {}
        out = []
        for task in self.tasks:
            if task not in got:
                out.append(self.fn(task))
                continue
            values, said = got[task]
            for module, name, message in said:
                warnings.warn(message, _category(module, name), stacklevel=2)
            out.append(values)
        return out
