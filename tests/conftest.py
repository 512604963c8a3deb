"""Shared fixtures: where ../shared is, and how to run the installed commands."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ssl_svm.solvers.host import budget, pools

# The suite runs the solvers in its own process, as a command does: set its thread pools up as
# the commands do for theirs (numba's tbb layer, idle OpenMP/OpenBLAS threads asleep), before
# any test module loads numba or a BLAS. The library leaves that to its host; here the suite
# is the host (before the library layer, `import solvers` did this at collection, and the
# in-process solver tests ran 1.5x slower without it).
pools.configure()

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SSL_SHARED", ROOT.parent / "shared")).resolve()
SAMPLES = ROOT / "sample_data"
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "bench"))  # bench/tools.py: synthetic data, peak memory


def shared(*parts) -> Path:
    p = SHARED.joinpath(*parts)
    if not p.exists():
        raise FileNotFoundError(f"{p} is missing: the tests need ../shared (or SSL_SHARED)")
    return p


def run(prog, *args, input=None, cwd=None, check=None, env=None):
    """Run an installed console script; returns CompletedProcess with text stdout/stderr.
    ``env``: variables to set (None as a value: unset) on top of this process's environment."""
    exe = BIN / prog
    full = None
    if env is not None:
        full = dict(os.environ)
        for k, v in env.items():
            if v is None:
                full.pop(k, None)
            else:
                full[k] = v
    r = subprocess.run([str(exe), *map(str, args)], input=input, cwd=cwd, env=full,
                       capture_output=True, text=isinstance(input, str) or input is None)
    if check is not None:
        assert r.returncode == check, (r.returncode, r.stdout, r.stderr)
    return r


def ssl_train(*args, **kw):
    """ssl-train with ``--check none``, for tests of what a solver computes: the comparison
    with the supervised svm (tests/test_trust.py tests it) adds its folds to every run."""
    return run("ssl-train", "--check", "none", *args, **kw)


@pytest.fixture(autouse=True)
def fresh_numpy_budget(monkeypatch):
    """Each test's in-process fits begin with the whole numpy budget of a fresh command
    (solvers.host.budget.numpy_work_left), whatever the tests before it in this process spent."""
    monkeypatch.setattr(budget, "_numpy_spent", 0)


@pytest.fixture
def tmp(tmp_path):
    return tmp_path
