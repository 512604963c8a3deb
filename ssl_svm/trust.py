"""Did the unlabeled rows help? A semi-supervised fit measured against the supervised svm on
the same labeled rows, and the rule that decides between them.

Both are cross-validated on the same stratified folds of the labeled rows (the unlabeled rows
stay in every training part of the semi-supervised solver; the svm sees the labeled rows
only). Each labeled row then has two held-out verdicts, right or wrong, one per method, so the
comparison is paired: the difference of the two accuracies over the n held-out rows, and its
standard error sd(d)/√n over the per-row differences d ∈ {-1, 0, 1} (a McNemar-style
comparison: rows both get right or both get wrong do not move it).

Conventions
-----------
* Accuracies and differences in percent (points). ``Z`` is the one-sided 5 % normal quantile:
  "worse" means worse by more than Z standard errors of the paired difference; "at chance"
  means no more than Z binomial standard errors above the share of the largest labeled class
  (what predicting that class for every row scores).
* The supervised baseline is the svm (L2-SVM-MFN) at the best of ``BASELINE_LAMBDAS`` on the
  same folds, SVMlin's λ = 1 first (ties keep the larger λ). Taking its best makes the
  baseline a little optimistic: a semi-supervised result is called better only when it beats
  the supervised svm at its best.
* Cross-validation scores the held-out *labeled* rows; whether they stand for the unlabeled
  ones is measured too (:class:`Coverage`): the two models' disagreement on the held-out
  labeled rows (each row predicted by the models fitted without its fold) against their
  disagreement on the unlabeled rows (the models fitted on all rows). Two models that agree
  on the held-out rows but disagree far more often on the unlabeled rows differ mostly where
  no labeled row tested them, so the cross-validated difference does not describe them there.

Imports no numerical library at module level.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ssl_svm.selection.rules import Z

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("ssl.fit")

BASELINE_LAMBDAS = (1.0, 0.1, 0.01, 0.001)
CHECK_FOLDS = 5
# a loss against the svm, in points, that the check says when neither the folds nor the
# unlabeled rows rule it out ("unverified"). bench/bench_trust.py counts a fit 2 points worse
# as harmful; warning from 2 points would warn of nearly every fit with 100 labels (Digit1's
# lapsvm, +1 point with a standard error of 2.8, would be "up to 4 points worse")
HARM = 5.0
# ssl-train --check auto fits its k folds on every row after a fit shorter than CHECK_SECONDS
# (at most k such fits), and from there on a seeded 1/(2k) of the unlabeled rows: about half
# the fit's time, as a fit's time grows at least linearly with its rows (w8a-200 tsvm: a fold
# on a tenth of them takes 0.09 of the fit). Fewer rows cost the check power: on bench_trust's
# 216 fits of 1,000 rows, silent harmful fits 10 of 84 on every row, 14 on a tenth, so short
# fits keep them all. Warm-starting the folds from the fit is no check either: it has seen the
# held-out labels (tsvm there: 90 % held-out accuracy warm, 75 % cold, 73 % on the test rows)
CHECK_SECONDS = 1.0


# the unlabeled rows are "not represented" by the held-out labeled rows when the two models'
# disagreement there exceeds their held-out disagreement by more than this many standard
# errors (the one-sided 0.5 % level): above every winner where the unlabeled rows helped on
# the SSL book's sets, below BCI's harmful one (BENCHMARKS.md, settings behind the defaults).
# The test cannot say which model the unlabeled rows disfavour, only that the folds do not
# describe them there
COVER_Z = 2.576


@dataclass
class Coverage:
    """Disagreement between two models a and b in percent: ``held_out`` over the ``n``
    held-out labeled rows (each predicted by the models fitted without its fold),
    ``unlabeled`` over the ``u`` unlabeled rows (the models fitted on all rows).
    ``explained``: the part of the unlabeled disagreement that b's class shares force, when
    b's shares of the unlabeled rows are further from the labeled rows' than a's, and beyond
    the labeled shares' noise (0 otherwise): two models whose shares of a class differ by s
    points disagree on at least s points of the rows, and a model that moves the classes'
    balance far from the labeled rows' on the unlabeled rows is the suspect one (the
    :class:`LopsidedWarning` rule), not a sign that the held-out rows misjudge a. (The
    sample text: the svm puts 16 % of the unlabeled rows in the class of 42 % of the labeled
    ones, tsvm 42 %; they disagree on 26 % of the unlabeled rows, and tsvm's test accuracy
    is 84 % against the svm's 64 %.)"""

    held_out: float
    n: int
    unlabeled: float
    u: int
    explained: float = 0.0

    @property
    def excess(self) -> float:
        """Disagreement on the unlabeled rows beyond that on the held-out rows and beyond
        :attr:`explained`, in points."""
        return self.unlabeled - self.explained - self.held_out

    @property
    def se(self) -> float:
        """Standard error of :attr:`excess` (two binomial shares), in points; the held-out
        share, of few rows, taken as Agresti and Coull's (x + 2) / (n + 4), so that no
        disagreement among 100 rows is not certainty."""
        p = (self.held_out / 100.0 * self.n + 2.0) / (self.n + 4.0)
        q = self.unlabeled / 100.0
        return 100.0 * math.sqrt(p * (1.0 - p) / max(self.n, 1)
                                 + q * (1.0 - q) / max(self.u, 1))

    @property
    def represented(self) -> bool:
        """Whether the held-out labeled rows stand for the unlabeled ones: :attr:`excess` at
        most :data:`COVER_Z` standard errors."""
        return self.excess <= COVER_Z * self.se

    def text(self, a: str, b: str) -> str:
        why = (f", {self.explained:.1f} points of it forced by the class shares of {b}, "
               f"further from the labeled rows' than {a}'s" if self.explained > 0 else "")
        return (f"{a} and {b} disagree on {self.unlabeled:.1f} % of the {self.u} unlabeled "
                f"rows against {self.held_out:.1f} % of the {self.n} held-out labeled rows"
                f"{why} ({self.excess:+.1f} points beyond, standard error {self.se:.1f})")


def class_shares(pred, classes):
    """The fraction of ``pred`` in each of ``classes``."""
    import numpy as np

    pred = np.asarray(pred)
    return np.array([float(np.mean(pred == c)) if pred.size else 0.0 for c in classes])


def fold_plan(y, requested: int, codes=None) -> tuple[int, str | None]:
    """(folds, why they differ from ``requested``) for labels ``y`` (0 = unlabeled; ``codes``
    {internal code: real label} to name a class): at most ``requested``, at most the smallest
    class's labeled rows; 0 when a class has a single labeled row (nothing can be held out
    without taking the class from a training part)."""
    import numpy as np

    lab = y[y != 0]
    classes, counts = np.unique(lab, return_counts=True)
    if classes.size < 2:
        return 0, "fewer than two classes among the labeled rows"
    smallest = int(counts.min())
    c = classes[int(np.argmin(counts))]
    c = (codes or {}).get(c, c)
    if smallest < 2:
        return 0, (f"class {c:g} has 1 labeled row: no fold can hold it out and still train "
                   "on it")
    if smallest < requested:
        return smallest, (f"class {c:g} has {smallest} labeled rows: {smallest}-fold "
                          f"cross-validation instead of {requested}")
    return requested, None


def coverage(held_a, held_b, unlabeled_a, unlabeled_b, labeled=None) -> Coverage:
    """:class:`Coverage` of two models from their held-out predictions of the labeled rows
    (aligned) and their predictions of the unlabeled rows (aligned); ``labeled``: the labeled
    rows' labels, whose class shares judge which model moved the balance (None: not judged).
    Shares are compared by total variation, ½ Σ_c |s_a(c) − s_b(c)|, a lower bound of the
    disagreement."""
    import numpy as np

    held_a, held_b = np.asarray(held_a), np.asarray(held_b)
    unlabeled_a, unlabeled_b = np.asarray(unlabeled_a), np.asarray(unlabeled_b)
    explained = 0.0
    if labeled is not None and unlabeled_a.size:
        classes = np.unique(np.concatenate([np.asarray(labeled), unlabeled_a, unlabeled_b]))
        sl = class_shares(labeled, classes)
        sa, sb = class_shares(unlabeled_a, classes), class_shares(unlabeled_b, classes)
        # b "moved the balance" when its shares are further from the labeled rows' than a's
        # and, for some class, beyond COVER_Z binomial standard errors of the labeled share
        # (with 100 labels that share is itself known to ±5 points)
        n = max(np.asarray(labeled).size, 1)
        off = np.abs(sb - sl) / np.sqrt(np.maximum(sl * (1.0 - sl), 1.0 / n) / n)
        if np.abs(sb - sl).sum() > np.abs(sa - sl).sum() and off.max() > COVER_Z:
            explained = 50.0 * float(np.abs(sa - sb).sum())
    return Coverage(100.0 * float(np.mean(held_a != held_b)) if held_a.size else 0.0,
                    int(held_a.size),
                    100.0 * float(np.mean(unlabeled_a != unlabeled_b))
                    if unlabeled_a.size else 0.0, int(unlabeled_a.size), explained)


@dataclass
class Comparison:
    """A semi-supervised solver against the supervised svm on the same folds (percent)."""

    algorithm: str
    folds: int
    n: int                 # labeled rows held out once each
    accuracy: float        # the semi-supervised solver's cross-validated accuracy
    baseline: float        # the supervised svm's, at its best λ
    baseline_lambda: float
    majority: float        # the largest class's share of the labeled rows
    se: float              # standard error of the paired difference
    seconds: float = 0.0
    coverage: Coverage | None = None  # the fit against the svm fitted on all labeled rows
    sample: tuple[int, int] | None = None  # (unlabeled rows in the folds' fits, of all)

    @property
    def difference(self) -> float:
        return self.accuracy - self.baseline

    @property
    def chance_margin(self) -> float:
        """Z binomial standard errors of an accuracy at the majority share, in points."""
        m = self.majority / 100.0
        return 100.0 * Z * math.sqrt(max(m * (1.0 - m), 0.0) / max(self.n, 1))

    @property
    def blind_spot(self) -> float:
        """The largest loss against the svm, in points, that the folds cannot rule out: Z
        standard errors below the difference they show (0 when that is not below 0)."""
        return max(0.0, Z * self.se - self.difference)

    @property
    def possible_loss(self) -> float:
        """The largest loss on the unlabeled rows that neither the folds nor the unlabeled
        rows rule out, in points: the folds' :attr:`blind_spot`, at most the share of the
        unlabeled rows on which the fit and the svm disagree beyond what the class shares
        force (a model cannot be worse than another on more rows than they disagree on);
        0 without that measure."""
        if self.coverage is None:
            return 0.0
        return min(self.blind_spot,
                   max(0.0, self.coverage.unlabeled - self.coverage.explained))

    @property
    def verdict(self) -> str:
        """``hurt``: worse than the svm by more than Z standard errors; ``chance``: no better
        than the largest class's share and below the svm; ``unrepresented``: the held-out
        labeled rows do not stand for the unlabeled ones (:attr:`Coverage.represented`), so
        the folds cannot tell; ``helped``: better than the svm by more than Z standard errors;
        ``unverified``: within the folds' noise, but the fit and the svm disagree on enough
        unlabeled rows that it may be worse than the svm by more than :data:`HARM` points
        (:attr:`possible_loss`), which the folds are too few to rule out; ``even``
        otherwise."""
        d = self.difference
        if d < 0 and -d >= Z * self.se:
            return "hurt"
        if self.accuracy <= self.majority + self.chance_margin and d < 0:
            return "chance"
        if self.coverage is not None and not self.coverage.represented:
            return "unrepresented"
        if d > 0 and d >= Z * self.se:
            return "helped"
        if self.possible_loss > HARM:
            return "unverified"
        return "even"

    def text(self) -> str:
        """One line: both accuracies, the difference and its noise."""
        return (f"{self.folds}-fold cross-validated accuracy over the {self.n} labeled rows: "
                f"{self.algorithm} {self.accuracy:.1f} %, the supervised svm (λ "
                f"{self.baseline_lambda:g}) {self.baseline:.1f} % on the same folds, "
                f"{self.difference:+.1f} points (standard error {self.se:.1f}; the largest "
                f"class is {self.majority:.1f} % of them; these folds cannot detect a loss "
                f"below {Z * self.se:.0f} points"
                + (f"; the folds' fits used {self.sample[0]} of the {self.sample[1]} unlabeled "
                   "rows" if self.sample is not None else "") + ")")


def paired_se(b: int, c: int, n: int) -> float:
    """Standard error, in points, of the difference of two accuracies on the same n rows,
    b rows right for the first only and c for the second only, with half a row added to each
    cell of the 2×2 table (Agresti & Min 2005): on few rows where the two agree everywhere it
    is not 0 (7 rows: 11 points), which would make any difference certain."""
    b2, c2, n2 = b + 0.5, c + 0.5, n + 2.0
    return 100.0 * math.sqrt(max(b2 + c2 - (b2 - c2) ** 2 / n2, 0.0)) / n2


def folds_for(y, folds: int = CHECK_FOLDS) -> int:
    """The folds a check of labels y (0 = unlabeled) can have: at most ``folds``, at most the
    smallest class's labeled rows (0 when a class has fewer than 2):
    :func:`fold_plan`'s count."""
    return fold_plan(y, folds)[0]


def check_share(k: int, fit_seconds: float) -> float:
    """The share of the unlabeled rows the k folds of ``--check auto`` fit on after a fit of
    ``fit_seconds``: 1 below :data:`CHECK_SECONDS`, else 1/(2k) (about half the fit's time)."""
    return 1.0 if fit_seconds < CHECK_SECONDS else 1.0 / (2 * k)


def unlabeled_sample(y, share: float, seed: int) -> np.ndarray | None:
    """The rows (sorted indices) folds fit on that take ``share`` of the unlabeled rows: every
    labeled row (y != 0) and a seeded sample of ⌈share·u⌉ unlabeled ones (at least
    min(u, 10)); None when that is all of them."""
    import numpy as np

    unl = np.flatnonzero(y == 0)
    size = max(min(unl.size, 10), math.ceil(share * unl.size))
    if size >= unl.size:
        return None
    pick = np.random.default_rng(seed).choice(unl, size, replace=False)
    return np.sort(np.concatenate([np.flatnonzero(y != 0), pick]))


def held_out_predictions(fit, X, y, cost, params: dict, k: int, seed: int, run=None,
                         reuse=None):
    """The predicted label of every labeled row from the model fitted without its fold (the
    folds of :func:`ssl_svm.solvers.crossval.stratified_folds`; unlabeled rows in every
    training part, predicted 0). ``reuse``: a ``warm`` that reuses what depends on the rows
    alone (:attr:`ssl_svm.solvers.registry.Algorithm.rows_reuse`); the fold's rows then stay
    in, unlabeled, and each fit is ``fit(X, y with the fold's labels 0, ..., warm=reuse)``."""
    import numpy as np

    from ssl_svm.solvers.crossval import stratified_folds

    folds = stratified_folds(y, k, seed)
    pred = np.zeros(y.size)
    for i in range(k):
        test = folds == i
        if reuse is None:
            model = fit(X[~test], y[~test], cost[~test], params, **(run or {}))
        else:
            hidden = np.where(test, 0.0, y)
            model = fit(X, hidden, cost, params, **(run or {}), warm=reuse)
        pred[test] = model.predict(X[test])
    return pred


def baseline_params(params: dict | None = None) -> dict:
    """The supervised svm's parameters for a baseline: its defaults, with the bias and class
    cost factors of ``params`` (a semi-supervised solver's) where it has them."""
    from ssl_svm.solvers.registry import ALGORITHMS

    base = ALGORITHMS["svm"].defaults()
    for name in ("bias", "cost_positive", "cost_negative"):
        if params and name in params:
            base[name] = params[name]
    return base


def baseline_predictions(X, y, cost, k: int, seed: int, params: dict | None = None):
    """(held-out predictions of the labeled rows, λ) of the supervised svm at the best of
    ``BASELINE_LAMBDAS`` on the folds of (k, seed); X, y: the labeled rows only. ``params``:
    svm parameters to keep (bias, cost factors); λ is the path's. On each fold the path runs
    largest λ first, each fit seeded by the previous one (the same optima, fewer Newton
    steps), with exact Newton points (:func:`ssl_svm.solvers.linear.fit_svm_gram`)."""
    import numpy as np

    from ssl_svm.solvers.crossval import stratified_folds
    from ssl_svm.solvers.linear import fit_svm_gram

    base = baseline_params(params)
    folds = stratified_folds(y, k, seed)
    lams = sorted(BASELINE_LAMBDAS, reverse=True)
    pred = np.zeros((len(lams), y.size))
    for i in range(k):
        test = folds == i
        warm = None
        for j, lam in enumerate(lams):
            model = fit_svm_gram(X[~test], y[~test], cost[~test], {**base, "lambda": lam},
                                 **({} if warm is None else {"warm": warm}))
            warm = model.warm
            pred[j, test] = model.predict(X[test])
    acc = (pred == y).mean(axis=1)
    order = [lams.index(lam) for lam in BASELINE_LAMBDAS]  # ties: the first in that order
    j = max(order, key=lambda j: (acc[j], -order.index(j)))
    return pred[j], lams[j]


def compare(algo, X, y, cost, params: dict, run=None, *, seed: int = 0,
            folds: int = CHECK_FOLDS, unlabeled=None, share: float = 1.0, model=None
            ) -> Comparison | None:
    """Cross-validate ``algo`` with ``params`` on rows X, y (internal labels, 0 = unlabeled)
    and the supervised svm on the labeled rows, on the same folds; None when a class has fewer
    than 2 labeled rows (no folds). ``unlabeled``: the labels (internal) that ``algo`` fitted
    on all rows gives the unlabeled rows, in row order; with them the svm at its chosen λ is
    fitted on all labeled rows too and their :class:`Coverage` measured. ``share`` < 1: the
    folds' fits take that share of the unlabeled rows (:func:`unlabeled_sample`; the held-out
    rows and their folds are the same). ``model``: ``algo``'s fit on these rows; when the
    folds fit on every row and ``algo`` has :attr:`~ssl_svm.solvers.registry.Algorithm.rows_reuse`,
    they reuse its graph and kernel (the fold's rows stay in, their labels hidden)."""
    import numpy as np

    k = folds_for(y, folds)
    if k == 0:
        return None
    t0 = time.perf_counter()
    run = {n: v for n, v in (run or {}).items() if n != "warm"}
    solver_log = logging.getLogger("ssl.solver")
    level = solver_log.level
    solver_log.setLevel(logging.ERROR)  # the folds' own iteration remarks are not the user's
    try:
        lab = np.flatnonzero(y != 0)
        rows = unlabeled_sample(y, share, seed) if share < 1.0 else None
        pred = np.zeros(y.size)
        if rows is None:
            reuse = None
            if algo.rows_reuse and isinstance(getattr(model, "warm", None), dict):
                reuse = {**model.warm, "seeds": None}
            pred = held_out_predictions(algo.fit, X, y, cost, params, k, seed, run, reuse)
        else:  # the labeled rows keep their order, so their folds are the same
            pred[rows] = held_out_predictions(algo.fit, X[rows], y[rows], cost[rows], params,
                                              k, seed, run)
        from ssl_svm.solvers.host import budget

        # the baseline's fits start on numpy when small, whatever ran before: a first run
        # whose fit was too slow to be checked then leaves no svm code uncompiled that a
        # second, checked run would compile (and say so)
        with budget.history_free():
            base, lam = baseline_predictions(X[lab], y[lab], cost[lab], k, seed, params)
            cover = None
            if unlabeled is not None:
                from ssl_svm.solvers.linear import fit_svm_gram

                svm = fit_svm_gram(X[lab], y[lab], cost[lab],
                                   {**baseline_params(params), "lambda": lam})
                cover = coverage(pred[lab], base, unlabeled, svm.predict(X[y == 0]),
                                 y[lab])
    finally:
        solver_log.setLevel(level)
    truth = y[lab]
    right = (pred[lab] == truth).astype(float)
    right_base = (base == truth).astype(float)
    d = right - right_base
    n = truth.size
    se = paired_se(int(np.sum(d > 0)), int(np.sum(d < 0)), n)
    _, counts = np.unique(truth, return_counts=True)
    return Comparison(algo.name, k, n, 100.0 * float(right.mean()),
                      100.0 * float(right_base.mean()), lam,
                      100.0 * float(counts.max()) / n, se, time.perf_counter() - t0, cover,
                      None if rows is None else (rows.size - n, y.size - n))


def report(c: Comparison, train_name: str | None = "TRAIN") -> None:
    """Say what the comparison found: the accuracies always (``ssl.fit`` log), a
    :class:`ssl_svm.exceptions.UnlabeledHurtWarning` when the unlabeled rows likely hurt or
    the result is at chance, with what to try: ``ssl-tune -a auto TRAIN`` for a file, the
    Python way for arrays (``train_name`` None)."""
    from ssl_svm.exceptions import UnlabeledHurtWarning, warn

    verdict = c.verdict
    tail = {"helped": "the unlabeled rows helped",
            "even": "no difference beyond the folds' noise",
            "hurt": "", "chance": "", "unrepresented": "", "unverified": ""}[verdict]
    cover = ("; " + c.coverage.text(c.algorithm, "the svm fitted on all labeled rows")
             if c.coverage is not None else "")
    log.info("check against the supervised svm (%.2f s): %s%s%s", c.seconds, c.text(), cover,
             f": {tail}" if tail else "")
    if verdict not in ("hurt", "chance", "unrepresented", "unverified"):
        return
    what = (f"its {c.folds}-fold cross-validated accuracy is {c.accuracy:.1f} % against "
            f"{c.baseline:.1f} % for the supervised svm (λ {c.baseline_lambda:g}) on the same "
            f"folds ({c.difference:+.1f} points, standard error {c.se:.1f}; largest class "
            f"{c.majority:.1f} %)")
    todo = (f"compare solvers with 'ssl-tune -a auto {train_name}', or train -a svm"
            if train_name is not None else
            "compare estimators with cross_val_score(..., cv=ssl_svm.SemiSupervisedKFold()), "
            "or use ssl_svm.SVM")
    if verdict == "unverified":
        message = (f"{c.algorithm} may be worse than ignoring the unlabeled rows, by up to "
                   f"{c.possible_loss:.0f} points, and the labeled rows cannot tell: {what}: "
                   f"with {c.n} labeled rows the folds cannot rule out a loss of "
                   f"{c.blind_spot:.0f} points, and {c.algorithm} and the svm disagree on "
                   f"{c.coverage.unlabeled - c.coverage.explained:.0f} % of the unlabeled "
                   f"rows; label more rows, or {todo}")
    elif verdict == "unrepresented":
        message = (f"{c.algorithm} may be worse than ignoring the unlabeled rows, and the "
                   f"labeled rows cannot tell: {what}, but "
                   f"{c.coverage.text(c.algorithm, 'the svm')}: they differ mostly where no "
                   f"labeled row tests them; {todo}")
    else:
        why = ("worse than the supervised svm beyond the folds' noise" if verdict == "hurt"
               else "no better than predicting the largest class, and below the supervised "
               "svm")
        message = (f"{c.algorithm} is likely worse than ignoring the unlabeled rows: {what}: "
                   f"{why}; {todo}")
    warn(message, UnlabeledHurtWarning)


CHECKS = ("auto", "cv", "none")


def may_check(algo, y, how: str = "auto") -> bool:
    """Whether :func:`check_fit` may run the check for a fit of ``algo`` on labels ``y``
    (internal codes, 0 = unlabeled): a semi-supervised (not positive-unlabeled) solver, some
    unlabeled rows, ``how`` not ``none``. (It still skips a one-class fit, a class of fewer
    than 2 labeled rows.)"""
    return (how != "none" and algo.uses_unlabeled and not algo.positive_unlabeled
            and bool((y == 0).any()))


def expect_check(algo, y, how: str = "auto") -> None:
    """Before a command's fit that :func:`check_fit` will likely check: its fits start on
    numba. A small fit alone begins on numpy (:class:`ssl_svm.solvers.linear.Routines`:
    numba's start costs more than it), but the fit and its check's folds together do not (the
    sample file's tsvm and da with their checks: 2.64 and 2.87 s begun on numpy, 2.26 and
    2.59 s on numba). It depends on the command's inputs and options only, so the same
    command still writes the same bytes."""
    if may_check(algo, y, how) and folds_for(y) > 0:
        from ssl_svm.solvers.host import budget

        budget.numpy_start_over()


def check_fit(algo, training, params: dict, run, m, fit_seconds: float, how: str = "auto", *,
              seed: int = 0, source: str | None = "TRAIN", on_skip=None) -> Comparison | None:
    """After a semi-supervised fit ``m`` of ``algo`` on prepared rows ``training`` (which took
    ``fit_seconds`` without compiling): compare it with the supervised svm (:func:`compare`),
    say the result (:func:`report`); returns it (None when not run). ``how``: ``cv``, folds
    that fit on every row; ``auto``, on the share of the unlabeled rows of
    :func:`check_share` (from a fit of a second on, about half its time; never skipped for
    time); ``none`` never.
    Supervised and positive-unlabeled solvers, data without unlabeled rows, and a fit that
    gives every training row one class (said already) are not checked. ``on_skip(reason)``:
    told when a check that was due could not run (the estimators warn); the reason is logged
    either way."""
    data = training.data
    if not may_check(algo, data.y, how):
        return None
    from ssl_svm.training import training_values

    F = training_values(algo, m, data.X)
    if F is not None and len(set(m.labels_from_values(F).tolist())) == 1:
        return None  # a one-class fit, already said (training.check_one_class)
    k = folds_for(data.y)
    if k == 0:
        skipped = "a class has fewer than 2 labeled rows"
        log.info("not checked against the supervised svm: %s", skipped)
        if on_skip is not None:
            on_skip(skipped)
        return None
    import numpy as np

    unl = data.y == 0
    labels = m.labels_from_values(F[unl] if F is not None else m.decision_function(data.X[unl]))
    labels = np.asarray(labels, dtype=float)
    restored = labels.copy()
    for code, real in (training.codes or {}).items():  # the folds' labels are the internal ones
        labels[restored == real] = code
    c = compare(algo, data.X, data.y, data.cost, params, run, seed=seed, unlabeled=labels,
                share=check_share(k, fit_seconds) if how == "auto" else 1.0, model=m)
    report(c, source)
    # not in the model file: whether auto runs depends on the machine's speed, and the same
    # inputs and seed must give the same bytes
    return c
