"""Badly scaled dense data: svm, tsvm and da objectives at feature scales 1e-3 ... 1e3.

Copies of small dense shared sets (g50c, sslbook-bci, ionosphere, heart) with every feature
multiplied by a scale, 40 labeled rows (20 per class, seeded), λ = 0.001, λ_u = 1, r = 0.5:

* svm on the labeled rows (-a svm's truncated Newton steps): our objective against an exact
  dense finite-Newton solve (numpy's LU, exact line search) and liblinear -s 2 -B 1
  -c 1/(2λ) -e 1e-10 (liblinear-official).
* tsvm and da: our transductive objective and unlabeled-row accuracy against SVMlin v1.0's
  command-line program, if the environment variable SVMLIN names it (built outside this
  repository from its public sources; it is GPL and never part of the project). Its weights
  file is read back and scored with the same objective. Without SVMLIN that column is
  skipped.

The scaled copies are written to a temporary folder and removed.

Usage: SVMLIN=/path/to/svmlin python bench/bench_scaled.py [--scales 1,10,100,250]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from liblinear.liblinearutil import train as ll_train

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ssl_svm.formats.svmlight import read_dataset  # noqa: E402
from ssl_svm.solvers.linalg import svm_objective  # noqa: E402
from ssl_svm.solvers.linear import SVM_FORCING, l2svm_mfn  # noqa: E402
from ssl_svm.solvers.s3vm import da_binary, transductive_cost, tsvm_binary  # noqa: E402

SHARED = Path(os.environ.get("SSL_SHARED", Path(__file__).resolve().parents[2] / "shared"))
SETS = ["g50c", "sslbook-bci", "ionosphere", "heart"]
LAM, LAM_U, R = 0.001, 1.0, 0.5


def exact_svm(A, Y, lam):
    """min λ/2||w||² + 1/2 Σ max(0, 1 - y a·w)² by finite Newton with dense solves (A dense,
    bias column included); stops when the active set is stable under a full step."""
    n = A.shape[1]
    w = np.zeros(n)
    for _ in range(10_000):
        J = Y * (A @ w) < 1
        step = np.linalg.solve(lam * np.eye(n) + A[J].T @ A[J], A[J].T @ Y[J]) - w

        def slope(t, w=w, step=step):
            o = A @ (w + t * step)
            act = Y * o < 1
            return lam * (w + t * step) @ step - (Y[act] - o[act]) @ (A[act] @ step)

        t = 1.0
        if slope(1.0) > 0:
            lo, hi = 0.0, 1.0
            for _ in range(200):
                mid = 0.5 * (lo + hi)
                lo, hi = (lo, mid) if slope(mid) > 0 else (mid, hi)
            t = 0.5 * (lo + hi)
        w_new = w + t * step
        if (t == 1.0 and np.array_equal(Y * (A @ w_new) < 1, J)) or np.array_equal(w_new, w):
            return w_new
        w = w_new
    return w


def liblinear_w(X, Y, lam):
    m = ll_train(Y.tolist(), X, f"-s 2 -B 1 -c {1 / (2 * lam)!r} -e 1e-10 -q")
    w, b = m.get_decfun()
    w = np.array(list(w) + [b])
    return -w if m.get_labels()[0] != 1 else w


def split(name, seed=1):
    d = read_dataset(str(SHARED / "datasets" / name / name))
    truth = np.where(d.y == d.y.max(), 1.0, -1.0)
    rng = np.random.default_rng(seed)
    y = np.zeros_like(truth)
    for c in (1.0, -1.0):
        y[rng.choice(np.flatnonzero(truth == c), 20, replace=False)] = c
    return d.X.tocsr(), y, truth


def svmlin(exe, X, y, algo, folder):
    """SVMlin's weights (d + 1, the last the bias) and its whole-process time."""
    ex, lab = folder / "examples", folder / "labels"
    with open(ex, "w") as f:
        for i in range(X.shape[0]):
            r = X.getrow(i)
            f.write(" ".join(f"{j + 1}:{float(v)!r}" for j, v in zip(r.indices, r.data)) + "\n")
    lab.write_text("".join(f"{int(v)}\n" for v in y))
    t = time.perf_counter()
    subprocess.run([exe, "-A", str(algo), "-W", str(LAM), "-U", str(LAM_U), "-R", str(R),
                    str(ex), str(lab)], check=True, capture_output=True, cwd=folder)
    t = time.perf_counter() - t
    w = np.loadtxt(str(ex) + ".weights")
    return np.concatenate([w, np.zeros(X.shape[1] + 1 - w.size)]) if w.size < X.shape[1] + 1 \
        else w, t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", default="0.001,1,10,100,1000")
    args = ap.parse_args()
    scales = [float(s) for s in args.scales.split(",")]
    exe = os.environ.get("SVMLIN")
    print("| set | scale | svm: ours − exact | liblinear − exact | tsvm: ours | SVMlin | ours − "
          "SVMlin | acc ours / SVMlin | da: ours − SVMlin | acc ours / SVMlin |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in SETS:
            X0, y, truth = split(name)
            lab, unl = np.flatnonzero(y != 0), np.flatnonzero(y == 0)
            for s in scales:
                X = (X0 * s).tocsr()
                XL, YL = X[lab], y[lab]
                C = np.ones(lab.size)
                f = l2svm_mfn(XL, YL, C, LAM, forcing=SVM_FORCING).objective  # -a svm's steps
                A = np.hstack([XL.toarray(), np.ones((lab.size, 1))])
                fe = svm_objective(XL, YL, C, LAM, exact_svm(A, YL, LAM), 1.0)
                fl = svm_objective(XL, YL, C, LAM, liblinear_w(XL, YL, LAM), 1.0)
                row = [name, f"{s:g}", f"{(f - fe) / fe:+.1e}", f"{(fl - fe) / fe:+.1e}"]
                for algo, code in (("tsvm", 2), ("da", 3)):
                    res = (tsvm_binary(X, y, LAM, LAM_U, 10_000, R) if algo == "tsvm" else
                           da_binary(X, y, LAM, LAM_U, R))
                    acc = 100 * np.mean(np.sign(res.o[unl]) == truth[unl])
                    if exe is None:
                        row += ([f"{res.objective:.6g}", "–", "–", f"{acc:.1f} / –"]
                                if algo == "tsvm" else ["–", f"{acc:.1f} / –"])
                        continue
                    w, _ = svmlin(exe, X, y, code, folder)
                    o = X @ w[:-1] + w[-1]
                    fs = transductive_cost(w, o, y, lab, unl, LAM, LAM_U)
                    acc_s = 100 * np.mean(np.sign(o[unl]) == truth[unl])
                    rel = f"{(res.objective - fs) / fs:+.1e}"
                    row += ([f"{res.objective:.6g}", f"{fs:.6g}", rel, f"{acc:.1f} / {acc_s:.1f}"]
                            if algo == "tsvm" else [rel, f"{acc:.1f} / {acc_s:.1f}"])
                print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
