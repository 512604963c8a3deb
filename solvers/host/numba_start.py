"""numba's start in a process: importing the solvers' compiled modules, starting the thread
pool, the line saying a first run compiles, and the clock of such one-time work."""

from __future__ import annotations

import contextlib
import gc
import importlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from ssl_svm.solvers.host.pools import held_threads

# gc_paused(): how many blocks are inside it (all threads), and whether the collector was on
# when the first began
_gc_pauses = 0
_gc_was_on = False
_gc_lock = threading.Lock()


def pause_gc() -> None:
    """Begin a :func:`gc_paused` block by hand (:mod:`ssl_svm.solvers.jit` around numba's
    compiler); each call needs one :func:`resume_gc`."""
    global _gc_pauses, _gc_was_on
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_on = gc.isenabled()
            gc.disable()
        _gc_pauses += 1


def resume_gc() -> None:
    """End a :func:`pause_gc`: the last one to end turns the collector back on if it was."""
    global _gc_pauses
    with _gc_lock:
        _gc_pauses = max(0, _gc_pauses - 1)
        if _gc_pauses == 0 and _gc_was_on:
            gc.enable()


@contextlib.contextmanager
def gc_paused():
    """Inside the block (in any thread), Python's cyclic garbage collector does not run; it is
    put back as it was when the last such block ends: numba's import and cache loads allocate
    objects that live on, which full collections would only walk over (BENCHMARKS.md,
    settings behind the defaults)."""
    pause_gc()
    try:
        yield
    finally:
        resume_gc()


# seconds this process has spent on work done once per process: numba's compiler (compiling,
# or loading compiled code from the cache: :mod:`ssl_svm.solvers.jit` times its lock) and
# :func:`start_numba`'s imports and thread pool
_one_time = 0.0
_one_time_lock = threading.Lock()


def add_one_time(seconds: float) -> None:
    """Count ``seconds`` of one-time work (see :func:`one_time_seconds`)."""
    global _one_time
    with _one_time_lock:
        _one_time += max(0.0, seconds)


def one_time_seconds() -> float:
    """The seconds this process has spent so far on work it does once: numba's compiler
    (compiling or loading from the cache) and starting numba. A fit's time less what this
    grew by during it is what the same fit takes again (:class:`WarmClock`)."""
    return _one_time


class WarmClock:
    """``with WarmClock() as c: …`` then ``c.seconds``: the block's wall time less the one-time
    work done meanwhile (:func:`one_time_seconds`, counted over the process's threads), so
    about what the block would take when run again in this process. A first fit on a cold
    numba cache compiles for up to a minute; the check after a fit estimates its folds' time
    from this, not from the compile."""

    seconds = 0.0

    def __enter__(self):
        self._t0 = time.perf_counter()
        self._o0 = one_time_seconds()
        return self

    def __exit__(self, *exc):
        elapsed = time.perf_counter() - self._t0
        self.seconds = max(0.0, elapsed - (one_time_seconds() - self._o0))
        return False


@dataclass(frozen=True)
class Start:
    """How this process starts numba and says that a first run compiles (the line
    :mod:`ssl_svm.solvers.jit` writes). The library's defaults say it on the ``ssl.runtime``
    log; the command line sets its own with :func:`set_start` or :func:`starting`."""

    #: the solver the compile line names (the command line sets the one it runs before
    #: reading the data: the reader compiles too)
    label: str = ""
    #: the context numba's first use runs in: the command line holds SIGINT and SIGTERM there,
    #: as an exception raised inside the thread pool's start can leave it half made
    guard: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
    #: in a worker process of a ``-j`` run: says the compile line instead of the log (which a
    #: worker does not print); called with (text, warning)
    hook: Callable[[str, bool], None] | None = None
    #: a file the first process of a ``-j`` run to say the compile line creates; the others,
    #: finding it, say nothing (one line per run)
    marker: str | None = None


_start = Start()
_started: set = set()  # the module sets start_numba has loaded


def current_start() -> Start:
    """This process's :class:`Start`."""
    return _start


def set_start(**changes) -> Start:
    """Change fields of this process's :class:`Start` for the rest of its life (a command, a
    ``-j`` worker process); returns the one before."""
    global _start
    before = _start
    _start = replace(_start, **changes)
    return before


@contextlib.contextmanager
def starting(**changes):
    """Inside the block, this process's :class:`Start` has ``changes``; put back afterwards."""
    global _start
    before = set_start(**changes)
    try:
        yield
    finally:
        _start = before


def start_numba(modules=(), what: str = "") -> None:
    """Import ``modules`` (ones defining numba functions) and start numba's thread pool, inside
    the :class:`Start`'s guard. ``what`` names the solver in the line
    :mod:`ssl_svm.solvers.jit` writes when a first run compiles, unless one is named already.
    Does nothing the second time."""
    if what and not _start.label:
        set_start(label=what)
    if tuple(modules) in _started:
        return
    with WarmClock() as clock, gc_paused(), _start.guard():
        for name in modules:
            importlib.import_module(name)
        import numba

        numba.get_num_threads()  # starts the threading layer
        held = held_threads()
        if held is not None:
            numba.set_num_threads(min(held, numba.config.NUMBA_NUM_THREADS))
    add_one_time(clock.seconds)
    _started.add(tuple(modules))
