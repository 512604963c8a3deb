"""The package's numba functions: where their compiled code is cached, and saying when a run
compiles.

numba caches a ``cache=True`` function next to its source (``__pycache__``) only when that
folder is writable, then in ``~/.cache/numba``; with neither (a root-owned install run by a
service account whose home is read-only, a container running as a non-root user) it refuses
to define the function: ``RuntimeError: cannot cache function …: no locator available``, at
import. It also ignores a cache prebuilt in a read-only ``__pycache__`` (by
``python -m ssl_svm.cli.compile`` run as the installing user). For the package's own files only
(other numba code in the process is left to numba's rules) :func:`njit` puts a locator first
that, when the source folder is not writable, uses

1. a per-user folder, :func:`user_cache_dir`, seeded from the prebuilt read-only cache (the
   index holds a hash of the source, so copied files load as they are);
2. failing that, the read-only cache as it is, compiling in memory (with a warning) what it
   lacks.

``NUMBA_CACHE_DIR``, when set, keeps its meaning.

Compiling the package's code on a first run takes up to a minute. numba announces each cache
miss with a ``numba:compile`` event; the first one of a process calls :data:`notice` with a
line saying so (and where the cache goes, when not beside the source), once. The time spent
holding numba's compiler lock (compiling, or loading from the cache) is counted as one-time
work (:class:`ssl_svm.solvers.host.numba_start.WarmClock`).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import stat
import tempfile
import threading
import time

import numba
from numba.core import caching, event
from numba.core.dispatcher import Dispatcher

# numba renamed these in 0.60 (``_CacheImpl``, ``_CacheLocator``...); the package supports both
_CACHE_IMPL = getattr(caching, "CacheImpl", None) or caching._CacheImpl

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "ssl_svm."

log = logging.getLogger("ssl.runtime")


def _notice(text: str, warning: bool) -> None:
    from ssl_svm.solvers.host import numba_start

    global said
    said = True
    start = numba_start.current_start()
    if start.marker is not None:  # a run with -j workers: said by one process only
        try:
            os.close(os.open(start.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except OSError:  # another process of the run said it (or the run is over)
            return
    if start.hook is not None:  # a -j worker process: see ssl_cli.parallel
        start.hook(text, warning)
        return
    log.log(logging.WARNING if warning else logging.INFO, "%s", text, extra={"notice": True})


said = False  # whether this process has said it compiles


# Called once per process with the compile notice; the default logs it on ``ssl.runtime``
# (INFO; WARNING when nothing can be cached).
notice = _notice


def _writable_dir(path: str) -> bool:
    """Whether ``path`` is (or can be made) a folder this process may create files in."""
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


def _private_dir(path: str) -> bool:
    """``path`` (made if absent, mode 0700) is a folder of this user's that no other may write
    into: a shared /tmp must not let another user plant compiled code."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_mode & 0o022:
        return False
    return not hasattr(os, "getuid") or st.st_uid == os.getuid()


def user_cache_dir() -> str | None:
    """The writable per-user folder for the package's compiled code when its source folders are
    read-only: ``$XDG_CACHE_HOME/ssl-svm`` or ``~/.cache/ssl-svm``, else
    ``$TMPDIR/ssl-svm-UID`` (``/tmp`` without TMPDIR; private to the user); None when none
    can be written."""
    # TMPDIR when set (a batch system's scratch folder), not tempfile's walk past it to /tmp
    # and the current folder
    return _user_cache_dir(os.environ.get("XDG_CACHE_HOME"), os.environ.get("HOME"),
                           os.environ.get("TMPDIR") or tempfile.gettempdir())


@functools.lru_cache(maxsize=8)
def _user_cache_dir(xdg, home_env, tmp) -> str | None:
    homes = []
    if xdg and os.path.isabs(xdg):
        homes.append(os.path.join(xdg, "ssl-svm"))
    home = os.path.expanduser("~")
    if home != "~" and os.path.isabs(home):
        homes.append(os.path.join(home, ".cache", "ssl-svm"))
    for path in homes:
        if _writable_dir(path):
            return path
    uid = os.getuid() if hasattr(os, "getuid") else os.getpid()
    path = os.path.join(tmp, f"ssl-svm-{uid}")
    if _private_dir(path) and _writable_dir(path):
        return path
    return None


def cache_location() -> str:
    """Where this process caches the package's compiled code: ``NUMBA_CACHE_DIR``, the
    ``__pycache__`` folders beside the source, the per-user folder, or nowhere (in memory)."""
    if numba.config.CACHE_DIR:
        return numba.config.CACHE_DIR
    if _writable_dir(os.path.join(PACKAGE_DIR, "solvers", "__pycache__")):
        return f"beside the package's source ({PACKAGE_DIR})"
    return user_cache_dir() or "nowhere: compiled in memory"


_seeded: set = set()
_seed_lock = threading.Lock()


def _seed(source_file: str, prebuilt: str, target: str) -> None:
    """Copy the prebuilt cache files of ``source_file`` (``STEM.*.nbi`` / ``.nbc`` in
    ``prebuilt``) into ``target`` where missing or older, once per process; each by a
    temporary name and a rename, as other processes may read them."""
    key = (source_file, target)
    with _seed_lock:
        if key in _seeded:
            return
        _seeded.add(key)
        stem = os.path.splitext(os.path.basename(source_file))[0] + "."
        try:
            names = [n for n in os.listdir(prebuilt)
                     if n.startswith(stem) and n.endswith((".nbi", ".nbc"))]
        except OSError:
            return
        for name in names:
            src, dst = os.path.join(prebuilt, name), os.path.join(target, name)
            try:
                if os.path.exists(dst) and os.path.getmtime(dst) >= os.path.getmtime(src):
                    continue
                tmp = f"{dst}.tmp.{os.getpid()}"
                shutil.copy2(src, tmp)
                os.replace(tmp, dst)
            except OSError:
                continue


class PackageCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """The cache of a package function whose source folder is read-only: the per-user folder
    (:func:`user_cache_dir`), seeded from the prebuilt cache beside the source; or, with no
    writable folder, that prebuilt cache read-only (``read_only``)."""

    read_only = False

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._prebuilt = os.path.join(os.path.dirname(py_file), "__pycache__")
        base = self.base = user_cache_dir()
        if base is None:
            self.read_only = True
            self._cache_path = self._prebuilt
        else:
            self._cache_path = os.path.join(base, self.get_suitable_cache_subpath(py_file))
            try:
                os.makedirs(self._cache_path, exist_ok=True)
            except OSError:
                pass
            # before numba reads the index: its first load must find the prebuilt code
            _seed(py_file, self._prebuilt, self._cache_path)

    def get_cache_path(self):
        return self._cache_path

    def ensure_cache_path(self):
        if not self.read_only:
            super().ensure_cache_path()

    @classmethod
    def from_function(cls, py_func, py_file):
        if numba.config.CACHE_DIR or not os.path.abspath(py_file).startswith(
                PACKAGE_DIR + os.sep):
            return None  # NUMBA_CACHE_DIR, or not ours: numba's own rules
        if not os.path.exists(py_file) or _writable_dir(
                os.path.join(os.path.dirname(py_file), "__pycache__")):
            return None  # the source folder is writable: numba's default, beside the source
        return cls(py_func, py_file)


def _where(dispatcher) -> tuple[str | None, bool]:
    """(the cache folder when it is not beside the source, whether nothing is saved)."""
    try:
        locator = dispatcher._cache._impl.locator
    except AttributeError:  # a NullCache: compiled in memory
        return None, True
    if isinstance(locator, PackageCacheLocator):
        return (None, True) if locator.read_only else (locator.base, False)
    return None, False


class _CompileNotice(event.Listener):
    """The first compile of a package function in this process: one line through
    :data:`notice`."""

    def __init__(self):
        self.said = False

    def on_start(self, ev):
        disp = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
        py_func = getattr(disp, "py_func", None)
        if self.said or not getattr(py_func, "__module__", "").startswith(PACKAGE):
            return
        self.said = True
        from ssl_svm.solvers.host import numba_start

        what = numba_start.current_start().label or "this solver"
        folder, unsaved = _where(disp)
        if unsaved:
            notice(f"compiling {what}'s numba code in memory: no writable folder for its cache "
                   f"(the install is read-only, and so are ~/.cache and "
                   f"{os.environ.get('TMPDIR') or tempfile.gettempdir()}"
                   "); every run compiles again (up to a minute): set NUMBA_CACHE_DIR to a "
                   "writable folder, or run 'python -m ssl_svm.cli.compile' as the installing user",
                   True)
        else:
            where = f" in {folder}" if folder else ""
            notice(f"first run of {what}: compiling its numba code once (up to a minute; "
                   f"later runs load it from the cache{where})", False)

    def on_end(self, ev):
        pass


class _CompilerTime(event.Listener):
    """Counts the time this process's threads hold (or wait for) numba's compiler lock, which
    covers compiling and loading compiled code from the cache, as one-time work
    (:func:`ssl_svm.solvers.host.numba_start.add_one_time`), with Python's garbage collector paused
    (:func:`ssl_svm.solvers.host.numba_start.gc_paused`: the compiler's objects made it run full
    passes). The lock is re-entrant, so only a thread's outermost hold counts."""

    def __init__(self):
        self._local = threading.local()

    def on_start(self, ev):
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            from ssl_svm.solvers.host import numba_start

            numba_start.pause_gc()
            self._local.t0 = time.perf_counter()
        self._local.depth = depth + 1

    def on_end(self, ev):
        depth = getattr(self._local, "depth", 0) - 1
        self._local.depth = max(0, depth)
        if depth == 0:
            from ssl_svm.solvers.host import numba_start

            numba_start.add_one_time(time.perf_counter() - self._local.t0)
            numba_start.resume_gc()


_installed = False
_install_lock = threading.Lock()


def install() -> None:
    """Put :class:`PackageCacheLocator` first among numba's locators and listen for compiles;
    once per process."""
    global _installed
    with _install_lock:
        if _installed:
            return
        classes = _CACHE_IMPL._locator_classes
        if PackageCacheLocator not in classes:
            classes.insert(0, PackageCacheLocator)
        event.register("numba:compile", _CompileNotice())
        event.register("numba:compiler_lock", _CompilerTime())
        _installed = True


def _settle(dispatcher):
    """A function whose cache is read-only: loads from it, saves nothing (a save would fail
    there); none prebuilt: no cache at all."""
    try:
        cache = dispatcher._cache
        locator = cache._impl.locator
    except AttributeError:
        return dispatcher
    if isinstance(locator, PackageCacheLocator) and locator.read_only:
        if os.path.exists(cache._cache_file._index_path):
            cache._cache_file.save = lambda key, data: None
        else:
            dispatcher._cache = caching.NullCache()
    return dispatcher


def njit(*args, **kwargs):
    """``numba.njit`` for the package's functions: with :func:`install`ed caching rules."""
    install()
    out = numba.njit(*args, **kwargs)
    if isinstance(out, Dispatcher):
        return _settle(out)
    return lambda fn: _settle(out(fn))


__all__ = ["njit", "install", "user_cache_dir", "cache_location", "PackageCacheLocator",
           "PACKAGE_DIR"]
