"""SVMlight / LIBSVM data files: reading (whole or in chunks) and writing.

Format: ``label idx:val idx:val ... # comment``, one row per line. Labels are integers; ``0``
marks an unlabeled row (SVMlight's transductive convention). Indices are one-based by default
(``zero_based=True`` for files that start at 0) and must increase strictly. ``qid:`` and
``sid:`` tokens are accepted and ignored; ``cost:c`` sets the row's cost factor (SVMlight).
Blank lines and ``#`` comments (whole-line or trailing) are skipped. ``.gz`` and ``.bz2`` files
(recognised by their magic bytes) and ``-`` for standard input are read transparently.

SVMlin's split layout (a features-only file plus one label per line in a separate file) is read
with ``labels=PATH``.

Every input error raises :class:`formats.errors.DataError` naming the file and the line.
"""

from __future__ import annotations

import bz2
import gzip
import io
import os
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ssl_svm.formats import CHUNK_BYTES
from ssl_svm.formats import textparse as P
from ssl_svm.formats.errors import DataError


@dataclass
class Dataset:
    """Rows of a data file.

    X: CSR float64 (rows x n_features), 0-based columns. y: float64 labels, 0 = unlabeled.
    cost: per-row cost factor (1 unless the file gives ``cost:``). lines: 1-based line number
    of each row in its file (for error messages), None for rows that came as arrays (messages
    then name ``NAME[row]``). name: the file name as the user gave it, or the array's.
    """

    X: sp.csr_matrix
    y: np.ndarray
    cost: np.ndarray
    lines: np.ndarray | None
    name: str

    @property
    def n_rows(self) -> int:
        return self.X.shape[0]

    def subset(self, rows: np.ndarray) -> Dataset:
        return Dataset(self.X[rows], self.y[rows], self.cost[rows],
                       None if self.lines is None else self.lines[rows], self.name)


BOM = b"\xef\xbb\xbf"  # UTF-8's byte-order mark


# --------------------------------------------------------------------------- opening files

def open_input(path: str):
    """Open a data file for binary reading: ``-`` is stdin; gzip/bzip2 are detected by magic."""
    if path == "-":
        if sys.stdin is None:  # started with standard input closed (<&-)
            raise DataError("-", "cannot read: standard input is closed")
        f = sys.stdin.buffer
        try:
            magic = f.peek(3)[:3] if hasattr(f, "peek") else b""
        except OSError as e:
            raise DataError("-", f"cannot read: {e.strerror or e}") from None
        if magic[:2] == b"\x1f\x8b":
            return gzip.GzipFile(fileobj=f, mode="rb")
        if magic == b"BZh":
            return bz2.BZ2File(f, mode="rb")
        return f
    try:
        f = open(path, "rb")
    except OSError as e:
        raise DataError(path, f"cannot open: {e.strerror or e}") from None
    try:
        magic = f.read(3)
        f.seek(0)
    except OSError as e:
        f.close()
        raise DataError(path, f"cannot read: {e.strerror or e}") from None
    if magic[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=f, mode="rb")
    if magic == b"BZh":
        return bz2.BZ2File(f, mode="rb")
    return f


def _read(stream, size: int, name: str) -> bytes:
    try:
        return stream.read(size)
    except (OSError, EOFError, ValueError) as e:  # corrupt or truncated .gz/.bz2
        raise DataError(name, f"cannot read: {e}") from None


def iter_line_blocks(stream, name: str, chunk_bytes: int = CHUNK_BYTES,
                     first_line: int = 1) -> Iterator[tuple[bytes, int]]:
    """Yield (block, first_line) where block holds whole lines ending in ``\\n``.

    first_line is the 1-based number of the block's first line in the file (the stream's
    first line is line ``first_line``: a part of a file).
    """
    rest = b""
    line_no = first_line
    first = True
    while True:
        piece = _read(stream, chunk_bytes, name)
        if not piece:
            break
        if first:  # a UTF-8 byte-order mark (Windows editors write one) is no part of line 1
            first = False
            if piece.startswith(BOM[:len(piece)]) and len(piece) < len(BOM):
                piece += _read(stream, len(BOM) - len(piece), name)
            if piece.startswith(BOM):
                piece = piece[len(BOM):]
                if not piece:
                    continue
        buf = rest + piece if rest else piece
        cut = buf.rfind(b"\n")
        if cut < 0:
            rest = buf
            continue
        block, rest = buf[: cut + 1], buf[cut + 1:]
        yield block, line_no
        line_no += block.count(b"\n")
    if rest:
        yield rest + b"\n", line_no


# --------------------------------------------------------------------------- parsing

def _token(block: bytes, err) -> str:
    return block[int(err[2]): int(err[3])].decode("utf-8", "replace")


def _label_out_of_range(tok: str) -> str:
    return (f"label '{tok}' is out of range (class labels are integers from -{P.LABEL_MAX} to "
            f"{P.LABEL_MAX})")


def _message(code: int, block: bytes, err, zero_based: bool) -> str:
    tok = _token(block, err)
    one = 0 if zero_based else 1
    if code == P.E_LABEL:
        return f"malformed label '{tok}'"
    if code == P.E_LABEL_IS_FEATURE:
        return (f"malformed label '{tok}' (the line starts with a feature; for a features-only "
                "file give the labels with --labels FILE)")
    if code == P.E_LABEL_NONFINITE:
        return f"label '{tok}' is not a finite number"
    if code == P.E_LABEL_NOT_INTEGER:
        return f"label '{tok}' is not an integer class label"
    if code == P.E_LABEL_RANGE:
        return _label_out_of_range(tok)
    if code == P.E_VALUE_LARGE:
        return (f"value of feature {int(err[4]) + one} is too large ('{tok}'; at most "
                f"{P.VALUE_MAX:g} in magnitude: rescale the feature)")
    if code == P.E_TOKEN:
        return f"malformed token '{tok}' (expected index:value)"
    if code == P.E_INDEX_ZERO:
        return ("feature index 0 in a one-based file (use --zero-based for files whose indices "
                "start at 0)")
    if code == P.E_NOT_INCREASING:
        return (f"feature indices must increase strictly ({int(err[4]) + one} after "
                f"{int(err[5]) + one})")
    if code == P.E_VALUE_NONFINITE:
        return f"value of feature {int(err[4]) + one} is not a finite number ('{tok}')"
    if code == P.E_INDEX_LARGE:
        return f"feature index too large in '{tok}' (at most {P.INDEX_MAX})"
    if code == P.E_COST:
        return (f"malformed cost '{tok}' (expected cost:<number>, from 0 to "
                f"{P.VALUE_MAX:g})")
    if code == P.E_INDEX_NEGATIVE:
        return f"negative feature index in '{tok}'"
    return f"unreadable token '{tok}'"


@dataclass
class _Chunk:
    labels: np.ndarray
    costs: np.ndarray
    lines: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    max_index: int


def _compiled_parser() -> bool:
    """True where the compiled parser can convert numbers locale-independently."""
    from ssl_svm.formats import _parse

    return _parse.AVAILABLE


def _parse_block(block: bytes, first_line: int, name: str, has_label: bool, zero_based: bool,
                 col_limit: int) -> _Chunk:
    n = len(block)
    values = block.count(b":")  # at least the values: one pass, C speed
    limit = P.SMALL_VALUES_NUMBA if "numba" in sys.modules else P.SMALL_VALUES
    small = "ssl_svm.formats._parse" not in sys.modules and values <= limit
    if small or not _compiled_parser():
        # a small input: starting numba would cost more than parsing it in Python
        (labels, costs, row_line, indptr, indices, data, nrows, nnz, max_idx,
         err) = P.parse_buffer(block, has_label, zero_based, col_limit)
    else:
        from ssl_svm.formats import _parse

        buf = np.frombuffer(block, dtype=np.uint8)  # no copy: the final '\n' stops every scan
        max_rows = block.count(b"\n") + 1
        max_tokens = values + 1
        (labels, costs, row_line, indptr, indices, data, nrows, nnz, max_idx,
         err) = _parse.parse_buffer(buf, n, has_label, zero_based, col_limit, max_rows,
                                    max_tokens, _parse.C_LOCALE)
    if err[0] != P.OK:
        raise DataError(name, _message(int(err[0]), block, err, zero_based),
                        line=first_line + int(err[1]))
    lab = labels[:nrows]
    return _Chunk(lab, costs[:nrows], row_line[:nrows] + first_line, indptr[: nrows + 1],
                  indices[:nnz], data[:nnz], int(max_idx))


class _LabelsFile:
    """One label per line (SVMlin's layout); blank lines and # comments are skipped."""

    def __init__(self, path: str):
        self.path = path
        self.stream = open_input(path)
        self.lines = io.TextIOWrapper(self.stream, encoding="utf-8", errors="replace")
        self.line_no = 0

    def take(self, k: int, data_name: str) -> np.ndarray:
        out = np.empty(k)
        i = 0
        while i < k:
            try:
                raw = self.lines.readline()
            except (OSError, EOFError, ValueError) as e:
                raise DataError(self.path, f"cannot read: {e}") from None
            if not raw:
                raise DataError(self.path, f"has fewer labels than {data_name} has rows "
                                f"({self.line_no} lines read)")
            self.line_no += 1
            text = raw.split("#", 1)[0].strip()
            if not text:
                continue
            try:
                v = float(text)
            except ValueError:
                raise DataError(self.path, f"malformed label '{text}'", line=self.line_no) from None
            if not np.isfinite(v) or v != round(v):
                raise DataError(self.path, f"label '{text}' is not an integer class label",
                                line=self.line_no)
            if abs(v) > P.LABEL_MAX:
                raise DataError(self.path, _label_out_of_range(text), line=self.line_no)
            out[i] = v
            i += 1
        return out

    def finish(self, data_name: str) -> None:
        for raw in self.lines:
            self.line_no += 1
            if raw.split("#", 1)[0].strip():
                raise DataError(self.path, f"has more labels than {data_name} has rows",
                                line=self.line_no)


def parse_block(block: bytes, first_line: int, name: str, *, has_label: bool = True,
                zero_based: bool = False, n_features: int | None = None) -> Dataset:
    """Parse whole lines of a data file (from :func:`iter_line_blocks`) into a Dataset.

    Errors name ``name`` and the file's line number (``first_line`` is the block's first).
    Without a label column (``has_label`` False) the labels are 0, to be filled in by the
    caller. ``n_features`` as in :func:`iter_chunks`.
    """
    col_limit = -1 if n_features is None else int(n_features)
    ch = _parse_block(block, first_line, name, has_label, zero_based, col_limit)
    nrows = ch.labels.size
    width = n_features if n_features is not None else ch.max_index + 1
    X = sp.csr_matrix((ch.data, ch.indices, ch.indptr), shape=(nrows, max(width, 0)))
    y = ch.labels if has_label else np.zeros(nrows)
    return Dataset(X, y, ch.costs, ch.lines, name)


def _in_order(parse: Callable, blocks: Iterator, threads: int | None) -> Iterator:
    """``parse`` over ``blocks``, the results in order. The first block is parsed here (it
    loads the compiled parser once); past it, with ``threads`` (None: :func:`parse_threads`)
    > 1 and the compiled parser (it releases the GIL), the blocks are parsed on that many
    threads, at most threads + 1 in flight (memory stays bounded), while this thread reads the
    next."""
    first = next(blocks, None)
    if first is None:
        return
    yield parse(first)
    threads = parse_threads() if threads is None else threads
    if threads <= 1 or "ssl_svm.formats._parse" not in sys.modules:
        for block in blocks:
            yield parse(block)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(threads, thread_name_prefix="ssl-svm-parse") as pool:
        pending = deque()
        try:
            for block in blocks:
                pending.append(pool.submit(parse, block))
                if len(pending) > threads:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:  # an error (the first in the file's order) or a consumer that stopped
            for f in pending:
                f.cancel()


def parse_threads() -> int:
    """Threads :func:`iter_chunks` parses on by default: numba's (``NUMBA_NUM_THREADS``) once
    the compiled parser is loaded, else 1."""
    if "ssl_svm.formats._parse" not in sys.modules:
        return 1
    from ssl_svm.formats import _parse

    return _parse.threads()


def iter_chunks(path: str, *, zero_based: bool = False, labels: str | None = None,
                n_features: int | None = None, chunk_bytes: int = CHUNK_BYTES,
                threads: int | None = None) -> Iterator[Dataset]:
    """Read a data file in pieces of about ``chunk_bytes`` (constant memory).

    With ``n_features`` set, feature indices beyond it are ignored (LIBSVM's rule at predict
    time) and every chunk has exactly that many columns; otherwise each chunk is as wide as its
    own largest index. With ``labels``, the data file has no label column and the labels come
    from that file, one per row. The pieces are parsed on ``threads`` threads (default
    :func:`parse_threads`) and come in the file's order; the first error in that order is the
    one raised.
    """
    stream = open_input(path)
    lab = _LabelsFile(labels) if labels is not None else None

    def parse(item):
        return parse_block(item[0], item[1], path, has_label=lab is None,
                           zero_based=zero_based, n_features=n_features)

    try:
        blocks = iter_line_blocks(stream, path, chunk_bytes)
        for part in _in_order(parse, blocks, threads):
            if part.n_rows == 0:
                continue
            if lab is not None:
                part.y = lab.take(part.n_rows, path)
            yield part
        if lab is not None:
            lab.finish(path)
    finally:
        if path != "-":
            stream.close()


def read_dataset(path: str, *, zero_based: bool = False, labels: str | None = None,
                 n_features: int | None = None, chunk_bytes: int = CHUNK_BYTES,
                 threads: int | None = None) -> Dataset:
    """Read a whole data file (see :func:`iter_chunks`). An empty file is an error."""
    parts = list(iter_chunks(path, zero_based=zero_based, labels=labels, n_features=n_features,
                             chunk_bytes=chunk_bytes, threads=threads))
    if not parts:
        raise DataError(path, "no data rows (the file is empty or has only comments)")
    return concat_parts(parts, path, n_features)


def concat_parts(parts: list[Dataset], name: str, n_features: int | None = None) -> Dataset:
    """One Dataset of the parts' rows in order (as wide as the widest, or n_features)."""
    if len(parts) == 1:
        return parts[0]
    width = n_features if n_features is not None else max(p.X.shape[1] for p in parts)
    nnz = np.cumsum([0] + [p.X.nnz for p in parts])
    indptr = np.concatenate([parts[0].X.indptr.astype(np.int64)] +
                            [p.X.indptr[1:].astype(np.int64) + nnz[i] for i, p in
                             enumerate(parts) if i > 0])
    X = sp.csr_matrix((np.concatenate([p.X.data for p in parts]),
                       np.concatenate([p.X.indices for p in parts]), indptr),
                      shape=(int(indptr.size - 1), width))
    return Dataset(X, np.concatenate([p.y for p in parts]),
                   np.concatenate([p.cost for p in parts]),
                   np.concatenate([p.lines for p in parts]), name)


def stack_unlabeled(data: Dataset, extra: Dataset) -> Dataset:
    """``data`` followed by the rows of ``extra`` as unlabeled rows (label 0, cost 1)."""
    width = max(data.X.shape[1], extra.X.shape[1])

    def widen(X):
        return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width))

    X = sp.vstack([widen(data.X), widen(extra.X)], format="csr")
    return Dataset(X, np.concatenate([data.y, np.zeros(extra.n_rows)]),
                   np.concatenate([data.cost, np.ones(extra.n_rows)]),
                   np.concatenate([data.lines, extra.lines]), data.name)


# --------------------------------------------------------------------------- writing

def format_label(v: float) -> str:
    return f"{int(v):+d}" if v in (1.0, -1.0) else str(int(v))


def write_dataset(path: str, X, y, *, zero_based: bool = False) -> None:
    """Write rows as SVMlight text (floats exactly, ``repr``); ``.gz``/``.bz2`` by extension.

    The write is atomic (temporary file, then rename).
    """
    X = sp.csr_matrix(X)
    off = 0 if zero_based else 1
    lines = []
    for i in range(X.shape[0]):
        a, b = X.indptr[i], X.indptr[i + 1]
        feats = " ".join(f"{j + off}:{v!r}" for j, v in
                         zip(X.indices[a:b].tolist(), X.data[a:b].tolist()))
        lines.append(f"{format_label(y[i])} {feats}".rstrip() + "\n")
    payload = "".join(lines).encode()
    if path.endswith(".gz"):
        payload = gzip.compress(payload, mtime=0)
    elif path.endswith(".bz2"):
        payload = bz2.compress(payload)
    atomic_write_bytes(path, payload)


def atomic_write_bytes(path: str, payload: bytes) -> None:
    """Write ``payload`` to ``path`` through a temporary file in the same folder and a rename."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def comment_of(raw: bytes) -> str:
    """The comment of one data line: the text after its first ``#``, stripped ('' if none)."""
    at = raw.find(b"#")
    return "" if at < 0 else raw[at + 1:].strip().decode("utf-8", errors="replace")


def block_comments(block: bytes, first_line: int, lines: np.ndarray) -> list[str]:
    """The comment of each row of a block from :func:`iter_line_blocks` (``lines``: the rows'
    file line numbers, as :func:`parse_block` gives them)."""
    raw = block.split(b"\n")
    return [comment_of(raw[int(n) - first_line]) for n in lines]


def file_comments(path: str, lines) -> list[str]:
    """The comment of each given line (file line numbers, ascending) of a data file, read
    again (plain, gzip or bzip2; not standard input)."""
    wanted = iter(int(n) for n in lines)
    out = []
    nxt = next(wanted, None)
    with open_input(path) as f:
        for number, raw in enumerate(f, start=1):
            while nxt == number:
                out.append(comment_of(raw.rstrip(b"\r\n")))
                nxt = next(wanted, None)
            if nxt is None:
                break
    return out
