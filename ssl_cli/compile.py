"""Compile every solver's numba code ahead, into the cache later runs load.

    python -m ssl_svm.cli.compile            # as the user who installed the package
    python -m ssl_svm.cli.compile -j 1       # in this process alone (default: one per CPU, up to 3)

A first run of a solver compiles its numba code (up to a minute each; the command lines say
so). For a shared install (a cluster's environment, a container image) run this once after
``pip install``, as the installing user: it trains and predicts with every solver on small
made-up data (sparse and dense rows, every kernel, probabilities, the Python estimators), so
the code is compiled and cached beside the package's source, where every user's runs load it,
read-only installs included (:mod:`ssl_svm.solvers.jit`). With ``NUMBA_CACHE_DIR`` set, the
cache goes there instead. Run again after upgrading the package or numba.

Exit status: 0 done, 1 a run failed (its message is printed).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import warnings

PROG = "python -m ssl_svm.cli.compile"
KERNEL_SOLVERS = ("lapsvm", "laprls", "usmo")
# tsvm first: once numba runs, svm and rls use its routines from the start, as they do on data
# too large for their numpy start
ORDER = ("tsvm", "da", "svm", "rls", "lapsvm", "laprls", "usmo", "tvrls", "tvsvm",
         "cheeger-rls", "cheeger-svm")
# What separate processes compile side by side (-j): solvers that share little compiled code,
# longest first (measured on 2 cores: about 35, 30 and 20 s of the 100 s in one process)
GROUPS = (("tsvm", "da", "svm", "rls"), ("lapsvm", "laprls", "usmo"),
          ("tvrls", "tvsvm", "cheeger-rls", "cheeger-svm"))


def _write(path: str, X, y) -> None:
    """``X`` (dense rows; zeros are left out) and labels ``y`` as an SVMlight file."""
    with open(path, "w", encoding="ascii") as f:
        for row, label in zip(X, y):
            items = " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(row) if v != 0)
            f.write(f"{int(label)} {items}\n")


def _data(folder: str) -> dict[str, str]:
    """Small made-up training files: sparse and dense two-class rows with unlabeled ones (label
    0), three classes, positive-unlabeled rows."""
    import numpy as np

    rng = np.random.RandomState(0)
    files = {}
    w = rng.randn(60)
    # over 10,000 values: the reader parses it with its compiled parser
    sparse = rng.randn(1500, 60) * (rng.rand(1500, 60) < 0.15)
    y = np.where(sparse @ w >= 0, 1, -1)
    labels = np.zeros(1500, dtype=int)
    labels[:40] = y[:40]
    labels[:2] = (1, -1)
    _write(files.setdefault("sparse", os.path.join(folder, "sparse.svm")), sparse, labels)
    dense = rng.randn(160, 5) + 0.01
    y = np.where(dense[:, 0] + dense[:, 1] >= 0, 1, -1)
    labels = np.zeros(160, dtype=int)
    labels[:20] = y[:20]
    labels[:2] = (1, -1)
    _write(files.setdefault("dense", os.path.join(folder, "dense.svm")), dense, labels)
    labels = np.zeros(160, dtype=int)
    cls = np.argmax(dense[:, :3], axis=1) + 1
    labels[:30] = cls[:30]
    labels[:3] = (1, 2, 3)
    _write(files.setdefault("multi", os.path.join(folder, "multi.svm")), dense, labels)
    pu = np.where((y == 1) & (np.arange(160) < 60), 1, 0)
    _write(files.setdefault("pu", os.path.join(folder, "pu.svm")), dense, pu)
    return files


def _runs(files: dict[str, str]) -> list[tuple[str, list[str], str]]:
    """(algorithm, ssl-train options, training file key) of every run."""
    runs = []
    for name in ORDER:
        keys = ("pu",) if name == "usmo" else ("sparse", "dense")
        kernels = ("linear", "poly", "rbf") if name in KERNEL_SOLVERS else (None,)
        for key in keys:
            for kernel in kernels:
                opts = ["-a", name] + (["-t", kernel] if kernel else [])
                if name == "usmo":
                    opts += ["--prior", "auto"]
                runs.append((name, opts, key))
        if name not in ("usmo",):
            runs.append((name, ["-a", name, "--probability"], "dense"))
        if name.startswith(("tv", "cheeger")) or name in ("svm", "lapsvm"):
            runs.append((name, ["-a", name], "multi"))
    return runs


def _usmo_explicit_w(files: dict[str, str]) -> None:
    """usmo's linear path that keeps w (taken when its kernel-row cache cannot hold two rows:
    hundreds of thousands of rows)."""
    import numpy as np

    import ssl_svm
    from ssl_svm.solvers.kernels import KernelSpec
    from ssl_svm.solvers.usmo import usmo

    X, y = ssl_svm.load_svmlight(files["pu"])[:2]
    usmo(X, np.asarray(y, dtype=float), 0.01, 0.5, KernelSpec("linear"), linear_path="w")


def _blocks(files: dict[str, str]) -> None:
    """The cluster fit's block code (``ssl-train --cluster``: the workers run it), on blocks
    in this process: tsvm and da, whose steps use every block method."""
    import numpy as np

    import ssl_svm
    from ssl_svm.solvers import distributed
    from ssl_svm.solvers.blocks import Block
    from ssl_svm.solvers.registry import ALGORITHMS

    X, y = ssl_svm.load_svmlight(files["sparse"])[:2]
    y = np.asarray(y, dtype=float)
    half = X.shape[0] // 2
    for name in ("tsvm", "da"):
        blocks = [Block(X[:half], y[:half], np.ones(half)),
                  Block(X[half:], y[half:], np.ones(X.shape[0] - half))]
        params = {p.name: p.default for p in ALGORITHMS[name].params}
        params["lambda"] = 1e-3
        distributed.fit_model(distributed.LocalBlocks(blocks, X.shape[1]), name, [-1, 1],
                              params, costs=False)


def _estimators(files: dict[str, str]) -> None:
    """Every estimator fitted on dense and on CSR arrays, as a notebook would."""
    import numpy as np
    import scipy.sparse as sp

    import ssl_svm

    X, y = ssl_svm.load_svmlight(files["dense"])[:2]
    Xd = X.toarray() if sp.issparse(X) else np.asarray(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, cls in ssl_svm.ESTIMATORS.items():
            if name == "usmo":
                s = (y == 1).astype(int)
                for data in (Xd, sp.csr_matrix(Xd)):
                    cls(prior=0.5).fit(data, s).decision_function(data)
                continue
            for data in (Xd, sp.csr_matrix(Xd)):
                cls(unlabeled_label=0).fit(data, y).predict(data)


def _quietly(command, argv: list[str], folder: str) -> None:
    """Run a command's ``main(argv)`` with its stderr (warnings about made-up data) kept in a
    file, shown only if it fails."""
    import click

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(dir=folder) as err:
        os.dup2(err.fileno(), 2)
        try:
            status = command(argv)
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        if status != 0:
            err.seek(0)
            text = err.read().decode("utf-8", "replace").strip()
            raise click.ClickException(f"{' '.join(argv)}: exit {status}: {text}")


def _listen() -> list[tuple[str, bool]]:
    """Set this process up as a command does and collect, in the list returned, the compile
    notices :mod:`ssl_svm.solvers.jit` gives, as (text, whether it is a warning)."""
    from ssl_svm.solvers import jit
    from ssl_svm.solvers.host import pools

    pools.configure()
    jit.install()
    compiled = []
    jit.notice = lambda text, warning: compiled.append((text, warning))
    return compiled


def _compile(names: tuple[str, ...], folder: str, files: dict[str, str], say,
             blocks: bool) -> None:
    """Train and predict with the solvers ``names`` (in :data:`ORDER`) on ``files`` in this
    process, and run the cluster blocks' code when ``blocks``."""
    from ssl_svm.cli import predict as predict_cmd
    from ssl_svm.cli import train as train_cmd
    from ssl_svm.solvers.host import numba_start

    # numba running first: the small made-up fits then take the compiled routines they would
    # otherwise leave for numpy (solvers.linear.Routines), as fits on real data do
    numba_start.start_numba()
    runs = [(i, run) for i, run in enumerate(_runs(files)) if run[0] in names]
    for k, (i, (name, opts, key)) in enumerate(runs):
        model = os.path.join(folder, f"m{i}")
        out = os.path.join(folder, f"p{i}")
        _quietly(train_cmd.main, ["-q", *opts, files[key], model], folder)
        pred = ["-q", "--values", files[key], model, out]
        if "--probability" in opts:
            pred = ["-q", "-b", "1", files[key], model, out]
        _quietly(predict_cmd.main, pred, folder)
        if k + 1 == len(runs) or runs[k + 1][1][0] != name:
            say(name)
    if "usmo" in names:
        _usmo_explicit_w(files)
    if blocks:
        _blocks(files)
        say("the cluster fit's blocks")


def _compile_apart(names, folder, files, blocks) -> tuple[list, str | None]:
    """:func:`_compile` in a process of a pool: (notices, the error message or None)."""
    import click

    compiled = _listen()
    try:
        _compile(names, folder, files, lambda text: None, blocks)
        return compiled, None
    except click.ClickException as e:
        return [], e.format_message()


def _in_parallel(jobs: int, folder: str, files: dict[str, str], say) -> list:
    """:data:`GROUPS` compiled in ``jobs`` processes at once (each writes its functions into
    the cache; a function two groups share is compiled by both, and written whole by each)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    import click

    compiled = []
    # spawn: a fresh interpreter, not a fork of one whose numba and thread pools have started
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        todo = {pool.submit(_compile_apart, g, folder, files, i == 0): g
                for i, g in enumerate(GROUPS)}
        for f in as_completed(todo):
            notices, error = f.result()
            if error is not None:
                raise click.ClickException(error)
            compiled += notices
            say(", ".join(todo[f]) + (" and the cluster fit's blocks" if todo[f] == GROUPS[0]
                                      else ""))
    return compiled


def main(argv=None) -> int:
    """Run the compile workload; 0 when every run succeeded."""
    import click

    from ssl_svm.solvers import jit
    from ssl_svm.solvers.host import pools

    @click.command(context_settings={"help_option_names": ["-h", "--help"]},
                   help=__doc__.split("\n\n")[0] + "\n\n\b\n" + __doc__.split("\n\n")[1])
    @click.option("-q", "--quiet", is_flag=True, help="print nothing but errors")
    @click.option("-j", "--jobs", type=click.IntRange(1, 64), default=None,
                  help=f"processes compiling at once [default: one per available CPU, at most "
                       f"{len(GROUPS)}]")
    def command(quiet, jobs):
        t0 = time.perf_counter()

        def say(text):
            if not quiet:
                click.echo(f"{PROG}: {text} ({time.perf_counter() - t0:.0f} s)", err=True)

        jobs = min(jobs or pools.available_cpus(), len(GROUPS))
        compiled = _listen()
        with tempfile.TemporaryDirectory(prefix="ssl-svm-compile-") as folder:
            files = _data(folder)
            if jobs == 1:
                _compile(ORDER, folder, files, say, True)
            else:
                say(f"compiling in {jobs} processes")
                compiled += _in_parallel(jobs, folder, files, say)
            # after the solvers: the estimators load what they compiled and compile only their
            # own paths (dense arrays)
            _estimators(files)
            say("the Python estimators")
        if any(warning for _, warning in compiled):
            raise click.ClickException("no writable folder for numba's cache: nothing was "
                                       "saved (run this as the user who installed the package, "
                                       "or set NUMBA_CACHE_DIR)")
        say(f"done; the cache is {jit.cache_location()}")

    try:
        pools.check_environment()
    except ValueError as e:  # numba would crash (exit 139) or print a traceback on it
        click.echo(f"{PROG}: error: {e}", err=True)
        return 1
    try:
        command.main(args=argv, prog_name=PROG, standalone_mode=False)
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.ClickException as e:
        click.echo(f"{PROG}: error: {e.format_message()}", err=True)
        return 2 if isinstance(e, click.UsageError) else 1
    except (OSError, ValueError, RuntimeError) as e:  # e.g. no space left for the cache
        click.echo(f"{PROG}: error: {type(e).__name__}: {e}", err=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
