"""Cross-validated grid search: grid points, their evaluation order, warm-start paths, metrics.

The mathematics of ``ssl-tune`` without any I/O or scheduling: ``ssl_cli.tune`` parses the
grid, hands :func:`run_group` to local processes or a Dask cluster, and prints what
:func:`score` returns.

Conventions
-----------
* A grid is a list of axes ``(name, values)`` in the user's ``-G`` order; a point is one value
  per axis, identified by its index in the row-major product of the axes (the *grid order*).
* Folds: :func:`solvers.crossval.stratified_folds` over the labeled rows; unlabeled rows stay
  in every training part. With a validation set there is a single "fold": train on all rows,
  score the validation rows.
* Metrics, all larger-is-better: ``accuracy`` and ``f1`` in percent (f1 of the positive class
  for two classes -- the larger label, +1 for ±1 data -- macro-averaged over classes
  otherwise), ``auc`` in [0, 1] (two classes), ``pu`` = recall² / P(ŷ = +1) (Lee & Liu 2003),
  recall on the held-out labeled positives and P(ŷ = +1) the predicted-positive fraction of the
  fold's unlabeled training rows (of the held-out rows when there are none). Held-out
  predictions are pooled over the folds before scoring (as LIBSVM's ``-v``); for ``pu`` the
  positive fraction is averaged over the folds.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ssl_svm.solvers.crossval import stratified_folds
from ssl_svm.solvers.errors import MemoryLimitError, ProblemError
from ssl_svm.solvers.host import pools
from ssl_svm.solvers.registry import ALGORITHMS

METRICS = ("accuracy", "f1", "auc", "pu")
ATTEMPTS = 2  # a failing fit is retried once, then reported


# --------------------------------------------------------------------------- the grid

def level(i: int, n: int) -> int:
    """Refinement level of index i on an axis of n values: 0 for both ends, then bisection
    (for n = 10: 0, 9 -> 0; 8 -> 1; 4 -> 2; 2, 6 -> 3; odd -> 4)."""
    if i in (0, n - 1):
        return 0
    top = max(1, math.ceil(math.log2(n - 1)))
    for lv in range(1, top + 1):
        if i % (1 << (top - lv)) == 0:
            return lv
    return top


@dataclass
class Grid:
    """The cartesian product of the axes, in grid order."""

    axes: list[tuple[str, list]]

    @property
    def size(self) -> int:
        return math.prod(len(v) for _, v in self.axes)

    def index_tuples(self):
        return itertools.product(*(range(len(v)) for _, v in self.axes))

    def point(self, idx: tuple[int, ...]) -> dict:
        return {name: values[i] for (name, values), i in zip(self.axes, idx)}

    def points(self) -> list[dict]:
        return [self.point(t) for t in self.index_tuples()]

    def groups(self, path: str | None) -> list[list[int]]:
        """Point numbers (grid order) in evaluation order, grouped into tasks.

        Coarse to fine: groups are sorted by the refinement level of their point (both ends of
        every axis first, then bisection). With a warm-start ``path`` axis, one group holds
        every value of that axis for fixed values of the others, largest first (each fit seeds
        the next); the coarse-to-fine order then applies to the other axes.
        """
        names = [n for n, _ in self.axes]
        lens = [len(v) for _, v in self.axes]
        tuples = list(self.index_tuples())
        p = names.index(path) if path in names else None
        buckets: dict[tuple, list[int]] = {}
        for k, t in enumerate(tuples):
            key = t if p is None else t[:p] + t[p + 1:]
            buckets.setdefault(key, []).append(k)
        out = []
        for members in buckets.values():
            others = [(i, n) for j, (i, n) in enumerate(zip(tuples[members[0]], lens))
                      if j != p]
            lv = max((level(i, n) for i, n in others), default=0)
            if p is not None:
                vals = self.axes[p][1]
                # a value chosen from the data (auto, None) first, then largest first
                members = sorted(members, key=lambda k: (vals[tuples[k][p]] is not None,
                                                         -(vals[tuples[k][p]] or 0), k))
            out.append((lv, members[0], members))
        out.sort(key=lambda g: (g[0], g[1]))
        return [m for _, _, m in out]


def format_value(v) -> str:
    """A grid value as printed and matched on resume: shortest exact repr for floats, auto
    for a value chosen at run time (None)."""
    if v is None:
        return "auto"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def point_key(point: dict) -> str:
    return " ".join(f"{k}={format_value(v)}" for k, v in point.items())


# --------------------------------------------------------------------------- the problem

@dataclass
class Problem:
    """Everything a worker needs; shipped once per worker.

    params: every parameter of the algorithm (defaults and fixed options); a grid point
    overrides some. run: extra fit() keyword arguments (e.g. max_memory). folds: fold of every
    row (-1 = unlabeled, never held out), or None with a validation set (Xv, yv).
    """

    algorithm: str
    X: sp.csr_matrix
    y: np.ndarray
    cost: np.ndarray
    params: dict
    run: dict = field(default_factory=dict)
    folds: np.ndarray | None = None
    n_folds: int = 1
    validation: tuple | None = None
    # a fit that exceeds the memory limit fails its point instead of stopping the run (a
    # candidate of ssl-tune -a auto: the others go on)
    skip_on_memory: bool = False

    def split(self, fold: int):
        """(training rows' X, y, cost, held-out X, held-out y, held-out row numbers or None)."""
        if self.folds is None:
            Xv, yv = self.validation
            return self.X, self.y, self.cost, Xv, yv, None
        test = np.flatnonzero(self.folds == fold)
        train = np.flatnonzero(self.folds != fold)
        return (self.X[train], self.y[train], self.cost[train], self.X[test], self.y[test],
                test)

    def fingerprint(self) -> str:
        """sha1 of the data, folds and fixed setup (a resume file must match it)."""
        h = hashlib.sha1()
        for a in (self.X.indptr, self.X.indices, self.X.data, self.y, self.cost):
            h.update(np.ascontiguousarray(a).tobytes())
        h.update(repr((self.X.shape, self.algorithm, sorted(self.params.items()),
                       sorted((k, v) for k, v in self.run.items() if k != "max_memory"),
                       self.n_folds)).encode())
        if self.folds is not None:
            h.update(self.folds.tobytes())
        if self.validation is not None:
            Xv, yv = self.validation
            for a in (Xv.indptr, Xv.indices, Xv.data, yv):
                h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()


def make_problem(algorithm: str, X, y, cost, params: dict, run: dict, n_folds: int, seed: int,
                 validation=None) -> Problem:
    if validation is not None:
        return Problem(algorithm, X, y, cost, params, run, None, 1, validation)
    return Problem(algorithm, X, y, cost, params, run, stratified_folds(y, n_folds, seed),
                   n_folds)


@dataclass
class FoldResult:
    """One point on one fold. pred/values: predicted labels and (two classes) the decision
    values of the held-out rows, in the problem's held-out order; pos_rate: predicted-positive
    fraction for the pu metric; error: the message of the second failure, or None."""

    point: int
    fold: int
    seconds: float
    pred: np.ndarray | None = None
    values: np.ndarray | None = None
    pos_rate: float = float("nan")
    labels: list | None = None
    error: str | None = None
    attempts: int = 1


def _evaluate(model, X_test, X_train, y_train) -> tuple:
    F = model.decision_function(X_test)
    pred = model.labels_from_values(F)
    values = F[:, 0].copy() if F.shape[1] == 1 else None
    unl = y_train == 0
    if unl.any():
        Fu = (model.train_values[unl] if model.train_values is not None
              else model.decision_function(X_train[unl]))
        rate = float(np.mean(model.labels_from_values(Fu) == model.labels[0]))
    else:
        rate = float(np.mean(pred == model.labels[0]))
    return pred, values, rate


def run_group(problem: Problem, points: list[tuple[int, dict]], fold: int, warm: bool,
              threads: int | None = None) -> list[FoldResult]:
    """Fit and evaluate the points of one group on one fold, in order.

    With ``warm`` each fit is seeded by the previous one's ``model.warm`` (the group is a path
    along the algorithm's ``warm_path`` parameter). A fit that raises is retried once from a
    cold start; a second failure is recorded in ``error`` and the next point starts cold.
    ``threads`` caps numba's threads (several workers share the cores; None: a Dask worker's
    share, see :func:`solvers.host.pools.limit_threads`).
    """
    pools.limit_threads(threads)
    from ssl_svm.solvers import graph

    # a fold's neighbours searched once for all its points, within the run's memory limit
    graph.keep_neighbours(problem.run.get("max_memory"))
    algo = ALGORITHMS[problem.algorithm]
    X, y, cost, Xt, _yt, _rows = problem.split(fold)
    seed = None
    out = []
    for number, point in points:
        params = {**problem.params, **point}
        t0 = time.perf_counter()
        res = None
        for attempt in range(1, ATTEMPTS + 1):
            try:
                kw = dict(problem.run)
                if warm and seed is not None and attempt == 1:
                    kw["warm"] = seed
                model = algo.fit(X, y, cost, params, **kw)
                pred, values, rate = _evaluate(model, Xt, X, y)
                seed = model.warm if warm else None
                res = FoldResult(number, fold, time.perf_counter() - t0, pred, values, rate,
                                 list(model.labels), attempts=attempt)
                break
            except MemoryLimitError as e:  # the same for every point: the whole run stops
                if not problem.skip_on_memory:
                    raise
                res = FoldResult(number, fold, time.perf_counter() - t0,
                                 error=f"cannot run on these rows: {e}", attempts=attempt)
                break
            except Exception as e:  # noqa: BLE001 -- any failure of one point is reported
                seed = None
                text = (str(e).strip() or "failed").splitlines()[0]
                msg = text if isinstance(e, ProblemError) else f"{type(e).__name__}: {text}"
                res = FoldResult(number, fold, time.perf_counter() - t0, error=msg,
                                 attempts=attempt)
        out.append(res)
    return out


# --------------------------------------------------------------------------- scoring

def auc(y_pos: np.ndarray, values: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney U, ties counted half); nan with one class."""
    npos = int(y_pos.sum())
    nneg = y_pos.size - npos
    if npos == 0 or nneg == 0:
        return float("nan")
    from scipy.stats import rankdata  # here: scipy.stats costs 0.1 s to import

    r = rankdata(values)
    return float((r[y_pos].sum() - npos * (npos + 1) / 2) / (npos * nneg))


def f1(y: np.ndarray, pred: np.ndarray, positive) -> float:
    tp = int(np.sum((pred == positive) & (y == positive)))
    fp = int(np.sum((pred == positive) & (y != positive)))
    fn = int(np.sum((pred != positive) & (y == positive)))
    return 0.0 if tp == 0 else 200.0 * tp / (2 * tp + fp + fn)


def score(metric: str, y_true: np.ndarray, results: list[FoldResult]) -> float:
    """The metric of one point from its fold results (held-out rows pooled over folds).

    ``y_true``: the held-out labels in the order the folds' predictions are concatenated.
    """
    pred = np.concatenate([r.pred for r in results])
    labels = results[0].labels
    if metric == "accuracy":
        return 100.0 * float(np.mean(pred == y_true))
    if metric == "f1":
        if len(labels) == 2:
            return f1(y_true, pred, labels[0])
        return float(np.mean([f1(y_true, pred, c) for c in labels]))
    if metric == "auc":
        values = np.concatenate([r.values for r in results])
        return auc(y_true == labels[0], values)
    if metric == "pu":
        pos = y_true == labels[0]
        if not pos.any():
            return float("nan")
        recall = float(np.mean(pred[pos] == labels[0]))
        rate = float(np.mean([r.pos_rate for r in results]))
        return recall * recall / rate if rate > 0 else 0.0
    raise ValueError(f"unknown metric {metric}")


def result_line(key: str, metric: str, value: float, seconds: float) -> str:
    """A finished point's line: its key, the metric's value, the fits' seconds."""
    return f"{key} {metric}={value:.6g} time={seconds:.3g}"


def collect(results, n_folds: int, keys: list[str], truth_of, metric: str, folded: bool,
            progress, scores: dict, resume=None, held=None) -> None:
    """Gather the fold results of ``results`` (lists of FoldResult, any order) per point:
    when a point has all its folds, give its line to ``progress.message`` (and keep it in
    ``resume``), and put its score in ``scores``; ``held``, when given, gets each point's fold
    results in fold order. ``truth_of(point)``: the held-out labels of each fold of that
    point's problem; ``progress``: ``update(fraction, label)`` and ``message(line)``."""
    pending: dict[int, list] = {}
    for batch in results:
        for r in batch:
            pending.setdefault(r.point, []).append(r)
            if len(pending[r.point]) < n_folds:
                # each fit moves the bar: with only whole points counted, the ETA
                # of a grid of a few slow points jumped from minutes to done
                progress.update(1 / n_folds, f"{len(scores)}/{len(keys)} points")
                continue
            res = sorted(pending.pop(r.point), key=lambda q: q.fold)
            secs = sum(q.seconds for q in res)
            bad = [q for q in res if q.error is not None]
            if bad:
                q = bad[0]
                where = f"fold {q.fold + 1} of {n_folds}, " if folded else ""
                line = f"{keys[r.point]} failed ({where}{q.attempts} attempts): {q.error}"
            else:
                truth = truth_of(r.point)
                value = score(metric, np.concatenate([truth[q.fold] for q in res]), res)
                scores[r.point] = value
                if held is not None:
                    held[r.point] = res
                line = result_line(keys[r.point], metric, value, secs)
            progress.message(line)
            if resume is not None:
                resume.add(line)
            progress.update(1 / n_folds, f"{len(scores)}/{len(keys)} points")


def held_out_labels(problem: Problem, fold: int) -> np.ndarray:
    if problem.folds is None:
        return problem.validation[1]
    return problem.y[problem.folds == fold]
