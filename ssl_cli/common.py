"""What the commands share: error reporting, exit codes, logging to stderr, output files."""

from __future__ import annotations

import functools
import logging
import os
import sys
import tempfile

import click

from formats.errors import DataError
from solvers.errors import ProblemError

EXIT_DATA = 1  # usage errors exit with 2 through click

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def fail(prog: str, message: str, status: int = EXIT_DATA):
    click.echo(f"{prog}: error: {message}", err=True)
    sys.exit(status)


def user_errors(prog: str):
    """Turn user-input errors into one line on stderr and exit status 1 (never a traceback)."""

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except (DataError, ProblemError) as e:
                fail(prog, str(e))
            except MemoryError:
                fail(prog, "out of memory")
            except KeyboardInterrupt:
                click.echo(f"{prog}: interrupted", err=True)
                sys.exit(130)
            except BrokenPipeError:
                # the reader went away (e.g. `| head`): stop quietly
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                sys.exit(EXIT_DATA)

        return inner

    return wrap


class StderrFormatter(logging.Formatter):
    def __init__(self, prog: str):
        super().__init__()
        self.prog = prog

    def format(self, record):
        msg = record.getMessage()
        if record.levelno >= logging.WARNING:
            return f"{self.prog}: warning: {msg}"
        return msg


def setup_logging(prog: str, quiet: bool, verbose: bool) -> logging.Logger:
    """Progress goes to stderr: -q keeps warnings only, --verbose adds solver detail."""
    root = logging.getLogger("ssl")
    for h in list(root.handlers):
        root.removeHandler(h)
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(StderrFormatter(prog))
    root.addHandler(h)
    root.setLevel(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)
    root.propagate = False
    logging.getLogger("ssl.solver").setLevel(logging.NOTSET)
    return logging.getLogger(f"ssl.{prog}")


class AtomicOutput:
    """A text output that appears under its name only when complete (``-`` is stdout)."""

    def __init__(self, path: str | None):
        self.path = path
        self.tmp = None
        if path in (None, "-"):
            self.f = sys.stdout
        else:
            folder = os.path.dirname(os.path.abspath(path))
            try:
                fd, self.tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
            except OSError as e:
                raise DataError(path, f"cannot write: {e.strerror or e}") from None
            self.f = os.fdopen(fd, "w", buffering=1 << 20)

    def write(self, s: str) -> None:
        self.f.write(s)

    def commit(self) -> None:
        self.f.flush()
        if self.tmp is not None:
            os.fsync(self.f.fileno())
            self.f.close()
            os.replace(self.tmp, self.path)
            self.tmp = None

    def discard(self) -> None:
        if self.tmp is not None:
            self.f.close()
            os.unlink(self.tmp)
            self.tmp = None
