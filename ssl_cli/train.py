"""ssl-train: read an SVMlight file, train the chosen solver, write a model file.

The solver options are generated from the parameter declarations in ``solvers.registry``.
numpy, the reader, the model writer and the solver are imported where a run needs them, not
at module level: ``--help`` and option errors answer without loading numpy, scipy or numba.
"""

from __future__ import annotations

import logging
import os
import textwrap
import time
from dataclasses import dataclass

import click

from ssl_svm import pipeline, training
from ssl_svm.cli import process
from ssl_svm.cli.common import (
    CONTEXT,
    libsvm_b_option,
    probability_flag,
    setup_logging,
    user_errors,
    version_option,
)
from ssl_svm.cli.outputs import Outputs
from ssl_svm.cli.solver_options import (
    SolverCommand,
    apply_c,
    choose_algorithm,
    complete_algorithm,
    complete_file,
    fmt,
    param_options,
    run_options,
    solver_params,
)
from ssl_svm.formats import LABEL_MAX
from ssl_svm.formats.errors import DataError
from ssl_svm.solvers.errors import ProblemError
from ssl_svm.solvers.params import TV_OUT_OF_SAMPLE
from ssl_svm.solvers.registry import ALGORITHMS, by_svmlin_code
from ssl_svm.trust import CHECKS

PROG = "ssl-train"


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, 88)


def _epilog() -> str:
    lines = ["\b", "Algorithms (-a NAME; SVMlin's -A N where given):"]
    for a in ALGORITHMS.values():
        code = f" (-A {a.svmlin_code})" if a.svmlin_code is not None else ""
        lines.append(f"  {a.name}{code}: {a.summary}")
        lines.append("      options: " + " ".join(
            f"{p.flags[0]} {fmt(p.default)}" for p in a.params))
    lines += ["", "\b", "Examples:",
              "  ssl-train -a svm -W 0.001 train.svm             # writes train.svm.model",
              "  ssl-train -a rls -W 0.01 -Cp 2 train.svm my.model",
              "  ssl-train -a svm -v 5 train.svm                 # 5-fold cross-validation",
              "  ssl-train -a svm -c 4 -v 5 train.svm            # LIBSVM's C: λ = 1/(2C)",
              "  ssl-train --labels train.labels features.svm     # SVMlin's split layout",
              "  ssl-train -a lapsvm -t rbf -g 0.01 -k 6 --gamma-i 1 train.svm",
              "  ssl-train -a lapsvm --early-stop validation --validation val.svm train.svm",
              "  ssl-train -a cheeger-rls -g 0.03 -l unlabeled.pred train.svm",
              "  ssl-train -a tvrls --tv-gamma 0.03 --eta 100 digits.svm   # multi-class",
              "  ssl-train -a tsvm --cluster tcp://scheduler:8786 big.svm big.model",
              "", "\b", *_wrap(TV_OUT_OF_SAMPLE),
              "", "Exit status: 0 ok, 1 data or model error, 2 usage error."]
    return "\n".join(lines)


def load_training(train, algo, zero_based, labels_file, unlabeled_file, negatives_as_unlabeled,
                  log, unlabeled_label=0, keep_unlabeled=False):
    """Read TRAIN (+ --unlabeled rows) and prepare them for ``algo``
    (:func:`ssl_svm.training.prepare`)."""
    with process.deferred_signals():
        from ssl_svm.formats.svmlight import read_dataset

        _load_solver(algo)
    t0 = time.perf_counter()
    data = read_dataset(train, zero_based=zero_based, labels=labels_file)
    log.info("read %s: %d rows, %d features, %d stored values (%.2f s)", train, data.n_rows,
             data.X.shape[1], data.X.nnz, time.perf_counter() - t0)
    extra = None
    if unlabeled_file is not None:
        extra = read_dataset(unlabeled_file, zero_based=zero_based)
        log.info("read %s: %d more rows, all treated as unlabeled", unlabeled_file, extra.n_rows)
    return training.prepare(algo, data, unlabeled_label=unlabeled_label,
                            negatives_as_unlabeled=negatives_as_unlabeled, extra=extra,
                            keep_unlabeled=keep_unlabeled)


def read_validation(path, zero_based, n_features, classes, unlabeled_label=0, codes=None):
    """Labeled validation rows from ``path``, their labels in the internal codes."""
    from ssl_svm.formats.svmlight import read_dataset

    data = read_dataset(path, zero_based=zero_based, n_features=n_features)
    return training.validation_rows(data, classes, unlabeled_label, codes)


def _load_solver(algo) -> None:
    """Import ``algo``'s module and, unless it starts numba only when a fit needs it (the
    linear solvers: small fits run on numpy alone), numba's thread pool; numba's first use
    (here or in the fit) holds SIGINT and SIGTERM and says when it compiles."""
    from ssl_svm.solvers import backend as backends
    from ssl_svm.solvers.host import numba_start

    numba_start.set_start(guard=process.deferred_signals, label=algo.name)
    algo.fit  # noqa: B018 -- imports the solver's module
    if not backends.has_numpy_path(algo.name):
        numba_start.start_numba(what=algo.name)


@dataclass
class Job:
    """What one ssl-train run reads and writes, as its options give them (the solver and its
    parameters travel beside it)."""

    train: str
    model: str | None
    folds: int | None
    seed: int
    zero_based: bool
    labels_file: str | None
    unlabeled_file: str | None
    validation_file: str | None
    unlabeled_label: int
    negatives_as_unlabeled: bool
    transductive_file: str | None
    values: bool
    keep_comments: bool
    probability: bool
    init_model: str | None
    check: str
    verbose: bool


@click.command(cls=SolverCommand, context_settings=CONTEXT, epilog=_epilog(),
               help="Train a model on TRAIN (SVMlight format; label 0 = unlabeled) and write it "
                    "to MODEL (default: TRAIN's file name + '.model' in the current folder).")
@click.argument("train", metavar="TRAIN", shell_complete=complete_file)
@click.argument("model", metavar="[MODEL]", required=False, shell_complete=complete_file)
@click.option("-a", "--algorithm", default=None, metavar="NAME", shell_complete=complete_algorithm,
              help=f"solver: {', '.join(ALGORITHMS)} [default: svm]")
@click.option("-A", "svmlin_algorithm", default=None, metavar="N",
              help="SVMlin's algorithm number, an alias of -a: " + ", ".join(
                  f"{c} = {n}" for c, n in sorted(by_svmlin_code().items())))
@click.option("-v", "--cross-validation", "folds", type=int, default=None, metavar="N",
              help="N-fold stratified cross-validation over the labeled rows instead of "
                   "training; prints 'Cross Validation Accuracy = x%'")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True,
              help="random seed (cross-validation folds)")
@click.option("-c", "libsvm_c", type=float, default=None, metavar="C",
              help="LIBSVM's/liblinear's C, for tools/grid.py: sets the regulariser to "
                   "1/(2C) (-W λ; --gamma-a for lapsvm, laprls), which makes svm and rls "
                   "exactly liblinear's ½‖w‖² + C Σ loss² (-s 2 / -s 11 style)")
@click.option("--zero-based", is_flag=True, help="feature indices start at 0 (default: 1)")
@click.option("--labels", "labels_file", default=None, metavar="FILE",
              help="labels in FILE, one per line; TRAIN then has features only (SVMlin's "
                   "layout)")
@click.option("--unlabeled", "unlabeled_file", default=None, metavar="FILE",
              help="more training rows from FILE, all treated as unlabeled (their labels are "
                   "ignored)")
@click.option("--unlabeled-label", type=click.IntRange(-LABEL_MAX, LABEL_MAX), default=0,
              metavar="V", show_default=True,
              help="the label that marks unlabeled rows; with V != 0, label 0 is a class like "
                   "any other (digits) and the model predicts it")
@click.option("-l", "--transductive", "transductive_file", default=None, metavar="FILE",
              help="write predictions for the unlabeled training rows (TRAIN's, then "
                   "--unlabeled's, in file order) to FILE, as ssl-predict does (SVMlight's -l)")
@click.option("--values", is_flag=True, help="with -l: also write the decision value(s)")
@click.option("--keep-comments", is_flag=True,
              help="with -l: end each line with its row's comment ('# id') from TRAIN or "
                   "--unlabeled (files, not stdin: they are read again)")
@click.option("--probability", is_flag=True,
              help="also fit a probability calibration (LIBSVM's -b 1: a sigmoid of the "
                   "decision values, from 5-fold cross-validation of the labeled rows) for "
                   "ssl-predict --probability")
@libsvm_b_option()
@click.option("--init", "init_model", default=None, metavar="MODEL",
              shell_complete=complete_file,
              help="start from MODEL, a model of the same algorithm (SVMlight's -y): linear "
                   "models seed w, kernel models (trained on TRAIN's first rows) seed α "
                   "[rls, svm, lapsvm, laprls]")
@click.option("--validation", "validation_file", default=None, metavar="FILE",
              help="labeled validation rows for early stopping (--early-stop validation or "
                   "mixed) [lapsvm, laprls]")
@click.option("--negatives-as-unlabeled", is_flag=True,
              help="treat rows labeled -1 as unlabeled (and say so) [usmo]; without it a -1 "
                   "row is an error")
@click.option("--max-memory", default=None, metavar="SIZE",
              help="memory allowed for n×n matrices (kernel, Newton system) and landmark "
                   "features, e.g. 500M, 12G; plain numbers are MiB [default: half the RAM] "
                   "[lapsvm, laprls, usmo, tvrls, tvsvm, cheeger-rls, cheeger-svm]")
@click.option("--check", type=click.Choice(CHECKS), default="auto", show_default=True,
              help="after a semi-supervised fit, cross-validate it and the supervised svm on "
                   "the same folds of the labeled rows and say the verdict (harm proven, no "
                   "harm, or unverified with the loss the labels cannot rule out): auto = "
                   "always, its folds on every row up to 2,000 unlabeled rows, above on a "
                   "seeded 2,000 of them or a tenth, whichever is more; cv = its folds on "
                   "every row; none = never")
@click.option("--cluster", default=None, metavar="ADDRESS",
              help="train on a Dask cluster, e.g. tcp://HOST:8786: the rows stay on the "
                   "workers, each reading its part of TRAIN [rls, svm, tsvm, da, lapsvm, "
                   "laprls] (needs pip install 'dask[distributed]'; docs: cluster use)")
@click.option("-q", "--quiet", is_flag=True, help="no progress output (warnings still shown)")
@click.option("--verbose", is_flag=True, help="more solver detail on stderr")
@version_option(PROG)
@user_errors(PROG)
def _train(train, model, algorithm, svmlin_algorithm, folds, seed, libsvm_c, zero_based,
           labels_file, unlabeled_file, unlabeled_label, transductive_file, values,
           keep_comments, probability, libsvm_b, init_model, validation_file,
           negatives_as_unlabeled, max_memory, check, cluster, quiet, verbose, **kwargs):
    ctx = click.get_current_context()
    probability = probability_flag(probability, libsvm_b)
    algo = choose_algorithm(ctx, algorithm, svmlin_algorithm)
    params = solver_params(ctx, algo, kwargs, grid_py=libsvm_c is not None)
    if libsvm_c is not None:
        apply_c(ctx, algo, params, libsvm_c)
    run = run_options(ctx, algo, validation_file, max_memory, negatives_as_unlabeled)
    if folds is not None and algo.positive_unlabeled:
        raise click.UsageError(f"-v measures accuracy on held-out labeled rows, which are all "
                               f"positive for {algo.name}; tune it with a PU metric instead",
                               ctx)
    if folds is not None and folds < 2:
        raise click.BadParameter(f"needs at least 2 folds (got {folds})", ctx,
                                 param_hint="'-v'")
    if folds is None and model is None:
        if train == "-":
            raise click.UsageError("give MODEL when the training data come from stdin", ctx)
        model = os.path.basename(train) + ".model"
    if folds is not None and model is not None:
        raise click.UsageError("-v writes no model; drop MODEL or -v", ctx)
    if folds is not None and "validation" in run:
        raise click.UsageError("-v holds out its own folds; drop --validation or -v", ctx)
    if folds is not None and transductive_file is not None:
        raise click.UsageError("-v trains no final model, so -l has nothing to write", ctx)
    if values and transductive_file is None:
        raise click.UsageError("--values goes with -l FILE", ctx)
    if init_model is not None and not algo.init_start:
        starts = ", ".join(a.name for a in ALGORITHMS.values() if a.init_start)
        raise click.UsageError(f"-a {algo.name} has no warm start from a model; --init works "
                               f"with {starts}", ctx)
    if init_model is not None and folds is not None:
        raise click.UsageError("-v trains from scratch on each fold; drop --init or -v", ctx)
    if probability and folds is not None:
        raise click.UsageError("-v writes no model, so --probability has nothing to calibrate",
                               ctx)
    if probability and algo.positive_unlabeled:
        raise click.UsageError(f"--probability calibrates on held-out labeled rows of every "
                               f"class; {algo.name}'s labeled rows are all positive", ctx)
    if keep_comments and transductive_file is None:
        raise click.UsageError("--keep-comments goes with -l FILE", ctx)
    if keep_comments and "-" in (train, unlabeled_file):
        raise click.UsageError("--keep-comments reads the rows' comments again, so TRAIN and "
                               "--unlabeled must be files, not stdin", ctx)
    if check == "cv" and (not algo.uses_unlabeled or algo.positive_unlabeled):
        raise click.UsageError(f"--check cv compares a semi-supervised fit with the supervised "
                               f"svm; -a {algo.name} is not one", ctx)
    if folds is not None and process.stdout_closed():
        raise DataError("-", "cannot write the cross-validation accuracy: standard output "
                        "is closed")
    if cluster is not None:
        _cluster_usage(ctx, algo, train, labels_file, init_model, probability, run,
                       keep_comments, check)
    log = setup_logging(PROG, quiet, verbose)
    job = Job(train, model, folds, seed, zero_based, labels_file, unlabeled_file,
              validation_file, unlabeled_label, negatives_as_unlabeled, transductive_file,
              values, keep_comments, probability, init_model, check, verbose)
    if cluster is not None:
        with Outputs({"TRAIN": train, "--unlabeled": unlabeled_file}) as outputs:
            model_out = outputs.add(model, "model") if folds is None else None
            pred_out = outputs.add(transductive_file, "-l predictions")
            try:
                _train_cluster(cluster, job, algo, params, log, outputs, model_out, pred_out)
            except ProblemError as e:
                raise DataError(train, str(e)) from None
        return
    with Outputs({"TRAIN": train, "--labels": labels_file, "--unlabeled": unlabeled_file,
                  "--validation": validation_file}) as outputs:
        model_out = outputs.add(model, "model") if folds is None else None
        pred_out = outputs.add(transductive_file, "-l predictions")
        try:
            _train_run(job, algo, params, run, log, outputs, model_out, pred_out)
        except ProblemError as e:  # the data in TRAIN do not suit the method: say which file
            raise DataError(train, str(e)) from None


def _train_run(job: Job, algo, params, run, log, outputs, model_out, pred_out):
    from ssl_svm.formats.model_file import model_to_text, read_model
    from ssl_svm.formats.predictions import format_lines
    from ssl_svm.solvers.crossval import cross_validate

    t0 = time.perf_counter()
    prepared = load_training(job.train, algo, job.zero_based, job.labels_file, job.unlabeled_file,
                             job.negatives_as_unlabeled, log, unlabeled_label=job.unlabeled_label,
                             keep_unlabeled=pred_out is not None)
    data, codes, classes = prepared.data, prepared.codes, prepared.classes
    n_lab = int(prepared.labeled.sum())
    be = pipeline.command_backend(algo, data, params, run,
                                  job.check if job.folds is None else "none")
    log.info("%s: %s backend=%s", algo.name,
             " ".join(f"{k}={fmt(v)}" for k, v in params.items()), be.describe())
    log.info("%d labeled rows, classes %s%s", n_lab,
             " ".join(str(codes.get(c, c)) for c in classes),
             " (one-vs-rest)" if len(classes) > 2 else "")

    if job.folds is not None:
        if not job.verbose:  # one line per fold, not per class and fold
            logging.getLogger("ssl.solver").setLevel(logging.WARNING)
        if job.folds > n_lab:
            raise DataError(job.train, f"-v {job.folds} needs at least {job.folds} labeled "
                            f"rows (found {n_lab})")
        pred = cross_validate(algo.fit, data.X, data.y, data.cost, params, job.folds, job.seed,
                              on_fold=lambda i, k: log.info("fold %d of %d", i + 1, k))
        lab = data.y != 0
        c, t = int((pred[lab] == data.y[lab]).sum()), int(lab.sum())
        click.echo(f"Cross Validation Accuracy = {100.0 * c / t:g}%")
        return

    if "validation" in run:
        run["validation"] = read_validation(run["validation"], job.zero_based, data.X.shape[1],
                                            classes, job.unlabeled_label, codes)
        log.info("read %s: %d validation rows", job.validation_file,
                 run["validation"][0].shape[0])
    init = read_model(job.init_model) if job.init_model is not None else None
    result = pipeline.train(prepared, pipeline.Request(
        algo, params, run, probability=job.probability, seed=job.seed, init=init,
        init_source=job.init_model or "", check=job.check, source=job.train,
        transductive=pred_out is not None, verbose=job.verbose))
    m = result.model
    if job.verbose:
        from ssl_svm.solvers.host.pools import describe_threads

        log.debug("threads: %s", describe_threads())
        log.debug("timings: %s", " ".join(f"{k}={v[0]:.3g} s" for k, v in m.stats.items()
                                          if k.endswith("_time")))
    model_out.write(model_to_text(m))
    if pred_out is not None:
        F_unl = result.values
        comments = None
        if job.keep_comments:
            rows = (~prepared.labeled).nonzero()[0]
            comments = _comments([(job.train if i < prepared.n_given else job.unlabeled_file,
                                   int(n)) for i, n in zip(rows, prepared.unlabeled_lines)])
        pred_out.write(format_lines(m, F_unl, job.values, comments))
    outputs.commit()
    if pred_out is not None:
        log.info("predictions for %d unlabeled rows written to %s", F_unl.shape[0],
                 job.transductive_file)
    obj = m.stats.get("objective")
    log.info("trained %s in %.3f s%s; model written to %s", algo.name,
             time.perf_counter() - t0,
             f", objective {' '.join(f'{v:.10g}' for v in obj)}" if obj else "", job.model)


def _cluster_usage(ctx, algo, train, labels_file, init_model, probability, run, keep_comments,
                   check):
    """Usage errors of --cluster: the algorithms and options a cluster fit has."""
    from ssl_svm.cluster import ALGORITHMS as ON_CLUSTER

    if algo.name not in ON_CLUSTER:
        why = ("its solvers update the model after every row or pair of rows, so they run in "
               "one process (a million text rows train in under a minute there)"
               if algo.name == "usmo" else "its graph total variation solvers run in one "
               "process (lapsvm and laprls train on a cluster in their landmark form)")
        raise click.UsageError(f"--cluster trains {', '.join(ON_CLUSTER)}; -a {algo.name} "
                               f"needs all its rows in one process: {why}", ctx)
    if train == "-":
        raise click.UsageError("--cluster reads TRAIN on the workers or in pieces: give a file, "
                               "not stdin", ctx)
    for given, flag, why in ((labels_file, "--labels", "join the labels to the rows first "
                              "(paste -d' ' labels features)"),
                             (init_model, "--init", "a cluster fit starts from w = 0"),
                             (probability or None, "--probability", "calibrate with ssl-train "
                              "-v on a sample"),
                             ("validation" in run or None, "--validation", "it stops the "
                              "exact form's pcg early, and a cluster fit is the landmark form"),
                             (keep_comments or None, "--keep-comments", "the rows' comments "
                              "stay on the workers")):
        if given is not None:
            raise click.UsageError(f"--cluster does not take {flag}: {why}", ctx)


def _train_cluster(address, job: Job, algo, params, log, outputs, model_out, pred_out):
    """ssl-train --cluster: read on the workers, train (or -v) there, write here."""
    from ssl_svm import cluster, transport
    from ssl_svm.cli.parallel import connect
    from ssl_svm.formats.model_file import model_to_text

    t0 = time.perf_counter()
    client = connect(address)

    def work(blocks):
        """The fit (or -v) on the blocks read, and the -l predictions written from them."""
        prepared = cluster.prepare(blocks, algo, job.train, job.unlabeled_label)
        log.info("%s: %s", algo.name, " ".join(f"{k}={fmt(v)}" for k, v in params.items()))
        log.info("%d labeled rows, classes %s%s; on %d workers", prepared.n_lab,
                 " ".join(str(prepared.codes.get(c, c)) for c in prepared.classes),
                 " (one-vs-rest)" if len(prepared.classes) > 2 else "", len(blocks.socks))
        if job.folds is not None:
            if job.folds > prepared.n_lab:
                raise DataError(job.train, f"-v {job.folds} needs at least {job.folds} labeled "
                                f"rows (found {prepared.n_lab})")
            return cluster.cross_validate(prepared, algo, params, job.folds, job.seed,
                                          on_fold=lambda i, k: log.info("fold %d of %d",
                                                                        i + 1, k)), 0
        m = pipeline.train(prepared, pipeline.Request(algo, params, check=job.check,
                                                      seed=job.seed, source=job.train)).model
        if pred_out is None:
            return m, 0
        try:
            return m, cluster.write_transductive(prepared, m, pred_out, job.values)
        except transport.WorkerLost as e:  # lines already written: no starting over
            raise DataError(e.where, f"{e.message} while the -l predictions were written"
                            ) from None

    try:
        files = [(job.train, False)] + ([(job.unlabeled_file, True)] if job.unlabeled_file else [])
        m, n_pred = transport.run(client, files, job.zero_based, work,
                                  kind=cluster.block_kind(algo.name))
        if job.folds is not None:
            click.echo(f"Cross Validation Accuracy = {100.0 * m:g}%")
            return
        model_out.write(model_to_text(m))
        outputs.commit()
    finally:
        client.close()
    if pred_out is not None:
        log.info("predictions for %d unlabeled rows written to %s", n_pred, job.transductive_file)
    obj = m.stats.get("objective")
    log.info("trained %s in %.3f s%s; model written to %s", algo.name,
             time.perf_counter() - t0,
             f", objective {' '.join(f'{v:.10g}' for v in obj)}" if obj else "", job.model)


def _comments(origins: list[tuple[str, int]]) -> list[str]:
    """The comment of each (file, line), reading each file once more."""
    from ssl_svm.formats.svmlight import file_comments

    out = {}
    for path in dict.fromkeys(p for p, _ in origins):
        lines = [n for p, n in origins if p == path]
        out.update(zip(((path, n) for n in lines), file_comments(path, lines)))
    return [out[o] for o in origins]


for _opt in param_options():
    _train.params.append(_opt)


_train.short_usage = """\
Usage: {prog} [OPTIONS] TRAIN [MODEL]

  Train a model on TRAIN (SVMlight format; label 0 = unlabeled) and write it to MODEL
  (default: TRAIN's file name + '.model' in the current folder).

Solvers (-a NAME, default svm; -a NAME -h lists its options):
{solvers}

Common options:
  -W, --lambda λ         regularisation (auto by default for rls, svm, tsvm, da, usmo)
  -v N                   N-fold cross-validation of the labeled rows instead of training
  -l FILE                write the unlabeled rows' predictions (SVMlight's -l); --values too
  --unlabeled FILE       more training rows, all unlabeled
  --probability, -b 1    also fit a probability calibration (for ssl-predict --probability)
  --check auto|cv|none   after the fit, did the unlabeled rows help? (against the svm)
  --init MODEL           start from a model of the same solver
  --max-memory SIZE      memory allowed for n×n matrices, e.g. 12G
  --cluster ADDRESS      train rls, svm, tsvm, da, lapsvm or laprls on a Dask cluster
  -q, --quiet            no progress (warnings still shown); --verbose: more
  --version              the version

Examples:
  {prog} -a tsvm -W 0.001 train.svm train.model
  {prog} -a lapsvm -t rbf -k 10 -v 5 train.svm
  {prog} -a usmo --prior auto pu.svm pu.model

'{prog} --help' lists every option of every solver. Exit status: 0 ok, 1 bad input,
2 usage error.
"""


def main(argv=None):
    """Console entry point."""
    return process.run(_train, PROG, argv)


if __name__ == "__main__":
    raise SystemExit(main())
