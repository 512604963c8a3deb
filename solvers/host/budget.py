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


# numpy work a command's check may add to the budget (plan_check)
_numpy_extra = 0
# a command's check after a fit begun on numpy continues on numpy while its folds' work, about
# k times the fit's, is at most this: numba's start (0.3-0.5 s) against 1.5-2.5 ns a unit
# saved (the sample file's tsvm, 2.7·10⁷ units a fit: 1.04 s with its check on numpy, 1.33 s
# on numba)
CHECK_NUMPY_WORK = 250_000_000


def numpy_work_left(budget: int) -> int:
    """What a fit beginning on numpy may spend there: ``budget``, less what this process's
    fits have spent before it unless inside :func:`history_free` (the library's fits each
    have the whole budget), plus what :func:`plan_check` allowed."""
    if getattr(_history, "free", False):
        return budget
    return max(0, budget + _numpy_extra - _numpy_spent)


def plan_check(folds: int) -> bool | None:
    """Before a command's check of ``folds`` folds after a fit that spent numpy work: the
    folds stay on numpy when ``folds`` times what was spent is at most
    :data:`CHECK_NUMPY_WORK` (each then a fit with a budget of its own:
    :class:`ssl_svm.trust.HeldOut`; their work is also allowed on top of the command's
    budget), else this process's later fits start on numba
    (:func:`numpy_start_over`). It counts work, not seconds, so the same command gives the
    same bytes. Returns whether they stay on numpy; None when nothing was spent on numpy or
    inside :func:`history_free`."""
    global _numpy_extra
    if getattr(_history, "free", False) or _numpy_spent == 0 or _numpy_spent == sys.maxsize:
        return None
    if folds * _numpy_spent <= CHECK_NUMPY_WORK:
        _numpy_extra += folds * _numpy_spent
        return True
    numpy_start_over()
    return False


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
