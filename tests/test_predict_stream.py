"""ssl-predict streams: a multi-GB input is predicted with the same flat peak memory as a small
one, and chunking never changes the output."""

import pytest
from conftest import BIN, SAMPLES, run, ssl_train
from tools import peak_rss, svmlight_block


@pytest.mark.slow
def test_multi_gb_input_has_flat_memory(tmp):
    block = svmlight_block(20000, 5000, 50, 0)
    small = tmp / "small.svm"
    small.write_bytes(block)
    ssl_train("-q", "-W", "1", small, tmp / "m", check=0)
    big = tmp / "big.svm"
    reps = (2 << 30) // len(block) + 1  # > 2 GiB
    with open(big, "wb") as f:
        for _ in range(reps):
            f.write(block)
    size_gb = big.stat().st_size / 2**30
    assert size_gb > 2.0
    code_s, rss_small, _, _ = peak_rss([BIN / "ssl-predict", small, tmp / "m", tmp / "p1"])
    code_b, rss_big, secs, err = peak_rss([BIN / "ssl-predict", big, tmp / "m", tmp / "p2"])
    assert code_s == 0 and code_b == 0, err
    rows = 20000 * reps
    assert f"/{rows})" in err  # every row was predicted and scored
    print(f"\n{size_gb:.2f} GiB, {rows} rows: peak RSS {rss_big:.0f} MB (small input: "
          f"{rss_small:.0f} MB), {secs:.1f} s = {rows / secs * 60 / 1e6:.2f} M rows/min")
    assert rss_big < rss_small + 64  # flat: independent of the input size
    assert rss_big < 512
    # the output is the small file's, repeated
    p1 = (tmp / "p1").read_bytes()
    with open(tmp / "p2", "rb") as f:
        for _ in range(reps):
            assert f.read(len(p1)) == p1
        assert f.read() == b""
    big.unlink()


def test_chunk_size_does_not_change_the_output(tmp):
    ssl_train("-q", "-W", "0.01", SAMPLES / "shuttle.train", tmp / "m", check=0)
    a = run("ssl-predict", "--values", SAMPLES / "shuttle.test", tmp / "m", check=0)
    big = (SAMPLES / "shuttle.test").read_bytes() * 40  # ~1.5 MB: several 1 MB chunks
    (tmp / "t").write_bytes(big)
    b = run("ssl-predict", "--values", "--chunk-mb", "1", tmp / "t", tmp / "m", check=0)
    assert b.stdout == a.stdout * 40
