"""The graph and kernel solvers on large data, at the defaults: whole processes of ssl-train
(time, peak memory, what the run chose) and ssl-predict's error on the test rows, against the
svm and tsvm on the same split.

    python bench/bench_scale.py [--split secstr-1000] [--algos svm,tsvm,lapsvm,laprls]
        [--rows N] [--extra "--landmarks 1000"] [--out DIR]

``--split`` names a folder of ../shared/bench or any folder (train.svm, test.svm; make_rolls.py
writes one of any size); ``--rows`` keeps the first N training rows (a size series: 10⁴ … the
whole set). Prints one markdown row per solver.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tools import peak_rss  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared"
BIN = Path(sys.executable).parent


def head(src: Path, rows: int, dst: Path) -> Path:
    """The first ``rows`` lines of src in dst."""
    with open(src) as f, open(dst, "w") as g:
        for i, line in enumerate(f):
            if i >= rows:
                break
            g.write(line)
    return dst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", default="secstr-1000")
    ap.add_argument("--algos", default="svm,tsvm,lapsvm,laprls")
    ap.add_argument("--rows", type=int, default=0)
    ap.add_argument("--extra", default="", help="more ssl-train options for the graph solvers")
    ap.add_argument("--out", default=None, help="keep the models and logs here")
    a = ap.parse_args()
    split = Path(a.split) if Path(a.split).is_dir() else SHARED / "bench" / a.split
    out = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="bench_scale_"))
    out.mkdir(parents=True, exist_ok=True)
    train = split / "train.svm"
    if a.rows:
        train = head(train, a.rows, out / "train.svm")
    n = sum(1 for _ in open(train))
    print(f"| {a.split} rows | solver | train s | peak GiB | test error % | chosen |")
    print("|---|---|---|---|---|---|")
    for algo in a.algos.split(","):
        model = out / f"{algo}.model"
        extra = a.extra.split() if algo in ("lapsvm", "laprls") else []
        rc, peak, secs, err = peak_rss([BIN / "ssl-train", "-a", algo, "--check", "none",
                                        *extra, train, model])
        (out / f"{algo}.log").write_text(err)
        if rc != 0:
            print(f"| {n} | {algo} | {secs:.0f} | {peak / 1024:.2f} | failed | "
                  f"{err.strip().splitlines()[-1]} |")
            continue
        pred = out / f"{algo}.pred"
        rc2, _, _, perr = peak_rss([BIN / "ssl-predict", split / "test.svm", model, pred])
        truth = [line.split()[0] for line in open(split / "test.svm")]
        got = open(pred).read().split()
        error = 100.0 * sum(float(t) != float(g) for t, g in zip(truth, got)) / len(truth)
        chose = "; ".join(m.group(0) for m in re.finditer(
            r"(\d+ landmark rows \(auto[^)]*\)|graph: \d+-NN[^,]*|graph \S+ s, kernel \S+ s|"
            r"\w+ neighbour search|"
            r"λ = [^ ]+ \(auto)", err))
        print(f"| {n} | {algo} | {secs:.0f} | {peak / 1024:.2f} | {error:.2f} | {chose} |",
              flush=True)
    if not a.out:
        shutil.rmtree(out)


if __name__ == "__main__":
    main()
