"""ssl-train --cluster on a LocalCluster against ssl-train in one process (issue 34's benchmark).

For a training file (a generated split: bench/make_split.py --rows 5000000 --d 1000000
--labeled 50000), runs in turn:

* ``ssl-train --cluster`` on a LocalCluster of W workers (T threads each),
* ``ssl-train`` in one process (numba's default threads, ``--check none`` as the cluster fit),

and prints for each: wall time, the client's (or the process's) peak resident memory, each
worker's peak, the calls to the blocks (≈ CG iterations + a few per Newton step) and the time
per call; then the round trip of a d-long vector to the workers (the communication of one CG
iteration) and a projection to N machines: per call, compute / N + N × the measured round trip
(the client sends p to each worker and sums their vectors: a star, not a tree).

Usage: python bench/bench_cluster.py TRAIN [--workers 2] [--threads 1] [-a tsvm] [-W 1e-3]
       [--no-local] [--reps 1] [--log FILE]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BIN = Path(sys.executable).parent


def peak_run(cmd: list[str]) -> tuple[float, int, subprocess.CompletedProcess]:
    """(wall seconds, peak resident bytes of the command, the completed process)."""
    code = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024); "
            "sys.exit(r.returncode)")
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"{cmd[0]} failed:\n{r.stderr}")
    return wall, int(r.stdout.split()[-1]), r


def worker_peaks(client) -> list[int]:
    def peak():
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    return sorted(client.run(peak).values())


def round_trip(client, path: str, d: int, reps: int = 200) -> float:
    """Seconds per round trip of a (d + 1)-vector to every worker and back (each host sums its
    blocks: one vector each way per worker)."""
    from ssl_svm import transport

    blocks = transport.load(client, [(path, False)], False, say=lambda *a: None)
    try:
        v = np.zeros(d + 1)
        W = len(blocks.socks)
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            blocks.request([(h, "echo", (v,)) for h in range(W)])
            times.append(time.perf_counter() - t)
        return statistics.median(times)
    finally:
        blocks.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("train")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("-a", dest="algo", default="tsvm")
    ap.add_argument("-W", dest="lam", default="1e-3")
    ap.add_argument("--no-local", action="store_true", help="skip the one-process run")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--log", help="write the cluster runs' stderr (--verbose) to this file")
    a = ap.parse_args()

    import distributed

    args = ["-a", a.algo, "-W", a.lam, "--verbose", a.train]
    rows = []
    cluster = distributed.LocalCluster(n_workers=a.workers, threads_per_worker=a.threads,
                                       processes=True, host="127.0.0.1",
                                       dashboard_address=None, memory_limit=0)
    client = distributed.Client(cluster)
    try:
        for rep in range(a.reps):
            wall, peak, r = peak_run([str(BIN / "ssl-train"), "--cluster",
                                      cluster.scheduler_address, *args, "/tmp/bench-c.model"])
            if a.log:
                with open(a.log, "a") as f:
                    f.write(r.stderr)
            calls = int(re.search(r"(\d+) calls to the workers' blocks", r.stderr).group(1))
            d = int(re.search(r"n_features (\d+)", Path("/tmp/bench-c.model").read_text())
                    .group(1))
            rows.append(("cluster", rep, wall, peak, worker_peaks(client), calls))
            print(f"cluster rep {rep}: {wall:.1f} s, client peak {peak / 2**20:.0f} MiB, "
                  f"workers {[p // 2**20 for p in rows[-1][4]]} MiB, {calls} calls",
                  flush=True)
            if not a.no_local:
                wall, peak, r = peak_run([str(BIN / "ssl-train"), "--check", "none", *args,
                                          "/tmp/bench-l.model"])
                rows.append(("local", rep, wall, peak, [], calls))
                print(f"one process rep {rep}: {wall:.1f} s, peak {peak / 2**20:.0f} MiB",
                      flush=True)
        rt = round_trip(client, a.train, d)
    finally:
        client.close()
        cluster.close()

    def med(kind, i):
        return statistics.median(r[i] for r in rows if r[0] == kind)

    tc = med("cluster", 2)
    calls = rows[0][5]
    print()
    print("| run | wall (s) | client / process peak (MiB) | worker peaks (MiB) | per call "
          "(ms) |")
    print("|---|---|---|---|---|")
    wp = rows[0][4]
    print(f"| cluster, {a.workers} × {a.threads} thread | {tc:.1f} | "
          f"{med('cluster', 3) / 2**20:.0f} | {', '.join(str(p // 2**20) for p in wp)} | "
          f"{1e3 * tc / calls:.2f} |")
    if not a.no_local:
        tl = med("local", 2)
        print(f"| one process | {tl:.1f} | {med('local', 3) / 2**20:.0f} | | "
              f"{1e3 * tl / calls:.2f} |")
        print(f"\ncluster / one process: {tc / tl:.2f}")
    print(f"round trip of a {d + 1}-vector to {a.workers} workers: {1e3 * rt:.3f} ms "
          f"({rt / (tc / calls) * 100:.1f} % of a call)")
    per_call = tc / calls
    compute = max(per_call - rt, 0.0) * a.workers  # one worker's share × workers = all
    one = rt / a.workers
    print("\nprojection (star: the client talks to every worker):")
    print("| machines | per call (ms) | speed-up over 1 |")
    print("|---|---|---|")
    base = compute + one
    for n in (1, 2, 4, 8, 16, 32):
        t = compute / n + n * one
        print(f"| {n} | {1e3 * t:.2f} | {base / t:.2f} |")


if __name__ == "__main__":
    main()
