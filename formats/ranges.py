"""Reading an SVMlight file in line-aligned byte ranges, as a cluster's workers do: the
ranges cut and hashed here (:func:`cut_ranges`), a range read and hashed as it is parsed
(:func:`open_range`), a cheap fingerprint to tell whether a worker's file at the same path is
this one (:func:`file_facts`), and the parsed parts of a range joined into one block
(:func:`merge_parts`). The parsing itself is :mod:`ssl_svm.formats.svmlight`'s, the same as a
one-process run's."""

from __future__ import annotations

import hashlib
import os

import numpy as np

from ssl_svm.formats.svmlight import BOM

READ_BYTES = 1 << 22  # the client's hashing pass reads ranges in pieces of this size


def aligned(f, pos: int) -> int:
    """The first line start at or after ``pos`` (0 stays 0)."""
    if pos == 0:
        return 0
    f.seek(pos - 1)
    at = pos - 1
    while True:
        piece = f.read(1 << 16)
        if not piece:
            return at
        k = piece.find(b"\n")
        if k >= 0:
            return at + k + 1
        at += len(piece)


class Range:
    """A file-like reader of bytes [start, end) of an open file; with ``digest`` (a hashlib
    object), every byte read is hashed as it passes."""

    def __init__(self, f, start: int, end: int, digest=None):
        self.f = f
        self.left = end - start
        self.digest = digest
        f.seek(start)

    def read(self, n: int) -> bytes:
        if self.left <= 0:
            return b""
        piece = self.f.read(min(n, self.left))
        self.left -= len(piece)
        if self.digest is not None:
            self.digest.update(piece)
        return piece


def open_range(f, start: int, end: int, digest=None) -> Range:
    """Bytes [start, end) of the open file ``f`` as a :class:`Range`, a byte-order mark at
    the file's start skipped (and hashed with ``digest``, which then covers every byte)."""
    if start == 0:
        head = f.read(3)
        if head == BOM:
            if digest is not None:
                digest.update(head)
            start = 3
    return Range(f, start, end, digest)


def range_digest():
    """The hash the client and a worker each take of a byte range of TRAIN: BLAKE2b."""
    return hashlib.blake2b(digest_size=16)


def cut_ranges(path: str, parts: int, threads: int = 1) -> list[tuple[int, int, int, str]]:
    """``path`` cut into ``parts`` line-aligned byte ranges, each as (start, end, newlines in
    it, :func:`range_digest` of its bytes): one pass over the file, here, the ranges hashed in
    ``threads`` threads (hashlib lets go of the GIL), so that a worker's parse of the same
    range can be compared byte for byte (its own copy at the same path may differ anywhere,
    not only at the sampled pieces of :func:`file_facts`)."""
    from concurrent.futures import ThreadPoolExecutor

    size = os.path.getsize(path)
    with open(path, "rb") as f:
        bounds = [aligned(f, size * k // parts) for k in range(parts)] + [size]

    def one(k):
        a, b = bounds[k], max(bounds[k], bounds[k + 1])
        h = range_digest()
        n = 0
        with open(path, "rb") as f:
            r = Range(f, a, b, h)
            while piece := r.read(READ_BYTES):
                n += piece.count(b"\n")
        return a, b, n, h.hexdigest()

    with ThreadPoolExecutor(max(1, min(parts, threads))) as pool:
        return list(pool.map(one, range(parts)))


SAMPLES = 64  # pieces of a file compared between this process and the workers
SAMPLE_BYTES = 1 << 16


def file_facts(path: str) -> tuple[bool, int, str]:
    """(whether ``path`` is a plain, uncompressed file here, its size, a fingerprint): the
    BLAKE2 hash of :data:`SAMPLES` pieces of :data:`SAMPLE_BYTES` spread evenly over the file,
    its first and last included (the whole file when it is smaller): a worker's own copy at the
    same path is used only if it has the same size and fingerprint as the client's file."""
    try:
        size = os.path.getsize(path)
        h = hashlib.blake2b(digest_size=16)
        with open(path, "rb") as f:
            magic = f.read(3)
            if size <= SAMPLES * SAMPLE_BYTES:
                f.seek(0)
                h.update(f.read())
            else:
                step = (size - SAMPLE_BYTES) / (SAMPLES - 1)
                for k in range(SAMPLES):
                    f.seek(int(k * step))
                    h.update(f.read(SAMPLE_BYTES))
    except OSError:
        return False, -1, ""
    return not (magic[:2] == b"\x1f\x8b" or magic == b"BZh"), size, h.hexdigest()



def merge_parts(parts: list) -> tuple:
    """(X, y, cost, lines) of the parsed parts in order, each part freed once copied: the
    peak is the block plus one part, not twice the block."""
    import scipy.sparse as sp

    rows = sum(p.n_rows for p in parts)
    nnz = sum(p.X.nnz for p in parts)
    width = max(p.X.shape[1] for p in parts)
    data = np.empty(nnz, parts[0].X.data.dtype)
    indices = np.empty(nnz, parts[0].X.indices.dtype)
    indptr = np.empty(rows + 1, np.int64)
    y = np.empty(rows)
    cost = np.empty(rows)
    lines = np.empty(rows, np.int64)
    indptr[0] = 0
    r = v = 0
    parts.reverse()
    while parts:
        p = parts.pop()
        n, k = p.n_rows, p.X.nnz
        data[v:v + k] = p.X.data
        indices[v:v + k] = p.X.indices
        indptr[r + 1:r + n + 1] = p.X.indptr[1:] + v
        y[r:r + n] = p.y
        cost[r:r + n] = p.cost
        lines[r:r + n] = p.lines
        r += n
        v += k
        del p
    return sp.csr_matrix((data, indices, indptr), shape=(rows, width)), y, cost, lines


