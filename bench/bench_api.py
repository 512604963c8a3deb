"""The Python API's cost against the command line's: a fit from Python (``est.fit(X, y)``,
the whole pipeline: input checks, labels, the solver, the fit checks, the transductive
labels) against ``ssl-train``'s solver time on the same split (its ``train_time``, printed by
``--verbose``), the two in turn, medians; and the import cost of ``import ssl_svm``.

    python bench/bench_api.py            # a9a-100 tsvm, usps49-10 lapsvm, 5 rounds
    python bench/bench_api.py --reps 9
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

BIN = Path(sys.executable).parent
SHARED = Path(os.environ.get("SSL_SHARED", Path(__file__).resolve().parents[2] / "shared"))

RUNS = [  # (split, algorithm, CLI options, estimator keywords)
    ("a9a-100", "tsvm", ["-W", "0.001"], {"lam": 0.001}),
    ("usps49-10", "lapsvm", [], {}),
]


def cli_solver_time(path, algo, opts) -> float:
    r = subprocess.run([str(BIN / "ssl-train"), "--verbose", "-a", algo, *opts, str(path),
                        os.devnull], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    return float(re.search(r"train_time=([0-9.e+-]+) s", r.stderr).group(1))


def import_time() -> float:
    code = "import time; t = time.perf_counter(); import ssl_svm; print(time.perf_counter() - t)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return float(r.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    import ssl_svm

    print(f"import ssl_svm: median {statistics.median(import_time() for _ in range(args.reps)):.4f}"
          " s (a fresh interpreter each time)")
    print(f"{'run':<20} {'CLI solver s':>12} {'Python fit s':>12} {'ratio':>7}")
    for split, algo, opts, kw in RUNS:
        path = SHARED / "bench" / split / "train.svm"
        X, y = ssl_svm.load_svmlight(str(path))
        est = ssl_svm.estimator(algo)(unlabeled_label=0, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)  # numba's start and the compiled functions' load: once per process
            cli, py = [], []
            for _ in range(args.reps):
                cli.append(cli_solver_time(path, algo, opts))
                t0 = time.perf_counter()
                est.fit(X, y)
                py.append(time.perf_counter() - t0)
        c, p = statistics.median(cli), statistics.median(py)
        print(f"{split + ' ' + algo:<20} {c:12.3f} {p:12.3f} {p / c:7.3f}", flush=True)


if __name__ == "__main__":
    main()
