"""What the commands share: error reporting, exit codes, logging to stderr, output files."""

from __future__ import annotations

import functools
import logging
import os
import sys
import warnings

import click

from ssl_svm.cli import process
from ssl_svm.cli.process import Terminated, safe_text
from ssl_svm.exceptions import SSLWarning
from ssl_svm.formats.errors import DataError
from ssl_svm.solvers import progress
from ssl_svm.solvers.errors import ProblemError

EXIT_DATA = 1  # usage errors exit with 2 through click

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def libsvm_b_option():
    """LIBSVM's ``-b 0|1``, its spelling of ``--probability``."""
    return click.option("-b", "libsvm_b", type=click.IntRange(0, 1), default=None,
                        metavar="0|1", help="LIBSVM's spelling of --probability: -b 1 = "
                        "--probability, -b 0 = without (the default)")


def probability_flag(probability: bool, libsvm_b: int | None) -> bool:
    """--probability and -b together: the one flag they mean (a contradiction is a usage
    error)."""
    if libsvm_b == 0 and probability:
        raise click.UsageError("-b 0 says no probabilities, --probability says probabilities: "
                               "give one")
    return probability or libsvm_b == 1


def version_option(prog: str):
    """``--version``: ``PROG VERSION`` (the installed distribution's), read only when asked."""
    return click.version_option(None, "--version", package_name="ssl-svm", prog_name=prog,
                                message="%(prog)s %(version)s")


def fail(prog: str, message: str, status: int = EXIT_DATA):
    """``prog: error: message`` on stderr (made safe for a terminal), then exit ``status``."""
    try:
        click.echo(safe_text(f"{prog}: error: {message}"), err=True)
    except OSError:
        pass
    sys.exit(status)


def user_errors(prog: str):
    """Turn user-input errors into one line on stderr and exit status 1 (never a traceback)."""

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            try:
                process.install_handlers()
                return fn(*args, **kwargs)
            except (DataError, ProblemError) as e:
                fail(prog, str(e))
            except MemoryError:
                fail(prog, "out of memory")
            except Terminated:
                fail_quietly(prog, "terminated", 143)
            except KeyboardInterrupt:
                fail_quietly(prog, "interrupted", 130)
            except BrokenPipeError:
                # the reader went away (e.g. `| head`): stop quietly, as if killed by SIGPIPE
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                sys.exit(process.EXIT_PIPE)

        return inner

    return wrap


def fail_quietly(prog: str, text: str, status: int):
    """An interrupt: one line (a second Ctrl-C while cleaning up adds none), then exit."""
    process.report_once(prog, text)
    sys.exit(status)


class StderrFormatter(logging.Formatter):
    def __init__(self, prog: str):
        super().__init__()
        self.prog = prog

    def format(self, record):
        # file names and tokens in progress lines are made safe for a terminal too
        msg = safe_text(record.getMessage(), limit=10_000)
        if record.levelno >= logging.WARNING:
            return f"{self.prog}: warning: {msg}"
        if getattr(record, "notice", False):
            return f"{self.prog}: {msg}"
        return msg


def setup_logging(prog: str, quiet: bool, verbose: bool) -> logging.Logger:
    """Progress goes to stderr: -q keeps warnings only, --verbose adds solver detail."""
    root = logging.getLogger("ssl")
    # only a previous call's handler: the estimators' own (their warnings, should a host
    # process use both) stays, and does nothing outside their fits
    for h in list(root.handlers):
        if getattr(h, "ssl_cli", False):
            root.removeHandler(h)
    h = logging.StreamHandler(sys.stderr)
    h.ssl_cli = True
    h.setFormatter(StderrFormatter(prog))
    h.addFilter(progress.Stamp())
    root.addHandler(h)
    root.setLevel(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)
    root.propagate = False
    logging.getLogger("ssl.solver").setLevel(logging.NOTSET)
    # a first run's 'compiling …' line is not progress: -q shows it too (a batch job that
    # sits silent for a minute looks hung)
    logging.getLogger("ssl.runtime").setLevel(logging.INFO)
    log = logging.getLogger(f"ssl.{prog}")
    _warnings_to(log)
    return log


def _warnings_to(log: logging.Logger) -> None:
    """The library's warnings (:class:`ssl_svm.SSLWarning`) as ``prog: warning: ...`` lines,
    every time they are issued; other warnings as Python prints them."""
    shown = warnings.showwarning
    if getattr(shown, "ssl_log", None) is not None:
        shown = shown.previous

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, SSLWarning):
            log.warning("%s", message)
        else:
            shown(message, category, filename, lineno, file, line)

    show.ssl_log = log
    show.previous = shown
    warnings.showwarning = show
    warnings.simplefilter("always", SSLWarning)
