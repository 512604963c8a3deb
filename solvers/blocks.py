"""The rows of a distributed linear fit: one :class:`Block` per process, holding its CSR rows
and every per-row vector of the fit (targets, costs, outputs, active sets, CG's vectors).

The driver (:mod:`solvers.distributed`) runs L2-SVM-MFN, CGLS, tsvm's switching and da's
annealing over any number of blocks; each method here does one step's row work on this block
and returns what the driver sums: vectors of length d + 1 and scalars, never per-row data.
Row work uses :mod:`solvers.linalg`'s kernels, so a block computes what the one-process solver
computes on the same rows. Nothing here knows of Dask: the driver calls a block in this process
(tests) or as a Dask actor (:mod:`ssl_svm.cluster`).

Conventions are :mod:`solvers.linalg`'s: x̃ = [x, bias], weights of length d + 1; y holds the
labels in the internal codes (0 = unlabeled); a fit's "view" is the rows it trains on (all, or
all but a cross-validation fold's).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ssl_svm.solvers import least_squares, s3vm_jit
from ssl_svm.solvers import linalg as la
from ssl_svm.solvers import linalg_numpy as C0


class _Problem:
    """One MFN/CGLS problem on a block: rows of X (arrays of a CSR matrix), per-row targets Y
    and costs C, or virtual rows (row phys[v] with target Y[v] and cost C[v]: da)."""

    def __init__(self, X, Y, C, phys=None):
        self.X = X
        self.a = (X.indptr, X.indices, X.data)
        self.Y = Y
        self.C = C
        self.phys = phys
        m = X.shape[0]
        self.m = m
        self.o = np.zeros(m)
        self.ob = np.zeros(m)
        self.J = self.J_old = np.empty(0, np.int64)

    def active(self, o):
        if self.phys is None:
            J, I, loss = la.split_active(self.Y, o, self.C)
            return J, I, loss, self.Y, self.C, None
        return la.split_virtual(self.Y, self.C, self.phys, o, self.m)

    def virtual(self, o):
        return o if self.phys is None else o[self.phys]


class BlockRows:
    """Rows ``first_row``... of the training data (X CSR, y labels in internal codes, 0 =
    unlabeled, cost factors): what every type of block holds and how the client reads it."""

    def __init__(self, X, y, cost, first_row: int = 0, threads: int = 1):
        self.X = sp.csr_matrix(X)
        self.y = np.asarray(y, dtype=np.float64)
        self.cost = np.asarray(cost, dtype=np.float64)
        self.first_row = first_row
        self.threads = max(1, int(threads))

    def _changed(self) -> None:
        """Called when the rows or labels change."""

    def summary(self) -> dict:
        """Rows, stored values, columns used, and each label's row count."""
        labels, counts = np.unique(self.y, return_counts=True)
        return {"rows": int(self.y.size), "nnz": int(self.X.nnz), "width": int(self.X.shape[1]),
                "labels": dict(zip(labels.tolist(), counts.tolist()))}

    def widen(self, d: int) -> None:
        """Make X exactly d columns wide (the widest block's width)."""
        X = self.X
        self.X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], d))
        self._changed()

    def relabel(self, mapping: dict) -> None:
        """Labels as the client's internal codes: y ← mapping[y] for each label given."""
        y = self.y.copy()
        for a, b in mapping.items():
            y[self.y == a] = b
        self.y = y
        self._changed()

    def predict_rows(self, W, b, rows) -> np.ndarray:
        """Decision values (rows × functions) of a linear model at the block's local rows
        ``rows``."""
        X = self.X[np.asarray(rows, dtype=np.int64)]
        return np.asarray(X @ W) + b

    def unlabeled_rows(self) -> np.ndarray:
        """The block's unlabeled rows (local indices)."""
        return np.flatnonzero(self.y == 0)


class Block(BlockRows):
    """Rows ``first_row``... of the training data (X CSR, y labels in internal codes, 0 =
    unlabeled, cost factors) and the state of the linear fit running on them."""

    def __init__(self, X, y, cost, first_row: int = 0, threads: int = 1):
        super().__init__(X, y, cost, first_row, threads)
        self.p: dict[str, _Problem] = {}
        self.bias = 1.0
        self.pos = 1.0
        self.set_view(None)

    def _changed(self) -> None:
        self.set_view(None)

    # ----------------------------------------------------------------- the data

    def set_view(self, held_out) -> int:
        """Train on every row but the local rows ``held_out`` (a cross-validation fold; None:
        every row). Clears the problems. Returns the rows in view."""
        self.view = np.ones(self.y.size, bool)
        if held_out is not None:
            self.view[np.asarray(held_out, dtype=np.int64)] = False
        self.Xv = self.X if self.view.all() else self.X[self.view]
        self.yv = self.y[self.view]
        self.costv = self.cost[self.view]
        self.p = {}
        return int(self.view.sum())

    def rows_in_view(self) -> int:
        return int(self.yv.size)

    def unlabeled_in_view(self) -> int:
        return int(np.sum(self.yv == 0))

    def labeled_in_view(self) -> np.ndarray:
        """The labeled rows in view (positions in the view, ascending)."""
        return np.flatnonzero(self.yv != 0)

    def labeled_rows(self, rows) -> tuple:
        """(X, y, cost) of the rows ``rows`` (positions in the view): a sample the driver
        cross-validates λ on."""
        rows = np.asarray(rows, dtype=np.int64)
        return self.Xv[rows], self.yv[rows], self.costv[rows]

    def set_task(self, pos: float, bias: float) -> dict:
        """Targets of the binary task whose positive class is ``pos`` (one-vs-rest): Y = +1,
        -1, 0 unlabeled, over the rows in view. Returns the counts (labeled, positive,
        unlabeled)."""
        y = self.yv
        self.pos = pos
        self.bias = float(bias)
        self.Yt = np.where(y == 0, 0.0, np.where(y == pos, 1.0, -1.0))
        self.lab = np.flatnonzero(self.Yt != 0)
        self.unl = np.flatnonzero(self.Yt == 0)
        self.p = {}
        return {"labeled": int(self.lab.size), "positive": int(np.sum(self.Yt > 0)),
                "unlabeled": int(self.unl.size)}

    # ----------------------------------------------------------------- problems

    def problem_supervised(self, key, cp, cn, use_cost, cost_all=None):
        """The supervised problem (svm, rls) on the labeled rows in view: C = Cp or Cn by
        class (× the row's cost factor with ``use_cost``); or, ``cost_all`` given, every
        labeled row at that cost (tsvm's and da's first stage, 1/l)."""
        rows = self.lab
        X = self.Xv if rows.size == self.Yt.size else self.Xv[rows]
        Y = np.ascontiguousarray(self.Yt[rows])
        if cost_all is not None:
            C = np.full(rows.size, float(cost_all))
        else:
            C = np.where(Y > 0, cp, cn).astype(np.float64)
            if use_cost:
                C = C * self.costv[rows]
        self.p[key] = _Problem(X, Y, C)

    def problem_transductive(self, key, cost_lab):
        """tsvm's problem on all rows in view: labeled rows at ``cost_lab``; the unlabeled
        rows' labels and cost are set by :meth:`label_top` and :meth:`set_unlabeled_cost`."""
        Y = self.Yt.copy()
        C = np.empty(Y.size)
        C[self.lab] = cost_lab
        self.p[key] = _Problem(self.Xv, Y, C)

    def problem_virtual(self, key, cost_lab):
        """da's problem: virtual rows = the labeled rows, then every unlabeled row twice (label
        +1, label -1), their costs set by :meth:`da_costs`."""
        lab, unl = self.lab, self.unl
        phys = np.concatenate([lab, unl, unl])
        Yv = np.concatenate([self.Yt[lab], np.ones(unl.size), -np.ones(unl.size)])
        Cv = np.empty(phys.size)
        Cv[:lab.size] = cost_lab
        self.p[key] = _Problem(self.Xv, Yv, Cv, phys)

    def outputs_of(self, key, w) -> None:
        """o = X̃w on every row of the problem (a warm start)."""
        P = self.p[key]
        la.outputs(*P.a, self.bias, w, np.arange(P.m), P.o)

    def unlabeled_outputs(self, w) -> tuple:
        """The unlabeled rows' outputs X̃_U w, kept for :meth:`label_top`; returns their
        (min, max) (the bracket of the threshold search)."""
        Xv = self.Xv
        tmp = np.empty(Xv.shape[0])
        la.outputs(Xv.indptr, Xv.indices, Xv.data, self.bias, w, self.unl, tmp)
        self.ou = tmp[self.unl]
        self.ou_sorted = np.sort(self.ou)
        if self.ou.size == 0:
            return math.inf, -math.inf
        return float(self.ou_sorted[0]), float(self.ou_sorted[-1])

    def count_above(self, ts) -> tuple:
        """For each t in ts: (unlabeled rows with o_u > t, with o_u >= t)."""
        s = self.ou_sorted
        ts = np.asarray(ts, dtype=np.float64)
        return (s.size - np.searchsorted(s, ts, "right"), s.size - np.searchsorted(s, ts, "left"))

    def values_between(self, lo, hi, k) -> np.ndarray:
        """The block's o_u values in (lo, hi): all of them if at most k, else k spread evenly."""
        s = self.ou_sorted
        a = np.searchsorted(s, lo, "right")
        b = np.searchsorted(s, hi, "left")
        return _spread(s[a:b], k)

    def label_top(self, key, t, ties) -> int:
        """Unlabeled rows with o_u > t, and the first ``ties`` (in row order) with o_u == t,
        labeled +1, the rest -1. Returns the rows labeled +1."""
        P = self.p[key]
        pos = self.ou > t
        eq = np.flatnonzero(self.ou == t)[:max(0, int(ties))]
        pos[eq] = True
        P.Y[self.unl] = np.where(pos, 1.0, -1.0)
        return int(pos.sum())

    def set_unlabeled_cost(self, key, c) -> None:
        self.p[key].C[self.unl] = c

    def positives(self, key) -> int:
        """Unlabeled rows labeled +1 (tsvm)."""
        return int(np.sum(self.p[key].Y[self.unl] > 0))

    # ----------------------------------------------------------------- MFN steps

    def active(self, key) -> tuple:
        """The active set at o: returns (its loss, |J|)."""
        P = self.p[key]
        P.J, P.I, P.loss, P.Ye, P.Ce, P.act = P.active(P.o)
        return P.loss, int(P.J.size)

    def cg_start(self, key, precondition: bool) -> tuple:
        """CGLS's start at ō = o on the active rows (:class:`solvers.linalg.KernelRows`):
        (|J|, diag(X̃_Jᵀ C X̃_J) or None, X̃_Jᵀ z, ‖z‖²) with z = C(Y - ō) on J."""
        P = self.p[key]
        P.ob[:] = P.o
        P.cg = la.KernelRows(*P.a, self.bias, P.Ye, P.Ce, P.J, P.ob, self.Xv.shape[1] + 1,
                             self.threads)
        return P.cg.cg_start(precondition)[0]

    def gram_rows(self, key) -> tuple:
        """(Σ (m_i + 1)(m_i + 2)/2, Σ m_i, |J|) over the active rows (the exact solve's work)."""
        P = self.p[key]
        pairs, values = C0.row_pairs(P.a[0], P.J)
        return pairs, values, int(P.J.size)

    def gram(self, key) -> tuple:
        """This block's part of the exact step's system: (X̃_Jᵀ C X̃_J, X̃_Jᵀ C Y_J, |J|)."""
        P = self.p[key]
        H, b = la.gram_system(*P.a, self.bias, P.Ye, P.Ce, P.J, 0.0, self.Xv.shape[1])
        return H, b, int(P.J.size)

    def direct_check(self, key, beta, n_rows) -> tuple:
        """ō = X̃β on the active rows, then :func:`solvers.linalg.gradient_parts` there (the
        exact solve's residual test)."""
        P = self.p[key]
        P.ob[:] = P.o
        la.outputs(*P.a, self.bias, beta, P.J, P.ob)
        return la.gradient_parts(*P.a, self.bias, P.Ye, P.Ce, P.J, beta, P.ob,
                                 math.sqrt(n_rows + 1.0))

    def cg_step(self, key, gamma, p) -> tuple:
        """Apply the step γ of the last product (ō_J += γq, z -= γCq; none when γ is None),
        then the next product for direction p: returns (‖z‖² after the step or None,
        X̃_Jᵀ C X̃_J p, Σ C q²)."""
        return self.p[key].cg.cg_step(gamma, p)[0]  # summed before the next step reuses t

    def cg_residual(self, key) -> tuple:
        """(X̃_Jᵀ z, ‖z‖²) from z itself (CGLS's stopping test)."""
        return self.p[key].cg.cg_residual()[0]

    def finish_bar(self, key, w_bar, eps) -> bool:
        """ō on the inactive rows from w̄; True when the margins agree with the active set."""
        P = self.p[key]
        la.outputs(*P.a, self.bias, w_bar, P.I, P.ob)
        if P.phys is None:
            return bool(la.margins_agree(P.Y, P.ob, P.J, P.I, eps))
        return bool(la.margins_agree_virtual(P.Y, P.phys, P.ob, P.act, eps))

    def exact_bar(self, key, w_bar) -> tuple:
        """ō on the active rows exactly (not CG's running sums), and the active set ō defines,
        held aside: returns (its loss, its |J|)."""
        P = self.p[key]
        la.outputs(*P.a, self.bias, w_bar, P.J, P.ob)
        P.staged = P.active(P.ob)
        return P.staged[2], int(P.staged[0].size)

    def gradient(self, key, which, w, n_rows) -> tuple:
        """:func:`solvers.linalg.gradient_parts` at w with the active set of ``which`` ("bar":
        the staged one of :meth:`exact_bar` with ō; "o": the current one with o)."""
        P = self.p[key]
        if which == "bar":
            J, _, _, Ye, Ce, _ = P.staged
            o = P.ob
        else:
            J, Ye, Ce, o = P.J, P.Ye, P.Ce, P.o
        return la.gradient_parts(*P.a, self.bias, Ye, Ce, J, w, o, math.sqrt(n_rows + 1.0))

    def accept_bar(self, key) -> None:
        """o = ō and the staged active set: the Newton point is the optimum."""
        P = self.p[key]
        P.o, P.ob = P.ob, P.o
        P.J, P.I, P.loss, P.Ye, P.Ce, P.act = P.staged

    def line_terms(self, key) -> tuple:
        """The line search's terms here (:class:`solvers.least_squares.Breakpoints`): (L, R,
        L₁, R₁) of these rows alone; the breakpoints kept for :meth:`line_batch`."""
        P = self.p[key]
        P.bp = least_squares.Breakpoints(*la.line_pieces(P.Y, P.C, P.virtual(P.o),
                                                         P.virtual(P.ob), 0.0, 0.0),
                                         la.first_k)
        return P.bp.terms()

    def line_batch(self, key, upper: bool, k) -> tuple:
        """The next k breakpoints (δ, ΔL, ΔR) of one side of δ = 1 in increasing δ."""
        return self.p[key].bp.batch(bool(upper), k)

    def move(self, key, delta) -> tuple:
        """o += δ(ō - o); the new active set (the old one kept): returns (loss, |J|)."""
        P = self.p[key]
        P.o += delta * (P.ob - P.o)
        P.J_old = P.J
        return self.active(key)

    def recompute(self, key, w) -> tuple:
        """o = X̃w exactly and its active set: (loss, |J|, same J as before the last move)."""
        P = self.p[key]
        la.outputs(*P.a, self.bias, w, np.arange(P.m), P.o)
        loss, nj = self.active(key)
        return loss, nj, bool(np.array_equal(P.J, P.J_old))

    def all_active(self, key) -> int:
        """Every row active (rls: one CGLS over all rows)."""
        P = self.p[key]
        P.J = np.arange(P.m)
        P.I = np.empty(0, np.int64)
        P.Ye, P.Ce = P.Y, P.C
        return P.m

    def squared_loss(self, key, w) -> float:
        """o = X̃w exactly; returns 1/2 Σ C (Y - o)² (rls)."""
        P = self.p[key]
        la.outputs(*P.a, self.bias, w, np.arange(P.m), P.o)
        return float(la.squared_loss(P.Y, P.o, P.C))

    # ----------------------------------------------------------------- tsvm, da

    def transductive_parts(self, key) -> tuple:
        """(Σ_L max(0, 1 - y o)², Σ_U max(0, 1 - |o|)²) at o (SVMlin's transductive cost)."""
        o = self.p[key].o
        hl = np.maximum(0.0, 1.0 - self.Yt[self.lab] * o[self.lab])
        hu = np.maximum(0.0, 1.0 - np.abs(o[self.unl]))
        return float(hl @ hl), float(hu @ hu)

    def switch_candidates(self, key, S) -> tuple:
        """tsvm's switching candidates here: the outputs of up to S unlabeled rows labeled +1
        with o < 1 (ascending) and of up to S labeled -1 with o > -1 (descending), in
        :func:`solvers.s3vm_jit.switch_labels`'s order."""
        P = self.p[key]
        u = self.unl
        ou, yu = P.o[u], P.Y[u]
        pos = np.flatnonzero((yu > 0.0) & (ou < 1.0))
        neg = np.flatnonzero((yu < 0.0) & (-ou < 1.0))
        pos = pos[np.argsort(ou[pos], kind="mergesort")][:S]
        neg = neg[np.argsort(-ou[neg], kind="mergesort")][:S]
        P.sw = (u[pos], u[neg])
        return ou[pos], ou[neg]

    def switch_apply(self, key, n_pos, n_neg) -> None:
        """Switch the first n_pos positive and n_neg negative candidates."""
        P = self.p[key]
        P.Y[P.sw[0][:n_pos]] = -1.0
        P.Y[P.sw[1][:n_neg]] = 1.0

    def da_costs(self, key, lam_u, u, p=None) -> None:
        """da's costs of the unlabeled copies: λ_u p/u for label +1, λ_u (1 - p)/u for -1
        (p = self's current probabilities unless given); subnormal ones 0."""
        P = self.p[key]
        if p is not None:
            self.prob = np.full(self.unl.size, float(p))
        n_l, n_u = self.lab.size, self.unl.size
        P.C[n_l:n_l + n_u] = lam_u * self.prob / u
        P.C[n_l + n_u:] = lam_u * (1.0 - self.prob) / u
        P.C[P.C < 1e-200] = 0.0

    def da_scores(self, key, lam_u) -> tuple:
        """g = λ_u (max(0, 1 - o)² - max(0, 1 + o)²) on the unlabeled rows, kept; returns
        (min g, max g, Σ g)."""
        o = self.p[key].o[self.unl]
        hp = np.maximum(0.0, 1.0 - o)
        hn = np.maximum(0.0, 1.0 + o)
        self.g = lam_u * (hp * hp - hn * hn)
        if self.g.size == 0:
            return math.inf, -math.inf, 0.0
        return float(self.g.min()), float(self.g.max()), float(self.g.sum())

    def da_balance(self, T, nu) -> tuple:
        """(Σ p, Σ p(1 - p)) for p = σ((ν - g)/T) over the unlabeled rows here."""
        if self.g.size == 0:
            return 0.0, 0.0
        return s3vm_jit.balance_sums(self.g, T, nu)

    def da_probabilities(self, T, nu) -> tuple:
        """p = σ((ν - g)/T), replacing the previous q: returns (Σ p, Σ KL(p‖q), Σ entropy)."""
        q = self.prob
        p = s3vm_jit.probabilities(self.g, T, nu)
        self.prob = p
        return float(p.sum()), s3vm_jit.kl_sum(p, q), s3vm_jit.entropy_sum(p)

    # ----------------------------------------------------------------- outputs

    def labels_at(self, rows) -> np.ndarray:
        """The labels of the block's rows ``rows``."""
        return self.y[np.asarray(rows, dtype=np.int64)]

    def labels_of_labeled(self) -> np.ndarray:
        """The labels of the labeled rows in view, in row order."""
        return self.yv[self.yv != 0]



def _spread(s: np.ndarray, k: int) -> np.ndarray:
    """s (sorted) if it has at most k values, else k of them at evenly spaced ranks."""
    if s.size <= k:
        return s.copy()
    return s[np.linspace(0, s.size - 1, k).astype(np.int64)]
