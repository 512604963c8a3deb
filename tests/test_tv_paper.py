"""Cheeger-RLS / Cheeger-SVM on the paper's Table 1 protocol (issue 6), and the SVM step."""

import clarabel
import numpy as np
import pytest
import scipy.sparse as sp
import tv_protocol as TP

from ssl_svm.solvers import tvsvm


@pytest.fixture(scope="module")
def usps49():
    X, y = TP.load((4, 9))
    st = tvsvm.setup(X, TP.SPEC, TP.NEIGHBORS)
    return st, np.where(y == 4, 1.0, -1.0)


@pytest.mark.parametrize("method", ["cheeger-rls", "cheeger-svm"])
def test_table1_cheeger_usps_4_vs_9(usps49, method):
    """1, 5, 10, 50 labels per class, 10 draws each: mean error on the unlabeled rows within
    1.5 points of the paper's Table 1."""
    st, y = usps49
    step = method.split("-")[1]
    for k, per_class in enumerate(TP.LABELS_PER_CLASS):
        errs = []
        for seed in range(TP.DRAWS):
            lab = TP.draw(y, per_class, seed)
            r = tvsvm.cheeger(st, np.where(lab, y, 0.0), step=step, c=TP.C_STEP, mu=TP.MU,
                              progress=False)
            errs.append(100 * np.mean(np.sign(r.f[~lab]) != y[~lab]))
        assert abs(np.mean(errs) - TP.TABLE1[method][k]) <= 1.5, (per_class, np.mean(errs))


def test_cheeger_energy_falls_and_out_of_sample_matches(usps49):
    st, y = usps49
    lab = TP.draw(y, 10, 3)
    r = tvsvm.cheeger(st, np.where(lab, y, 0.0), c=TP.C_STEP, progress=False)
    E = np.array(r.energy)
    assert E[-1] < E[0] / 5
    # the iteration is not a descent method (labels are reset, the prox is inexact), but
    # any rise is a small blip near the end
    assert np.all(np.diff(E) <= 0.01 * E[1:]), np.max(np.diff(E) / E[1:])
    # the expansion reproduces the RLS fit of the final f on the training rows
    e, alpha = st.rls(r.f)
    np.testing.assert_allclose(st.K @ r.alpha, e, rtol=1e-10, atol=1e-10)
    assert np.mean(np.sign(st.K @ r.alpha)[~lab] != y[~lab]) < 0.06


def test_asymmetric_balance_and_the_cut_share(usps49):
    """B_r: Σ|f − median| at r = ½; on an indicator of a set of share s, 2N·min((1−r)s,
    r(1−s)) — largest at s = r, so the ratio TV/B_r favours cuts of share r; and the
    minimum over q of the pinball form is reached at the (1−r)-quantile."""
    rng = np.random.default_rng(0)
    f = rng.normal(size=1001)
    assert tvsvm.balance(f, 0.5)[0] == np.sum(np.abs(f - np.median(f)))
    N = 1000
    for r in (0.2, 0.5, 0.7):
        for s in (0.1, 0.2, 0.5, 0.9):
            ind = (np.arange(N) < s * N).astype(float)
            assert tvsvm.balance(ind, r)[0] == pytest.approx(
                2 * N * min((1 - r) * s, r * (1 - s)), rel=1e-9), (r, s)
        B, q = tvsvm.balance(f, r)
        for q2 in (q - 0.05, q + 0.05):
            d = f - q2
            assert B < np.sum(np.where(d > 0, 2 * (1 - r) * d, -2 * r * d))
    # the iteration with r = 0.3 on balanced digits: 30 % of the rows positive
    st, y = usps49
    lab = TP.draw(y, 10, 0)
    res = tvsvm.cheeger(st, np.where(lab, y, 0.0), c=TP.C_STEP, r=0.3, progress=False)
    assert abs(np.mean(res.f > 0) - 0.3) < 0.01
    # the default share: ½ unless the labeled fraction is beyond CUT_SHARE_Z standard errors
    for pos, n, want in ((20, 100, 0.2), (38, 100, 0.5), (37, 100, 0.37), (2, 10, 0.5),
                         (16, 50, 0.5), (15, 50, 0.3)):
        yl = np.r_[np.ones(pos), -np.ones(n - pos), np.zeros(30)]
        assert tvsvm.cut_share(yl)[0] == want, (pos, n)


def test_svm_dual_smo_equals_an_exact_qp():
    rng = np.random.default_rng(0)
    for n, mu in [(12, 1.0), (40, 0.05), (40, 10.0)]:
        A = rng.normal(size=(n, 5))
        y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
        G = A @ A.T + 0.1 * np.eye(n)
        Q = G * np.outer(y, y)
        q = 1.0 - 0.3 * rng.normal(size=n)
        beta = np.zeros(n)
        it, viol = tvsvm.svm_dual_smo(G, q, y, mu, beta, 1e-12, 1_000_000)
        assert viol <= 1e-12
        assert abs(y @ beta) < 1e-10 and beta.min() >= 0 and beta.max() <= mu
        st = clarabel.DefaultSettings()
        st.verbose = False
        st.tol_gap_abs = st.tol_gap_rel = st.tol_feas = 1e-12
        Acon = sp.vstack([sp.csc_matrix(y[None, :]), -sp.identity(n), sp.identity(n)],
                         format="csc")
        b = np.concatenate([[0.0], np.zeros(n), np.full(n, mu)])
        sol = clarabel.DefaultSolver(sp.csc_matrix(np.triu(Q)), -q, Acon, b,
                                     [clarabel.ZeroConeT(1), clarabel.NonnegativeConeT(2 * n)],
                                     st).solve()
        obj = 0.5 * beta @ Q @ beta - q @ beta
        assert obj == pytest.approx(sol.obj_val, rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("loss", ["rls", "svm"])
def test_table1_tv_usps_4_vs_9(usps49, loss):
    """Binary TV-RLS / TV-SVM (paper eqs. 21-27 / 73-80) with the defaults (the Cheeger start,
    γ = 0.01), 10 draws: every cell of Table 1 within 1.5 points (measured 3.63 / 3.31 / 3.39 /
    2.24 and 3.64 / 3.24 / 3.38 / 2.26 against about 3.1-3.2; at γ = 0.1, the default before,
    4.27 / 4.08 / 4.11 / 2.68 and 4.28 / 4.14 / 4.22 / 2.79). With one label per class the
    labels start lands on a wrong cut (32.7 / 31.1 % error). Its energy is no guide: at γ = 0.1
    the Cheeger start ended lower in 9 of 10 draws, at γ = 0.01 it does for TV-RLS in 8 and
    for TV-SVM in 1 — the normalised problem is non-convex and its lowest energy is not the
    right cut, which is why the start is the Cheeger solution and not a search over starts."""
    st, y = usps49
    for per_class in TP.LABELS_PER_CLASS:
        errs = []
        errs_labels = []
        for seed in range(TP.DRAWS):
            lab = TP.draw(y, per_class, seed)
            yl = np.where(lab, y, 0.0)
            r = tvsvm.tv_binary(st, yl, loss, progress=False)
            errs.append(100 * np.mean(np.sign(r.f[~lab]) != y[~lab]))
            if per_class == 1:
                q = tvsvm.tv_binary(st, yl, loss, start="labels", progress=False)
                errs_labels.append(100 * np.mean(np.sign(q.f[~lab]) != y[~lab]))
        k = TP.LABELS_PER_CLASS.index(per_class)
        assert abs(np.mean(errs) - TP.TABLE1["tv" + loss][k]) <= 1.5, (per_class,
                                                                      np.mean(errs))
        if per_class == 1:
            assert np.mean(errs_labels) > np.mean(errs) + 10, (np.mean(errs_labels), errs)


def test_table1_tvrls_with_self_tuning_weights():
    """TV-RLS on the self-tuning graph (--graph-weights self-tuning): with 1, 5 and 10 labels
    per class within 1.5 points of the paper (measured 4.24 / 3.76 / 3.68 against 3.18 / 3.16 /
    3.13)."""
    X, y = TP.load((4, 9))
    y = np.where(y == 4, 1.0, -1.0)
    st = tvsvm.setup(X, TP.SPEC, TP.NEIGHBORS, weights="self-tuning")
    for per_class in (1, 5, 10):
        errs = []
        for seed in range(TP.DRAWS):
            lab = TP.draw(y, per_class, seed)
            r = tvsvm.tv_binary(st, np.where(lab, y, 0.0), "rls", progress=False)
            errs.append(100 * np.mean(np.sign(r.f[~lab]) != y[~lab]))
        k = TP.LABELS_PER_CLASS.index(per_class)
        assert abs(np.mean(errs) - TP.TABLE1["tvrls"][k]) <= 1.5, (per_class, np.mean(errs))


def test_table2_multiclass_tvsvm_and_cheeger_usps_0_1_4_9():
    """Table 2 protocol: digits 0, 1, 4, 9 (4,495 rows), 1, 5, 10, 50 labels per class, 10
    draws each, multi-class TV-SVM (paper section 3.5) with the defaults: mean error on the
    unlabeled rows within 1.5 points of the paper's row (1.75, 1.82, 1.77, 1.85). With one
    label per class, the cell where the labels start fails (70.8 / 52.4 %), multi-class
    Cheeger-RLS / -SVM from the start their default takes there, the TV-SVM solution, within
    1.5 points of theirs (3.35 / 2.94; measured 2.00 / 2.00). The TV-SVM run of each draw is
    that start: the default ``start='auto'`` takes ``'tv'`` here, which runs the same
    ``tv_multiclass`` call (the CLI test runs that path end to end).

    The suite runs the first 3 of the paper's 10 draws (about 130 s instead of 425 s: the
    Cheeger runs take 8 s each); ``bench/bench_tv.py table2`` runs all 10. Measured over the
    10 draws: TV-SVM 1.60 / 1.38 / 1.44 / 1.20 (1, 5, 10, 50 labels per class), Cheeger-RLS
    and -SVM 1.97 / 1.97; over the first 3: 1.40 / 1.34 / 1.51 / 1.17 and 1.91 / 1.91."""
    draws = 3
    X, y = TP.load((0, 1, 4, 9))
    classes = np.array([0, 1, 4, 9])
    Y = (y[:, None] == classes[None, :]).astype(float)
    st = tvsvm.setup(X, TP.SPEC, TP.NEIGHBORS)

    def err(F, lab):
        return 100 * np.mean(classes[F.argmax(1)][~lab] != y[~lab])

    for k, per_class in enumerate(TP.LABELS_PER_CLASS):
        errs = []
        cheeger = {"rls": [], "svm": []}
        for seed in range(draws):
            lab = TP.draw(y, per_class, seed)
            r = tvsvm.tv_multiclass(st, Y * lab[:, None], lab, "svm", progress=False)
            errs.append(err(r.f, lab))
            if per_class == 1:
                for step in cheeger:
                    c = tvsvm.cheeger_multiclass(st, Y * lab[:, None], lab, step, c=TP.C_STEP,
                                                 mu=TP.MU, start=r.f, progress=False)
                    cheeger[step].append(err(c.f, lab))
                assert tvsvm.cheeger_start(Y * lab[:, None], lab, "auto") == "tv"
        assert abs(np.mean(errs) - TP.TABLE2["tvsvm"][k]) <= 1.5, (per_class, np.mean(errs))
        if per_class == 1:
            for step, e in cheeger.items():
                assert len(e) == draws
                assert abs(np.mean(e) - TP.TABLE2["cheeger-" + step][k]) <= 1.5, (step, e)


def test_class_norm_n_over_c_converges_on_ten_class_mnist():
    """--class-norm n/c (columns of norm √(N/c), a balanced one-hot column's norm) against
    the default √N on 10-class mnist (2,000 random rows, 10 labels per class, rbf γ = 1/64):
    with √N the unlabeled entries are √10 times the labels' size and multi-class TV-SVM does
    not settle in 100 iterations (24 % error); with √(N/c) it converges in about 12 to
    16 %, the figures the option's help quotes."""
    from ssl_svm.formats.svmlight import read_dataset
    from ssl_svm.solvers.kernels import KernelSpec

    Yb = np.zeros((400, 4))
    Yb[np.arange(40), np.arange(40) % 4] = 1.0  # 10 labels per class
    labb = np.arange(400) < 40
    assert np.allclose(tvsvm.class_scale(Yb, labb, "n"), 20.0)
    assert np.allclose(tvsvm.class_scale(Yb, labb, "n/c"), 10.0)
    with pytest.raises(ValueError):
        tvsvm.class_scale(Yb, labb, "c")
    data = read_dataset(str(TP.SHARED / "datasets" / "mnist" / "mnist.gz"), n_features=784)
    rows = np.random.default_rng(0).permutation(data.n_rows)[:2000]
    X = data.X[rows] / 255.0
    y = data.y[rows]
    classes = np.unique(y)
    assert classes.size == 10
    lab = TP.draw(y, 10, 0)
    Y = (y[:, None] == classes[None, :]) * lab[:, None]
    st = tvsvm.setup(X, KernelSpec("rbf", 1 / 64), 10)
    err = {}
    for norm in ("n", "n/c"):
        r = tvsvm.tv_multiclass(st, Y.astype(float), lab, "svm", class_norm=norm,
                                progress=False)
        err[norm] = 100 * np.mean(classes[r.f.argmax(1)][~lab] != y[~lab])
        assert r.converged == (norm == "n/c") and r.iterations <= (30 if r.converged else 100)
    assert err["n/c"] < 18.0 and err["n"] > err["n/c"] + 5.0, err


def test_label_shares_are_the_labels_only_when_the_classes_differ_in_size():
    """χ² at 1 %: 16 / 20 / 24 labels of three equal classes count as equal (1/3 each, the
    paper's √N norms); the shuttle sample's 1,570 / 3 / 4 / 328 / 94 / 1 labels are taken as
    they are."""
    def one_hot(counts):
        y = np.repeat(np.arange(len(counts)), counts)
        return np.eye(len(counts))[y], np.ones(y.size, bool)

    Y, lab = one_hot([16, 20, 24])
    np.testing.assert_array_equal(tvsvm.label_shares(Y, lab), np.full(3, 1 / 3))
    np.testing.assert_allclose(tvsvm.class_scale(Y, lab, "n"), np.sqrt(60))
    counts = [1570, 3, 4, 328, 94, 1]
    Y, lab = one_hot(counts)
    np.testing.assert_allclose(tvsvm.label_shares(Y, lab), np.array(counts) / 2000)
    np.testing.assert_allclose(tvsvm.class_scale(Y, lab, "n/c"), np.sqrt(counts))


@pytest.mark.parametrize("step", ["rls", "svm"])
def test_cheeger_with_every_row_labeled_skips_an_iteration_that_cannot_move(monkeypatch,
                                                                            step):
    """Every row labeled: the iteration puts the labels back on every row at every step, so
    the fit is the smoothing step of the labels. The shortcut's f, expansion and energy equal
    the full iteration's (run by disabling the shortcut): RLS to the last bit, SVM within its
    SMO tolerance (the full run warm-starts the final step's dual from the iteration's)."""
    X, y = TP.load((4, 9))
    X, y = X[:300], y[:300]
    st = tvsvm.setup(X, TP.SPEC, TP.NEIGHBORS)
    yl = np.where(y == 4, 1.0, -1.0)
    classes = np.array([0.0, 1.0, 2.0])
    ym = np.arange(y.size) % 3  # three classes for the multi-class form
    Y = (ym[:, None] == classes[None, :]).astype(float)
    lab = np.ones(y.size, bool)
    runs = {}
    for full in (False, True):
        if full:
            monkeypatch.setattr(tvsvm, "labels_fix_f", lambda lab: False)
        runs[full] = (tvsvm.cheeger(st, yl, step=step, c=TP.C_STEP, mu=TP.MU, progress=False),
                      tvsvm.cheeger_multiclass(st, Y, lab, step, c=TP.C_STEP, mu=TP.MU,
                                               start="tv", progress=False))
    tol = 0.0 if step == "rls" else 1e-8
    for short, full in zip(runs[False], runs[True]):
        assert short.iterations == 0 and short.converged
        assert full.iterations == 1 and full.converged
        np.testing.assert_array_equal(short.f, full.f)
        assert short.energy == full.energy[:1]
        np.testing.assert_allclose(short.alpha, full.alpha, rtol=0, atol=tol * max(
            1.0, float(np.abs(full.alpha).max())))
