"""The plain-Python parser for small inputs equals the compiled one: the same rows, values and
line numbers, and the same error code, line and byte span for the first bad token, on
generated lines, on mutated real files and on every token shape the grammar distinguishes."""

import sys

import numpy as np
import pytest
from conftest import SAMPLES, shared
from hypothesis import given, settings
from hypothesis import strategies as st

from ssl_svm.formats import _parse, textparse

NUMBERS = ["0", "1", "-1", "+1", "2.5", "-.5", ".5", "5.", "1e3", "1E-3", "+1.5e+2", "1e",
           "1e+", ".", "-", "+", "", "inf", "-inf", "Infinity", "INF", "infinit", "nan",
           "NaN", "nan()", "nan(1a_b)", "nan(", "nan(x)", "0x10", "1x", "1_0", "1e999",
           "-1e999", "1e-999", "4.9e-324", "00017", "1.5.2", "١", "1:2", "abc", "1,5",
           "179769313486231570000000000000000000000000000000000000000000000000000000000000"
           "000000000000000000000000000000000000000000000000000000000000000000000000000000"
           "0000000000000000000000000000000000000000000000000000000000000000000000000000000"
           "00000000000000000000000000000000000000000000000000000000000000000000000000000.5"]
INDICES = ["1", "2", "3", "10", "0", "-1", "+4", "007", "2147483647", "2147483648",
           "99999999999999999999", "", "a", "1a", "q", "qid", "sid", "cost", "Qid", "COST"]
SEPARATORS = [" ", "  ", "\t", "\x0b", "\x0c", "\r", " \r"]


GOOD_VALUES = ["0", "1", "-1", "2.5", ".5", "1e3", "-2E-2"]
GOOD_LABELS = ["+1", "-1", "0", "3", "1.0", "2e0"]


def _token():
    # mostly well-formed, so that lines get past their label and first tokens and every check
    # of a feature token is reached; the rest from the full lists of shapes
    index = st.one_of(st.integers(0, 12).map(str), st.sampled_from(INDICES))
    value = st.one_of(st.sampled_from(GOOD_VALUES), st.sampled_from(NUMBERS))
    feature = st.builds(lambda i, v: f"{i}:{v}", index, value)
    return st.one_of(feature, feature, feature,
                     st.sampled_from(["#", "# id 7", "#x", ":", "1:", ":1", "1::2", "qid:3",
                                      "cost:2", "cost:-1", "cost:nan", "sid:x", "sid:1"]),
                     st.sampled_from(NUMBERS))


lines = st.lists(st.one_of(
    st.builds(lambda lab, toks, seps: lab + "".join(s + t for s, t in zip(seps, toks)),
              st.one_of(st.sampled_from(GOOD_LABELS), st.sampled_from(GOOD_LABELS),
                        st.sampled_from(NUMBERS)),
              st.lists(_token(), max_size=6),
              st.lists(st.sampled_from(SEPARATORS), min_size=6, max_size=6)),
    st.sampled_from(["", " ", "# only a comment", "\r", "1:1 2:2"])), max_size=8)


def _both(block: bytes, has_label=True, zero_based=False, col_limit=-1):
    py = textparse.parse_buffer(block, has_label, zero_based, col_limit)
    buf = np.frombuffer(block, dtype=np.uint8)
    nb = _parse.parse_buffer(buf, len(block), has_label, zero_based, col_limit,
                             block.count(b"\n") + 1, block.count(b":") + 1, _parse.C_LOCALE)
    return py, nb


def assert_same(block: bytes, **kw):
    py, nb = _both(block, **kw)
    assert list(py[9]) == list(nb[9]), (block, list(py[9]), list(nb[9]))
    if py[9][0] != textparse.OK:
        return int(py[9][0])
    nrows, nnz = nb[6], nb[7]
    assert (py[6], py[7], py[8]) == (nrows, nnz, nb[8])
    for a, b, k in ((py[0], nb[0], nrows), (py[1], nb[1], nrows), (py[2], nb[2], nrows),
                    (py[3], nb[3], nrows + 1), (py[4], nb[4], nnz), (py[5], nb[5], nnz)):
        assert a.dtype == b.dtype
        assert np.array_equal(a[:k], b[:k]), (block, a[:k], b[:k])
    return textparse.OK


@settings(max_examples=1000, deadline=None)
@given(lines, st.booleans(), st.booleans(), st.sampled_from([-1, 2]))
def test_generated_lines_parse_alike(ls, has_label, zero_based, col_limit):
    block = ("\n".join(ls) + "\n").encode() if ls else b""
    assert_same(block, has_label=has_label, zero_based=zero_based, col_limit=col_limit)


@st.composite
def _sorted_line(draw):
    """A label and features with increasing indices, sometimes one repeated or out of order,
    sometimes index 0, values from every shape."""
    idx = sorted(set(draw(st.lists(st.integers(0, 40), max_size=8))))
    if idx and draw(st.booleans()):
        k = draw(st.integers(0, len(idx) - 1))
        idx.insert(k, idx[k] if draw(st.booleans()) else idx[k] + draw(st.integers(1, 3)))
    vals = draw(st.lists(st.one_of(st.sampled_from(GOOD_VALUES), st.sampled_from(NUMBERS)),
                         min_size=len(idx), max_size=len(idx)))
    label = draw(st.sampled_from(GOOD_LABELS))
    return " ".join([label] + [f"{i}:{v}" for i, v in zip(idx, vals)])


@settings(max_examples=1000, deadline=None)
@given(st.lists(_sorted_line(), min_size=1, max_size=5), st.booleans(), st.sampled_from([-1, 5]))
def test_generated_sorted_lines_parse_alike(ls, zero_based, col_limit):
    assert_same(("\n".join(ls) + "\n").encode(), zero_based=zero_based, col_limit=col_limit)


@pytest.mark.parametrize("line", [
    "+1 3:1 3:2", "+1 3:1 2:2", "+1 0:1", "-1 1:1 2147483647:1", "-1 2147483648:1",
    "+1 -3:1", "+1 +3:1", "+1 qid:1 sid:abc 2:1", "+1 cost:0 1:1", "+1 cost:-0.0 1:1",
    "+1 1:1 cost:3 cost:4", "+1 1:nan", "+1 1:-inf", "1:1 2:2", "+1 5:1 # 6:2 4:1",
    "+1\t1:1\x0b2:2\x0c3:3\r", "+1 1:1\x002:2", "+1 1:\xff",
])
@pytest.mark.parametrize("zero_based", [False, True])
def test_each_rule_parses_alike(line, zero_based):
    for has_label in (True, False):
        for col_limit in (-1, 2):
            assert_same((line + "\n").encode("latin-1"), has_label=has_label,
                        zero_based=zero_based, col_limit=col_limit)


@pytest.mark.parametrize("tok", NUMBERS)
def test_every_number_shape_as_label_value_and_cost(tok):
    for line in (f"{tok} 1:1", f"+1 1:{tok}", f"+1 cost:{tok} 1:1", f"+1 {tok}:1"):
        assert_same((line + "\n").encode())


def test_mutated_real_files_parse_alike():
    """Byte flips, insertions and deletions in real files: every outcome (rows or the first
    error) is the same."""
    rng = np.random.default_rng(0)
    sources = [(SAMPLES / "shuttle.train").read_bytes()[:20000],
               shared("bench", "pcmac-svmlin", "train.svm").read_bytes()[:20000]]
    alphabet = np.frombuffer(b"0123456789:.+-eE \t#\r\nxinfa\x00\xff", dtype=np.uint8)
    codes = set()
    for k in range(300):
        b = bytearray(sources[k % 2])
        for _ in range(int(rng.integers(1, 4))):
            pos = int(rng.integers(0, len(b)))
            op = rng.integers(0, 3)
            if op == 0:
                b[pos] = int(rng.choice(alphabet))
            elif op == 1:
                b.insert(pos, int(rng.choice(alphabet)))
            else:
                del b[pos]
        block = bytes(b)
        block = block[: block.rfind(b"\n") + 1]
        codes.add(assert_same(block))
    assert textparse.OK in codes and len(codes) >= 4  # both outcomes were exercised


def test_real_file_parses_alike_with_a_column_limit():
    block = shared("bench", "pcmac-svmlin", "train.svm").read_bytes()
    block = block[: block.rfind(b"\n", 0, 100_000) + 1]
    assert assert_same(block) == textparse.OK
    assert assert_same(block, col_limit=500) == textparse.OK


def test_plain_blocks_take_the_whole_array_path():
    """Real files in the plain form are read by whole-array passes (the tests above hold
    their result to the compiled parser's), also with a column limit and 0-based indices; a
    plain block that breaks a rule goes line by line, which says where."""
    for block in ((SAMPLES / "pcmac.train").read_bytes(),
                  (SAMPLES / "shuttle.train").read_bytes(),
                  shared("bench", "usps49-10", "train.svm").read_bytes()):
        assert textparse.plain_block(block, False, -1) is not None
        for kw in ({"col_limit": 3}, {"zero_based": True}, {"col_limit": 0}):
            assert assert_same(block, **kw) == textparse.OK
    # a row without features, in the middle and last, under a column limit
    assert assert_same(b"+1 1:1\n-1\n+1 2:3\n-1\n", col_limit=1) == textparse.OK
    for bad in (b"+1 2:1 2:2\n", b"+1 0:1\n", b"-1 1:1e999\n", b"+1 2147483648:1\n",
                b"99999999999 1:1\n", b"+1 3:2 1:1\n"):
        assert textparse.plain_block(bad, False, -1) is None
        assert assert_same(bad) != textparse.OK


@pytest.mark.skipif(sys.version_info < (3, 11), reason="possessive quantifiers: Python 3.11+")
@settings(max_examples=2000, deadline=None)
@given(st.one_of(lines, st.lists(_sorted_line(), min_size=1, max_size=5)),
       st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(list(b"0123456789:.+-eE \t\r\n")),
                          st.integers(0, 2)), max_size=3))
def test_the_possessive_plain_pattern_accepts_the_same_blocks(ls, edits):
    """The plain form's pattern with possessive quantifiers (the one Python 3.11+ runs) accepts
    exactly the blocks its backtracking form does: a block it refused wrongly would still be
    read right, line by line, so the tests above could not see it."""
    b = bytearray(("\n".join(ls) + "\n").encode())
    for pos, byte, op in edits:  # a byte changed, inserted or deleted
        if not b:
            break
        pos %= len(b)
        if op == 0:
            b[pos] = byte
        elif op == 1:
            b.insert(pos, byte)
        else:
            del b[pos]
    block = bytes(b[: b.rfind(b"\n") + 1])
    fast, slow = textparse.plain_pattern(True), textparse.plain_pattern(False)
    assert (fast.fullmatch(block) is None) == (slow.fullmatch(block) is None), block


def test_the_plain_pattern_is_possessive_where_python_has_it():
    assert (b"++" in textparse._PLAIN.pattern) == (sys.version_info >= (3, 11))
    for block in ((SAMPLES / "pcmac.train").read_bytes(),
                  shared("bench", "usps49-10", "train.svm").read_bytes(),
                  b"+1 1:1 2:-2.5e-3 \t\n-1\n  0 7:.5\r\n"):
        assert textparse._PLAIN.fullmatch(block) is not None


def test_a_block_that_fails_late_is_rejected_at_once():
    """A plain-looking block with a bad token at its end: the plain form's pattern has one way
    to match each number, so it fails in linear time (an earlier pattern retried every split of
    every number's digits: 40 such values never finished), and the line parser says where."""
    import subprocess
    import sys

    code = ("from ssl_svm.formats import textparse as tp\n"
            "bad = b'+1 ' + b' '.join(b'%d:1234567891' % i for i in range(1, 400)) + b' x\\n'\n"
            "assert tp.plain_block(bad, False, -1) is None\n"
            "assert tp.parse_buffer(bad, True, False, -1)[9][0] == tp.E_TOKEN\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr


def test_small_predict_input_does_not_start_numba(tmp):
    """ssl-predict of a small file with a linear model reads it without the compiled parser
    (numba's start-up would be most of the run)."""
    import subprocess

    from conftest import BIN, run

    model = tmp / "m"
    run("ssl-train", "-q", "-a", "svm", SAMPLES / "pcmac.train", model, check=0)
    code = ("import sys\nfrom ssl_cli import predict\n"
            f"sys.argv = ['ssl-predict', '-q', {str(SAMPLES / 'shuttle.test')!r}, "
            f"{str(model)!r}, {str(tmp / 'out')!r}]\n"
            "try:\n    predict.main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "print('NUMBA' if 'numba' in sys.modules else 'NO NUMBA')")
    r = subprocess.run([str(BIN / "python"), "-c", code], capture_output=True, text=True)
    assert r.stdout.strip().splitlines()[-1] == "NO NUMBA", r.stderr
