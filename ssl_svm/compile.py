"""Compile every solver's numba code ahead, into the cache later runs load.

    python -m ssl_svm.compile            # as the user who installed the package

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

PROG = "python -m ssl_svm.compile"
KERNEL_SOLVERS = ("lapsvm", "laprls", "usmo")
# tsvm first: once numba runs, svm and rls use its routines from the start, as they do on data
# too large for their numpy start
ORDER = ("tsvm", "da", "svm", "rls", "lapsvm", "laprls", "usmo", "tvrls", "tvsvm",
         "cheeger-rls", "cheeger-svm")


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


def main(argv=None) -> int:
    """Run the compile workload; 0 when every run succeeded."""
    import click

    from ssl_svm.cli import predict as predict_cmd
    from ssl_svm.cli import train as train_cmd
    from ssl_svm.solvers import jit, runtime

    @click.command(context_settings={"help_option_names": ["-h", "--help"]},
                   help=__doc__.split("\n\n")[1] + "\n\nExample: python -m ssl_svm.compile")
    @click.option("-q", "--quiet", is_flag=True, help="print nothing but errors")
    def command(quiet):
        say = (lambda text: None) if quiet else (lambda text: click.echo(text, err=True))
        runtime.configure()
        jit.install()
        compiled = []
        jit.notice = lambda text, warning: compiled.append((text, warning))
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="ssl-svm-compile-") as folder:
            files = _data(folder)
            runs = _runs(files)
            done = set()
            for i, (name, opts, key) in enumerate(runs):
                if name not in done:
                    say(f"{PROG}: {name} ({len(done) + 1} of {len(ORDER)}, "
                        f"{time.perf_counter() - t0:.0f} s)")
                    done.add(name)
                model = os.path.join(folder, f"m{i}")
                out = os.path.join(folder, f"p{i}")
                _quietly(train_cmd.main, ["-q", *opts, files[key], model], folder)
                pred = ["-q", "--values", files[key], model, out]
                if "--probability" in opts:
                    pred = ["-q", "-b", "1", files[key], model, out]
                _quietly(predict_cmd.main, pred, folder)
            _usmo_explicit_w(files)
            say(f"{PROG}: the cluster fit's blocks")
            _blocks(files)
            say(f"{PROG}: the Python estimators")
            _estimators(files)
        if any(warning for _, warning in compiled):
            raise click.ClickException("no writable folder for numba's cache: nothing was "
                                       "saved (run this as the user who installed the package, "
                                       "or set NUMBA_CACHE_DIR)")
        say(f"{PROG}: done in {time.perf_counter() - t0:.0f} s; the cache is "
            f"{jit.cache_location()}")

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
