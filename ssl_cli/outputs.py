"""The outputs of a run: checked before any work, written aside, committed together.

One mechanism for every file a command writes (MODEL, ``-l``, ``--out``, the prediction
OUTPUT):

- **Checked first.** :meth:`Outputs.add` resolves the path and checks it before the run reads or
  trains: the folder exists and is writable, the path is not a folder, it is not the same file
  (device and inode, through symlinks) as any input or another output (a usage error).
- **Regular files** are written to a temporary file in the target's folder and renamed over the
  target only when every output of the run is complete (:meth:`Outputs.commit`); the temporary
  file gets the mode the file would get from ``open()`` (the user's umask, or the overwritten
  file's mode). A **symlink** is followed: the file it points to is replaced, the link stays.
- **Devices, FIFOs and standard output** (``-``, ``/dev/stdout``, ``/dev/null``) are written in
  place, never replaced by a regular file; their write errors (``/dev/full``, a closed pipe) are
  reported like any other.
- A failed run removes its temporary files and leaves every existing file as it was. A run
  killed outright (SIGKILL, a batch system's time limit) cannot: its temporary files are named
  ``.tmp-PID@HOST-NAME-`` plus mkstemp's random letters (the writing process, the target's
  file name), and the next run writing NAME in that folder removes those whose process is
  gone from this host (:func:`remove_stale_temporaries`), never a running one's nor another
  host's.
"""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import stat
import sys
import tempfile

import click

from ssl_svm.cli import process
from ssl_svm.formats.errors import DataError

_UMASK = os.umask(0)
os.umask(_UMASK)


def mode_for(target: str) -> int:
    """The permission bits ``open(target, 'w')`` would leave: the existing file's, else
    0666 less the umask."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        return 0o666 & ~_UMASK


_DESCRIPTOR_PATHS = ("/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/self/fd/",
                     "/proc/thread-self/fd/", f"/proc/{os.getpid()}/fd/")


def _why(e: OSError) -> str:
    return e.strerror or str(e)


def file_id(path: str) -> tuple[int, int] | None:
    """(device, inode) of the file ``path`` names, through symlinks; ``-`` is standard input;
    None when it does not exist or is not a regular file (devices and pipes are not files a
    run could destroy)."""
    try:
        st = os.fstat(0) if path == "-" else os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def resolve(path: str, what: str) -> tuple[str, os.stat_result | None]:
    """(the file to write for ``path``, its stat or None if it does not exist): a symlink
    (chain) resolves to its target, so that the link itself survives the write."""
    if not path or path.endswith(os.sep):
        raise DataError(path or "''", f"cannot write {what}: not a file name")
    target = os.path.realpath(path) if os.path.islink(path) else path
    try:
        return target, os.stat(target)
    except FileNotFoundError:
        return target, None
    except OSError as e:
        raise DataError(path, f"cannot write {what}: {_why(e)}") from None


def write_all(f, data) -> None:
    """Write every byte of ``data`` to the binary file ``f``. A raw file (``buffering=0``: a
    pipe, a device) may take fewer bytes than given; a descriptor another program left
    non-blocking takes none while its buffer is full: wait until it is writable and go on."""
    view = memoryview(data).cast("B")
    while view.nbytes:
        try:
            n = f.write(view)
        except BlockingIOError as e:
            n = e.characters_written
            select.select([], [f], [])
        if n is None:  # raw, non-blocking, full
            select.select([], [f], [])
            continue
        view = view[n:]


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname())[:64] or "host"


def temporary_prefix(target: str) -> str:
    """``.tmp-PID@HOST-NAME-``: the name of a temporary file for ``target`` before mkstemp's
    random part."""
    return f".tmp-{os.getpid()}@{_host()}-{os.path.basename(target)[:96]}-"


_STALE = re.compile(r"\.tmp-(\d+)@([A-Za-z0-9._]+)-(.*)-[A-Za-z0-9_]{8}$")


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale_temporaries(target: str) -> list[str]:
    """Remove the temporary files for ``target`` (in its folder) that a run killed on this
    host left: their writing process is no longer running. Returns the names removed."""
    folder = os.path.dirname(os.path.abspath(target))
    base, host = os.path.basename(target)[:96], _host()
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        m = _STALE.match(name)
        if m is None or m.group(2) != host or m.group(3) != base:
            continue
        pid = int(m.group(1))
        if pid == os.getpid() or _running(pid):
            continue
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                continue
            os.unlink(path)
        except OSError:
            continue
        removed.append(name)
    return removed


def writable_folder(path: str, target: str, what: str) -> str:
    """The folder a new ``target`` goes in, checked to exist and be writable."""
    folder = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(folder):
        raise DataError(path, f"cannot write {what}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise DataError(path, f"cannot write {what}: permission denied")
    return folder


class Output:
    """One output: a temporary file renamed at commit, or a stream written in place."""

    def __init__(self, path: str, what: str):
        self.path = path
        self.what = what
        self.tmp: str | None = None
        self.f = None
        self.stream = False
        self.append = False
        self.target = path
        if path == "-":
            if process.stdout_closed():
                raise DataError("-", f"cannot write {what}: standard output is closed")
            self.stream = True
            return
        if os.path.abspath(path).startswith(_DESCRIPTOR_PATHS):
            # /dev/stdout, /dev/fd/N, /proc/self/fd/N: an open descriptor of this process, a
            # pipe, terminal or a file the shell opened; written through, appending, in place
            self.stream = True
            self.append = True
            return
        self.target, st = resolve(path, what)
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise DataError(path, f"cannot write {what}: it is a folder")
        if st is not None and not stat.S_ISREG(st.st_mode):
            self.stream = True  # a device or FIFO: written in place
            if not os.access(self.target, os.W_OK):
                raise DataError(path, f"cannot write {what}: permission denied")
            return
        if st is not None and not os.access(self.target, os.W_OK):
            raise DataError(path, f"cannot write {what}: permission denied")
        folder = writable_folder(path, self.target, what)
        remove_stale_temporaries(self.target)
        try:
            fd, self.tmp = tempfile.mkstemp(prefix=temporary_prefix(self.target), dir=folder)
        except OSError as e:
            raise DataError(path, f"cannot write {what}: {_why(e)}") from None
        try:
            os.fchmod(fd, mode_for(self.target))
        except OSError:
            pass  # a file system without modes (e.g. some network mounts) keeps its default
        self.f = os.fdopen(fd, "wb", buffering=1 << 20)

    def _open_stream(self):
        if self.f is None:
            if self.path == "-":
                if sys.stdout is None:
                    raise DataError("-", "cannot write: standard output is closed")
                sys.stdout.flush()
                self.f = sys.stdout.buffer
            else:
                try:
                    self.f = open(self.target, "ab" if self.append else "wb", buffering=0)
                except OSError as e:
                    raise DataError(self.path, f"cannot write {self.what}: {_why(e)}") from None
        return self.f

    def write(self, data: str | bytes) -> None:
        if isinstance(data, str):
            data = data.encode("utf-8")
        f = self._open_stream() if self.stream else self.f
        try:
            write_all(f, data)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise DataError(self.path, f"cannot write {self.what}: {_why(e)}") from None

    def finish(self) -> None:
        """Everything written and on disk (temporary file) or delivered (stream)."""
        try:
            if self.stream:
                self._open_stream().flush()
            else:
                self.f.flush()
                os.fsync(self.f.fileno())
                self.f.close()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise DataError(self.path, f"cannot write {self.what}: {_why(e)}") from None

    def rename(self) -> None:
        if self.tmp is not None:
            try:
                os.replace(self.tmp, self.target)
            except OSError as e:
                raise DataError(self.path, f"cannot write {self.what}: {_why(e)}") from None
            self.tmp = None

    def discard(self) -> None:
        if self.tmp is not None:
            try:
                self.f.close()
            except OSError:
                pass
            try:
                os.unlink(self.tmp)
            except OSError:
                pass
            self.tmp = None
        elif self.stream and self.f is not None and self.path != "-":
            try:
                self.f.close()
            except OSError:
                pass


class Outputs:
    """The outputs of one run (see the module docstring). Use as a context manager: leaving it
    without :meth:`commit` (an error, an interrupt) discards every temporary file."""

    def __init__(self, inputs: dict[str, str | None]):
        """``inputs``: what -> path of every file the run reads (None entries are ignored)."""
        self.items: list[Output] = []
        self.committed = False
        self._inputs = {}
        for what, path in inputs.items():
            if path is not None:
                fid = file_id(path)
                if fid is not None:
                    self._inputs[fid] = (what, path)

    def add(self, path: str | None, what: str) -> Output | None:
        """Check and prepare the output ``path`` (None: no such output)."""
        if path is None:
            return None
        self.check_distinct(path, what)
        with process.deferred_signals():  # a temporary file is never made but not recorded
            out = Output(path, what)
            self.items.append(out)
        return out

    def check_distinct(self, path: str, what: str) -> None:
        """Usage error when ``path`` is the same file as an input or an output of the run."""
        if path == "-":
            fid = file_id("/dev/stdout") if sys.stdout is not None else None
        else:
            fid = file_id(path)
        if fid is not None and fid in self._inputs:
            w, p = self._inputs[fid]
            raise click.UsageError(f"{what} {path} is the same file as {w} {p}; it would be "
                                   "destroyed")
        if fid is not None:
            for o in self.items:
                if file_id(o.path) == fid and not o.stream:
                    raise click.UsageError(f"{what} and {o.what} are the same file ({path})")
        if path == "-" and any(o.path == "-" for o in self.items):
            raise click.UsageError(f"{what} and another output both go to standard output")

    def commit(self) -> None:
        """Finish every output, then rename the temporary files over their targets.

        Nothing is renamed unless every output was written completely; the renames run with
        SIGINT and SIGTERM blocked, and from here on neither changes the outcome (the exit
        status is 0: the outputs are there)."""
        for o in self.items:
            o.finish()
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            process.raise_pending()
            if process.owned:  # the outcome is decided once the renames start
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
            for o in self.items:
                o.rename()
            self.committed = True
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def discard(self) -> None:
        for o in self.items:
            o.discard()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self.committed:
            with process.deferred_signals():
                self.discard()
        return False
