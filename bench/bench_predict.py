"""ssl-predict throughput and peak memory; ssl-train / ssl-predict start-up time.

Throughput: a synthetic file of 50-nonzero rows (default 1M rows, ~0.6 GB; a 20,000-row
block repeated) is predicted with a model trained on its first block; rows per minute and the
peak resident memory of the ssl-predict process are printed, next to the same for a small
input (memory must not grow with the input). Start-up (the README's table): median wall time,
warm numba cache, of ``--help``, ssl-predict of a 100-row file with a linear model and
ssl-train on the 500-row sample (sample_data/pcmac.train, 50 labeled rows) with the linear
solvers (which never start numba on it) and tsvm (which does), and of `python -c pass`.

Usage: python bench/bench_predict.py [--rows N] [--keep DIR] [--startup-only]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tools import peak_rss, svmlight_block  # noqa: E402

BIN = Path(sys.executable).parent
SAMPLES = Path(__file__).resolve().parent.parent / "sample_data"


def measure(args):
    code, rss, secs, err = peak_rss(args)
    if code != 0:
        raise SystemExit(f"{args[0]} failed: {err}")
    return secs, rss


def median_time(args, n=9):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([str(a) for a in args], check=True, capture_output=True)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--keep", default=None, help="folder for the generated files (else a temp)")
    ap.add_argument("--startup-only", action="store_true", help="only the start-up table")
    args = ap.parse_args()
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="bench-predict-"))
    tmp.mkdir(parents=True, exist_ok=True)
    if not args.startup_only:
        throughput(tmp, args.rows)
    startup(tmp)
    if not args.keep:
        for p in tmp.iterdir():
            p.unlink()
        tmp.rmdir()


def throughput(tmp, n_rows):
    b = svmlight_block(20000, 100_000, 50)
    small = tmp / "small.svm"
    small.write_bytes(b)
    big = tmp / "big.svm"
    reps = max(1, n_rows // 20000)
    with open(big, "wb") as f:
        for _ in range(reps):
            f.write(b)
    model = tmp / "model"
    subprocess.run([BIN / "ssl-train", "-q", "-W", "1", small, model], check=True)
    rows = reps * 20000
    size = big.stat().st_size / 2**20
    t_small, rss_small = measure([BIN / "ssl-predict", small, model, tmp / "p-small"])
    t_big, rss_big = measure([BIN / "ssl-predict", big, model, tmp / "p-big"])
    print("| input | rows | MB | time | rows/min | peak RSS |")
    print("|---|---|---|---|---|---|")
    print(f"| synthetic, 50 nnz/row | {20000:,} | {len(b) / 2**20:.0f} | {t_small:.2f} s | "
          f"{20000 / t_small * 60 / 1e6:.2f} M | {rss_small:.0f} MB |")
    print(f"| synthetic, 50 nnz/row | {rows:,} | {size:.0f} | {t_big:.2f} s | "
          f"{rows / t_big * 60 / 1e6:.2f} M | {rss_big:.0f} MB |")


def startup(tmp):
    train = SAMPLES / "pcmac.train"
    test = tmp / "test100.svm"
    test.write_text("".join((SAMPLES / "pcmac.test").read_text().splitlines(True)[:100]))
    model = tmp / "svm.model"
    for algo in ("svm", "rls", "tsvm"):  # warm numba's cache
        subprocess.run([BIN / "ssl-train", "-q", "-a", algo, "-W", "0.01", train, model],
                       check=True)
    rows = [("python -c pass", [sys.executable, "-c", "pass"]),
            ("ssl-train --help", [BIN / "ssl-train", "--help"]),
            ("ssl-tune --help", [BIN / "ssl-tune", "--help"]),
            ("ssl-predict, 100-row file, linear model",
             [BIN / "ssl-predict", "-q", test, model, tmp / "p"])]
    rows += [(f"ssl-train -a {a}, 500-row file", [BIN / "ssl-train", "-q", "-a", a, "-W", "0.01",
                                                  train, tmp / f"{a}.model"])
             for a in ("svm", "rls", "tsvm")]
    print()
    print("| start-up (warm numba cache) | median of 9 |")
    print("|---|---|")
    for name, cmd in rows:
        print(f"| {name} | {median_time(cmd):.3f} s |")


if __name__ == "__main__":
    main()
