"""Where a small linear fit starts: on numpy, or on numba.

numba's start costs a process about half a second before any work, which is more than a small
``svm``/``rls``/``tsvm``/``da`` fit takes on numpy; such fits begin on numpy and move to numba
once their work passes a budget (:class:`ssl_svm.solvers.linear.Routines`). A command's fits
share one budget, so the same command writes the same bytes; a library call's fit has its own
(:func:`history_free`), so its result does not depend on what the host process ran before.
"""

from __future__ import annotations

import sys
import threading

from ssl_svm.solvers.host.pools import thread_flag

# Inside history_free(): a small linear fit starts on numpy even when numba already runs.
_history = threading.local()


def history_free():
    """Inside the block, a fit's path (numpy start or not, :class:`solvers.linear.Routines`)
    follows from its own data alone, not from whether numba already runs in the process. The
    commands skip the numpy start once numba runs (a command's inputs decide that, so the same
    command still gives the same bytes); the library must give the same result whatever its
    host ran before."""
    return thread_flag(_history, "free")


# units of CG work this process's fits have done on numpy (solvers.linear.Routines), outside
# history_free(): a command's later fits (the check's folds, λ auto's) start on numba once
# they add up to one fit's budget
_numpy_spent = 0


def numpy_work_left(budget: int) -> int:
    """What a fit beginning on numpy may spend there: ``budget``, less what this process's
    fits have spent before it unless inside :func:`history_free` (the library's fits each
    have the whole budget)."""
    if getattr(_history, "free", False):
        return budget
    return max(0, budget - _numpy_spent)


def spend_numpy_work(units: int) -> None:
    """Count ``units`` of a fit's numpy work against the process's (see
    :func:`numpy_work_left`)."""
    global _numpy_spent
    if not getattr(_history, "free", False):
        _numpy_spent += units


# what numba's start costs a process before any work (its import, its target's set-up,
# loading the linear kernels from the cache): measured 0.5-0.7 s on this project's machine
NUMBA_START_SECONDS = 0.5


def numpy_start_over() -> None:
    """This process's later fits begin on numba: for a command whose fits together take
    longer on numpy than numba's start (a fit and its check's cross-validation). Nothing
    inside :func:`history_free` (the library's fits keep their own budgets)."""
    global _numpy_spent
    if not getattr(_history, "free", False):
        _numpy_spent = sys.maxsize


def numba_started_before() -> bool:
    """Whether numba runs in this process and may be used from a fit's start (see
    :func:`history_free`)."""
    return "numba" in sys.modules and not getattr(_history, "free", False)
