"""The rule that chooses between candidates from their cross-validated scores: the
supervised svm is kept unless a semi-supervised candidate is ahead of it by more than the
folds' noise allows (paired differences, studentised; max-T over several points), and the
candidates of ``ssl-tune -a auto``.

Accuracies and differences in percent (points); the statistics are
:mod:`ssl_svm.selection.stats`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ssl_svm.selection.stats import Z, paired_difference

# ssl-tune -a auto: the candidates and their small grids (canonical -G specs); the supervised
# svm is always among the candidates of a selection
PORTFOLIO = {
    # the bar is the best of these λ; kept, the svm is the auto point: ssl-train -a svm's model
    "svm": ("lambda=auto,10,1,0.1,0.01,0.001",),
    "tsvm": ("lambda=1,0.1,0.01,0.001",),
    "lapsvm": ("gamma_i=0.01,0.1,1",),
    "cheeger-rls": (),
}
SUPERVISED = ("svm", "rls")
# a semi-supervised candidate replaces the supervised one when it is ahead by more than this
# many standard errors of the paired difference (the folds' noise): the one-sided 5 % level
# for one test. The best of several points is optimistic (the largest of 8 equal noisy scores
# is 1.4 standard errors above their mean): the auto selection raises it for the number of
# points compared (max_t_threshold), which a caller passes as select(..., z=)
SELECT_Z = Z


@dataclass
class Selection:
    """The outcome of :func:`select`: ``chosen`` and ``baseline`` (the best supervised
    candidate) and ``challenger`` (the semi-supervised one compared last: the chosen one, or
    the best that lost) are candidate names (None when there is none of that kind); difference
    and se: challenger minus baseline and its standard error, in the metric's units;
    coverage: the challenger's :class:`Coverage` against the baseline when measured;
    ``unrepresented``: [(name, Coverage)] of candidates ahead beyond the noise that were
    turned down because the held-out rows did not stand for the unlabeled ones."""

    chosen: str
    baseline: str | None
    challenger: str | None
    difference: float = float("nan")
    se: float = float("nan")
    coverage: object = None  # an ssl_svm.selection.stats.Coverage
    unrepresented: list = field(default_factory=list)
    z: float = SELECT_Z

    def text(self, metric: str, scores: dict) -> str:
        """What was chosen and why, one line."""
        if self.baseline is None or self.challenger is None:
            return f"{self.chosen} has the best {metric} ({scores[self.chosen]:.6g})"
        gap = (f"{self.difference:+.3g} (standard error {self.se:.3g}; it must exceed "
               f"{self.z:.3g} standard errors)")
        turned = "".join(
            f"; {n} ({metric} {scores[n]:.6g}) was ahead too, but {c.text(n, self.baseline)}: "
            f"the held-out rows do not stand for the unlabeled ones"
            for n, c in self.unrepresented)
        if self.chosen == self.challenger:
            return (f"{self.challenger} beats the supervised {self.baseline}: {metric} "
                    f"{scores[self.challenger]:.6g} against {scores[self.baseline]:.6g}, "
                    f"{gap}: the unlabeled rows help{turned}")
        lead = (f"kept the supervised {self.baseline} ({metric} {scores[self.baseline]:.6g}): "
                f"the best semi-supervised candidate, {self.challenger} "
                f"({scores[self.challenger]:.6g}), ")
        if any(n == self.challenger for n, _ in self.unrepresented):
            return lead + f"is ahead, {gap}, but " + turned[turned.index(" but ") + 5:]
        return lead + (f"is {gap.replace('(', 'ahead (', 1)}" if self.difference > 0
                       else "is behind it") + turned


def select(scores: dict, units: dict, cover=None, z: float = SELECT_Z) -> Selection:
    """Choose among candidates: ``scores`` {name: the metric of its best point}, ``units``
    {name: per-row correctness (accuracy) or per-fold scores of that point, aligned across
    candidates}. The best supervised candidate (:data:`SUPERVISED`) is kept unless a
    semi-supervised one is ahead of it by more than ``z`` standard errors of the paired
    difference (:data:`SELECT_Z` for one comparison); of those, the best-scoring whose
    held-out rows stand for the unlabeled ones is chosen: ``cover(name, baseline)`` gives
    their :class:`Coverage` (None: not measured, taken as standing). Without one of either
    kind, the best score wins (ties: the first)."""
    names = list(scores)
    sup = [n for n in names if n in SUPERVISED]
    semi = [n for n in names if n not in SUPERVISED]
    if not sup or not semi:
        best = max(names, key=lambda n: (scores[n], -names.index(n)))
        return Selection(best, None, None, z=z)
    base = max(sup, key=lambda n: (scores[n], -names.index(n)))
    ranked = sorted(semi, key=lambda n: (-scores[n], names.index(n)))
    turned = []
    first = None
    for chal in ranked:
        diff, se = paired_difference(units[chal], units[base])
        if first is None:
            first = (chal, diff, se)
        if not (diff > 0 and diff > z * se):
            continue
        c = cover(chal, base) if cover is not None else None
        if c is not None and not c.represented:
            turned.append((chal, c))
            continue
        return Selection(chal, base, chal, diff, se, c, turned, z)
    chal, diff, se = first
    return Selection(base, base, chal, diff, se, None, turned, z)


def max_t_threshold(differences, seed: int, resamples: int = 2000,
                    level: float = 0.95) -> float:
    """The one-sided critical value for the largest of several studentised paired differences
    (rows × points of per-row differences, each point against the same baseline): the
    ``level`` quantile of max_j (mean*_j − mean_j) / se_j over ``resamples`` bootstrap draws
    of the rows (the same rows for every point, so the points' correlation is kept; Westfall
    & Young's max-T), at least the single test's :data:`ssl_svm.Z`. Points whose
    differences do not vary are left out. Seeded: the same inputs give the same value."""
    import numpy as np

    D = np.asarray(differences, dtype=float)
    if D.ndim != 2 or D.shape[0] < 2 or D.shape[1] == 0:
        return Z
    n = D.shape[0]
    se = D.std(axis=0, ddof=1) / math.sqrt(n)
    keep = se > 0
    if keep.sum() <= 1:
        return Z
    D, se = D[:, keep], se[keep]
    mean = D.mean(axis=0)
    rng = np.random.default_rng(seed)
    top = np.empty(resamples)
    chunk = max(1, min(resamples, 4_000_000 // max(n, 1)))
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        counts = rng.multinomial(n, np.full(n, 1.0 / n), size=b)  # b × n row counts
        means = counts @ D / n
        top[start:start + b] = ((means - mean) / se).max(axis=1)
    return max(Z, float(np.quantile(top, level)))


def bonferroni_threshold(m: int) -> float:
    """Φ⁻¹(1 − 0.05 / m): the one-sided 5 % level for the best of m tests."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(1.0 - 0.05 / max(m, 1))
