"""One training run, as ``ssl-train``, ``ssl-tune --out`` and the estimators make it: the fit
on prepared rows, the check against the supervised svm, and the unlabeled rows' values.

The callers differ only in what they ask for, which a :class:`Request` says; the rows come
prepared (:func:`ssl_svm.training.prepare`), and the result is what each writes or keeps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ssl_svm import training, trust
from ssl_svm.solvers.host.numba_start import WarmClock


@dataclass
class Request:
    """What one training run does, besides the rows.

    algo, params, run: the registry's solver, its parameters, its run options (memory, a
    validation set); probability: fit a calibration (5-fold, ``seed``); init, init_source: a
    model of the same solver seeding the fit, and how to name it; check: the check after the
    fit (``auto``, ``cv`` or ``none``, :func:`ssl_svm.trust.check_fit`); source: the file the
    rows came from, named in the check's messages (None: no file); on_skip: told why a due
    check could not run; transductive: also return the unlabeled rows' decision values;
    verbose: the calibration's progress."""

    algo: object
    params: dict
    run: dict = field(default_factory=dict)
    probability: bool = False
    seed: int = 0
    init: object = None
    init_source: str = ""
    check: str = "none"
    source: str | None = None
    on_skip: Callable[[str], None] | None = None
    transductive: bool = False
    verbose: bool = False


@dataclass
class Result:
    """model: the fitted model (real labels); check: the check's comparison, or None when it
    did not run; values: the unlabeled rows' decision values (``Request.transductive``);
    seconds: the fit's time without a first run's compiling (what a fold of it takes)."""

    model: object
    check: object = None
    values: object = None
    seconds: float = 0.0


def train(rows: training.Training, request: Request) -> Result:
    """Fit ``request.algo`` on ``rows``, check the fit as ``request.check`` says, and return
    the model with what else the request asked for."""
    with WarmClock() as clock:  # without a first run's compiling: what a fold would take
        model = training.fit(request.algo, rows, request.params, request.run,
                             probability=request.probability, seed=request.seed,
                             init=request.init, init_source=request.init_source,
                             verbose=request.verbose)
    checked = trust.check_fit(request.algo, rows, request.params, request.run, model,
                              clock.seconds, request.check, seed=request.seed,
                              source=request.source, on_skip=request.on_skip)
    values = training.transductive_values(model, rows) if request.transductive else None
    return Result(model, checked, values, clock.seconds)
