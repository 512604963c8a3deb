"""Choosing among solvers, as ``ssl-tune -a auto`` and :class:`ssl_svm.Auto` do: every
candidate's grid on the same folds of the labeled rows, then the rule of
:func:`ssl_svm.selection.rules.select` between the best supervised and semi-supervised ones,
then the winner refitted on all the rows.

The command and the estimator run this one pipeline; they differ only in how tasks run (local
processes or a Dask cluster against this process or joblib) and where the lines go (standard
output against ``selection_`` and warnings).

Conventions
-----------
* Labels are the internal codes of :func:`ssl_svm.training.prepare` (0 = unlabeled).
* The folds are :func:`ssl_svm.solvers.crossval.stratified_folds` of the requested number,
  fewer when a class has fewer labeled rows (:func:`ssl_svm.selection.splits.fold_plan`); a class of
  one labeled row leaves nothing to cross-validate, and the supervised candidate is kept at
  its settings.
* A candidate with no grid of its own runs at its settings (defaults and fixed options): the
  portfolio's svm is the model ``ssl-train -a svm`` trains, its λ chosen inside each fold.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ssl_svm.selection.rules import (
    PORTFOLIO,
    SUPERVISED,
    Selection,
    bonferroni_threshold,
    max_t_threshold,
    select,
)
from ssl_svm.selection.splits import fold_plan
from ssl_svm.selection.stats import Comparison, Z, comparison, coverage, paired_difference
from ssl_svm.selection.tuning import (
    Grid,
    Problem,
    collect,
    held_out_labels,
    make_problem,
    point_key,
    run_group,
    score,
)
from ssl_svm.solvers.registry import ALGORITHMS


def grid_of(name: str, axes: dict | None = None) -> Grid:
    """The grid of candidate ``name``: ``axes`` {parameter: values} (canonical names or the
    estimators' keywords, values checked; an empty dict: its settings alone), or
    :data:`ssl_svm.selection.rules.PORTFOLIO`'s (the grid ``ssl-tune -a auto`` gives it). ValueError
    naming what is wrong."""
    algo = ALGORITHMS[name]
    if axes is None:
        axes = {}
        for spec in PORTFOLIO.get(name, ()):
            pname, _, values = spec.partition("=")
            axes[pname] = values.split(",")
    out = []
    for pname, values in axes.items():
        p = algo.param("lambda" if pname == "lam" else pname)
        if p is None:
            raise ValueError(f"{name} has no parameter {pname!r} (its parameters: "
                             f"{', '.join(q.name for q in algo.params)})")
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            values = [values]
        checked = []
        for v in values:
            try:
                c = p.check(v)
            except ValueError as e:
                raise ValueError(f"{name} grid {pname}: {e}") from None
            if c not in checked:
                checked.append(c)
        if not checked:
            raise ValueError(f"{name} grid {pname}: no values")
        out.append((p.name, checked))
    return Grid(out)


@dataclass
class Candidate:
    """One candidate's line of the selection: its best point (the grid's first best),
    ``score`` (the metric there, nan when it could not be scored), the paired difference
    against the supervised baseline and its standard error (metric units; nan for the
    baseline itself), and ``verdict`` (chosen, baseline, behind, within noise, not
    represented, failed, not scored) with ``reason``."""

    algorithm: str
    point: dict
    score: float
    difference: float = math.nan
    se: float = math.nan
    verdict: str = ""
    reason: str = ""


@dataclass
class AutoResult:
    """What :func:`choose` found. ``chosen``: the winner's name; ``point``: its parameters
    beyond the candidate's settings; ``folds``: the folds used (0: none); ``notes``: the
    lines that say what was decided (as ``ssl-tune`` prints them after ``#``); ``best_line``:
    ``ssl-tune``'s last line; ``candidates``: a :class:`Candidate` per candidate, in the
    given order."""

    chosen: str
    point: dict
    folds: int
    metric: str
    notes: list[str]
    best_line: str
    candidates: list[Candidate]
    selection: Selection | None = None
    problems: dict = field(default_factory=dict)
    fitted: dict = field(default_factory=dict)
    check: Comparison | None = None

    def model(self):
        """The winner fitted on all its rows (internal labels), (model, seconds); fitted once
        (a coverage test may have fitted it already)."""
        return fitted_model(self.problems, self.fitted, self.chosen, self.point)


def fitted_model(problems: dict, fitted: dict, name: str, point: dict):
    """(candidate ``name`` at ``point`` fitted on all its problem's rows, seconds), cached
    in ``fitted`` by name and point. Its path follows from its data alone (not from the
    folds' fits before it), as a fresh ``ssl-train``'s does: the kept svm is the bytes
    ``ssl-train -a svm`` writes."""
    key = (name, point_key(point))
    if key not in fitted:
        from ssl_svm.solvers.host import budget

        p = problems[name]
        t0 = time.perf_counter()
        with budget.history_free():
            m = ALGORITHMS[name].fit(p.X, p.y, p.cost, {**p.params, **point}, **p.run)
        fitted[key] = (m, time.perf_counter() - t0)
    return fitted[key]


class SerialRunner:
    """Tasks one after the other in this process (the :class:`ssl_cli.parallel.Runner`
    protocol)."""

    threads_per_worker = None

    def describe(self) -> str:
        return "1 process"

    def run(self, fn, tasks):
        for t in tasks:
            yield fn(*t)

    def close(self) -> None:
        pass


class QuietProgress:
    """The progress protocol (``update``, ``message``, ``clear``) saying nothing; messages go
    to ``log`` at debug level."""

    def __init__(self, log=None):
        self.log = log

    def update(self, amount: float, label: str = "") -> None:
        pass

    def message(self, text: str) -> None:
        if self.log is not None:
            self.log.debug("%s", text)

    def clear(self) -> None:
        pass


def choose(data, names: list[str], grids: dict, params: dict, runs: dict, *, folds: int = 5,
           seed: int = 0, codes=None, metric: str = "accuracy", validation=None, warm: bool = True,
           runner_for=None, progress=None, log=None, on_line=None, say=None) -> AutoResult:
    """Run the selection over ``names`` on ``data`` (a Dataset, internal labels).

    ``grids``: {name: :class:`ssl_svm.selection.tuning.Grid`}; ``params``/``runs``: {name: the
    candidate's settings / fit keyword arguments}; ``validation``: (X, y) scored instead of
    folds; ``codes``: {internal code: real label}. ``runner_for(problems, n_tasks)`` gives
    the runner of the tasks (default :class:`SerialRunner`); ``progress`` as
    :class:`ssl_cli.parallel.Progress`; ``on_line(text)`` gets each finished point's line;
    ``say(text)`` what could not be checked as asked (fewer folds, none; default: ``log``).
    Raises
    :class:`ssl_svm.exceptions.DataError` when every point failed."""
    from ssl_svm.exceptions import DataError

    log = log or logging.getLogger("ssl.tune")
    progress = progress or QuietProgress()
    on_line = on_line or (lambda text: None)
    lab = np.flatnonzero(data.y != 0)
    k, why = (1, None) if validation is not None else fold_plan(data.y, folds, codes)
    problems = {}
    for n in names:
        rows = slice(None) if ALGORITHMS[n].uses_unlabeled else lab
        problems[n] = Problem(n, data.X[rows], data.y[rows], data.cost[rows], params[n],
                              runs[n], None, max(k, 1), validation)
    if len(names) > 1:  # a candidate too large for the memory limit is skipped, not fatal
        for p in problems.values():
            p.skip_on_memory = True
    say = say or (lambda text: log.info("%s", text))
    if k == 0:
        return _no_folds(names, problems, metric, why, say)
    if why is not None:
        say(why)
    full = make_problem(names[0], data.X, data.y, data.cost, {}, {}, k, seed, validation)
    for n, p in problems.items():
        rows = slice(None) if ALGORITHMS[n].uses_unlabeled else lab
        p.folds = None if full.folds is None else full.folds[rows]
    points, keys, owner, tasks = [], [], [], []
    for n in names:
        a, p, grid = ALGORITHMS[n], problems[n], grids[n]
        w = warm and a.warm_path in dict(grid.axes)
        start = len(points)
        for pt in grid.points():
            points.append(pt)
            keys.append(" ".join(filter(None, [f"algorithm={n}", point_key(pt)])))
            owner.append(n)
        for g in grid.groups(a.warm_path if w else None):
            tasks += [(p, [(start + j, points[start + j]) for j in g], f, w)
                      for f in range(full.n_folds)]
    runner = (runner_for or (lambda problems, n: SerialRunner()))(list(problems.values()),
                                                                  len(tasks))
    log.info("%s: %d points%s, %s, metric %s", ", ".join(names), len(points),
             f" × {k} folds" if validation is None else " (validation file)",
             runner.describe(), metric)
    truth = {n: [held_out_labels(p, f) for f in range(full.n_folds)]
             for n, p in problems.items()}
    scores: dict[int, float] = {}
    held: dict[int, list] = {}
    t0 = time.perf_counter()

    class Lines:  # the finished points' lines go to on_line as well as to progress
        def update(self, amount, label=""):
            progress.update(amount, label)

        def message(self, text):
            progress.message(text)
            on_line(text)

    try:
        jobs = ((*t, runner.threads_per_worker) for t in tasks)
        collect(runner.run(run_group, jobs), full.n_folds, keys, lambda j: truth[owner[j]],
                metric, validation is None, Lines(), scores, held=held)
    finally:
        progress.clear()
        runner.close()
        from ssl_svm.solvers import graph

        graph.drop_neighbours()  # what run_group kept in this process: it is the caller's
    log.info("grid done in %.2f s", time.perf_counter() - t0)
    best: dict[str, int] = {}
    for j in range(len(points)):
        if j in scores and not math.isnan(scores[j]):
            n = owner[j]
            if n not in best or scores[j] > scores[best[n]]:
                best[n] = j
    if not best:
        raise DataError(data.name, "every grid point failed; see the lines above")
    for n in names:
        if n not in best:
            say(f"{n} skipped: none of its points ran (the lines above say why); the "
                "selection goes on without it")
    y_all = np.concatenate(truth[names[0]])

    def units_of(j):
        res = held[j]
        if metric == "accuracy":
            return 100.0 * (np.concatenate([r.pred for r in res]) == y_all)
        return np.array([score(metric, truth[owner[j]][r.fold], [r]) for r in res])

    units = {n: units_of(j) for n, j in best.items()}
    fitted: dict = {}
    unl = np.flatnonzero(data.y == 0)

    def cover(n, base):
        if validation is not None or unl.size == 0:
            return None
        tc = time.perf_counter()
        pred = {m: np.concatenate([r.pred for r in held[best[m]]]) for m in (n, base)}
        c = coverage(pred[n], pred[base],
                           fitted_model(problems, fitted, n, points[best[n]])[0].predict(
                               data.X[unl]),
                           fitted_model(problems, fitted, base, points[best[base]])[0].predict(
                               data.X[unl]), data.y[lab])
        log.info("%s in %.2f s", c.text(n, base), time.perf_counter() - tc)
        return c

    z = _threshold(names, owner, scores, best, units_of, metric, seed)
    chosen = select({n: scores[best[n]] for n in names if n in best}, units, cover, z=z)
    best_scores = {n: scores[j] for n, j in best.items()}
    notes = [f"best of {n}: {keys[best[n]]} {metric}={scores[best[n]]:.6g}"
             for n in names if n in best]
    text = chosen.text(metric, best_scores)
    j = best[chosen.chosen]
    if chosen.chosen in SUPERVISED:
        # kept, a supervised candidate is its settings' point where its grid has one (the
        # portfolio's svm: lambda=auto, the model ssl-train -a svm trains); its best point
        # was the bar
        own = [i for i in range(len(points)) if owner[i] == chosen.chosen
               and i in scores and not math.isnan(scores[i])
               and all(v == problems[chosen.chosen].params.get(a)
                       for a, v in points[i].items())]
        if own and own[0] != j:
            j = own[0]
            text += (f"; its best grid point set the bar, and the {chosen.chosen} kept is "
                     f"the one at its default settings, {keys[j].partition(' ')[2]} (the fit "
                     f"ssl-train -a {chosen.chosen} makes; {metric} {scores[j]:.6g} on the "
                     "same folds)")
    notes.append(text)
    check = None
    if (metric == "accuracy" and owner[j] not in SUPERVISED and chosen.baseline is not None
            and validation is None and unl.size):
        # the winner's verdict from the selection's own folds: the check's statistics on the
        # winner's and the baseline's held-out predictions and their unlabeled labels
        base = chosen.baseline
        models = {n: fitted_model(problems, fitted, n, points[best[n]])[0]
                  for n in (owner[j], base)}
        check = comparison(
            owner[j], k, y_all, np.concatenate([r.pred for r in held[j]]),
            np.concatenate([r.pred for r in held[best[base]]]), models[base],
            models[owner[j]].predict(data.X[unl]), models[base].predict(data.X[unl]))
    return AutoResult(owner[j], points[j], k, metric, notes,
                      f"best {keys[j]} {metric}={scores[j]:.6g}",
                      _candidates(names, points, best, best_scores, chosen, units,
                                  (points[j], scores[j])),
                      chosen, problems, fitted, check)


def _threshold(names, owner, scores, best, units_of, metric: str, seed: int) -> float:
    """The critical value of the selection: for the best of the semi-supervised points scored
    against the best supervised point, max-T over their per-row differences (accuracy), or
    Bonferroni's over their number (a per-fold metric: too few units to resample)."""
    sup = [n for n in best if n in SUPERVISED]
    semi = [j for j in sorted(scores) if owner[j] not in SUPERVISED
            and not math.isnan(scores[j])]
    if not sup or not semi:
        return Z
    base_name = max(sup, key=lambda n: (scores[best[n]], -names.index(n)))
    base = units_of(best[base_name])
    if metric != "accuracy":
        return max(Z, bonferroni_threshold(len(semi)))
    D = np.column_stack([units_of(j) - base for j in semi])
    return max_t_threshold(D, seed)


def _candidates(names, points, best, best_scores, sel, units, kept) -> list[Candidate]:
    """The rows of :attr:`AutoResult.candidates`; ``kept``: (point, score) of the winner's
    model (a kept svm: its settings' point, where its best point was the bar)."""
    rows = []
    for n in names:
        if n not in best:
            rows.append(Candidate(n, {}, math.nan, verdict="failed",
                                  reason="every grid point failed"))
            continue
        c = Candidate(n, points[best[n]], best_scores[n])
        if sel.baseline is not None and n != sel.baseline:
            c.difference, c.se = paired_difference(units[n], units[sel.baseline])
        turned = dict(sel.unrepresented)
        if n == sel.chosen:
            c.verdict = "chosen"
            c.reason = ("the best score" if sel.baseline is None else
                        "kept: no semi-supervised candidate beat it" if n == sel.baseline else
                        f"ahead of {sel.baseline} by more than {sel.z:.3g} standard errors")
            if kept[0] != c.point:
                c.reason += (f" (its best grid point, {point_key(c.point)} at {c.score:.6g}, "
                             "set the bar; the model kept is the one at its default settings, "
                             "as ssl-train trains it, whose score this row shows)")
                c.point, c.score = kept
        elif n == sel.baseline:
            c.verdict, c.reason = "baseline", "the supervised candidate it had to beat"
        elif n in turned:
            c.verdict = "not represented"
            c.reason = turned[n].text(n, sel.baseline)
        elif sel.baseline is None:
            c.verdict, c.reason = "behind", "a lower score"
        elif c.difference > sel.z * c.se:
            c.verdict, c.reason = "behind", f"ahead of {sel.baseline} too, but below {sel.chosen}"
        elif c.difference > 0:
            c.verdict = "within noise"
            c.reason = f"ahead by less than {sel.z:.3g} standard errors"
        else:
            c.verdict, c.reason = "behind", f"not ahead of {sel.baseline}"
        rows.append(c)
    return rows


def _no_folds(names, problems, metric, why, say) -> AutoResult:
    """A class of one labeled row: the supervised candidate at its settings, unchecked."""
    base = next((n for n in names if n in SUPERVISED), names[0])
    note = (f"kept the supervised {base} at its settings: {why}, so no candidate can be "
            "cross-validated and nothing can be checked")
    say(note)
    rows = [Candidate(n, {}, math.nan, verdict="chosen" if n == base else "not scored",
                      reason=why) for n in names]
    return AutoResult(base, {}, 0, metric, [note], f"best algorithm={base}", rows, None,
                      problems, {})
