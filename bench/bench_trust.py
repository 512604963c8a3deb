"""Trust beyond the book: ``ssl-tune -a auto`` and the check after a fit on small public data
sets made semi-supervised with few labels, in two halves: the sets the check's rules were
tuned on (``tune``) and sets they are only reported on (``report``).

    python bench/bench_trust.py [--half tune|report|all] [--labels 10,50,100] [--draws 3]
        [--sets australian,heart] [--jobs 2] [--json F]
    python bench/bench_trust.py --tables F.json [F2.json ...]   # the tables again

``tune``: the 12 sets earlier rules were tuned on (UCI and text). ``report``: 8 other binary
sets of ``../shared/datasets`` and 4 generated ones whose structure is known (two moons: the
cluster assumption holds; overlapping Gaussians: it fails; four clusters labeled by XOR:
clusters that are not the classes; two Gaussians among 50 noise columns). For each set (at
most 1,000 rows, a seeded sample above) and each number of labels, ``--draws`` random draws
of the labeled rows (at least one per class; the other rows unlabeled). Every command runs as
a user would, at its defaults, on one core; errors are measured on the unlabeled rows (the
test rows) with ``ssl-predict`` on the model written:

  svm         ssl-train -a svm
  auto        ssl-tune -a auto --out (refused: exit status not 0)
  tsvm, lapsvm, cheeger-rls   ssl-train -a NAME --check cv: the fit, and whether the check
              warned (UnlabeledHurtWarning) -- with the time of the fit and of the check

A fit is *harmful* when its error is more than 2 points above the svm's, *helpful* when more
than 2 below, *neutral* between. The tables: verdict (harm / no harm / unverified) × truth;
how often the stated upper bound of the loss is at or above the true loss; auto against the
svm and the best solver in hindsight (per split, and the best single solver of the half).
Auto *loses* when its error is above the svm's by more than 2 points (≤ 20 labels) or 1
(more).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import gzip
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
TUNE = {
    "australian": "australian/australian", "clean1": "clean1/clean1",
    "diabetes": "diabetes/diabetes", "heart": "heart/heart",
    "house-votes": "house-votes/house-votes", "ionosphere": "ionosphere/ionosphere",
    "liver-disorders": "liver-disorders/liver-disorders", "kr-vs-kp": "kr-vs-kp/kr-vs-kp",
    "spectf": "spectf/SPECTF.train", "g50c": "g50c/g50c", "pcmac": "pcmac/pcmac",
    "rcv1-small": "rcv1-small/rcv1-small",
}
REPORT = {
    "a9a": "a9a/a9a", "w8a": "w8a/w8a", "bank-marketing": "bank-marketing/bank-full",
    "mnist38": "mnist38/mnist38.gz", "facemit": "facemit/facemit-train.gz",
    "bci": "sslbook-bci/sslbook-bci", "sslbook-usps": "sslbook-usps/sslbook-usps.gz",
    "secstr": "sslbook-secstr/sslbook-secstr.gz",
    "moons": None, "overlap": None, "xor-clusters": None, "noise-columns": None,
}
SETS = {**TUNE, **REPORT}
SEMI = ("tsvm", "lapsvm", "cheeger-rls")
AS_SAID = False  # --judged-as-said
MAX_ROWS = 1000
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
       "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def generated(name: str) -> list[tuple[str, str]]:
    """MAX_ROWS rows of a generated set (seed 0), as (label, features)."""
    rng = np.random.default_rng(0)
    n = MAX_ROWS
    y = np.where(rng.random(n) < 0.5, 1, -1)
    if name == "moons":
        t = rng.uniform(0, np.pi, n)
        X = np.where(y[:, None] > 0, np.c_[np.cos(t), np.sin(t)],
                     np.c_[1 - np.cos(t), 0.5 - np.sin(t)])
        X = X + 0.12 * rng.standard_normal((n, 2))
    elif name == "overlap":  # one Gaussian per class, 0.8 standard deviations apart
        X = rng.standard_normal((n, 10))
        X[:, 0] += 0.4 * y
    elif name == "xor-clusters":  # four tight clusters, the classes by XOR of the quadrant
        q = rng.integers(0, 4, n)
        centre = np.array([[2, 2], [-2, 2], [-2, -2], [2, -2]], float)[q]
        X = np.c_[centre + 0.6 * rng.standard_normal((n, 2)), rng.standard_normal((n, 3))]
        y = np.where(q % 2 == 0, 1, -1)
    else:  # noise-columns: two Gaussians 3 standard deviations apart among 50 noise columns
        X = rng.standard_normal((n, 52))
        X[:, :2] += 1.5 * y[:, None] / np.sqrt(2)
    return [(str(int(v)), " ".join(f"{j + 1}:{x:.6g}" for j, x in enumerate(r)))
            for v, r in zip(y, X)]


@functools.lru_cache(maxsize=4)
def rows_of(name: str) -> list[tuple[str, str]]:
    """(label, features) of every row of a set (SPECTF: its two files together), a seeded
    sample of MAX_ROWS above that."""
    if SETS[name] is None:
        return generated(name)
    path = SHARED / "datasets" / SETS[name]
    files = [path] + ([path.with_name("SPECTF.test")] if name == "spectf" else [])
    out = []
    for f in files:
        text = (gzip.open(f, "rt").read() if f.suffix == ".gz" else f.read_text())
        for line in text.splitlines():
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


FIGURES = re.compile(r"on the (\d+) labeled rows held out in (\d+) folds, \S+ ([0-9.]+) % "
                     r"against the supervised svm's ([0-9.]+) % \(\S+ alone right on (\d+), "
                     r"the svm alone on (\d+)\)(?:; they disagree on ([0-9.]+) % of the)?")
NO_FOLDS = re.compile(r"no labeled row can be held out \(a class has 1 labeled row\); they "
                      r"disagree on ([0-9.]+) % of the")
BOUND = re.compile(r"(?:at most|up to) ([0-9.]+) points worse")
CHECK_SECONDS = re.compile(r"check against the supervised svm \(([0-9.]+) s\)")


def verdict_of(stderr: str) -> str | None:
    """The check's verdict in a command's stderr (None: no check ran). The check before the
    three verdicts (``--before``) said "likely worse" (read as harm), "may be worse ... the
    labeled rows cannot tell" (unverified) or its line alone (no harm)."""
    if "is likely worse than ignoring the unlabeled rows" in stderr:
        return "harm"
    if ("is unverified against ignoring the unlabeled rows" in stderr
            or "may be worse than ignoring the unlabeled rows" in stderr):
        return "unverified"
    if "check against the supervised svm" in stderr:
        return "no harm"
    return None


def one_split(name: str, labels: int, seed: int, auto_only: bool = False,
              auto_args: tuple = (), no_auto: bool = False) -> dict:
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
        r = None if no_auto else sh("ssl-tune", "-q", "-a", "auto", *auto_args, "--out",
                                    folder / "auto.model", train, check=False)
        out["auto_seconds"] = time.perf_counter() - t0
        if r is None:
            out["auto"], out["auto_choice"] = None, "not run"
        elif r.returncode != 0:
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
            out[algo] = {"error_rate": error(folder / "m", test, folder),
                         "verdict": verdict_of(r.stderr), "seconds": seconds}
            figures, bound = FIGURES.search(r.stderr), BOUND.search(r.stderr)
            alone = NO_FOLDS.search(r.stderr)
            if alone:  # a class of one labeled row: no folds, the unlabeled rows' bound only
                out[algo].update(n=0.0, folds=0.0, fold_accuracy=float("nan"),
                                 svm_accuracy=float("nan"), better=0.0, worse=0.0,
                                 disagreement=float(alone.group(1)))
            elif figures:  # the check's figures, to weigh other rules against the same fits
                out[algo].update(zip(("n", "folds", "fold_accuracy", "svm_accuracy",
                                      "better", "worse", "disagreement"),
                                     (None if v is None else float(v)
                                      for v in figures.groups())))
            if bound:
                out[algo]["bound"] = float(bound.group(1))
            out[algo]["represented"] = "do not stand for the unlabeled ones" not in r.stderr
            out[algo]["said"] = [x for x in r.stderr.splitlines()
                                 if "check against the supervised svm" in x
                                 or "ignoring the unlabeled rows" in x]
            took = CHECK_SECONDS.search(r.stderr)
            if took:
                out[algo]["check_seconds"] = float(took.group(1))
    return out


def judged(f: dict) -> tuple[str | None, float | None]:
    """(verdict, upper bound) of a checked fit by the rule in the code now
    (:class:`ssl_svm.selection.stats.Comparison`), from the figures its check printed: the
    same arithmetic the command runs, so a rule can be re-judged on fits measured before it
    (the JSON keeps what the command said, ``verdict`` and ``bound``)."""
    from ssl_svm.selection.stats import Comparison, Coverage

    if "n" not in f:
        return f.get("verdict"), f.get("bound")
    n, dis = int(f["n"]), f["disagreement"]
    cover = None
    if dis is not None:  # only whether the held-out rows stand for the unlabeled ones counts
        cover = Coverage(dis if f["represented"] else 0.0, n, dis, 1000,
                         0.0 if f["represented"] else -100.0)
        assert cover.represented == f["represented"]
    c = Comparison("x", int(f["folds"]), n, f["fold_accuracy"], f["svm_accuracy"], 0.0, 50.0,
                   int(f["better"]), int(f["worse"]), coverage=cover)
    return c.verdict, c.upper_bound


def truth(loss: float) -> str:
    """harmful / neutral / helpful: the fit's test error minus the svm's, in points."""
    return "harmful" if loss > 2.0 else "helpful" if loss < -2.0 else "neutral"


def summary(results: list[dict], title: str = "") -> str:
    """The tables of one half: verdict × truth, the bound's coverage, auto's gap capture."""
    lines = [f"## {title} ({len({r['set'] for r in results})} sets, {len(results)} splits)"]
    table = {(v, t): 0 for v in ("harm", "no harm", "unverified", None)
             for t in ("harmful", "neutral", "helpful")}
    covered = bounded = 0
    misses = []
    for r in results:
        for algo in SEMI:
            f = r.get(algo, {})
            if "error_rate" not in f:
                continue
            loss = f["error_rate"] - r["svm"]
            verdict, bound = ((f.get("verdict"), f.get("bound")) if AS_SAID else judged(f))
            table[verdict, truth(loss)] += 1
            if bound is not None:
                bounded += 1
                covered += bound >= loss
            if verdict == "no harm" and loss > 2.0:
                misses.append(f"{r['set']} l={r['labels']} s={r['seed']} {algo} "
                              f"{loss:+.1f} (bound {'none' if bound is None else f'{bound:.1f}'})")
    fits = sum(table.values())
    lines.append("| verdict | harmful | neutral | helpful | all |")
    lines.append("|---|---|---|---|---|")
    for v in ("harm", "no harm", "unverified", None):
        row = [table[v, t] for t in ("harmful", "neutral", "helpful")]
        if v is None and not sum(row):
            continue
        lines.append(f"| {v or 'not checked'} | " + " | ".join(map(str, row))
                     + f" | {sum(row)} |")
    harmful = sum(table[v, "harmful"] for v in ("harm", "no harm", "unverified", None))
    good = fits - harmful
    alarms = table["harm", "neutral"] + table["harm", "helpful"]
    unverified = sum(table["unverified", t] for t in ("harmful", "neutral", "helpful"))
    lines.append(f"helpful or neutral called harm: {alarms} of {good} "
                 f"({100.0 * alarms / max(good, 1):.1f} %); harmful called no harm: "
                 f"{table['no harm', 'harmful']} of {harmful} "
                 f"({100.0 * table['no harm', 'harmful'] / max(harmful, 1):.1f} %); "
                 f"unverified {unverified} of {fits}; upper bound at or above the true loss "
                 f"on {covered} of {bounded} "
                 f"({100.0 * covered / max(bounded, 1):.1f} %)")
    lines += [f"  harmful called no harm: {m}" for m in misses]
    ran = [r for r in results if r["auto"] is not None]
    if not ran:
        return "\n".join(lines)
    lost = [r for r in ran if r["auto"] > r["svm"] + (2.0 if r["labels"] <= 20 else 1.0)]
    lines.append(f"auto refused {len(results) - len(ran)}; worse than the svm beyond the "
                 f"tolerance on {len(lost)}")
    for r in lost:
        lines.append(f"  lost: {r['set']} {r['labels']} labels seed {r['seed']}: auto "
                     f"{r['auto']:.1f} % against svm {r['svm']:.1f} % [{r['auto_choice']}]")
    lines.append("| labels | svm | auto | best solver per set (mean of its draws) | best per "
                 "split | auto's share of the gap (per set / per split) | auto chose "
                 "semi-supervised |")
    lines.append("|---|---|---|---|---|---|---|")
    for labels in [*sorted({r["labels"] for r in ran}), None]:
        rs = [r for r in ran if labels is None or r["labels"] == labels]
        errs = {a: [r[a]["error_rate"] if a != "svm" else r["svm"] for r in rs]
                for a in ("svm", *SEMI) if all(a == "svm" or "error_rate" in r.get(a, {})
                                               for r in rs)}
        if not rs or not errs:
            continue
        svm, auto = np.mean(errs["svm"]), np.mean([r["auto"] for r in rs])
        # per set and number of labels, the solver best on the mean of the draws
        groups: dict = {}
        for i, r in enumerate(rs):
            groups.setdefault((r["set"], r["labels"]), []).append(i)
        single = np.mean([min(np.mean([errs[a][i] for i in idx]) for a in errs) * len(idx)
                          for idx in groups.values()]) * len(groups) / len(rs)
        oracle = np.mean(np.min(np.array(list(errs.values())), axis=0))
        share = [(svm - auto) / (svm - b) if svm > b else float("nan") for b in (single, oracle)]
        chose = sum("algorithm=svm" not in r["auto_choice"] for r in rs)
        lines.append(f"| {labels or 'all'} | {svm:.2f} | {auto:.2f} | {single:.2f} | "
                     f"{oracle:.2f} | {share[0]:.2f} / {share[1]:.2f} | {chose} of {len(rs)} |")
    return "\n".join(lines)


def tables(results: list[dict]) -> str:
    """The tables of each half present in ``results``."""
    out = []
    for half, sets in (("tune: the sets the rules were tuned on", TUNE),
                       ("report: sets only reported", REPORT)):
        rs = [r for r in results if r["set"] in sets]
        if rs:
            out.append(summary(rs, half))
    return "\n\n".join(out)


def main(argv=None) -> int:
    global BIN, AS_SAID
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--half", choices=("tune", "report", "all"), default="all")
    ap.add_argument("--labels", default="10,50,100")
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--sets", default=None, help="comma-separated (default: the half's)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", default=None)
    ap.add_argument("--tables", nargs="+", default=None, metavar="JSON",
                    help="print the tables of earlier runs' --json files and stop")
    ap.add_argument("--auto-only", action="store_true", help="no check runs (a before/after "
                    "comparison of the selection alone)")
    ap.add_argument("--no-auto", action="store_true", help="no ssl-tune -a auto runs (the "
                    "check alone; e.g. an earlier version's, with --bin)")
    ap.add_argument("--bin", default=None, help="the folder of the commands to run (default: "
                    "this Python's)")
    ap.add_argument("--judged-as-said", action="store_true", help="tables of the verdicts the "
                    "commands said, not re-judged by the rule in this code (an earlier "
                    "version's check)")
    ap.add_argument("--auto-args", default="", help="more arguments of ssl-tune -a auto "
                    "(e.g. '-G svm.lambda=auto'), space-separated: another selection tried")
    a = ap.parse_args(argv)
    if a.tables:
        AS_SAID = a.judged_as_said
        print(tables([r for f in a.tables for r in json.loads(Path(f).read_text())]))
        return 0
    sets = (a.sets.split(",") if a.sets else
            list({"tune": TUNE, "report": REPORT, "all": SETS}[a.half]))
    AS_SAID = a.judged_as_said
    if a.bin:
        BIN = Path(a.bin)
    cases = [(s, int(n), seed, a.auto_only, tuple(a.auto_args.split()), a.no_auto) for s in sets
             for n in a.labels.split(",") for seed in range(a.draws)]
    results = []
    with concurrent.futures.ProcessPoolExecutor(a.jobs) as pool:
        for r in pool.map(one_split, *zip(*cases)):
            results.append(r)
            semi = " ".join(f"{k} {r[k].get('error_rate', float('nan')):.1f}"
                            f"{({'harm': '!', 'unverified': '?'}).get(r[k].get('verdict'), '')}"
                            for k in SEMI if k in r)
            auto = "refused" if r["auto"] is None else f"{r['auto']:.1f}"
            print(f"{r['set']:>16} l={r['labels']:<3} seed {r['seed']}: svm {r['svm']:.1f} "
                  f"auto {auto} ({r['auto_choice'][5:]})  {semi}", flush=True)
            if a.json:  # as it goes: a long run stopped half-way keeps what it measured
                Path(a.json).write_text(json.dumps(results, indent=1))
    print(tables(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
