"""One training run, as ``ssl-train`` (in one process or on a cluster), ``ssl-tune --out``,
the estimators and ``Auto`` make it: the fit on prepared rows, the check against the
supervised svm, and the unlabeled rows' values.

The callers differ only in what they ask for, which a :class:`Request` says; the rows come
prepared, here (:func:`ssl_svm.training.prepare`) or held elsewhere
(:class:`ssl_svm.cluster.ClusterTraining`: a cluster's blocks, which fit and check where the
rows are), and the result is what each writes or keeps.
"""

from __future__ import annotations

import numbers
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
    rows came from, named in the check's messages (None: no file); transductive: also return
    the unlabeled rows' decision values; verbose: the calibration's progress."""

    algo: object
    params: dict
    run: dict = field(default_factory=dict)
    probability: bool = False
    seed: int = 0
    init: object = None
    init_source: str = ""
    check: str = "none"
    source: str | None = None
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


def checked_request(rows, request) -> Request:
    """``request`` with its parameters completed (a parameter left out takes its default),
    after checking what :func:`train` is given: a TypeError or ValueError naming the field,
    here, rather than an AttributeError or KeyError from inside a solver."""
    from dataclasses import replace

    from ssl_svm.solvers.models import Model
    from ssl_svm.solvers.registry import Algorithm

    if not isinstance(rows, training.Training) and not is_remote(rows):
        raise TypeError("train(rows, ...): rows must be a ssl_svm.training.Training (from "
                        f"ssl_svm.training.prepare), not {type(rows).__name__}")
    if not isinstance(request, Request):
        raise TypeError(f"train(..., request): request must be a ssl_svm.pipeline.Request, "
                        f"not {type(request).__name__}")
    algo = request.algo
    if not isinstance(algo, Algorithm):
        raise TypeError("Request.algo must be a solver of ssl_svm.solvers.registry.ALGORITHMS "
                        f"(e.g. ALGORITHMS['tsvm']), not {algo!r}")
    if not isinstance(request.params, dict):
        raise TypeError(f"Request.params must be a dict of {algo.name}'s parameters, not "
                        f"{type(request.params).__name__}")
    known = {p.name: p for p in algo.params}
    unknown = sorted(str(k) for k in request.params if k not in known)
    if unknown:
        raise ValueError(f"Request.params: {algo.name} has no parameter "
                         f"{', '.join(map(repr, unknown))} (its parameters: "
                         f"{', '.join(known)})")
    params = {}
    for name, p in known.items():
        value = request.params.get(name, p.default)
        if value is None and p.default is None:
            params[name] = None  # chosen from the data at run time
            continue
        try:
            params[name] = p.check(value)
        except ValueError as e:
            raise ValueError(f"Request.params[{name!r}]: {e}") from None
    run = request.run
    if not isinstance(run, dict):
        raise TypeError(f"Request.run must be a dict, not {type(run).__name__}")
    extra = sorted(str(k) for k in run if k not in algo.run_options)
    if extra:
        raise ValueError(f"Request.run: {algo.name} takes no run option "
                         f"{', '.join(map(repr, extra))} (it takes: "
                         f"{', '.join(algo.run_options) or 'none'})")
    if request.init is not None and not isinstance(request.init, Model):
        raise TypeError("Request.init must be None or a model of the same solver (from "
                        "ssl_svm.formats.model_file.read_model), not "
                        f"{type(request.init).__name__}")
    if request.check not in trust.CHECKS:
        raise ValueError(f"Request.check must be one of {', '.join(trust.CHECKS)} (got "
                         f"{request.check!r})")
    if isinstance(request.seed, bool) or not isinstance(request.seed, numbers.Integral):
        raise TypeError(f"Request.seed must be an int, not {request.seed!r}")
    return replace(request, params=params)


def command_backend(algo, data, params: dict, run: dict, check: str):
    """The backend of the command's fit (:func:`ssl_svm.solvers.backend.backend`, told of the
    check's folds), put in ``run`` for the solvers that take one. When the check's folds are
    why it is numba, the command's other fits (λ auto's) start on numba too: it runs anyway."""
    from ssl_svm.solvers import backend as backends
    from ssl_svm.solvers.host import budget

    folds = trust.folds_for(data.y) if trust.may_check(algo, data.y, check) else 0
    rows, nnz = data.X.shape[0], data.X.nnz
    options = {**params, "unlabeled": int((data.y == 0).sum())}
    be = backends.backend(algo.name, rows, nnz, {**options, "checked_folds": folds})
    if "backend" in algo.run_options:
        run["backend"] = be
        if not be.numpy and backends.backend(algo.name, rows, nnz, options).numpy:
            budget.numpy_start_over()
    return be


def is_remote(rows) -> bool:
    """Whether ``rows`` are held elsewhere (a cluster's blocks): they fit and check themselves
    (``rows.fit(algo, params)``, ``rows.check(algo, params, model, how, seed, source)``)."""
    from ssl_svm.cluster import ClusterTraining

    return isinstance(rows, ClusterTraining)


def train(rows, request: Request) -> Result:
    """Fit ``request.algo`` on ``rows``, check the fit as ``request.check`` says, and return
    the model with what else the request asked for. What is given is checked first
    (:func:`checked_request`). Rows held elsewhere (:func:`is_remote`) give no values: their
    caller writes the unlabeled rows' predictions where they are."""
    request = checked_request(rows, request)
    if not isinstance(rows, training.Training):  # held elsewhere (checked_request)
        with WarmClock() as clock:
            model = rows.fit(request.algo, request.params)
        checked = rows.check(request.algo, request.params, model, request.check,
                             request.seed, request.source)
        return Result(model, checked, None, clock.seconds)
    with WarmClock() as clock:  # without a first run's compiling
        model = training.fit(request.algo, rows, request.params, request.run,
                             probability=request.probability, seed=request.seed,
                             init=request.init, init_source=request.init_source,
                             verbose=request.verbose)
    checked = trust.check_fit(request.algo, rows, request.params, request.run, model,
                              request.check, seed=request.seed, source=request.source)
    values = training.transductive_values(model, rows) if request.transductive else None
    return Result(model, checked, values, clock.seconds)
