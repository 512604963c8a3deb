"""ssl-tune and parallel ssl-predict: speed-up of -j 2, warm starts along a λ path, predict
throughput.

    python bench/bench_tune.py jobs       # 20-point grid, -j 1 against -j 2
    python bench/bench_tune.py warm       # 10-point λ paths: warm starts against cold fits
    python bench/bench_tune.py predict    # rows/s and peak memory of ssl-predict -j 1, -j 2

Every figure is a wall-clock time of the installed commands measured in the same run (the
machine is noisy: compare the ratios). ``grid`` = the search itself, as ssl-tune reports it
(``grid done in``: the workers' start-up included, reading the data excluded).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tools import peak_rss

BIN = Path(sys.executable).parent
SHARED = Path(os.environ.get("SSL_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def tune(*args) -> tuple[float, float, str]:
    """(grid seconds, wall seconds, best line) of one ssl-tune run."""
    t0 = time.perf_counter()
    r = subprocess.run([str(BIN / "ssl-tune"), *map(str, args)], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    grid = float(re.search(r"grid done in ([0-9.]+) s", r.stderr).group(1))
    best = [x for x in r.stdout.splitlines() if x.startswith("best ")][0]
    return grid, wall, best


def tree_peak(args) -> tuple[float, float, str]:
    """(seconds, peak RSS in MB of the process and its children together, stderr)."""
    code, rss, secs, err = peak_rss(args, tree=True)
    if code != 0:
        raise SystemExit(err)
    return secs, rss, err


def jobs() -> None:
    grid = ["-a", "tsvm", "-G", "lambda=1e-4:1e-1:x10", "-G", "lambda_u=0.1,0.3,1,3,10"]
    print("20-point grid (lambda 1e-4..1e-1 × lambda_u 0.1..10), tsvm, 5 folds")
    print("| data | warm starts | tasks | -j 1 grid s | -j 2 grid s | speed-up | same results |")
    print("|---|---|---:|---:|---:|---:|---|")
    cases = [("pcmac-svmlin", "1,946 rows", True), ("pcmac-svmlin", "1,946 rows", False),
             ("a9a-100", "32,561 rows", True)]
    for split, rows, warm in cases:
        data = SHARED / "bench" / split / "train.svm"
        extra = [] if warm else ["--no-warm-start"]
        tasks = "5 paths × 5 folds" if warm else "20 points × 5 folds"
        g1, _, b1 = tune(*grid, *extra, data)
        g2, _, b2 = tune("-j", "2", *grid, *extra, data)
        print(f"| {split} ({rows}) | {'yes' if warm else 'no'} | {tasks} | {g1:.1f} | {g2:.1f} "
              f"| {g1 / g2:.2f}× | {'yes' if b1 == b2 else 'NO'} |", flush=True)


def warm() -> None:
    cases = [
        ("svm", SHARED / "datasets" / "a9a" / "a9a", ["-G", "lambda=1e-7:1e2:x10"],
         "a9a, 32,561 rows"),
        ("tsvm", SHARED / "bench" / "pcmac-svmlin" / "train.svm", ["-G", "lambda=1e-6:1e3:x10"],
         "pcmac split, 1,946 rows"),
        ("lapsvm", SHARED / "bench" / "usps49-10" / "train.svm",
         ["-t", "rbf", "-g", "0.0078125", "-G", "gamma_a=1e-8:10:x10"], "usps 4/9, 1,296 rows"),
    ]
    print("10-point λ path (largest first), 5 folds, -j 1")
    print("| algorithm | data | cold grid s | warm grid s | speed-up | best cold | best warm |")
    print("|---|---|---:|---:|---:|---|---|")
    for algo, data, g, name in cases:
        cold, _, bc = tune("-a", algo, *g, "--no-warm-start", data)
        hot, _, bw = tune("-a", algo, *g, data)
        print(f"| {algo} | {name} | {cold:.1f} | {hot:.1f} | {cold / hot:.2f}× | "
              f"{bc[5:]} | {bw[5:]} |", flush=True)


def predict() -> None:
    src = (SHARED / "datasets" / "a9a" / "a9a").read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        big = tmp / "big.svm"
        with open(big, "wb") as f:
            for _ in range(40):
                f.write(src)
        rows = 40 * src.count(b"\n")
        small = tmp / "small.svm"
        small.write_bytes(b"".join(src.splitlines(keepends=True)[:2000]))
        subprocess.run([BIN / "ssl-train", "-q", "-a", "svm", "-W", "1e-3", small, tmp / "lin"],
                       check=True)
        subprocess.run([BIN / "ssl-train", "-q", "-a", "lapsvm", "-t", "rbf", small,
                        tmp / "rbf"], check=True)
        print(f"ssl-predict on a9a × 40 ({rows:,} rows, {big.stat().st_size / 2**20:.0f} MB); "
              "kernel model: lapsvm rbf with 2,000 expansion rows")
        print("| model | -j | seconds | rows/s | speed-up | peak RSS (all processes) MB | "
              "output identical |")
        print("|---|---:|---:|---:|---:|---:|---|")
        for model in ("lin", "rbf"):
            base = None
            for j in (1, 2):
                out = tmp / f"p{j}"
                secs, rss, _ = tree_peak([BIN / "ssl-predict", "-q", "--values", "-j", j, big,
                                          tmp / model, out])
                base = base or secs
                same = (tmp / "p1").read_bytes() == out.read_bytes()
                print(f"| {'linear' if model == 'lin' else 'rbf expansion'} | {j} | {secs:.1f} "
                      f"| {rows / secs:,.0f} | {base / secs:.2f}× | {rss:.0f} | "
                      f"{'yes' if same else 'NO'} |", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("jobs", "warm", "predict"))
    {"jobs": jobs, "warm": warm, "predict": predict}[ap.parse_args().what]()
