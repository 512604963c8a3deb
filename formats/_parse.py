"""The SVMlight/LIBSVM line parser, compiled with numba.

One pass over a byte buffer of whole lines produces CSR arrays. Numbers are converted by the C
library's ``strtod_l`` in a "C" numeric locale of its own (correctly rounded, the same digits
Python's ``float()`` gives), called directly from the compiled loop: a process that set a
comma-decimal ``LC_NUMERIC`` (a notebook, a Dask worker) reads ``1:0.5`` as everyone else
does. Where the C library has no ``newlocale`` (Windows), :data:`AVAILABLE` is False and
``formats.svmlight`` parses with the plain-Python port instead. The parser stops at the
first bad token and reports an error code with the line and the token's byte span;
``formats.svmlight`` turns that into a message.
"""

import ctypes
import ctypes.util
import locale

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

# The error codes (messages in formats.svmlight) are defined once, with the plain-Python port.
from ssl_svm.formats.textparse import (
    E_COST,
    E_INDEX_LARGE,
    E_INDEX_NEGATIVE,
    E_INDEX_ZERO,
    E_LABEL,
    E_LABEL_IS_FEATURE,
    E_LABEL_NONFINITE,
    E_LABEL_NOT_INTEGER,
    E_LABEL_RANGE,
    E_NOT_INCREASING,
    E_TOKEN,
    E_VALUE_LARGE,
    E_VALUE_NONFINITE,
    INDEX_MAX,
    LABEL_MAX,
    OK,
    VALUE_MAX,
)
from ssl_svm.solvers.jit import njit


def _c_numeric_locale() -> int:
    """A locale_t whose LC_NUMERIC is "C" (0 if the C library cannot make one)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        newlocale = libc.newlocale
        libc.strtod_l  # noqa: B018 -- must exist too
    except (OSError, AttributeError):
        return 0
    newlocale.restype = ctypes.c_void_p
    newlocale.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p]
    return newlocale(1 << locale.LC_NUMERIC, b"C", None) or 0


C_LOCALE = _c_numeric_locale()  # made once per process, never freed
AVAILABLE = C_LOCALE != 0


@intrinsic
def _strtod(typingctx, base, offset, endbuf, loc):
    """strtod_l(base + offset, &end, loc): declared by symbol name so the compiled code can be
    cached (the locale handle is an argument, not a constant baked into the cache)."""
    sig = types.float64(types.voidptr, types.int64, types.voidptr, types.int64)

    def codegen(context, builder, signature, args):
        base_ptr, off, end_ptr, loc_int = args
        char_p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.DoubleType(), [char_p, char_p.as_pointer(), char_p])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "strtod_l")
        start = builder.gep(builder.bitcast(base_ptr, char_p), [off])
        return builder.call(fn, [start, builder.bitcast(end_ptr, char_p.as_pointer()),
                                 builder.inttoptr(loc_int, char_p)])

    return sig, codegen


@njit(cache=True)
def _is_space(c):
    # space, \t, \v, \f, \r: the separators SVMlight and Python's bytes.split() accept
    return c == 32 or c == 9 or c == 11 or c == 12 or c == 13


@njit(cache=True)
def _number(buf, base, s, e, endp, loc):
    """Parse buf[s:e] as a whole float; returns (value, ok). Hex floats are refused."""
    for k in range(s, e):
        if buf[k] == 120 or buf[k] == 88:  # 'x' / 'X'
            return 0.0, False
    v = _strtod(buf.ctypes, s, endp.ctypes, loc)
    return v, (endp[0] - base) == e


@njit(cache=True, nogil=True)  # nogil: blocks of one file are parsed on threads side by side
def parse_buffer(buf, n, has_label, zero_based, col_limit, max_rows, max_tokens, loc):
    """Parse ``buf[:n]``: whole lines, ``buf[n-1] == '\\n'`` (which also stops strtod).

    Returns labels, costs, row_line (0-based line of each row within the buffer), indptr,
    indices (0-based), data, nrows, nnz, max_index (0-based, -1 if none) and err, an int64
    array ``[code, line, token_start, token_end, a, b]``. Indices ``>= col_limit`` are
    validated but not stored (``col_limit < 0``: keep all). Blank and comment-only lines are
    not rows. ``loc``: :data:`C_LOCALE`.
    """
    labels = np.zeros(max_rows)
    costs = np.ones(max_rows)
    row_line = np.empty(max_rows, np.int64)
    indptr = np.zeros(max_rows + 1, np.int64)
    indices = np.empty(max_tokens, np.int32)
    data = np.empty(max_tokens)
    err = np.zeros(6, np.int64)
    endp = np.zeros(1, np.int64)
    base = buf.ctypes.data
    nrows = 0
    nnz = 0
    max_idx = -1
    line = 0
    pos = 0
    while pos < n and err[0] == OK:
        eol = pos
        while buf[eol] != 10:
            eol += 1
        p = pos
        first = True
        started = False
        prev = -1
        while err[0] == OK:
            while p < eol and _is_space(buf[p]):
                p += 1
            if p >= eol or buf[p] == 35:  # end of line or '#' comment
                break
            s = p
            while p < eol and not _is_space(buf[p]) and buf[p] != 35:
                p += 1
            e = p
            # the span and line of the token being read, kept if it turns out bad
            err[1] = line
            err[2] = s
            err[3] = e
            if not started:
                started = True
                row_line[nrows] = line
                costs[nrows] = 1.0
                labels[nrows] = 0.0
            if first and has_label:
                first = False
                for k in range(s, e):
                    if buf[k] == 58:
                        err[0] = E_LABEL_IS_FEATURE
                if err[0] != OK:
                    break
                v, ok = _number(buf, base, s, e, endp, loc)
                if not ok:
                    err[0] = E_LABEL
                elif not np.isfinite(v):
                    err[0] = E_LABEL_NONFINITE
                elif v != np.floor(v):
                    err[0] = E_LABEL_NOT_INTEGER
                elif abs(v) > LABEL_MAX:
                    err[0] = E_LABEL_RANGE
                labels[nrows] = v
                continue
            first = False
            c = s
            while c < e and buf[c] != 58:
                c += 1
            if c == e or c == s or c + 1 == e:
                err[0] = E_TOKEN
                break
            # qid:, sid: and cost: are SVMlight's special tokens
            if c - s == 3 and ((buf[s] == 113 and buf[s + 1] == 105 and buf[s + 2] == 100) or
                               (buf[s] == 115 and buf[s + 1] == 105 and buf[s + 2] == 100)):
                continue
            if c - s == 4 and buf[s] == 99 and buf[s + 1] == 111 and buf[s + 2] == 115 \
                    and buf[s + 3] == 116:
                v, ok = _number(buf, base, c + 1, e, endp, loc)
                if not ok or not np.isfinite(v) or v < 0.0 or v > VALUE_MAX:
                    err[0] = E_COST
                costs[nrows] = v
                continue
            k = s
            neg = False
            if buf[k] == 45:  # '-'
                neg = True
                k += 1
            elif buf[k] == 43:  # '+'
                k += 1
            if k == c:
                err[0] = E_TOKEN
            idx = 0
            while k < c and err[0] == OK:
                d = buf[k] - 48
                if d < 0 or d > 9:
                    err[0] = E_TOKEN
                elif idx <= INDEX_MAX:
                    idx = idx * 10 + d
                k += 1
            if err[0] != OK:
                break
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
                err[4] = idx
                err[5] = prev
                break
            v, ok = _number(buf, base, c + 1, e, endp, loc)
            if not ok:
                err[0] = E_TOKEN
            elif not np.isfinite(v):
                err[0] = E_VALUE_NONFINITE
                err[4] = idx
            elif abs(v) > VALUE_MAX:
                err[0] = E_VALUE_LARGE
                err[4] = idx
            if err[0] != OK:
                break
            prev = idx
            if col_limit < 0 or idx < col_limit:
                indices[nnz] = idx
                data[nnz] = v
                nnz += 1
            if idx > max_idx:
                max_idx = idx
        if started and err[0] == OK:
            nrows += 1
            indptr[nrows] = nnz
        pos = eol + 1
        line += 1
    return labels, costs, row_line, indptr, indices, data, nrows, nnz, max_idx, err


def threads() -> int:
    """Threads the blocks of one file may be parsed on (numba's for this process)."""
    import numba

    return numba.get_num_threads()

