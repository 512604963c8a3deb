"""Progress beats: a line after PERIOD seconds of silence, none while lines keep coming."""

import logging

import numpy as np
from conftest import shared

from ssl_svm.formats.svmlight import read_dataset
from ssl_svm.solvers import progress
from ssl_svm.solvers.linear import l2svm_mfn


def g50c_scaled():
    d = read_dataset(str(shared("datasets", "g50c", "g50c")))
    return (d.X * 100).tocsr(), d.y.astype(float)


def test_beat_speaks_only_after_silence(monkeypatch, caplog):
    log = logging.getLogger("ssl.solver.test")
    caplog.set_level(logging.INFO, logger="ssl")
    clock = [1000.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    progress.touch()
    clock[0] += progress.PERIOD - 0.5
    assert not progress.beat(log, "step %d", 1)
    clock[0] += 1.0
    assert progress.beat(log, "step %d", 2)
    assert not progress.beat(log, "step %d", 3)  # the beat itself counts as a line
    clock[0] += progress.PERIOD
    progress.Stamp().filter(logging.makeLogRecord({"msg": "a regular line"}))
    assert not progress.beat(log, "step %d", 4)
    assert [r.getMessage() for r in caplog.records] == ["step 2"]
    caplog.set_level(logging.WARNING, logger="ssl")  # -q: no beats at all
    clock[0] += 10 * progress.PERIOD
    assert not progress.beat(log, "step %d", 5)


def test_newton_steps_beat_when_the_solve_is_long(monkeypatch, caplog):
    """The MFN loop beats once per Newton step at most; with a zero period every step speaks
    (standing in for steps that take ~10 s each), at the default period none in this short run."""
    X, Y = g50c_scaled()
    caplog.set_level(logging.INFO, logger="ssl")
    progress.touch()
    r = l2svm_mfn(X, Y, np.ones(Y.size), 1e-3)
    assert r.iterations > 10
    assert not [m for m in caplog.messages if "Newton step" in m]
    monkeypatch.setattr(progress, "PERIOD", 0.0)
    r = l2svm_mfn(X, Y, np.ones(Y.size), 1e-3)
    beats = [m for m in caplog.messages if "Newton step" in m]
    assert len(beats) >= r.iterations - 2  # every step but the converging ones
    assert beats[0].startswith("Newton step 1 of at most 1000: objective ")


def test_a_long_cg_solve_beats_between_iterations_and_the_beats_change_nothing(monkeypatch,
                                                                                caplog):
    """One CG solve beats between its iterations when nothing was printed for PERIOD seconds
    (a Newton step on badly scaled dense rows took minutes in silence); the beats change
    nothing: the result is bit for bit the silent one."""
    X, Y = g50c_scaled()
    whole = l2svm_mfn(X, Y, np.ones(Y.size), 1e-3, precondition=False)
    caplog.set_level(logging.INFO, logger="ssl")
    monkeypatch.setattr(progress, "PERIOD", 0.0)  # a beat after every iteration
    beaten = l2svm_mfn(X, Y, np.ones(Y.size), 1e-3, precondition=False)
    assert np.array_equal(whole.w, beaten.w) and whole.objective == beaten.objective
    beats = [m for m in caplog.messages if m.startswith("conjugate gradient: ")]
    assert len(beats) > 10
    assert beats[0].startswith("conjugate gradient: 1 iterations of at most ")
