"""Each solver quiet and on a busy machine: whole-process `ssl-train` time under load / quiet.

The load is what a shared cluster node or `make -j2` gives: a second `ssl-train` of the same
command in a loop, plus one busy-loop process per CPU available to this process. With N CPUs
that is N + 2 runnable processes, so a solver that takes its fair share of the CPU runs about
(N + 2) / N times slower (2x on two CPUs); a parallel region that waits for descheduled threads
runs far slower (pcmac tsvm: 25x with GNU OpenMP's default spinning wait, see
solvers/host/pools.py).

Linear solvers on pcmac-svmlin (λ = 0.001, λ_u = 1), kernel and graph solvers on usps49-10 at
their defaults (usmo with --negatives-as-unlabeled). Each row: median wall seconds of --reps
quiet runs, then of --reps loaded runs (one warm-up run first, so numba's cache is warm), and
the ratio.

Usage: python bench/bench_contention.py [--only NAME ...] [--reps N] [--env VAR=VALUE ...]
       (--env applies to every ssl-train run, e.g. OMP_WAIT_POLICY=active for the old default)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ssl_svm.solvers.host.pools import available_cpus  # noqa: E402

SHARED = Path(os.environ.get("SSL_SHARED", Path(__file__).resolve().parents[2] / "shared"))
BIN = Path(sys.executable).parent
PCMAC = SHARED / "bench" / "pcmac-svmlin" / "train.svm"
USPS = SHARED / "bench" / "usps49-10" / "train.svm"

RUNS = {
    "rls": ["-a", "rls", "-W", "0.001", PCMAC],
    "svm": ["-a", "svm", "-W", "0.001", PCMAC],
    "tsvm": ["-a", "tsvm", "-W", "0.001", "-U", "1", PCMAC],
    "da": ["-a", "da", "-W", "0.001", "-U", "1", PCMAC],
    "lapsvm": ["-a", "lapsvm", USPS],
    "laprls": ["-a", "laprls", USPS],
    "usmo": ["-a", "usmo", "--negatives-as-unlabeled", USPS],
    "tvrls": ["-a", "tvrls", USPS],
    "tvsvm": ["-a", "tvsvm", USPS],
    "cheeger-rls": ["-a", "cheeger-rls", USPS],
    "cheeger-svm": ["-a", "cheeger-svm", USPS],
}


def command(name: str, model: Path) -> list[str]:
    return [str(BIN / "ssl-train"), "-q", *map(str, RUNS[name]), str(model)]


def timed(cmd: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


class Load:
    """One busy loop per CPU and a second training job in a loop, until stopped."""

    def __init__(self, cmd: list[str], env: dict):
        self.stop = threading.Event()
        self.spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                         for _ in range(available_cpus())]
        self.job = threading.Thread(target=self._loop, args=(cmd, env), daemon=True)
        self.job.start()
        time.sleep(0.5)

    def _loop(self, cmd, env):
        while not self.stop.is_set():
            subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def close(self):
        self.stop.set()
        for p in self.spinners:
            p.kill()
            p.wait()
        self.job.join()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", choices=sorted(RUNS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--env", nargs="*", default=[], metavar="VAR=VALUE")
    args = ap.parse_args()
    env = dict(os.environ)
    env.update(kv.split("=", 1) for kv in args.env)
    names = args.only or list(RUNS)
    print(f"{available_cpus()} CPUs; load = {available_cpus()} busy loops + a second job; "
          f"env {' '.join(args.env) or '(defaults)'}; median of {args.reps} runs")
    print("| solver | quiet s | loaded s | loaded / quiet |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            mine, other = Path(tmp) / "a.model", Path(tmp) / "b.model"
            timed(command(name, mine), env)  # warm-up: numba's cache, the page cache
            quiet = statistics.median(timed(command(name, mine), env) for _ in range(args.reps))
            load = Load(command(name, other), env)
            try:
                loaded = statistics.median(timed(command(name, mine), env)
                                           for _ in range(args.reps))
            finally:
                load.close()
            print(f"| {name} | {quiet:.2f} | {loaded:.2f} | {loaded / quiet:.1f}x |",
                  flush=True)


if __name__ == "__main__":
    main()
