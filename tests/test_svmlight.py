"""The SVMlight reader: equal to scikit-learn's loader on real files, every syntax feature,
chunking, and the writer round trip."""

import bz2
import gzip
import io

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import shared
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_svmlight_file

from ssl_svm.formats.errors import DataError
from ssl_svm.formats.svmlight import iter_chunks, read_dataset, write_dataset
from ssl_svm.formats.textparse import VALUE_MAX

REAL_FILES = [
    ("bench", "pcmac-svmlin", "train.svm"),
    ("bench", "a9a-100", "test.svm"),
    ("bench", "rcv1-small-50", "train.svm"),
    ("datasets", "mnist38", "mnist38.gz"),
    ("datasets", "shuttle", "shuttle.t"),
    ("datasets", "heart", "heart_scale"),
]


def same_csr(A, B):
    A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    assert A.shape == B.shape
    assert np.array_equal(A.indptr, B.indptr)
    assert np.array_equal(A.indices, B.indices)
    assert np.array_equal(A.data, B.data)  # bit for bit: both use correctly rounded strtod


@pytest.mark.parametrize("parts", REAL_FILES, ids=lambda p: p[1])
def test_equals_sklearn_on_real_files(parts):
    path = str(shared(*parts))
    d = read_dataset(path)
    X, y = load_svmlight_file(path, zero_based=False)
    same_csr(d.X, X)
    assert np.array_equal(d.y, y)
    assert np.all(d.cost == 1.0)


def test_chunked_reading_equals_whole():
    path = str(shared("bench", "pcmac-svmlin", "train.svm"))
    whole = read_dataset(path)
    small = read_dataset(path, chunk_bytes=4096)  # far smaller than many lines
    same_csr(whole.X, small.X)
    assert np.array_equal(whole.y, small.y)
    assert np.array_equal(whole.lines, small.lines)
    assert whole.lines[0] == 1 and whole.lines[-1] == whole.n_rows


def test_blocks_parsed_on_threads_come_in_order_with_the_first_error(tmp, monkeypatch):
    """Past its first block a file is parsed on threads (the compiled parser releases the
    GIL): the same rows, labels and line numbers as one thread, a labels file taken in order,
    and of two bad lines in different blocks the first is the one reported."""
    import threading

    from ssl_svm.formats import svmlight
    from ssl_svm.formats._parse import parse_buffer

    assert parse_buffer is not None  # loaded: the blocks after the first take the compiled parser

    path = shared("bench", "pcmac-svmlin", "train.svm")
    one = read_dataset(str(path), chunk_bytes=4096, threads=1)
    names = set()
    parse_block = svmlight.parse_block

    def spy(*a, **k):
        names.add(threading.current_thread().name.split("_")[0])
        return parse_block(*a, **k)

    monkeypatch.setattr(svmlight, "parse_block", spy)
    three = read_dataset(str(path), chunk_bytes=4096, threads=3)
    assert "ssl-svm-parse" in names
    same_csr(one.X, three.X)
    assert np.array_equal(one.y, three.y) and np.array_equal(one.lines, three.lines)

    lines = path.read_text().splitlines()
    (tmp / "ex").write_text("\n".join(ln.split(" ", 1)[1] for ln in lines) + "\n")
    (tmp / "lab").write_text("\n".join(ln.split(" ", 1)[0] for ln in lines) + "\n")
    split = read_dataset(str(tmp / "ex"), labels=str(tmp / "lab"), chunk_bytes=4096, threads=3)
    same_csr(one.X, split.X)
    assert np.array_equal(one.y, split.y)

    bad = list(lines)
    bad[700] = "1 5:x"
    bad[1300] = "1 3:1 2:1"
    (tmp / "bad").write_text("\n".join(bad) + "\n")
    for _ in range(5):  # whichever block's thread finishes first
        with pytest.raises(DataError) as e:
            read_dataset(str(tmp / "bad"), chunk_bytes=4096, threads=3)
        assert e.value.line == 701, str(e.value)


def test_syntax_comments_qid_cost_blank_lines(tmp):
    p = tmp / "x.svm"
    p.write_text("# a full-line comment\n"
                 "+1 qid:3 1:0.5 3:-2e-3 # trailing comment 4:9\n"
                 "\n"
                 "   \t\n"
                 "-1 cost:2.5 2:1 sid:7 10:3\r\n"
                 "0 1:1e+2\n"
                 "2#no space before the comment\n"
                 "-1 4:1")  # no final newline
    d = read_dataset(str(p))
    assert d.y.tolist() == [1, -1, 0, 2, -1]
    assert d.cost.tolist() == [1, 2.5, 1, 1, 1]
    assert d.lines.tolist() == [2, 5, 6, 7, 8]
    assert d.X.shape == (5, 10)
    assert d.X.toarray()[0, [0, 2]].tolist() == [0.5, -2e-3]
    assert d.X[1].indices.tolist() == [1, 9]
    assert d.X[2].toarray()[0, 0] == 100.0
    assert d.X[3].nnz == 0


def test_zero_based(tmp):
    p = tmp / "z.svm"
    p.write_text("1 0:1 2:3\n-1 1:2\n")
    d = read_dataset(str(p), zero_based=True)
    assert d.X.toarray().tolist() == [[1, 0, 3], [0, 2, 0]]
    X, _ = load_svmlight_file(str(p), zero_based=True)
    same_csr(d.X, X)


def test_compressed_and_stdin(tmp, monkeypatch):
    raw = shared("bench", "a9a-100", "test.svm").read_bytes()[:200000]
    raw = raw[: raw.rfind(b"\n") + 1]
    (tmp / "a.gz").write_bytes(gzip.compress(raw))
    (tmp / "a.bz2").write_bytes(bz2.compress(raw))
    (tmp / "a").write_bytes(raw)
    ref = read_dataset(str(tmp / "a"))
    for name in ("a.gz", "a.bz2"):
        d = read_dataset(str(tmp / name))
        same_csr(d.X, ref.X)
        assert np.array_equal(d.y, ref.y)

    class FakeStdin:
        buffer = io.BytesIO(raw)

    monkeypatch.setattr("sys.stdin", FakeStdin)
    d = read_dataset("-")
    same_csr(d.X, ref.X)


def test_n_features_fixed_by_model(tmp):
    p = tmp / "w.svm"
    p.write_text("1 1:1 5:2 9:3\n-1 2:4\n")
    d = read_dataset(str(p), n_features=5)  # index 9 ignored, as LIBSVM does
    assert d.X.shape == (2, 5)
    assert d.X.toarray().tolist() == [[1, 0, 0, 0, 2], [0, 4, 0, 0, 0]]
    d = read_dataset(str(p), n_features=20)  # narrower file: padded
    assert d.X.shape == (2, 20)


def test_svmlin_split_layout(tmp):
    (tmp / "f").write_text("1:0.5 3:1\n# comment\n2:1\n1:1 2:1 3:1\n")
    (tmp / "l").write_text("1\n-1\n0\n")
    d = read_dataset(str(tmp / "f"), labels=str(tmp / "l"))
    assert d.y.tolist() == [1, -1, 0]
    assert d.X.toarray().tolist() == [[0.5, 0, 1], [0, 1, 0], [1, 1, 1]]
    chunks = list(iter_chunks(str(tmp / "f"), labels=str(tmp / "l"), chunk_bytes=8))
    assert [c.y.tolist() for c in chunks] == [[1], [-1], [0]]


def test_svmlin_example_layout_equals_combined_file(tmp):
    """SVMlin's own example, split into features and labels, reads as the combined file."""
    src = shared("bench", "pcmac-svmlin", "train.svm").read_text().splitlines()
    (tmp / "ex").write_text("\n".join(ln.split(" ", 1)[1] for ln in src) + "\n")
    (tmp / "lab").write_text("\n".join(ln.split(" ", 1)[0] for ln in src) + "\n")
    a = read_dataset(str(tmp / "ex"), labels=str(tmp / "lab"))
    b = read_dataset(str(shared("bench", "pcmac-svmlin", "train.svm")))
    same_csr(a.X, b.X)
    assert np.array_equal(a.y, b.y)


rows = st.lists(
    st.tuples(
        st.sampled_from([-1, 1, 0, 3]),
        st.dictionaries(st.integers(0, 40), st.floats(-VALUE_MAX, VALUE_MAX,
                                                      width=64).filter(lambda v: v != 0),
                        max_size=8)),
    min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(rows)
def test_writer_reader_round_trip(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp("rt")
    n = len(data)
    X = sp.lil_matrix((n, 41))
    y = np.array([r[0] for r in data], dtype=float)
    for i, (_, feats) in enumerate(data):
        for j, v in feats.items():
            X[i, j] = v
    X = sp.csr_matrix(X)
    for name in ("r.svm", "r.svm.gz"):
        write_dataset(str(tmp / name), X, y)
        d = read_dataset(str(tmp / name), n_features=41)
        same_csr(d.X, X)
        assert np.array_equal(d.y, y)


def test_empty_file_is_an_error(tmp):
    (tmp / "e").write_text("# nothing\n\n")
    with pytest.raises(DataError, match="no data rows"):
        read_dataset(str(tmp / "e"))
