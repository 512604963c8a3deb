"""numba's compiled code: the first run says it compiles (once, also under -q), the
compile-ahead command leaves nothing to compile, and a read-only shared install runs for a user
who can write neither into it nor into a home folder."""

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import BIN, ROOT, SAMPLES, run

from ssl_svm.solvers.registry import ALGORITHMS

PYTHON = str(BIN / "python")


def _train_args(name):
    if ALGORITHMS[name].positive_unlabeled:
        return ["-a", name, "--prior", "0.5", "--negatives-as-unlabeled"]
    return ["-a", name]


def test_first_run_says_it_compiles_once_even_under_q(tmp):
    # over NUMPY_NNZ stored values (110,000): the fit runs on numba from its start
    big = tmp / "big.svm"
    big.write_text((SAMPLES / "pcmac.train").read_text() * 4)
    env = {"NUMBA_CACHE_DIR": str(tmp / "cache")}
    first = run("ssl-train", "-q", "--check", "none", "-a", "da", "-W", "0.001", big,
                tmp / "m", check=0, env=env)
    lines = [x for x in first.stderr.splitlines() if "numba" in x]
    assert lines == ["ssl-train: first run of da: compiling its numba code once (up to a "
                     "minute; later runs load it from the cache)"], first.stderr
    again = run("ssl-train", "-q", "--check", "none", "-a", "da", "-W", "0.001", big,
                tmp / "m", check=0, env=env)
    assert "numba" not in again.stderr


def test_a_first_run_with_workers_says_it_compiles_once(tmp):
    """ssl-tune -j 2 with its workers started at once: they compile (each its own process);
    the first to do so says it, on stderr (a worker's log prints nothing), and no other process
    of the run repeats it."""
    env = {"NUMBA_CACHE_DIR": str(tmp / "cache"), "SSL_SVM_SERIAL_SECONDS": "0"}
    # (usmo: it has no numpy path; the other kernel solvers' 500 rows would run on numpy)
    r = run("ssl-tune", "-q", "-a", "usmo", "--negatives-as-unlabeled", "-j", "2", "-G",
            "lambda=0.1:10:x10", SAMPLES / "pcmac.train", check=0, env=env)
    notices = [x for x in r.stderr.splitlines() if "numba" in x]
    assert notices == ["ssl-tune: first run of usmo: compiling its numba code once (up to "
                       "a minute; later runs load it from the cache)"], r.stderr

    # ssl-predict's parent compiles nothing: the line comes from a worker (pieces of 4 MB
    # go through the compiled reader)
    big = tmp / "big.svm"
    big.write_text((SAMPLES / "pcmac.train").read_text() * 16)
    run("ssl-train", "-q", "-a", "lapsvm", SAMPLES / "pcmac.train", tmp / "m")
    env = {"NUMBA_CACHE_DIR": str(tmp / "cache2"), "SSL_SVM_SERIAL_SECONDS": "0"}
    r = run("ssl-predict", "-q", "-j", "2", "--chunk-mb", "4", big, tmp / "m", tmp / "out",
            check=0, env=env)
    notices = [x for x in r.stderr.splitlines() if "numba" in x]
    assert notices == ["ssl-predict: first run of ssl-predict: compiling its numba code once "
                       "(up to a minute; later runs load it from the cache)"], r.stderr


def test_compile_ahead_help_and_a_bad_option():
    r = subprocess.run([PYTHON, "-m", "ssl_svm.cli.compile", "--help"], capture_output=True,
                       text=True)
    assert r.returncode == 0 and "python -m ssl_svm.cli.compile" in r.stdout
    for bad in (["--nonsense"], ["-j", "0"], ["-j", "two"]):
        r = subprocess.run([PYTHON, "-m", "ssl_svm.cli.compile", *bad], capture_output=True,
                           text=True)
        assert r.returncode == 2, (bad, r.stderr)
        assert r.stderr.startswith("python -m ssl_svm.cli.compile: error: "), (bad, r.stderr)
        assert "Traceback" not in r.stderr


# ------------------------------------------------------------------ a read-only shared install

NOBODY = 65534


def _install_read_only(dest):
    """The package as a root-owned ``pip install`` lays it out (ssl_svm/ with cli, solvers and
    formats inside), without compiled caches, every folder unwritable."""
    ignore = shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc")
    pkg = dest / "ssl_svm"
    shutil.copytree(ROOT / "ssl_svm", pkg, ignore=ignore)
    for sub, folder in (("cli", "ssl_cli"), ("solvers", "solvers"), ("formats", "formats")):
        shutil.copytree(ROOT / folder, pkg / sub, ignore=ignore)
    _set_writable(dest, False)


def _set_writable(top, writable):
    for folder, dirs, files in os.walk(top):
        for name in [*dirs, *files, None]:
            p = os.path.join(folder, name) if name else folder
            mode = os.stat(p).st_mode
            os.chmod(p, (mode | stat.S_IWUSR) if writable else (mode & ~0o222))


def _as_user(site, home, tmpdir, *args, cwd):
    """Run ``python args`` with the read-only ``site`` first on the path, HOME=home and
    TMPDIR=tmpdir, as a user who owns none of it: as root, the user nobody (with the right to
    read and list any folder, so the test's own Python under /root stays usable, and no right
    to write where nobody may not); otherwise this user, whose read-only folders bind it too."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(tmpdir),
           "PYTHONPATH": str(site), "LANG": "C.UTF-8"}
    prefix = []
    if os.geteuid() == 0:
        prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                  "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
    return subprocess.run([*prefix, PYTHON, *args], capture_output=True, text=True, env=env,
                          cwd=cwd)


TRAIN = ("-c", "import sys; from ssl_svm.cli.train import main; sys.exit(main())")


@pytest.fixture
def tmp_open():
    """A folder every user can reach (pytest's is under a 0700 folder of root's: the access()
    checks of the commands, made with the real user's rights, would fail on the path)."""
    top = Path(tempfile.mkdtemp(prefix="ssl-svm-test-"))
    os.chmod(top, 0o755)
    yield top
    _set_writable(top, True)
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture
def shared_install(tmp_open):
    tmp = tmp_open
    site = tmp / "site"
    _install_read_only(site)
    for d in ("home", "ro_tmp"):
        (tmp / d).mkdir()
        os.chmod(tmp / d, 0o555)
    for d in ("work", "tmp1", "tmp2"):
        (tmp / d).mkdir()
        os.chmod(tmp / d, 0o1777)
    # over NUMPY_NNZ stored values (110,000): tsvm runs on numba from its start
    (tmp / "work" / "train.svm").write_text((SAMPLES / "pcmac.train").read_text() * 4)
    os.chmod(tmp / "work" / "train.svm", 0o644)
    probe = _as_user(site, tmp / "home", tmp / "tmp1", "-c",
                     "import os, ssl_svm; print(ssl_svm.__file__, os.access(os.path.dirname("
                     "ssl_svm.__file__), os.W_OK), os.access(os.environ['HOME'], os.W_OK))",
                     cwd=tmp / "work")
    # the test means something only if the user runs the read-only copy and cannot write there
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == [str(site / "ssl_svm" / "__init__.py"), "False", "False"]
    return site


def _train(site, tmp, tmpdir, model):
    return _as_user(site, tmp / "home", tmpdir, *TRAIN, "-q", "--check", "none", "-a", "tsvm",
                    "-W", "0.01", "train.svm", model, cwd=tmp / "work")


def test_a_read_only_install_caches_in_a_folder_of_the_users_or_compiles_in_memory(
        tmp_open, shared_install):
    site, tmp = shared_install, tmp_open
    first = _train(site, tmp, tmp / "tmp1", "m1")
    assert first.returncode == 0, first.stderr
    uid = NOBODY if os.geteuid() == 0 else os.geteuid()
    folder = tmp / "tmp1" / f"ssl-svm-{uid}"
    assert first.stderr == (f"ssl-train: first run of tsvm: compiling its numba code once (up to "
                            f"a minute; later runs load it from the cache in {folder})\n")
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    again = _train(site, tmp, tmp / "tmp1", "m2")
    assert again.returncode == 0 and again.stderr == ""
    assert (tmp / "work" / "m1").read_bytes() == (tmp / "work" / "m2").read_bytes()

    # nowhere to write a cache (HOME and TMPDIR read-only): compiled in memory, said as a warning
    nowhere = _train(site, tmp, tmp / "ro_tmp", "m3")
    assert nowhere.returncode == 0, nowhere.stderr
    assert nowhere.stderr.startswith("ssl-train: warning: compiling tsvm's numba code in memory: "
                                     "no writable folder for its cache")
    assert "Traceback" not in nowhere.stderr
    assert (tmp / "work" / "m3").read_bytes() == (tmp / "work" / "m1").read_bytes()


def test_compile_ahead_in_a_shared_install_serves_users_who_cannot_write_there(
        tmp_open, shared_install):
    site, tmp = shared_install, tmp_open
    _set_writable(site, True)  # the administrator, who owns the install, compiles ahead
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = str(site)
    ahead = subprocess.run([PYTHON, "-m", "ssl_svm.cli.compile"], capture_output=True, text=True,
                           env=env, cwd=tmp)
    assert ahead.returncode == 0, ahead.stderr
    assert f"the cache is beside the package's source ({site / 'ssl_svm'})" in ahead.stderr
    _set_writable(site, False)

    # a user with a writable TMPDIR: loads the prebuilt code through a private copy
    seeded = _train(site, tmp, tmp / "tmp2", "m1")
    assert seeded.returncode == 0 and seeded.stderr == "", seeded.stderr
    # nowhere writable: loads it where it is, read-only
    read_only = _train(site, tmp, tmp / "ro_tmp", "m2")
    assert read_only.returncode == 0 and read_only.stderr == "", read_only.stderr
    assert (tmp / "work" / "m1").read_bytes() == (tmp / "work" / "m2").read_bytes()

    # the compile-ahead left nothing to compile: every solver and ssl-predict, and the reader
    # (a file over 10,000 values), load it without a notice (tvrls and cheeger-rls once said
    # so on every run). One process runs them all, one after the other, as ssl-train and
    # ssl-predict do: any function it had to compile would say so, whichever run needed it
    # first (a process per run cost 28 starts of numba). Over NUMPY_NNZ values (110,000):
    # the linear fits run on numba too
    big = tmp / "work" / "big.svm"
    big.write_text((SAMPLES / "pcmac.train").read_text() * 4)
    os.chmod(big, 0o644)
    runs = []
    for name in ALGORITHMS:
        runs.append(("train", ["-q", *_train_args(name), "big.svm", f"{name}.model"]))
        runs.append(("predict", ["-q", "--values", "big.svm", f"{name}.model", "out"]))
    script = ("import sys\n"
              "from ssl_svm.cli.train import main as train\n"
              "from ssl_svm.cli.predict import main as predict\n"
              f"for prog, argv in {runs!r}:\n"
              "    status = (train if prog == 'train' else predict)(argv)\n"
              "    print(prog, argv[-2 if prog == 'train' else -3], status, flush=True)\n")
    r = _as_user(site, tmp / "home", tmp / "ro_tmp", "-c", script, cwd=tmp / "work")
    assert r.returncode == 0 and "numba" not in r.stderr, r.stderr
    done = [line.split() for line in r.stdout.splitlines()]
    assert done == [[prog, argv[-2 if prog == "train" else -3], "0"] for prog, argv in runs], \
        (r.stdout, r.stderr)


def test_the_locator_takes_only_the_packages_own_files(tmp, monkeypatch):
    """Another package's numba functions keep numba's rules, even in a folder whose name
    starts like the package's (ssl_svm2/ beside ssl_svm/)."""
    from ssl_svm.solvers import jit

    monkeypatch.setattr(jit.numba.config, "CACHE_DIR", "")
    for name in ("ssl_svm", "ssl_svm2"):
        (tmp / name).mkdir()
        (tmp / name / "m.py").write_text("def f():\n    return 1\n")
    monkeypatch.setattr(jit, "PACKAGE_DIR", str(tmp / "ssl_svm"))
    monkeypatch.setattr(jit, "_writable_dir", lambda path: False)  # both read-only installs
    monkeypatch.setattr(jit, "user_cache_dir", lambda: str(tmp / "cache"))

    def f():
        return 1

    assert jit.PackageCacheLocator.from_function(f, str(tmp / "ssl_svm2" / "m.py")) is None
    ours = jit.PackageCacheLocator.from_function(f, str(tmp / "ssl_svm" / "m.py"))
    assert isinstance(ours, jit.PackageCacheLocator) and not ours.read_only
    assert ours.get_cache_path().startswith(str(tmp / "cache" / "ssl_svm_"))


def test_a_failing_group_of_the_parallel_compile_is_one_error(tmp):
    """-j N: a run that fails in one of the pool's processes stops the compile-ahead with that
    run's message (the command prints it as its one error line, exit 1)."""
    import click

    from ssl_svm.cli import compile as ahead

    files = {key: str(tmp / f"{key}.svm") for key in ("sparse", "dense", "multi", "pu")}
    with pytest.raises(click.ClickException) as e:
        ahead._in_parallel(2, str(tmp), files, lambda text: None)
    message = e.value.format_message()
    assert ": exit 1: ssl-train: error: " in message and "cannot open: No such file" in message
    assert "\n" not in message, message
