"""lapsvm and laprls on a cluster's blocks (issue 65): the kNN graph across blocks is the
one-process graph, the fit is the one-process projected landmark fit (decision values within
1e-8), on blocks in this process and on a dask LocalCluster through ssl-train --cluster, and a
worker lost mid-fit is one line or a restart, never a hang."""

import re

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import SAMPLES, run

from ssl_svm.solvers import graph, graph_distributed, kernels, lapsvm
from ssl_svm.solvers.distributed import LocalBlocks
from ssl_svm.solvers.graph_blocks import GraphBlock
from ssl_svm.solvers.registry import ALGORITHMS


def _moons(n=420, d=5, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    c = np.arange(n) % classes
    X = rng.normal(size=(n, d))
    X[:, 0] += 3.0 * c
    X[:, 1] += np.sin(c)
    y = (c + 1).astype(float)
    y[np.arange(n) % 12 >= classes] = 0
    return sp.csr_matrix(X), y


def _blocks(X, y, cuts, cost=None):
    cost = np.ones(X.shape[0]) if cost is None else cost
    return [GraphBlock(X[a:b], y[a:b], cost[a:b]) for a, b in zip(cuts, cuts[1:])]


def _params(algo, **kw):
    p = ALGORITHMS[algo].defaults()
    p.update(landmarks=80, landmark_fit="project")
    p.update(kw)
    return p


@pytest.mark.parametrize("k,cuts", [(6, [0, 100, 101, 300, 420]), (10, [0, 420]), (6, [0, 0, 420]),
                                    (7, [0, 50, 420])])
def test_the_graph_across_blocks_is_the_one_process_graph(k, cuts):
    """Each block's rows' exact k nearest rows among all blocks (a block of one row too) are
    graph.knn's on all rows, indices and distances; each block's rows of L, mapped back to
    global columns, are the one-process Laplacian's."""
    X, y = _moons()
    n = X.shape[0]
    Xp = kernels.prepare(X)
    idx, dist = graph.knn(Xp, k)
    lap, _ = graph.build(Xp, k, degree=1)
    blocks = _blocks(X, y, cuts)
    lb = LocalBlocks(blocks, X.shape[1])
    starts = np.array(cuts)
    lb.call_each("place", [(a, n) for a in cuts[:-1]])
    lb.call("use_metric", "euclidean", None, not sp.issparse(Xp))
    g = graph_distributed.GraphOnBlocks(lb, starts, 1)
    total, count = g.knn(k)
    assert np.array_equal(np.vstack([b.idx for b in blocks]), idx)
    assert np.array_equal(np.vstack([b.dist for b in blocks]), dist)
    t = total / count
    assert t == pytest.approx(float(np.mean(dist)), rel=1e-13)
    edges = g.laplacian("heat", float(np.mean(dist)), True)
    assert edges == graph.adjacency(idx, dist)[0].nnz // 2
    for b, a in zip(blocks, cuts[:-1]):
        # L's rows and own columns are in the block's order (reverse Cuthill-McKee), its halo
        # columns in the order those rows first read them (halo_perm)
        assert np.array_equal(np.sort(b.halo_perm), np.arange(b.halo.size))
        cols = np.concatenate([a + b.order, b.halo[b.halo_perm]])
        mine = sp.csr_matrix((b.L.data, cols[b.L.indices], b.L.indptr), shape=(b.y.size, n))
        mine = mine[np.argsort(b.order)]
        mine.has_sorted_indices = False
        mine.sort_indices()
        ref = lap.L[a:a + b.y.size]
        assert np.array_equal(mine.indices, ref.indices) and np.array_equal(
            mine.indptr, ref.indptr)
        np.testing.assert_allclose(mine.data, ref.data, rtol=1e-14, atol=1e-15)


def test_the_search_in_pieces_of_queries_is_the_same_graph(monkeypatch):
    """The queries go to the blocks a bounded piece at a time (QUERY_BYTES): pieces that
    start inside a block still leave each row out of its own neighbours."""
    X, y = _moons(300)
    monkeypatch.setattr(graph_distributed, "QUERY_BYTES", 8 * 5 * 37)  # 37 rows a piece
    cuts = [0, 120, 121, 300]
    blocks = _blocks(X, y, cuts)
    lb = LocalBlocks(blocks, X.shape[1])
    lb.call_each("place", [(a, 300) for a in cuts[:-1]])
    lb.call("use_metric", "euclidean", None, True)
    g = graph_distributed.GraphOnBlocks(lb, np.array(cuts), 1)
    g.bytes_per_row = 8 * 5
    g.knn(6)
    idx, dist = graph.knn(kernels.prepare(X), 6)
    assert np.array_equal(np.vstack([b.idx for b in blocks]), idx)
    assert np.array_equal(np.vstack([b.dist for b in blocks]), dist)


def _graph_on_blocks(X, y, cuts, dense):
    """(the blocks of rows ``cuts``, their rows as the sampling helpers read them, the graph
    to build on them), Euclidean, the rows held dense or CSR."""
    n = X.shape[0]
    blocks = _blocks(X, y, cuts)
    lb = LocalBlocks(blocks, X.shape[1])
    lb.call_each("place", [(a, n) for a in cuts[:-1]])
    lb.call("use_metric", "euclidean", None, dense)
    starts = np.array(cuts)
    R = graph_distributed.RemoteRows(lb, starts, X.shape[1], X.nnz)
    return blocks, R, graph_distributed.GraphOnBlocks(lb, starts, 1)


@pytest.mark.parametrize("cuts", [[0, 700, 701, 1500], [0, 1500]])
def test_the_approximate_search_across_blocks_and_its_recall(monkeypatch, cuts):
    """--knn approximate on blocks: random-projection trees over every block's rows, each
    leaf's pairs searched; the recall it prints is the share of the exact neighbours it holds
    (counted here against graph.knn on every row), high on a manifold, and no row is its own
    neighbour."""
    monkeypatch.setattr(graph_distributed, "APPROX_LEAF", 64)  # 32 leaves for 1,500 rows
    X, y = _moons(1500, d=8, seed=2)
    n = X.shape[0]
    blocks, R, g = _graph_on_blocks(X, y, cuts, True)
    total, count = g.knn_approximate(6, R)
    idx = np.vstack([b.idx for b in blocks])
    exact, _ = graph.knn(kernels.prepare(X), 6)
    held = np.mean([len(set(a) & set(e)) / 6 for a, e in zip(idx, exact)])
    assert g.recall(6, R, True, rows=n) == pytest.approx(held, abs=1e-12)
    assert 0.9 <= held < 1.0  # approximate, and good
    assert not np.any(idx == np.arange(n)[:, None])
    d = np.vstack([b.dist for b in blocks])
    assert np.all(np.diff(d, axis=1) >= 0) and total == pytest.approx(d.sum())
    g.laplacian("heat", total / count, True)  # a graph the fit can use


def _approximate_graph(X, y, cuts, dense):
    blocks, R, g = _graph_on_blocks(X, y, cuts, dense)
    g.knn_approximate(6, R)
    return np.vstack([b.idx for b in blocks]), np.vstack([b.dist for b in blocks])


def test_the_approximate_graph_is_the_same_on_any_blocks_groups_and_storage(monkeypatch):
    """Each row's leaves and its leaves' pairs do not depend on the cut into blocks, on the
    groups a tree's leaves are searched in (GROUP_ROWS) or on dense or CSR rows: the same
    neighbours and distances, bit for bit."""
    monkeypatch.setattr(graph_distributed, "APPROX_LEAF", 64)
    X, y = _moons(1500, d=8, seed=3)
    X[::7, 3] = 0.0  # some unstored values: the CSR kernel's merge of indices
    X.eliminate_zeros()
    ref = _approximate_graph(X, y, [0, 1500], True)
    for cuts, dense, group in (([0, 700, 701, 1500], True, 1 << 20),
                               ([0, 500, 1000, 1500], False, 1 << 20),
                               ([0, 1500], True, 100), ([0, 900, 1500], False, 150)):
        monkeypatch.setattr(graph_distributed, "GROUP_ROWS", group)
        idx, dist = _approximate_graph(X, y, cuts, dense)
        np.testing.assert_array_equal(idx, ref[0])
        np.testing.assert_array_equal(dist, ref[1])


def test_leaf_pairs_are_each_leafs_nearest_by_distance_then_index():
    """The compiled leaf search against a brute force: in each leaf, each row's kk nearest
    others by squared distance from the differences, ties by global index (duplicate rows
    make ties), -1/inf where the leaf has fewer; dense and CSR the same."""
    from ssl_svm.solvers import graph_numba

    rng = np.random.default_rng(4)
    X = np.round(rng.normal(size=(90, 4)), 1)
    X[10:20] = X[0]  # duplicates: equal distances
    X[rng.random(X.shape) < 0.3] = 0.0
    bounds = np.array([0, 1, 3, 40, 90])
    gid = rng.permutation(1000)[:90]
    kk = 5
    got = {}
    for kind in ("dense", "csr"):
        cand = np.full((90, kk), -1, np.int64)
        cd = np.full((90, kk), np.inf)
        if kind == "dense":
            graph_numba.leaf_pairs_dense(X, bounds, gid, cand, cd)
        else:
            C = sp.csr_matrix(X)
            graph_numba.leaf_pairs_csr(C.indptr.astype(np.int64), C.indices.astype(np.int64),
                                       C.data, bounds, gid, cand, cd)
        got[kind] = cand, cd
    for a, e in zip(bounds[:-1], bounds[1:]):
        for i in range(a, e):
            others = [j for j in range(a, e) if j != i]
            d = [float(np.sum((X[i] - X[j]) ** 2)) for j in others]
            best = sorted(zip(d, gid[others]))[:kk]
            want_c = [g for _, g in best] + [-1] * (kk - len(best))
            want_d = [v for v, _ in best] + [np.inf] * (kk - len(best))
            for cand, cd in got.values():
                assert list(cand[i]) == want_c
                np.testing.assert_allclose(cd[i], want_d, rtol=1e-14)


def test_merged_lists_keep_the_nearest_each_index_once():
    from ssl_svm.solvers import graph_numba

    rng = np.random.default_rng(5)
    kk, n = 6, 40
    lists = []
    for _ in range(2):
        c = np.array([rng.choice(30, kk, replace=False) for _ in range(n)])
        d = np.round(rng.random((n, kk)), 1) + c * 0.0  # ties
        d[:5, 3:] = np.inf
        c[:5, 3:] = -1
        o = np.lexsort((c, d), axis=1)
        lists.append((np.take_along_axis(c, o, 1), np.take_along_axis(d, o, 1)))
    # a candidate two lists share has one distance (a pair's distance is computed one way)
    dist_of = np.round(rng.random((n, 30)), 1)
    for c, d in lists:
        d[...] = np.where(c >= 0, np.take_along_axis(dist_of, np.maximum(c, 0), 1), np.inf)
        o = np.lexsort((c, d), axis=1)
        c[...], d[...] = np.take_along_axis(c, o, 1), np.take_along_axis(d, o, 1)
    cand, cd = lists[0][0].copy(), lists[0][1].copy()
    rows = np.arange(n)
    graph_numba.merge_lists(cand, cd, rows, lists[1][0], lists[1][1])
    for i in range(n):
        pool = {}
        for c, d in lists:
            for g, v in zip(c[i], d[i]):
                if g >= 0:
                    pool[g] = v
        best = sorted((v, g) for g, v in pool.items())[:kk]
        assert list(cand[i][:len(best)]) == [g for _, g in best]
        assert np.all(cand[i][len(best):] == -1)


def test_leaves_route_rows_as_the_hyperplanes_say():
    """graph_blocks.leaves against the hyperplane test written out: x goes right at node v
    when w_v·x >= c_v; a node without a hyperplane (c = -inf) sends every row right."""
    from ssl_svm.solvers.graph_blocks import leaves

    X, _ = _moons(300, d=6, seed=6)
    trees = graph_distributed.rp_trees(_SampleRows(X), 2, 4, seed=1)
    D = X.toarray()
    for levels in trees:
        node = np.zeros(300, np.int64)
        for N, c in levels:
            m = np.einsum("ij,ij->i", D, N.toarray()[node])
            node = 2 * node + (m >= c[node])
        np.testing.assert_array_equal(leaves(X, levels), node)
        assert np.unique(node).size > 4  # the trees split the rows


class _SampleRows:
    """Rows by index, as :class:`graph_distributed.RemoteRows` serves them."""

    def __init__(self, X):
        self.X = X
        self.shape = X.shape

    def __getitem__(self, idx):
        return self.X[idx]


CASES = [
    ("lapsvm", {}, False),
    ("laprls", {}, False),
    ("lapsvm", {"neighbors": 8, "laplacian_degree": 2, "bias": 1}, False),
    ("laprls", {"laplacian": "unnormalized", "graph_weights": "binary", "gamma_i": 0.01}, False),
    ("lapsvm", {"graph_metric": "scaled", "kernel": "poly", "gamma": 0.5}, True),
    ("lapsvm", {"landmark_fit": "restrict"}, False),
    ("laprls", {"landmark_fit": "restrict", "neighbors": 8, "laplacian_degree": 3,
                "bias": 1}, True),
    ("lapsvm", {"landmark_fit": "restrict", "laplacian_degree": 2, "landmarks": 1000}, False),
    ("lapsvm", {"graph_weights": "self-tuning"}, False),
    ("laprls", {"graph_weights": "self-tuning", "laplacian": "unnormalized",
                "landmark_fit": "restrict", "neighbors": 9}, True),
]


@pytest.mark.parametrize("algo,extra,costs", CASES)
def test_the_fit_on_blocks_is_the_one_process_fit(algo, extra, costs):
    """The blocks' fit (graph, kernel γ, every Newton step) gives the one-process model of
    either landmark fit (restricted: every row a landmark too, the exact problem): decision
    values on new rows within 1e-8, the training rows' values too."""
    X, y = _moons(classes=3 if extra.get("bias") else 2)
    n = X.shape[0]
    cost = np.where(np.arange(n) % 5 == 0, 2.0, 1.0) if costs else None
    p = _params(algo, **extra)
    ref = ALGORITHMS[algo].fit(X, y, cost, p)
    blocks = _blocks(X, y, [0, 130, 131, 131, 420], cost)  # one row, none
    m = graph_distributed.fit_model(LocalBlocks(blocks, X.shape[1]), algo,
                                    sorted(set(y) - {0}), p)
    Xt, _ = _moons(200, seed=9)
    a, b = ref.decision_function(Xt), m.decision_function(Xt)
    assert np.abs(a).max() > 0.1
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-8)
    tv = np.vstack([blk.values_at(np.arange(blk.y.size)) for blk in blocks])
    np.testing.assert_allclose(tv, ref.train_values, rtol=0, atol=1e-8)
    assert m.stats["graph_edges"] == ref.stats["graph_edges"]
    assert m.stats["neighbors"] == ref.stats["neighbors"]
    np.testing.assert_allclose(m.stats["objective"], ref.stats["objective"], rtol=1e-10)
    assert m.params == ref.params


@pytest.mark.parametrize("extra", [{"laplacian_degree": 2},
                                   {"landmark_fit": "restrict", "laplacian_degree": 3}])
def test_the_halo_exchanged_by_the_blocks_is_the_relayed_halo(monkeypatch, extra):
    """The graph stage's halo exchanged among the blocks (their hosts: exchange_then) or
    relayed through the driver gives the same model, bit for bit."""
    X, y = _moons()
    p = _params("lapsvm", **extra)
    models = []
    for direct in (True, False):
        monkeypatch.setattr(graph_distributed, "DIRECT", direct)
        blocks = _blocks(X, y, [0, 130, 131, 131, 420])
        models.append(graph_distributed.fit_model(LocalBlocks(blocks, X.shape[1]), "lapsvm",
                                                  [1.0, 2.0], p))
        assert all(b.relay is not direct for b in blocks)
    a, b = models
    np.testing.assert_array_equal(a.function.coef, b.function.coef)
    np.testing.assert_array_equal(a.function.b, b.function.b)
    assert a.stats["objective"] == b.stats["objective"]


def test_the_sampled_projection_on_blocks_is_the_one_process_one(monkeypatch):
    """Above the projection's row limit the least squares sum over the same sampled rows on
    the blocks as in one process."""
    real = lapsvm.projection_rows
    monkeypatch.setattr(lapsvm, "projection_rows", lambda y, lm: real(y, lm, most=200))
    X, y = _moons()
    p = _params("lapsvm")
    ref = ALGORITHMS["lapsvm"].fit(X, y, None, p)
    m = graph_distributed.fit_model(LocalBlocks(_blocks(X, y, [0, 200, 420]), X.shape[1]),
                                    "lapsvm", [1.0, 2.0], p)
    Xt, _ = _moons(100, seed=4)
    np.testing.assert_allclose(m.decision_function(Xt), ref.decision_function(Xt), atol=1e-8)
    monkeypatch.setattr(lapsvm, "projection_rows", real)  # all rows: another expansion
    whole = graph_distributed.fit_model(
        LocalBlocks(_blocks(X, y, [0, 200, 420]), X.shape[1]), "lapsvm", [1.0, 2.0], p)
    assert np.abs(whole.decision_function(Xt) - m.decision_function(Xt)).max() > 1e-6


def test_self_tuning_scales_cross_blocks_and_duplicates_weigh_one():
    """Self-tuning weights on blocks: each edge's weight needs the scale (the farthest kept
    neighbour's distance) of a row another block holds; the blocks' W is graph.adjacency's,
    bit for bit, with duplicate rows (a scale of 0: weight 1) and rows cut into blocks of one
    and none."""
    X, y = _moons(200, d=4, seed=8)
    X = sp.vstack([X, X[:3], X[:3], X[:3]], format="csr")  # three rows with duplicates
    n = X.shape[0]
    y = np.zeros(n)
    idx, dist = graph.knn(kernels.prepare(X), 3)
    ref, _ = graph.adjacency(idx, dist, "self-tuning")
    assert np.any(ref.data == 1.0)  # a duplicate's scale is 0
    blocks, _, g = _graph_on_blocks(X, y, [0, 70, 71, 71, n], True)
    g.knn(3)
    g.laplacian("self-tuning", float("nan"), False)
    W = sp.vstack([b.W for b in blocks], format="csr")
    assert (W != ref).nnz == 0


# --------------------------------------------------------------------------- on a LocalCluster

distributed = pytest.importorskip("distributed")  # a test extra: pip install .[test]


@pytest.fixture(scope="module")
def cluster():
    c = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                 host="127.0.0.1", dashboard_address=None)
    yield c
    c.close()


@pytest.mark.parametrize("algo,sample,fit", [("lapsvm", "pcmac", "auto"),
                                             ("laprls", "shuttle", "auto"),
                                             ("lapsvm", "shuttle", "restrict"),
                                             ("laprls", "pcmac", "restrict")])
def test_ssl_train_cluster_is_the_one_process_landmark_fit(cluster, tmp, algo, sample, fit):
    """ssl-train --cluster -a lapsvm|laprls: the model predicts what the one-process model
    of the same landmark fit predicts (values within 1e-8), and -l writes the same lines."""
    train, test = SAMPLES / f"{sample}.train", SAMPLES / f"{sample}.test"
    # --check cv: one process's auto check takes a share of the unlabeled rows when its fit
    # is slow (a loaded machine), the cluster's graph folds always keep every row
    args = ["-a", algo, "--landmarks", "120", "--check", "cv", train]
    local = run("ssl-train", "--landmark-fit", "project" if fit == "auto" else fit, *args,
                tmp / "local", "-l", tmp / "local.l", check=0)
    r = run("ssl-train", "--cluster", cluster.scheduler_address, "--landmark-fit", fit, *args,
            tmp / "c", "-l", tmp / "c.l", check=0)
    assert "on 2 blocks" in r.stderr

    def verdict(err):  # the check's lines: its folds on the blocks give the same figures
        return [re.sub(r"\(\d+\.\d+ s\)", "", x) for x in err.splitlines()
                if "supervised svm" in x]

    assert verdict(r.stderr) == verdict(local.stderr)
    assert verdict(r.stderr) or sample == "shuttle"  # (shuttle's rows are all labeled)
    # the rows' values after the check's folds are still the fit's
    assert (tmp / "c.l").read_text() == (tmp / "local.l").read_text()  # the labels
    for m in ("local", "c"):
        run("ssl-predict", "--values", test, tmp / m, tmp / f"{m}.p", check=0)
    a = np.loadtxt(tmp / "local.p")[:, 1:]
    b = np.loadtxt(tmp / "c.p")[:, 1:]
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-8)


def test_ssl_train_cluster_approximate_search_says_its_recall(cluster, tmp):
    r = run("ssl-train", "--cluster", cluster.scheduler_address, "-a", "lapsvm", "--knn",
            "approximate", "--landmarks", "120", SAMPLES / "pcmac.train", tmp / "m", check=0)
    line = next(x for x in r.stderr.splitlines() if "the approximate search holds" in x)
    assert float(line.split("holds ")[1].split(" %")[0]) >= 80.0
    assert "knn approximate" in (tmp / "m").read_text()
    run("ssl-predict", SAMPLES / "pcmac.test", tmp / "m", tmp / "p", check=0)


@pytest.mark.parametrize("algo", ["lapsvm", "laprls"])
def test_ssl_train_cluster_cross_validates_on_the_fit_graph(cluster, tmp, algo):
    """-v on a cluster for the graph family: the graph built once on every row, each fold
    solving with its labeled rows' labels hidden (the rows stay in the graph). With every
    row a landmark (the exact problem) each fold is the one-process fit on the same rows with
    that fold's labels hidden, predicting the fold's rows: the same accuracy."""
    from ssl_svm.formats.svmlight import write_dataset
    from ssl_svm.solvers.crossval import stratified_folds

    X, y = _moons(240, d=4, seed=11)
    y = np.where(y == 0, 0.0, np.where(y == 1, 1.0, 2.0))
    write_dataset(str(tmp / "t"), X, y)
    opts = ["--landmark-fit", "restrict", "--landmarks", "240", "--knn", "exact",
            "-k", "6", "--check", "none"]
    r = run("ssl-train", "--cluster", cluster.scheduler_address, "-a", algo, "-v", "4",
            "--seed", "3", *opts, tmp / "t", check=0)
    acc = float(re.search(r"Cross Validation Accuracy = ([\d.]+)%", r.stdout).group(1))
    assert "graph and landmark system built once" in r.stderr
    p = _params(algo, landmarks=240, landmark_fit="restrict", knn="exact", neighbors=6)
    lab = np.flatnonzero(y != 0)
    folds = stratified_folds(y[lab], 4, 3)
    right = 0
    for i in range(4):
        held = lab[folds == i]
        yi = y.copy()
        yi[held] = 0.0
        m = ALGORITHMS[algo].fit(X, yi, None, p)
        right += int(np.sum(m.predict(X[held]) == y[held]))
    assert acc == pytest.approx(100.0 * right / lab.size, abs=1e-3)
    assert 50.0 < acc < 100.0  # folds that learn, and err somewhere: a real comparison


def test_graph_options_refused_on_a_cluster_are_one_line(cluster, tmp):
    for extra, words in ((["-a", "tvrls", SAMPLES / "pcmac.train", tmp / "m"],
                          "--cluster trains"),
                         (["-a", "lapsvm", "-v", "300", SAMPLES / "pcmac.train"],
                          "-v 300 needs at least 300 labeled")):
        (tmp / "m").write_text("old model\n")
        r = run("ssl-train", "--cluster", cluster.scheduler_address, *extra, check=None)
        assert r.returncode in (1, 2) and "Traceback" not in r.stderr
        assert words in r.stderr.strip().splitlines()[-1]
        assert (tmp / "m").read_text() == "old model\n"


def test_a_worker_lost_mid_graph_fit_is_a_restart_or_one_line(tmp):
    """A worker killed while the graph stage runs: the fit starts over on the worker left
    (and writes a model that predicts) or ends with one error line; never a hang."""
    import os
    import signal
    import subprocess

    from conftest import BIN

    lines = (SAMPLES / "pcmac.train").read_text().splitlines(keepends=True)
    (tmp / "big.svm").write_text("".join(lines * 4))
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as c, \
            distributed.Client(c) as client:
        p = subprocess.Popen([str(BIN / "ssl-train"), "-a", "lapsvm", "--landmarks", "100",
                              "-k", "10", "--laplacian-degree", "2", "--verbose", "--cluster",
                              c.scheduler_address, str(tmp / "big.svm"), str(tmp / "m")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for line in p.stderr:
            if "graph newton step" in line or "graph: 10-NN" in line:
                break
        pid = sorted(client.run(os.getpid).values())[-1]
        os.kill(pid, signal.SIGKILL)
        try:
            err = p.communicate(timeout=400)[1]
        except subprocess.TimeoutExpired:
            p.kill()
            raise AssertionError("ssl-train --cluster -a lapsvm hangs after losing a worker"
                                 ) from None
    assert "Traceback" not in err, err
    if p.returncode == 0:
        assert "the fit starts over" in err, err
        run("ssl-predict", SAMPLES / "pcmac.test", tmp / "m", tmp / "p", check=0)
    else:
        assert p.returncode == 1 and err.strip().splitlines()[-1].startswith(
            "ssl-train: error: "), err


@pytest.mark.parametrize("name,kw", [("LapSVM", {"landmarks": 80, "landmark_fit": "project"}),
                                     ("LapRLS", {"landmarks": 80, "landmark_fit": "restrict"}),
                                     ("TSVM", {"lam": 1e-3})])
def test_estimators_fit_on_a_cluster_as_here(cluster, name, kw):
    """cluster=ADDRESS: the rows go to the workers as arrays and the fit runs there; the
    estimator predicts as the one fitted here (within 1e-8) and labels the unlabeled rows
    alike."""
    import ssl_svm

    X, y = _moons(300, seed=3)
    y = np.where(y == 0, -1, y)
    cls = getattr(ssl_svm, name)
    here = cls(**kw, check="none").fit(X, y)
    there = cls(**kw, check="none", cluster=cluster.scheduler_address).fit(X, y)
    Xt, _ = _moons(100, seed=5)
    np.testing.assert_allclose(there.decision_function(Xt), here.decision_function(Xt),
                               rtol=0, atol=1e-8)
    assert np.array_equal(there.transduction_, here.transduction_)
    assert there.get_params()["cluster"] == cluster.scheduler_address


def test_estimator_cluster_errors_are_typed():
    import ssl_svm

    X, y = _moons(60)
    y = np.where(y == 0, -1, y)
    with pytest.raises(TypeError, match=r"LapSVM\(cluster=5\): cluster must be a scheduler"):
        ssl_svm.LapSVM(cluster=5, check="none").fit(X, y)
    for bad in ("", "nonsense", "tcp://"):  # an empty one would start a cluster of its own
        with pytest.raises(ValueError, match=r"cluster=.*a Dask scheduler's address"):
            ssl_svm.TSVM(cluster=bad, check="none").fit(X, y)
    with pytest.raises(ValueError, match="probability=True"):
        ssl_svm.SVM(cluster="tcp://127.0.0.1:1", probability=True).fit(X, y)
    assert "cluster" not in ssl_svm.TVSVM().get_params()
