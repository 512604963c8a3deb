"""A seeded fuzzer of the command contract, through the installed programs.

Cases: mutated SVMlight files (ssl-train, then ssl-predict of what it wrote), mutated model
files (ssl-predict), every registry ``Param`` with hostile values generated from its declaration
(a new option is covered without touching this file), and output paths of every kind (device,
full device, FIFO, symlink, the input itself, a folder, a missing folder). Every case asserts:

- the exit status is 0, 1 or 2, and the program was not killed by a signal;
- no traceback and no Python warning on stderr; status 1: the last line is ``prog: error: ...``
  and every other line a ``prog: warning:``; status 2: one ``prog: error:`` line too;
- no ``.tmp-*`` file is left, and a failed run left every existing file as it was;
- a model written with status 0 loads and predicts finite decision values.

``make test`` runs :data:`CASES` cases per class (about two minutes on two cores); ``make fuzz``
runs ``SSL_FUZZ_SCALE`` times as many with a seed of its own (``SSL_FUZZ_SEED``).
"""

from __future__ import annotations

import os
import random
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from conftest import BIN, SAMPLES

from ssl_svm.solvers.registry import ALGORITHMS, all_params

SCALE = int(os.environ.get("SSL_FUZZ_SCALE", "1"))
SEED = int(os.environ.get("SSL_FUZZ_SEED", "19"))
CASES = {"data": 60 * SCALE, "model": 80 * SCALE, "params": 3 * SCALE}
WORKERS = 2


def _rows() -> list[str]:
    lines = (SAMPLES / "pcmac.train").read_text().splitlines()
    # 24 rows: a few labels of each class and unlabeled rows, short enough to train in a blink
    out = []
    for i, line in enumerate(lines[:24]):
        label, _, rest = line.partition(" ")
        feats = " ".join(rest.split()[:12])
        out.append(f"{label if i < 8 else 0} {feats}")
    return out


ROWS = _rows()
DATA = "\n".join(ROWS) + "\n"
PU_DATA = DATA.replace("\n-1 ", "\n0 ")


def run(prog: str, *args, stdin=None, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / prog), *map(str, args)], capture_output=True,
                          stdin=stdin, timeout=timeout)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def check(r: subprocess.CompletedProcess, prog: str, folder: Path, before: dict,
          model: Path | None = None, what: str = "") -> int:
    """Assert the contract for one finished run (see the module docstring)."""
    err = r.stderr.decode("utf-8", "replace")
    where = f"{what}: status {r.returncode}, stderr {err[-600:]!r}"
    assert r.returncode in (0, 1, 2), where
    assert "Traceback" not in err and "Warning:" not in err and "warnings.warn" not in err, where
    lines = err.strip().splitlines()
    if r.returncode == 1:
        assert lines and lines[-1].startswith(f"{prog}: error: "), where
        assert all(x.startswith(f"{prog}: warning: ") for x in lines[:-1]), where
        assert "\x1b" not in err and len(lines[-1]) <= 400, where
    if r.returncode == 2:
        assert lines and lines[-1].startswith(f"{prog}: error: "), where
        assert all(x.startswith(f"{prog}: warning: ") for x in lines[:-1]), where
    assert not [p for p in folder.iterdir() if p.name.startswith(".tmp-")], where
    if r.returncode != 0:
        now = snapshot(folder)
        for name, content in before.items():
            assert now.get(name) == content, f"{where}: {name} changed by a failed run"
    if r.returncode == 0 and model is not None and model.exists():
        test = folder / "fuzz-test.svm"
        test.write_text(DATA)
        p = run("ssl-predict", "-q", "--values", test, model)
        perr = p.stderr.decode("utf-8", "replace")
        assert p.returncode == 0, f"{where}: the model it wrote does not predict: {perr}"
        values = [float(v) for line in p.stdout.decode().splitlines() for v in line.split()[1:]]
        assert values and np.isfinite(values).all(), where
    return r.returncode


def _parallel(fn, items):
    with ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(fn, items))


# --------------------------------------------------------------------------- mutations

HOSTILE_TOKENS = ["1e300", "-1e308", "nan", "inf", "1e-320", "0x1p3", "1,5", "\x1b[2J", "\x00",
                  "99999999999999999999", "-0", "+", ":", "::", "1:", ":1", "#", "cost:1e308",
                  "qid:", "2147483648:1", "-3:1", "0:1", "1e19", "A" * 3000, "\xff\xfe", "\r",
                  "\t", "\v"]


def mutate(text: str, rng: random.Random) -> bytes:
    b = bytearray(text.encode())
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(7)
        pos = rng.randrange(len(b) + 1)
        if kind == 0 and b:  # flip a byte
            b[min(pos, len(b) - 1)] = rng.randrange(256)
        elif kind == 1:  # insert a hostile token
            b[pos:pos] = (" " + rng.choice(HOSTILE_TOKENS) + " ").encode("utf-8", "replace")
        elif kind == 2 and b:  # cut
            del b[pos: pos + rng.randint(1, 40)]
        elif kind == 3:  # duplicate a stretch
            s = rng.randrange(len(b) + 1)
            b[pos:pos] = b[s: s + rng.randint(1, 200)]
        elif kind == 4:  # replace a number by a hostile one
            tokens = bytes(b).split(b" ")
            i = rng.randrange(len(tokens))
            head, sep, _ = tokens[i].partition(b":")
            tokens[i] = head + sep + rng.choice(HOSTILE_TOKENS[:12]).encode() if sep else \
                rng.choice(HOSTILE_TOKENS[:12]).encode()
            b = bytearray(b" ".join(tokens))
        elif kind == 5:  # truncate
            b = b[:pos]
        else:  # a line ending or blank line in the wrong place
            b[pos:pos] = rng.choice([b"\n", b"\r\n", b"\n\n", b"\n#", b"\x00"])
    return bytes(b)


def test_mutated_data_files(tmp_path):
    rng = random.Random(SEED)
    cases = [(k, mutate(DATA, rng), rng.choice(["svm", "tsvm", "rls", "lapsvm"]))
             for k in range(CASES["data"])]

    def one(case):
        k, content, algo = case
        folder = tmp_path / f"d{k}"
        folder.mkdir()
        f = folder / "d.svm"
        f.write_bytes(content)
        (folder / "m.model").write_text("existing model\n")
        before = snapshot(folder)
        extra = ["-k", "3"] if algo == "lapsvm" else []
        r = run("ssl-train", "-q", "-a", algo, *extra, f, folder / "m.model")
        status = check(r, "ssl-train", folder, before, folder / "m.model",
                       f"data case {k} ({algo}): {content[:200]!r}")
        p = run("ssl-predict", "-q", f, folder / "m.model", folder / "p")
        if status == 0:
            check(p, "ssl-predict", folder, snapshot(folder), what=f"predict case {k}")
        return status

    statuses = _parallel(one, cases)
    assert statuses.count(0) and statuses.count(1), statuses  # the mutations hit both sides


def test_mutated_model_files(tmp_path):
    rng = random.Random(SEED + 1)
    base = {}
    for algo in ("svm", "lapsvm", "rls"):
        m = tmp_path / f"{algo}.model"
        f = tmp_path / "train.svm"
        f.write_text(DATA)
        extra = ["-k", "3"] if algo == "lapsvm" else []
        r = run("ssl-train", "-q", "-a", algo, *extra, f, m)
        assert r.returncode == 0, r.stderr
        base[algo] = m.read_text()
    cases = [(k, mutate(base[rng.choice(list(base))], rng)) for k in range(CASES["model"])]

    def one(case):
        k, content = case
        folder = tmp_path / f"m{k}"
        folder.mkdir()
        (folder / "t.svm").write_text(DATA)
        (folder / "bad.model").write_bytes(content)
        before = snapshot(folder)
        r = run("ssl-predict", "-q", "--values", folder / "t.svm", folder / "bad.model",
                folder / "p")
        status = check(r, "ssl-predict", folder, before, what=f"model case {k}: {content!r}")
        if status == 0:
            values = [float(v) for line in (folder / "p").read_text().splitlines()
                      for v in line.split()[1:]]
            assert np.isfinite(values).all(), f"model case {k}"
        return status

    statuses = _parallel(one, cases)
    assert statuses.count(1), statuses


def hostile_values(p, rng: random.Random) -> list[str]:
    """Values at and beyond every bound of ``p``'s declaration, and non-values."""
    if p.choices:
        return [rng.choice(p.choices), "", "nosuch", p.choices[0].upper(), "\x1b[2J"]
    lo, hi = p.lo, p.hi
    vals = [lo, hi, -hi, 2 * hi if hi > 0 else 1e308, lo - 1, 1e308, -1e308, 1e-320, 0, 2**63,
            "nan", "inf", "-inf", "1e400", "abc", "", "1_0", " 1"]
    if p.type is int:
        vals += [1.5, int(hi) + 1]
    return [str(v) for v in rng.sample(vals, min(len(vals), 5))]


def test_every_parameter_with_hostile_values(tmp_path):
    """Generated from the registry: each declared option of each algorithm that takes it."""
    rng = random.Random(SEED + 2)
    cases = []
    for _name, uses in sorted(all_params().items()):
        for _ in range(CASES["params"]):
            algo, p = rng.choice(uses)  # over the runs, every algorithm that declares it
            for v in hostile_values(p, rng)[:2]:
                cases.append((len(cases), algo.name, p.flags[-1], v))

    def one(case):
        k, algo, flag, value = case
        folder = tmp_path / f"p{k}"
        folder.mkdir()
        f = folder / "d.svm"
        f.write_text(PU_DATA if ALGORITHMS[algo].positive_unlabeled else DATA)
        extra = ["-k", "3"] if flag not in ("-k", "--neighbors") and any(
            p.name == "neighbors" for p in ALGORITHMS[algo].params) else []
        before = snapshot(folder)
        r = run("ssl-train", "-q", "-a", algo, *extra, f"{flag}={value}", f, folder / "m.model",
                timeout=300)
        return check(r, "ssl-train", folder, before, folder / "m.model",
                     f"-a {algo} {flag}={value!r}")

    statuses = _parallel(one, cases)
    assert statuses.count(2) and statuses.count(0), statuses


def test_output_path_kinds(tmp_path):
    data = tmp_path / "d.svm"
    data.write_text(DATA)
    model = tmp_path / "m.model"
    assert run("ssl-train", "-q", data, model).returncode == 0
    (tmp_path / "link").symlink_to(model.name)
    (tmp_path / "dangling").symlink_to("nowhere/x")
    (tmp_path / "sub").mkdir()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    kinds = ["/dev/null", "/dev/full", "/dev/stdout", str(tmp_path / "link"),
             str(tmp_path / "dangling"), str(tmp_path / "sub"), str(tmp_path / "no" / "x"),
             str(data), str(model), str(fifo), "-", "", str(tmp_path / "newdir") + "/"]
    for out in kinds:
        for prog, args, inputs in (
                ("ssl-train", [data, out], [data]),
                ("ssl-predict", [data, model, out], [data, model]),
                ("ssl-train", ["-l", out, data, tmp_path / "l.model"], [data]),
                ("ssl-tune", ["-G", "lambda=1", "-v", "2", "--out", out, data], [data])):
            before = snapshot(tmp_path)
            reader = None
            if out == str(fifo):
                reader = threading.Thread(target=lambda: fifo.read_bytes(), daemon=True)
                reader.start()
            r = run(prog, "-q", *args)
            status = check(r, prog, tmp_path, before, what=f"{prog} {args}")
            if out in map(str, inputs):
                assert status == 2, (prog, out, r.stderr)
            if out == "/dev/full":
                assert status == 1, (prog, r.stderr)
            if reader is not None:
                if status != 0:  # nothing opened the FIFO: let the reader go
                    with open(fifo, "wb"):
                        pass
                reader.join(10)
    assert os.path.islink(tmp_path / "link") and os.readlink(tmp_path / "link") == model.name
    for dev in ("/dev/null", "/dev/full"):
        assert Path(dev).is_char_device()


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__, "-q"]))
