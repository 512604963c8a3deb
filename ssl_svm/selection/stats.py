"""The statistics of the check after a fit and of ``-a auto``'s rule, in one place.

Two models a and b are compared on the same rows, each row right or wrong for each: the
*paired* comparison counts only the rows where they differ (``better``: a right and b wrong;
``worse``: the reverse), as McNemar's test does; rows both get right or both get wrong do not
move it.

Conventions: accuracies, differences, losses and shares in percent (points); a *loss* is b's
accuracy minus a's (a worse than b is a positive loss). ``Z`` is the one-sided 5 % normal
quantile (``-a auto``'s rule), ``ALPHA`` the level of the check's harm test and ``Z_BOUND``
the quantile of its upper bound on the loss.

Imports no numerical library at module level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Z = 1.645  # one-sided 5 % quantile of the normal distribution
# the check calls a fit "harm proven" when the one-sided sign test on the rows where the fit
# and the svm disagree rejects "not worse" at this level
ALPHA = 0.10
# the check's upper bound on the loss from the held-out rows: the one-sided 95 % quantile, and
# only with at least FOLD_ROWS labeled rows (below, the unlabeled rows' disagreement alone).
# Chosen on bench/bench_trust.py's tune half (315 fits): a bound at 90 % from every fold
# covered the test rows' loss on 90.2 % of fits and cleared 9 of 118 harmful ones; this one
# covers 94.9 % and clears 4 (3.4 %): the folds' fits are not the final fit, and on a few
# held-out rows their difference is far from normal
Z_BOUND = 1.645
FOLD_ROWS = 50
# the loss against the svm, in points, that "no harm" rules out: bench/bench_trust.py calls a
# fit 2 points worse than the svm on the test rows harmful
MARGIN = 2.0
VERDICTS = ("harm", "no harm", "unverified")

# the unlabeled rows are "not represented" by the held-out labeled rows when the two models'
# disagreement there exceeds their held-out disagreement by more than this many standard
# errors (the one-sided 0.5 % level): the held-out rows then do not describe the models where
# they differ, and only the unlabeled rows' disagreement bounds the loss
COVER_Z = 2.576


def paired_difference(a, b) -> tuple[float, float]:
    """(mean of a - b, its standard error) of two equally long score vectors: per-row 0/1
    correctness (percent points) or per-fold scores."""
    import numpy as np

    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if d.size < 2:
        return float(d.mean()) if d.size else 0.0, float("inf")
    return float(d.mean()), float(np.std(d, ddof=1)) / math.sqrt(d.size)


def paired_se(better: int, worse: int, n: int) -> float:
    """Standard error, in points, of the difference of two accuracies on the same n rows,
    ``better`` rows right for the first only and ``worse`` for the second only, with half a row
    added to each cell of the 2×2 table (Agresti & Min 2005): on few rows where the two agree
    everywhere it is not 0 (7 rows: 11 points), which would make any difference certain."""
    b2, c2, n2 = better + 0.5, worse + 0.5, n + 2.0
    return 100.0 * math.sqrt(max(b2 + c2 - (b2 - c2) ** 2 / n2, 0.0)) / n2


def sign_test(k: int, m: int) -> float:
    """P(K ≥ k) for K ~ Binomial(m, ½): the exact one-sided p-value of k of m discordant rows
    going one way when either way is as likely (McNemar's exact test); 1 for k ≤ 0."""
    if k <= 0:
        return 1.0
    if k > m:
        return 0.0
    return min(1.0, sum(math.comb(m, i) for i in range(k, m + 1)) / 2.0 ** m)


def loss_upper_bound(better: int, worse: int, n: int, z: float = Z_BOUND) -> float:
    """The one-sided upper confidence bound (``z``: 95 % by default), in points, on how much
    less accurate the first model is than the second, from n paired rows: the observed loss
    (worse − better)/n plus z standard errors (:func:`paired_se`)."""
    return 100.0 * (worse - better) / max(n, 1) + z * paired_se(better, worse, n)


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
    :class:`ssl_svm.LopsidedWarning` rule), not a sign that the held-out rows misjudge a."""

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
    """A semi-supervised solver against the supervised svm on the same folds (percent).

    ``better``/``worse``: the held-out labeled rows only the fit / only the svm gets right;
    ``coverage``: the fit against the svm fitted on every labeled row (their disagreement on
    the held-out and on the unlabeled rows), None when not measured."""

    algorithm: str
    folds: int
    n: int                 # labeled rows held out once each
    accuracy: float        # the semi-supervised solver's cross-validated accuracy
    baseline: float        # the supervised svm's (λ chosen inside each training part)
    baseline_lambda: float  # the svm's λ on every labeled row (ssl-train -a svm's)
    majority: float        # the largest class's share of the labeled rows
    better: int
    worse: int
    seconds: float = 0.0
    coverage: Coverage | None = None
    sample: tuple[int, int] | None = None  # (unlabeled rows in the folds' fits, of all)

    @property
    def difference(self) -> float:
        """The fit's held-out accuracy minus the svm's, in points."""
        return self.accuracy - self.baseline

    @property
    def se(self) -> float:
        """Standard error of :attr:`difference` (:func:`~ssl_svm.selection.stats.paired_se`)."""
        return paired_se(self.better, self.worse, self.n)

    @property
    def harm_p(self) -> float:
        """One-sided exact sign test of "the fit is not worse": P(at least ``worse`` of the
        ``better + worse`` discordant rows go the svm's way | each way equally likely)."""
        return sign_test(self.worse, self.better + self.worse)

    @property
    def help_p(self) -> float:
        """The same test the other way: of "the fit is not better"."""
        return sign_test(self.better, self.better + self.worse)

    @property
    def disagreement(self) -> float | None:
        """The share of the unlabeled rows the fit and the svm label differently (None: not
        measured): the fit can be less accurate than that svm there by at most this much."""
        return None if self.coverage is None or not self.coverage.u else self.coverage.unlabeled

    @property
    def represented(self) -> bool:
        """Whether the held-out rows stand for the unlabeled ones
        (:attr:`~ssl_svm.selection.stats.Coverage.represented`; True when not measured)."""
        return self.coverage is None or self.coverage.represented

    @property
    def fold_bound(self) -> float:
        """The one-sided 95 % upper bound of the loss on the held-out rows, in points."""
        return loss_upper_bound(self.better, self.worse, self.n, Z_BOUND)

    @property
    def folds_bound(self) -> bool:
        """Whether the held-out rows bound the loss: at least :data:`FOLD_ROWS` of them, and
        standing for the unlabeled ones (:attr:`represented`)."""
        return self.n >= FOLD_ROWS and self.represented

    @property
    def upper_bound(self) -> float:
        """The largest loss against the svm, in points, that the labeled and unlabeled rows
        do not rule out: the smaller of :attr:`fold_bound` (when :attr:`folds_bound`) and
        :attr:`disagreement`; at least 0."""
        bounds = [self.fold_bound] if self.folds_bound else []
        if self.disagreement is not None:
            bounds.append(self.disagreement)
        return max(0.0, min(bounds)) if bounds else math.inf

    @property
    def bound_from(self) -> str:
        """Where :attr:`upper_bound` comes from: ``folds`` or ``unlabeled``."""
        if self.disagreement is not None and (not self.folds_bound
                                              or self.disagreement <= self.fold_bound):
            return "unlabeled"
        return "folds"

    @property
    def verdict(self) -> str:
        """``no harm`` when the fit and the svm disagree on at most :data:`MARGIN` points of
        the unlabeled rows; else ``harm`` when the sign test proves it worse
        (:attr:`harm_p` ≤ ALPHA); else ``no harm`` when :attr:`upper_bound` ≤ :data:`MARGIN`;
        else ``unverified``."""
        if self.disagreement is not None and self.disagreement <= MARGIN:
            return "no harm"
        if self.harm_p <= ALPHA:
            return "harm"
        if self.upper_bound <= MARGIN:
            return "no harm"
        return "unverified"

    def text(self) -> str:
        """The figures behind the verdict, one clause."""
        held = (f"on the {self.n} labeled rows held out in {self.folds} folds, {self.algorithm} "
                f"{self.accuracy:.1f} % against the supervised svm's {self.baseline:.1f} % "
                f"({self.algorithm} alone right on {self.better}, the svm alone on "
                f"{self.worse})" if self.folds else
                "no labeled row can be held out (a class has 1 labeled row)")
        unl = ("" if self.disagreement is None else
               f"; they disagree on {self.disagreement:.1f} % of the {self.coverage.u} "
               f"unlabeled rows" + ("" if self.represented else
                                    f" against {self.coverage.held_out:.1f} % of the held-out "
                                    "ones: the held-out rows do not stand for the unlabeled "
                                    "ones, where the two differ most"))
        sample = (f"; the folds' fits used {self.sample[0]} of the {self.sample[1]} unlabeled "
                  "rows" if self.sample is not None else "")
        return held + unl + sample

    def summary(self) -> dict:
        """The verdict and its figures, as plain values (what a report or a test reads)."""
        return {"verdict": self.verdict, "upper_bound": self.upper_bound,
                "harm_p": self.harm_p, "help_p": self.help_p, "better": self.better,
                "worse": self.worse, "n": self.n, "accuracy": self.accuracy,
                "baseline": self.baseline, "disagreement": self.disagreement,
                "represented": self.represented}


def comparison(name: str, k: int, truth, held, held_svm, svm, unlabeled=None,
               unlabeled_svm=None, seconds: float = 0.0, sample=None) -> Comparison:
    """The :class:`Comparison` of a fit of solver ``name`` with the supervised svm, from
    the labeled rows' labels ``truth`` (internal codes), their held-out predictions by the
    fit's folds (``held``) and by the svm's (``held_svm``), on k folds; ``svm``: the svm
    fitted on every labeled row; ``unlabeled``/``unlabeled_svm``: both models' labels of
    the unlabeled rows (None: not measured). Whatever holds the rows (one process, a
    cluster's blocks) gives the same figures from the same predictions."""
    import numpy as np

    truth, held, held_svm = np.asarray(truth), np.asarray(held), np.asarray(held_svm)
    n = truth.size
    cover = None
    if unlabeled is not None:
        cover = coverage(held, held_svm, unlabeled, unlabeled_svm, truth if n else None)
    right, right_svm = held == truth, held_svm == truth
    _, counts = np.unique(truth, return_counts=True)

    def share(x):
        return 100.0 * float(x) / n if n else math.nan

    return Comparison(name, k, n, share(right.sum()), share(right_svm.sum()),
                      float(svm.stats.get("lambda", [math.nan])[0]),
                      share(counts.max() if n else 0), int(np.sum(right & ~right_svm)),
                      int(np.sum(right_svm & ~right)), seconds, cover, sample)
