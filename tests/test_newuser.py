"""What a new user with a LIBSVM background hits first: small defects, each through the real
commands."""

from __future__ import annotations

import re
import zipfile

from conftest import ROOT, SAMPLES, run

TRAIN = SAMPLES / "pcmac.train"


def test_byte_order_mark_is_skipped(tmp):
    """A file saved with a UTF-8 byte-order mark (Windows editors) reads as without it."""
    bom = tmp / "bom.svm"
    bom.write_bytes(b"\xef\xbb\xbf" + TRAIN.read_bytes())
    run("ssl-train", "-q", bom, tmp / "a.model", check=0)
    run("ssl-train", "-q", TRAIN, tmp / "b.model", check=0)
    assert (tmp / "a.model").read_bytes() == (tmp / "b.model").read_bytes()
    r = run("ssl-predict", bom, tmp / "a.model", tmp / "out", check=0)
    assert "Accuracy" in r.stderr
    small = tmp / "small.svm"  # the mark alone in the first block, line numbers kept
    small.write_bytes(b"\xef\xbb\xbf+1 1:x\n")
    r = run("ssl-train", "-q", small, tmp / "c.model", check=1)
    assert r.stderr.startswith(f"ssl-train: error: {small}:1: ") and "'+1'" not in r.stderr


def test_h_with_a_value_is_a_usage_error(tmp):
    """LIBSVM's -h 0 (shrinking) must not print the help and exit 0 without a model."""
    r = run("ssl-train", "-h", "0", TRAIN, tmp / "m", check=2)
    assert "-h takes no value" in r.stderr and not (tmp / "m").exists()
    run("ssl-train", "-a", "tsvm", "-h", check=0)  # -h alone: the help
    run("ssl-predict", "-h", check=0)


def test_tiny_heat_width_and_negative_jobs_are_usage_errors(tmp):
    r = run("ssl-train", "-a", "lapsvm", "--heat-width", "1e-160", TRAIN, tmp / "m", check=2)
    assert "--heat-width must be in [1e-07" in r.stderr and "Traceback" not in r.stderr
    # the smallest width allowed still writes a model that loads and predicts (γ = 1/(2t²))
    run("ssl-train", "-q", "-a", "lapsvm", "--heat-width", "1e-7", TRAIN, tmp / "w", check=0)
    run("ssl-predict", "-q", TRAIN, tmp / "w", tmp / "out", check=0)
    run("ssl-train", "-q", TRAIN, tmp / "m", check=0)
    r = run("ssl-predict", "-j", "-99999", TRAIN, tmp / "m", tmp / "out", check=2)
    assert "-99999 would leave fewer than one" in r.stderr


def test_exported_rho_is_never_negative_zero(tmp):
    run("ssl-train", "-q", "-a", "lapsvm", TRAIN, tmp / "m", check=0)  # -B 0: b = 0
    run("ssl-export", "--format", "libsvm", tmp / "m", tmp / "out", check=0)
    assert "rho 0.0\n" in (tmp / "out").read_text()


def test_license_ships_with_the_package(tmp):
    import subprocess
    import sys

    assert "BSD 3-Clause" in (ROOT / "LICENSE").read_text()
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                        str(tmp), str(ROOT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    names = zipfile.ZipFile(next(tmp.glob("ssl_svm-*.whl"))).namelist()
    assert any(n.endswith("/LICENSE") for n in names)


def test_eta_counts_from_the_first_finished_piece(monkeypatch):
    """The bar's ETA: '?' until two pieces have finished, then the rate since the first (the
    workers' start before it is no work)."""
    from ssl_svm.cli import parallel

    clock = [100.0]
    monkeypatch.setattr(parallel.time, "perf_counter", lambda: clock[0])
    bar = parallel.Progress(10, "points", enabled=False)
    clock[0] = 104.0  # 4 s of worker start-up, then a piece
    bar.update(1)
    assert bar.eta_text(clock[0]) == "?"
    clock[0] = 105.0  # then 1 s a piece: 8 left
    bar.update(1)
    assert bar.eta_text(clock[0]) == "8.0 s"
    bar.update(8)
    assert bar.eta_text(clock[0]) == "0.0 s"


def test_prior_help_says_its_range():
    r = run("ssl-train", "-a", "usmo", "-h", check=0)
    text = " ".join(r.stdout.split())
    prior = text[text.index("--prior PI"):text.index("-t, --kernel")]
    assert prior.endswith("Range (0, 1) or auto, default auto ") and "1e+15" not in prior


def test_version_on_every_command():
    from importlib.metadata import version

    import ssl_svm

    v = version("ssl-svm")
    assert ssl_svm.__version__ == v
    for prog in ("ssl-train", "ssl-predict", "ssl-tune", "ssl-export"):
        r = run(prog, "--version", check=0)
        assert r.stdout == f"{prog} {v}\n"


def test_closed_pipe_exits_141_quietly(tmp):
    """`ssl-predict big.svm m - | head -1`: the reader goes away; no line, and the status of
    a process killed by SIGPIPE (141), which `set -o pipefail` tells from an error (1)."""
    import subprocess

    from conftest import BIN

    big = tmp / "big.svm"
    big.write_bytes((SAMPLES / "pcmac.test").read_bytes() * 300)
    run("ssl-train", "-q", TRAIN, tmp / "m", check=0)
    p = subprocess.Popen([BIN / "ssl-predict", "--values", big, tmp / "m", "-"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait() == 141 and b"error" not in err and b"Traceback" not in err


def test_grid_py_gamma_is_ignored_by_a_linear_solver(tmp):
    """grid.py's default call `ssl-train -c C -g G -v 5 DATA` (it searches γ unless told
    -log2g null) scores the linear solver, with a warning, instead of a usage error that
    grid.py hides before waiting for ever."""
    r = run("ssl-train", "-c", "2", "-g", "0.5", "-v", "5", TRAIN, check=0)
    assert r.stdout.startswith("Cross Validation Accuracy = ")
    assert "ssl-train: warning: -g 0.5 ignored: -a svm has no kernel" in r.stderr
    same = run("ssl-train", "-c", "2", "-v", "5", TRAIN, check=0)
    assert same.stdout == r.stdout
    r = run("ssl-train", "-g", "0.5", "-v", "5", TRAIN, check=2)  # without -c: as before
    assert "not used by -a svm" in r.stderr


def test_tsvm_says_a_few_steps_unless_verbose(tmp):
    """tsvm's ~30 annealing steps: the first, every tenth, the last and those that switched
    pairs by default; every one with --verbose."""
    quiet = run("ssl-train", "-a", "tsvm", "-W", "0.001", TRAIN, tmp / "m", check=0).stderr
    loud = run("ssl-train", "--verbose", "-a", "tsvm", "-W", "0.001", TRAIN, tmp / "m",
               check=0).stderr
    def steps(err):  # (step, pairs switched, the line less its time)
        return [(int(m[1]), int(m[2]), m[0].rsplit(" (", 1)[0])
                for m in re.finditer(r"λ_u step (\d+) \(.*?\): (\d+) pairs switched.*",
                                     err)]

    said, every = steps(quiet), steps(loud)
    assert len(every) == 30 and 4 <= len(said) <= 10
    assert set(said) <= set(every) and said[0] == every[0] and said[-1] == every[-1]
    assert all(n == 1 or n % 10 == 0 or switched for n, switched, _ in said)
    assert [s for s in every if s[1]] == [s for s in said if s[1]]  # every switch is said


def test_a_graph_too_large_for_the_data_names_the_file_and_the_option(tmp):
    f = tmp / "tiny.svm"
    f.write_text("+1 1:1\n-1 1:2\n0 1:3\n")
    for algo in ("tvrls", "cheeger-svm"):
        r = run("ssl-train", "-q", "-a", algo, f, tmp / "m", check=1)
        assert r.stderr == (f"ssl-train: error: {f}: a 10-nearest-neighbour graph needs more "
                            "than 10 rows (have 3); give fewer neighbours (-k / --neighbors)\n")
    assert not (tmp / "m").exists()


def test_help_and_the_documentation_agree_on_max_iter():
    readme = ((ROOT / "docs" / "commands.md").read_text()
              + (ROOT / "docs" / "contract.md").read_text())
    assert "Newton steps (`svm`, default 1000)" in readme
    svm = run("ssl-train", "-a", "svm", "-h").stdout
    assert re.search(r"--max-iter INT\s+maximum number of Newton steps\. Range \[1,\s+1000000\], "
                     r"default 1000\b", svm)
    usmo = run("ssl-train", "-a", "usmo", "-h").stdout
    assert re.search(r"Range \[1,\s+2147483647\], default\s+10000000", usmo)
    assert "usmo's pair steps at most\n  2147483647" in readme


def test_the_readmes_export_line_writes_what_liblinear_reads(tmp):
    """README: `ssl-train -a tsvm -W 0.001 train.svm` then `ssl-export train.svm.model
    model.liblinear`: a LIBLINEAR file, and ssl-export's line names the predictor that reads
    what it wrote (a kernel model exported by inference is LIBSVM's, and says so)."""
    readme = (ROOT / "README.md").read_text()
    assert "ssl-export train.svm.model model.liblinear" in readme
    train = tmp / "train.svm"
    train.write_bytes(TRAIN.read_bytes())
    run("ssl-train", "-q", "-a", "tsvm", "-W", "0.001", "train.svm", cwd=tmp, check=0)
    r = run("ssl-export", tmp / "train.svm.model", tmp / "model.liblinear", check=0)
    assert (tmp / "model.liblinear").read_text().startswith("solver_type ")
    assert "read it with LIBLINEAR's predict" in r.stderr
    run("ssl-train", "-q", "-a", "lapsvm", train, tmp / "lap", check=0)
    r = run("ssl-export", tmp / "lap", tmp / "lap.out", check=0)
    assert "read it with LIBSVM's svm-predict" in r.stderr


def test_the_readmes_numbers_are_the_commands_numbers(tmp):
    """The accuracies the README quotes for the sample file are what its commands give."""
    readme = (ROOT / "README.md").read_text()
    said = {}
    for args in (["-a", "svm"], ["-a", "tsvm"], ["-a", "tsvm", "-R", "0.5"]):
        run("ssl-train", "-q", *args, "-W", "0.001", TRAIN, tmp / "m", check=0)
        r = run("ssl-predict", SAMPLES / "pcmac.test", tmp / "m", tmp / "p", check=0)
        said[" ".join(args)] = re.search(r"Accuracy = ([0-9.]+)%", r.stderr)[1]
    assert (f"a supervised SVM gets {said['-a svm']} %" in readme
            and f"transductive SVM {said['-a tsvm']} % ({said['-a tsvm -R 0.5']} % told"
            in readme.replace("\n", " ")), said


def test_the_pages_say_how_to_reach_the_commands():
    """After `make demo` the commands are in .venv/bin, off the PATH: the README, the getting
    started page and make demo itself say how to reach them."""
    for page in ("README.md", "docs/getting-started.md", "Makefile"):
        assert "/activate" in (ROOT / page).read_text(), page


def test_the_check_is_described_as_the_code_runs_it():
    """--check auto is never skipped for its time (ssl_svm.trust.check_fit): no text says it
    runs "when that takes at most ~10 s"."""
    import ssl_svm

    r = run("ssl-train", "--help", check=0)
    text = " ".join(r.stdout.split())
    assert "10 s" not in text and "auto = always" in text
    doc = " ".join(ssl_svm.TSVM.__doc__.split())
    assert "10 s" not in doc and "'auto' always" in doc
