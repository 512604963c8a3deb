"""ssl-tune: grid syntax, results equal to in-process fits, -j 2 = -j 1, warm starts, resume
after a kill, metrics, --out, the VALIDATION mode; ssl-train -c (LIBSVM's grid.py)."""

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import BIN, SAMPLES, run, shared

from ssl_svm.cli import tune as tune_cli
from ssl_svm.cli.grid import parse_axis
from ssl_svm.formats.model_file import read_model
from ssl_svm.formats.svmlight import read_dataset
from ssl_svm.selection import tuning
from ssl_svm.solvers.crossval import stratified_folds
from ssl_svm.solvers.registry import ALGORITHMS

PCMAC = SAMPLES / "pcmac.train"
LINE = re.compile(r"^(?P<key>(?:\S+=\S+ )+?)(?P<metric>accuracy|f1|auc|pu)=(?P<v>\S+) "
                  r"time=\S+$")


def results(stdout: str) -> dict:
    """point key -> score from ssl-tune's output (the best line separately)."""
    out = {}
    for line in stdout.splitlines():
        m = LINE.match(line)
        if m:
            out[m.group("key").strip()] = float(m.group("v"))
    return out


def best_line(stdout: str) -> str:
    lines = [x for x in stdout.splitlines() if x.startswith("best ")]
    assert len(lines) == 1, stdout
    return lines[0]


def cv_fits(algo, X, y, cost, points, k=5, seed=0, warm=False, metric="accuracy"):
    """Reference: every point fitted in this process on the same folds, pooled held-out score;
    with ``warm`` the points are one path, each fit seeded by the previous on its fold."""
    a = ALGORITHMS[algo]
    folds = stratified_folds(y, k, seed)
    pred = {i: np.zeros(y.size) for i in range(len(points))}
    for f in range(k):
        tr, te = folds != f, folds == f
        seed_state = None
        for i, p in enumerate(points):
            params = {**a.defaults(), **p}
            kw = {"warm": seed_state} if warm and seed_state is not None else {}
            m = a.fit(X[tr], y[tr], cost[tr], params, **kw)
            seed_state = m.warm
            pred[i][te] = m.predict(X[te])
    lab = y != 0
    return [100.0 * np.mean(pred[i][lab] == y[lab]) for i in range(len(points))]


# --------------------------------------------------------------------------- grid syntax

def test_grid_ranges_and_lists():
    params = ALGORITHMS["lapsvm"].params
    assert parse_axis("gamma_a=1e-4:1e-1:x10", params, "lapsvm") == \
        ("gamma_a", [1e-4, 1e-3, 1e-2, 0.1])
    assert parse_axis("neighbors=4:12:+2", params, "lapsvm") == ("neighbors", [4, 6, 8, 10, 12])
    assert parse_axis("gamma-i=0.5,1,2,1", params, "lapsvm") == ("gamma_i", [0.5, 1.0, 2.0])
    assert parse_axis("kernel=linear,2", params, "lapsvm") == ("kernel", ["linear", "rbf"])
    assert parse_axis("gamma_a=1e-6:1e-5:x2,1", params, "lapsvm")[1] == \
        [1e-6, 2e-6, 4e-6, 8e-6, 1.0]


def test_coarse_to_fine_order_and_paths():
    g = tuning.Grid([("lambda", [1.0, 0.1, 0.01]), ("lambda_u", [1, 2, 3, 4, 5])])
    # without a path: the 2×2 corners first, then the middles
    order = [k for grp in g.groups(None) for k in grp]
    assert sorted(order) == list(range(15))
    first4 = {tuple(g.point(t).values()) for t in [list(g.index_tuples())[k] for k in order[:4]]}
    assert first4 == {(1.0, 1), (1.0, 5), (0.01, 1), (0.01, 5)}
    # with a warm path along lambda: one group per lambda_u, lambda largest first
    groups = g.groups("lambda")
    assert len(groups) == 5 and all(len(x) == 3 for x in groups)
    pts = g.points()
    assert [pts[k]["lambda"] for k in groups[0]] == [1.0, 0.1, 0.01]
    assert [pts[groups[i][0]]["lambda_u"] for i in range(5)] == [1, 5, 3, 2, 4]


USAGE = [
    (["-G", "lambda=1e-4:1e-1:y10"], "-G lambda=1e-4:1e-1:y10: '1e-4:1e-1:y10' is not a range; "
     "a range is START:STOP:xFACTOR (geometric) or START:STOP:+STEP (arithmetic)"),
    (["-G", "nosuch=1,2"], "-G nosuch=1,2: unknown parameter 'nosuch' for -a svm (valid: "
     "lambda, cost_positive, cost_negative, epsilon, bias, max_iter)"),
    (["-G", "lambda=-1,1"], "-G lambda=-1,1: -W/--lambda must be in (0, 1e+15] (got -1)"),
    (["-G", "lambda=1e-1:1e-4:x10"], "-G lambda=1e-1:1e-4:x10: the range '1e-1:1e-4:x10' goes "
     "down (STOP < START)"),
    (["-G", "lambda=0:1:x10"], "-G lambda=0:1:x10: a geometric range needs START > 0 and "
     "FACTOR > 1 (got '0:1:x10')"),
    (["-G", "lambda=1,2", "-G", "lambda=3"], "-G lambda=3: lambda is already on the grid"),
    (["-W", "1", "-G", "lambda=1,2"], "-G lambda=1,2: lambda is also fixed by -W/--lambda; give "
     "one or the other"),
    (["-G", "max_iter=1.5"], "-G max_iter=1.5: --max-iter must be an integer (got '1.5')"),
    (["-G", "lambda"], "-G lambda: expected NAME=VALUES, e.g. -G lambda=1e-4:1e-1:x10 (names for "
     "-a svm: lambda, cost_positive, cost_negative, epsilon, bias, max_iter)"),
    ([], "give at least one -G NAME=VALUES (names for -a svm: lambda, cost_positive, "
     "cost_negative, epsilon, bias, max_iter)"),
    (["-G", "lambda=1", "-a", "usmo", "--metric", "accuracy"], None),  # checked below
    (["-G", "lambda=1", "-j", "2", "--cluster", "tcp://127.0.0.1:1"],
     "-j is for local processes; the cluster's workers set the parallelism of --cluster"),
]


@pytest.mark.parametrize("args,message", USAGE[:-2] + USAGE[-1:])
def test_usage_errors(args, message):
    r = run("ssl-tune", *args, PCMAC)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.rstrip().splitlines()[-1] == f"ssl-tune: error: {message}", r.stderr
    assert r.stdout == ""


def test_metric_rules(tmp):
    r = run("ssl-tune", "-a", "usmo", "-G", "lambda=1", "--metric", "accuracy",
            SAMPLES / "pcmac.train", check=2)
    assert "ssl-tune: error: --metric accuracy needs labeled negatives; the held-out rows of " \
           "usmo are all positive (use --metric pu, or give a labeled VALIDATION file)" in r.stderr
    three = tmp / "three.svm"
    three.write_text("".join(f"{c} 1:{c + 0.1 * i} 2:{i % 3}\n" for c in (1, 2, 3)
                             for i in range(6)))
    r = run("ssl-tune", "-a", "svm", "-v", "2", "-G", "lambda=1", "--metric", "auc", three,
            check=2)
    assert "ssl-tune: error: --metric auc is for two classes (3 found)" in r.stderr


def test_folds_are_checked_before_any_fit(tmp):
    """A class with fewer labeled rows than the folds given: a usage error naming it, before
    any fit; fewer than the default 5: fewer folds, said."""
    rows = ["1 1:1 2:0.5"] + [f"-1 1:{-1 - i} 2:{i % 3}" for i in range(9)] + ["0 1:0.3"] * 20
    one = tmp / "one.svm"
    one.write_text("\n".join(rows) + "\n")
    r = run("ssl-tune", "-a", "tsvm", "-v", "5", "-G", "lambda=0.1,1", one, check=2)
    assert r.stderr.rstrip().splitlines()[-1] == (
        f"ssl-tune: error: {one}: class 1 has 1 labeled row, fewer than the 5 folds (-v 5): "
        "label more rows of it, or score on a VALIDATION file (ssl-tune -a auto keeps the "
        "supervised svm when nothing can be cross-validated)")
    assert "points" not in r.stderr and r.stdout == ""  # nothing was fitted
    three = tmp / "three.svm"
    three.write_text("\n".join(["1 1:1 2:0.5", "1 1:2 2:1", "1 1:1.5 2:0"] + rows[1:]) + "\n")
    r = run("ssl-tune", "-a", "svm", "-v", "5", "-G", "lambda=0.1,1", three, check=2)
    assert r.stderr.rstrip().splitlines()[-1] == (
        f"ssl-tune: error: {three}: class 1 has 3 labeled rows, fewer than the 5 folds (-v 5): "
        "use -v 3 or fewer, or score on a VALIDATION file")
    r = run("ssl-tune", "-a", "svm", "-v", "3", "-G", "lambda=0.1,1", three, check=0)
    assert best_line(r.stdout).startswith("best lambda=")
    default = run("ssl-tune", "-a", "svm", "-G", "lambda=0.1,1", three, check=0)
    assert ("class 1 has 3 labeled rows: 3-fold cross-validation instead of 5"
            in default.stderr)
    assert ([x.split(" time=")[0] for x in default.stdout.splitlines()]
            == [x.split(" time=")[0] for x in r.stdout.splitlines()])  # the -v 3 results


def test_cluster_without_dask_says_how_to_install(monkeypatch):
    for mod in ("dask", "dask.distributed", "distributed"):
        monkeypatch.setitem(sys.modules, mod, None)  # import fails as if not installed
    r = CliRunner().invoke(tune_cli._tune, ["-G", "lambda=1", "--cluster", "tcp://127.0.0.1:1",
                                            str(PCMAC)])
    assert r.exit_code == 2
    assert "--cluster needs Dask: pip install 'dask[distributed]' (in a source checkout: " \
           "pip install -e '.[cluster]')" in r.output


# --------------------------------------------------------------------------- results

def test_results_equal_in_process_fits_cold_and_warm():
    d = read_dataset(str(PCMAC))
    lab = d.y != 0
    X, y, c = d.X[lab], d.y[lab], d.cost[lab]
    lams = [1.0, 0.1, 0.01, 0.001]
    cold = cv_fits("svm", X, y, c, [{"lambda": v} for v in lams])
    warm = cv_fits("svm", X, y, c, [{"lambda": v} for v in lams], warm=True)
    for flag, ref in (("--no-warm-start", cold), (None, warm)):
        r = run("ssl-tune", "-q", "-a", "svm", "-G", "lambda=1e-3:1:x10",
                *([flag] if flag else []), PCMAC, check=0)
        got = results(r.stdout)
        assert set(got) == {f"lambda={v!r}" for v in lams}
        for v, acc in zip(lams, ref):
            assert got[f"lambda={v!r}"] == pytest.approx(acc, abs=5e-5), (flag, v)
        best = max(range(4), key=lambda i: (ref[i], -sorted(lams).index(lams[i])))
        assert best_line(r.stdout) == f"best lambda={lams[best]!r} accuracy={ref[best]:.6g}"


def test_tsvm_warm_path_equals_chained_fits_and_j2_equals_j1():
    d = read_dataset(str(PCMAC))
    lams = [0.1, 0.01, 0.001]
    ref = cv_fits("tsvm", d.X, d.y, d.cost, [{"lambda": v} for v in lams], warm=True)
    outs = []
    for j in ("1", "2"):
        r = run("ssl-tune", "-q", "-j", j, "-a", "tsvm", "-G", "lambda=1e-3:1e-1:x10",
                "-G", "lambda_u=0.5,1", PCMAC, check=0)
        outs.append(r.stdout)
    a, b = results(outs[0]), results(outs[1])
    assert len(a) == 6 and a == b
    assert best_line(outs[0]) == best_line(outs[1])
    for v, acc in zip(lams, ref):  # lambda_u = 1 is the default the reference used
        assert a[f"lambda={v!r} lambda_u=1.0"] == pytest.approx(acc, abs=5e-5)


def test_validation_file_mode_and_out_model(tmp):
    train, test = SAMPLES / "pcmac.train", SAMPLES / "pcmac.test"
    r = run("ssl-tune", "-q", "-a", "lapsvm", "-t", "linear", "-G", "gamma_a=1e-4,1e-2,1",
            "--out", tmp / "best.model", train, test, check=0)
    got = results(r.stdout)
    d, v = read_dataset(str(train)), read_dataset(str(test))
    a = ALGORITHMS["lapsvm"]
    for g in (1e-4, 1e-2, 1.0):
        m = a.fit(d.X, d.y, d.cost, {**a.defaults(), "kernel": "linear", "gamma_a": g})
        acc = 100 * np.mean(m.predict(v.X[:, : d.X.shape[1]]) == v.y)
        assert got[f"gamma_a={g!r}"] == pytest.approx(acc, abs=5e-5)
    best = best_line(r.stdout)
    m = read_model(str(tmp / "best.model"))
    assert best.startswith(f"best gamma_a={m.params['gamma_a']!r} ")
    assert m.params["kernel"] == "linear"
    r = run("ssl-predict", test, tmp / "best.model", tmp / "p", check=0)
    acc = float(re.search(r"Accuracy = ([0-9.]+)%", r.stderr).group(1))
    assert best.endswith(f"accuracy={acc:.6g}")


def test_metrics_against_brute_force():
    rng = np.random.default_rng(3)
    y = np.where(rng.random(200) < 0.4, 1, -1)
    v = rng.normal(size=200) + 0.8 * y
    v[:20] = np.round(v[:20])  # some ties
    pos, neg = v[y == 1], v[y == -1]
    pairs = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    assert tuning.auc(y == 1, v) == pytest.approx(pairs / (pos.size * neg.size), rel=1e-12)
    pred = np.where(v > 0, 1, -1)
    tp = np.sum((pred == 1) & (y == 1))
    prec, rec = tp / np.sum(pred == 1), tp / np.sum(y == 1)
    assert tuning.f1(y, pred, 1) == pytest.approx(200 * prec * rec / (prec + rec), rel=1e-12)
    res = [tuning.FoldResult(0, 0, 0.0, pred[:100], v[:100], 0.3, [1, -1]),
           tuning.FoldResult(0, 1, 0.0, pred[100:], v[100:], 0.5, [1, -1])]
    assert tuning.score("pu", y, res) == pytest.approx(rec ** 2 / 0.4, rel=1e-12)
    assert tuning.score("accuracy", y, res) == pytest.approx(100 * np.mean(pred == y))


def test_usmo_default_metric_pu():
    # PU data: the sample's +1 rows labeled, everything else unlabeled
    src = shared("bench", "usps49-10", "train.svm")
    r = run("ssl-tune", "-q", "-a", "usmo", "-t", "linear", "--negatives-as-unlabeled", "-v", "3",
            "-G", "lambda=1e-3,1e-1", src, check=0)
    got = results(r.stdout)
    assert len(got) == 2 and all(np.isfinite(x) and x > 0 for x in got.values())
    assert " pu=" in best_line(r.stdout)


def test_failed_point_is_retried_then_reported():
    # a poly kernel of degree 50 with a huge γ overflows: every fit is refused as not finite
    # (a memory limit would stop the whole run instead: the same for every point)
    r = run("ssl-tune", "-q", "-a", "lapsvm", "-t", "poly", "-d", "50", "-G", "gamma=1e14,1e15",
            PCMAC)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and all(" failed (fold 1 of 5, 2 attempts): " in x for x in lines)
    assert r.stderr.rstrip().endswith("every grid point failed; see the lines above")


# --------------------------------------------------------------------------- resume

def test_resume_after_kill_runs_only_the_missing_points(tmp):
    data = PCMAC
    args = ["-q", "-a", "tsvm", "--no-warm-start", "-G", "lambda=1e-5:1e-1:x10",
            "-G", "lambda_u=0.1,1,10", data]
    state = tmp / "grid.txt"
    p = subprocess.Popen([str(BIN / "ssl-tune"), *map(str, args), "--resume", str(state)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while time.time() < deadline:
        if state.exists() and len(state.read_text().splitlines()) >= 4:  # header + 3 points
            break
        time.sleep(0.01)
    os.kill(p.pid, signal.SIGKILL)
    p.communicate()
    assert p.returncode == -signal.SIGKILL  # killed mid-grid, not finished
    before = state.read_text().splitlines()
    n_done = len(before) - 1
    assert 3 <= n_done < 15
    r = run("ssl-tune", *args, "--resume", state, check=0)
    after = state.read_text().splitlines()
    assert after[: len(before)] == before  # kept, then only the missing points appended
    keys = [LINE.match(x).group("key") for x in after[1:]]
    assert len(after) - 1 == 15 and len(set(keys)) == 15
    assert results(r.stdout) == results("\n".join(after[1:]))  # old lines reprinted, new ones
    full = run("ssl-tune", *args, check=0)
    assert results(full.stdout) == results(r.stdout)
    assert best_line(full.stdout) == best_line(r.stdout)
    # a resume file of another setup is refused
    r = run("ssl-tune", "-q", "-a", "tsvm", "-U", "2", "--no-warm-start", "-G", "lambda=1e-4",
            data, "--resume", state, check=1)
    assert "was written by a run with other data, algorithm, fixed options, folds, seed or " \
           "metric; use another --resume file" in r.stderr


# --------------------------------------------------------------------------- ssl-train -c

def test_train_c_is_liblinears_c(tmp):
    from liblinear.liblinearutil import train as liblinear_train

    r = run("ssl-train", "-a", "svm", "-c", "2", "-e", "1e-10", PCMAC, tmp / "m", check=0)
    assert "svm: lambda=0.25 " in r.stderr
    m = read_model(str(tmp / "m"))
    d = read_dataset(str(PCMAC))
    lab = d.y != 0
    X, y = d.X[lab], d.y[lab]
    ll = liblinear_train(y.tolist(), X, "-s 2 -B 1 -c 2 -e 1e-10 -q")
    w, b = ll.get_decfun()
    sign = 1 if ll.get_labels()[0] == 1 else -1
    np.testing.assert_allclose(m.function.W[:, 0], sign * np.array(w)[: X.shape[1]],
                               rtol=1e-5, atol=1e-7)
    assert m.function.b[0] == pytest.approx(sign * b, rel=1e-5, abs=1e-7)
    r = run("ssl-train", "-a", "svm", "-c", "2", "-W", "1", PCMAC, tmp / "m", check=2)
    assert "ssl-train: error: -c sets -W/--lambda; give one or the other" in r.stderr
    r = run("ssl-train", "-a", "lapsvm", "-c", "0.5", "-t", "linear", PCMAC, tmp / "m", check=0)
    assert read_model(str(tmp / "m")).params["gamma_a"] == 1.0


def test_progress_on_stderr():
    r = run("ssl-tune", "-a", "svm", "-G", "lambda=1,0.1", PCMAC, check=0)
    err = r.stderr.splitlines()
    assert "svm: 2 points × 5 folds, 1 process, metric accuracy, warm starts along lambda; " \
           "fixed cost_positive=1 cost_negative=1 epsilon=1e-06 bias=1 max_iter=1000" in err
    # not a terminal: a bar line at the first fold fit (the bar moves per fit, 1/10 of this
    # grid: with whole points only, the ETA of a few slow points jumped from minutes to done),
    # then at most every 10 s, and at the end. No ETA at the first fit: the time before it is
    # the workers' start (an 8 s grid once showed ETA 8m06s); the rate counts from there
    bars = [x for x in err if x.startswith("[")]
    assert re.fullmatch(r"\[#{30}\] 2/2 points  [0-9.]+ s elapsed, ETA 0\.0 s", bars[-1]), bars
    assert re.fullmatch(r"\[#{3} {27}\] 0/2 points  [0-9.]+ s elapsed, ETA \?",
                        bars[0]), bars
    assert len(r.stdout.splitlines()) == 3  # the bar never reaches stdout
    q = run("ssl-tune", "-q", "-a", "svm", "-G", "lambda=1,0.1", PCMAC, check=0)
    assert q.stderr == "" and q.stdout.splitlines()[-1] == r.stdout.splitlines()[-1]


def test_named_values_on_the_grid():
    r = run("ssl-tune", "-q", "-a", "laprls", "-v", "3", "-G", "gamma=features,auto,0.5", PCMAC,
            check=0)
    assert sorted(ln.split()[0] for ln in r.stdout.splitlines()[:-1]) == [
        "gamma=0.5", "gamma=auto", "gamma=features"]


def test_knn_keeps_its_results_only_when_asked_and_within_its_bound(monkeypatch):
    """graph.keep_neighbours: the same rows and arguments search once (the same arrays,
    copies the caller may change); other arguments search again; a result over the bound is
    not kept; drop_neighbours turns it off."""
    from ssl_svm.solvers import graph

    calls = []
    search = graph._knn
    monkeypatch.setattr(graph, "_knn", lambda *a: calls.append(a[1]) or search(*a))
    monkeypatch.setattr(graph, "_knn_cache", None)
    X = np.random.default_rng(0).normal(size=(60, 4))
    a = graph.knn(X, 5)
    graph.knn(X, 5)
    assert len(calls) == 2  # off by default: every call searches
    graph.keep_neighbours()
    try:
        b = graph.knn(X, 5)
        b[0][:] = -1  # the caller's copy
        c = graph.knn(X, 5)
        assert len(calls) == 3
        np.testing.assert_array_equal(c[0], a[0])
        np.testing.assert_array_equal(c[1], a[1])
        graph.knn(X, 6)
        graph.knn(X + 1e-3, 5)
        assert calls[3:] == [6, 5]
        graph.keep_neighbours(400)  # a quarter of 400 bytes: the cache holds 100 bytes
        graph.knn(X * 2.0, 5)
        graph.knn(X * 2.0, 5)
        assert len(calls) == 7  # 60×5 neighbours take more than 100 bytes: searched again
    finally:
        graph.drop_neighbours()
    graph.knn(X, 5)
    assert len(calls) == 8


def test_tune_searches_a_folds_neighbours_once_for_all_its_points(tmp, monkeypatch):
    """ssl-tune of a graph solver over two groups of points (no warm start between them):
    each fold's neighbours are searched once, and the predictions are those of searching
    every time."""
    from ssl_svm.solvers import graph

    data = read_dataset(str(shared("bench", "usps49-10", "train.svm")))
    X, y = data.X, data.y
    params = ALGORITHMS["laprls"].defaults()
    problem = tuning.make_problem("laprls", X, y, np.ones(y.size), params, {}, 3, 0)
    groups = [[(0, {"gamma_i": 0.01})], [(1, {"gamma_i": 1.0})]]
    calls = []
    search = graph._knn
    monkeypatch.setattr(graph, "_knn", lambda *a: calls.append(1) or search(*a))
    monkeypatch.setattr(graph, "_knn_cache", None)

    def scores():
        out = []
        for g in groups:  # as the drivers order the tasks: every fold of a group in turn
            for f in range(3):
                (r,) = tuning.run_group(problem, g, f, False, 1)
                assert r.error is None
                out.append(r.pred)
        return out

    kept = scores()
    assert len(calls) == 3  # one search per fold
    # the bound is a share of the run's memory limit, not a fixed size
    assert graph._knn_cache_bytes == int(graph.KNN_CACHE_SHARE *
                                         graph.default_memory_limit())
    graph.drop_neighbours()
    problem.run["max_memory"] = 64 << 20
    tuning.run_group(problem, groups[0], 0, False, 1)
    assert graph._knn_cache_bytes == 16 << 20
    problem.run.pop("max_memory")
    calls.clear()
    graph.drop_neighbours()
    monkeypatch.setattr(graph, "keep_neighbours", lambda *a: None)
    fresh = scores()
    assert len(calls) == 6
    for a, b in zip(kept, fresh):
        np.testing.assert_array_equal(a, b)
    assert graph._knn_cache is None
