"""Semi-supervised linear SVMs on the MFN core: multi-switch TSVM (``tsvm``) and
deterministic-annealing S3VM (``da``) -- Sindhwani & Keerthi (2006).

Conventions (SVMlin's): the bias is a regularised constant feature; the labeled losses are
averaged (cost 1/l each), the unlabeled ones weighted λ_u/u. The objective reported for both
methods is SVMlin's ``transductive_cost``

    1/2 [ λ||w̃||² + 1/l Σ_L max(0, 1 - y o)² + λ_u/u Σ_U max(0, 1 - |o|)² ].
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ssl_svm.solvers import backend as backends
from ssl_svm.solvers import linalg_numpy, s3vm_numpy
from ssl_svm.solvers.errors import ProblemError
from ssl_svm.solvers.linear import Routines, _csr, fit_svm, l2svm_mfn, resolve_lambda
from ssl_svm.solvers.multiclass import class_labels, nth_seed, one_vs_rest
from ssl_svm.solvers.params import DA_LAMBDAS, LOPSIDED, SOLVER_PARAMS

log = logging.getLogger("ssl.solver.s3vm")

TSVM_LAMBDA_SMALL = 1e-5  # SVMlin: the unlabeled weight of the first TSVM round
TSVM_ANNEALING_RATE = 1.5
DA_INIT_TEMP = 10.0  # T0 = 10 λ_u
DA_ANNEALING_RATE = 1.5
DA_INNER_ITERMAX = 100
DA_OUTER_ITERMAX = 30


@dataclass
class S3VMResult:
    """w has length d + 1 (bias weight last); o = X̃w for every training row.

    trace: one entry per retraining, (stage, objective of the MFN problem just solved,
    number of unlabeled rows labeled +1) for tsvm; (temperature, transductive objective) for da.
    """

    w: np.ndarray
    o: np.ndarray
    objective: float
    r: float
    stats: dict = field(default_factory=dict)
    trace: list = field(default_factory=list)
    warm: object = None  # tsvm: (w̃, labels of the unlabeled rows) to seed the next λ


def transductive_cost(w, o, y, lab, unl, lam, lam_u) -> float:
    """SVMlin's objective: 1/2 [λ||w||² + 1/l Σ_L l2(y o) + λ_u/u Σ_U max(0, 1 - |o|)²]."""
    hl = np.maximum(0.0, 1.0 - y[lab] * o[lab])
    hu = np.maximum(0.0, 1.0 - np.abs(o[unl]))
    l, u = lab.size, unl.size
    return 0.5 * (lam * float(w @ w) + float(hl @ hl) / l + (lam_u * float(hu @ hu) / u
                                                              if u else 0.0))


def _split(y):
    lab = np.flatnonzero(y != 0)
    unl = np.flatnonzero(y == 0)
    if lab.size == 0:
        raise ProblemError("no labeled rows")
    if np.all(y[lab] > 0) or np.all(y[lab] < 0):
        raise ProblemError("the labeled rows have one class only")
    return lab, unl


def _prepare(X, y, r, tag):
    """(X as CSR, y as float, labeled rows, unlabeled rows, r) -- r printed."""
    X = _csr(X)
    y = np.asarray(y, dtype=np.float64)
    lab, unl = _split(y)
    return X, y, lab, unl, _positive_fraction(y, lab, r, tag)


def _supervised_only(X, y, lab, unl, lam, lam_u, r, stats, **kw) -> S3VMResult:
    """No unlabeled rows: the first, supervised stage (labeled costs 1/l) is the answer."""
    sup = l2svm_mfn(X[lab], y[lab], np.full(lab.size, 1.0 / lab.size), lam, **kw)
    o = np.asarray(X @ sup.w[:-1]) + kw.get("bias", 1.0) * sup.w[-1]
    return S3VMResult(sup.w, o, transductive_cost(sup.w, o, y, lab, unl, lam, lam_u), r, stats)


def _positive_fraction(y, lab, r, tag=""):
    """r as given, else the labeled rows' positive fraction; printed either way."""
    if r is None:
        r = float(np.mean(y[lab] > 0))
        log.info("%sr = %.6g (the labeled rows' positive fraction; -R sets it)", tag, r)
    else:
        log.info("%sr = %.6g", tag, r)
    return r


# --------------------------------------------------------------------------- TSVM

def kernels(routines: Routines):
    """The per-row steps (:mod:`solvers.s3vm_jit` or :mod:`solvers.s3vm_numpy`) that go with a
    fit's routines: numba's once the fit runs on numba."""
    if routines.numba:
        from ssl_svm.solvers import s3vm_jit

        return s3vm_jit
    return s3vm_numpy


def tsvm_switching(rows, lam_u, S, lam0, res, *, t0, tag):
    """tsvm's switching and λ′ annealing (steps 4 on of :func:`tsvm_binary`) over ``rows``,
    whatever holds them (:class:`_TsvmRows` here, :class:`solvers.distributed.TsvmBlocks` on
    a cluster), from the fit ``res`` at λ′ = ``lam0`` on labels already set: switch up to S
    pairs and retrain seeded until no pair qualifies, then λ′ ← min(1.5 λ′, λ_u); the round at
    λ′ = λ_u is the last. Returns (the last fit, pairs switched, λ′ steps, retrainings
    counting the two before).

    The protocol: ``switch(res, S)`` -> pairs switched; ``retrain(res)`` -> the fit seeded
    from ``res`` at the current labels and costs; ``set_unlabeled_cost(c)`` (each unlabeled
    row's cost c/u); ``objective(res, lam0)`` -> the transductive objective at λ′;
    ``record(lam0, res)`` after each fit."""
    switches = 0
    steps = 0
    retrains = 2
    last = lam0 >= lam_u
    while True:
        steps += 1
        round_switches = 0
        while True:
            s = rows.switch(res, S)
            if s == 0:
                break
            switches += s
            round_switches += s
            res = rows.retrain(res)
            retrains += 1
            rows.record(lam0, res)
        # the first step, every tenth, the last and those that switched pairs are said; the
        # rest (about 30 steps: 30 lines on a 500-row file) only with --verbose
        level = (logging.INFO if steps == 1 or steps % 10 == 0 or last or round_switches
                 else logging.DEBUG)
        if log.isEnabledFor(level):
            log.log(level, "%stsvm: λ_u step %d (λ′ = %.4g): %d pairs switched, objective "
                    "%.10g (%.2f s)", tag, steps, lam0, round_switches,
                    rows.objective(res, lam0), time.perf_counter() - t0)
        if last:
            break
        lam0 = TSVM_ANNEALING_RATE * lam0
        if lam0 >= lam_u:
            lam0 = lam_u
            last = True
        rows.set_unlabeled_cost(lam0)
        res = rows.retrain(res)
        retrains += 1
        rows.record(lam0, res)
    return res, switches, steps, retrains


class _TsvmRows:
    """The rows of a :func:`tsvm_binary` fit in this process, for :func:`tsvm_switching`."""

    def __init__(self, X, y, Y, C, lab, unl, lam, routines, kw):
        self.X, self.y, self.Y, self.C, self.lab, self.unl = X, y, Y, C, lab, unl
        self.lam, self.routines, self.kw = lam, routines, kw
        self.trace = []

    def switch(self, res, S) -> int:
        return int(kernels(self.routines).switch_labels(self.Y, res.o, self.unl, S))

    def retrain(self, res):
        return l2svm_mfn(self.X, self.Y, self.C, self.lam, w0=res.w, o0=res.o, **self.kw)

    def set_unlabeled_cost(self, c) -> None:
        self.C[self.unl] = c / self.unl.size

    def objective(self, res, lam0) -> float:
        return transductive_cost(res.w, res.o, self.y, self.lab, self.unl, self.lam, lam0)

    def record(self, lam0, res) -> None:
        self.trace.append((lam0, res.objective, int(np.sum(self.Y[self.unl] > 0))))


def tsvm_binary(X, y, lam, lam_u, S, r=None, *, bias=1.0, eps=1e-6,
                max_iter=linalg_numpy.MFNITERMAX, tag="", warm=None,
                numpy=False) -> S3VMResult:
    """Multi-switch transductive L2-SVM (Sindhwani & Keerthi 2006): y ∈ {+1, -1} labeled, 0
    unlabeled.

    1. MFN on the labeled rows (cost 1/l). 2. Label the unlabeled rows by their outputs so that
    exactly round(r·u) are positive. 3. λ′ = min(1e-5, λ_u), retrain on all rows from w = 0
    (unlabeled cost λ′/u). 4. Switch up to S pairs and retrain seeded until no pair qualifies;
    then λ′ ← min(1.5 λ′, λ_u); the round at λ′ = λ_u is the last.

    ``warm`` = (w̃, labels of the unlabeled rows) of a solution on the same rows at a nearby
    (larger) λ: steps 1-3 and the λ′ annealing are skipped, the switching starts at λ′ = λ_u
    from that labelling and w̃ (continuation along the λ path plays the annealing's role).
    The result is a local optimum of the same objective, not necessarily the cold start's.
    ``numpy``: begin on numpy (:class:`solvers.linear.Routines`: every retraining of the fit
    shares one budget of work before numba starts).
    """
    t0 = time.perf_counter()
    X, y, lab, unl, r = _prepare(X, y, r, tag)
    l, u = lab.size, unl.size
    routines = Routines(numpy)
    kw = dict(bias=bias, eps=eps, max_iter=max_iter, tag=tag, routines=routines)
    if u == 0:
        return _supervised_only(X, y, lab, unl, lam, lam_u, r,
                                {"switches": 0, "lambda_u_steps": 0, "retrains": 1}, **kw)
    Y = y.copy()
    C = np.empty(y.size)
    C[lab] = 1.0 / l
    if warm is not None and warm[1].size == u:
        Y[unl] = warm[1]
        lam0 = lam_u
        C[unl] = lam0 / u
        res = l2svm_mfn(X, Y, C, lam, w0=warm[0], **kw)
    else:
        sup = l2svm_mfn(X[lab], y[lab], np.full(l, 1.0 / l), lam, **kw)
        o_u = np.asarray(X[unl] @ sup.w[:-1]) + bias * sup.w[-1]
        npos = int(math.floor(r * u + 0.5))  # round half up (Python's round() is half-even)
        order = np.argsort(-o_u, kind="mergesort")  # ties: file order
        Y[unl] = -1.0
        Y[unl[order[:npos]]] = 1.0
        lam0 = min(TSVM_LAMBDA_SMALL, lam_u)
        C[unl] = lam0 / u
        res = l2svm_mfn(X, Y, C, lam, **kw)  # SVMlin restarts from w = 0 here
    rows = _TsvmRows(X, y, Y, C, lab, unl, lam, routines, kw)
    rows.record(lam0, res)
    res, switches, steps, retrains = tsvm_switching(rows, lam_u, S, lam0, res, t0=t0, tag=tag)
    trace = rows.trace
    cost = transductive_cost(res.w, res.o, y, lab, unl, lam, lam_u)
    out = S3VMResult(res.w, res.o, cost, r, {"switches": switches, "lambda_u_steps": steps,
                                            "retrains": retrains}, trace)
    out.warm = (res.w, Y[unl].copy())
    return out


# --------------------------------------------------------------------------- DA

def solve_nu(g, T, r, tol=1e-10, maxiter=500, k=s3vm_numpy):
    """The root ν of mean_j σ((ν - g_j)/T) = r (0 < r < 1): :func:`find_nu` on these g, with
    the balance sums of ``k`` (:mod:`solvers.s3vm_numpy` or :mod:`solvers.s3vm_jit`)."""
    lr = math.log(r) - math.log1p(-r)
    n = g.size

    def balance(nu):
        """(mean p - r, d mean p / dν)."""
        s, ds = k.balance_sums(g, T, nu)
        return s / n - r, ds / (n * T)

    return find_nu(balance, float(np.min(g)) + T * lr, float(np.max(g)) + T * lr,
                   float(np.mean(g)) + T * lr, tol, maxiter)


def find_nu(balance, lo, hi, nu, tol=1e-10, maxiter=500):
    """The root ν of mean_j σ((ν - g_j)/T) = r, given ``balance(ν)`` = (mean p - r,
    d mean p / dν), by Newton's method from ``nu`` safeguarded by the bisection bracket
    [lo, hi] = [min g + T logit r, max g + T logit r], which always holds the root; a Newton
    step that leaves it, or a vanishing derivative, falls back to bisection. Stops when
    |mean p - r| <= tol or the bracket is down to adjacent doubles, and returns the
    best-balanced ν evaluated (when T is tiny against the spacing of doubles near ν, exact
    balance is not representable and this is as close as double precision gets). ``balance``
    may sum over rows held anywhere (a distributed fit's blocks)."""
    best = nu
    best_f = math.inf
    for _ in range(maxiter):
        f, df = balance(nu)
        if abs(f) < best_f:
            best, best_f = nu, abs(f)
        if best_f <= tol:
            break
        if f < 0.0:
            lo = nu
        else:
            hi = nu
        if not (hi > lo):
            break
        step_ok = False
        if df > 0.0:
            cand = nu - f / df
            if lo < cand < hi:
                nu = cand
                step_ok = True
        if not step_ok:
            mid = 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:  # adjacent doubles: try the other end, then stop
                other = hi if nu == lo else lo
                if abs(balance(other)[0]) < best_f:
                    best = other
                break
            nu = mid
    return best


def da_annealing(rows, lam_u, eps, res, *, t0, tag):
    """da's annealing (:func:`da_binary` after its first fit ``res``) over ``rows``, whatever
    holds them (:class:`_DaRows` here, :class:`solvers.distributed.DaBlocks` on a cluster):
    T from 10 λ_u, ÷1.5 per outer round; each inner round a p-step then a w-step seeded from
    the last, until mean KL < eps (or 100 rounds); outer rounds until mean entropy < eps (or
    30). Returns (the kept fit with the lowest transductive objective on the whole path, that
    objective, outer rounds, inner rounds, the largest |mean p - r| of the p-steps).

    The protocol: ``p_step(res, T)`` -> (|mean p - r|, mean KL from the previous p) with the
    new p's costs set; ``retrain(res)`` -> the fit seeded from ``res``; ``objective(res)`` ->
    the transductive objective at λ_u; ``keep(res)`` -> what the result keeps of a fit;
    ``entropy()`` -> mean entropy of the last p; ``record(T, F)`` after each fit."""
    F = rows.objective(res)
    best, best_F = rows.keep(res), F
    T = DA_INIT_TEMP * lam_u
    rows.record(T, F)
    H = 1.0
    outer = 0
    inner_total = 0
    balance = 0.0  # the largest |mean(p) - r| over all p-steps
    while outer < DA_OUTER_ITERMAX and H > eps and T > 0.0:
        outer += 1
        kl = 1.0
        inner = 0
        while inner < DA_INNER_ITERMAX and kl > eps:
            inner += 1
            err, kl = rows.p_step(res, T)
            balance = max(balance, err)
            res = rows.retrain(res)
            F = rows.objective(res)
            rows.record(T, F)
            if F < best_F:
                best, best_F = rows.keep(res), F
        inner_total += inner
        H = rows.entropy()
        log.log(logging.INFO if outer == 1 or outer % 10 == 0 else logging.DEBUG,
                "%sda: T = %.4g: %d rounds, KL %.3g, entropy %.3g, objective %.10g "
                "(best %.10g, %.2f s)", tag, T, inner, kl, H, F, best_F,
                time.perf_counter() - t0)
        T /= DA_ANNEALING_RATE
    return best, best_F, outer, inner_total, balance


class _DaRows:
    """The rows of a :func:`da_binary` fit in this process (each unlabeled row twice, as
    virtual rows), for :func:`da_annealing`."""

    def __init__(self, X, y, Yv, Cv, phys, lab, unl, lam, lam_u, r, p, set_costs, routines,
                 kw):
        self.X, self.y, self.Yv, self.Cv, self.phys = X, y, Yv, Cv, phys
        self.lab, self.unl, self.lam, self.lam_u, self.r = lab, unl, lam, lam_u, r
        self.p, self.set_costs, self.routines, self.kw = p, set_costs, routines, kw
        self.trace = []

    def p_step(self, res, T):
        u = self.unl.size
        q = self.p
        ou = res.o[self.unl]
        hp = np.maximum(0.0, 1.0 - ou)
        hn = np.maximum(0.0, 1.0 + ou)
        g = self.lam_u * (hp * hp - hn * hn)
        k = kernels(self.routines)
        nu = solve_nu(g, T, self.r, k=k)
        self.p = p = k.probabilities(g, T, nu)
        err = abs(float(np.mean(p)) - self.r)
        kl = k.kl_sum(p, q) / u
        self.set_costs(p)
        return err, kl

    def retrain(self, res):
        return l2svm_mfn(self.X, self.Yv, self.Cv, self.lam, w0=res.w, o0=res.o,
                         phys=self.phys, **self.kw)

    def objective(self, res) -> float:
        return transductive_cost(res.w, res.o, self.y, self.lab, self.unl, self.lam,
                                 self.lam_u)

    def keep(self, res):
        return res.w.copy(), res.o.copy()

    def entropy(self) -> float:
        return kernels(self.routines).entropy_sum(self.p) / self.unl.size

    def record(self, T, F) -> None:
        self.trace.append((T, F))


def da_binary(X, y, lam, lam_u, r=None, *, bias=1.0, eps=1e-6,
              max_iter=linalg_numpy.MFNITERMAX, tag="", numpy=False) -> S3VMResult:
    """Deterministic-annealing S3VM (Sindhwani & Keerthi 2006): y ∈ {+1, -1} labeled, 0 unlabeled.

    Alternates the w-step (MFN, each unlabeled row counted with label +1 at cost λ_u p/u and
    label -1 at cost λ_u (1 - p)/u) and the p-step (p_j = σ((ν - g_j)/T), ν balancing
    mean p = r); T starts at 10 λ_u and is divided by 1.5 per outer round; inner rounds stop at
    mean KL < eps (or 100), outer rounds at mean entropy < eps (or 30). Returns the w with the
    lowest transductive objective seen on the whole path. ``numpy`` as in
    :func:`tsvm_binary`.
    """
    t0 = time.perf_counter()
    X, y, lab, unl, r = _prepare(X, y, r, tag)
    l, u = lab.size, unl.size
    routines = Routines(numpy)
    kw = dict(bias=bias, eps=eps, max_iter=max_iter, tag=tag, routines=routines)
    if u == 0:
        return _supervised_only(X, y, lab, unl, lam, lam_u, r,
                                {"temperatures": 0, "inner_rounds": 0}, **kw)
    # virtual rows: the labeled rows, then every unlabeled row twice (label +1, label -1)
    phys = np.concatenate([lab, unl, unl])
    Yv = np.concatenate([y[lab], np.ones(u), -np.ones(u)])
    Cv = np.empty(phys.size)
    Cv[:l] = 1.0 / l
    p = np.full(u, r)

    def set_costs(p):
        Cv[l:l + u] = lam_u * p / u
        Cv[l + u:] = lam_u * (1.0 - p) / u
        # p underflows towards 0 at low T; subnormal costs would make every product that
        # touches them ~100x slower, and their terms are below 1e-200 of the objective
        Cv[Cv < 1e-200] = 0.0

    set_costs(p)
    res = l2svm_mfn(X, Yv, Cv, lam, phys=phys, **kw)
    rows = _DaRows(X, y, Yv, Cv, phys, lab, unl, lam, lam_u, r, p, set_costs, routines, kw)
    best, best_F, outer, inner_total, balance = da_annealing(rows, lam_u, eps, res,
                                                             t0=t0, tag=tag)
    best_w, best_o = best
    trace = rows.trace
    return S3VMResult(best_w, best_o, best_F, r, {"temperatures": outer,
                                                  "inner_rounds": inner_total,
                                                  "balance_error": balance}, trace)


# --------------------------------------------------------------------------- da's λ auto

def lopsided(share: float, r: float) -> bool:
    """Whether a two-class fit that puts a fraction ``share`` of the unlabeled rows in the
    positive class gives either class under 1/:data:`LOPSIDED` of its share r."""
    return share * LOPSIDED < r or (1.0 - share) * LOPSIDED < 1.0 - r


def da_lambda_auto(fit_at, tag: str = ""):
    """da's λ auto for one two-class task: SVMlin's λ = 1, then ÷10 (:data:`DA_LAMBDAS`) while
    the fit is :func:`lopsided`: one class (or nearly) for the unlabeled rows means the
    labeled rows are outweighed (on the SSL book's Text, λ = 1 puts every row in one class,
    0.1 puts 4 % of them in the class of 42 % of the labeled rows, 0.01 separates them). On
    dense rows the first λ is rarely lopsided, and there the annealing wants it.
    ``fit_at(λ)`` -> (result, the positive share of the unlabeled rows, r). Returns (result,
    λ): the first that is not lopsided, else the least lopsided (said)."""
    best = None
    for i, lam in enumerate(DA_LAMBDAS):
        res, share, r = fit_at(lam)
        if not lopsided(share, r):
            log.info("%sda: λ auto = %g (%s whose fit gives each class of the unlabeled rows "
                     "at least 1/%g of its share r: %.1f %% positive against %.1f %%)", tag,
                     lam, "SVMlin's default," if i == 0 else
                     "the first of " + ", ".join(f"{v:g}" for v in DA_LAMBDAS), LOPSIDED,
                     100 * share, 100 * r)
            return res, lam
        balance = min(share / r if r > 0 else 1.0, (1 - share) / (1 - r) if r < 1 else 1.0)
        if best is None or balance > best[0]:
            best = (balance, res, lam)
        log.info("%sda: λ = %g puts %.1f %% of the unlabeled rows in the positive class against "
                 "r = %.1f %%: the labeled rows are outweighed%s", tag, lam, 100 * share,
                 100 * r, f"; trying λ = {DA_LAMBDAS[i + 1]:g}" if i + 1 < len(DA_LAMBDAS)
                 else "")
    log.info("%sda: λ auto = %g, the least lopsided of %s", tag, best[2],
             ", ".join(f"{v:g}" for v in DA_LAMBDAS))
    return best[1], best[2]


# --------------------------------------------------------------------------- registry glue

def _fit(name, solve):
    def fit(X, y, cost, params, warm=None, backend=None):
        """Train; ``warm`` = the ``model.warm`` of a fit on the same rows with another λ
        (tsvm only: see :func:`tsvm_binary`); ``backend`` as :func:`solvers.linear.fit_svm`'s."""
        t0 = time.perf_counter()
        X = _csr(X)
        small = backends.backend(name, X.shape[0], X.nnz, {"backend": backend}).numpy
        given = params
        da_auto = name == "da" and params["lambda"] is None
        lam_auto = None
        if not da_auto:
            params, lam_auto = resolve_lambda(fit_svm, X, y, cost, params, name,
                                              mean_loss=True)
        bias = params["bias"]
        r = params["positive_fraction"]
        if r is not None and len(class_labels(y)) > 2:
            raise ProblemError("-R/--positive-fraction applies to two-class problems; "
                               "one-vs-rest takes each class's labeled fraction")
        u = int(np.sum(y == 0))
        if da_auto and u == 0:  # nothing to outweigh the labeled rows: SVMlin's λ
            da_auto, lam_auto = False, DA_LAMBDAS[0]
            params = {**params, "lambda": lam_auto}
        if u == 0:
            log.warning("no unlabeled rows: %s reduces to svm on the labeled rows (costs 1/l, "
                        "the same solution as -a svm -W %g)", name,
                        params["lambda"] * int(np.sum(y != 0)))
        if cost is not None and np.any(cost != 1.0):
            log.warning("%s does not use per-row cost: factors; they are ignored", name)

        seeds: list = []
        lams: list = []

        def binary(Y, tag):
            w0 = nth_seed(warm, len(seeds))
            if da_auto:
                unl = Y == 0

                def fit_at(lam):
                    res = solve(X, Y, {**params, "lambda": lam}, r, tag, w0, small)
                    return res, float(np.mean(res.o[unl] > 0)), res.r  # u > 0: see above

                res, lam = da_lambda_auto(fit_at, tag)
                lams.append(lam)
            else:
                res = solve(X, Y, params, r, tag, w0, small)
            seeds.append(res.warm)
            stats = {"objective": res.objective, "positive_fraction": res.r, **res.stats}
            log.info("%s%s: transductive objective %.10g, r = %.6g", tag, name, res.objective,
                     res.r)
            return res.w[:-1], bias * res.w[-1], stats

        model = one_vs_rest(name, X, y, binary)
        model.params = {p.name: given[p.name] for p in PARAMS[name]}
        if lam_auto is not None:
            model.stats["lambda"] = [lam_auto]
        if lams:  # da: one per two-class task
            model.stats["lambda"] = lams
        model.stats["n_rows"] = [X.shape[0]]
        model.stats["n_unlabeled"] = [u]
        model.stats["train_time"] = [time.perf_counter() - t0]
        model.warm = seeds
        return model

    return fit


def _tsvm(X, Y, params, r, tag, warm, numpy):
    return tsvm_binary(X, Y, params["lambda"], params["lambda_u"], params["max_switch"], r,
                       bias=params["bias"], eps=params["epsilon"], max_iter=params["max_iter"],
                       tag=tag, warm=warm, numpy=numpy)


def _da(X, Y, params, r, tag, warm, numpy):  # no seeding: DA anneals its own temperature
    return da_binary(X, Y, params["lambda"], params["lambda_u"], r, bias=params["bias"],
                     eps=params["epsilon"], max_iter=params["max_iter"], tag=tag, numpy=numpy)


PARAMS = {name: SOLVER_PARAMS[name] for name in ("tsvm", "da")}
fit_tsvm = _fit("tsvm", _tsvm)
fit_da = _fit("da", _da)
