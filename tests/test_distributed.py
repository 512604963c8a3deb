"""The distributed linear solvers (solvers.distributed over solvers.blocks) against the
one-process solvers on the same rows, blocks in this process: same objective (1e-9 relative),
same labels; the pieces (line search, switching, threshold) against their one-process forms."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import SAMPLES, shared

from ssl_svm.formats.svmlight import read_dataset
from ssl_svm.solvers import distributed as D
from ssl_svm.solvers import least_squares
from ssl_svm.solvers import linalg as la
from ssl_svm.solvers.blocks import Block
from ssl_svm.solvers.multiclass import class_labels
from ssl_svm.solvers.registry import ALGORITHMS


def blocks_of(X, y, cost, cuts):
    """LocalBlocks over the row ranges between ``cuts`` (an empty range included when two
    cuts are equal)."""
    X = sp.csr_matrix(X)
    d = X.shape[1]
    bl = [Block(X[a:b], y[a:b], cost[a:b], a) for a, b in zip(cuts[:-1], cuts[1:])]
    for b in bl:
        b.widen(d)
    return D.LocalBlocks(bl, d)


def defaults(name, **given):
    p = {q.name: q.default for q in ALGORITHMS[name].params}
    p.update(given)
    return p


def one_process(name, X, y, cost, params):
    algo = ALGORITHMS[name]
    if not algo.uses_unlabeled:
        keep = y != 0
        X, y, cost = X[keep], y[keep], cost[keep]
    return algo.fit(X, y, cost, params)


@pytest.mark.parametrize("name", ["rls", "svm", "tsvm", "da"])
@pytest.mark.parametrize("split", ["pcmac", "usps49-10"])
def test_same_model_as_one_process(name, split):
    path = SAMPLES / "pcmac.train" if split == "pcmac" else shared("bench", "usps49-10",
                                                                      "train.svm")
    data = read_dataset(str(path))
    m = data.n_rows
    # four blocks, one of them empty, one of a single row
    B = blocks_of(data.X, data.y, data.cost, [0, m // 3, m // 3, m // 3 + 1, m])
    params = defaults(name, **{"lambda": 1e-3})
    got = D.fit_model(B, name, class_labels(data.y), params, costs=False)
    ref = one_process(name, data.X, data.y, data.cost, params)
    if name == "rls" and split == "usps49-10":
        # 20 labeled rows, 256 features: both CGs stop at the rounding floor (STALL), after
        # 286 and 297 iterations, 2.5e-9 apart; both within 1e-8 of the exact optimum
        lab = data.y != 0
        Xt = np.hstack([data.X[lab].toarray(), np.ones((lab.sum(), 1))])
        w = np.linalg.solve(1e-3 * np.eye(Xt.shape[1]) + Xt.T @ Xt, Xt.T @ data.y[lab])
        best = 0.5e-3 * w @ w + 0.5 * np.sum((data.y[lab] - Xt @ w) ** 2)
        np.testing.assert_allclose([got.stats["objective"][0], ref.stats["objective"][0]],
                                   [best, best], rtol=1e-8)
    else:
        np.testing.assert_allclose(got.stats["objective"], ref.stats["objective"], rtol=1e-9)
    for k in ("switches", "lambda_u_steps", "temperatures", "inner_rounds", "n_rows",
              "n_unlabeled"):
        assert got.stats.get(k) == ref.stats.get(k), k
    np.testing.assert_array_equal(got.predict(data.X), ref.predict(data.X))
    assert got.labels == ref.labels and got.params == ref.params


@pytest.mark.parametrize("name", ["svm", "tsvm"])
def test_one_vs_rest_and_lambda_auto(name):
    data = read_dataset(str(SAMPLES / "shuttle.train"))
    y = data.y.copy()
    if name == "tsvm":  # every other row unlabeled
        y[::2] = 0
    m = data.n_rows
    B = blocks_of(data.X, y, data.cost, [0, 700, 1400, m])
    params = defaults(name, **{"lambda": None})
    got = D.fit_model(B, name, class_labels(y), params, costs=False)
    ref = one_process(name, data.X, y, data.cost, params)
    assert got.stats["lambda"] == ref.stats["lambda"]
    np.testing.assert_allclose(got.stats["objective"], ref.stats["objective"], rtol=1e-9)
    assert got.labels == ref.labels and got.n_functions == ref.n_functions > 1
    np.testing.assert_array_equal(got.predict(data.X), ref.predict(data.X))


def test_line_search_equals_one_process(monkeypatch):
    """Many breakpoints, small batches: the blocks' breakpoints are merged over several rounds
    and give the one-process line search's step (δ < 1, δ > 1, and not a descent direction),
    an empty block among them."""
    monkeypatch.setattr(least_squares, "FIRST_BATCH", 4)
    monkeypatch.setattr(least_squares, "BATCH_GROWTH", 2)
    rng = np.random.default_rng(3)
    n = 3000
    X = sp.random(n, 20, density=0.3, random_state=4, format="csr")
    Y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    C = rng.uniform(0.1, 2.0, n)
    for scale in (0.3, 1.0, 3.0, -1.0):
        w = rng.normal(size=21)
        wb = w + scale * rng.normal(size=21)
        o = np.asarray(X @ w[:-1]) + w[-1]
        ob = np.asarray(X @ wb[:-1]) + wb[-1]
        ref = least_squares.line_search(least_squares.PieceRows(la, Y, C, o, ob), 0.1, w, wb)
        B = blocks_of(X, Y, np.ones(n), [0, 1000, 1000, 2500, n])
        B.call("set_task", 1.0, 1.0)
        for b in B.blocks:
            b.problem_supervised("k", 1.0, 1.0, False)
            b.p["k"].C[:] = C[b.first_row:b.first_row + b.y.size]
            b.p["k"].o[:] = o[b.first_row:b.first_row + b.y.size]
            b.p["k"].ob[:] = ob[b.first_row:b.first_row + b.y.size]
        got = least_squares.line_search(D.BlockSums(B, "k"), 0.1, w, wb)
        assert got == pytest.approx(ref, rel=1e-12, abs=1e-15)


def test_label_top_breaks_ties_in_row_order(monkeypatch):
    """The initial labelling: the npos largest outputs positive, equal outputs taken in row
    order across blocks (as the one-process stable sort does)."""
    monkeypatch.setattr(D, "CANDIDATES", 3)
    o = np.array([0.5, 0.2, 0.5, 0.9, 0.5, 0.1, 0.5, 0.5, 0.3, 0.5])
    n = o.size
    X = sp.csr_matrix(o.reshape(-1, 1))
    y = np.zeros(n)
    y[0], y[1] = 1.0, -1.0  # two labeled rows: the rest are unlabeled
    for npos in range(0, n - 1):
        B = blocks_of(X, y, np.ones(n), [0, 3, 3, 7, n])
        B.call("set_task", 1.0, 0.0)
        B.call("problem_transductive", "all", 1.0)
        B.call("unlabeled_outputs", np.array([1.0, 0.0]))
        D._label_top(B, "all", npos)
        got = np.concatenate([b.p["all"].Y[b.unl] for b in B.blocks])
        unl = np.flatnonzero(y == 0)
        order = np.argsort(-o[unl], kind="mergesort")
        want = -np.ones(unl.size)
        want[order[:npos]] = 1.0
        np.testing.assert_array_equal(got, want)


def test_da_lambda_auto_as_one_process():
    """da's λ auto on the sample text (λ = 1 and 0.1 lopsided, 0.01 taken): the blocks count
    the unlabeled rows' positive share as one process does, and take the same λ."""
    data = read_dataset(str(SAMPLES / "pcmac.train"))
    m = data.n_rows
    B = blocks_of(data.X, data.y, data.cost, [0, m // 2, m // 2 + 7, m])
    params = defaults("da", **{"lambda": None})
    got = D.fit_model(B, "da", class_labels(data.y), params, costs=False)
    ref = one_process("da", data.X, data.y, data.cost, params)
    assert got.stats["lambda"] == ref.stats["lambda"] == [0.01]
    np.testing.assert_allclose(got.stats["objective"], ref.stats["objective"], rtol=1e-9)
    np.testing.assert_array_equal(got.predict(data.X), ref.predict(data.X))
    assert got.params == ref.params and got.params["lambda"] is None
