"""The contract of every command, class by class (issue 19), through the installed programs:
outputs never destroy anything, numbers are never garbage, options are bounded, messages are
one safe line. The seeded fuzzer over the same promises is tests/test_fuzz.py."""

from __future__ import annotations

import gzip
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import BIN, SAMPLES, SHARED, run

from ssl_svm.cli import outputs, process
from ssl_svm.formats.model_file import read_model
from ssl_svm.formats.textparse import LABEL_MAX, VALUE_MAX

DATA = "+1 1:1 2:0.5\n-1 1:-1 2:0.3\n+1 1:0.8 2:0.1\n-1 1:-0.9 2:0.2\n0 1:0.1 2:0.1\n"


def one_error(r, status: int, start: str | None = None) -> str:
    """The run failed with ``status``, its last stderr line is the error, no traceback; for
    status 1 that line is all of stderr."""
    assert r.returncode == status, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "Warning" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    if status in (1, 2):  # a usage error is one line too, not click's three
        assert len(lines) == 1, r.stderr
    if start is not None:
        assert lines[-1].startswith(start), lines[-1]
    return lines[-1]


def no_temp_files(folder: Path) -> None:
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".tmp-")]


@pytest.fixture
def d(tmp):
    f = tmp / "d.svm"
    f.write_text(DATA)
    return f


@pytest.fixture
def model(tmp, d):
    m = tmp / "m.model"
    run("ssl-train", "-q", d, m, check=0)
    return m


# --------------------------------------------------------------------------- 1. outputs

def test_same_file_in_and_out_is_a_usage_error(tmp, d, model):
    before = d.read_bytes(), model.read_bytes()
    alias = tmp / "alias.svm"
    alias.symlink_to(d)
    for prog, args in (("ssl-train", [d, d]), ("ssl-train", [d, alias]),
                       ("ssl-train", ["-l", d, d, tmp / "x.model"]),
                       ("ssl-train", ["-l", tmp / "p", d, tmp / "p"]),
                       ("ssl-predict", [d, model, model]), ("ssl-predict", [d, model, alias]),
                       ("ssl-tune", ["-G", "lambda=1", "-v", "2", "--out", d, d]),
                       ("ssl-tune", ["-G", "lambda=1", "-v", "2", "--resume", d, d])):
        (tmp / "p").write_text("keep")
        r = run(prog, "-q", *args)
        last = one_error(r, 2)
        assert "same file" in last, last
    assert (d.read_bytes(), model.read_bytes()) == before
    no_temp_files(tmp)


def test_output_to_stdout_file_that_is_the_input(tmp, d, model):
    """``>> TEST`` would read and append to the same file for ever."""
    with open(d, "ab") as out:
        r = subprocess.run([BIN / "ssl-predict", "-q", d, model], stdout=out,
                           stderr=subprocess.PIPE, text=True)
    assert r.returncode == 2 and "same file" in r.stderr
    assert d.read_text() == DATA


def test_symlinked_model_is_written_at_its_target(tmp, d, model):
    link = tmp / "link.model"
    link.symlink_to(model.name)
    old = model.read_text()
    run("ssl-train", "-q", "-W", "0.5", d, link, check=0)
    assert link.is_symlink() and os.readlink(link) == model.name
    assert model.read_text() != old and "param lambda 0.5" in model.read_text()
    no_temp_files(tmp)


def test_devices_are_written_in_place(tmp, d, model):
    for path in ("/dev/null", "/dev/stdout"):
        r = run("ssl-predict", "-q", d, model, path)
        assert r.returncode == 0, r.stderr
        r = run("ssl-train", "-q", d, path)
        assert r.returncode == 0, r.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    r = run("ssl-train", "-q", d, "/dev/stdout")
    assert r.stdout.startswith("ssl-model 1\n") and r.stdout.endswith("end\n")


def test_full_device_is_a_write_error(tmp, d, model):
    for prog, args in (("ssl-train", [d, "/dev/full"]), ("ssl-predict", [d, model, "/dev/full"]),
                       ("ssl-train", ["-l", "/dev/full", d, model])):
        before = model.read_bytes()
        r = run(prog, "-q", *args)
        one_error(r, 1, f"{prog}: error: /dev/full: cannot write")
        assert "No space left" in r.stderr
        assert model.read_bytes() == before  # -l failed: the model is not replaced either
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    no_temp_files(tmp)


def test_stdout_full_or_closed(tmp, d, model):
    for prog, args in (("ssl-predict", [d, model]), ("ssl-predict", [d, model, "-"]),
                       ("ssl-train", [d, "-"]), ("ssl-train", ["-v", "2", d]),
                       ("ssl-tune", ["-G", "lambda=1", "-v", "2", d])):
        cmd = [str(BIN / prog), "-q", *map(str, args)]
        with open("/dev/full", "wb") as full:
            r = subprocess.run(cmd, stdout=full, stderr=subprocess.PIPE, text=True)
        one_error(r, 1, f"{prog}: error: -: cannot write")
        r = subprocess.run(" ".join(f"'{c}'" for c in cmd) + " >&-", shell=True,
                           stderr=subprocess.PIPE, text=True)
        one_error(r, 1, f"{prog}: error: -: cannot write")
        assert "standard output is closed" in r.stderr
    no_temp_files(tmp)


def test_closed_and_compressed_stdin(tmp, d, model):
    r = subprocess.run(f"'{BIN / 'ssl-predict'}' - '{model}' <&-", shell=True,
                       capture_output=True, text=True)
    one_error(r, 1, "ssl-predict: error: -: cannot read: standard input is closed")
    plain = run("ssl-predict", "-q", d, model, check=0).stdout
    for packed in (gzip.compress(DATA.encode()), __import__("bz2").compress(DATA.encode())):
        r = subprocess.run([BIN / "ssl-predict", "-q", "-", model], input=packed,
                           capture_output=True)
        assert r.returncode == 0, r.stderr
        assert r.stdout.decode() == plain
    r = subprocess.run([BIN / "ssl-train", "-q", "-", tmp / "s.model"],
                       input=gzip.compress(DATA.encode()), capture_output=True)
    assert r.returncode == 0 and (tmp / "s.model").read_text().startswith("ssl-model 1")


def test_fifo_output_is_streamed(tmp, d, model):
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    run("ssl-predict", "-q", d, model, fifo, check=0)
    reader.join(10)
    assert got == [run("ssl-predict", "-q", d, model, check=0).stdout]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_outputs_are_checked_before_any_work(tmp, d, model):
    big = SHARED / "bench" / "usps49-10" / "train.svm"
    t0 = time.perf_counter()
    r = run("ssl-tune", "-q", "-G", "lambda=1e-4:1:x10", "--out", tmp / "missing" / "x", big)
    one_error(r, 1, f"ssl-tune: error: {tmp / 'missing' / 'x'}: cannot write --out model: "
                    "folder")
    assert r.stdout == ""  # no grid point ran
    assert time.perf_counter() - t0 < 5
    before = model.read_bytes()
    r = run("ssl-train", "-q", "-l", tmp / "missing" / "p", d, model)
    one_error(r, 1)
    assert model.read_bytes() == before
    r = run("ssl-predict", "-q", d, model, tmp)  # a folder
    one_error(r, 1, f"ssl-predict: error: {tmp}: cannot write predictions: it is a folder")
    no_temp_files(tmp)


def test_resume_never_overwrites_a_foreign_file(tmp, d):
    for content in (b"precious", b"precious\nlines\n", b"\x00\xff\x01binary"):
        f = tmp / "keep.txt"
        f.write_bytes(content)
        r = run("ssl-tune", "-q", "-G", "lambda=1", "-v", "2", "--resume", f, d)
        one_error(r, 1, f"ssl-tune: error: {f}:1: not an ssl-tune resume file")
        assert f.read_bytes() == content
    r = run("ssl-tune", "-q", "-G", "lambda=1", "-v", "2", "--resume", "/dev/null", d)
    one_error(r, 1, "ssl-tune: error: /dev/null: --resume needs a regular file")


@pytest.mark.parametrize("mask,existing,expected", [(0o022, None, 0o644), (0o077, None, 0o600),
                                                    (0o022, 0o640, 0o640)])
def test_files_get_the_umask_or_keep_their_mode(tmp, d, mask, existing, expected):
    m = tmp / "u.model"
    p = tmp / "u.pred"
    if existing is not None:
        for f in (m, p):
            f.write_text("old")
            f.chmod(existing)
    old = os.umask(mask)
    try:
        run("ssl-train", "-q", "-a", "tsvm", "-l", p, d, m, check=0)
        run("ssl-predict", "-q", d, m, tmp / "v.pred", check=0)
    finally:
        os.umask(old)
    assert stat.S_IMODE(m.stat().st_mode) == expected
    assert stat.S_IMODE(p.stat().st_mode) == expected
    if existing is None:
        assert stat.S_IMODE((tmp / "v.pred").stat().st_mode) == expected


def _wait_until(pid: int, ready, timeout: float = 30.0) -> bool:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        try:
            if ready(pid):
                return True
        except OSError:
            return False
        time.sleep(0.002)
    return False


def _command_started(pid: int) -> bool:
    """The command's own code runs: its SIGTERM handler is installed (SigCgt bit 15)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


def _foreground():
    """A child's SIGINT as in a shell's foreground job (pytest itself may run with it ignored:
    a background job of a script, ``nohup``, whose children would inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _ignoring():
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _importing(pid: int) -> bool:
    """The program is importing its packages: solvers.host.pools has loaded libtbb."""
    return "libtbb" in Path(f"/proc/{pid}/maps").read_text()


@pytest.mark.parametrize("sig,status,word", [(signal.SIGINT, 130, "interrupted"),
                                             (signal.SIGTERM, 143, "terminated")])
def test_interrupt_keeps_the_old_model(tmp, sig, status, word):
    train = SHARED / "bench" / "usps49-10" / "train.svm"
    m = tmp / "m.model"
    for delay in (0.0, 0.2, 0.5):
        m.write_text("old\n")
        p = subprocess.Popen([BIN / "ssl-train", "-q", "-a", "lapsvm", train, m],
                             stderr=subprocess.PIPE, text=True, preexec_fn=_foreground)
        assert _wait_until(p.pid, _command_started)
        time.sleep(delay)
        p.send_signal(sig)
        err = p.communicate()[1]
        if p.returncode == 0:  # finished first: the model is complete
            assert m.read_text().endswith("end\n")
            continue
        assert (p.returncode, err) == (status, f"ssl-train: {word}\n"), delay
        assert m.read_text() == "old\n"
        no_temp_files(tmp)


def test_interrupt_while_importing(tmp):
    """Ctrl-C while numpy, scipy and numba load: one line, 130, not a traceback. (A training
    file of some size: on a tiny one the whole run could end between the poll that sees the
    libraries loading and the signal, and a finished run ignores SIGINT by design.)"""
    train = SHARED / "bench" / "usps49-10" / "train.svm"
    for _ in range(3):
        p = subprocess.Popen([BIN / "ssl-train", "-q", "-a", "lapsvm", train, tmp / "m"],
                             stderr=subprocess.PIPE, text=True, preexec_fn=_foreground)
        assert _wait_until(p.pid, _importing, 10)
        p.send_signal(signal.SIGINT)
        err = p.communicate()[1]
        assert (p.returncode, err) == (130, "ssl-train: interrupted\n")
        assert not (tmp / "m").exists()


def test_an_interrupt_the_parent_ignored_stays_ignored(tmp):
    """Started with SIGINT ignored (``nohup``, a background job of a script), a run ignores
    it, as the shell meant: it trains to the end and writes its model."""
    train = SHARED / "bench" / "usps49-10" / "train.svm"
    # --check none: nothing on stderr but what an interrupt would say (the check may warn)
    p = subprocess.Popen([BIN / "ssl-train", "-q", "-a", "lapsvm", "--check", "none", train,
                          tmp / "m"], stderr=subprocess.PIPE, text=True, preexec_fn=_ignoring)
    assert _wait_until(p.pid, _importing, 10)
    for _ in range(3):
        p.send_signal(signal.SIGINT)
        time.sleep(0.1)
    err = p.communicate()[1]
    assert (p.returncode, err) == (0, "")
    assert (tmp / "m").read_text().endswith("end\n")


def test_interrupting_parallel_workers_gives_one_line(tmp):
    """Ctrl-C reaches the whole process group: workers starting up must not print."""
    test = SHARED / "bench" / "usps49-10" / "test.svm"
    m = tmp / "m.model"
    run("ssl-train", "-q", SHARED / "bench" / "usps49-10" / "train.svm", m, check=0)
    for delay in (0.3, 0.5, 0.8):
        out = tmp / "p"
        out.write_text("old\n")
        p = subprocess.Popen([BIN / "ssl-predict", "-q", "-j", "2", "--chunk-mb", "1", test, m,
                              out], stderr=subprocess.PIPE, text=True, start_new_session=True,
                             env={**os.environ, "SSL_SVM_SERIAL_SECONDS": "0"},  # workers now
                             preexec_fn=_foreground)
        time.sleep(delay)
        os.killpg(p.pid, signal.SIGINT)
        err = p.communicate()[1]
        if p.returncode == 0:
            continue
        assert (p.returncode, err) == (130, "ssl-predict: interrupted\n")
        assert out.read_text() == "old\n"
        no_temp_files(tmp)


# --------------------------------------------------------------------------- 2. numbers

@pytest.mark.parametrize("content,line,text", [
    ("+1 1:1e300 2:1\n-1 1:1\n", 1, "value of feature 1 is too large ('1:1e300'"),
    ("+1 1:1\n-1 1:1 2:-1e51\n", 2, "value of feature 2 is too large"),
    ("+1 1:1 cost:1e300\n-1 1:1\n", 1, "malformed cost 'cost:1e300'"),
    ("1e19 1:1\n-1 1:1\n", 1, f"label '1e19' is out of range (class labels are integers from "
                              f"-{LABEL_MAX} to {LABEL_MAX})"),
    ("-1 1:1\n9223372036854775808 1:1\n", 2, "label '9223372036854775808' is out of range"),
    ("1.5 1:1\n-1 1:1\n\n\n\n-1 x\n", 1, "label '1.5' is not an integer class label"),
])
def test_numbers_out_of_range_are_line_numbered_errors(tmp, content, line, text):
    f = tmp / "bad.svm"
    f.write_text(content)
    for prog, args in (("ssl-train", [f, tmp / "m"]), ("ssl-tune", ["-G", "lambda=1", f])):
        r = run(prog, "-q", *args)
        assert one_error(r, 1).startswith(f"{prog}: error: {f}:{line}: {text}")
    assert not (tmp / "m").exists()


@pytest.mark.parametrize("algorithm", ["svm", "rls", "tsvm", "da"])
@pytest.mark.parametrize("scale", [1e-30, 1e10, 1e30, VALUE_MAX / 10])
def test_badly_scaled_data_gives_a_finite_model(tmp, algorithm, scale):
    """Values anywhere in the accepted range train a finite model (they gave NaN models with
    exit 0 from 1e10 on: CG stalled at its rounding floor and broke down)."""
    rng = np.random.default_rng(3)
    y = np.where(np.arange(120) % 2 == 0, 1, -1)
    X = (rng.normal(size=(120, 5)) + 0.7 * y[:, None]) * scale
    lab = np.where(np.arange(120) < 30, y, 0)
    f = tmp / "s.svm"
    f.write_text("".join(f"{lab[i]} " + " ".join(f"{j + 1}:{float(v)!r}" for j, v in
                                                 enumerate(X[i])) + "\n" for i in range(120)))
    m = tmp / "m.model"
    r = run("ssl-train", "-q", "-a", algorithm, f, m)
    assert r.returncode == 0, r.stderr
    text = m.read_text()
    assert "nan" not in text and "inf" not in text
    p = run("ssl-predict", "--values", f, m, check=0)
    values = np.array([float(line.split()[1]) for line in p.stdout.splitlines()])
    assert np.isfinite(values).all()
    if scale >= 1:  # it learned, too (tiny features under λ = 1 rightly give w ≈ 0)
        assert float(p.stderr.split("=")[1].split("%")[0]) > 70


def test_a_fit_that_overflows_is_an_error_not_a_model(tmp):
    f = tmp / "d.svm"
    f.write_text("+1 1:1e40 2:1\n-1 1:-1e40 2:0.3\n+1 1:0.8e40\n-1 1:-0.9e40 2:0.2\n0 1:1\n")
    r = run("ssl-train", "-q", "-a", "lapsvm", "-k", "2", "-t", "poly", "-d", "50", "-g", "1e15",
            f, tmp / "m")
    one_error(r, 1, f"ssl-train: error: {f}: lapsvm did not converge to finite numbers")
    assert not (tmp / "m").exists()


def test_a_feature_index_too_large_for_the_weights(tmp):
    f = tmp / "wide.svm"
    f.write_text("+1 1:1\n-1 2147483647:1\n+1 3:1\n")
    r = run("ssl-train", "-q", f, tmp / "m")
    last = one_error(r, 1, f"ssl-train: error: {f}:2: feature index 2147483647 makes the weight "
                           "vectors need ")
    assert "GiB" in last and "renumber the features" in last


def _edit(model: Path, old: str, new: str, out: Path) -> Path:
    text = model.read_text()
    assert old in text
    out.write_text(text.replace(old, new, 1))
    return out


@pytest.mark.parametrize("old,new,message", [
    ("n_features 2\n", "n_features 2147483647\n", "n_features 2147483647 needs a weight matrix"),
    ("n_features 2\n", "n_features 99999999999999\n", "n_features must be at most"),
    ("algorithm svm\n", "algorithm nosuch\n", "unknown algorithm 'nosuch'"),
    ("param lambda auto\n", "param lambda -3\n", "parameter lambda: -W/--lambda must be in"),
    ("param max_iter 1000\n", "param max_iter 1e308\n", "parameter max_iter: --max-iter must be"),
    ("labels 1 -1\n", "labels 1 9223372036854775807\n", "label must be at most 2147483647"),
    ("weights 2\n", "weights 200000000000\n", "truncated model file (ends before the "
                                              "200000000000 weight lines)"),
    ("\nintercept ", "\nintercept 1e301\nx ", "intercept 1e301 is out of range"),
])
def test_the_model_loader_refuses_what_training_would(tmp, d, model, old, new, message):
    bad = _edit(model, old, new, tmp / "bad.model")
    r = run("ssl-predict", "-q", d, bad)
    last = one_error(r, 1, f"ssl-predict: error: {bad}:")
    assert message in last, last


@pytest.mark.parametrize("key,value,message", [
    ("kernel_gamma", "-5", "kernel_gamma -5 is out of range"),
    ("kernel_gamma", "1e200", "kernel_gamma 1e200 is out of range"),
    ("kernel_degree", "100000000", "kernel_degree must be at most 50"),
    ("expansion", "99999999999", "truncated model file (ends before the 99999999999 "
                                 "expansion rows)"),
])
def test_kernel_model_loader_limits(tmp, d, key, value, message):
    m = tmp / "k.model"
    run("ssl-train", "-q", "-a", "lapsvm", "-k", "2", d, m, check=0)
    line = next(x for x in m.read_text().splitlines() if x.startswith(key + " "))
    bad = _edit(m, f"\n{line}\n", f"\n{key} {value}\n", tmp / "bad.model")
    r = run("ssl-predict", "-q", d, bad)
    assert message in one_error(r, 1)


def test_prediction_overflow_names_the_row(tmp, model):
    f = tmp / "t.svm"
    f.write_text("1 1:1\n-1 1:1e50 2:1e50\n")
    lines = model.read_text().splitlines()
    at = lines.index(next(x for x in lines if x.startswith("weights ")))
    lines[at + 1] = lines[at + 1].split()[0] + " 1e299"
    big = tmp / "big.model"
    big.write_text("\n".join(lines) + "\n")
    r = run("ssl-predict", "-q", f, big)
    one_error(r, 1, f"ssl-predict: error: {f}:2: the decision value is not a finite number")


# --------------------------------------------------------------------------- 3. options

BOUNDED = [
    (["--max-iter", "1e308"], "--max-iter must be in [1, 1000000] (got 1e+308)"),
    (["-a", "tsvm", "-S", "1e20"], "-S/--max-switch must be in [1, 2147483647]"),
    (["-a", "tsvm", "-U", "1e308"], "-U/--lambda-u must be in [0, 1e+06] (got 1e+308)"),
    (["-a", "da", "-e", "1e-320"], "-e/--epsilon must be in [1e-12, 1)"),
    (["-a", "usmo", "-m", "1e308"], "-m/--cache-mb must be in [1, 1e+07] (got 1e+308)"),
    (["-a", "tvrls", "--r2", "1e308"], "--r2 must be in (0, 1e+15] (got 1e+308)"),
    (["-a", "tvrls", "--max-iter", "2147483648"], "--max-iter must be in [1, 100000]"),
    (["--seed", "-5", "-v", "2"], "Invalid value for '--seed': -5 is not in the range"),
    # was an OverflowError's traceback (1e308 MiB in bytes is inf)
    (["-a", "lapsvm", "--max-memory", "1e308"], "Invalid value for '--max-memory': memory "
                                                "size '1e308' is larger than any machine's"),
]


@pytest.mark.parametrize("args,message", BOUNDED, ids=[" ".join(a) for a, _ in BOUNDED])
def test_options_are_bounded(d, args, message):
    r = run("ssl-train", *args, d)
    assert one_error(r, 2).startswith(f"ssl-train: error: {message}")


GRIDS = [
    ("lambda=1:inf:x10", "'inf' is not a finite number"),
    ("lambda=nan:1:x2", "'nan' is not a finite number"),
    ("lambda=1:1e400:x10", "'1e400' is not a finite number"),
    ("lambda=1e-300:1e300:x1e200", "-W/--lambda must be in (0, 1e+15] (got 1e+100)"),
    ("lambda=1:2:+1e-20", "is too small to change the value"),
    ("lambda=1e-9:1e9:x1.0000001", "has more than 10000 values"),
]


@pytest.mark.parametrize("spec,message", GRIDS, ids=[g for g, _ in GRIDS])
def test_grid_ranges_are_checked(d, spec, message):
    r = run("ssl-tune", "-G", spec, d)
    assert message in one_error(r, 2)


def test_grid_size_is_bounded(d):
    r = run("ssl-tune", "-G", "lambda=1:1000:+1", "-G", "epsilon=0.001:0.999:+0.001", d)
    assert "more than 100,000" in one_error(r, 2)


def test_cluster_address_and_jobs(tmp, d):
    r = run("ssl-tune", "-q", "-G", "lambda=1", "-v", "2", "--cluster", "nonsense", d)
    one_error(r, 1, "ssl-tune: error: nonsense: cannot connect to the Dask scheduler")
    r = run("ssl-tune", "--verbose", "-G", "lambda=1", "-v", "2", "-j", "40", d)
    assert r.returncode == 0, r.stderr
    assert "running 1 worker" in r.stderr or "running 2 workers" in r.stderr


# --------------------------------------------------------------------------- 4. messages

def test_control_bytes_are_escaped_and_long_tokens_cut(tmp):
    f = tmp / "esc.svm"
    f.write_bytes(b"+1 1:1\n-1 \x1b[2J:1\n")
    r = run("ssl-train", "-q", f, tmp / "m")
    last = one_error(r, 1)
    assert "\x1b" not in r.stderr and "\\x1b[2J" in last
    f.write_bytes(b"+1 1:1\n-1 " + b"A" * 5_000_000 + b"\n")
    r = run("ssl-train", "-q", f, tmp / "m")
    assert len(one_error(r, 1)) <= 400
    r = run("ssl-train", "-a", "\x1b[2J", f)
    assert "\x1b" not in r.stderr and "\\x1b[2J" in one_error(r, 2)


def test_the_first_bad_line_is_reported(tmp):
    f = tmp / "two.svm"
    f.write_text("2.5 1:1\n-1 1:1\n+1 1:1\n-1 1:1\n+1 1:1\n-1 oops\n")
    r = run("ssl-train", "-q", f, tmp / "m")
    one_error(r, 1, f"ssl-train: error: {f}:1: label '2.5' is not an integer class label")


def test_reading_does_not_depend_on_the_locale(tmp):
    """A process with a comma-decimal LC_NUMERIC (a notebook, a Dask worker) reads 1:0.5."""
    loc = tmp / "locales"
    loc.mkdir()
    subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", loc / "de_DE.UTF-8"], check=True,
                   capture_output=True)
    code = (
        "import locale, numpy as np\n"
        "locale.setlocale(locale.LC_NUMERIC, 'de_DE.UTF-8')\n"
        "assert locale.localeconv()['decimal_point'] == ','\n"
        "from ssl_svm.formats.svmlight import read_dataset\n"
        f"big = {str(tmp / 'big.svm')!r}\n"
        "open(big, 'w').write('+1 1:0.5 2:1e3\\n-1 1:-0.25\\n' * 20000)\n"
        "d = read_dataset(big)\n"  # > 128 KiB: the compiled parser
        "assert d.X[0].toarray().tolist() == [[0.5, 1000.0]], d.X[0]\n"
        "open(big, 'w').write('+1 1:0,5\\n' * 20000)\n"
        "try:\n    read_dataset(big)\nexcept Exception as e:\n    print('refused', e)\n")
    r = subprocess.run([BIN / "python", "-c", code], capture_output=True, text=True,
                       env={**os.environ, "LOCPATH": str(loc)})
    assert r.returncode == 0, r.stderr
    assert "refused" in r.stdout and "malformed token '1:0,5'" in r.stdout


@pytest.mark.parametrize("algorithm", ["svm", "tsvm", "lapsvm", "usmo", "tvrls"])
def test_equal_runs_write_equal_bytes(tmp, algorithm):
    train = SAMPLES / "pcmac.train"
    if algorithm == "usmo":
        train = tmp / "pu.svm"
        train.write_text((SAMPLES / "pcmac.train").read_text().replace("\n-1 ", "\n0 "))
    a, b = tmp / "a.model", tmp / "b.model"
    for m in (a, b):
        run("ssl-train", "-q", "-a", algorithm, train, m, check=0)
    assert a.read_bytes() == b.read_bytes()
    assert "_time " not in a.read_text()


def test_no_numpy_warning_reaches_stderr(tmp, d):
    r = run("ssl-train", "-a", "lapsvm", "-t", "poly", "-d", "50", "-g", "1e15", "-k", "2",
            d, tmp / "m")
    assert "RuntimeWarning" not in r.stderr and "warnings.warn" not in r.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


@pytest.mark.parametrize("args,held", [
    (["-a", "lapsvm", "--solver", "newton", "--laplacian-degree", "1", "--max-memory", "20M"],
     "kernel matrix 1296×1296 12.81 MiB + Newton system 1296×1296 12.81 MiB"),
    # the auto degree on digits is 2: L^{p-1}K's two intermediates join the system
    (["-a", "lapsvm", "--solver", "newton", "--max-memory", "20M"],
     "kernel matrix 1296×1296 12.81 MiB + Newton system 1296×1296 38.44 MiB"),
    (["-a", "tvrls", "--landmarks", "0", "--max-memory", "20M"],
     "kernel matrix 1296×1296 12.81 MiB + factor 1296×1296 12.81 MiB"),
    (["-a", "cheeger-svm", "--nystrom", "100", "--max-memory", "1M"],
     "Nyström factor 1296×100 2.21 MiB"),
])
def test_memory_limit_counts_what_is_held_at_once(tmp, args, held):
    """Each matrix fits under 20M alone, the two together do not; refused before the graph."""
    train = SHARED / "bench" / "usps49-10" / "train.svm"
    r = run("ssl-train", "-q", *args, train, tmp / "m")
    last = one_error(r, 1, f"ssl-train: error: {train}: 1296 rows: ")
    assert f"at once ({held}), above the memory limit" in last, last
    assert not (tmp / "m").exists()
    # no graph was built (its line names its edges), no kernel computed: the refusal is what
    # --verbose says right after the graph's sizes (a wall-clock bound here failed under load)
    r = run("ssl-train", "--verbose", *args, train, tmp / "m")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and lines[-1] == last, r.stderr
    assert not [x for x in lines if "edges" in x or "kernel γ" in x or "MiB (memory" in x], \
        r.stderr


def test_tune_stops_at_the_memory_limit_without_running_the_grid(tmp):
    """Neither the exact form nor 100 landmarks fit in 300 KiB (the projected landmark form
    keeps 24·m² bytes within half the limit: 100 landmarks need 240 KB): the first fold says
    so; the restricted form (8·n·m bytes) already fails at 1 MiB."""
    train = SHARED / "bench" / "usps49-10" / "train.svm"
    for limit, shown, extra in (("300K", "300.00 KiB", ()),
                                ("1M", "1.00 MiB", ("--landmark-fit", "restrict"))):
        r = run("ssl-tune", "-q", "-a", "lapsvm", "-G", "gamma_a=1e-6,1e-4", "--max-memory",
                limit, *extra, train)
        last = one_error(r, 1, f"ssl-tune: error: {train}: lapsvm (a fold) needs ")
        assert f"above the memory limit of {shown}" in last
        assert r.stdout == ""


def test_tune_takes_landmarks_where_the_exact_kernel_does_not_fit(tmp):
    """At 5 MiB the folds' n×n kernels do not fit: each fit takes the landmark rows that do
    (landmarks auto), and the grid runs."""
    train = SHARED / "bench" / "usps49-10" / "train.svm"
    r = run("ssl-tune", "-a", "lapsvm", "-G", "gamma_a=1e-6,1e-4", "--max-memory", "5M",
            train)
    assert r.returncode == 0, r.stderr
    assert "best gamma_a=" in r.stdout
    r = run("ssl-train", "-a", "lapsvm", "--check", "none", "--max-memory", "5M", train,
            tmp / "m")
    assert r.returncode == 0, r.stderr
    m = re.search(r"lapsvm: (\d+) landmark rows \(auto: the exact n×n kernel exceeds the "
                  r"memory limit of 5.00 MiB", r.stderr)
    assert m, r.stderr
    model = read_model(str(tmp / "m"))
    assert model.function.rows.shape[0] == int(m.group(1)) < 1296
    assert model.stats["landmarks"] == [int(m.group(1))]


def test_a_signal_inside_numbas_python_code_is_sent_again_later(monkeypatch):
    """SIGTERM / SIGINT raise only outside numba's own Python code (an exception raised while
    numba boxes a tuple of arrays made ssl-train crash with SIGSEGV, 1 run in 40 killed while
    reading); inside it the signal is sent again 20 ms later."""
    import sys as _sys
    import threading

    from ssl_svm.cli import process

    sent = []
    done = threading.Event()

    def fake_kill(tid, signum):
        sent.append((tid, signum))
        done.set()

    monkeypatch.setattr(process.signal, "pthread_kill", fake_kill)
    inside = {"__name__": "numba.core.serialize", "sys": _sys}
    exec("def here():\n    return sys._getframe()", inside)
    frame = inside["here"]()
    process._terminate(signal.SIGTERM, frame)  # no exception
    process._interrupt(signal.SIGINT, frame)
    assert done.wait(2)
    time.sleep(0.1)
    assert sorted(s for _, s in sent) == sorted([signal.SIGTERM, signal.SIGINT])
    assert {t for t, _ in sent} == {threading.main_thread().ident}
    with pytest.raises(process.Terminated):
        process._terminate(signal.SIGTERM, _sys._getframe())
    with pytest.raises(KeyboardInterrupt):
        process._interrupt(signal.SIGINT, _sys._getframe())


def test_writes_go_on_until_every_byte_is_written():
    """A raw file (a pipe, a device, written unbuffered) may take fewer bytes than given, and a
    descriptor left non-blocking none at all for a moment: write_all goes on until all is
    written (a short write was seen under strace)."""
    from ssl_svm.cli.outputs import write_all

    class Stingy:
        def __init__(self):
            self.got = bytearray()
            self.calls = 0

        def write(self, b):
            self.calls += 1
            if self.calls % 3 == 0:
                return None  # non-blocking and full (raw)
            if self.calls % 5 == 0:
                e = BlockingIOError(11, "full")
                e.characters_written = 1
                self.got += bytes(b[:1])
                raise e
            self.got += bytes(b[:3])
            return min(3, len(b))

        def fileno(self):
            return 1  # select() on stdout: writable at once in the test

    f = Stingy()
    data = bytes(range(256)) * 4
    write_all(f, data)
    assert bytes(f.got) == data and f.calls > 300


@pytest.mark.parametrize("sig,error", [(signal.SIGINT, KeyboardInterrupt),
                                       (signal.SIGTERM, process.Terminated)])
def test_a_signal_put_off_in_numba_code_is_acted_on_before_the_commit(tmp, monkeypatch, sig,
                                                                      error):
    """A signal whose handler found numba's code running is sent again 20 ms later; if the
    run reaches its commit before a redelivery lands outside numba (the last numba call ends
    less than 20 ms before it), the commit acts on it: the old file stays, the temporary one
    goes."""
    target = tmp / "m"
    target.write_text("old\n")
    monkeypatch.setattr(process, "pending", sig)
    with pytest.raises(error):
        with outputs.Outputs({}) as outs:
            outs.add(str(target), "model").write("new\n")
            outs.commit()
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp.iterdir()) == ["m"]
    monkeypatch.setattr(process, "pending", None)
    with outputs.Outputs({}) as outs:
        outs.add(str(target), "model").write("new\n")
        outs.commit()
    assert target.read_text() == "new\n"
