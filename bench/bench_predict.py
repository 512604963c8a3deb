"""ssl-predict throughput and peak memory; ssl-train / ssl-predict start-up time.

Throughput: a synthetic file of 50-nonzero rows (default 1M rows, ~0.6 GB; a 20,000-row
block repeated) is predicted with a model trained on its first block; rows per minute and the
peak resident memory of the ssl-predict process are printed, next to the same for a small
input (memory must not grow with the input). Start-up: median wall time of ssl-train and
ssl-predict on a 4-row file with a warm numba cache, and of `python -c pass` for reference.

Usage: python bench/bench_predict.py [--rows N] [--keep DIR]
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
    args = ap.parse_args()
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="bench-predict-"))
    tmp.mkdir(parents=True, exist_ok=True)
    b = svmlight_block(20000, 100_000, 50)
    small = tmp / "small.svm"
    small.write_bytes(b)
    big = tmp / "big.svm"
    reps = max(1, args.rows // 20000)
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
    tiny = tmp / "tiny.svm"
    tiny.write_text("+1 1:1 2:0.5\n-1 1:-1 3:2\n+1 2:1\n-1 3:1\n")
    subprocess.run([BIN / "ssl-train", "-q", tiny, tmp / "tiny.model"], check=True)  # warm cache
    print()
    print("| start-up (4-row file, warm numba cache) | median of 9 |")
    print("|---|---|")
    print(f"| python -c pass | {median_time([sys.executable, '-c', 'pass']):.3f} s |")
    t_train = median_time([BIN / "ssl-train", "-q", tiny, tmp / "tiny.model"])
    t_pred = median_time([BIN / "ssl-predict", "-q", tiny, tmp / "tiny.model", tmp / "tp"])
    print(f"| ssl-train | {t_train:.3f} s |")
    print(f"| ssl-predict | {t_pred:.3f} s |")
    if not args.keep:
        for p in tmp.iterdir():
            p.unlink()
        tmp.rmdir()


if __name__ == "__main__":
    main()
