"""Did the unlabeled rows help? A semi-supervised fit measured against the supervised svm on
the same labeled rows, and the verdict the check after a fit says.

Both are cross-validated on the same stratified folds of the labeled rows (the unlabeled rows
stay in every training part of the semi-supervised solver; the svm sees the labeled rows
only, at the λ ``ssl-train -a svm`` chooses on all of them, and the solver's λ, when auto,
is the one its fit chose, tsvm's and da's: :func:`fold_params`). Each
labeled row then has two held-out predictions, one per method, and the comparison is paired
(:mod:`ssl_svm.selection.stats`): it counts the rows only the fit gets right (``better``) and
the rows only the svm gets right (``worse``). The unlabeled rows add one exact figure: the
share of them on which the fit and the svm trained on every labeled row (``ssl-train -a
svm``'s model) disagree, which bounds how much less accurate than that svm the fit can be
there.

The verdict (:attr:`ssl_svm.selection.stats.Comparison.verdict`), one of three:

* ``harm``: *harm proven* — the exact one-sided sign test on the discordant held-out rows
  rejects "the fit is not worse than the svm" at level :data:`~ssl_svm.selection.stats.ALPHA`;
  the only verdict that says "likely worse" (:class:`ssl_svm.UnlabeledHurtWarning`);
* ``no harm``: the fit cannot be worse than the svm by more than ``MARGIN`` points on the
  unlabeled rows (they disagree on no more rows than that), or the one-sided 95 % upper bound
  of its loss on the held-out rows is at most ``MARGIN`` while those rows are at least 50 and
  stand for the unlabeled ones (help proven by the same test the other way is one case);
* ``unverified``: neither; the check says the largest loss the labeled rows cannot rule out
  (:attr:`~ssl_svm.selection.stats.Comparison.upper_bound`) and what would settle it
  (:class:`ssl_svm.UnverifiedWarning`).

Conventions: accuracies, losses and shares in percent (points); a loss is the svm's accuracy
minus the fit's.

Imports no numerical library at module level.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from typing import TYPE_CHECKING

from ssl_svm.selection.stats import ALPHA, FOLD_ROWS, MARGIN, Comparison, comparison

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("ssl.fit")

CHECK_FOLDS = 5
# --check auto fits its k folds on every row up to CHECK_ROWS unlabeled rows, so every set the
# verdicts were calibrated on (bench_trust's 1,000 rows, the SSL book's 1,500) is checked as by
# --check cv; above, on a seeded CHECK_ROWS of the unlabeled rows or 1/(2k) of them, whichever
# is more (a9a-100's tsvm, 32,461 rows: a tenth, about half the fit's time). The share is a
# function of the data alone: when it followed the fit's time, a loaded node turned usps49-10's
# cheeger-rls (97.1 % test accuracy against the svm's 88.6 %) into "harm proven"
CHECK_ROWS = 2000


def folds_for(y, folds: int = CHECK_FOLDS) -> int:
    """The folds a check of labels y (0 = unlabeled) can have: at most ``folds``, at most the
    smallest class's labeled rows (0 when a class has fewer than 2):
    :func:`~ssl_svm.selection.splits.fold_plan`'s count."""
    from ssl_svm.selection.splits import fold_plan

    return fold_plan(y, folds)[0]


def check_share(k: int, unlabeled: int) -> float:
    """The share of ``unlabeled`` unlabeled rows the k folds of ``--check auto`` fit on: 1 up
    to :data:`CHECK_ROWS` rows; above, :data:`CHECK_ROWS` of them or 1/(2k), whichever is
    more. It depends on the data alone, never on the machine or the fit's time."""
    if unlabeled <= CHECK_ROWS:
        return 1.0
    return max(CHECK_ROWS / unlabeled, 1.0 / (2 * k))


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


class HeldOut:
    """The folds of :func:`held_out_predictions`, begun: in children forked from a command
    where it may (:class:`ssl_svm.solvers.host.forks.Batch`), while the caller goes on (the
    svm's baseline), at most ``children`` of them (None: no bound here); :meth:`predictions`
    collects them (one after another here where nothing forks). ``isolated``: each fold's fit
    follows from its own rows alone (its own numpy budget, whether or not numba runs:
    :func:`ssl_svm.solvers.host.budget.history_free`); else on the command's budget as it is
    now (folds planned on numba; in children only once numba runs here, so that they share
    what the fit compiled). Either way a fold reads nothing the caller changes meanwhile, so
    the folds give the same bytes in children as one after another."""

    def __init__(self, fit, X, y, cost, params: dict, k: int, seed: int, run=None,
                 reuse=None, isolated: bool = True, children: int | None = None):
        import numpy as np

        from ssl_svm.solvers.crossval import stratified_folds
        from ssl_svm.solvers.host import forks

        self.y = y
        self.k = k
        self.folds = stratified_folds(y, k, seed)
        run = run or {}

        def one(i):
            test = self.folds == i
            with _isolated(isolated):
                if reuse is None:
                    model = fit(X[~test], y[~test], cost[~test], params, **run)
                else:
                    hidden = np.where(test, 0.0, y)
                    model = fit(X, hidden, cost, params, **run, warm=reuse)
            return np.asarray(model.predict(X[test]), dtype=np.float64)

        self.one = one
        if not isolated and "numba" not in sys.modules:
            # folds that start numba start it here, once: children would each load (or, on a
            # cold cache, compile and say so) its functions again
            children = 1
        self.batch = forks.Batch(one, range(k), children)
        if self.batch.children:
            log.debug("check: its %d folds in %d processes forked from this one", k,
                      len(self.batch.children))

    def predictions(self):
        import numpy as np

        pred = np.zeros(self.y.size)
        values = self.batch.results()
        for i, v in enumerate(values):
            pred[self.folds == i] = v
        return pred

    def close(self) -> None:
        """End the children still running (the caller failed before :meth:`predictions`)."""
        self.batch.close()


def _isolated(on: bool):
    import contextlib

    from ssl_svm.solvers.host import budget

    return budget.history_free() if on else contextlib.nullcontext()


# n×n float64 matrices a kernel or graph fold holds at its peak, for the memory bound of
# fold_children (lapsvm's exact form on the shuttle sample: about 4.5 at 2,000 rows)
FOLD_MATRICES = 6


def fold_children(algo, rows: int, run=None) -> int | None:
    """At most how many folds of ``algo`` on ``rows`` rows may run at once in children: for a
    solver of n×n matrices (``max_memory`` among its run options), as many as fit together
    in the memory one fit is allowed (``run["max_memory"]``, else half the RAM), each taken
    as :data:`FOLD_MATRICES` such matrices; None (no bound) for the others."""
    if "max_memory" not in getattr(algo, "run_options", ()):
        return None
    from ssl_svm.solvers.kernels import default_memory_limit

    limit = (run or {}).get("max_memory") or default_memory_limit()
    return int(limit // max(1, FOLD_MATRICES * 8 * rows * rows))


def held_out_predictions(fit, X, y, cost, params: dict, k: int, seed: int, run=None,
                         reuse=None, isolated: bool = True):
    """The predicted label of every labeled row from the model fitted without its fold (the
    folds of :func:`ssl_svm.solvers.crossval.stratified_folds`; unlabeled rows in every
    training part, predicted 0). ``reuse``: a ``warm`` that reuses what depends on the rows
    alone (:attr:`ssl_svm.solvers.registry.Algorithm.rows_reuse`); the fold's rows then stay
    in, unlabeled, and each fit is ``fit(X, y with the fold's labels 0, ..., warm=reuse)``.
    ``isolated``: see :class:`HeldOut`."""
    return HeldOut(fit, X, y, cost, params, k, seed, run, reuse, isolated).predictions()


def fold_params(algo, params: dict, model) -> dict:
    """The parameters the check's folds fit ``algo`` with after its fit ``model`` with
    ``params``: ``params``, where each parameter of
    :attr:`~ssl_svm.solvers.registry.Algorithm.fold_reuse` that was auto (None) takes the value
    the fit chose (``model.stats``) when it chose one value for every task (a multi-class fit
    whose tasks chose differently keeps auto: each fold chooses again)."""
    out = dict(params)
    for name in algo.fold_reuse:
        chosen = {float(v) for v in (model.stats.get(name) or [])}
        if params.get(name) is None and len(chosen) == 1:
            out[name] = chosen.pop()
    return out


def baseline_params(params: dict | None = None) -> dict:
    """The supervised svm's parameters for a baseline: its defaults (λ auto and the bias, as
    ``ssl-train -a svm``: what ignoring the unlabeled rows gives), with the class cost factors
    of ``params`` (a semi-supervised solver's) where it has them."""
    from ssl_svm.solvers.registry import ALGORITHMS

    base = ALGORITHMS["svm"].defaults()
    for name in ("cost_positive", "cost_negative"):
        if params and name in params:
            base[name] = params[name]
    return base


def baseline_fit(X, y, cost, params: dict | None = None):
    """The supervised svm on labeled rows X, y as ``ssl-train -a svm`` makes it: λ auto
    (:func:`ssl_svm.solvers.linear.choose_lambda` on these rows), then the fit."""
    from ssl_svm.solvers.registry import ALGORITHMS

    return ALGORITHMS["svm"].fit(X, y, cost, baseline_params(params))


def baseline(X, y, cost, k: int, seed: int, params: dict | None = None):
    """(the supervised svm of :func:`baseline_fit` on the labeled rows X, y, the held-out
    predictions of those rows on the folds of (k, seed) by that svm fitted without each fold
    at the λ it chose: one λ search, not one per fold; none when k is 0). Its fits start on
    numpy when small, whatever ran before (:func:`ssl_svm.solvers.host.budget.history_free`):
    a first run whose fit was too slow to be checked then leaves no svm code uncompiled that
    a second, checked run would compile, and one process and a cluster get the same svm."""
    import numpy as np

    from ssl_svm.solvers.crossval import stratified_folds
    from ssl_svm.solvers.host import budget
    from ssl_svm.solvers.registry import ALGORITHMS

    with budget.history_free():
        svm = baseline_fit(X, y, cost, params)
        pred = np.zeros(y.size if k else 0)
        if k:
            at = {**baseline_params(params), "lambda": float(svm.stats["lambda"][0])}
            folds = stratified_folds(y, k, seed)
            for i in range(k):
                test = folds == i
                pred[test] = ALGORITHMS["svm"].fit(X[~test], y[~test], cost[~test],
                                                   at).predict(X[test])
    return svm, pred


def compare(algo, X, y, cost, params: dict, run=None, *, seed: int = 0,
            folds: int = CHECK_FOLDS, unlabeled=None, share: float = 1.0, model=None,
            isolated: bool = True) -> Comparison | None:
    """Cross-validate ``algo`` with ``params`` on rows X, y (internal labels, 0 = unlabeled)
    and the supervised svm on the labeled rows, on the same folds; None when a class has fewer
    than 2 labeled rows (no folds) and ``unlabeled`` is None. ``unlabeled``: the labels
    (internal) that ``algo`` fitted on all rows gives the unlabeled rows, in row order; with
    them the svm fitted on all labeled rows labels them too and their coverage is measured
    (with no folds, that alone). ``share`` < 1: the
    folds' fits take that share of the unlabeled rows (:func:`unlabeled_sample`; the
    held-out rows and their folds are the same). ``model``: ``algo``'s fit on these rows; when
    the folds fit on every row and ``algo`` has
    :attr:`~ssl_svm.solvers.registry.Algorithm.rows_reuse`, they reuse its graph and kernel
    (the fold's rows stay in, their labels hidden). The folds run in children forked from a
    command where it may (:class:`HeldOut`). ``isolated``: each fold fits as a fit of its
    own; False: on the command's budget (folds planned on numba)."""
    import numpy as np

    k = folds_for(y, folds)
    if k == 0 and unlabeled is None:
        return None
    from ssl_svm.solvers import progress

    t0 = time.perf_counter()
    run = {n: v for n, v in (run or {}).items() if n != "warm"}
    lab = np.flatnonzero(y != 0)
    rows = unlabeled_sample(y, share, seed) if share < 1.0 else None
    pred = np.zeros(y.size)
    with progress.quiet_solvers():  # the folds' own iteration remarks are not the user's
        # no folds (k = 0): only the unlabeled rows' disagreement will bound the loss
        folds_run = None
        children = fold_children(algo, y.size if rows is None else rows.size, run)
        if k and children is not None and children < 2:
            from ssl_svm.solvers.host import forks

            if forks.allowed() >= 2:
                log.debug("check: its folds one after another: two at once would pass the "
                          "memory one fit is allowed (--max-memory)")
        if k and rows is None:
            reuse = None
            if algo.rows_reuse and isinstance(getattr(model, "warm", None), dict):
                reuse = {**model.warm, "seeds": None}
            folds_run = HeldOut(algo.fit, X, y, cost, params, k, seed, run, reuse, isolated,
                                children)
        elif k:  # the labeled rows keep their order, so their folds are the same
            folds_run = HeldOut(algo.fit, X[rows], y[rows], cost[rows], params, k, seed, run,
                                isolated=isolated, children=children)
        try:
            # while the folds run in children (a command's small fit), the svm runs here
            svm, base = baseline(X[lab], y[lab], cost[lab], k, seed, params)
            unl_svm = None if unlabeled is None else svm.predict(X[y == 0])
            if folds_run is not None and rows is None:
                pred = folds_run.predictions()
            elif folds_run is not None:
                pred[rows] = folds_run.predictions()
        finally:
            if folds_run is not None:
                folds_run.close()
    held = lab if k else lab[:0]
    return comparison(algo.name, k, y[held], pred[held], base, svm, unlabeled, unl_svm,
                      time.perf_counter() - t0,
                      None if rows is None else (rows.size - lab.size, y.size - lab.size))


def report(c: Comparison, train_name: str | None = "TRAIN") -> None:
    """Say the verdict in one line: ``no harm`` on the ``ssl.fit`` log;
    ``harm`` as an :class:`ssl_svm.UnlabeledHurtWarning`, ``unverified`` as an
    :class:`ssl_svm.UnverifiedWarning`, each with its figures and what to try
    (``ssl-tune -a auto TRAIN`` for a file, the Python way for arrays: ``train_name`` None)."""
    from ssl_svm.exceptions import UnlabeledHurtWarning, UnverifiedWarning, warn

    verdict = c.verdict
    a = c.algorithm
    figures = c.text()
    todo = (f"compare solvers with 'ssl-tune -a auto {train_name}', or train -a svm"
            if train_name is not None else
            "compare with ssl_svm.Auto(), or cross_val_score(..., "
            "cv=ssl_svm.SemiSupervisedKFold()), or use ssl_svm.SVM")
    if c.bound_from == "folds":
        source = "95 % upper bound from the held-out rows"
    else:
        source = "the share of the unlabeled rows on which they disagree" + (
            f"; {c.n} held-out rows are too few to bound it" if c.n < FOLD_ROWS else
            "; the held-out rows do not" if not c.represented else "")
    bound = f"at most {c.upper_bound:.1f} points worse than the supervised svm ({source})"
    if verdict == "no harm":
        if c.disagreement is not None and c.disagreement <= MARGIN:
            why = (f"at most {c.disagreement:.1f} points worse than the supervised svm on the "
                   "unlabeled rows (the share of them on which they disagree)")
        elif c.help_p <= ALPHA:
            why = f"the unlabeled rows helped (sign test p = {c.help_p:.2g}), {bound}"
        else:
            why = bound
        log.info("check against the supervised svm (%.2f s): no harm: %s; %s", c.seconds, why,
                 figures)
        return
    if verdict == "harm":
        message = (f"{a} is likely worse than ignoring the unlabeled rows (harm proven: "
                   f"one-sided sign test p = {c.harm_p:.2g} ≤ {ALPHA:g}; {bound}): {figures}; "
                   f"{todo}")
        warn(message, UnlabeledHurtWarning)
        return
    message = (f"{a} is unverified against ignoring the unlabeled rows: the labeled rows "
               f"cannot rule out that it is up to {c.upper_bound:.1f} points worse than the "
               f"supervised svm ({source}; {figures}); label more rows, or {todo}")
    warn(message, UnverifiedWarning)


CHECKS = ("auto", "cv", "none")


def may_check(algo, y, how: str = "auto") -> bool:
    """Whether :func:`check_fit` may run the check for a fit of ``algo`` on labels ``y``
    (internal codes, 0 = unlabeled): a semi-supervised (not positive-unlabeled) solver, some
    unlabeled rows, ``how`` not ``none``. (It still skips a one-class fit, a class of fewer
    than 2 labeled rows.)"""
    return (how != "none" and algo.uses_unlabeled and not algo.positive_unlabeled
            and bool((y == 0).any()))


def check_fit(algo, training, params: dict, run, m, how: str = "auto", *,
              seed: int = 0, source: str | None = "TRAIN") -> Comparison | None:
    """After a semi-supervised fit ``m`` of ``algo`` on prepared rows ``training``: compare it
    with the supervised svm (:func:`compare`), say the result (:func:`report`); returns it
    (None when not run). ``how``: ``cv``, folds that fit on every row; ``auto``, on the share
    of the unlabeled rows of :func:`check_share` (every row up to :data:`CHECK_ROWS` of them;
    never skipped for time); ``none`` never.
    Supervised and positive-unlabeled solvers, data without unlabeled rows, and a fit that
    gives every training row one class (said already) are not checked."""
    data = training.data
    if not may_check(algo, data.y, how):
        return None
    from ssl_svm.training import internal_labels, training_values

    F = training_values(algo, m, data.X)
    if F is not None and len(set(m.labels_from_values(F).tolist())) == 1:
        return None  # a one-class fit, already said (training.check_one_class)
    k = folds_for(data.y)
    unl = data.y == 0
    # the model's function, not the solver's transductive values (the TV family's cut): what
    # a new row, and ssl-predict, gets
    # in the internal codes, as the folds' labels are
    labels = internal_labels(m.labels_from_values(m.decision_function(data.X[unl])),
                             training.codes)
    from ssl_svm.solvers.host import budget

    # a command's folds: on numpy while they cost less than numba's start, each a fit of its
    # own then; on numba once the command's work went there; in children where it may fork
    on_numpy = budget.plan_check(k) is not False and not budget.numba_started_before()
    c = compare(algo, data.X, data.y, data.cost, fold_params(algo, params, m), run, seed=seed,
                unlabeled=labels,
                share=check_share(k, int(unl.sum())) if how == "auto" and k
                else 1.0, model=m, isolated=on_numpy)
    report(c, source)
    # not in the model file: a model is the fit's alone, whichever check ran after it
    return c
