"""The exceptions and warning categories of ssl_svm.

Errors are typed and say what to change in one line:

* :class:`DataError` (a ``ValueError``): the data, labels or a model file cannot be used as
  given; names the file and line (``train.svm:12: ...``) or, for arrays, the row
  (``y[11]: ...``).
* :class:`ProblemError` (a ``ValueError``): the data do not fit the method as posed (one class
  only, a fit that overflowed: :class:`NonFiniteError`).
* :class:`MemoryLimitError` (a ``ProblemError`` and a ``MemoryError``): a fit would hold more
  than its memory limit at once.

Warnings are :class:`SSLWarning` subclasses, so one filter (``warnings.simplefilter("error",
ssl_svm.SSLWarning)``) can make all of them errors, or silence them. The commands print each
as an ``ssl-train: warning: ...`` line.
"""

from __future__ import annotations

import os
import sys
import warnings

from ssl_svm.formats.errors import DataError
from ssl_svm.solvers.errors import MemoryLimitError, NonFiniteError, ProblemError


class SSLWarning(UserWarning):
    """Base class of every warning ssl_svm issues."""


class SettingWarning(SSLWarning):
    """A parameter setting that makes the problem degenerate on these rows (an rbf width that
    turns the kernel matrix into the identity or a constant; a linear kernel without bias)."""


class DegenerateFitWarning(SSLWarning):
    """A fit that predicts one class for every training row although several are labeled."""


class LopsidedWarning(SSLWarning):
    """A semi-supervised fit that gives some class far less of the unlabeled rows than of the
    labeled ones: often a cut that split off a small cluster rather than the classes."""


class UnlabeledHurtWarning(SSLWarning):
    """Harm proven: a semi-supervised fit that a one-sided sign test on the held-out labeled
    rows finds worse than the supervised svm on the same folds (:mod:`ssl_svm.trust`)."""


class UnverifiedWarning(SSLWarning):
    """A semi-supervised fit the check can neither prove harmful nor clear: the labeled rows
    cannot rule out a loss against the supervised svm of the size the message states
    (:mod:`ssl_svm.trust`). Quieter than :class:`UnlabeledHurtWarning`, and not a subclass
    of it: filter it alone with ``warnings.simplefilter("ignore", UnverifiedWarning)``."""


class UncheckedWarning(SSLWarning):
    """What was to be checked could not be, or only in part: the check after a fit skipped, a
    cross-validation with fewer folds than asked, a selection with nothing to cross-validate
    (a class of one labeled row)."""


class LabelWarning(SSLWarning):
    """Labels taken in another meaning than given (e.g. -1 rows treated as unlabeled)."""


class SolverWarning(SSLWarning):
    """What a solver says about its own run: an iteration limit reached, an input it ignores,
    transductive values that disagree with the model's function."""


def _package_folders() -> tuple[str, ...]:
    import logging

    import ssl_svm
    import ssl_svm.formats
    import ssl_svm.solvers

    return tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep
                 for m in (ssl_svm, ssl_svm.solvers, ssl_svm.formats, logging))


def warn(message: str, category: type[SSLWarning]) -> None:
    """Issue a warning that points at the first line outside ssl_svm (and logging, through
    which the solvers speak): the caller's ``clf.fit(...)`` or the command, not a line of
    the pipeline."""
    inside = _package_folders()
    frame, level = sys._getframe(1), 2  # stacklevel 2: the caller of warn()
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(inside):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


__all__ = ["DataError", "DegenerateFitWarning", "LabelWarning", "LopsidedWarning",
           "MemoryLimitError", "NonFiniteError", "ProblemError", "SSLWarning",
           "SettingWarning", "SolverWarning", "UncheckedWarning", "UnlabeledHurtWarning",
           "UnverifiedWarning"]
