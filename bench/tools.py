"""Helpers shared by the benchmark scripts and the large-input tests."""

from __future__ import annotations

import subprocess
import time

import numpy as np
import psutil


def svmlight_block(rows: int, d: int, nnz: int, seed: int = 0) -> bytes:
    """SVMlight text of ``rows`` random rows with ``nnz`` nonzeros each among ``d`` features
    (values in [0, 1), 6 decimals; labels: every third row -1, the others +1)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(rows):
        idx = np.sort(rng.choice(d, nnz, replace=False)) + 1
        vals = rng.random(nnz)
        out.append(("+1 " if i % 3 else "-1 ") +
                   " ".join(f"{j}:{v:.6f}" for j, v in zip(idx.tolist(), vals.tolist())))
    return ("\n".join(out) + "\n").encode()


def peak_rss(args, tree: bool = False) -> tuple[int, float, float, str]:
    """Run a command; return (exit status, peak resident memory in MB, seconds, stderr).

    With ``tree`` the memory is that of the process and all its children together (worker
    processes).
    """
    t0 = time.perf_counter()
    p = subprocess.Popen([str(a) for a in args], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    proc = psutil.Process(p.pid)
    peak = 0
    while p.poll() is None:
        try:
            procs = [proc, *proc.children(recursive=True)] if tree else [proc]
            peak = max(peak, sum(q.memory_info().rss for q in procs))
        except psutil.NoSuchProcess:
            if not tree:
                break  # the command itself ended; a child may end between the two calls
        time.sleep(0.01)
    err = p.stderr.read().decode()
    return p.returncode, peak / 2**20, time.perf_counter() - t0, err
