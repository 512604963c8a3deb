"""scikit-learn estimators, one class per registered solver, built from the registry.

Every class's constructor parameters are the solver's :class:`ssl_svm.solvers.params.Param`
declarations (the same list that makes ``ssl-train``'s options and the model file's ``param``
lines) under their canonical names, ``lambda`` spelled ``lam`` (a Python keyword), plus the
estimator's own: ``unlabeled_label``, ``probability``, ``warm_start``, ``random_state``,
``n_jobs``, ``verbose`` and, for the kernel and graph solvers, ``max_memory``.

Labels follow scikit-learn's ``semi_supervised`` module: rows of ``y`` equal to
``unlabeled_label`` (default -1) are unlabeled; ``unlabeled_label=0`` takes the SVMlight files'
convention. Classes may be any sortable labels; a model with integer classes saves to the
command line's model file (:meth:`SSLClassifier.save`, :func:`load`). :class:`USMO` is a
positive-unlabeled learner: ``fit(X, s)`` with 1 = labeled positive, 0 or -1 = unlabeled.

The pipeline between the arrays and the solver is :mod:`ssl_svm.training`, the one
``ssl-train`` runs; errors are :mod:`ssl_svm.exceptions` types (``ValueError`` subclasses),
the solvers' own remarks :class:`ssl_svm.SolverWarning` warnings.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import sys
import threading

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import _safe_indexing, check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ssl_svm import pipeline, training, trust
from ssl_svm.cluster import ALGORITHMS as CLUSTER_ALGORITHMS
from ssl_svm.exceptions import DataError, SolverWarning, UncheckedWarning, warn
from ssl_svm.formats import LABEL_MAX
from ssl_svm.formats.svmlight import Dataset
from ssl_svm.selection import rules
from ssl_svm.selection.splits import equal_labels
from ssl_svm.solvers.host import budget, pools
from ssl_svm.solvers.registry import ALGORITHMS

# registry parameter name -> constructor keyword, where the name is not a valid one
KEYWORDS = {"lambda": "lam"}
# registry name -> class name
# the estimator's own parameters (not the solver's), with their defaults
COMMON = (("unlabeled_label", -1), ("probability", False), ("warm_start", False),
          ("random_state", None), ("n_jobs", None), ("verbose", 0))
# the stat n_iter_ reports, the first found: the solver's iterations, tsvm's retrainings, da's
# temperatures
ITERATION_STATS = ("iterations", "retrains", "temperatures")


def keyword(name: str) -> str:
    """The constructor keyword of registry parameter ``name``."""
    return KEYWORDS.get(name, name)


def default_value(p):
    """A Param's default as a constructor default: ``"auto"`` for a value chosen from the
    data (None in the registry) where the parameter accepts that name."""
    return "auto" if p.default is None and "auto" in p.names else p.default


# --------------------------------------------------------------------------- solver context

_state = threading.local()


class _Bridge(logging.Handler):
    """The solvers' log records during an estimator's fit (in this thread): warnings become
    :class:`SolverWarning` warnings, progress goes to stderr with ``verbose``; outside a fit,
    nothing."""

    def emit(self, record):
        verbose = getattr(_state, "verbose", None)
        if verbose is None:
            return
        if record.levelno >= logging.WARNING:
            warn(record.getMessage(), SolverWarning)
        elif verbose:
            sys.stderr.write(record.getMessage() + "\n")


_BRIDGE = _Bridge()
logging.getLogger("ssl").addHandler(_BRIDGE)


def check_n_jobs(n_jobs) -> int | None:
    """``n_jobs`` checked: None, or an int other than 0 (negative: the CPUs available, as
    scikit-learn's -1), at most :data:`pools.MAX_THREADS`; a TypeError or ValueError naming
    it otherwise."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)):
        raise TypeError(f"n_jobs={n_jobs!r}: an int (-1: the CPUs available) or None")
    if n_jobs == 0 or n_jobs > pools.MAX_THREADS:
        raise ValueError(f"n_jobs={n_jobs!r}: -1 (the CPUs available), None, or 1 to "
                         f"{pools.MAX_THREADS}")
    return int(n_jobs)


@contextlib.contextmanager
def _solver_context(verbose, n_jobs, algo=None):
    """Around a fit or a prediction: the solvers' warnings as Python warnings, their progress
    on stderr if ``verbose``, numba's and BLAS's threads at most ``n_jobs`` (None: as they
    are; -1: the CPUs available), a fit's path independent of what the process ran before
    (:func:`ssl_svm.solvers.host.budget.history_free`). Everything is put back afterwards."""

    n_jobs = check_n_jobs(n_jobs)
    if algo is not None and n_jobs is not None:
        algo.fit  # noqa: B018 -- its module (and numba, for most solvers) loaded first

    ssl_log = logging.getLogger("ssl")
    old_level, old_verbose = ssl_log.level, getattr(_state, "verbose", None)
    _state.verbose = bool(verbose)
    if verbose:
        ssl_log.setLevel(logging.INFO)
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(budget.history_free())
            if n_jobs is not None:
                threads = pools.available_cpus() if n_jobs < 0 else max(1, int(n_jobs))
                stack.enter_context(pools.thread_limit(threads))
            if algo is not None and algo.linear_model:
                # the linear solvers' BLAS calls are vector operations; OpenBLAS's idle threads
                # spin ~0.1 s after each and take the cores from numba's loops (a9a-100 tsvm
                # 5.2 s against 3.9 s); the commands set OPENBLAS_THREAD_TIMEOUT instead, which
                # a library cannot once OpenBLAS has loaded
                stack.enter_context(pools.blas_limit(1))
            yield
    finally:
        _state.verbose = old_verbose
        ssl_log.setLevel(old_level)


# --------------------------------------------------------------------------- the estimators

def _as_csr(X) -> sp.csr_matrix:
    """X as the solvers take it: CSR float64, sorted indices, no duplicates, int32 indices
    where they fit (the compiled routines' usual types). Copies only what must change."""
    X = sp.csr_matrix(X, dtype=np.float64)
    if X.indices.dtype != np.int32 and X.nnz < 2**31 and X.shape[1] < 2**31:
        X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)),
                          shape=X.shape)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def _integer_classes(classes: np.ndarray) -> bool:
    """Whether the classes are integers a model file can hold (bool labels are not)."""
    if classes.dtype.kind not in "iuf":
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.isfinite(classes)) and np.all(classes == np.round(classes))
                    and np.all(np.abs(classes) <= LABEL_MAX))


# a class 0 or -1 holding at least this share of the labeled rows, and this many times the
# rows of every other class, reads as the unlabeled rows' mark taken for a class
MARKER_SHARE = 0.5
MARKER_RATIO = 4


def _marker_taken_as_class(y, unl, classes, unlabeled_label, name: str) -> bool:
    """A :class:`LabelWarning` (and True) when a class 0 or -1 that ``unlabeled_label`` does
    not name holds most of the rows and the other classes only a handful: the mark of the
    unlabeled rows in another convention (0 in the SVMlight files, -1 in scikit-learn's)
    trained as a class, which the fit cannot tell from a real one."""
    if classes.dtype.kind not in "iuf" or classes.size < 2:
        return False
    counts = {c: int(np.sum(y[~unl] == c)) for c in classes.tolist()}
    for mark in (0, -1):
        if mark not in counts or equal_labels(np.array([mark]), unlabeled_label)[0]:
            continue
        rest = max(v for c, v in counts.items() if c != mark)
        n = sum(counts.values())
        if counts[mark] >= MARKER_SHARE * n and counts[mark] >= MARKER_RATIO * rest:
            from ssl_svm.exceptions import LabelWarning

            other = "; ".join(f"{c}: {v}" for c, v in counts.items() if c != mark)
            warn(f"{name}: class {mark} holds {counts[mark]} of the {n} labeled rows and the "
                 f"other classes a handful ({other}), with unlabeled_label="
                 f"{unlabeled_label!r} matching {int(unl.sum())} rows: if {mark} marks the "
                 f"unlabeled rows, pass unlabeled_label={mark}", LabelWarning)
            return True
    return False


def _check_convention(y, unl, classes, unlabeled_label, name: str) -> None:
    """A :class:`LabelWarning` when ``y`` reads as an SVMlight file's labels taken in
    scikit-learn's convention: values -1, 0 and 1, -1 marking the unlabeled rows, and more
    rows of class 0 than unlabeled ones (in the files 0 marks the unlabeled rows, usually the
    most, and -1 is a class: ``TSVM().fit(*load_svmlight(path))`` would train 0 against 1)."""
    zeros = int(np.sum(y == 0)) if classes.dtype.kind in "iuf" else 0
    if (isinstance(unlabeled_label, (int, np.integer)) and unlabeled_label == -1
            and classes.size == 2 and unl.any() and np.array_equal(classes, [0, 1])
            and zeros > int(unl.sum())):
        from ssl_svm.exceptions import LabelWarning

        warn(f"{name}: y holds -1, 0 and 1 with more rows of 0 ({zeros}) than of -1 "
             f"({int(unl.sum())}), which unlabeled_label=-1 makes the unlabeled rows: if 0 "
             "marks the unlabeled rows and -1 is a class (the SVMlight files' convention, "
             "as ssl_svm.load_svmlight returns them), pass unlabeled_label=0", LabelWarning)
        return
    _marker_taken_as_class(y, unl, classes, unlabeled_label, name)


class SSLClassifier(ClassifierMixin, BaseEstimator):
    """Base of the estimators: fit, predict, decision values, probabilities, scoring on the
    labeled rows, and the model file. Subclasses set ``_algorithm`` (a registry name)."""

    _algorithm: str = ""

    def __init__(self):
        # the estimators' own constructors replace this one: only the base classes reach it
        raise TypeError(f"{type(self).__name__} is a base class of the estimators, not one: "
                        f"use {', '.join(CLASS_NAMES.values())} (or ssl_svm.estimator(NAME))")

    # ------------------------------------------------------------------ set-up

    @classmethod
    def _algo(cls):
        return ALGORITHMS[cls._algorithm]

    def _params(self) -> dict:
        """The solver's parameters from the constructor's, checked (ValueError naming the
        keyword)."""
        algo = self._algo()
        params = {}
        for p in algo.params:
            kw = keyword(p.name)
            value = getattr(self, kw)
            if p.default is None and (value is None or (isinstance(value, str)
                                                        and value == "auto")):
                params[p.name] = None  # chosen from the data at run time
                continue
            try:
                params[p.name] = p.check(value)
            except ValueError as e:
                text = str(e)
                if text.startswith(p.option):
                    text = text[len(p.option):].lstrip()
                raise ValueError(f"{type(self).__name__}({kw}={value!r}): {text}") from None
        return params

    def _run(self) -> dict:
        run = {}
        if "max_memory" in self._algo().run_options and self.max_memory is not None:
            from ssl_svm.solvers.kernels import parse_memory

            try:
                run["max_memory"] = parse_memory(str(self.max_memory))
            except ValueError as e:
                raise ValueError(f"{type(self).__name__}(max_memory={self.max_memory!r}): "
                                 f"{e}") from None
        early = getattr(self, "early_stop", None)
        if early in ("validation", "mixed"):
            raise ValueError(f"{type(self).__name__}(early_stop={early!r}) needs labeled "
                             "validation rows, which only ssl-train --validation FILE takes; "
                             "use 'stability' (the default) or 'none'")
        return run

    def _labels(self, y: np.ndarray):
        """(internal float labels with 0 = unlabeled, codes of relabelled classes, classes_,
        the unlabeled mask)."""
        unl = equal_labels(y, self.unlabeled_label)
        y_lab = y[~unl]
        if y_lab.size:
            check_classification_targets(y_lab)
        classes = np.unique(y_lab)
        _check_convention(y, unl, classes, self.unlabeled_label, type(self).__name__)
        if classes.size < 2:
            found = (f"one class ({classes[0]})" if classes.size == 1 else "no labeled row")
            raise DataError("y", f"{type(self).__name__} needs two classes among the labeled "
                            f"rows; y has {found} besides {int(unl.sum())} rows equal to "
                            f"unlabeled_label={self.unlabeled_label!r} (scikit-learn's "
                            "semi-supervised convention is -1 for unlabeled rows; "
                            "unlabeled_label=0 takes the SVMlight files' 0; for "
                            "positive-unlabeled data use ssl_svm.USMO)")
        internal = np.zeros(y.size)
        codes = {}
        if _integer_classes(classes):
            # the classes' own integers inside, as ssl-train has them (same model file); a
            # class 0 takes a positive code meanwhile, 0 marking the unlabeled rows there
            values = [int(v) for v in classes.tolist()]
            codes = training.class_codes(values)
            code = next(iter(codes), 0)
            for c, v in zip(classes, values):
                internal[~unl & equal_labels(y, c)] = v if v != 0 else code
            label_index = {v: i for i, v in enumerate(values)}
        else:
            for i, c in enumerate(classes):
                internal[~unl & equal_labels(y, c)] = i + 1
            label_index = {i + 1: i for i in range(classes.size)}
        return internal, codes, classes, unl, label_index

    def _costs(self, sample_weight, n: int) -> np.ndarray:
        if sample_weight is None:
            return np.ones(n)
        w = np.asarray(sample_weight, dtype=np.float64)
        if w.ndim == 0:
            w = np.full(n, float(w))
        if w.shape != (n,):
            raise ValueError(f"sample_weight.shape == {w.shape}, expected ({n},)")
        if not np.all(np.isfinite(w)):
            raise ValueError("sample_weight has values that are not finite numbers")
        if np.any(w < 0):
            raise ValueError("negative weights in sample_weight: the weights are the rows' "
                             "cost factors, at least 0")
        if n and not np.any(w > 0):
            raise ValueError("every sample weight is zero: no row would count")
        return w.copy()

    # ------------------------------------------------------------------ fit

    def fit(self, X, y, sample_weight=None):
        """Train on the rows of X (dense or sparse), y their labels with ``unlabeled_label``
        marking the unlabeled rows; ``sample_weight`` gives each row's cost factor (the files'
        ``cost:``). Returns self."""
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        y = np.asarray(y)
        algo = self._algo()
        params = self._params()
        run = self._run()
        cost = self._costs(sample_weight, X.shape[0])
        internal, codes, classes, unl, label_index = self._labels(y)
        seed = self._seed()
        data = Dataset(_as_csr(X), internal, cost, None, "y")
        init = None
        if self.warm_start and getattr(self, "model_", None) is not None:
            if algo.init_start:
                init = self.model_
            else:
                warn(f"{type(self).__name__} has no warm start from a fitted model (rls, svm, "
                     "lapsvm, laprls have); fitting from scratch", SolverWarning)
        check = getattr(self, "check", "none")
        if check not in trust.CHECKS:
            raise ValueError(f"{type(self).__name__}(check={check!r}): one of "
                             f"{', '.join(map(repr, trust.CHECKS))}")
        address = getattr(self, "cluster", None)
        with _solver_context(self.verbose, self.n_jobs, algo):
            if address is not None:
                model, self.check_, F_unl = self._fit_on_cluster(address, params, data, codes,
                                                                 check, seed, init)
            else:
                prepared = training.prepare(algo, data, keep_unlabeled=True)
                prepared.codes = codes
                result = pipeline.train(prepared, pipeline.Request(
                    algo, params, run, probability=self._probability(), seed=seed, init=init,
                    init_source="the previous fit", check=check, source=None,
                    transductive=True, verbose=bool(self.verbose)))
                model, self.check_, F_unl = result.model, result.check, result.values
        self._set_fitted(model, classes, label_index)
        transduction = np.empty(y.size, dtype=classes.dtype)
        transduction[~unl] = y[~unl]
        transduction[unl] = self._labels_of(model.labels_from_values(F_unl))
        self.transduction_ = transduction
        return self

    def _fit_on_cluster(self, address, params, data, codes, check, seed, init) -> tuple:
        """The fit with the rows on a Dask cluster's workers (``cluster=``, as ssl-train
        --cluster): (model, check, the unlabeled rows' values). A lost worker's rows are
        shipped again to the workers left and the fit starts over (at most 3 times)."""
        from ssl_svm import cluster, transport

        algo = self._algo()
        name = type(self).__name__
        if self._probability():
            raise ValueError(f"{name}(probability=True) with cluster=: calibrate a fit on a "
                             "sample of the rows in one process")
        if init is not None:
            warn(f"{name}: warm_start has no effect with cluster=; fitting from scratch",
                 SolverWarning)
        try:
            client, own = transport.client_of(address)
        except (TypeError, ValueError) as e:
            if isinstance(e, DataError):
                raise
            raise type(e)(f"{name}(cluster={address!r}): {e}") from None

        def work(blocks):
            prepared = cluster.prepare(blocks, algo, "X")
            prepared.codes = codes
            result = pipeline.train(prepared, pipeline.Request(algo, params, check=check,
                                                               seed=seed, source=None))
            F = list(cluster.unlabeled_values(prepared, result.model))
            k = result.model.n_functions
            return result.model, result.check, np.vstack(F) if F else np.zeros((0, k))

        try:
            return transport.run_on(client, lambda lost: transport.load_rows(
                client, data.X, data.y, data.cost, "X", lost, cluster.block_kind(algo.name)),
                work)
        finally:
            if own:
                client.close()

    def _probability(self) -> bool:
        return bool(self.probability)

    def _seed(self) -> int:
        """The folds' seed: an int random_state is the seed itself (``ssl-train --seed``), so
        the same seed gives the model file ssl-train writes; None or a RandomState draws
        one."""
        rs = self.random_state
        if isinstance(rs, (int, np.integer)) and not isinstance(rs, bool) and 0 <= rs < 2**32:
            return int(rs)
        return int(check_random_state(rs).randint(0, 2**31 - 1))

    def _set_fitted(self, model, classes, label_index) -> None:
        """The fitted attributes from ``model`` (its labels real)."""
        model.train_values = None  # held by the solver for -l; the estimator has used them
        model.warm = None
        self.model_ = model
        self.classes_ = classes
        self._label_index = label_index
        stats = model.stats
        it = next((stats[k] for k in ITERATION_STATS if k in stats), None)
        if it is not None:
            # da without unlabeled rows is one supervised solve and no temperature
            unlabeled = stats.get("n_unlabeled", [1])[0]
            self.n_iter_ = int(np.max(it)) if unlabeled else max(1, int(np.max(it)))
        obj = stats.get("objective")
        if obj is not None:
            self.objective_ = float(obj[0]) if len(obj) == 1 else np.asarray(obj, dtype=float)
        fn = model.function
        if hasattr(fn, "W"):
            order = self._columns()
            if order is None:  # binary: one function, positive for the first model label
                sign = self._binary_sign()
                self.coef_ = sign * fn.W[:, 0][None, :].copy()
                self.intercept_ = sign * fn.b[:1].copy()
            else:
                self.coef_ = fn.W[:, order].T.copy()
                self.intercept_ = fn.b[order].copy()

    def _labels_of(self, model_labels) -> np.ndarray:
        """The classes_ of the model's labels."""
        idx = np.fromiter((self._label_index[int(v)] for v in np.asarray(model_labels)),
                          dtype=np.int64, count=len(model_labels))
        return self.classes_[idx]

    def _columns(self):
        """For several functions: the model's function index of each class in classes_
        order; None for a binary model."""
        labels = self.model_.labels
        if len(labels) == 2:
            return None
        where = {self._label_index[int(v)]: j for j, v in enumerate(labels)}
        return np.array([where[i] for i in range(len(self.classes_))])

    def _binary_sign(self) -> float:
        """+1 when the model's first label (f > 0) is classes_[1], else -1."""
        return 1.0 if self._label_index[int(self.model_.labels[0])] == 1 else -1.0

    # ------------------------------------------------------------------ predict

    def _values(self, X) -> np.ndarray:
        check_is_fitted(self, "model_")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        with _solver_context(0, self.n_jobs, self._algo()):
            return self.model_.decision_function(_as_csr(X))

    def decision_function(self, X) -> np.ndarray:
        """Decision values: shape (rows,) for two classes, positive towards ``classes_[1]``;
        else (rows, classes), columns in ``classes_`` order (one-vs-rest)."""
        F = self._values(X)
        order = self._columns()
        if order is None:
            return self._binary_sign() * F[:, 0]
        return F[:, order]

    def predict(self, X) -> np.ndarray:
        """The predicted class of each row (the model file's rule: the first label where
        f > 0 for two classes, the largest value for more)."""
        F = self._values(X)
        return self._labels_of(self.model_.labels_from_values(F))

    def _has_probability(self) -> bool:
        if hasattr(self, "model_"):
            return self.model_.probability is not None
        return bool(getattr(self, "probability", False))

    @available_if(_has_probability)
    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities (rows × classes, ``classes_`` order) of the calibration fitted with
        ``probability=True``: a sigmoid of the decision values whose most probable class is
        always the predicted one."""
        F = self._values(X)
        P = self.model_.probabilities(F)
        where = {self._label_index[int(v)]: j for j, v in enumerate(self.model_.labels)}
        return P[:, [where[i] for i in range(len(self.classes_))]]

    @available_if(_has_probability)
    def predict_log_proba(self, X) -> np.ndarray:
        """The logarithm of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy on the labeled rows of (X, y): rows equal to ``unlabeled_label`` are
        left out (so a semi-supervised test fold scores only what it can)."""
        from sklearn.metrics import accuracy_score

        y = np.asarray(y)
        keep = ~equal_labels(y, self.unlabeled_label) if y.ndim == 1 else np.ones(len(y), bool)
        if not keep.any():
            raise ValueError("score needs labeled rows; every row of y equals "
                             f"unlabeled_label={self.unlabeled_label!r}")
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight)[keep]
        Xk = _safe_indexing(X, np.flatnonzero(keep))
        return float(accuracy_score(y[keep], self.predict(Xk), sample_weight=sample_weight))

    # ------------------------------------------------------------------ model files

    def save(self, path: str) -> None:
        """Write the model file ``ssl-train`` writes (``ssl-predict`` reads it), atomically.
        The classes must be integers (the file's labels are)."""
        check_is_fitted(self, "model_")
        if not _integer_classes(np.asarray(self.classes_)):
            raise ValueError(f"the model file stores integer labels; this model's classes are "
                             f"{list(self.classes_)!r} (map them to integers before fit)")
        from ssl_svm.formats.model_file import write_model

        write_model(self.model_, path)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class PUClassifier(SSLClassifier):
    """Positive-unlabeled learning: ``fit(X, s)`` with s = 1 for a labeled positive row and
    0 or -1 (or any one other value) for an unlabeled one, as PU libraries take it; predicts
    1 (positive) or the unlabeled marker of ``s`` (-1 where ``s`` has -1) for negative."""

    def _labels(self, s: np.ndarray):
        if s.size:
            check_classification_targets(s)
        pos = equal_labels(s, 1)
        others = np.unique(s[~pos])
        if others.size > 1 and not set(others.tolist()) <= {0, -1}:
            raise DataError("y", f"Only binary classification is supported: "
                            f"positive-unlabeled learning takes 1 (labeled positive) and one "
                            f"marker of the unlabeled rows, 0 or -1 (y has "
                            f"{', '.join(map(str, np.unique(s).tolist()))})")
        if not pos.any():
            raise DataError("y", "no labeled positive rows (label 1): positive-unlabeled "
                            "learning needs some")
        if others.size == 0:
            raise DataError("y", "y has one class only (1, labeled positive): "
                            "positive-unlabeled learning needs unlabeled rows too (0 or -1)")
        neg = -1 if equal_labels(others, -1).any() else others[0]
        classes = np.array([neg, s[pos][0]]) if neg < 1 else np.array([s[pos][0], neg])
        internal = np.where(pos, 1.0, 0.0)
        label_index = {1: int(np.flatnonzero(classes == 1)[0]),
                       -1: int(np.flatnonzero(classes != 1)[0])}
        return internal, {}, classes, ~pos, label_index

    def _probability(self) -> bool:
        return False

    def _set_fitted(self, model, classes, label_index) -> None:
        """Also ``prior_``: the class prior π the fit used (given, or estimated with
        ``prior='auto'``), ``prior_interval_``: the estimate's 90 % bootstrap interval
        (low, high), and ``prior_upper_``: an upper bound of π that holds with 95 %
        confidence (the DKW bound on the estimate's held-out scores; all three π when given
        or from a model file written before the bound)."""
        super()._set_fitted(model, classes, label_index)
        stats = model.stats
        self.prior_ = float(stats["prior"][0])
        self.prior_interval_ = (float(stats["prior_low"][0]), float(stats["prior_high"][0]))
        self.prior_upper_ = float(stats.get("prior_upper", stats["prior"])[0])

    def score(self, X, y, sample_weight=None) -> float:
        """The PU metric of Lee & Liu (2003), recall² / P(ŷ = 1), larger is better: recall on
        the rows labeled positive in y (1), P(ŷ = 1) the predicted-positive share of all the
        rows (``ssl-tune --metric pu``). Accuracy would count every unlabeled row as a
        negative; this needs no negatives."""
        y = np.asarray(y)
        pred = self.predict(X)
        pos = equal_labels(y, 1)
        w = np.ones(y.size) if sample_weight is None else np.asarray(sample_weight, float)
        if not np.any(w[pos] > 0):
            raise ValueError("the PU score needs rows labeled positive (1) in y")
        hit = pred == self.classes_[self._label_index[1]]
        recall = float(np.sum(w[pos] * hit[pos]) / np.sum(w[pos]))
        rate = float(np.sum(w * hit) / np.sum(w))
        return recall * recall / rate if rate > 0 else 0.0

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


def _parameters(algo) -> list[tuple[str, object, object]]:
    """(keyword, default, Param or None) of every constructor parameter of ``algo``'s
    estimator: the solver's, then the estimator's own."""
    out = [(keyword(p.name), default_value(p), p) for p in algo.params]
    for name, default in COMMON:
        if algo.positive_unlabeled and name in ("unlabeled_label", "probability"):
            continue
        out.append((name, default, None))
    if "max_memory" in algo.run_options:
        out.append(("max_memory", None, None))
    if algo.uses_unlabeled and not algo.positive_unlabeled:
        out.append(("check", "auto", None))
    if algo.name in CLUSTER_ALGORITHMS:
        out.append(("cluster", None, None))
    return out


def _make_init(cls_name: str, parameters: list[tuple[str, object, object]]):
    names = [n for n, _, _ in parameters]
    defaults = {n: d for n, d, _ in parameters}

    def __init__(self, **kwargs):
        for key in kwargs:
            if key not in defaults:
                hint = " (lambda is spelled lam)" if key == "lambda" else ""
                raise TypeError(f"{cls_name}() got an unexpected keyword argument "
                                f"{key!r}{hint}")
        for name in names:
            setattr(self, name, kwargs.get(name, defaults[name]))

    __init__.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d)
           for n, d, _ in parameters])
    __init__.__qualname__ = f"{cls_name}.__init__"
    return __init__


_COMMON_DOC = {
    "unlabeled_label": "the value of y that marks an unlabeled row (default -1, as "
                       "scikit-learn's semi_supervised module; 0 for the SVMlight files' "
                       "convention, with which 0 is no class)",
    "probability": "also fit a probability calibration (5-fold cross-validation of the "
                   "labeled rows, as ssl-train --probability) for predict_proba",
    "warm_start": "seed the next fit with this fit's model (rls, svm, lapsvm, laprls; the same "
                  "optimum, reached sooner), as ssl-train --init",
    "random_state": "seed of the calibration's folds (int, RandomState or None)",
    "n_jobs": "threads of the solver's parallel loops and BLAS during fit and predict (None: "
              "as they are; -1: the CPUs available)",
    "verbose": "print the solver's progress on stderr",
    "max_memory": "memory allowed for n×n matrices, e.g. '2G' or a number of MiB (default: "
                  "half the RAM)",
    "cluster": "a Dask scheduler's address ('tcp://HOST:8786') or a distributed.Client: "
               "the rows go to its workers and the fit runs there, as ssl-train --cluster "
               "(rls, svm, tsvm, da; lapsvm and laprls in their landmark form); None: here",
    "check": "after the fit, cross-validate it and the supervised svm on the same folds of "
             "the labeled rows, compare their labels of the unlabeled rows, and say the "
             "verdict: harm proven (UnlabeledHurtWarning), no harm (nothing said), or "
             "unverified with the loss the labeled rows cannot rule out (UnverifiedWarning): "
             "'auto' always, its folds on every row up to 2,000 unlabeled rows, above on a "
             "seeded 2,000 of them or a tenth, whichever is more, 'cv' its folds on every "
             "row, 'none' never (as ssl-train --check); "
             "the verdict and its figures are ``check_`` (None when not run)",
}


def _docstring(algo, parameters) -> str:
    lines = [f"{algo.summary[0].upper()}{algo.summary[1:]}.", "",
             f"The solver of ``ssl-train -a {algo.name}``; its options are the parameters "
             "below (each with its ssl-train option; the keyword ↔ option table is on the "
             "documentation site's Python page).", "", "Parameters",
             "----------"]
    for name, default, p in parameters:
        if p is not None:
            lines.append(f"{name} : {p.type.__name__}, default={default!r}")
            lines.append(f"    {p.help} ({p.option}; range {p.range_text()}).")
        else:
            lines.append(f"{name} : default={default!r}")
            lines.append(f"    {_COMMON_DOC[name]}.")
    lines += ["", "Attributes", "----------",
              "classes_ : ndarray of shape (n_classes,)", "    The classes, sorted.",
              "n_features_in_ : int", "    The width of X.",
              "transduction_ : ndarray of shape (n_rows,)",
              "    The label of every training row: given for labeled rows, predicted for "
              "unlabeled ones.",
              "model_ : Model", "    The fitted model (what the model file stores).",
              "n_iter_, objective_ : int, float",
              "    The solver's iterations and final objective, where it has them.",
              "check_ : Comparison or None",
              "    The check against the supervised svm (None when it did not run):",
              "    ``verdict`` ('harm', 'no harm', 'unverified'), ``upper_bound``, the",
              "    figures (:class:`ssl_svm.selection.stats.Comparison`)."]
    if algo.linear_model:
        lines += ["coef_, intercept_ : ndarray",
                  "    The weights: (1, features) for two classes (positive towards "
                  "``classes_[1]``), else (classes, features); the intercepts likewise."]
    return "\n".join(lines)


def _solver_estimator(cls):
    """Class decorator: ``__init__`` (keyword-only, the registry's parameters of the solver
    ``cls._algorithm`` with their defaults, then the estimator's own) and the docstring, both
    from the solver's ``Param`` declarations."""
    algo = ALGORITHMS[cls._algorithm]
    parameters = _parameters(algo)
    cls.__init__ = _make_init(cls.__name__, parameters)
    cls.__doc__ = _docstring(algo, parameters)
    return cls


@_solver_estimator
class RLS(SSLClassifier):
    _algorithm = "rls"


@_solver_estimator
class SVM(SSLClassifier):
    _algorithm = "svm"


@_solver_estimator
class TSVM(SSLClassifier):
    _algorithm = "tsvm"


@_solver_estimator
class DAS3VM(SSLClassifier):
    _algorithm = "da"


@_solver_estimator
class LapSVM(SSLClassifier):
    _algorithm = "lapsvm"


@_solver_estimator
class LapRLS(SSLClassifier):
    _algorithm = "laprls"


@_solver_estimator
class USMO(PUClassifier):
    _algorithm = "usmo"


@_solver_estimator
class TVRLS(SSLClassifier):
    _algorithm = "tvrls"


@_solver_estimator
class TVSVM(SSLClassifier):
    _algorithm = "tvsvm"


@_solver_estimator
class CheegerRLS(SSLClassifier):
    _algorithm = "cheeger-rls"


@_solver_estimator
class CheegerSVM(SSLClassifier):
    _algorithm = "cheeger-svm"


_CLASSES = {c._algorithm: c for c in (RLS, SVM, TSVM, DAS3VM, LapSVM, LapRLS, USMO, TVRLS,
                                      TVSVM, CheegerRLS, CheegerSVM)}
if set(_CLASSES) != set(ALGORITHMS):  # a solver added to the registry needs its class here
    raise ImportError(f"ssl_svm.estimators: no estimator class for "
                      f"{sorted(set(ALGORITHMS) - set(_CLASSES))}")
ESTIMATORS: dict[str, type] = {name: _CLASSES[name] for name in ALGORITHMS}
CLASS_NAMES = {name: cls.__name__ for name, cls in ESTIMATORS.items()}


def estimator(algorithm: str) -> type:
    """The estimator class of a registry name (``-a NAME``), e.g. ``estimator("tsvm")``;
    ``estimator("auto")`` is :class:`Auto` (``ssl-tune -a auto``)."""
    if algorithm == "auto":
        return Auto
    try:
        return ESTIMATORS[algorithm]
    except KeyError:
        raise ValueError(f"unknown algorithm {algorithm!r} (available: "
                         f"{', '.join(ESTIMATORS)})") from None


def load(path: str) -> SSLClassifier:
    """A fitted estimator from a model file (``ssl-train``'s or :meth:`SSLClassifier.save`'s):
    its class from the file's algorithm, its parameters from the ``param`` lines.
    ``unlabeled_label`` is -1 unless -1 is one of the model's classes (an SVMlight file's
    -1/+1 model): then 0, the files' mark, so that ``score(X, y)`` on rows read with
    :func:`load_svmlight` counts the rows ``ssl-predict`` counts."""
    from ssl_svm.formats.model_file import read_model

    model = read_model(path)
    cls = ESTIMATORS[model.algorithm]
    algo = ALGORITHMS[model.algorithm]
    kwargs = {}
    for p in algo.params:
        if p.name in model.params:
            v = model.params[p.name]
            chosen_at_run_time = v is None or (p.default is None and v == "auto")
            kwargs[keyword(p.name)] = default_value(p) if chosen_at_run_time else v
    est = cls(**kwargs)
    if not algo.positive_unlabeled:
        # score() leaves out the rows equal to unlabeled_label: never one of the model's
        # classes, so the loaded estimator scores the rows ssl-predict scores
        est.unlabeled_label = next(v for v in (-1, 0, None)
                                   if v is None or v not in (int(c) for c in model.labels))
        est.probability = model.probability is not None
        labels = sorted(int(v) for v in model.labels)
        classes = np.array(labels)
        label_index = {v: i for i, v in enumerate(labels)}
    else:
        classes = np.array([-1, 1])
        label_index = {-1: 0, 1: 1}
    est.n_features_in_ = model.n_features
    est._set_fitted(model, classes, label_index)
    return est


# --------------------------------------------------------------------------- the selection

class Auto(SSLClassifier):
    """Choose among solvers as ``ssl-tune -a auto`` does, then refit the winner.

    Every candidate's grid is cross-validated on the same folds of the labeled rows (the
    unlabeled rows in every training part); a semi-supervised candidate replaces the
    supervised svm only when its best point is ahead of the svm by more than the critical
    value for the best of all the semi-supervised points tried (max-T over the per-row paired
    differences), and where its held-out rows stand for the unlabeled ones
    (:mod:`ssl_svm.trust`). Kept, the svm is the model ``SVM()`` (``ssl-train -a svm``) fits.
    With the same data and seed the winner, its model file and its predictions are those of
    ``ssl-tune -a auto --out``.

    Parameters
    ----------
    candidates : "auto" or a list of solver names, default="auto"
        ``"auto"``: svm, tsvm, lapsvm, cheeger-rls (``ssl-tune -a auto``); a list as
        ``-a A,B,...`` (the svm added when no supervised solver is named).
    grids : dict, default=None
        {solver: {parameter: values}} replacing a candidate's own small grid (an empty dict:
        its defaults alone), as ``-G ALGO.NAME=VALUES``.
    cv : int, default=5
        Folds of the labeled rows (``-v``); fewer when a class has fewer labeled rows (an
        :class:`ssl_svm.UncheckedWarning` says so); a class of one labeled row keeps the svm.
    metric : str, default="accuracy"
        accuracy, f1 or auc (``--metric``).
    unlabeled_label : default=-1
        The value of y that marks an unlabeled row (0 for the SVMlight files' convention).
    probability : bool, default=False
        Also calibrate the winner's probabilities (``predict_proba``).
    random_state : int, default=0
        Seed of the folds (``ssl-tune --seed``).
    max_memory : default=None
        Memory allowed for n×n matrices per fit (``--max-memory``).
    n_jobs : int, default=None
        Local processes for the folds' fits (None or 1: this process; -1: one per CPU).
    verbose : int, default=0
        Print each grid point's line and the selection on stderr.

    Attributes
    ----------
    best_estimator_ : SSLClassifier
        The winner, an estimator of its class (e.g. :class:`TSVM`), fitted.
    selection_ : list of dict
        One per candidate: algorithm, point (its best grid point), score, difference and se
        (against the supervised baseline, in the metric's units), verdict (chosen, baseline,
        behind, within noise, not represented, failed, not scored), reason.
    decision_ : str
        What was chosen and why, one line (``ssl-tune``'s ``#`` line).
    folds_ : int
        The folds used (0: none could be made).
    check_ : Comparison or None
        The winner's verdict against the supervised svm from the selection's own folds
        (:class:`ssl_svm.selection.stats.Comparison`: ``verdict``, ``upper_bound``, ...; said
        as the estimators' check is), None when the svm is kept.
    classes_, model_, transduction_
        The winner's.
    """

    def __init__(self, candidates="auto", grids=None, cv=5, metric="accuracy",
                 unlabeled_label=-1, probability=False, random_state=0, max_memory=None,
                 n_jobs=None, verbose=0):
        self.candidates = candidates
        self.grids = grids
        self.cv = cv
        self.metric = metric
        self.unlabeled_label = unlabeled_label
        self.probability = probability
        self.random_state = random_state
        self.max_memory = max_memory
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _algo(self):
        model = getattr(self, "model_", None)
        return ALGORITHMS[model.algorithm] if model is not None else None

    def _names(self) -> list[str]:
        """The candidates checked (ValueError naming what is wrong), the svm added first when
        no supervised solver is among them (``ssl-tune``'s rule)."""
        if isinstance(self.candidates, str) and self.candidates == "auto":
            return list(rules.PORTFOLIO)
        names = ([self.candidates] if isinstance(self.candidates, str)
                 else list(self.candidates))
        for n in names:
            if n not in ALGORITHMS:
                raise ValueError(f"Auto(candidates=...): unknown solver {n!r} (available: "
                                 f"{', '.join(ALGORITHMS)})")
            if ALGORITHMS[n].positive_unlabeled:
                raise ValueError(f"Auto(candidates=...): {n} learns from positive and "
                                 "unlabeled rows and is scored otherwise; use ssl_svm.USMO")
        if len(set(names)) != len(names) or not names:
            raise ValueError(f"Auto(candidates={self.candidates!r}): name each solver once")
        if not any(n in rules.SUPERVISED for n in names):
            names.insert(0, "svm")
        return names

    def _settings(self, names):
        """(grids, params, runs) of the candidates, checked."""
        from ssl_svm.selection import auto

        if self.grids is not None and not isinstance(self.grids, dict):
            raise TypeError(f"Auto(grids={self.grids!r}): a dict {{solver: {{parameter: "
                            "values}} or None")
        grids = dict(self.grids or {})
        for n, axes in grids.items():
            if axes is not None and not isinstance(axes, dict):
                raise TypeError(f"Auto(grids={{{n!r}: {axes!r}}}): each solver's grid is a "
                                "dict {parameter: values} (an empty dict: its defaults alone)")
        for n in grids:
            if n not in names:
                raise ValueError(f"Auto(grids=...): {n} is not among the candidates "
                                 f"({', '.join(names)})")
        out = {n: auto.grid_of(n, grids.get(n)) for n in names}
        params = {n: ALGORITHMS[n].defaults() for n in names}
        runs = {}
        for n in names:
            runs[n] = {}
            if self.max_memory is not None and "max_memory" in ALGORITHMS[n].run_options:
                from ssl_svm.solvers.kernels import parse_memory

                try:
                    runs[n]["max_memory"] = parse_memory(str(self.max_memory))
                except ValueError as e:
                    raise ValueError(f"Auto(max_memory={self.max_memory!r}): {e}") from None
        return out, params, runs

    def fit(self, X, y):
        """Select among the candidates on (X, y), ``unlabeled_label`` marking the unlabeled
        rows, then refit the winner on all the rows. Returns self."""
        from ssl_svm.selection import auto
        from ssl_svm.selection.tuning import METRICS

        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        y = np.asarray(y)
        names = self._names()
        grids, params, runs = self._settings(names)
        if self.metric not in METRICS or self.metric == "pu":
            raise ValueError(f"Auto(metric={self.metric!r}): one of accuracy, f1, auc")
        cv = self.cv
        if isinstance(cv, bool) or not isinstance(cv, (int, np.integer)) or cv < 2:
            raise ValueError(f"Auto(cv={cv!r}): a number of folds, at least 2")
        internal, codes, classes, unl, label_index = self._labels(y)
        if self.metric == "auc" and classes.size > 2:
            raise ValueError(f"Auto(metric='auc') is for two classes ({classes.size} found)")
        seed = self._seed()
        data = Dataset(_as_csr(X), internal, np.ones(y.size), None, "y")
        semi = next((ALGORITHMS[n] for n in names if ALGORITHMS[n].uses_unlabeled),
                    ALGORITHMS[names[0]])
        log = logging.getLogger("ssl.auto")

        def runner_for(problems, n_tasks):
            if check_n_jobs(self.n_jobs) in (None, 1) or n_tasks <= 1:
                return auto.SerialRunner()
            return _JoblibRunner(self.n_jobs, n_tasks)

        with _solver_context(self.verbose, None):
            prepared = training.prepare(semi, data, keep_unlabeled=True)
            prepared.codes = codes
            result = auto.choose(
                prepared.data, names, grids, params, runs, folds=int(cv), seed=seed,
                codes=codes, metric=self.metric, runner_for=runner_for, log=log,
                on_line=(lambda text: sys.stderr.write(text + "\n")) if self.verbose
                else None,
                say=lambda text: warn(f"Auto: {text}", UncheckedWarning))
            log.info("%s", result.notes[-1])
            # the winner made as every final model is (the fit's own warnings, the
            # calibration), its verdict the selection's; its path from its rows alone, as
            # the selection's fits of it (the same bytes as ssl-tune --out)
            algo = ALGORITHMS[result.chosen]
            with budget.history_free():
                made = pipeline.train(training.for_solver(prepared, algo), pipeline.Request(
                    algo, {**params[result.chosen], **result.point}, runs[result.chosen],
                    probability=bool(self.probability), seed=seed, check="none",
                    source=None, transductive=True, verbose=bool(self.verbose)))
            model, F_unl = made.model, made.values
            self.check_ = result.check
            if result.check is not None:
                trust.report(result.check, None)
        self._set_fitted(model, classes, label_index)
        transduction = np.empty(y.size, dtype=classes.dtype)
        transduction[~unl] = y[~unl]
        transduction[unl] = self._labels_of(model.labels_from_values(F_unl))
        self.transduction_ = transduction
        self.folds_ = result.folds
        self.decision_ = result.notes[-1]
        self.selection_ = [{"algorithm": c.algorithm, "point": dict(c.point),
                            "score": c.score, "difference": c.difference, "se": c.se,
                            "verdict": c.verdict, "reason": c.reason}
                           for c in result.candidates]
        self.best_estimator_ = self._winner(result, params, classes, label_index)
        return self

    def _winner(self, result, params, classes, label_index):
        """The winner as an estimator of its own class, sharing this fit's model."""
        algo = ALGORITHMS[result.chosen]
        cls = ESTIMATORS[result.chosen]
        settings = {**params[result.chosen], **result.point}
        kwargs = {keyword(p.name): (default_value(p) if settings[p.name] is None
                                    else settings[p.name]) for p in algo.params}
        est = cls(**kwargs, unlabeled_label=self.unlabeled_label,
                  probability=bool(self.probability), random_state=self.random_state,
                  n_jobs=self.n_jobs, verbose=self.verbose)
        if "max_memory" in algo.run_options:
            est.max_memory = self.max_memory
        if hasattr(est, "check"):
            est.check = "none"  # the selection has compared it with the svm already
            est.check_ = self.check_
        est.n_features_in_ = self.n_features_in_
        est._set_fitted(self.model_, classes, label_index)
        est.transduction_ = self.transduction_
        return est

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags


class _JoblibRunner:
    """The folds' tasks on ``n_jobs`` local joblib processes (the
    :class:`ssl_svm.selection.auto.SerialRunner` protocol); each task's threads a share of the
    CPUs."""

    def __init__(self, n_jobs: int, n_tasks: int):
        cpus = pools.available_cpus()
        workers = cpus if n_jobs < 0 else int(n_jobs)
        self.workers = max(1, min(workers, cpus, n_tasks))
        self.threads_per_worker = max(1, pools.default_threads() // self.workers)

    def describe(self) -> str:
        return f"{self.workers} local processes"

    def run(self, fn, tasks):
        import joblib

        with joblib.Parallel(n_jobs=self.workers, return_as="generator_unordered") as par:
            yield from par(joblib.delayed(fn)(*t) for t in tasks)

    def close(self) -> None:
        pass
