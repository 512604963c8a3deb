"""The training pipeline between data and a solver, shared by ``ssl-train``, ``ssl-tune`` and
the estimators: labels (which rows are unlabeled, which label is a class), positive-unlabeled
labels, validation rows, warm starts from a saved model, probability calibration, the fit
warnings and the transductive outputs.

Conventions
-----------
* Rows come as a :class:`ssl_svm.formats.svmlight.Dataset`: X CSR float64, y float labels,
  cost per-row cost factors, lines where each row came from (file line numbers; None for
  arrays, whose rows are then named ``y[i]`` in messages), name the file or array name.
* Inside the pipeline and the solvers label 0 marks an unlabeled row. :func:`relabel` maps
  the user's marker there; a real class 0 takes a positive code meanwhile, and
  :func:`restore_labels` gives the model its real labels back.
* Input errors are :class:`DataError` (file and line, or array and row); warnings are Python
  ``warnings`` of the :mod:`ssl_svm.exceptions` categories; progress goes to the ``ssl.fit``
  logger (the commands print it; a library caller sees nothing unless it asks).

Imports no numerical library at module level: the commands import this before deciding they
need numpy.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from ssl_svm.exceptions import (
    DataError,
    DegenerateFitWarning,
    LabelWarning,
    LopsidedWarning,
    MemoryLimitError,
    SettingWarning,
    warn,
)
from ssl_svm.solvers.params import LOPSIDED

log = logging.getLogger("ssl.fit")

# n-long vectors a linear solver holds at once (weights, Newton point, CG's r, p, q, the
# preconditioner, a buffer per thread, the model's copy): its memory is this many × 8 × width
LINEAR_VECTORS = 12
PROBABILITY_FOLDS = 5  # LIBSVM's -b 1 uses 5-fold cross-validation too
LOPSIDED_MIN_ROWS = 20


def fmt(v) -> str:
    """A parameter value as messages show it (None = chosen at run time: auto)."""
    if v is None:
        return "auto"
    return f"{v:g}" if isinstance(v, float) else str(v)


def _at(data, i: int) -> tuple[str, int | None]:
    """(where, line) of row i of ``data`` for a :class:`DataError`."""
    if data.lines is None:
        return f"{data.name}[{int(i)}]", None
    return data.name, int(data.lines[i])


def error_at(data, i: int, message: str) -> DataError:
    """A :class:`DataError` naming row i of ``data`` (its file and line, or ``y[i]``)."""
    where, line = _at(data, i)
    return DataError(where, message, line)


# --------------------------------------------------------------------------- labels

def class_codes(classes) -> dict[int, int]:
    """{internal code: real label} of integer class labels inside the solvers, where 0 marks
    the unlabeled rows: every class keeps its own integer, a class 0 takes the smallest
    positive integer no class uses ({} without a class 0). The one label coder of the
    commands (:func:`relabel`) and the estimators."""
    values = {int(v) for v in classes}
    if 0 not in values:
        return {}
    return {next(c for c in range(1, len(values) + 2) if c not in values): 0}


def relabel(y, unlabeled_label: int) -> dict[int, int]:
    """Rows labeled ``unlabeled_label`` become unlabeled (0, the solvers' convention), in
    place; rows labeled 0, then a real class, take :func:`class_codes`' code. Returns
    {internal code: real label} for :func:`restore_labels` (empty when the marker is 0, the
    files' convention)."""
    import numpy as np

    if unlabeled_label == 0:
        return {}
    zero, unl = y == 0, y == unlabeled_label
    codes = class_codes(np.unique(y[~unl]))
    for code in codes:
        y[zero] = code
    y[unl] = 0.0
    return codes


def internal_labels(labels, codes: dict[int, int]):
    """Real class labels (a model's predictions) back in the internal codes of
    :func:`relabel` (a float array): what the solvers' folds predict."""
    import numpy as np

    labels = np.asarray(labels, dtype=float)
    coded = labels.copy()
    for code, real in (codes or {}).items():
        coded[labels == real] = code
    return coded


def restore_labels(model, codes: dict[int, int]) -> None:
    """The model's class labels back from the internal codes of :func:`relabel`."""
    if codes:
        model.labels = [codes.get(int(v), int(v)) for v in model.labels]


def check_pu_labels(data, negatives_as_unlabeled: bool) -> None:
    """Positive-unlabeled rows: +1 and 0 only; -1 becomes 0 with ``negatives_as_unlabeled``
    (in place, with a :class:`LabelWarning`)."""
    import numpy as np

    neg = data.y == -1
    other = np.flatnonzero((data.y != 1) & (data.y != 0) & ~neg)
    if other.size:
        raise error_at(data, other[0], f"label {data.y[other[0]]:g}: positive-unlabeled "
                       f"learning takes +1 (labeled positive) and 0 (unlabeled)")
    if neg.any():
        if not negatives_as_unlabeled:
            raise error_at(data, np.flatnonzero(neg)[0], "label -1: positive-unlabeled "
                           "learning takes +1 (labeled positive) and 0 (unlabeled); add "
                           "--negatives-as-unlabeled to treat -1 rows as unlabeled")
        data.y[neg] = 0.0
        warn(f"treating {int(neg.sum())} rows labeled -1 as unlabeled "
             "(--negatives-as-unlabeled)", LabelWarning)
    if not np.any(data.y == 1):
        raise DataError(data.name, "no labeled positive rows (label +1)")


def check_width(data, n_classes: int) -> None:
    """A feature index so large that the weight vectors cannot fit: an error naming the row
    that holds it and the memory it would need, before the solver tries to allocate it."""
    from ssl_svm.solvers.host.pools import default_threads
    from ssl_svm.solvers.kernels import default_memory_limit, human_bytes

    d = data.X.shape[1]
    functions = 1 if n_classes <= 2 else n_classes
    need = 8 * (d + 1) * (LINEAR_VECTORS + default_threads() + functions)
    limit = default_memory_limit()
    if need <= limit:
        return
    import numpy as np

    X = data.X
    at = int(np.argmax(X.indices)) if X.nnz else 0
    row = int(np.searchsorted(X.indptr, at, side="right") - 1)
    raise error_at(data, row, f"feature index {d} makes the weight vectors need "
                   f"{human_bytes(need)}, more than the memory limit of {human_bytes(limit)} "
                   "(half the RAM); renumber the features densely")


@dataclass
class Training:
    """Rows ready for a solver. data: the rows the solver gets (unlabeled rows dropped for a
    supervised solver), y in the internal codes; labeled: the labeled mask of all the rows
    given (before any were dropped); codes: {internal code: real label} of :func:`relabel`;
    classes: the internal class labels, ascending; n_given: the rows of the data before the
    ``extra`` rows; unlabeled_X, unlabeled_lines: the unlabeled rows and where they came from
    (kept on request, for the transductive outputs of a solver that drops them)."""

    data: object
    labeled: object
    codes: dict
    classes: list
    n_given: int = 0
    unlabeled_X: object = None
    unlabeled_lines: object = None


def prepare(algo, data, *, unlabeled_label: int = 0, negatives_as_unlabeled: bool = False,
            extra=None, keep_unlabeled: bool = False) -> Training:
    """Check and shape ``data`` (labels as given, ``unlabeled_label`` marking the unlabeled
    rows) for ``algo``; ``extra``: more rows, all unlabeled (``--unlabeled``), appended.

    Unlabeled rows are dropped (and that said) for solvers that do not use them; a single class
    is an error except for positive-unlabeled solvers, naming ``unlabeled_label``.
    """
    import numpy as np

    from ssl_svm.formats.svmlight import stack_unlabeled
    from ssl_svm.solvers.multiclass import class_labels

    if algo.positive_unlabeled and unlabeled_label != 0 and np.any(data.y == 0):
        raise error_at(data, np.flatnonzero(data.y == 0)[0], f"label 0: positive-unlabeled "
                       f"learning takes +1 (labeled positive) and {unlabeled_label} "
                       "(unlabeled, --unlabeled-label)")
    codes = relabel(data.y, unlabeled_label)
    if unlabeled_label != 0:
        log.info("label %d marks the unlabeled rows (%d rows)%s", unlabeled_label,
                 int(np.sum(data.y == 0)), "; label 0 is a class" if codes else "")
    n_given = data.n_rows
    if extra is not None:
        data = stack_unlabeled(data, extra)
    if algo.linear_model:
        check_width(data, np.unique(data.y[data.y != 0]).size)
    if algo.positive_unlabeled:
        check_pu_labels(data, negatives_as_unlabeled)
    labeled = data.y != 0
    n_lab = int(labeled.sum())
    if n_lab == 0:
        raise DataError(data.name, f"no labeled rows (every label is {unlabeled_label})")
    kept = (None, None)
    # a supervised solver's model is checked on the rows it drops too (fit: one class for
    # every unlabeled row says nothing about the labeled ones)
    if keep_unlabeled or (not algo.uses_unlabeled and n_lab < data.n_rows):
        unl = np.flatnonzero(~labeled)
        kept = (data.X[unl], None if data.lines is None else data.lines[unl])
    n_unl = data.n_rows - n_lab
    if not algo.uses_unlabeled and n_lab < data.n_rows:
        log.info("ignoring %d unlabeled rows (label %d): %s trains on labeled rows only",
                 data.n_rows - n_lab, unlabeled_label, algo.name)
        data = data.subset(np.flatnonzero(labeled))
    classes = class_labels(data.y)
    if len(classes) < 2 and not algo.positive_unlabeled:
        # a LIBSVM file of classes 0 and 1 reads as one class and unlabeled rows
        zero_class = (" (if label 0 is a class here, not the mark of unlabeled rows, give "
                      "--unlabeled-label -1; in Python unlabeled_label=-1)"
                      if unlabeled_label == 0 and n_unl else "")
        raise DataError(data.name, f"only one class ({codes.get(classes[0], classes[0])}) "
                        f"among the labeled rows{zero_class}; {algo.name} needs two; for "
                        "positive-unlabeled data use -a usmo")
    return Training(data, labeled, codes, classes, n_given, *kept)


def validation_rows(data, classes, unlabeled_label: int = 0, codes=None):
    """(X, y) of labeled validation rows, their labels in the internal codes of
    :func:`relabel`; every label must be a class of the training rows."""
    import numpy as np

    unl = data.y == unlabeled_label
    if np.any(unl):
        raise error_at(data, np.flatnonzero(unl)[0], f"validation rows must be labeled (label "
                       f"{unlabeled_label} found)")
    real = dict(codes or {})
    for code, v in real.items():
        data.y[data.y == v] = code
    unknown = sorted(set(np.unique(data.y).astype(int)) - set(classes))
    if unknown:
        raise DataError(data.name, f"validation label {real.get(unknown[0], unknown[0])} is "
                        f"not a class of the training data "
                        f"({' '.join(str(real.get(c, c)) for c in classes)})")
    return data.X, data.y


# --------------------------------------------------------------------------- warm starts

def init_seeds(m, algo, params, data, codes, source: str):
    """The model ``m``'s functions as the seeds of a fit of ``algo`` on ``data`` (internal
    labels), per binary task in the order the solver trains them (fit(..., warm=...)).
    ``source`` names the model in errors. A kernel model seeds a fit on its own training rows
    (new rows appended); a linear model seeds w (features beyond the model's start at 0)."""
    import numpy as np
    import scipy.sparse as sp

    from ssl_svm.solvers.models import KernelExpansion
    from ssl_svm.solvers.multiclass import binary_tasks

    if m.algorithm != algo.name:
        raise DataError(source, f"--init needs a model of -a {algo.name}; this one is "
                        f"{m.algorithm}")
    order, tasks = binary_tasks(data.y)
    real = [codes.get(c, c) for c in order]
    if sorted(real) != sorted(m.labels):
        raise DataError(source, f"--init: the model's labels {' '.join(map(str, m.labels))} "
                        f"are not TRAIN's classes {' '.join(map(str, sorted(real)))}")

    def column(k_task):
        """(function index in m, sign) of binary task k_task."""
        if len(tasks) == 1:
            return 0, (1.0 if m.labels[0] == real[0] else -1.0)
        return m.labels.index(real[k_task]), 1.0

    fn = m.function
    n, d = data.X.shape
    seeds = []
    if isinstance(fn, KernelExpansion):
        rows = sp.csr_matrix(fn.rows)
        r = rows.shape[0]
        head = sp.csr_matrix(data.X[:r])
        if "graph_metric" in params:
            from ssl_svm.solvers.graph import resolve_metric

            model_metric = ("cosine" if fn.unit_rows else "scaled"
                            if fn.column_scale is not None else "euclidean")
            if resolve_metric(params["graph_metric"], data.X)[0] != model_metric:
                raise DataError(source, f"--init: the model was trained with --graph-metric "
                                f"{model_metric}; give the same metric")
            head = fn.transform(head)
        if params.get("gamma") is None:  # auto: continue with the model's width
            params["gamma"] = fn.kernel.gamma
            log.info("--init: kernel γ = %.6g from the model", fn.kernel.gamma)
        if fn.kernel != kernel_of(params, data.X) or r > n or not same_rows(head, rows):
            raise DataError(source, f"--init: the model's {r} expansion rows are not the first "
                            f"rows of TRAIN with the same kernel (a kernel model seeds a fit "
                            "on its own training rows, new rows appended)")
        for k in range(len(tasks)):
            j, sign = column(k)
            alpha = np.zeros(n)
            alpha[:r] = sign * fn.coef[:, j]
            seeds.append((alpha, sign * float(fn.b[j])))
        log.info("--init %s: seeds α from %d of the %d rows, b from the model", source, r, n)
        return {"init": seeds}
    bias = params["bias"]
    W = np.zeros((d, fn.W.shape[1]))
    w_rows = min(d, fn.W.shape[0])
    W[:w_rows] = fn.W[:w_rows]
    for k in range(len(tasks)):
        j, sign = column(k)
        wb = float(fn.b[j]) / bias if bias > 0 else 0.0
        seeds.append(sign * np.concatenate([W[:, j], [wb]]))
    log.info("--init %s: seeds w from the model (%d features)", source, w_rows)
    return seeds


def kernel_of(params, X):
    """The kernel a fit with ``params`` uses on rows X (gamma auto resolved)."""
    from ssl_svm.solvers.kernels import KernelSpec, resolve_gamma

    gamma, _ = resolve_gamma(params["gamma"], params["kernel"], X)
    return KernelSpec(params["kernel"], float(gamma), int(params["degree"]),
                      float(params["coef0"]))


def same_rows(A, B) -> bool:
    """Whether two CSR matrices hold the same rows (width aside)."""
    A, B = A.copy(), B.copy()
    for M in (A, B):
        M.sum_duplicates()
        M.eliminate_zeros()
    return (A.shape[0] == B.shape[0] and A.nnz == B.nnz
            and (A.indptr == B.indptr).all() and (A.indices == B.indices).all()
            and (A.data == B.data).all())


# --------------------------------------------------------------------------- calibration

def calibrate(algo, m, data, params, run, seed: int, codes, verbose: bool = False) -> None:
    """The slope of m's probabilities (``m.probability``) from cross-validated decision
    values of the labeled rows (unlabeled rows stay in every training part)."""
    import numpy as np

    from ssl_svm.solvers.calibration import fit_slope
    from ssl_svm.solvers.crossval import cross_val_decisions

    lab = data.y != 0
    counts = {c: int(np.sum(data.y == c)) for c in m.labels}
    small = min(counts, key=lambda c: (counts[c], c))
    k = min(PROBABILITY_FOLDS, counts[small])
    if k < 2:
        raise DataError(data.name, f"--probability cross-validates the labeled rows, but "
                        f"class {codes.get(small, small)} has {counts[small]} labeled row; it "
                        "needs at least 2 per class")
    t0 = time.perf_counter()
    solver_log = logging.getLogger("ssl.solver")
    level = solver_log.level
    if not verbose:
        solver_log.setLevel(logging.WARNING)
    try:
        F = cross_val_decisions(algo.fit, data.X, data.y, data.cost, params, k, seed,
                                m.labels, **run)
    finally:
        solver_log.setLevel(level)
    y_idx = np.array([m.labels.index(int(v)) for v in data.y[lab]])
    m.probability, loss = fit_slope(F[lab], y_idx, len(m.labels))
    log.info("probability calibration: slope A = %.6g from %d-fold cross-validated decision "
             "values of %d labeled rows (cross-entropy %.4g, %.2f s)", m.probability, k,
             int(lab.sum()), loss, time.perf_counter() - t0)


# --------------------------------------------------------------------------- the fit

def for_solver(rows: Training, algo) -> Training:
    """The prepared ``rows`` as ``algo`` trains on them: ``rows`` itself when it uses the
    unlabeled rows (or there are none), else its labeled rows, the unlabeled ones kept for
    the transductive outputs (what :func:`prepare` gives ``algo`` with ``keep_unlabeled``),
    without preparing and saying it all again: the winner of a selection made on rows
    prepared for another candidate."""
    import numpy as np

    data = rows.data
    unl = np.flatnonzero(data.y == 0)
    if algo.uses_unlabeled or unl.size == 0:
        return rows
    return Training(data.subset(np.flatnonzero(data.y != 0)), rows.labeled, rows.codes,
                    rows.classes, rows.n_given, data.X[unl],
                    None if data.lines is None else data.lines[unl])


def fit(algo, training: Training, params: dict, run: dict | None = None, *,
        probability: bool = False, seed: int = 0, init=None, init_source: str = "",
        verbose: bool = False):
    """Train ``algo`` on prepared rows: the setting checks before, the solver, the probability
    calibration (``probability``), the real labels back, the fit checks after. ``init``: a
    model of the same algorithm whose functions seed the fit (``init_source`` names it).
    Returns the model (labels real, ``train_values`` kept where the solver had them)."""
    data = training.data
    run = dict(run or {})
    check_setting(algo, params, data.X)
    if init is not None:
        run["warm"] = init_seeds(init, algo, params, data, training.codes, init_source)
    try:
        m = algo.fit(data.X, data.y, data.cost, params, **run)
    except MemoryLimitError as e:  # name the data whose rows make the matrices that large
        raise DataError(data.name, f"{data.n_rows} rows: {algo.name} {e}") from None
    if probability:
        calibrate(algo, m, data, params, run, seed, training.codes, verbose)
    restore_labels(m, training.codes)
    if len(training.classes) >= 2 and not algo.positive_unlabeled:
        F = training_values(algo, m, data.X)  # once, for both checks
        if F is not None and not check_one_class(algo, params, m, F, training.classes):
            check_lopsided(algo, m, F, data.y, training.codes)
            if not algo.uses_unlabeled and training.unlabeled_X is not None:
                check_unlabeled(algo, params, m, training)
    return m


def transductive_values(m, training):
    """The decision values of the unlabeled training rows: the solver's own (no second kernel
    pass) where it kept them, else the model's on the rows kept by
    ``prepare(..., keep_unlabeled=True)``."""
    if m.train_values is not None:
        return m.train_values[~training.labeled]
    return m.decision_function(training.unlabeled_X)


# --------------------------------------------------------------------------- fit warnings

def _flag(algo, name: str) -> str:
    return algo.param(name).flags[-1]


def check_setting(algo, params: dict, X) -> None:
    """Settings that make the problem degenerate on these rows, said (:class:`SettingWarning`)
    before the fit."""
    if params.get("kernel") == "rbf" and params.get("gamma") is not None:
        from ssl_svm.solvers.kernels import rbf_width_check, resolve_gamma

        if "graph_metric" in params:  # the rows as the kernel will see them
            from ssl_svm.solvers.graph import metric_scale, resolve_metric
            from ssl_svm.solvers.kernels import scale_columns, unit_rows

            metric = resolve_metric(params["graph_metric"], X)[0]
            if metric == "cosine":
                X = unit_rows(X)
            elif metric == "scaled":
                X = scale_columns(X, metric_scale(metric, X))

        gamma, _ = resolve_gamma(params["gamma"], "rbf", X)
        kind, g_med = rbf_width_check(X, gamma)
        if kind is not None:
            what = ("the identity (even nearest neighbours have kernel values < 0.01)"
                    if kind == "identity" else
                    "constant (even the farthest rows have kernel values > 0.99)")
            from ssl_svm.solvers.params import GRAPH_GAMMA

            try_ = ("-g auto (the default: as wide as the graph's heat weights) or the "
                    f"median-distance width -g {g_med:.3g}" if algo.param("gamma") == GRAPH_GAMMA
                    else f"the median-distance width -g {g_med:.3g} (the default, -g auto)")
            feats = " (features: 1/features)" if params["gamma"] == "features" else ""
            warn(f"rbf width -g {fmt(gamma)}{feats} makes the kernel matrix "
                 f"essentially {what} on these rows: try {try_}", SettingWarning)
    if (algo.name in ("lapsvm", "laprls") and params.get("kernel") == "linear"
            and not params.get("bias")):
        warn(f"{algo.name} -t linear without a bias (-B 0, lapsvmp's default): f = Kα "
             "passes through the origin, which costs accuracy unless the features are "
             "centred; -B 1 adds an unregularised bias", SettingWarning)


def training_values(algo, m, X):
    """The model's values on the training rows (None when it keeps none and is a kernel
    expansion, whose values would cost a kernel pass)."""
    if m.train_values is not None:
        return m.train_values
    return m.decision_function(X) if algo.linear_model else None


def check_one_class(algo, params: dict, m, F, classes: list) -> bool:
    """A fit whose values F on the training rows give one class to every row although
    several are labeled (said, :class:`DegenerateFitWarning`; returns whether it was)."""
    import numpy as np

    pred = np.unique(m.labels_from_values(F))
    if pred.size != 1:
        return False
    raised = []
    for name in algo.balance:
        v, d = params.get(name), algo.param(name).default
        if isinstance(v, (int, float)) and isinstance(d, (int, float)) and d > 0 and v > 0:
            raised.append((v / d, name, v, d))
    values = ", ".join(f"{_flag(algo, n)} {fmt(params.get(n))}" for n in algo.balance)
    hint = ""
    if raised:
        ratio, name, v, d = max(raised)
        if ratio > 1:
            hint = (f"; {_flag(algo, name)} {fmt(v)} is {ratio:.3g}× its default {fmt(d)}, "
                    f"try a smaller value")
    elif ("lambda" in algo.balance and isinstance(params.get("lambda"), (int, float))
          and algo.param("lambda").default is None):
        hint = (f"; try a smaller λ, e.g. {_flag(algo, 'lambda')} "
                f"{fmt(params['lambda'] / 100)}, or leave it to the data "
                f"({_flag(algo, 'lambda')} auto, the default)")
    elif "lambda" in algo.balance and params.get("lambda") is None and m.stats.get("lambda"):
        lam = m.stats["lambda"][0]  # auto: the value chosen
        values = values.replace(f"{_flag(algo, 'lambda')} auto",
                                f"{_flag(algo, 'lambda')} auto = {fmt(lam)}")
        hint = f"; try a smaller λ, e.g. {_flag(algo, 'lambda')} {fmt(lam / 100)}"
    if (not hint and "lambda" in algo.balance and isinstance(params.get("lambda"), (int, float))
            and params["lambda"] > 0):  # at its default: the direction and a value still
        hint = (f"; try a smaller λ, e.g. {_flag(algo, 'lambda')} "
                f"{fmt(params['lambda'] / 100)}")
    warn(f"{algo.name} predicts class {pred[0]} for all {F.shape[0]} training rows "
         f"although {len(classes)} classes are labeled: a degenerate fit, the labeled "
         f"rows are outweighed ({values}){hint}", DegenerateFitWarning)
    return True


def check_lopsided(algo, m, F, y, codes: dict, supervised: bool = False) -> None:
    """A semi-supervised fit (values F on the training rows) that gives some class under
    1/LOPSIDED of its share of the labeled rows among the unlabeled rows: often a cut that
    split off a small cluster rather than the classes (tvrls on text at k = 10: 12.6 %
    positive against 42 %, 40 % error). Said as a :class:`LopsidedWarning`."""
    import numpy as np

    if not algo.uses_unlabeled and not supervised:
        return
    unl = y == 0
    if unl.sum() < LOPSIDED_MIN_ROWS or (~unl).sum() < 2:
        return
    pred = np.asarray(m.labels_from_values(F[unl]))
    lab = np.array([codes.get(int(v), int(v)) for v in y[~unl]])
    worst = None
    for c in np.unique(lab):
        share_l, share_u = float(np.mean(lab == c)), float(np.mean(pred == c))
        if share_u * LOPSIDED < share_l and (worst is None or share_u / share_l < worst[0]):
            worst = (share_u / share_l, c, share_u, share_l)
    if worst is not None:
        _, c, share_u, share_l = worst
        warn(f"{algo.name} puts {100 * share_u:.1f} % of the {int(unl.sum())} "
             f"unlabeled rows in class {c}, against {100 * share_l:.1f} % of the "
             "labeled rows: unless the unlabeled rows are that unbalanced, the solution "
             + ("does not carry over from the few labeled rows (λ may be too large for "
                "these features; choose it with ssl-tune)" if supervised else
                "has cut off part of a class rather than separated the classes (the "
                "kernel, graph or weight of the unlabeled rows may not suit the data)"),
             LopsidedWarning)


def check_unlabeled(algo, params: dict, m, training) -> None:
    """A supervised fit's predictions for the unlabeled rows it did not train on: one class
    for all of them, or a class far below its labeled share, is said as for the
    semi-supervised solvers (with few labels, e.g. 10 on text, λ = 1 can put every unlabeled
    row in one class while the labeled ones are still told apart)."""
    import numpy as np

    Xu = training.unlabeled_X
    if Xu.shape[0] < LOPSIDED_MIN_ROWS:
        return
    F = m.decision_function(Xu)
    pred = np.unique(m.labels_from_values(F))
    if pred.size == 1:
        hint = ""
        lam = params.get("lambda")
        if lam is None:  # auto: the value the solver chose
            lam = (m.stats.get("lambda") or [None])[0]
        if isinstance(lam, (int, float)) and lam > 0:
            hint = (f"; -W {fmt(lam)} may regularise too strongly for these features: try "
                    f"-W {fmt(lam / 100)}, or choose it by cross-validation "
                    f"(ssl-tune -a {algo.name} -G lambda=1e-4:1:x10)")
        warn(f"{algo.name} predicts class {pred[0]} for all {Xu.shape[0]} unlabeled rows "
             f"(which it does not train on) although {len(training.classes)} classes are "
             f"labeled{hint}", DegenerateFitWarning)
        return
    values = np.concatenate([np.zeros((training.data.y.size, F.shape[1])), F])
    y = np.concatenate([training.data.y, np.zeros(Xu.shape[0])])
    check_lopsided(algo, m, values, y, training.codes, supervised=True)


PRIOR_SWEEP = 5  # values evenly over the class prior's interval for -G prior=auto


def sweep_values(estimate) -> list[str]:
    """The priors ``-G prior=auto`` tries for a :class:`solvers.prior.PriorEstimate`: the
    estimate and ``PRIOR_SWEEP`` values evenly over its interval, each to 3 significant
    digits, ascending, without repeats."""
    import numpy as np

    swept = np.concatenate([[estimate.value], np.linspace(estimate.low, estimate.high,
                                                          PRIOR_SWEEP)])
    return sorted({f"{v:.3g}" for v in swept}, key=float)


def prior_sweep(data, values: list) -> list:
    """The values of a ``prior`` grid axis with ``auto`` replaced by :func:`sweep_values` of
    the class prior estimated on all the rows of ``data`` (+1 labeled positive, 0
    unlabeled), after the values given before it; the estimate and the values logged."""
    from ssl_svm.solvers.prior import estimate_prior

    if "auto" not in values:
        return values
    t0 = time.perf_counter()
    e = estimate_prior(data.X, data.y)
    found = sweep_values(e)
    out = []
    for v in values:
        for w in (found if v == "auto" else [v]):
            if w not in out:
                out.append(w)
    log.info("prior=auto: estimated π = %s on the %d rows (%.2f s); trying %s", e.text(),
             data.y.size, time.perf_counter() - t0, ", ".join(found))
    return out
