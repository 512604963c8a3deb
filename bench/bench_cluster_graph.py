"""ssl-train --cluster -a lapsvm on a LocalCluster against the same fit in one process (issue
65's benchmark of the graph family on a cluster).

For a training file (bench/make_rolls.py --rows N --out DIR), runs in turn, ``--reps`` times:

* ``ssl-train --cluster`` on a LocalCluster of W workers (T threads each),
* ``ssl-train --landmark-fit project`` in one process (numba's default threads),

both ``--check none`` at the same graph and landmarks, and prints each run's wall time, the
graph stage's and the landmark system's times, the CG iterations and the time per CG iteration
(a "round": p + 2 round trips to every worker on the cluster), the halo values exchanged per
product with L, and the test error of both models on DIR/test.svm; then a projection of the
round to N machines from these measurements (on paper: see BENCHMARKS).

Usage: python bench/bench_cluster_graph.py DIR [--workers 2] [--threads 1] [--landmarks 500]
       [-k 6] [--degree 1] [--knn exact|approximate|auto] [--reps 1]
       [--only cluster|one-process] [--relay] [--log DIR]

``--relay`` adds a third run: the cluster with the graph stage's halo relayed through the
command (as before the workers exchanged it themselves), to compare the two.

``--only`` runs one side alone (at 10⁷ rows each run takes most of an hour); ``--log DIR``
keeps each run's --verbose log there, written as the run goes (a run stopped early leaves
the figures of the stages it finished).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
# ssl-train with the graph stage's halo relayed through the command (graph_distributed.DIRECT)
RELAYED = ("import sys; from ssl_svm.solvers import graph_distributed; "
           "graph_distributed.DIRECT = False; from ssl_svm.cli.train import main; "
           "sys.argv[0] = 'ssl-train'; main()")


def timed(cmd: list[str], log: Path | None = None) -> tuple[float, str]:
    t = time.perf_counter()
    if log is None:
        r = subprocess.run(cmd, capture_output=True, text=True)
        err = r.stderr
    else:
        with open(log, "w") as f:
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=f, text=True)
        err = log.read_text()
    if r.returncode != 0:
        raise SystemExit(err)
    return time.perf_counter() - t, err


def error(model: str, test: str) -> float:
    r = subprocess.run([str(BIN / "ssl-predict"), test, model, "/dev/null"],
                       capture_output=True, text=True, check=True)
    return 100.0 - float(re.search(r"Accuracy = ([\d.]+)%", r.stderr).group(1))


def figures(err: str) -> dict:
    """The graph stage's figures from a --verbose log (one process or the cluster's)."""
    out = {}
    m = re.search(r"graph on the blocks ([\d.]+) s; a product with L exchanges (\d+) halo", err)
    if m:
        out["graph"], out["halo"] = float(m.group(1)), int(m.group(2))
    m = re.search(r"landmark system ([\d.]+) s, graph stage and expansion ([\d.]+) s \((\d+) CG",
                  err)
    if m:
        out["system"], out["solve"], out["cg"] = (float(m.group(1)), float(m.group(2)),
                                                  int(m.group(3)))
    m = re.search(r"^graph ([\d.]+) s, kernel ([\d.]+) s", err, re.M)
    if m:
        out["graph"], out["system"] = float(m.group(1)), float(m.group(2))
    cg = [int(x) for x in re.findall(r"graph newton step \d+: (\d+) CG iterations", err)]
    if cg:
        out["cg"] = sum(cg)
    m = re.search(r"landmark expansion fitted to the graph values \(([\d.]+) s\)", err)
    if m:
        out["solve"] = float(m.group(1))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--landmarks", default="500")
    ap.add_argument("-k", default="6")
    ap.add_argument("--degree", default="1")
    ap.add_argument("--knn", default="exact", help="the neighbour search of both runs")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--only", choices=["cluster", "one-process"])
    ap.add_argument("--log", type=Path, help="a folder for each run's --verbose log")
    ap.add_argument("--relay", action="store_true",
                    help="also the cluster with the halo relayed through the command")
    a = ap.parse_args()
    if a.log:
        a.log.mkdir(parents=True, exist_ok=True)

    def log(name: str, rep: int) -> Path | None:
        return a.log / f"{name}-{rep}.log" if a.log else None

    import distributed

    d = Path(a.dir)
    args = ["-a", "lapsvm", "--check", "none", "--verbose", "--landmarks", a.landmarks,
            "-k", a.k, "--laplacian-degree", a.degree, "--knn", a.knn, str(d / "train.svm")]
    runs: dict[str, list] = {}
    if a.only != "one-process":
        runs["cluster"] = []
    if a.relay:
        runs["cluster, relayed"] = []
    if a.only != "cluster":
        runs["one process"] = []
    cluster = distributed.LocalCluster(n_workers=a.workers, threads_per_worker=a.threads,
                                       processes=True, host="127.0.0.1",
                                       dashboard_address=None, memory_limit=0)
    try:
        for rep in range(a.reps):
            if "cluster" in runs:
                wall, err = timed([str(BIN / "ssl-train"), "--cluster",
                                   cluster.scheduler_address, *args, "/tmp/bench-cg-c.model"],
                                  log("cluster", rep))
                runs["cluster"].append((wall, figures(err)))
                print(f"cluster rep {rep}: {wall:.1f} s {runs['cluster'][-1][1]}", flush=True)
            if "cluster, relayed" in runs:
                wall, err = timed([sys.executable, "-c", RELAYED, "--cluster",
                                   cluster.scheduler_address, *args, "/tmp/bench-cg-r.model"],
                                  log("relayed", rep))
                runs["cluster, relayed"].append((wall, figures(err)))
                print(f"relayed rep {rep}: {wall:.1f} s {runs['cluster, relayed'][-1][1]}",
                      flush=True)
            if "one process" in runs:
                wall, err = timed([str(BIN / "ssl-train"), "--landmark-fit", "project", *args,
                                   "/tmp/bench-cg-l.model"], log("one-process", rep))
                runs["one process"].append((wall, figures(err)))
                print(f"one process rep {rep}: {wall:.1f} s {runs['one process'][-1][1]}",
                      flush=True)
    finally:
        cluster.close()
    test = str(d / "test.svm")
    models = {"cluster": "/tmp/bench-cg-c.model", "one process": "/tmp/bench-cg-l.model",
              "cluster, relayed": "/tmp/bench-cg-r.model"}
    errs = {kind: error(models[kind], test) for kind in runs}

    def med(kind, key):
        vals = [f[key] for _, f in runs[kind] if key in f]
        return statistics.median(vals) if vals else float("nan")

    print()
    print("| run | wall (s) | graph (s) | landmark system (s) | graph stage (s) | CG its | "
          "per CG iteration (ms) | test error |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in runs:
        wall = statistics.median(w for w, _ in runs[kind])
        cg = med(kind, "cg")
        print(f"| {kind}{f', {a.workers} × {a.threads} thread' if 'cluster' in kind else ''} "
              f"| {wall:.1f} | {med(kind, 'graph'):.1f} | {med(kind, 'system'):.1f} | "
              f"{med(kind, 'solve'):.1f} | {cg:.0f} | {1e3 * med(kind, 'solve') / cg:.2f} | "
              f"{errs[kind]:.2f} % |")
    if "cluster" in runs:
        print(f"\nhalo values exchanged per product with L: {med('cluster', 'halo'):.0f}")


if __name__ == "__main__":
    main()
