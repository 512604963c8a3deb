"""ssl-tune: cross-validated grid search, locally (-j N) or on a Dask cluster (--cluster).

Prints one flushed line per finished grid point, then ``best ...``; ``--resume FILE`` keeps
those lines in FILE and skips the points already there; ``--out MODEL`` trains the winner on
all the data.
"""

from __future__ import annotations

import math
import os
import stat
import sys
import time

import click
import numpy as np

from ssl_svm import pipeline
from ssl_svm.cli import process
from ssl_svm.cli.common import CONTEXT, setup_logging, user_errors, version_option
from ssl_svm.cli.grid import parse_grid
from ssl_svm.cli.outputs import Output, Outputs, resolve, writable_folder
from ssl_svm.cli.parallel import Progress, Runner, resolve_jobs
from ssl_svm.cli.solver_options import (
    SolverCommand,
    choose_algorithm,
    complete_algorithm,
    complete_file,
    fmt,
    param_options,
    run_options,
    solver_params,
)
from ssl_svm.cli.train import load_training, read_validation
from ssl_svm.formats import LABEL_MAX
from ssl_svm.formats.errors import DataError
from ssl_svm.selection import auto
from ssl_svm.selection.rules import PORTFOLIO, SUPERVISED
from ssl_svm.selection.tuning import (
    METRICS,
    collect,
    held_out_labels,
    make_problem,
    point_key,
    run_group,
)
from ssl_svm.solvers.errors import MemoryLimitError
from ssl_svm.solvers.registry import ALGORITHMS, by_svmlin_code
from ssl_svm.training import for_solver, prior_sweep

PROG = "ssl-tune"
RESUME_MAGIC = "# ssl-tune resume 1"

EPILOG = """\b
Grid (-G NAME=VALUES, repeatable): NAME is a parameter of the chosen algorithm (its canonical
name, as in model files: lambda, lambda_u, gamma, gamma_a, gamma_i, ...); VALUES is a
comma-separated list of values and ranges START:STOP:xFACTOR (geometric) or START:STOP:+STEP
(arithmetic), STOP included. The grid is the product of the -G axes. For usmo, -G prior=auto
estimates the class prior on all of TRAIN and tries it with 5 values evenly over its 90 %
interval.

\b
Order and warm starts: points run coarse to fine (both ends of every axis first, then
bisection). For rls, svm, tsvm (along lambda) and lapsvm, laprls (along gamma_a) the values
of that axis form a path, run largest first on each fold, each fit seeded by the previous one
(tsvm: its labelling of the unlabeled rows seeds the switching at the final lambda_u, instead
of annealing from 1e-5). --no-warm-start fits every point from scratch.

\b
Output: one line per finished point, NAME=VALUE ... METRIC=SCORE time=SECONDS (fits summed over
the folds), or NAME=VALUE ... failed: MESSAGE after a retry; then
'best NAME=VALUE ... METRIC=SCORE' (ties: the first in grid order). Metrics: accuracy and f1 in
percent (f1 of the positive class, the larger label; macro-average for more classes), auc in
[0, 1], pu = recall^2 / P(y=+1) (Lee & Liu, ICML 2003): recall on the held-out labeled
positives, P(y=+1) the predicted-positive fraction of the unlabeled training rows; the
default for usmo, whose held-out rows are all positive.

\b
Examples:
  ssl-tune -a svm -G lambda=1e-4:1e-1:x10 train.svm
  ssl-tune -a tsvm -G lambda=1e-4:1e-1:x10 -G lambda_u=0.1,1,10 -j -1 --out best.model train.svm
  ssl-tune -a lapsvm -t rbf -G gamma_a=1e-6:1e-2:x10 -G gamma_i=0.01,1 train.svm val.svm
  ssl-tune -a usmo --prior 0.3 -G lambda=1e-4:1e-1:x10 pu.svm          # metric pu
  ssl-tune -a usmo -G prior=auto -G lambda=1e-3,1e-2 pu.svm            # π over its interval
  ssl-tune -a svm -G lambda=1e-6:1:x10 --resume grid.txt train.svm      # rerun to resume
  ssl-tune -a svm -G lambda=1e-6:1:x10 --cluster tcp://scheduler:8786 train.svm

Exit status: 0 ok, 1 data or model error, 2 usage error."""


def _check_metric(ctx, metric, algo, n_classes, has_validation):
    if metric is None:
        return "pu" if algo.positive_unlabeled else "accuracy"
    if algo.positive_unlabeled and not has_validation and metric != "pu":
        raise click.UsageError(f"--metric {metric} needs labeled negatives; the held-out rows "
                               f"of {algo.name} are all positive (use --metric pu, or give a "
                               "labeled VALIDATION file)", ctx)
    if metric in ("auc", "pu") and n_classes > 2:
        raise click.UsageError(f"--metric {metric} is for two classes ({n_classes} found)", ctx)
    return metric


class ResumeFile:
    """The result lines of a run, kept on the machine running ssl-tune (workers never see it).

    Line 1 is ``# ssl-tune resume 1 <fingerprint>``; then the lines printed on stdout. A line
    cut by a kill (no final newline) is dropped; failed points are run again. A file that does
    not start with that header is never written to; a symlink is followed.
    """

    def __init__(self, path: str):
        """Check ``path`` before any work: a resume file or a new file in a writable folder."""
        self.path = path
        self.name = os.path.join(os.curdir, path) if path == "-" else path  # a file named -
        self.target, st = resolve(self.name, "--resume file")
        self.text = ""
        self.f = None
        if st is None:
            writable_folder(path, self.target, "--resume file")
            return
        if not stat.S_ISREG(st.st_mode):
            raise DataError(path, "--resume needs a regular file (a device, FIFO or folder "
                            "cannot keep results)")
        try:
            with open(self.target, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise DataError(path, f"cannot read: {e.strerror or e}") from None
        if not os.access(self.target, os.W_OK):
            raise DataError(path, "cannot write: permission denied")
        try:
            self.text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise DataError(path, "not an ssl-tune resume file (not text); it is left "
                            "as it is", 1) from None
        if self.text and not self.text.startswith(RESUME_MAGIC):
            raise DataError(path, "not an ssl-tune resume file; it is left as it is", 1)

    def open(self, fingerprint: str, metric: str) -> None:
        """Load the finished points of a run with this fingerprint, then keep the file open
        for appending."""
        path = self.path
        self.done: dict[str, tuple[str, float]] = {}
        header = f"{RESUME_MAGIC} {fingerprint} metric={metric}\n"
        lines = self.text.splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n"):
            lines.pop()
        if lines and lines[0] != header:
            raise DataError(path, "was written by a run with other data, algorithm, fixed "
                            "options, folds, seed or metric; use another --resume file", 1)
        if not lines:
            lines = [header]
        for line in lines[1:]:
            parsed = _parse_result(line, metric)
            if parsed is not None:
                self.done[parsed[0]] = (line.rstrip("\n"), parsed[1])
        out = Output(self.name, "--resume file")  # rewrite without a cut last line, then append
        try:
            out.write("".join(lines))
            out.finish()
            out.rename()
        finally:
            out.discard()
        try:
            self.f = open(self.target, "a", encoding="utf-8")  # noqa: SIM115
        except OSError as e:
            raise DataError(path, f"cannot write: {e.strerror or e}") from None

    def add(self, line: str) -> None:
        try:
            self.f.write(line + "\n")
            self.f.flush()
            os.fsync(self.f.fileno())
        except OSError as e:
            raise DataError(self.path, f"cannot write: {e.strerror or e}") from None

    def close(self) -> None:
        if self.f is not None:
            try:
                self.f.close()
            except OSError:
                pass


def _parse_result(line: str, metric: str):
    """(point key, score) of a finished point's line, None for failed or foreign lines."""
    if line.startswith(("#", "best ")) or " failed" in line:
        return None
    tokens = line.split()
    key = []
    for t in tokens:
        name, eq, value = t.partition("=")
        if not eq:
            return None
        if name == metric:
            try:
                return " ".join(key), float(value)
            except ValueError:
                return None
        key.append(t)
    return None


def _check_execution(ctx, validation_file, folds, cluster, n_jobs) -> int:
    """The folds (-v, default 5) after the checks of -v, VALIDATION, -j, --cluster and
    standard output that need no data."""
    if validation_file is not None and folds is not None:
        raise click.UsageError("VALIDATION replaces the folds; drop -v or VALIDATION", ctx)
    folds = 5 if folds is None else folds
    if folds < 2:
        raise click.BadParameter(f"needs at least 2 folds (got {folds})", ctx,
                                 param_hint="'-v'")
    if cluster is not None and n_jobs != 1:
        raise click.UsageError("-j is for local processes; the cluster's workers set the "
                               "parallelism of --cluster", ctx)
    resolve_jobs(n_jobs)
    if process.stdout_closed():
        raise DataError("-", "cannot write the results: standard output is closed")
    return folds


def _check_folds(ctx, train, data, classes, codes, folds: int, n_lab: int, given: bool,
                 log) -> int:
    """The folds of a one-solver grid, checked before any fit: a class with fewer labeled rows
    than folds would leave some folds without it (with one row, a training part without it:
    every fit of that fold fails), so every grid point would be scored on a different
    problem. The default 5 drops to the smallest class's rows (said); a -v given is kept or
    refused."""
    counts = {c: int(np.sum(data.y == c)) for c in classes}
    c_min = min(counts, key=lambda c: (counts[c], c))
    smallest = counts[c_min]
    if not given and 2 <= smallest < folds:
        k, why = auto.fold_plan(data.y, folds, codes)
        log.info("%s", why)
        return k
    if folds > n_lab:
        raise DataError(train, f"-v {folds} needs at least {folds} labeled rows "
                        f"(found {n_lab})")
    if smallest < folds:
        hint = (f"use -v {smallest} or fewer, or score on a VALIDATION file" if smallest >= 2
                else "label more rows of it, or score on a VALIDATION file (ssl-tune -a auto "
                "keeps the supervised svm when nothing can be cross-validated)")
        raise click.UsageError(
            f"{click.format_filename(train)}: class {codes.get(c_min, c_min)} has "
            f"{smallest} labeled "
            f"row{'s' if smallest != 1 else ''}, fewer than the {folds} folds "
            f"(-v {folds}): {hint}", ctx)
    return folds


@click.command(cls=SolverCommand, context_settings=CONTEXT, epilog=EPILOG,
               help="Cross-validated grid search over the parameters of one algorithm on TRAIN "
                    "(SVMlight format; label 0 = unlabeled, kept in every training fold); with "
                    "VALIDATION (labeled rows) each point trains on all of TRAIN and is scored "
                    "there instead.")
@click.argument("train", metavar="TRAIN", shell_complete=complete_file)
@click.argument("validation_file", metavar="[VALIDATION]", required=False,
                shell_complete=complete_file)
@click.option("-a", "--algorithm", default=None, metavar="NAME", shell_complete=complete_algorithm,
              help=f"solver: {', '.join(ALGORITHMS)} [default: svm]")
@click.option("-A", "svmlin_algorithm", default=None, metavar="N",
              help="SVMlin's algorithm number, an alias of -a: " + ", ".join(
                  f"{c} = {n}" for c, n in sorted(by_svmlin_code().items())))
@click.option("-G", "--grid", "grid_specs", multiple=True, metavar="NAME=VALUES",
              help="a grid axis, e.g. lambda=1e-4:1e-1:x10 or gamma=0.5,1,2 (repeatable)")
@click.option("-v", "--folds", type=int, default=None, metavar="N",
              help="N-fold stratified cross-validation over the labeled rows [default: 5]")
@click.option("--metric", type=click.Choice(METRICS), default=None,
              help="what to maximise [default: accuracy; pu for usmo]")
@click.option("-j", "--jobs", "n_jobs", type=int, default=1, show_default=True, metavar="N",
              help="local worker processes; -1 = all cores; at most the CPUs available and "
                   "the pieces of work there are")
@click.option("--cluster", default=None, metavar="ADDRESS",
              help="run on a Dask cluster, e.g. tcp://HOST:8786 (the data go to each worker "
                   "once; needs pip install 'dask[distributed]')")
@click.option("--resume", "resume_file", default=None, metavar="FILE",
              help="keep the result lines in FILE; points already there are not run again")
@click.option("--out", "out_model", default=None, metavar="MODEL",
              help="train the best point on all the data and write the model here")
@click.option("--no-warm-start", is_flag=True,
              help="fit every point from scratch (no seeding along the regularisation path)")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True,
              help="random seed of the folds")
@click.option("--zero-based", is_flag=True, help="feature indices start at 0 (default: 1)")
@click.option("--labels", "labels_file", default=None, metavar="FILE",
              help="labels in FILE, one per line; TRAIN then has features only")
@click.option("--unlabeled", "unlabeled_file", default=None, metavar="FILE",
              help="more training rows from FILE, all treated as unlabeled")
@click.option("--unlabeled-label", type=click.IntRange(-LABEL_MAX, LABEL_MAX), default=0,
              metavar="V", show_default=True,
              help="the label that marks unlabeled rows; with V != 0, label 0 is a class")
@click.option("--negatives-as-unlabeled", is_flag=True,
              help="treat rows labeled -1 as unlabeled [usmo]")
@click.option("--max-memory", default=None, metavar="SIZE",
              help="memory allowed for n×n matrices per fit, e.g. 2G [kernel and graph "
                   "solvers]")
@click.option("-q", "--quiet", is_flag=True, help="no progress on stderr")
@click.option("--verbose", is_flag=True, help="the solvers' progress too (with -j 1)")
@click.option("--plot", "plot_file", default=None, metavar="FILE.png|FILE.svg",
              shell_complete=complete_file,
              help="draw the score over the grid (one or two -G axes: a line, or a heat map "
                   "with contours; log axes where geometric; the best point marked); needs "
                   "matplotlib (pip install matplotlib)")
@version_option(PROG)
@user_errors(PROG)
def _tune(train, validation_file, algorithm, svmlin_algorithm, grid_specs, folds, metric,
          n_jobs, cluster, resume_file, out_model, no_warm_start, seed, zero_based,
          labels_file, unlabeled_file, unlabeled_label, negatives_as_unlabeled, max_memory, quiet,
          verbose, plot_file, **kwargs):
    ctx = click.get_current_context()
    names = _candidate_names(ctx, algorithm, svmlin_algorithm)
    if names is not None:
        return _tune_many(ctx, names, train, validation_file, grid_specs, folds, metric, n_jobs,
                          cluster, resume_file, out_model, no_warm_start, seed, zero_based,
                          labels_file, unlabeled_file, unlabeled_label, negatives_as_unlabeled,
                          max_memory, quiet, verbose, plot_file, kwargs)
    algo = choose_algorithm(ctx, algorithm, svmlin_algorithm)
    params = solver_params(ctx, algo, kwargs)
    run = run_options(ctx, algo, None, max_memory, negatives_as_unlabeled)
    if not grid_specs:
        raise click.UsageError("give at least one -G NAME=VALUES (names for -a "
                               f"{algo.name}: {', '.join(p.name for p in algo.params)})", ctx)
    fixed = {n[2:] for n in kwargs
             if ctx.get_parameter_source(n) == click.core.ParameterSource.COMMANDLINE}
    grid = parse_grid(grid_specs, algo.params, algo.name, fixed)
    folds_given = folds is not None
    folds = _check_execution(ctx, validation_file, folds, cluster, n_jobs)
    if plot_file is not None:
        from ssl_svm.cli import plot

        if plot.image_format(plot_file) is None:
            raise click.BadParameter(f"'{click.format_filename(plot_file)}' must end in .png "
                                     "or .svg (the image format)", ctx, param_hint="'--plot'")
        if len(grid.axes) > 2:
            raise click.BadParameter(f"draws one or two -G axes (this grid has "
                                     f"{len(grid.axes)})", ctx, param_hint="'--plot'")
        if not plot.available():
            raise click.UsageError("--plot needs matplotlib: pip install matplotlib (in a "
                                   "source checkout: pip install -e '.[plot]')", ctx)
    if algo.positive_unlabeled:  # before reading: the rule needs no data
        _check_metric(ctx, metric, algo, 2, validation_file is not None)
    inputs = {"TRAIN": train, "VALIDATION": validation_file, "--labels": labels_file,
              "--unlabeled": unlabeled_file}
    with Outputs(inputs) as outputs:
        out = outputs.add(out_model, "--out model")
        plot_out = outputs.add(plot_file, "--plot image")
        resume = None
        if resume_file is not None:
            outputs.check_distinct(resume_file, "--resume file")
            resume = ResumeFile(resume_file)
        log = setup_logging(PROG, quiet, verbose)
        if not verbose:  # per-point lines, not the solvers' own progress
            import logging

            logging.getLogger("ssl.solver").setLevel(logging.WARNING)

        prepared = load_training(train, algo, zero_based, labels_file, unlabeled_file,
                                 negatives_as_unlabeled, log, unlabeled_label=unlabeled_label)
        data, codes, classes = prepared.data, prepared.codes, prepared.classes
        n_lab = int(prepared.labeled.sum())
        validation = None
        if validation_file is not None:
            vclasses = classes if not algo.positive_unlabeled else [-1, 1]
            validation = read_validation(validation_file, zero_based, data.X.shape[1], vclasses,
                                          unlabeled_label, codes)
        n_classes = len(classes) if not algo.positive_unlabeled else 2
        metric = _check_metric(ctx, metric, algo, n_classes, validation is not None)
        if validation is None:
            folds = _check_folds(ctx, train, data, classes, codes, folds, n_lab, folds_given,
                                 log)

        if algo.positive_unlabeled and "prior" in dict(grid.axes):
            grid.axes = [(n, prior_sweep(data, v) if n == "prior" else v)
                         for n, v in grid.axes]
        problem = make_problem(algo.name, data.X, data.y, data.cost, params, run, folds, seed,
                               validation)
        warm = not no_warm_start and algo.warm_path in dict(grid.axes)
        groups = grid.groups(algo.warm_path if warm else None)
        points = grid.points()
        keys = [point_key(p) for p in points]

        if resume is not None:
            resume.open(problem.fingerprint(), metric)
        scores: dict[int, float] = {}
        if resume is not None:
            for k, key in enumerate(keys):
                if key in resume.done:
                    line, value = resume.done[key]
                    scores[k] = value
                    click.echo(line)
            sys.stdout.flush()
            log.info("resuming from %s: %d of %d points done", resume_file, len(scores), len(keys))
        todo = [[k for k in g if k not in scores] for g in groups]
        todo = [g for g in todo if g]
        n_todo = sum(len(g) for g in todo)
        n_folds = problem.n_folds
        fixed_text = " ".join(f"{k}={fmt(v)}" for k, v in params.items()
                              if k not in dict(grid.axes))
        runner = (Runner(n_jobs, cluster, scatter=[problem], tasks=len(todo) * n_folds)
                  if n_todo else None)
        log.info("%s: %d points%s, %s, metric %s%s; fixed %s", algo.name, grid.size,
                 f" × {n_folds} folds" if validation is None else " (validation file)",
                 runner.describe() if runner else "nothing to run", metric,
                 f", warm starts along {algo.warm_path}" if warm else "", fixed_text)

        progress = Progress(n_todo, "points", enabled=not quiet)
        truth = [held_out_labels(problem, f) for f in range(n_folds)]
        t0 = time.perf_counter()
        try:
            if runner is not None:
                tasks = ((problem, [(k, points[k]) for k in g], f, warm,
                          runner.threads_per_worker) for g in todo for f in range(n_folds))
                collect(runner.run(run_group, tasks), n_folds, keys, lambda k: truth, metric,
                        validation is None, progress, scores, resume)
        except MemoryLimitError as e:
            raise DataError(train, f"{algo.name} (a fold) {e}") from None
        finally:
            progress.clear()
            from ssl_svm.solvers import graph

            graph.drop_neighbours()  # what run_group kept in this process
            if runner is not None:
                runner.close()
            if resume is not None:
                resume.close()
        log.info("grid done in %.2f s", time.perf_counter() - t0)
        ok = [k for k in range(len(points)) if k in scores and not math.isnan(scores[k])]
        if not ok:
            raise DataError(train, "every grid point failed; see the lines above")
        best = max(ok, key=lambda k: (scores[k], -k))
        click.echo(f"best {keys[best]} {metric}={scores[best]:.6g}")
        sys.stdout.flush()
        if plot_out is not None:
            from ssl_svm.cli import plot

            tuples = list(grid.index_tuples())
            number = {t: k for k, t in enumerate(tuples)}
            how = (f"{n_folds}-fold cross-validation" if validation is None else
                   "validation file")
            plot_out.write(plot.draw(grid.axes, lambda t: scores.get(number[t], math.nan),
                                     tuples[best], metric, f"ssl-tune -a {algo.name}: {metric}, "
                                     f"{how}", plot.image_format(plot_file)))
            log.info("score plot written to %s", plot_file)
        if out_model is not None:
            tb = time.perf_counter()
            m = pipeline.train(prepared, pipeline.Request(algo, {**params, **points[best]},
                                                          run)).model
            from ssl_svm.formats.model_file import model_to_text

            out.write(model_to_text(m))
            log.info("trained %s with %s on all %d rows in %.2f s; model written to %s", algo.name,
                     keys[best], data.n_rows, time.perf_counter() - tb, out_model)
        outputs.commit()


def _candidate_names(ctx, algorithm, svmlin_algorithm) -> list[str] | None:
    """The solvers of ``-a A,B,...`` or ``-a auto`` (the supervised svm added when missing);
    None for one solver."""
    if algorithm is None or ("," not in algorithm and algorithm != "auto"):
        return None
    if svmlin_algorithm is not None:
        raise click.UsageError(f"-A names one solver; -a {algorithm} names several", ctx)
    names = list(PORTFOLIO) if algorithm == "auto" else [a.strip() for a in
                                                          algorithm.split(",")]
    for n in names:
        if n not in ALGORITHMS:
            raise click.BadParameter(f"unknown algorithm '{n}' (available: "
                                     f"{', '.join(ALGORITHMS)}, or auto)", ctx,
                                     param_hint="'-a'")
        if ALGORITHMS[n].positive_unlabeled:
            raise click.BadParameter(f"{n} learns from positive and unlabeled rows and is "
                                     "scored otherwise; tune it on its own (-a usmo)", ctx,
                                     param_hint="'-a'")
    if len(set(names)) != len(names):
        raise click.BadParameter(f"'{algorithm}' names a solver twice", ctx, param_hint="'-a'")
    if not any(n in SUPERVISED for n in names):
        names.insert(0, "svm")  # the baseline every semi-supervised candidate must beat
    return names


def _candidate_grids(ctx, names, grid_specs, fixed_of) -> dict:
    """{name: Grid} of each candidate: the -G specs that name it (ALGO.NAME=...) or one of its
    parameters (NAME=...), else its PORTFOLIO grid (its defaults alone when it has none)."""
    own: dict[str, list[str]] = {n: [] for n in names}
    for spec in grid_specs:
        name = spec.partition("=")[0].strip()
        algo_name, dot, pname = name.rpartition(".")
        if dot:
            if algo_name not in own:
                raise click.UsageError(f"-G {spec}: {algo_name} is not among the candidates "
                                       f"({', '.join(names)})", ctx)
            own[algo_name].append(spec[len(algo_name) + 1:])
            continue
        users = [n for n in names if ALGORITHMS[n].param(name) is not None]
        if not users:
            raise click.UsageError(f"-G {spec}: no candidate has a parameter {name} "
                                   f"({', '.join(names)})", ctx)
        for n in users:
            own[n].append(spec)
    grids = {}
    for n in names:
        specs = tuple(own[n]) or PORTFOLIO.get(n, ())
        grids[n] = parse_grid(specs, ALGORITHMS[n].params, n, fixed_of(n))
    return grids


def _tune_many(ctx, names, train, validation_file, grid_specs, folds, metric, n_jobs, cluster,
               resume_file, out_model, no_warm_start, seed, zero_based, labels_file,
               unlabeled_file, unlabeled_label, negatives_as_unlabeled, max_memory, quiet,
               verbose, plot_file, kwargs):
    """ssl-tune over several solvers: each candidate's grid on the same folds, then the rule of
    :func:`ssl_svm.selection.rules.select` between the best supervised and semi-supervised ones."""
    for flag, value in (("--resume", resume_file), ("--plot", plot_file),
                        ("--negatives-as-unlabeled", negatives_as_unlabeled or None)):
        if value is not None:
            raise click.UsageError(f"{flag} works with one solver (-a NAME), not with "
                                   f"-a {','.join(names)}", ctx)
    algos = [ALGORITHMS[n] for n in names]
    given = [n for n in kwargs
             if ctx.get_parameter_source(n) == click.core.ParameterSource.COMMANDLINE]
    for key in given:
        if not any(a.param(key[2:]) is not None for a in algos):
            flag = next(p.option for a in ALGORITHMS.values() for p in a.params
                        if p.name == key[2:])
            raise click.UsageError(f"option {flag} is not used by any of {', '.join(names)}",
                                   ctx)
    params = {a.name: solver_params(ctx, a, kwargs, own_only=True) for a in algos}
    if max_memory is not None and not any("max_memory" in a.run_options for a in algos):
        raise click.UsageError(f"option --max-memory is not used by any of {', '.join(names)}",
                               ctx)
    runs = {a.name: run_options(ctx, a, None, max_memory if "max_memory" in a.run_options
                                else None, False) for a in algos}
    grids = _candidate_grids(ctx, names, grid_specs,
                             lambda n: {k[2:] for k in given if ALGORITHMS[n].param(k[2:])})
    folds = _check_execution(ctx, validation_file, folds, cluster, n_jobs)
    inputs = {"TRAIN": train, "VALIDATION": validation_file, "--labels": labels_file,
              "--unlabeled": unlabeled_file}
    with Outputs(inputs) as outputs:
        out = outputs.add(out_model, "--out model")
        log = setup_logging(PROG, quiet, verbose)
        if not verbose:
            import logging

            logging.getLogger("ssl.solver").setLevel(logging.WARNING)
        semi = next((a for a in algos if a.uses_unlabeled), algos[0])
        prepared = load_training(train, semi, zero_based, labels_file, unlabeled_file, False,
                                 log, unlabeled_label=unlabeled_label)
        data, codes, classes = prepared.data, prepared.codes, prepared.classes
        validation = None
        if validation_file is not None:
            validation = read_validation(validation_file, zero_based, data.X.shape[1],
                                         classes, unlabeled_label, codes)
        metric = _check_metric(ctx, metric, semi, len(classes), validation is not None)
        progress = Progress(sum(g.size for g in grids.values()), "points", enabled=not quiet)

        def runner_for(problems, n_tasks):
            return Runner(n_jobs, cluster, scatter=problems, tasks=n_tasks)

        try:
            result = auto.choose(data, names, grids, params, runs, folds=folds, seed=seed,
                                 codes=codes, metric=metric, validation=validation,
                                 warm=not no_warm_start, runner_for=runner_for,
                                 progress=progress, log=log)
        except MemoryLimitError as e:
            raise DataError(train, f"a fold {e}") from None
        for note in result.notes:
            click.echo(f"# {note}")
        click.echo(result.best_line)
        sys.stdout.flush()
        if out_model is not None:
            # the winner made as ssl-train makes a model, its verdict the selection's
            from ssl_svm import pipeline, trust

            algo = ALGORITHMS[result.chosen]
            rows = for_solver(prepared, algo)
            t0 = time.perf_counter()
            from ssl_svm.solvers.host import budget

            with budget.history_free():  # its path from its rows alone, as in the selection
                made = pipeline.train(rows, pipeline.Request(
                    algo, {**params[result.chosen], **result.point}, runs[result.chosen],
                    seed=seed, check="none", source=train))
            if result.check is not None:
                trust.report(result.check, train)
            from ssl_svm.formats.model_file import model_to_text

            out.write(model_to_text(made.model))
            log.info("trained %s on all %d rows in %.2f s; model written to %s",
                     result.best_line[len("best "):].rsplit(f" {metric}=", 1)[0],
                     rows.data.n_rows, time.perf_counter() - t0, out_model)
        outputs.commit()


for _opt in param_options():
    _tune.params.append(_opt)


_tune.short_usage = """\
Usage: {prog} [OPTIONS] TRAIN [VALIDATION]

  Cross-validate a grid of a solver's parameters on TRAIN's labeled rows and print each
  point's score and the best; -a auto chooses among the solvers.

Solvers (-a NAME, or auto; -a NAME -h lists its options):
{solvers}

Common options:
  -G, --grid NAME=VALUES  a grid axis: lambda=1e-4:1e-1:x10, gamma_i=0.01,1, prior=auto
  -v, --folds N           N-fold stratified cross-validation (default 5)
  --metric NAME           accuracy, f1, auc or pu (positive-unlabeled)
  -j, --jobs N            local worker processes (-1: one per CPU)
  --out MODEL             train the best point on all rows and write it
  --resume FILE           keep the result lines in FILE; rerun to resume
  --plot FILE.png         draw the score over the grid
  --cluster ADDRESS       run the fits on a Dask cluster
  -q, --quiet             no progress; --verbose: the solvers' too
  --version               the version

Examples:
  {prog} -a svm -G lambda=1e-4:1e-1:x10 train.svm
  {prog} -a tsvm -G lambda=1e-4:1e-1:x10 -G lambda_u=0.1,1,10 -j -1 --out best.model train.svm
  {prog} -a auto train.svm                       # did the unlabeled rows help?

'{prog} --help' lists every option of every solver. Exit status: 0 ok, 1 bad input,
2 usage error.
"""


def main(argv=None):
    """Console entry point."""
    return process.run(_tune, PROG, argv)


if __name__ == "__main__":
    raise SystemExit(main())

