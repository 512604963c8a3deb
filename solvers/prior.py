"""The class prior of positive–unlabeled data: π, the positive fraction of the unlabeled rows
(mixture proportion estimation), with a bootstrap interval.

If the labeled positives are a random sample of the positives, the unlabeled rows follow
π·(positives) + (1 − π)·(negatives), so for any score s and threshold t

    π ≤ U(s ≥ t) / P(s ≥ t)

(U, P: the fractions of unlabeled and labeled-positive rows scoring at least t), with equality
where no negative scores that high (Blanchard, Lee & Scott 2010; Scott 2015). The bound holds for
every score, so the estimate is the smallest ratio over thresholds and over scorers.

Scores: cross-fitted L2-penalised logistic regressions of labeled positives against unlabeled
rows (each row scored by the fit that did not see it; K stratified folds, several random
foldings averaged), on the standardised features ("linear") and, for densely stored data of
moderate size, on Nyström RBF features of them ("rbf"). Per scorer, the ratio is taken at the
thresholds passed by q = 20 %, 25 %, …, 100 % of the labeled positives and averaged over the
foldings; the estimate is its smallest value at q ≥ 40 %: a minimum over few top-scoring
positives would chase their noise.

The interval resamples the labeled positives and the unlabeled rows (bootstrap, the held-out
scores kept). Its two ends answer the estimate's two errors. Where the classes overlap, the
ratio still falls toward the top thresholds and the estimate sits above π: the low end is the
lower percentile of the smallest ratio at q ≥ 20 %. Where they do not, the smallest of many
noisy ratios sits below π: the high end is the upper percentile of the ratio at the estimate's
own threshold and scorer, not re-minimised, raised by the mean amount by which re-minimising
pulls the resampled estimates below the estimate. When the ratio still falls clearly between the
top 40 % and the top 20 % of the labeled positives, the bound is not reached there and the
estimate is an upper bound (:attr:`PriorEstimate.still_falling`).

Measured on the 9 UCI sets of the PU benchmark and on sets it was not tuned on
(bench/bench_prior.py, 20 % of the positives labeled) against other estimators: see
BENCHMARKS.md. Where the classes overlap (no region where only positives lie) the bound is
not reached and every such estimate is biased upward.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ssl_svm.solvers import progress
from ssl_svm.solvers.errors import ProblemError

log = logging.getLogger("ssl.solver.usmo")

Q_FROM = 0.4  # the smallest share of the labeled positives the estimate's threshold passes
Q_LOW = 0.2  # ... and the interval's low end's
Q_STEP = 0.05
LEVEL = 0.90  # the interval's coverage
WIDE = 0.2  # an interval wider than this is reported as too wide to trust
# held-out AUC of labeled positives against unlabeled rows below this: the scores hardly
# separate them (AUC = 1 − π/2 for a perfect score, so also when π is near 1)
SEPARATION = 0.6
# the ratio's fall from the top 40–45 % to the top 20–25 % of the labeled positives above
# which, in at least FALL_SHARE of the bootstrap draws, the estimate is an upper bound only
FALL, FALL_SHARE = 0.03, 0.99
FLOOR, CEILING = 0.001, 0.999
UPPER_CONFIDENCE = 0.95  # of the upper bound :func:`dkw_upper_bound`
NYSTROEM = 300  # landmarks of the RBF scorer
RBF_MAX_ROWS = 50_000  # n × NYSTROEM dense features: 120 MB at this size
# beyond this many rows the estimate is that of a seeded sample: its error is the bias of the
# rule, not the sampling (0.01 at 50,000 rows), and --prior auto stays a fraction of a fit
MAX_ROWS = 50_000
# up to this many values of the scorer's rows a logistic fit runs its BLAS on one thread:
# L-BFGS-B's own step is a few small BLAS calls on ~300 numbers, which OpenBLAS splits over
# its threads and then waits for; products over more rows gain from the threads (BENCHMARKS.md)
SERIAL_VALUES = 2_000_000


@dataclass(frozen=True)
class PriorEstimate:
    """π and its ``level`` bootstrap interval [low, high]; ``at``: the share of the labeled
    positives above the threshold where the ratio is smallest; ``scorer``: the scorer that
    gave it ("linear" or "rbf"); ``fits``: logistic fits made; ``auc``: that scorer's held-out
    area under the ROC curve of labeled positives against unlabeled rows (averaged over the
    foldings); ``fall``: that scorer's ratio at the top 40–45 % of the labeled positives less
    its ratio at the top 20–25 %; ``fall_share``: the share of the bootstrap draws in which
    it falls."""

    value: float
    low: float
    high: float
    at: float
    scorer: str
    fits: int
    auc: float
    level: float = LEVEL
    fall: float = 0.0
    fall_share: float = 0.0
    upper: float = 1.0  # :func:`dkw_upper_bound` of the held-out scores, at UPPER_CONFIDENCE

    @property
    def width(self) -> float:
        return self.high - self.low

    @property
    def too_wide(self) -> bool:
        return self.width > WIDE

    @property
    def unseparated(self) -> bool:
        """The scores hardly tell labeled positives from unlabeled rows: the ratio then stays
        near 1 whatever π is (unless nearly every unlabeled row is positive)."""
        return self.auc < SEPARATION

    @property
    def still_falling(self) -> bool:
        """The ratio still falls clearly toward the top-scoring rows: negatives score among
        the highest, the bound is not reached and π likely lies below the estimate (and
        below the interval where it is narrow)."""
        return self.fall > FALL and self.fall_share >= FALL_SHARE

    @property
    def warning(self) -> str | None:
        """The one warning --prior auto gives, each a statement about π that
        ``bench/bench_prior.py warnings`` tests (:meth:`holds`) on sets the rules were not tuned
        on: "upper bound" (:attr:`unseparated`: π ≤ high, the estimate's side of its noise),
        else "uncertain" (the interval is wider than WIDE: π lies in [low, high]), else "too
        high" (:attr:`still_falling`, a narrow interval: π < value); None. The ratio bound is
        never below π but for sampling noise, so unseparated scores bound π from above at the
        interval's high end (the PU benchmark's sets: 21 of 21 draws; π ≤ value on 11 only).
        Apart from that, a direction is claimed only where the interval is narrow: on a few
        dozen labeled positives the error is sampling noise with no side."""
        if self.unseparated:
            return "upper bound"
        if self.too_wide:
            return "uncertain"
        if self.still_falling:
            return "too high"
        return None

    def holds(self, pi: float) -> bool | None:
        """Whether :attr:`warning`'s statement is right for the true π (None: no warning)."""
        return {"uncertain": self.low <= pi <= self.high, "upper bound": pi <= self.high,
                "too high": pi < self.value, None: None}[self.warning]

    def text(self) -> str:
        """'0.4123 (90 % interval 0.35–0.47)'."""
        return (f"{self.value:.4f} ({100 * self.level:.0f} % interval {self.low:.2f}–"
                f"{self.high:.2f})")


class Standardised:
    """The rows of (X − 1μᵀ)·diag(1/σ) (columns to mean 0 and standard deviation 1, σ = 0
    taken as 1) for a sparse X, as an operator: ``A @ w``, ``A.T @ r``, ``A[rows]``: the
    products cost X's stored values, not rows × features."""

    def __init__(self, X, mean, inv):
        self.X, self.mean, self.inv = X, mean, inv
        self.shape = X.shape

    @classmethod
    def of(cls, X):
        n = X.shape[0]
        mean = np.asarray(X.mean(axis=0)).ravel()
        var = np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean * mean
        std = np.sqrt(np.maximum(var, 0.0))
        std[std == 0] = 1.0
        return cls(X, mean, 1.0 / std) if n else cls(X, mean, np.ones_like(mean))

    def __matmul__(self, w):
        v = w * self.inv
        return self.X @ v - float(self.mean @ v)

    def __getitem__(self, rows):
        return Standardised(self.X[rows], self.mean, self.inv)

    @property
    def T(self):
        outer = self

        class _Transposed:
            def __matmul__(self, r):
                return outer.inv * (outer.X.T @ r - outer.mean * float(np.sum(r)))

        return _Transposed()


def stored_values(A) -> int:
    """The values a product with the scorer's rows A reads: a sparse matrix's (or a
    :class:`Standardised` one's) stored values, else rows × columns."""
    X = A.X if isinstance(A, Standardised) else A
    return int(X.nnz) if sp.issparse(X) else int(A.shape[0]) * int(A.shape[1])


def logistic_fit(A, s, reg):
    """(w, b) of an L2-penalised logistic regression of s ∈ {0, 1} on the rows of A (an array,
    a sparse matrix or :class:`Standardised`): minimises Σ log(1 + exp(∓(Aw + b))) +
    ½·reg·m·‖w‖² (m rows, b unpenalised), by L-BFGS (on one BLAS thread up to
    :data:`SERIAL_VALUES` values of A: :func:`stored_values`)."""
    import contextlib

    import scipy.optimize

    from ssl_svm.solvers.linalg_numpy import one_blas_thread

    m = float(s.size)

    def loss(wb):
        w, b = wb[:-1], wb[-1]
        z = A @ w + b
        L = float(np.sum(s * np.logaddexp(0, -z) + (1 - s) * np.logaddexp(0, z)))
        r = -s * np.exp(-np.logaddexp(0, z)) + (1 - s) * np.exp(-np.logaddexp(0, -z))
        return L + 0.5 * reg * m * float(w @ w), np.concatenate([A.T @ r + reg * m * w,
                                                                [r.sum()]])

    with one_blas_thread() if stored_values(A) <= SERIAL_VALUES else contextlib.nullcontext():
        res = scipy.optimize.minimize(loss, np.zeros(A.shape[1] + 1), jac=True,
                                      method="L-BFGS-B", options={"maxiter": 500})
    return res.x[:-1], res.x[-1]


def svm_fit(A, s, reg):
    """(w, b) of a linear L2-loss SVM of s ∈ {0, 1} on the sparse rows A, the two classes
    weighted to equal total cost: minimises ½·reg·m·‖w̃‖² + ½ Σ C_i max(0, 1 − y_i x̃_i·w̃)²
    (m rows, x̃ = [x, 1]) by :func:`linear.l2svm_mfn`'s finite Newton."""
    from ssl_svm.solvers.linear import l2svm_mfn

    pos = max(float(s.sum()), 1.0)
    C = np.where(s > 0, (s.size - pos) / pos, 1.0)
    with progress.quiet_solvers():
        r = l2svm_mfn(sp.csr_matrix(A), np.where(s > 0, 1.0, -1.0), C, reg * s.size)
    return r.w[:-1], float(r.w[-1])


def standardised_rows(X):
    """X with columns to mean 0 and standard deviation 1: a dense array where X is densely
    stored, a :class:`Standardised` operator where that fits, else X itself (large sparse
    text: centring would fill it in, and scaling rare words' columns up to unit root mean
    square made the scores fit noise: held-out AUC 0.55 against 0.66 on 50,000 text-like
    rows, bench/make_pu_text.py)."""
    if X.nnz > 0.1 * X.shape[0] * X.shape[1]:
        A = X.toarray()
        mean, std = A.mean(axis=0), A.std(axis=0)
        std[std == 0] = 1.0
        return (A - mean) / std
    if X.shape[0] * X.shape[1] <= 5_000_000:
        return Standardised.of(X)
    return X


def nystroem_features(A, m, rng):
    """Rows F with F Fᵀ ≈ K, K the RBF kernel exp(−γ‖a − a′‖²) of the dense rows A, from m
    random landmark rows (Williams & Seeger 2001): F = K(A, L)·V·diag(λ)^−½ over the positive
    eigenpairs of K(L, L); γ = 1/median of the landmarks' squared distances. Columns
    standardised."""
    L = A[rng.choice(A.shape[0], size=min(m, A.shape[0]), replace=False)]
    sq = np.einsum("ij,ij->i", L, L)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (L @ L.T), 0.0)
    off = d2[np.triu_indices(L.shape[0], 1)]
    med = float(np.median(off)) if off.size else 1.0
    gamma = 1.0 / med if med > 0 else 1.0
    lam, V = np.linalg.eigh(np.exp(-gamma * d2))
    keep = lam > 1e-10 * max(float(lam[-1]), 1e-300)
    P = V[:, keep] / np.sqrt(lam[keep])
    sa = np.einsum("ij,ij->i", A, A)
    F = np.exp(-gamma * np.maximum(sa[:, None] + sq[None, :] - 2.0 * (A @ L.T), 0.0)) @ P
    F -= F.mean(axis=0)
    std = F.std(axis=0)
    F /= np.where(std > 0, std, 1.0)
    return F


def cross_fitted_scores(F, s, target, k, reg, rng, each_fit=None, fit=None):
    """Every row's score from the fit (``fit``, default :func:`logistic_fit`, of ``target``
    on the rows F, penalty ``reg``) on the other k − 1 of k random folds (:func:`_folds` of
    the labeled-positive indicator ``s``); ``each_fit()`` is called after each fit."""
    _, sc = next(_scorings([("", F, reg, fit)], s, target, k, 1, rng,
                           each_fit or (lambda: None)))
    return sc


def _scorings(spaces, s, target, k, repeats, rng, each_fit):
    """(scorer name, every row's cross-fitted score) for each of ``spaces`` (name, rows F,
    penalty, fit or None) and each of ``repeats`` foldings: :func:`cross_fitted_scores`,
    with every folding drawn from ``rng`` first, in the same order, and the fits of few
    values (one BLAS thread each: :data:`SERIAL_VALUES`; logistic) in children forked from a
    command where it may (:class:`ssl_svm.solvers.host.forks.Batch`): the same scores."""
    from ssl_svm.solvers.host import forks

    plan = [(name, F, reg, fit or logistic_fit, _folds(s, k, rng))
            for name, F, reg, fit in spaces for _ in range(repeats)]
    tasks = [(r, j) for r in range(len(plan)) for j in range(k)]

    def one(t):
        _, F, reg, fit, fold = plan[tasks[t][0]]
        tr, te = fold != tasks[t][1], fold == tasks[t][1]
        w, b = fit(F[tr], target[tr], reg)
        return F[te] @ w + b

    small = all(fit is logistic_fit and stored_values(F) <= SERIAL_VALUES
                for _, F, _, fit, _ in plan)
    if small and forks.processes(len(tasks)):
        import scipy.optimize  # noqa: F401 -- once here, not in every child
    batch = forks.Batch(one, range(len(tasks)), None if small else 1)
    if batch.children:
        log.debug("prior estimate: its %d fits in %d processes forked from this one",
                  len(tasks), len(batch.children))
    values = iter(batch.results())
    for name, _, _, _, fold in plan:
        sc = np.empty(s.size)
        for j in range(k):
            sc[fold == j] = next(values)
            each_fit()
        yield name, sc


def _folds(s, k, rng):
    """A fold number per row, the labeled positives and the unlabeled rows each spread evenly
    over k folds in random order."""
    f = np.empty(s.size, dtype=np.int64)
    for lab in (0.0, 1.0):
        idx = np.flatnonzero(s == lab)
        f[rng.permutation(idx)] = np.arange(idx.size) % k
    return f


def ratio_curve(sp_, su, qs, cp=None, cu=None):
    """U(s ≥ t_q)/P(s ≥ t_q) at the thresholds t_q passed by the top ⌈q·p⌉ labeled positives
    (ties may pass more), for sorted positive scores ``sp_`` and unlabeled scores ``su``;
    ``cp``/``cu``: counts per row (a bootstrap resample), default one each."""
    cp = np.ones(sp_.size) if cp is None else cp
    cu = np.ones(su.size) if cu is None else cu
    tail_p = np.cumsum(cp[::-1])[::-1]  # count at or above each sorted position
    tail_u = np.append(np.cumsum(cu[::-1])[::-1], 0.0)
    total_p = tail_p[0]
    need = np.clip(np.ceil(qs * total_p), 1, total_p)
    # the last sorted position whose tail count still reaches the need: the q-threshold
    pos = np.searchsorted(-tail_p, -need, side="right") - 1
    t = sp_[pos]
    first = np.searchsorted(sp_, t, side="left")
    frac_p = tail_p[first] / total_p
    frac_u = tail_u[np.searchsorted(su, t, side="left")] / tail_u[0]
    return frac_u / frac_p


def sample_rows(y: np.ndarray, m: int, seed: int = 0, least: int = 2) -> np.ndarray:
    """Ascending positions of a seeded sample of m of the rows y (+1 labeled, 0 unlabeled),
    labeled and unlabeled rows in their proportions, at least ``least`` labeled ones."""
    rng = np.random.default_rng(seed)
    P, U = np.flatnonzero(y > 0), np.flatnonzero(y <= 0)
    k = min(P.size, max(least, int(round(m * P.size / y.size))))
    return np.sort(np.concatenate([rng.choice(P, k, replace=False),
                                   rng.choice(U, min(U.size, m - k), replace=False)]))


def _repeats(n: int) -> int:
    return int(min(2, max(1, math.ceil(20_000 / max(n, 1)))))


def _k_folds(n: int) -> int:
    # two folds on large data: the fits then cost about one fit on all rows (issue 35:
    # --prior auto in time comparable to one usmo fit on 100,000 sparse rows)
    return 5 if n <= 20_000 else 2


def estimate_prior(X, y, seed: int = 0, repeats: int | None = None, folds: int | None = None,
                   bootstrap: int = 200, level: float = LEVEL, scorers=("linear", "rbf"),
                   score_target: np.ndarray | None = None,
                   max_rows: int = MAX_ROWS) -> PriorEstimate:
    """π of the PU rows ``y`` (+1 labeled positive, 0 unlabeled) of X; see the module
    docstring. ``score_target`` (0/1 per row) replaces the labeled-positive indicator as the
    target of the logistic fits only (the ratios still count labeled positives and unlabeled
    rows): bench_usmo.py passes the true classes there, an oracle scorer. The RBF scorer
    runs on densely stored data of at most RBF_MAX_ROWS rows. Beyond ``max_rows`` rows the
    estimate (and its interval) is that of a seeded sample (:func:`sample_rows`) holding
    every labeled positive, or half the sample when they are more: the ratios count each set
    in its own proportions, so the sample's share of positives does not bias them, and the
    scorers learn from all of them (10⁶ rows of the rolls, 1,000 labeled positives, on the
    landmark features: held-out AUC 0.37 and π 0.97 with the 50 of a proportional sample,
    0.72 and 0.46 with all 1,000, for a true 0.50)."""
    X = sp.csr_matrix(X)
    y = np.asarray(y)
    if y.size > max_rows:
        rows = sample_rows(y, max_rows, seed, least=max_rows // 2)
        X, y = X[rows], y[rows]
        if score_target is not None:
            score_target = np.asarray(score_target)[rows]
    X = X[:, np.unique(X.indices)]  # columns without a value score nothing in any scorer
    n = y.size
    s = (y > 0).astype(np.float64)
    p, nu = int(s.sum()), int(n - s.sum())
    if p < 2 or nu < 1:
        raise ProblemError("--prior auto needs at least two labeled positives and some "
                           "unlabeled rows; give --prior")
    target = s if score_target is None else (np.asarray(score_target) > 0).astype(np.float64)
    repeats = _repeats(n) if repeats is None else repeats
    k = min(_k_folds(n) if folds is None else folds, p)
    rng = np.random.default_rng(seed)
    A = standardised_rows(X)
    # large sparse rows (kept as they are): a linear SVM's scores, by finite Newton in a second
    # where L-BFGS on the logistic loss took 13 s for worse ones (50,000 text-like rows)
    large = sp.issparse(A)
    spaces = [("linear", A, 1e-3 if large else 1e-2, svm_fit if large else None)] \
        if "linear" in scorers else []
    if "rbf" in scorers and isinstance(A, np.ndarray) and n <= RBF_MAX_ROWS:
        spaces.append(("rbf", nystroem_features(A, NYSTROEM, rng), 1e-1, None))
    qs = np.round(np.arange(Q_LOW, 1.0 + 1e-9, Q_STEP), 10)
    est = qs >= Q_FROM - 1e-9
    top, mid = qs <= Q_LOW + Q_STEP + 1e-9, (qs >= Q_FROM - 1e-9) & (qs <= Q_FROM + Q_STEP + 1e-9)
    P, U = np.flatnonzero(s > 0), np.flatnonzero(s == 0)
    # per scorer, per folding: the sort orders of the P and U scores and the sorted scores
    runs: dict[str, list] = {}
    fits, total = [0], len(spaces) * repeats * k

    def count():
        fits[0] += 1
        progress.beat(log, "usmo: prior estimate, %d of %d fits", fits[0], total)

    for name, sc in _scorings(spaces, s, target, k, repeats, rng, count):
        oP, oU = np.argsort(sc[P], kind="stable"), np.argsort(sc[U], kind="stable")
        runs.setdefault(name, []).append((oP, oU, sc[P][oP], sc[U][oU]))
    names = list(runs)

    def curves(cp=None, cu=None):
        """Per scorer (rows, in ``names`` order), the ratio at ``qs`` averaged over the
        foldings; cp/cu: resample counts per labeled positive and per unlabeled row."""
        return np.array([np.mean([ratio_curve(a, b, qs, None if cp is None else cp[oP],
                                              None if cu is None else cu[oU])
                                  for oP, oU, a, b in runs[name]], axis=0)
                         for name in names])

    def fall(c):
        return float(c[mid].mean() - c[top].mean())

    C = curves()
    j, i = np.unravel_index(int(np.argmin(np.where(est, C, np.inf))), C.shape)
    value, at, scorer = float(C[j, i]), float(qs[i]), names[j]
    auc = float(np.mean([_auc(a, b) for _, _, a, b in runs[scorer]]))
    lows, highs, mins, falls = (np.empty(bootstrap) for _ in range(4))
    for b in range(bootstrap):
        D = curves(rng.multinomial(p, np.full(p, 1.0 / p)).astype(np.float64),
                   rng.multinomial(nu, np.full(nu, 1.0 / nu)).astype(np.float64))
        lows[b], highs[b], mins[b], falls[b] = D.min(), D[j, i], D[:, est].min(), fall(D[j])
    tail = (1.0 - level) / 2.0
    # the high end moves up by how far re-minimising pulls the resampled estimates below it
    low, high = ((np.quantile(lows, tail), np.quantile(highs, 1.0 - tail)
                  + max(0.0, value - float(mins.mean()))) if bootstrap else (value, value))
    share = float(np.mean(falls > 0)) if bootstrap else float(fall(C[j]) > 0)
    upper = dkw_upper_bound([(a, b) for name in names for _, _, a, b in runs[name]])
    return PriorEstimate(_clip(value), _clip(min(low, value)), _clip(max(high, value)), at,
                         scorer, fits[0], auc, level, fall(C[j]), share, upper)


def dkw_upper_bound(scores: list[tuple[np.ndarray, np.ndarray]],
                    confidence: float = UPPER_CONFIDENCE) -> float:
    """An upper bound of π that holds with probability ``confidence``: for every score
    function and threshold t, q_U(t) ≥ π·q_P(t) (q: the share scoring at least t), and by the
    Dvoretzky–Kiefer–Wolfowitz inequality (Massart's constant) every empirical share is within
    ε = √(log(4m/δ)/(2n)) of its truth at once over all m score functions given and both
    row sets, with probability 1 − δ, so π ≤ min_t (q̂_U(t) + ε_U)/(q̂_P(t) − ε_P) over the
    thresholds where q̂_P(t) > ε_P (Garg et al. 2021, BBE, use the same bound). ``scores``:
    per score function the sorted held-out scores of the labeled positives and of the
    unlabeled rows. Here the scores are cross-fitted: each row's from a fit that did not see
    it, not a separate held-out split, so the bound takes those scores as independent draws.
    1 when no threshold qualifies."""
    if not scores:
        return 1.0
    delta = 1.0 - confidence
    m = len(scores)
    best = 1.0
    for sp_, su in scores:
        p, nu = sp_.size, su.size
        eps_p = math.sqrt(math.log(4 * m / delta) / (2 * p))
        eps_u = math.sqrt(math.log(4 * m / delta) / (2 * nu))
        q_p = (p - np.searchsorted(sp_, sp_, side="left")) / p
        q_u = (nu - np.searchsorted(su, sp_, side="left")) / nu
        ok = q_p > eps_p
        if ok.any():
            best = min(best, float(np.min((q_u[ok] + eps_u) / (q_p[ok] - eps_p))))
    return best


def _auc(sp_, su) -> float:
    """P(a labeled positive outscores an unlabeled row), ties half, from sorted scores."""
    below = np.searchsorted(su, sp_, side="left")
    ties = np.searchsorted(su, sp_, side="right") - below
    return float((below.sum() + 0.5 * ties.sum()) / (sp_.size * su.size))


def _clip(v: float) -> float:
    return float(min(max(v, FLOOR), CEILING))
