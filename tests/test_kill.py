"""A batch system's SIGKILL: a killed ``-j`` command leaves no worker process running, and the
next run on the same output removes the temporary file the killed run left (only a dead
process's, on this host)."""

import os
import signal
import subprocess
import time

import pytest
from conftest import BIN, SAMPLES, run

from ssl_svm.cli import outputs


def _children(pid):
    """The pids whose parent is ``pid``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(entry))
    return out


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _kill_when_busy(cmd, cwd, workers=2, timeout=60, settle=0.5):
    """Start ``cmd``, wait until it runs ``workers`` loky workers and ``settle`` seconds more,
    SIGKILL it; returns the pids of its children at that moment."""
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env={**os.environ, "SSL_SVM_SERIAL_SECONDS": "0"})  # workers at once
    t0 = time.time()
    kids = []
    while time.time() - t0 < timeout and p.poll() is None:
        kids = _children(p.pid)
        busy = [k for k in kids if "popen_loky_posix" in _cmdline(k)]
        if len(busy) >= workers:
            time.sleep(settle)  # into their tasks
            kids = _children(p.pid)
            break
        time.sleep(0.05)
    assert p.poll() is None, "the command ended before it could be killed: give it more work"
    assert len([k for k in kids if "popen_loky_posix" in _cmdline(k)]) >= workers
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    return kids


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _gone_within(pids, seconds):
    t0 = time.time()
    while time.time() - t0 < seconds:
        left = [k for k in pids if _alive(k)]
        if not left:
            return []
        time.sleep(0.1)
    return [(k, _cmdline(k)) for k in pids if _alive(k)]


@pytest.fixture(scope="module")
def busy(tmp_path_factory):
    """A 26 MB test file and a kernel model: seconds of prediction on two workers."""
    folder = tmp_path_factory.mktemp("kill")
    text = (SAMPLES / "pcmac.train").read_text()
    (folder / "big.svm").write_text(text * 40)
    run("ssl-train", "-q", "-a", "lapsvm", SAMPLES / "pcmac.train", folder / "m")
    return folder


def test_a_killed_predict_leaves_no_worker_and_the_next_run_removes_its_temporary_file(busy):
    kids = _kill_when_busy([str(BIN / "ssl-predict"), "-j", "2", "--chunk-mb", "1", "big.svm",
                            "m", "out"], busy)
    assert _gone_within(kids, 5) == []
    left = [p for p in os.listdir(busy) if p.startswith(".tmp-")]
    assert len(left) == 1 and left[0].startswith(".tmp-") and "-out-" in left[0]
    run("ssl-predict", "-q", SAMPLES / "pcmac.test", busy / "m", busy / "out")
    assert [p for p in os.listdir(busy) if p.startswith(".tmp-")] == []
    rows = len((SAMPLES / "pcmac.test").read_text().splitlines())
    assert (busy / "out").read_text().count("\n") == rows


def test_a_killed_tune_leaves_no_worker(busy, tmp):
    big = tmp / "train.svm"
    big.write_text((SAMPLES / "pcmac.train").read_text() * 4)
    kids = _kill_when_busy([str(BIN / "ssl-tune"), "-q", "-a", "lapsvm", "-j", "2", "-G",
                            "gamma_a=1e-6:1:x10", str(big)], tmp)
    assert _gone_within(kids, 5) == []


def test_a_tune_killed_while_its_workers_start_leaves_no_worker(busy, tmp):
    """Killed while its workers still import numpy: they end before ever taking a task."""
    big = tmp / "train.svm"
    big.write_text((SAMPLES / "pcmac.train").read_text() * 4)
    kids = _kill_when_busy([str(BIN / "ssl-tune"), "-q", "-a", "lapsvm", "-j", "2", "-G",
                            "gamma_a=1e-6:1:x10", str(big)], tmp, settle=0.0)
    assert _gone_within(kids, 5) == []


def test_only_a_dead_process_temporary_files_for_the_same_output_are_removed(tmp):
    host = outputs.temporary_prefix("x").split("@", 1)[1].split("-", 1)[0]
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        dead = subprocess.Popen(["true"])
        dead.wait()
        names = {
            "dead": f".tmp-{dead.pid}@{host}-out.txt-abcd1234",
            "running": f".tmp-{sleeper.pid}@{host}-out.txt-abcd1234",
            "other_host": f".tmp-{dead.pid}@not{host}-out.txt-abcd1234",
            "other_output": f".tmp-{dead.pid}@{host}-model-abcd1234",
            "not_ours": ".tmp-abcd1234",
        }
        for name in names.values():
            (tmp / name).write_text("partial")
        removed = outputs.remove_stale_temporaries(str(tmp / "out.txt"))
        assert removed == [names["dead"]]
        assert sorted(p.name for p in tmp.iterdir()) == sorted(
            v for k, v in names.items() if k != "dead")
    finally:
        sleeper.kill()
        sleeper.wait()
