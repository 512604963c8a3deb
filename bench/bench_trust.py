"""Trust beyond the book: ``ssl-tune -a auto`` and the check after a fit on small public data
sets made semi-supervised with few labels (sets the rules were not tuned on).

    python bench/bench_trust.py [--labels 10,50] [--draws 3] [--sets australian,heart]
        [--jobs 2] [--json F]

For each set (binary, ``../shared/datasets``; at most 1,000 rows, a seeded sample above) and
each number of labels, ``--draws`` random draws of the labeled rows (at least one per class;
the other rows unlabeled). Every command runs as a user would, at its defaults, on one
core; errors are measured on the unlabeled rows (the test rows) with ``ssl-predict`` on the
model written:

  svm         ssl-train -a svm
  auto        ssl-tune -a auto --out (refused: exit status not 0)
  tsvm, lapsvm, cheeger-rls   ssl-train -a NAME --check cv: the fit, and whether the check
              warned (UnlabeledHurtWarning) -- with the time of the fit and of the check

A fit is *harmful* when its error is more than 2 points above the svm's; a harmful fit with no
warning is *silent*; a warning on a fit that is not harmful is a *false alarm*. Auto *loses*
when its error is above the svm's by more than 2 points (≤ 20 labels) or 0.5 (more).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BIN = Path(sys.executable).parent
SHARED = Path(os.environ.get("SSL_SHARED", Path(__file__).resolve().parents[2] / "shared"))
SETS = {
    "australian": "australian/australian", "clean1": "clean1/clean1",
    "diabetes": "diabetes/diabetes", "heart": "heart/heart",
    "house-votes": "house-votes/house-votes", "ionosphere": "ionosphere/ionosphere",
    "liver-disorders": "liver-disorders/liver-disorders", "kr-vs-kp": "kr-vs-kp/kr-vs-kp",
    "spectf": "spectf/SPECTF.train", "g50c": "g50c/g50c", "pcmac": "pcmac/pcmac",
    "rcv1-small": "rcv1-small/rcv1-small",
}
SEMI = ("tsvm", "lapsvm", "cheeger-rls")
MAX_ROWS = 1000
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
       "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def rows_of(name: str) -> list[tuple[str, str]]:
    """(label, features) of every row of a set (SPECTF: its two files together), a seeded
    sample of MAX_ROWS above that."""
    path = SHARED / "datasets" / SETS[name]
    files = [path] + ([path.with_name("SPECTF.test")] if name == "spectf" else [])
    out = []
    for f in files:
        for line in f.read_text().splitlines():
            if line.strip():
                label, _, feats = line.strip().partition(" ")
                out.append(("1" if float(label) > 0 else "-1", feats))
    if len(out) > MAX_ROWS:
        keep = np.sort(np.random.default_rng(0).choice(len(out), MAX_ROWS, replace=False))
        out = [out[i] for i in keep]
    return out


def draw(rows, labels: int, seed: int) -> np.ndarray:
    """Indices of ``labels`` labeled rows, at least one of each class."""
    rng = np.random.default_rng(seed)
    y = np.array([r[0] for r in rows])
    while True:
        idx = rng.choice(len(rows), labels, replace=False)
        if len(set(y[idx])) == 2:
            return np.sort(idx)


def sh(*args, check=True) -> subprocess.CompletedProcess:
    r = subprocess.run([str(BIN / args[0]), *map(str, args[1:])], capture_output=True,
                       text=True, env=ENV)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))}: {r.stderr.strip()[-500:]}")
    return r


def error(model: Path, test: Path, folder: Path) -> float:
    r = sh("ssl-predict", test, model, folder / "pred")
    return 100.0 - float(re.search(r"Accuracy = ([0-9.]+)%", r.stdout + r.stderr).group(1))


CHECK_LINE = re.compile(r"check against the supervised svm \(([0-9.]+) s\): (\d+)-fold .*?: \S+ "
                        r"([0-9.]+) %, the supervised svm \(λ \S+\) ([0-9.]+) % on the same "
                        r"folds, \S+ points \(standard error ([0-9.]+);.*?disagree on "
                        r"([0-9.]+) % of the \d+ unlabeled rows")


def one_split(name: str, labels: int, seed: int, auto_only: bool = False) -> dict:
    rows = rows_of(name)
    lab = set(draw(rows, labels, seed).tolist())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        train, test = folder / "train.svm", folder / "test.svm"
        train.write_text("".join(f"{r[0] if i in lab else 0} {r[1]}\n"
                                 for i, r in enumerate(rows)))
        test.write_text("".join(f"{r[0]} {r[1]}\n" for i, r in enumerate(rows)
                                if i not in lab))
        out = {"set": name, "labels": labels, "seed": seed}
        sh("ssl-train", "-a", "svm", train, folder / "svm.model")
        out["svm"] = error(folder / "svm.model", test, folder)
        t0 = time.perf_counter()
        r = sh("ssl-tune", "-q", "-a", "auto", "--out", folder / "auto.model", train,
               check=False)
        out["auto_seconds"] = time.perf_counter() - t0
        if r.returncode != 0:
            out["auto"], out["auto_choice"] = None, "refused: " + r.stderr.strip()[-200:]
        else:
            out["auto"] = error(folder / "auto.model", test, folder)
            out["auto_choice"] = next(x for x in r.stdout.splitlines()
                                      if x.startswith("best "))
        for algo in () if auto_only else SEMI:
            t0 = time.perf_counter()
            r = sh("ssl-train", "-a", algo, "--check", "cv", train, folder / "m", check=False)
            seconds = time.perf_counter() - t0
            if r.returncode != 0:
                out[algo] = {"error": r.stderr.strip()[-200:]}
                continue
            check = CHECK_LINE.search(r.stderr)
            out[algo] = {"error_rate": error(folder / "m", test, folder),
                         "warned": "worse than ignoring the unlabeled rows" in r.stderr,
                         "seconds": seconds}
            if check:  # the check's figures, to weigh other rules against the same fits
                out[algo].update(zip(("check_seconds", "folds", "fold_accuracy",
                                      "svm_accuracy", "se", "unlabeled_disagreement"),
                                     map(float, check.groups())))
    return out


def summary(results: list[dict]) -> str:
    lines = []
    fits = harmful = silent = alarms = 0
    for r in results:
        for algo in SEMI:
            f = r.get(algo, {})
            if "error_rate" not in f:
                continue
            fits += 1
            bad = f["error_rate"] > r["svm"] + 2.0
            harmful += bad
            silent += bad and not f["warned"]
            alarms += (not bad) and f["warned"]
    refused = sum(r["auto"] is None for r in results)
    lost = [r for r in results if r["auto"] is not None
            and r["auto"] > r["svm"] + (2.0 if r["labels"] <= 20 else 0.5)]
    ran = [r for r in results if r["auto"] is not None]
    lines.append(f"{len(results)} splits; auto refused {refused}; auto worse than the svm "
                 f"beyond the tolerance on {len(lost)}")
    if ran:
        lines.append(f"mean error: svm {np.mean([r['svm'] for r in ran]):.2f} %, auto "
                     f"{np.mean([r['auto'] for r in ran]):.2f} %")
    for labels in sorted({r["labels"] for r in results}):
        rs = [r for r in ran if r["labels"] == labels]
        if rs:
            lines.append(f"  {labels} labels: svm {np.mean([r['svm'] for r in rs]):.2f} %, "
                         f"auto {np.mean([r['auto'] for r in rs]):.2f} %, auto chose a "
                         f"semi-supervised solver on "
                         f"{sum('algorithm=svm' not in r['auto_choice'] for r in rs)} of "
                         f"{len(rs)}")
    for r in lost:
        lines.append(f"  lost: {r['set']} {r['labels']} labels seed {r['seed']}: auto "
                     f"{r['auto']:.1f} % against svm {r['svm']:.1f} % [{r['auto_choice']}]")
    lines.append(f"check (--check cv) over {fits} fits: {harmful} harmful, {silent} of them "
                 f"silent ({100.0 * silent / max(harmful, 1):.0f} %), {alarms} false alarms")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--labels", default="10,50")
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", default=None)
    ap.add_argument("--auto-only", action="store_true", help="no check runs (a before/after "
                    "comparison of the selection alone)")
    a = ap.parse_args(argv)
    cases = [(s, int(n), seed, a.auto_only) for s in a.sets.split(",")
             for n in a.labels.split(",") for seed in range(a.draws)]
    results = []
    with concurrent.futures.ProcessPoolExecutor(a.jobs) as pool:
        for r in pool.map(one_split, *zip(*cases)):
            results.append(r)
            semi = " ".join(f"{k} {r[k].get('error_rate', float('nan')):.1f}"
                            f"{'!' if r[k].get('warned') else ''}" for k in SEMI if k in r)
            auto = "refused" if r["auto"] is None else f"{r['auto']:.1f}"
            print(f"{r['set']:>16} l={r['labels']:<3} seed {r['seed']}: svm {r['svm']:.1f} "
                  f"auto {auto} ({r['auto_choice'][5:]})  {semi}", flush=True)
    print(summary(results))
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
