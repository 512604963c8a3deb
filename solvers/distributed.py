"""rls, svm (L2-SVM-MFN), tsvm and da over rows held in blocks elsewhere (Sindhwani & Keerthi 2006):
the one-process solvers' steps, with every sum over rows taken block by block.

The driver holds only vectors of length d + 1 and scalars; each block (:class:`solvers.blocks.
Block`, in this process or a Dask actor) keeps its rows and their per-row vectors for the whole
fit. ``blocks.call(method, *args)`` runs a method on every block and returns the results in
block order; sums are taken in that order, so a fit on the same blocks gives the same bytes.

Per CG iteration one call: the driver sends the direction p (and the previous step γ, which the
blocks apply to their outputs and residual sums), each block returns X̃_Jᵀ C X̃_J p (MPI-
LIBLINEAR's pattern: one d-vector each way per Hessian-vector product); CGLS and the exact line
search are :mod:`solvers.least_squares`'s, over :class:`BlockSums` (the line search merges the
blocks' breakpoints batch by batch: two or three calls, whatever the number of rows); tsvm's
switching merges each block's best S candidates; tsvm's initial labelling finds the output
threshold by narrowing an interval with candidates the blocks propose; da's ν root is
:func:`solvers.s3vm.find_nu` over summed balances. The iterates are the one-process solver's
up to the order of the sums.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from ssl_svm.solvers import least_squares
from ssl_svm.solvers import linalg_numpy as C0
from ssl_svm.solvers.errors import ProblemError
from ssl_svm.solvers.linear import SVM_FORCING, LinearResult, newton_loop
from ssl_svm.solvers.s3vm import (
    TSVM_LAMBDA_SMALL,
    da_annealing,
    find_nu,
    tsvm_switching,
)

log = logging.getLogger("ssl.solver.distributed")

# candidates each block proposes per narrowing of the threshold's interval: all its values in
# the interval when it has at most this many, so a search usually takes 2-4 calls
CANDIDATES = 256


class LocalBlocks:
    """Blocks in this process (tests, and the reference a distributed fit is compared with)."""

    def __init__(self, blocks, d):
        self.blocks = list(blocks)
        self.d = d

    def call(self, method, *args):
        return [getattr(b, method)(*args) for b in self.blocks]

    def call_each(self, method, args: list):
        return [getattr(b, method)(*a) for b, a in zip(self.blocks, args)]

    def call_one(self, b, method, *args):
        return getattr(self.blocks[b], method)(*args)

    def exchange_then(self, name: str, method: str | None = None, args: list | None = None):
        """Blocks with a halo (:class:`ssl_svm.solvers.graph_blocks.GraphBlock`): every
        block's halo values of vector ``name`` handed to the blocks that hold its rows in their
        halo, as a cluster's hosts exchange them among themselves; then ``method(*args[b])``
        on every block b, whose results are returned (None: nothing)."""
        sends = [b.halo_send(name) for b in self.blocks]
        for o, b in enumerate(self.blocks):
            b.halo_take(name, [sends[s][o] for s in range(len(self.blocks))])
        return None if method is None else self.call_each(method, args)


block_sum = least_squares.part_sum  # Σ of the parts in block order (scalars or arrays)


# --------------------------------------------------------------------------- CGLS

class BlockSums:
    """Problem ``key`` of the blocks as :mod:`solvers.least_squares` sees rows: each call one
    request to every block, its parts in block order."""

    vectors = C0.NumpyVectors

    def __init__(self, blocks, key):
        self.blocks, self.key = blocks, key

    def cg_start(self, precondition: bool) -> list:
        return self.blocks.call("cg_start", self.key, bool(precondition))

    def cg_step(self, gamma, p) -> list:
        return self.blocks.call("cg_step", self.key, gamma, p)

    def cg_residual(self) -> list:
        return self.blocks.call("cg_residual", self.key)

    def line_terms(self, L0, R0) -> list:
        # the regulariser's part first, then each block's from 0
        return [(L0, R0, L0, R0)] + self.blocks.call("line_terms", self.key)

    def line_batch(self, upper: bool, k) -> list:
        none = np.empty(0)
        return [(none, none, none)] + self.blocks.call("line_batch", self.key, bool(upper), k)


def cgls(blocks, key, lam, beta, eps, itermax, precondition, forcing=0.0, direct=None,
         bias=1.0):
    """:func:`solvers.least_squares.cgls` over the blocks' active rows, from β (updated in
    place); the blocks' ō tracks X̃β on their active rows. Returns (converged, iterations).
    With ``direct`` (:class:`solvers.linalg_numpy.DirectSolves`, the fit's), the step is
    solved exactly when it says so, as :meth:`solvers.linear.Routines.cgls` does: the blocks'
    parts of X̃_Jᵀ C X̃_J summed in block order, factored here."""
    if direct is not None:
        if direct.deciding:
            parts = blocks.call("gram_rows", key)
            direct.decide(block_sum([p[0] for p in parts]), block_sum([p[1] for p in parts]),
                          sum(p[2] for p in parts), beta.size)
        if direct.on and _solve(blocks, key, lam, beta, eps, bias):
            return True, 0
        opt, it = cgls(blocks, key, lam, beta, eps, itermax, precondition, forcing)
        direct.cg_done(it)
        return opt, it
    return least_squares.cgls(BlockSums(blocks, key), lam, beta, eps, itermax, precondition,
                              forcing)


def _solve(blocks, key, lam, beta, eps, bias) -> bool:
    """β = the step's exact solution and the blocks' ō = X̃β on J, when it passes CG's residual
    test (else β stays, for CG; and with no active row, CG's own answer)."""
    parts = blocks.call("gram", key)
    rows = sum(p[2] for p in parts)
    if rows == 0:
        return False
    H = block_sum([p[0] for p in parts])
    H[np.diag_indices_from(H)] += lam
    x = C0.solve_spd(H, block_sum([p[1] for p in parts]))
    if x is None:
        return False
    parts = blocks.call("direct_check", key, x, rows)
    gg, zz, ff = C0.gradient_finish(block_sum([p[0] for p in parts]),
                                    block_sum([p[1] for p in parts]),
                                    block_sum([p[2] for p in parts]), rows, bias, lam, x)
    if gg <= eps * eps * zz or gg <= ff:
        beta[:] = x
        return True
    return False


# --------------------------------------------------------------------------- MFN

class BlockRows:
    """Problem ``key`` of the blocks as :func:`solvers.linear.newton_loop` uses rows: each
    call one request to every block, the parts summed in block order."""

    def __init__(self, blocks, key, lam, bias, eps, precondition, direct):
        self.blocks, self.key, self.lam, self.bias, self.eps = blocks, key, lam, bias, eps
        self.precondition, self.direct = precondition, direct

    def _kkt(self, which, w, n_rows) -> bool:
        parts = self.blocks.call("gradient", self.key, which, w, n_rows)
        gg, zz, ff = C0.gradient_finish(block_sum([p[0] for p in parts]),
                                        block_sum([p[1] for p in parts]),
                                        block_sum([p[2] for p in parts]), n_rows, self.bias,
                                        self.lam, w)
        return gg <= self.eps * self.eps * zz or gg <= ff

    def active(self):
        parts = self.blocks.call("active", self.key)
        return block_sum([p[0] for p in parts]), sum(p[1] for p in parts)

    def sq_norm(self, w) -> float:
        return float(w @ w)

    def newton_point(self, w_bar, eps_cur, cgmax, forcing):
        opt, cg_it = cgls(self.blocks, self.key, self.lam, w_bar, eps_cur, cgmax,
                          self.precondition, forcing, self.direct, self.bias)
        return opt, cg_it, all(self.blocks.call("finish_bar", self.key, w_bar, eps_cur))

    def exact_bar(self, w_bar):
        parts = self.blocks.call("exact_bar", self.key, w_bar)
        n_rows = sum(p[1] for p in parts)
        return block_sum([p[0] for p in parts]), n_rows, self._kkt("bar", w_bar, n_rows)

    def accept_bar(self):
        self.blocks.call("accept_bar", self.key)

    def line_search(self, w, w_bar) -> float:
        return least_squares.line_search(BlockSums(self.blocks, self.key), self.lam, w, w_bar)

    def move(self, delta):
        parts = self.blocks.call("move", self.key, delta)
        return block_sum([p[0] for p in parts]), sum(p[1] for p in parts)

    def recompute(self, w):
        parts = self.blocks.call("recompute", self.key, w)
        loss, n_rows = block_sum([p[0] for p in parts]), sum(p[1] for p in parts)
        return loss, n_rows, self._kkt("o", w, n_rows), all(p[2] for p in parts)


def mfn(blocks, key, lam, *, bias, eps=1e-6, max_iter=C0.MFNITERMAX, w0=None,
        keep_outputs=False, tag="", precondition=True, forcing=0.0,
        direct=None) -> LinearResult:
    """:func:`solvers.linear.l2svm_mfn` on problem ``key`` of the blocks
    (:func:`solvers.linear.newton_loop` over :class:`BlockRows`): w0 seeds w (the blocks'
    outputs o are computed from it, or kept as they are with ``keep_outputs``: a switching or
    annealing step whose o is X̃w0 already). The result's o is None (the outputs stay on the
    blocks). ``direct``: the fit's :class:`solvers.linalg_numpy.DirectSolves` (a new one when
    None), as :func:`solvers.linear.l2svm_mfn`'s routines hold it."""
    if direct is None:
        direct = C0.DirectSolves()
    cold = w0 is None
    w = np.zeros(blocks.d + 1) if cold else np.array(w0, dtype=np.float64)
    if not keep_outputs:
        blocks.call("outputs_of", key, w)
    rows = BlockRows(blocks, key, lam, bias, eps, precondition, direct)
    w, F, it, cg_total, converged, reason = newton_loop(
        rows, lam, w, cold=cold, eps=eps, max_iter=max_iter, forcing=forcing, tag=tag)
    return LinearResult(w, None, F, it, cg_total, converged, reason)


def rls(blocks, key, lam, *, bias, eps=1e-6, max_iter=C0.CGITERMAX, w0=None,
        precondition=True) -> LinearResult:
    """:func:`solvers.linear.rls_cgls` over the blocks: one CGLS solve on every row."""
    n = blocks.d + 1
    w = np.zeros(n) if w0 is None else np.array(w0, dtype=np.float64)
    blocks.call("outputs_of", key, w)
    blocks.call("all_active", key)
    opt, it = cgls(blocks, key, lam, w, eps, max_iter, precondition)
    loss = block_sum(blocks.call("squared_loss", key, w))
    F = 0.5 * lam * float(w @ w) + loss
    return LinearResult(w, None, float(F), it, it, bool(opt),
                        "optimal" if opt else "iteration limit")


# --------------------------------------------------------------------------- tsvm and da

def _transductive_cost(blocks, key, w, l, u, lam, lam_u) -> float:
    parts = blocks.call("transductive_parts", key)
    hl = block_sum([p[0] for p in parts])
    hu = block_sum([p[1] for p in parts])
    return 0.5 * (lam * float(w @ w) + hl / l + (lam_u * hu / u if u else 0.0))


def _label_top(blocks, key, npos) -> int:
    """Label +1 the npos unlabeled rows of largest supervised output (ties: row order), the
    rest -1: the threshold t is found by narrowing (t, the npos-th largest output)."""
    parts = [p for p in blocks.call("values_between", -math.inf, math.inf, CANDIDATES)]
    cands = np.unique(np.concatenate(parts))
    while True:
        cnt = blocks.call("count_above", cands)
        gt = block_sum([c[0] for c in cnt])  # rows with o > t
        ge = block_sum([c[1] for c in cnt])  # rows with o >= t
        # the threshold is the largest candidate t with #(o >= t) >= npos
        ok = np.flatnonzero(ge >= npos)
        if ok.size == 0:  # npos = 0 (or every candidate above): all rows -1
            t = math.inf
            break
        j = int(ok[-1])
        t = float(cands[j])
        hi = float(cands[j + 1]) if j + 1 < cands.size else math.inf
        between = blocks.call("values_between", t, hi, CANDIDATES)
        if sum(b.size for b in between) == 0 and gt[j] <= npos:
            break
        cands = np.unique(np.concatenate([[t]] + between))
    if t == math.inf:
        blocks.call("label_top", key, math.inf, 0)
        return 0
    # rows above t all positive; of those equal to t, the first ones in row order
    ties = npos - int(gt[j])
    eq = [int(c[1][0] - c[0][0]) for c in blocks.call("count_above", [t])]
    total = 0
    for b, e in enumerate(eq):
        take = min(e, ties)
        ties -= take
        total += blocks.call_one(b, "label_top", key, t, take)
    return total


def _switch(blocks, key, S) -> int:
    """SVMlin's multiple switching (:func:`solvers.s3vm.switch_labels`) over the blocks: each
    proposes its S best candidates of each side; the merged lists (ties in row order) give the
    pairs. Returns the pairs switched."""
    parts = blocks.call("switch_candidates", key, S)
    pos_o = np.concatenate([p[0] for p in parts])
    neg_o = np.concatenate([p[1] for p in parts])
    pos_b = np.concatenate([np.full(p[0].size, b) for b, p in enumerate(parts)])
    neg_b = np.concatenate([np.full(p[1].size, b) for b, p in enumerate(parts)])
    # stable sorts: equal outputs keep block order, and within a block row order
    po = np.argsort(pos_o, kind="mergesort")
    no = np.argsort(-neg_o, kind="mergesort")
    s = 0
    while s < S and s < po.size and s < no.size and pos_o[po[s]] < neg_o[no[s]]:
        s += 1
    if s == 0:
        return 0
    n_pos = np.bincount(pos_b[po[:s]], minlength=len(parts))
    n_neg = np.bincount(neg_b[no[:s]], minlength=len(parts))
    for b in range(len(parts)):
        if n_pos[b] or n_neg[b]:
            blocks.call_one(b, "switch_apply", key, int(n_pos[b]), int(n_neg[b]))
    return s


class TsvmBlocks:
    """The blocks' problem "all" as :func:`solvers.s3vm.tsvm_switching` uses rows."""

    def __init__(self, blocks, lam, l, u, kw):
        self.blocks, self.lam, self.l, self.u, self.kw = blocks, lam, l, u, kw

    def switch(self, res, S) -> int:
        return _switch(self.blocks, "all", S)

    def retrain(self, res):
        return mfn(self.blocks, "all", self.lam, w0=res.w, keep_outputs=True, **self.kw)

    def set_unlabeled_cost(self, c) -> None:
        self.blocks.call("set_unlabeled_cost", "all", c / self.u)

    def objective(self, res, lam0) -> float:
        return _transductive_cost(self.blocks, "all", res.w, self.l, self.u, self.lam, lam0)

    def record(self, lam0, res) -> None:
        pass


def tsvm(blocks, counts, lam, lam_u, S, r, *, bias, eps=1e-6, max_iter=C0.MFNITERMAX,
         tag=""):
    """:func:`solvers.s3vm.tsvm_binary` over the blocks (the task set by ``set_task``;
    ``counts`` its labeled, positive and unlabeled rows). Returns (w, objective, stats)."""
    t0 = time.perf_counter()
    l, u = counts["labeled"], counts["unlabeled"]
    kw = dict(bias=bias, eps=eps, max_iter=max_iter, tag=tag, direct=C0.DirectSolves())
    blocks.call("problem_supervised", "sup", 1.0, 1.0, False, 1.0 / l)
    sup = mfn(blocks, "sup", lam, **kw)
    if u == 0:
        blocks.call("problem_transductive", "all", 1.0 / l)
        blocks.call("outputs_of", "all", sup.w)
        cost = _transductive_cost(blocks, "all", sup.w, l, u, lam, lam_u)
        return sup.w, cost, {"switches": 0, "lambda_u_steps": 0, "retrains": 1}
    blocks.call("unlabeled_outputs", sup.w)
    blocks.call("problem_transductive", "all", 1.0 / l)
    npos = int(math.floor(r * u + 0.5))
    _label_top(blocks, "all", npos)
    lam0 = min(TSVM_LAMBDA_SMALL, lam_u)
    blocks.call("set_unlabeled_cost", "all", lam0 / u)
    res = mfn(blocks, "all", lam, **kw)
    rows = TsvmBlocks(blocks, lam, l, u, kw)
    res, switches, steps, retrains = tsvm_switching(rows, lam_u, S, lam0, res, t0=t0, tag=tag)
    cost = _transductive_cost(blocks, "all", res.w, l, u, lam, lam_u)
    return res.w, cost, {"switches": switches, "lambda_u_steps": steps, "retrains": retrains}


class DaBlocks:
    """The blocks' virtual problem "v" as :func:`solvers.s3vm.da_annealing` uses rows: the
    p-step's ν is :func:`solvers.s3vm.find_nu` over the blocks' summed balances."""

    def __init__(self, blocks, lam, lam_u, r, l, u, kw):
        self.blocks, self.lam, self.lam_u, self.r, self.l, self.u = blocks, lam, lam_u, r, l, u
        self.kw = kw
        self.lr = math.log(r) - math.log1p(-r)
        self.H = 1.0

    def p_step(self, res, T):
        blocks, u, r, lr = self.blocks, self.u, self.r, self.lr
        g = blocks.call("da_scores", "v", self.lam_u)
        gmin = min(x[0] for x in g)
        gmax = max(x[1] for x in g)
        gmean = block_sum([x[2] for x in g]) / u

        def balance_at(nu):
            parts = blocks.call("da_balance", T, nu)
            s = block_sum([p[0] for p in parts])
            ds = block_sum([p[1] for p in parts])
            return s / u - r, ds / (u * T)

        nu = find_nu(balance_at, gmin + T * lr, gmax + T * lr, gmean + T * lr)
        parts = blocks.call("da_probabilities", T, nu)
        err = abs(block_sum([p[0] for p in parts]) / u - r)
        kl = block_sum([p[1] for p in parts]) / u
        self.H = block_sum([p[2] for p in parts]) / u
        blocks.call("da_costs", "v", self.lam_u, u)
        return err, kl

    def retrain(self, res):
        return mfn(self.blocks, "v", self.lam, w0=res.w, keep_outputs=True, **self.kw)

    def objective(self, res) -> float:
        return _transductive_cost(self.blocks, "v", res.w, self.l, self.u, self.lam,
                                  self.lam_u)

    def keep(self, res):
        return res.w.copy()

    def entropy(self) -> float:
        return self.H

    def record(self, T, F) -> None:
        pass


def da(blocks, counts, lam, lam_u, r, *, bias, eps=1e-6, max_iter=C0.MFNITERMAX, tag=""):
    """:func:`solvers.s3vm.da_binary` over the blocks. Returns (w, objective, stats)."""
    t0 = time.perf_counter()
    l, u = counts["labeled"], counts["unlabeled"]
    kw = dict(bias=bias, eps=eps, max_iter=max_iter, tag=tag, direct=C0.DirectSolves())
    if u == 0:
        blocks.call("problem_supervised", "sup", 1.0, 1.0, False, 1.0 / l)
        sup = mfn(blocks, "sup", lam, **kw)
        blocks.call("problem_transductive", "all", 1.0 / l)
        blocks.call("outputs_of", "all", sup.w)
        cost = _transductive_cost(blocks, "all", sup.w, l, u, lam, lam_u)
        return sup.w, cost, {"temperatures": 0, "inner_rounds": 0}
    blocks.call("problem_virtual", "v", 1.0 / l)
    blocks.call("da_costs", "v", lam_u, u, r)
    res = mfn(blocks, "v", lam, **kw)
    rows = DaBlocks(blocks, lam, lam_u, r, l, u, kw)
    best_w, best_F, outer, inner_total, balance = da_annealing(rows, lam_u, eps, res,
                                                               t0=t0, tag=tag)
    return best_w, best_F, {"temperatures": outer, "inner_rounds": inner_total,
                            "balance_error": balance}


def svm(blocks, counts, params, use_cost, tag=""):
    """svm (L2-SVM-MFN with SVM_FORCING) on the labeled rows in view."""
    blocks.call("problem_supervised", "sup", params["cost_positive"], params["cost_negative"],
                use_cost, None)
    return mfn(blocks, "sup", params["lambda"], bias=params["bias"], eps=params["epsilon"],
               max_iter=params["max_iter"], tag=tag, forcing=SVM_FORCING)


def rls_fit(blocks, counts, params, use_cost, tag=""):
    blocks.call("problem_supervised", "sup", params["cost_positive"], params["cost_negative"],
                use_cost, None)
    return rls(blocks, "sup", params["lambda"], bias=params["bias"], eps=params["epsilon"],
               max_iter=params["max_iter"])


def check_task(counts, name):
    """The one-process solvers' errors for a task's counts."""
    if counts["labeled"] == 0:
        raise ProblemError("no labeled rows")
    if counts["positive"] in (0, counts["labeled"]):
        raise ProblemError(f"{name}: the labeled rows have one class only")


# --------------------------------------------------------------------------- models

def _labeled_sample(blocks, d):
    """(X, y, cost) of the labeled rows in view :func:`solvers.linear.lambda_sample` picks,
    gathered here in row order, and the number of labeled rows."""
    import scipy.sparse as sp

    from ssl_svm.solvers.linear import lambda_sample

    per_block = blocks.call("labeled_in_view")
    sizes = [p.size for p in per_block]
    n_lab = sum(sizes)
    pick = lambda_sample(n_lab)
    starts = np.cumsum([0] + sizes)
    Xs, ys, cs = [], [], []
    for b, rows in enumerate(per_block):
        mine = pick[(pick >= starts[b]) & (pick < starts[b + 1])] - starts[b]
        if mine.size:
            X, y, c = blocks.call_one(b, "labeled_rows", rows[mine])
            Xs.append(X)
            ys.append(y)
            cs.append(c)
    X = sp.vstack(Xs, format="csr") if Xs else sp.csr_matrix((0, d))
    return X, np.concatenate(ys), np.concatenate(cs), n_lab


def fit_model(blocks, name: str, labels: list[int], params: dict, *, costs: bool = True):
    """Train ``name`` (rls, svm, tsvm, da) on the rows in view of the blocks, two-class or
    one-vs-rest over ``labels`` (the internal class labels), as the one-process
    ``fit_<name>`` does: λ auto cross-validated on the labeled rows (gathered here; a sample of
    :data:`solvers.linear.LAMBDA_ROWS` beyond that many), the same stats and messages.
    ``costs``: some row has a ``cost:`` factor other than 1. Returns the Model."""
    from ssl_svm.solvers import linear, s3vm
    from ssl_svm.solvers.multiclass import one_vs_rest_tasks

    t0 = time.perf_counter()
    d = blocks.d
    given = params
    semi = name in ("tsvm", "da")
    lam_auto = None
    da_auto = name == "da" and params["lambda"] is None
    lams = []
    if params["lambda"] is None and not da_auto:
        Xl, yl, cl, n_lab = _labeled_sample(blocks, d)
        fit = linear.fit_rls if name == "rls" else linear.fit_svm
        params, lam_auto = linear.resolve_lambda(
            fit, Xl, yl, cl, params, name, mean_loss=semi,
            sampled_from=n_lab if n_lab > linear.LAMBDA_ROWS else None)
    bias = params["bias"]
    r_given = params.get("positive_fraction")
    if semi and r_given is not None and len(labels) > 2:
        raise ProblemError("-R/--positive-fraction applies to two-class problems; "
                           "one-vs-rest takes each class's labeled fraction")
    if semi and costs:
        log.warning("%s does not use per-row cost: factors; they are ignored", name)
    said = []

    def binary(pos, tag):
        parts = blocks.call("set_task", pos, bias)
        counts = {k: sum(p[k] for p in parts) for k in parts[0]}
        if not semi:
            fn = svm if name == "svm" else rls_fit
            res = fn(blocks, counts, params, True, tag)
            if not res.converged:
                log.warning("%s%s stopped before converging after %d iterations (%s)",
                            tag, name, res.iterations, res.reason)
            else:
                log.info("%s%s: objective %.10g after %d iterations (%d CG iterations; %s)",
                         tag, name, res.objective, res.iterations, res.cg_iterations,
                         res.reason)
            return res.w[:-1], bias * res.w[-1], {"objective": res.objective,
                                                  "iterations": res.iterations,
                                                  "cg_iterations": res.cg_iterations}
        check_task(counts, name)
        if counts["unlabeled"] == 0 and not said:
            said.append(True)
            log.warning("no unlabeled rows: %s reduces to svm on the labeled rows (costs 1/l, "
                        "the same solution as -a svm -W %g)", name,
                        (params["lambda"] or s3vm.DA_LAMBDAS[0]) * counts["labeled"])
        r = r_given
        if r is None:
            r = counts["positive"] / counts["labeled"]
            log.info("%sr = %.6g (the labeled rows' positive fraction; -R sets it)", tag, r)
        else:
            log.info("%sr = %.6g", tag, r)
        if name == "tsvm":
            w, obj, st = tsvm(blocks, counts, params["lambda"], params["lambda_u"],
                              params["max_switch"], r, bias=bias, eps=params["epsilon"],
                              max_iter=params["max_iter"], tag=tag)
        elif da_auto and counts["unlabeled"]:
            def fit_at(lam):
                out = da(blocks, counts, lam, params["lambda_u"], r, bias=bias,
                         eps=params["epsilon"], max_iter=params["max_iter"], tag=tag)
                blocks.call("unlabeled_outputs", out[0])
                above = sum(int(c[0][0]) for c in blocks.call("count_above", [0.0]))
                return out, above / counts["unlabeled"], r

            (w, obj, st), lam = s3vm.da_lambda_auto(fit_at, tag)
            lams.append(lam)
        else:
            lam = params["lambda"] or s3vm.DA_LAMBDAS[0]
            if da_auto:  # no unlabeled rows: nothing to outweigh the labeled ones
                lams.append(lam)
            w, obj, st = da(blocks, counts, lam, params["lambda_u"], r, bias=bias,
                            eps=params["epsilon"], max_iter=params["max_iter"], tag=tag)
        log.info("%s%s: transductive objective %.10g, r = %.6g", tag, name, obj, r)
        return w[:-1], bias * w[-1], {"objective": obj, "positive_fraction": r, **st}

    model = one_vs_rest_tasks(name, labels, d, binary)
    declared = (s3vm.PARAMS if semi else linear.PARAMS)[name]
    model.params = {p.name: given[p.name] for p in declared}
    if lam_auto is not None:
        model.stats["lambda"] = [lam_auto]
    if lams:  # da: one per two-class task
        model.stats["lambda"] = lams
    rows = sum(blocks.call("rows_in_view"))
    unl = sum(blocks.call("unlabeled_in_view"))
    model.stats["n_rows"] = [rows if semi else rows - unl]
    if semi:
        model.stats["n_unlabeled"] = [unl]
    model.stats["train_time"] = [time.perf_counter() - t0]
    return model
