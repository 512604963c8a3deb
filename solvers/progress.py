"""Progress lines that keep a long run audible: at least one every PERIOD seconds of solver work.

The solvers log a line per stage (λ′ step, temperature, outer iteration) at INFO; on hard or
large problems a stage can take minutes, and a silent terminal cannot be told from a hung one.
:func:`beat` is called once per inner iteration (a Newton step, a CG solve, an SMO chunk): it
logs its message only when nothing has been logged for PERIOD seconds. :func:`touch` is called
for every line the commands print (the stderr handler's filter), so a beat never follows a
regular line closely. ``-q`` suppresses beats with the other INFO lines.
"""

from __future__ import annotations

import contextlib
import logging
import time

PERIOD = 10.0  # seconds of silence after which the next beat speaks

_last = [time.monotonic()]


def touch() -> None:
    """Record that a line was just printed."""
    _last[0] = time.monotonic()


def beat(log: logging.Logger, msg: str, *args) -> bool:
    """Log ``msg % args`` at INFO if nothing was printed for PERIOD seconds; True if it did.
    The message is formatted only when it is printed (the call costs one clock read)."""
    now = time.monotonic()
    if now - _last[0] < PERIOD or not log.isEnabledFor(logging.INFO):
        return False
    log.info(msg, *args)
    _last[0] = now
    return True


class Stamp(logging.Filter):
    """Handler filter: every record that reaches the handler counts as a printed line."""

    def filter(self, record: logging.LogRecord) -> bool:
        touch()
        return True


@contextlib.contextmanager
def quiet_solvers():
    """The solvers' log (``ssl.solver``) at ERROR inside: fits a rule makes for its own choice
    (a λ path's folds, a score's fits) are not the user's; its level put back after."""
    log = logging.getLogger("ssl.solver")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)
