"""The process around a command: standard descriptors, signals, and the one-line error.

:func:`run` is what the console scripts call. It makes the contract hold for every command:

- a closed standard input, output or error (``<&-``, ``>&-``) is noted and its descriptor
  taken by ``/dev/null``, so no file the run opens can become fd 0-2 by accident; reading
  ``-`` or writing to ``-`` then fails with one line;
- SIGINT (from the first import on, see ``ssl_cli/__init__``) and SIGTERM (from the start of
  the command's own code) end the run with one line, the temporary files removed, status
  130 / 143;
- click's usage errors keep click's layout (usage, hint, ``Error: ...``) and status 2; every
  message is made safe for a terminal (:func:`safe_text`);
- standard output is flushed inside the run, so a full disk or a closed pipe there is reported
  like any other write error, never as a traceback at exit.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import warnings

owned = False  # True in a console-script process (not when a test calls a command in-process)
sigint_ignored = False  # the parent started us with SIGINT ignored (set in ssl_cli/__init__)
closed_std: set[int] = set()

MAX_MESSAGE = 400  # characters of an error line; the middle of a longer one is cut
# the reader of standard output went away (`| head`): stop quietly with the status of a
# process killed by SIGPIPE, as other tools do, so `set -o pipefail` tells it from an error
EXIT_PIPE = 141


# numpy submodules that scipy's import touches (array_api_compat copies every public name of
# numpy, which imports these two) and no command uses: 0.1 s of a 0.3 s start
DEFERRED_IMPORTS = ("numpy.f2py", "numpy.testing")


class _DeferredFinder:
    """A meta-path finder that gives :data:`DEFERRED_IMPORTS` a lazy loader
    (:class:`importlib.util.LazyLoader`): importing one makes an empty module that loads on
    its first attribute access, so code that does use it gets the whole module."""

    # marks every instance, also one made by this file imported under its other name
    # (ssl_cli.process and ssl_svm.cli.process): one finder asking another would loop
    ssl_svm_deferred = True

    def __init__(self):
        self._busy: set[str] = set()

    def find_spec(self, name, path, target=None):
        if name not in DEFERRED_IMPORTS or name in self._busy:
            return None
        import importlib.util

        self._busy.add(name)  # a finder below that imports through sys.meta_path again
        try:
            for finder in sys.meta_path:
                if getattr(finder, "ssl_svm_deferred", False) or not hasattr(finder,
                                                                              "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    if spec.loader is None or not hasattr(spec.loader, "exec_module"):
                        return None
                    spec.loader = importlib.util.LazyLoader(spec.loader)
                    return spec
        finally:
            self._busy.discard(name)
        return None


def defer_unused_imports() -> None:
    """Make :data:`DEFERRED_IMPORTS` lazy in this process (a command's own: the library
    leaves its host's imports alone); nothing for one already imported, nothing the second
    time."""
    if not any(getattr(f, "ssl_svm_deferred", False) for f in sys.meta_path):
        sys.meta_path.insert(0, _DeferredFinder())


class Terminated(BaseException):
    """SIGTERM, handled as an interrupt (clean-up), reported as ``terminated`` with 143.
    Not a KeyboardInterrupt: click would turn that into its own Abort."""


def safe_text(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` as one printable line: control characters escaped (``\\x1b``, ``\\n``) so that
    bytes quoted from an input cannot drive the terminal; cut in the middle past ``limit``."""
    out = []
    for ch in text:
        o = ord(ch)
        if o < 0x20 or o == 0x7F or 0x80 <= o < 0xA0:
            out.append(f"\\x{o:02x}")
        else:
            out.append(ch)
    s = "".join(out)
    if len(s) > limit:
        keep = (limit - 5) // 2
        s = f"{s[:keep]} ... {s[-keep:]}"
    return s


def early_interrupt(signum, frame):  # noqa: ARG001 -- signal handler signature
    """SIGINT while the program is still importing: nothing to clean up yet."""
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "ssl"
    data = f"{prog}: interrupted\n".encode()
    try:
        while data:  # a write to a pipe may take part of it
            data = data[os.write(2, data):]
    except OSError:
        pass
    os._exit(130)


def _in_numba(frame) -> bool:
    """Whether ``frame`` or a caller of it runs numba's own Python code."""
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name == "numba" or name.startswith("numba."):
            return True
        frame = frame.f_back
    return False


def _redeliver(signum: int) -> None:
    """Send ``signum`` to the main thread again in a moment."""
    import threading

    main = threading.main_thread().ident

    def again():
        try:
            signal.pthread_kill(main, signum)
        except (OSError, ValueError):
            pass

    t = threading.Timer(0.02, again)
    t.daemon = True
    t.start()


def _at_a_safe_point(signum, frame) -> bool:
    """Python runs a signal handler at the next bytecode, which may be inside numba's own
    Python code: unpickling a type while it boxes a compiled function's result (a tuple of
    arrays), or its compiler. An exception raised there leaves a tuple with a missing item
    (the process then crashes with SIGSEGV: 1 in 40 runs of ssl-train killed 0.5 s in, while
    reading) or half-made compiler objects. There the signal is sent again 20 ms later,
    until the handler runs in the package's or the standard library's code."""
    global pending
    if _in_numba(frame):
        pending = signum
        _redeliver(signum)
        return False
    pending = None
    return True


pending: int | None = None  # a signal put off by _at_a_safe_point and not yet acted on


def raise_pending() -> None:
    """Act now on a signal put off and not yet acted on: before the outcome of a run is
    decided (:meth:`Outputs.commit`): an interrupt put off while the run's last numba call
    ran, the commit less than one redelivery (20 ms) after it, is not lost."""
    if pending == signal.SIGINT:
        raise KeyboardInterrupt
    if pending == signal.SIGTERM:
        raise Terminated()


def _terminate(signum, frame):
    if _at_a_safe_point(signum, frame):
        raise Terminated()


def _interrupt(signum, frame):
    if _at_a_safe_point(signum, frame):
        raise KeyboardInterrupt


def _guard_std_fds() -> None:
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed_std.add(fd)
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if 1 in closed_std:
        sys.stdout = None
    if 2 in closed_std:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 -- lives as long as the process


def install_handlers() -> None:
    """From the start of a command's own code: SIGINT raises KeyboardInterrupt and SIGTERM
    :class:`Terminated`, so that the run cleans up its temporary files. (Before it, while
    click parses the options, there is nothing to clean: the early handler just exits.)"""
    if not owned:
        return
    if not sigint_ignored:
        signal.signal(signal.SIGINT, _interrupt)
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN:
        signal.signal(signal.SIGTERM, _terminate)


@contextlib.contextmanager
def deferred_signals():
    """Hold SIGINT and SIGTERM (blocked, not lost) while numba and the solvers load and
    numba's thread pool starts: an exception raised asynchronously inside that start-up can
    leave the native thread pool half made, and the process then crashes instead of exiting
    cleanly. The held signal is delivered when the block ends, a moment later. Threads started
    inside the block keep both blocked, so signals always reach the main thread."""
    if not owned:
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def stdout_closed() -> bool:
    return sys.stdout is None or 1 in closed_std


def run(command, prog: str, argv=None) -> int:
    """Run the click ``command`` as the program ``prog``; returns the exit status."""
    import click

    global owned
    owned = True
    _guard_std_fds()
    # overflow and invalid-value warnings: the solvers and the prediction path check their
    # numbers and say so in one line; numpy's own warnings (here and in worker processes)
    # would only add lines of source code to stderr
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    os.environ.setdefault("PYTHONWARNINGS", "ignore::RuntimeWarning")
    from ssl_svm.solvers.host import pools

    try:
        pools.check_environment()
    except ValueError as e:  # numba would crash (exit 139) or print a traceback on it
        _say(prog, f"error: {safe_text(str(e))}")
        return 1
    from ssl_svm.solvers.host import forks

    # a command's small folds may run in children forked from it, on the CPUs it may use
    forks.allow(pools.default_threads())
    try:
        try:
            _no_value_after_help(prog, sys.argv[1:] if argv is None else argv)
            status = command.main(args=argv, prog_name=prog, standalone_mode=False)
            status = status if isinstance(status, int) else 0
        except click.exceptions.Exit as e:
            status = e.exit_code
        except SystemExit as e:  # user_errors' one-line exits
            status = e.code if isinstance(e.code, int) else 1
        except click.exceptions.Abort:  # click's own Ctrl-C while prompting
            _say(prog, "interrupted")
            status = 130
        except click.ClickException as e:
            _say(prog, f"error: {usage_line(e)}")
            status = e.exit_code
        if sys.stdout is not None:
            sys.stdout.flush()
    except Terminated:
        report_once(prog, "terminated")
        status = 143
    except KeyboardInterrupt:
        report_once(prog, "interrupted")
        status = 130
    except BrokenPipeError:
        _stdout_to_devnull()
        status = EXIT_PIPE
    except OSError as e:  # standard output: a full disk, an I/O error
        _stdout_to_devnull()
        _say(prog, f"error: -: cannot write: {e.strerror or e}")
        status = 1
    finally:
        forks.allow(0)  # a test that runs a command in its own process: its library forks none
    # from here on the outcome is decided: an interrupt or SIGTERM during the interpreter's
    # shutdown no longer changes the exit status. (Ignored process-wide: a mask would cover
    # this thread only, and the shutdown puts Python-level handlers back to the default.)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return status


def usage_line(e) -> str:
    """The one line a click error says after ``prog: error:`` (the contract's form, not click's
    three lines): its message, made safe for a terminal; the usage line appended where the
    message names no option's value (a missing argument, an unknown option, extra words)."""
    import click

    if isinstance(e, click.BadParameter) and e.param_hint is not None:
        e.param_hint = safe_text(str(e.param_hint))
    text = safe_text(e.format_message()).replace("\n", " ")
    lost = isinstance(e, (click.NoSuchOption, click.MissingParameter)) or \
        text.startswith("Got unexpected extra argument")
    if lost and getattr(e, "ctx", None) is not None:
        usage = " ".join(e.ctx.get_usage().split())
        usage = usage[len("Usage: "):] if usage.startswith("Usage: ") else usage
        text += f" (usage: {usage}; --help lists the options)"
    return text


def _no_value_after_help(prog: str, args) -> None:
    """``-h`` followed by a value (LIBSVM's shrinking flag, ``-h 0``) is a usage error: click
    would print the help and exit 0, and a ``set -e`` script would carry on without a model."""
    import click

    args = list(args)
    for i, a in enumerate(args[:-1]):
        if a == "--":
            return
        nxt = args[i + 1]
        if a == "-h" and nxt != "--" and not nxt.startswith("-"):
            raise click.UsageError(f"-h takes no value (got '-h {nxt}'): it prints the help; "
                                   f"LIBSVM's -h 0|1 (shrinking) has no counterpart here, drop "
                                   f"it. Try '{prog} --help'.")


_reported = False


def report_once(prog: str, text: str) -> None:
    """Say ``prog: interrupted`` (or terminated) once per process, and from then on ignore
    further interrupts: the run is already ending and cleaning up."""
    global _reported
    if owned:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not _reported:
        _reported = True
        _say(prog, text)


def _say(prog: str, text: str) -> None:
    try:
        sys.stderr.write(f"{prog}: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _stdout_to_devnull() -> None:
    """What is left in stdout's buffer after a failed write must not raise again at
    interpreter exit (the failure was reported, or the reader is gone)."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
