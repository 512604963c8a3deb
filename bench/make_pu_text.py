"""A text-like positive–unlabeled set of any size: sparse unit-length rows of word counts over a
large vocabulary, for usmo's linear path against LIBLINEAR (bench_pu_scale.py).

Each row draws Poisson(``--words``) words: with probability ``--topic`` from its class's
topic (``--topic-words`` word ids of the vocabulary, Zipf-weighted within), with probability
``--cross`` from the other class's topic, otherwise from a Zipf background over the whole
vocabulary; a row's values are log(1 + count), scaled to unit length. The classes are
exact counts: the unlabeled rows hold a fraction ``--prior`` of positives and
``--labeled-fraction`` of all positives are labeled (label 1, first); unlabeled rows are 0.
Writes DIR/train.svm, DIR/train.truth (every training row's class, ±1), DIR/test.svm (±1).

    python bench/make_pu_text.py --rows 1000000 --features 1000000 --out /tmp/pu-1m
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file


def _zipf_cdf(m: int, s: float) -> np.ndarray:
    p = 1.0 / np.arange(1, m + 1) ** s
    return np.cumsum(p / p.sum())


def rows(y: np.ndarray, d: int, words: float, topic: float, cross: float, topics,
         rng) -> sp.csr_matrix:
    """Unit-length log-count rows of the classes y (±1); ``topics`` = (positive ids,
    negative ids)."""
    n = y.size
    counts = np.maximum(rng.poisson(words, n), 1)
    total = int(counts.sum())
    owner = np.repeat(np.arange(n), counts)
    u = rng.random(total)
    pos = y[owner] > 0
    own = u < topic
    other = (u >= topic) & (u < topic + cross)
    ids = np.empty(total, np.int64)
    bg = _zipf_cdf(d, 1.05)
    back = ~(own | other)
    ids[back] = np.minimum(np.searchsorted(bg, rng.random(int(back.sum()))), d - 1)
    # shuffle the background ranks onto ids so the frequent words are not all low ids
    perm = rng.permutation(d)
    ids[back] = perm[ids[back]]
    tz = _zipf_cdf(topics[0].size, 0.8)
    for mask, from_pos in ((own & pos, True), (own & ~pos, False), (other & pos, False),
                           (other & ~pos, True)):
        k = int(mask.sum())
        which = np.minimum(np.searchsorted(tz, rng.random(k)), tz.size - 1)
        ids[mask] = (topics[0] if from_pos else topics[1])[which]
    M = sp.csr_matrix((np.ones(total), (owner, ids)), shape=(n, d))
    M.sum_duplicates()
    M.data = np.log1p(M.data)
    norms = np.sqrt(np.asarray(M.multiply(M).sum(axis=1)).ravel())
    M = sp.diags(1.0 / np.maximum(norms, 1e-300)) @ M
    M.data = np.round(M.data, 4)
    return M.tocsr()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000, help="training rows")
    ap.add_argument("--test", type=int, default=100_000, help="held-out rows")
    ap.add_argument("--features", type=int, default=1_000_000)
    ap.add_argument("--words", type=float, default=60.0, help="mean words drawn a row")
    ap.add_argument("--topic", type=float, default=0.08)
    ap.add_argument("--cross", type=float, default=0.03)
    ap.add_argument("--topic-words", type=int, default=5000)
    ap.add_argument("--prior", type=float, default=0.4, help="positive share of unlabeled")
    ap.add_argument("--labeled-fraction", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    n, pi, c = a.rows, a.prior, a.labeled_fraction
    n_pos = int(round(pi * n / (1.0 - c + c * pi)))  # c·P labeled, (1 − c)·P = π·(n − c·P)
    n_lab = int(round(c * n_pos))
    y = np.concatenate([np.ones(n_pos), -np.ones(n - n_pos)])
    ids = rng.choice(a.features, 2 * a.topic_words, replace=False)
    topics = (ids[:a.topic_words], ids[a.topic_words:])
    X = rows(y, a.features, a.words, a.topic, a.cross, topics, rng)
    order = np.concatenate([np.arange(n_lab), n_lab + rng.permutation(n - n_lab)])
    X, y = X[order], y[order]
    label = np.zeros(n)
    label[:n_lab] = 1.0
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    dump_svmlight_file(X, label.astype(np.int64), str(out / "train.svm"), zero_based=False)
    np.savetxt(out / "train.truth", y, fmt="%d")
    m = a.test
    yt = np.where(rng.random(m) < n_pos / n, 1.0, -1.0)
    Xt = rows(yt, a.features, a.words, a.topic, a.cross, topics, rng)
    dump_svmlight_file(Xt, yt.astype(np.int64), str(out / "test.svm"), zero_based=False)
    unl = np.flatnonzero(label == 0)
    print(f"{n} rows ({n_lab} labeled positives, {unl.size} unlabeled of which "
          f"{np.mean(y[unl] > 0):.4f} positive), {X.nnz / n:.1f} values a row, "
          f"{m} held-out rows; {math.ceil((out / 'train.svm').stat().st_size / 2**20)} MiB")


if __name__ == "__main__":
    main()
