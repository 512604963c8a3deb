"""ssl-train -a tvrls / tvsvm / cheeger-rls / cheeger-svm end to end (issue 6)."""

import re

import numpy as np
import pytest
from conftest import SAMPLES, run, shared, ssl_train

from ssl_svm.formats.model_file import read_model
from ssl_svm.formats.svmlight import read_dataset
from ssl_svm.solvers import tvsvm
from ssl_svm.solvers.kernels import KernelSpec


@pytest.mark.parametrize("algo", ["tvrls", "tvsvm", "cheeger-rls", "cheeger-svm"])
def test_cli_binary_usps49(tmp, algo):
    """The shared usps49-10 split (10 labels, 1,296 rows): -l output, the saved model's
    expansion, and the out-of-sample test accuracy."""
    train = shared("bench", "usps49-10", "train.svm")
    model = tmp / "m"
    r = ssl_train("-a", algo, "-g", "0.03125", train, model, "-l", tmp / "u",
            "--values", check=0)
    assert f"{algo} iteration 1: energy" in r.stderr
    assert "binary formulation" in r.stderr
    if algo.startswith("tv"):
        assert "primal residuals |f-g|" in r.stderr and "dual residual" in r.stderr
    m = read_model(str(model))
    assert m.function.kernel == KernelSpec("rbf", 0.03125, 3, 0.0)
    assert m.labels == [1, -1] and m.algorithm == algo
    assert m.params["neighbors"] == 10
    if algo.startswith("tv"):
        assert m.params["tv_gamma"] == 0.01  # the default taken for two classes is recorded
        assert f"{algo} start: the Cheeger-RLS solution" in r.stderr
    assert m.params["start"] == ("cheeger" if algo.startswith("tv") else "labels")
    tr = read_dataset(str(train), n_features=256)
    unl = tr.X[tr.y == 0]
    truth = np.loadtxt(shared("bench", "usps49-10", "train.truth"))[tr.y == 0]
    lines = (tmp / "u").read_text().splitlines()
    assert len(lines) == unl.shape[0]
    labels = np.array([int(s.split()[0]) for s in lines])
    vals = np.array([float(s.split()[1]) for s in lines])
    assert np.all(labels == np.where(vals > 0, 1, -1))
    # the transductive solution: the paper reaches 3-4 % error with 10 labels per class
    assert np.mean(labels != truth) < 0.07, np.mean(labels != truth)
    # out of sample: the expansion agrees with the transductive solution on most rows
    out = m.predict(unl)
    assert np.mean(out == labels) > 0.9
    r = run("ssl-predict", shared("bench", "usps49-10", "test.svm"), model, tmp / "p",
            check=0)
    acc = float(r.stderr.split("Accuracy = ")[1].split("%")[0])
    assert acc > 90.0, acc  # supervised svm on this split: 89.12 %


def _multiclass_file(tmp, per_class=5, n=600):
    full = read_dataset(str(shared("datasets", "uspst", "uspst.gz")))
    rng = np.random.default_rng(0)
    rows = rng.choice(full.n_rows, n, replace=False)
    y = np.where(full.y[rows] == 0, 10, full.y[rows]).astype(int)
    lab = np.zeros(n, bool)
    for c in np.unique(y):
        lab[np.flatnonzero(y == c)[:per_class]] = True
    X = full.X[rows]
    with open(tmp / "train.svm", "w") as f:
        for i in range(n):
            row = X[i]
            feats = " ".join(f"{j + 1}:{v:.17g}" for j, v in zip(row.indices, row.data))
            f.write(f"{y[i] if lab[i] else 0} {feats}\n")
    return X, y, lab


@pytest.mark.parametrize("algo", ["tvrls", "tvsvm", "cheeger-rls"])
def test_cli_multiclass_native(tmp, algo):
    X, y, lab = _multiclass_file(tmp)
    r = ssl_train("-a", algo, "-g", "0.03125", tmp / "train.svm", tmp / "m", "-l",
            tmp / "l", "--values", check=0)
    assert "10 classes (multi-class formulation)" in r.stderr
    assert "start: the multi-class TV-SVM solution" not in r.stderr
    if algo == "cheeger-rls":  # 5 labels per class: auto takes the labels
        assert "cheeger-rls start: labels (auto: at least two labeled rows per class)" in r.stderr
    m = read_model(str(tmp / "m"))
    assert m.labels == list(range(1, 11)) and m.n_functions == 10
    lines = (tmp / "l").read_text().splitlines()
    pred = np.array([int(s.split()[0]) for s in lines])
    assert np.mean(pred == y[~lab]) > 0.8, np.mean(pred == y[~lab])
    if algo.startswith("tv"):
        # multi-class TV-RLS/TV-SVM classify with f = Kα: -l equals the saved expansion
        vals = np.array([[float(v) for v in s.split()[1:]] for s in lines])
        np.testing.assert_allclose(m.decision_function(X[~lab]), vals, rtol=1e-7, atol=1e-7)
        r = run("ssl-predict", tmp / "train.svm", tmp / "m", tmp / "p", check=0)
        p = np.loadtxt(tmp / "p", dtype=int)
        assert np.array_equal(p[~lab], pred)


def test_cli_class_norm(tmp):
    """--class-norm n/c reaches the multi-class solver and the model; it converges where the
    default √N runs to the iteration limit (10 classes), and it is refused where it has no
    meaning."""
    _multiclass_file(tmp)
    r = ssl_train("-a", "tvsvm", "-g", "0.03125", "--class-norm", "n/c",
            tmp / "train.svm", tmp / "m", check=0)
    assert "stopped at its iteration limit" not in r.stderr
    assert read_model(str(tmp / "m")).params["class_norm"] == "n/c"
    r = ssl_train("-a", "tvsvm", "-g", "0.03125", tmp / "train.svm", tmp / "m2",
            check=0)
    assert "tvsvm stopped at its iteration limit (100)" in r.stderr
    assert read_model(str(tmp / "m2")).params["class_norm"] == "n"
    r = ssl_train("-a", "tvrls", "--class-norm", "c", tmp / "train.svm", tmp / "m3")
    assert r.returncode == 2 and "--class-norm" in r.stderr and "n/c" in r.stderr
    r = ssl_train("-a", "cheeger-rls", "--class-norm", "n/c", tmp / "train.svm",
            tmp / "m3")
    assert r.returncode == 2 and "option --class-norm is not used by -a cheeger-rls" in r.stderr


def test_class_norm_auto_takes_the_labels_norm_when_every_row_is_labeled(tmp):
    """On the shuttle sample (every row labeled, six classes of 1,570 to 1 rows) auto takes
    n/c, the labels' own column norms, and TV-RLS converges; n, √c times the labels, runs
    TV-RLS to the iteration limit. The model records the norm taken; the rule itself."""
    r = ssl_train("-a", "tvrls", "--max-iter", "20", SAMPLES / "shuttle.train", tmp / "m")
    assert r.returncode == 0, r.stderr
    assert "class norm n/c (auto: every row is labeled" in r.stderr
    assert "iteration limit" not in r.stderr
    assert read_model(str(tmp / "m")).params["class_norm"] == "n/c"
    r = ssl_train("-a", "tvrls", "--max-iter", "20", "--class-norm", "n",
                  SAMPLES / "shuttle.train", tmp / "m2")
    assert "tvrls stopped at its iteration limit (20)" in r.stderr
    assert read_model(str(tmp / "m2")).params["class_norm"] == "n"
    every, some = np.ones(5, bool), np.array([True, False, True, True, True])
    assert tvsvm.class_norm("auto", every) == "n/c"
    assert tvsvm.class_norm("auto", some) == "n"
    assert tvsvm.class_norm("n", every) == "n" and tvsvm.class_norm("n/c", some) == "n/c"


def test_cli_start(tmp):
    """--start reaches the solver and the model records the start taken; auto takes the TV-SVM
    start with one label per class; each method accepts only its own starts."""
    _multiclass_file(tmp, per_class=1)
    r = ssl_train("-a", "cheeger-rls", "-g", "0.03125", tmp / "train.svm", tmp / "m",
            check=0)
    assert "cheeger-rls start: tv (auto: one labeled row in some class)" in r.stderr
    assert "cheeger-rls start: the multi-class TV-SVM solution" in r.stderr
    assert read_model(str(tmp / "m")).params["start"] == "tv"
    r = ssl_train("-a", "cheeger-rls", "-g", "0.03125", "--start", "labels",
            tmp / "train.svm", tmp / "m", check=0)
    assert "start: the multi-class TV-SVM solution" not in r.stderr
    assert read_model(str(tmp / "m")).params["start"] == "labels"
    r = ssl_train("-a", "tvrls", "--start", "tv", tmp / "train.svm", tmp / "m2")
    assert r.returncode == 2 and "--start must be one of cheeger, labels (got 'tv')" in r.stderr
    r = ssl_train("-a", "cheeger-svm", "--start", "cheeger", tmp / "train.svm",
            tmp / "m2")
    assert r.returncode == 2 and "--start must be one of auto, tv, labels (got 'cheeger')" in \
        r.stderr
    train = shared("bench", "usps49-10", "train.svm")
    r = ssl_train("-a", "tvsvm", "-g", "0.03125", "--start", "labels", "--max-iter", "3",
            train, tmp / "m3", check=0)
    assert "start: the Cheeger-RLS solution" not in r.stderr
    assert read_model(str(tmp / "m3")).params["start"] == "labels"


def test_cli_tv_usage_errors(tmp):
    train = SAMPLES / "pcmac.train"
    r = run("ssl-train", "-a", "svm", "--tv-gamma", "0.1", train, tmp / "m")
    assert r.returncode == 2
    assert "option --tv-gamma is not used by -a svm (it is used by: tvrls, tvsvm)" in r.stderr
    r = run("ssl-train", "-a", "tvrls", "--eta", "0", train, tmp / "m")
    assert r.returncode == 2 and "--eta must be in (0, 1e+15] (got 0)" in r.stderr
    r = run("ssl-train", "-a", "cheeger-rls", "--mu", "2", train, tmp / "m")
    assert r.returncode == 2 and "option --mu is not used by -a cheeger-rls" in r.stderr
    r = run("ssl-train", "-a", "tvsvm", "--max-memory", "1K", train, tmp / "m")
    assert r.returncode == 1 and "above the memory limit of 1.00 KiB" in r.stderr
    assert not (tmp / "m").exists()
    (tmp / "one.svm").write_text("1 1:1\n0 1:2\n0 1:3\n")
    r = run("ssl-train", "-a", "cheeger-svm", tmp / "one.svm", tmp / "m")
    assert r.returncode == 1 and "only one class" in r.stderr


def test_tv_splitting_residuals_fall_and_rls_step_is_exact():
    """The splitting's primal residual ‖f − g‖/‖g‖ falls by more than an order of magnitude
    from its start (binary and multi-class, both losses). It does not vanish: the paper's
    normalisation of g (a projection onto a sphere, not a convex set) leaves about 1 %.
    The multi-class f-step solves (ηJK + rK + λI)α = ηy + rg − l exactly."""
    X, y = _usps_small()
    classes = np.unique(y)
    Y = (y[:, None] == classes[None, :]).astype(float)
    lab = np.zeros(y.size, bool)
    for c in classes:
        lab[np.flatnonzero(y == c)[:5]] = True
    st = tvsvm.setup(X, KernelSpec("rbf", 1 / 32), 10)
    for loss in ("rls", "svm"):
        r = tvsvm.tv_multiclass(st, Y * lab[:, None], lab, loss, max_iter=150, tol=1e-9,
                                progress=False)
        assert r.iterations == 150
        assert r.residual[-1] < 0.1 * r.residual[0], (loss, r.residual[0], r.residual[-1])
        assert np.mean(classes[r.f.argmax(1)][~lab] != y[~lab]) < 0.1
        yb = np.where(y == classes[0], 1.0, np.where(y == classes[1], -1.0, 0.0)) * lab
        r = tvsvm.tv_binary(st, yb, loss, max_iter=60, tol=1e-9, progress=False)
        assert r.residual[-1] < 0.1 * r.residual[0], (loss, r.residual[0], r.residual[-1])
    rng = np.random.default_rng(0)
    b = rng.normal(size=y.size)
    alpha = st.label_solve(lab.astype(float), 100.0, b)
    A = 100.0 * lab[:, None] * st.K + st.r * st.K + st.lam * np.eye(y.size)
    np.testing.assert_allclose(A @ alpha, b, rtol=1e-8, atol=1e-8)


def test_tv_binary_hinge_step_is_the_exact_minimiser():
    """h-step of TV-SVM (eq. 67) against a direct minimisation: for a fixed b the problem
    min_h μΣξ + r2/2‖h − e‖² separates (h_i = e_i + y_i·clip(1 − y_i(e_i + b), 0, μ/r2)),
    and its value is convex in b, minimised by a bounded scalar search."""
    import scipy.optimize

    rng = np.random.default_rng(3)
    n = 30
    e = rng.normal(size=n)
    yl = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    yl[:10] = 0.0
    r2, mu = 2.0, 0.7
    h = tvsvm._hinge_step(e, yl, r2, mu)
    L = yl != 0

    def obj(hh, b):
        return mu * np.sum(np.maximum(0, 1 - yl[L] * (hh[L] + b))) + r2 / 2 * np.sum(
            (hh - e) ** 2)

    def best_h(b):
        hh = e.copy()
        hh[L] += yl[L] * np.clip(1 - yl[L] * (e[L] + b), 0, mu / r2)
        return hh

    opt = scipy.optimize.minimize_scalar(lambda b: obj(best_h(b), b), bounds=(-5, 5),
                                         method="bounded", options={"xatol": 1e-12})
    # our h with its best b: the hinge sum is piecewise linear in b, kinks at y_i − h_i
    ours = min(obj(h, b) for b in yl[L] - h[L])
    assert ours == pytest.approx(opt.fun, rel=1e-9, abs=1e-9)
    np.testing.assert_array_equal(h[~L], e[~L])


def _usps_small(n=500):
    full = read_dataset(str(shared("datasets", "uspst", "uspst.gz")))
    keep = np.flatnonzero(np.isin(full.y, (0, 1, 4, 9)))[:n]
    return full.X[keep].toarray(), full.y[keep]


def test_nystrom_operations_are_exact_for_the_low_rank_kernel():
    """LowRankSetup's Woodbury solves against dense algebra on K̃ = ZZᵀ (m = 60 of 300
    rows), and the landmark expansion equals K̃α on the training rows."""
    X, _ = _usps_small(300)
    spec = KernelSpec("rbf", 1 / 32)
    lm = np.sort(np.random.default_rng(0).choice(300, 60, replace=False))
    st = tvsvm.setup(X, spec, 10, lam=0.7, r=1.3, landmarks=lm)
    n = X.shape[0]
    Kt = st.Z @ st.Z.T
    rng = np.random.default_rng(1)
    b = rng.normal(size=(n, 3))
    A = st.lam * np.eye(n) + st.r * Kt
    np.testing.assert_allclose(A @ st.solve(b), b, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(A @ st.solve(b[:, 0]), b[:, 0], rtol=1e-9, atol=1e-9)
    lab = (rng.random(n) < 0.1).astype(float)
    M = 50.0 * lab[:, None] * Kt + st.r * Kt + st.lam * np.eye(n)
    np.testing.assert_allclose(M @ st.label_solve(lab, 50.0, b), b, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(M @ st.label_solve(lab, 50.0, b[:, 1]), b[:, 1], rtol=1e-8,
                               atol=1e-8)
    e, alpha = st.rls(b[:, 2])
    np.testing.assert_allclose(e, Kt @ alpha, rtol=1e-12, atol=1e-12)
    rows, coef = st.expansion(alpha)
    assert rows.shape[0] == 60 and coef.shape == (60,)
    from ssl_svm.solvers.kernels import kernel_block
    np.testing.assert_allclose(kernel_block(spec, X, rows) @ coef, Kt @ alpha, rtol=1e-7,
                               atol=1e-7)
    # the SVM step's columns over the labeled rows, held as Z and an r × |L| matrix, against
    # the dense n × |L| ones of the generic path
    L = np.flatnonzero(lab)
    a_op, g_op, gll = st.label_columns(L)
    a_d, g_d, gll_d = tvsvm._KernelStep.label_columns(st, L)
    v = rng.normal(size=L.size)
    np.testing.assert_allclose(a_op @ v, a_d @ v, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(g_op @ v, g_d @ v, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(gll, gll_d, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gll, (Kt @ np.linalg.solve(A, np.eye(n)))[np.ix_(L, L)],
                               rtol=1e-8, atol=1e-10)
    # with every row a landmark the Nyström kernel is K itself
    full = tvsvm.setup(X, spec, 10, landmarks=np.arange(n))
    exact = tvsvm.setup(X, spec, 10)
    np.testing.assert_allclose(full.Z @ full.Z.T, exact.K, atol=1e-8)
    # the exact kernel's columns against the generic path's and a dense inverse, for some rows
    # labeled and for all (G[L, L] is then G[:, L] itself, one matrix)
    exact = tvsvm.setup(X, spec, 10, lam=0.3, r=2.0)
    Ainv = np.linalg.inv(0.3 * np.eye(n) + 2.0 * exact.K)
    for L in (np.flatnonzero(lab), np.arange(n)):
        a_e, g_e, gll_e = exact.label_columns(L)
        a_d, g_d, gll_d = tvsvm._KernelStep.label_columns(exact, L)
        np.testing.assert_allclose(a_e, Ainv[:, L], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(g_e, g_d, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(gll_e, (exact.K @ Ainv)[np.ix_(L, L)], rtol=1e-9,
                                   atol=1e-12)
        base = tvsvm._SVMBase(exact, np.isin(np.arange(n), L))
        assert np.array_equal(base.GLL, base.GLL.T) and base.GLL.flags.c_contiguous
        assert (base.GL is base.GLL) == (L.size == n)


@pytest.mark.parametrize("algo", ["tvsvm", "cheeger-rls"])
def test_cli_nystrom_usps49(tmp, algo):
    """--nystrom 400 on the usps49-10 split (1,296 rows): the model keeps the 400 landmarks,
    the transductive error stays within the exact kernel's bound, and the model's
    out-of-sample function (the kernel step's K̃α) agrees in sign with the transductive
    values on nearly all unlabeled rows."""
    train = shared("bench", "usps49-10", "train.svm")
    r = ssl_train("-a", algo, "-g", "0.03125", "--nystrom", "400", train, tmp / "m",
            "-l", tmp / "u", "--values", check=0)
    assert "Nyström features 1296×400" in r.stderr and "landmark directions" in r.stderr
    m = read_model(str(tmp / "m"))
    assert m.function.rows.shape[0] == 400 and m.params["landmarks"] == 400
    tr = read_dataset(str(train), n_features=256)
    truth = np.loadtxt(shared("bench", "usps49-10", "train.truth"))[tr.y == 0]
    lines = (tmp / "u").read_text().splitlines()
    labels = np.array([int(s.split()[0]) for s in lines])
    vals = np.array([float(s.split()[1]) for s in lines])
    assert np.mean(labels != truth) < 0.07, np.mean(labels != truth)
    f = m.function.decision(tr.X[tr.y == 0])[:, 0]
    assert np.mean(np.sign(f) == np.sign(vals)) > 0.95, np.mean(np.sign(f) == np.sign(vals))


def test_nystrom_with_every_row_a_landmark_equals_the_exact_kernel():
    """With all n rows as landmarks K̃ = K (to rounding), so every formulation's solution
    through the Woodbury paths (label_solve, the SVM step's blocked solves, rls) equals the
    one through the dense Cholesky paths."""
    X, y = _usps_small(300)
    classes = np.unique(y)
    Y = (y[:, None] == classes[None, :]).astype(float)
    lab = np.zeros(y.size, bool)
    for c in classes:
        lab[np.flatnonzero(y == c)[:5]] = True
    spec = KernelSpec("rbf", 1 / 32)
    exact = tvsvm.setup(X, spec, 10)
    low = tvsvm.setup(X, spec, 10, landmarks=np.arange(y.size))
    yb = np.where(y == classes[0], 1.0, np.where(y == classes[1], -1.0, 0.0)) * lab
    runs = [
        lambda st: tvsvm.tv_multiclass(st, Y * lab[:, None], lab, "rls", max_iter=5,
                                       progress=False),
        lambda st: tvsvm.tv_multiclass(st, Y * lab[:, None], lab, "svm", max_iter=5,
                                       progress=False),
        lambda st: tvsvm.cheeger_multiclass(st, Y * lab[:, None], lab, "svm", max_iter=5,
                                            progress=False),
        lambda st: tvsvm.tv_binary(st, yb, "svm", max_iter=5, progress=False),
        lambda st: tvsvm.cheeger(st, yb, "rls", max_iter=5, progress=False),
    ]
    for k, fn in enumerate(runs):
        a, b = fn(exact), fn(low)
        np.testing.assert_allclose(b.f, a.f, rtol=1e-5, atol=1e-5 * np.abs(a.f).max(),
                                   err_msg=str(k))


def _agreement(tmp, train, model, n_features):
    """Fraction of the unlabeled training rows on which -l (file tmp/u) and ssl-predict of the
    model agree."""
    tr = read_dataset(str(train), n_features=n_features)
    unl = tmp / "unl.svm"
    rows = tr.X[tr.y == 0]
    with open(unl, "w") as f:
        for i in range(rows.shape[0]):
            r = rows.getrow(i)
            f.write("1 " + " ".join(f"{j + 1}:{float(v)!r}" for j, v in zip(r.indices, r.data))
                    + "\n")
    run("ssl-predict", "-q", unl, model, tmp / "p", check=0)
    lab_l = np.array([int(s.split()[0]) for s in (tmp / "u").read_text().splitlines()])
    lab_p = np.array([int(s.split()[0]) for s in (tmp / "p").read_text().splitlines()])
    return float(np.mean(lab_l == lab_p))


@pytest.mark.parametrize("algo", ["tvrls", "tvsvm", "cheeger-rls", "cheeger-svm"])
def test_transductive_output_and_model_agree_or_it_is_said(tmp, algo):
    """rcv1-small-50 (text): at LIBSVM's width 1/features (the former default) the kernel is
    nearly constant, the splitting cannot reach f = g and -l and ssl-predict disagreed on
    ~half the rows without a word (tvrls's -l: one class for every unlabeled row). Now that
    is a warning with the figure; with a width that suits the data (0.508, the median
    heuristic's) the two agree on >= 98 % of the rows."""
    train = shared("bench", "rcv1-small-50", "train.svm")
    r = run("ssl-train", "-a", algo, "-g", "features", train, tmp / "m", "-l", tmp / "u",
            check=0)
    assert (f"ssl-train: warning: {algo}: the transductive values (what -l writes) and the "
            "model's kernel function (ssl-predict) give different classes on ") in r.stderr
    assert _agreement(tmp, train, tmp / "m", 47117) < 0.95
    if algo == "tvrls":
        assert ("ssl-train: warning: tvrls: every unlabeled row is class 1 in the transductive "
                "values (what -l writes): the solution has collapsed") in r.stderr
    r = run("ssl-train", "-a", algo, "-g", "0.508", train, tmp / "m", "-l", tmp / "u", check=0)
    assert "give different classes" not in r.stderr and "collapsed" not in r.stderr
    assert _agreement(tmp, train, tmp / "m", 47117) >= 0.98


def test_landmarks_auto_where_the_exact_kernel_does_not_fit(tmp):
    """At 20 MiB the exact kernel and its factor (2 × 12.8 MiB) do not fit: cheeger-rls takes
    the landmark rows that do (landmarks auto, said), the model keeps them, and it still
    separates USPS 4 from 9; --landmarks 0 asks for the exact form and is refused."""
    train = shared("bench", "usps49-10", "train.svm")
    r = ssl_train("-a", "cheeger-rls", "--max-memory", "20M", train,
                  tmp / "m", "-l", tmp / "u")
    found = re.search(r"cheeger-rls: (\d+) landmark rows \(auto: the exact n×n kernel exceeds "
                      r"the memory limit of 20.00 MiB", r.stderr)
    assert found, r.stderr
    m = read_model(str(tmp / "m"))
    assert m.function.rows.shape[0] == int(found.group(1)) < 1296
    tr = read_dataset(str(train), n_features=256)
    truth = np.loadtxt(shared("bench", "usps49-10", "train.truth"))[tr.y == 0]
    labels = np.array([int(s.split()[0]) for s in (tmp / "u").read_text().splitlines()])
    assert np.mean(labels != truth) < 0.07, np.mean(labels != truth)
    exact = ssl_train("-a", "cheeger-rls", "--landmarks", "0", "--max-memory", "20M", train,
                      tmp / "e", check=1)
    assert "above the memory limit of 20.00 MiB" in exact.stderr
