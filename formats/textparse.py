"""The SVMlight/LIBSVM line grammar in plain Python: error codes, and a parser for small inputs.

The compiled parser (``formats._parse``) is the one for real data; but the first call of any
numba function in a process costs about 0.4 s (numba's import and the set-up of its compiler
target), far more than a few hundred lines take to parse here. ``formats.svmlight`` sends
blocks of at most :data:`SMALL_VALUES` values (:data:`SMALL_VALUES_NUMBA` once numba runs) to
:func:`parse_buffer` below while the compiled parser is not loaded, so that ``ssl-predict`` of
a small file, or a small ``svm`` fit, never starts numba.

:func:`parse_buffer` is a line-for-line port of ``formats._parse.parse_buffer``: the same
tokens, the same checks in the same order, the same error code, line and byte span for the
first bad token, the same arrays (tests/test_svmlight.py compares the two on generated and
mutated inputs). Numbers follow C's ``strtod`` in the "C" locale (decimal, ``inf``,
``infinity``, ``nan``, ``nan(chars)``; hex refused as there), converted by ``float()``, which
rounds correctly as glibc's ``strtod`` does.
"""

from __future__ import annotations

import math
import re
import sys

import numpy as np

from ssl_svm.formats import LABEL_MAX

# Error codes returned in err[0]; the messages live in formats.svmlight.
OK = 0
E_LABEL = 1
E_LABEL_IS_FEATURE = 2
E_LABEL_NONFINITE = 3
E_TOKEN = 4
E_INDEX_ZERO = 5
E_NOT_INCREASING = 6
E_VALUE_NONFINITE = 7
E_INDEX_LARGE = 8
E_COST = 9
E_INDEX_NEGATIVE = 10
E_LABEL_NOT_INTEGER = 11
E_LABEL_RANGE = 12
E_VALUE_LARGE = 13

INDEX_MAX = 2147483647
# Feature values and costs are at most VALUE_MAX in magnitude: squares and sums of squares
# over millions of rows (the solvers' Hessians, kernels) then stay far from overflow.
VALUE_MAX = 1e50

# Blocks of up to this many values (':' in the text, a cheap upper bound) are parsed here while
# the compiled parser is not loaded. Here a value costs 1.5-1.8 us whatever the row lengths
# (a9a, w8a, pcmac, rcv1, usps, mnist text). The compiled parser costs, before its first value,
# numba's import and compiler set-up when numba is not loaded (0.25 s: as long as 150,000
# values here), and only loading its cached functions (~0.02 s: 10,000 values here) when
# numba is loaded (a solver that needs it has started it; its set-up is paid either way).
SMALL_VALUES = 150_000
SMALL_VALUES_NUMBA = 10_000

_TOKEN = re.compile(rb"[^ \t\x0b\x0c\r]+")
_DECIMAL = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SPECIAL = re.compile(rb"[+-]?(?:inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?)", re.IGNORECASE)


def number(tok: bytes) -> tuple[float, bool]:
    """(value, ok): ``tok`` read whole as C's strtod would, hex refused (as ``_parse._number``)."""
    if b"x" in tok or b"X" in tok:
        return 0.0, False
    if _DECIMAL.fullmatch(tok):
        return float(tok), True
    m = _SPECIAL.fullmatch(tok)
    if m is None:
        return 0.0, False
    neg = tok[:1] == b"-"
    if tok.lstrip(b"+-")[:1] in (b"i", b"I"):
        return (-math.inf if neg else math.inf), True
    return math.nan, True


def parse_buffer(block: bytes, has_label: bool, zero_based: bool, col_limit: int):
    """Parse ``block`` (whole lines, each ending in ``\\n``) as ``_parse.parse_buffer`` does.

    Returns labels, costs, row_line (0-based line of each row within the block), indptr,
    indices (0-based, int32), data, nrows, nnz, max_index (-1 if none) and err
    ``[code, line, token_start, token_end, a, b]`` (int64; byte offsets into ``block``).
    A block in the plain form (:func:`plain_block`) is read by whole-array passes; any other,
    and any whose values break a rule, line by line (:func:`parse_lines`), which finds the
    first bad token.
    """
    if has_label:
        out = plain_block(block, zero_based, col_limit)
        if out is not None:
            return out
    return parse_lines(block, has_label, zero_based, col_limit)


_SEP = rb"[ \t\x0b\x0c\r]"


def plain_pattern(possessive: bool) -> re.Pattern:
    """The regular expression of a block of lines in the plain form: an integer label, then
    index:value pairs, nothing else (no comment, qid, cost, sign on an index, special number,
    blank line). Each number is matched one way only (with two, digits split between [0-9]+
    and [0-9]*, a block that fails at its end was retried over every split of every number,
    exponentially), so every choice is forced by the next byte and ``possessive``
    quantifiers (Python 3.11+), which never give back what they took, match the same blocks:
    6x faster, as no state is kept for backtracking (usps49-10's 1 MB: 9 against 59 ms)."""
    q = b"+" if possessive else b""
    dec = (rb"[+-]?" + q + rb"(?:[0-9]+" + q + rb"(?:\.[0-9]*" + q + rb")?" + q
           + rb"|\.[0-9]+" + q + rb")(?:[eE][+-]?" + q + rb"[0-9]{1,3}" + q + rb")?" + q)
    line = (_SEP + rb"*" + q + rb"[+-]?" + q + rb"[0-9]{1,15}" + q + rb"(?:" + _SEP + rb"+" + q
            + rb"[0-9]{1,10}" + q + rb":" + dec + rb")*" + q + _SEP + rb"*" + q + rb"\n")
    return re.compile(rb"(?:" + line + rb")*" + q)


_PLAIN = plain_pattern(sys.version_info >= (3, 11))


def plain_block(block: bytes, zero_based: bool, col_limit: int):
    """:func:`parse_buffer`'s result for a block of labeled lines in the plain form, from
    whole-array passes (a value costs ~0.2 µs here, 1.5-1.8 µs line by line); None when the
    block is not in that form or a value breaks a rule (index 0 one-based, indices not
    increasing, too large, values too large), for :func:`parse_lines` to say where."""
    if not block or _PLAIN.fullmatch(block) is None:
        return None
    raw = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(raw == ord("\n"))
    colons = np.flatnonzero(raw == ord(":"))
    nrows = ends.size
    per_row = np.bincount(np.searchsorted(ends, colons), minlength=nrows)
    # every token a decimal number (the pattern says so): numpy's text reader converts them
    # as float() and strtod do (correctly rounded; tested equal on every shared dataset)
    numbers = np.fromstring(block.replace(b":", b" "), sep=" ")
    if numbers.size != nrows + 2 * colons.size:
        return None
    width = 1 + 2 * per_row
    first = np.cumsum(width) - width
    labels = numbers[first]
    is_label = np.zeros(numbers.size, dtype=bool)
    is_label[first] = True
    pairs = numbers[~is_label].reshape(-1, 2)
    idx = pairs[:, 0]
    data = pairs[:, 1]
    indptr = np.zeros(nrows + 1, dtype=np.int64)
    np.cumsum(per_row, out=indptr[1:])
    if not zero_based:
        idx = idx - 1.0
    step = np.diff(idx)
    starts = indptr[1:-1]
    step[starts[(starts > 0) & (starts < idx.size)] - 1] = 1.0  # a row's first index
    if (idx.size and (idx.min() < 0 or idx.max() > INDEX_MAX - (0 if zero_based else 1)
                      or np.any(step <= 0)
                      or not np.all(np.abs(data) <= VALUE_MAX))
            or np.any(np.abs(labels) > LABEL_MAX)):
        return None
    indices = idx.astype(np.int64)
    max_idx = int(indices.max()) if indices.size else -1
    if 0 <= col_limit <= max_idx:
        keep = indices < col_limit
        rows = np.repeat(np.arange(nrows), per_row)
        indptr[1:] = np.cumsum(np.bincount(rows[keep], minlength=nrows))
        indices, data = indices[keep], data[keep]
    # err on success: the last token's line and span, as the line-by-line parser leaves it
    last = block[:-1].rsplit(b"\n", 1)[-1]
    line_start = len(block) - 1 - len(last)
    body = last.rstrip(b" \t\x0b\x0c\r")
    tok_start = max(body.rfind(c) for c in (b" ", b"\t", b"\x0b", b"\x0c", b"\r")) + 1
    err = np.array([OK, nrows - 1, line_start + tok_start, line_start + len(body), 0, 0],
                   dtype=np.int64)
    return (labels, np.ones(nrows), np.arange(nrows, dtype=np.int64), indptr,
            indices.astype(np.int32), np.ascontiguousarray(data), nrows, int(indices.size),
            max_idx, err)


def parse_lines(block: bytes, has_label: bool, zero_based: bool, col_limit: int):
    """:func:`parse_buffer` line by line: a line-for-line port of ``_parse.parse_buffer``."""
    labels: list[float] = []
    costs: list[float] = []
    row_line: list[int] = []
    indptr = [0]
    indices: list[int] = []
    data: list[float] = []
    err = [OK, 0, 0, 0, 0, 0]
    max_idx = -1
    start = 0
    lines = block.split(b"\n")
    for line, raw in enumerate(lines[:-1]):
        hash_at = raw.find(b"#")
        content = raw if hash_at < 0 else raw[:hash_at]
        first = True
        started = False
        prev = -1
        label = 0.0
        cost = 1.0
        for m in _TOKEN.finditer(content):
            s, e = m.span()
            tok = m.group()
            err[1], err[2], err[3] = line, start + s, start + e
            started = True
            if first and has_label:
                first = False
                if b":" in tok:
                    err[0] = E_LABEL_IS_FEATURE
                    break
                v, ok = number(tok)
                if not ok:
                    err[0] = E_LABEL
                elif not math.isfinite(v):
                    err[0] = E_LABEL_NONFINITE
                elif v != math.floor(v):
                    err[0] = E_LABEL_NOT_INTEGER
                elif abs(v) > LABEL_MAX:
                    err[0] = E_LABEL_RANGE
                if err[0] != OK:
                    break
                label = v
                continue
            first = False
            c = tok.find(b":")
            if c <= 0 or c + 1 == len(tok):
                err[0] = E_TOKEN
                break
            key = tok[:c]
            if key in (b"qid", b"sid"):
                continue
            if key == b"cost":
                v, ok = number(tok[c + 1:])
                if not ok or not math.isfinite(v) or v < 0.0 or v > VALUE_MAX:
                    err[0] = E_COST
                    break
                cost = v
                continue
            neg = key[:1] == b"-"
            digits = key[1:] if key[:1] in (b"-", b"+") else key
            if not digits or not digits.isdigit() or not digits.isascii():
                err[0] = E_TOKEN
                break
            # (int() of a huge digit string is refused by Python; any 11 digits are too many)
            idx = int(digits) if len(digits) <= 11 else INDEX_MAX + 1
            if neg:
                err[0] = E_INDEX_NEGATIVE
            elif idx > INDEX_MAX:
                err[0] = E_INDEX_LARGE
            elif not zero_based and idx == 0:
                err[0] = E_INDEX_ZERO
            if err[0] != OK:
                break
            if not zero_based:
                idx -= 1
            if idx <= prev:
                err[0] = E_NOT_INCREASING
                err[4], err[5] = idx, prev
                break
            v, ok = number(tok[c + 1:])
            if not ok:
                err[0] = E_TOKEN
            elif not math.isfinite(v):
                err[0] = E_VALUE_NONFINITE
                err[4] = idx
            elif abs(v) > VALUE_MAX:
                err[0] = E_VALUE_LARGE
                err[4] = idx
            if err[0] != OK:
                break
            prev = idx
            if col_limit < 0 or idx < col_limit:
                indices.append(idx)
                data.append(v)
            if idx > max_idx:
                max_idx = idx
        if err[0] != OK:
            break
        if started:
            labels.append(label)
            costs.append(cost)
            row_line.append(line)
            indptr.append(len(indices))
        start += len(raw) + 1
    return (np.array(labels, dtype=np.float64), np.array(costs, dtype=np.float64),
            np.array(row_line, dtype=np.int64), np.array(indptr, dtype=np.int64),
            np.array(indices, dtype=np.int32), np.array(data, dtype=np.float64),
            len(labels), len(indices), max_idx, np.array(err, dtype=np.int64))
