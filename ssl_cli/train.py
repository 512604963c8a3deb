"""ssl-train: read an SVMlight file, train the chosen solver, write a model file.

The solver options are generated from the parameter declarations in ``solvers.registry``.
numpy, the reader, the model writer and the solver are imported where a run needs them, not
at module level: ``--help`` and option errors answer without loading numpy, scipy or numba.
"""

from __future__ import annotations

import logging
import math
import os
import textwrap
import time

import click

from formats import LABEL_MAX
from formats.errors import DataError
from solvers.params import TV_OUT_OF_SAMPLE
from solvers.registry import ALGORITHMS, all_params, by_svmlin_code
from ssl_cli import process
from ssl_cli.common import CONTEXT, setup_logging, user_errors
from ssl_cli.outputs import Outputs
from ssl_cli.solver_options import (
    SolverCommand,
    complete_algorithm,
    complete_file,
    fmt,
    param_options,
)

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
              "", "\b", *_wrap(TV_OUT_OF_SAMPLE),
              "", "Exit status: 0 ok, 1 data or model error, 2 usage error."]
    return "\n".join(lines)


def _choose_algorithm(ctx, algorithm: str | None, svmlin: str | None):
    codes = by_svmlin_code()
    if svmlin is not None:
        try:
            code = int(svmlin)
        except ValueError:
            code = None
        if code not in codes:
            raise click.BadParameter(
                f"'{svmlin}' is not one of {', '.join(str(c) for c in sorted(codes))} "
                f"({', '.join(f'{c} = {n}' for c, n in sorted(codes.items()))})",
                ctx, param_hint="'-A'")
        name = codes[code]
        if algorithm is not None and algorithm != name:
            raise click.UsageError(f"-A {svmlin} means -a {name}, but -a {algorithm} was given",
                                   ctx)
        return ALGORITHMS[name]
    name = algorithm or "svm"
    if name not in ALGORITHMS:
        raise click.BadParameter(f"unknown algorithm '{name}' (available: "
                                 f"{', '.join(ALGORITHMS)})", ctx, param_hint="'-a'")
    return ALGORITHMS[name]


def _solver_params(ctx, algo, kwargs) -> dict:
    params = algo.defaults()
    for name, uses in all_params().items():
        key = f"p_{name}"
        if ctx.get_parameter_source(key) != click.core.ParameterSource.COMMANDLINE:
            continue
        p = algo.param(name)
        if p is None:
            users = ", ".join(a.name for a, _ in uses)
            raise click.UsageError(f"option {uses[0][1].option} is not used by -a {algo.name} "
                                   f"(it is used by: {users})", ctx)
        try:
            params[name] = p.check(kwargs[key])
        except ValueError as e:
            raise click.UsageError(str(e), ctx) from None
    return params


def _run_options(ctx, algo, validation_file, max_memory, negatives_as_unlabeled) -> dict:
    """Check --validation / --max-memory / --negatives-as-unlabeled against the solver;
    returns what fit() gets."""
    run = {}
    for name, flag, value in (("validation", "--validation", validation_file),
                              ("max_memory", "--max-memory", max_memory),
                              ("negatives_as_unlabeled", "--negatives-as-unlabeled",
                               True if negatives_as_unlabeled else None)):
        if value is None:
            continue
        if name not in algo.run_options:
            users = ", ".join(a.name for a in ALGORITHMS.values() if name in a.run_options)
            raise click.UsageError(f"option {flag} is not used by -a {algo.name} (it is used "
                                   f"by: {users})", ctx)
        if name == "max_memory":
            from solvers.kernels import parse_memory

            try:
                run[name] = parse_memory(value)
            except ValueError as e:
                raise click.BadParameter(str(e), ctx, param_hint="'--max-memory'") from None
        else:
            run[name] = value
    early = None
    if algo.param("early_stop") is not None:
        early = ctx.params.get("p_early_stop") or algo.param("early_stop").default
    if early in ("validation", "mixed") and "validation" not in run:
        raise click.UsageError(f"--early-stop {early} needs --validation FILE", ctx)
    return run


def _apply_c(ctx, algo, params: dict, c: float) -> None:
    """-c C (LIBSVM's C, as tools/grid.py passes it): the regulariser becomes 1/(2C)."""
    if not (c > 0 and math.isfinite(c)):
        raise click.BadParameter(f"must be in (0, inf) (got {c:g})", ctx, param_hint="'-c'")
    name = "lambda" if algo.param("lambda") else "gamma_a" if algo.param("gamma_a") else None
    if name is None:
        raise click.UsageError(f"-c is not used by -a {algo.name}", ctx)
    p = algo.param(name)
    if ctx.get_parameter_source(f"p_{name}") == click.core.ParameterSource.COMMANDLINE:
        raise click.UsageError(f"-c sets {p.option}; give one or the other", ctx)
    try:
        params[name] = p.check(1.0 / (2.0 * c))
    except ValueError as e:
        raise click.UsageError(f"-c {c:g}: {e}", ctx) from None


def _check_pu_labels(path, data, negatives_as_unlabeled, log) -> None:
    """Positive-unlabeled input: +1 and 0 only; -1 becomes 0 with --negatives-as-unlabeled."""
    import numpy as np

    neg = data.y == -1
    other = np.flatnonzero((data.y != 1) & (data.y != 0) & ~neg)
    if other.size:
        raise DataError(path, f"label {data.y[other[0]]:g}: positive-unlabeled learning takes "
                        "+1 (labeled positive) and 0 (unlabeled)", int(data.lines[other[0]]))
    if neg.any():
        if not negatives_as_unlabeled:
            first = np.flatnonzero(neg)[0]
            raise DataError(path, "label -1: positive-unlabeled learning takes +1 (labeled "
                            "positive) and 0 (unlabeled); add --negatives-as-unlabeled to "
                            "treat -1 rows as unlabeled", int(data.lines[first]))
        data.y[neg] = 0.0
        log.warning("treating %d rows labeled -1 as unlabeled (--negatives-as-unlabeled)",
                    int(neg.sum()))
    if not np.any(data.y == 1):
        raise DataError(path, "no labeled positive rows (label +1)")


# n-long vectors a linear solver holds at once (weights, Newton point, CG's r, p, q, the
# preconditioner, a buffer per thread, the model's copy): its memory is this many × 8 × width
LINEAR_VECTORS = 12


def _check_width(path, data, n_classes) -> None:
    """A feature index so large that the weight vectors cannot fit: an error naming the row
    that holds it and the memory it would need, before the solver tries to allocate it."""
    from solvers.kernels import default_memory_limit, human_bytes
    from solvers.runtime import default_threads

    d = data.X.shape[1]
    functions = 1 if n_classes <= 2 else n_classes
    need = 8 * (d + 1) * (LINEAR_VECTORS + default_threads() + functions)
    limit = default_memory_limit()
    if need <= limit:
        return
    import numpy as np

    X = data.X
    at = int(np.argmax(X.indices)) if X.nnz else 0
    row = int(np.searchsorted(X.indptr, at, side="right") - 1)
    raise DataError(path, f"feature index {d} makes the weight vectors need "
                    f"{human_bytes(need)}, more than the memory limit of {human_bytes(limit)} "
                    "(half the RAM); renumber the features densely", int(data.lines[row]))


def relabel(path, data, unlabeled_label: int) -> dict[int, int]:
    """--unlabeled-label V: rows labeled V become unlabeled (0 inside the program, the
    solvers' convention), and rows labeled 0, then a real class, take the smallest positive
    integer no row uses. Returns {internal code: real label} for :func:`restore_labels`
    (empty when V = 0, the default)."""
    import numpy as np

    if unlabeled_label == 0:
        return {}
    y = data.y
    zero = y == 0
    codes = {}
    if zero.any():
        used = set(np.unique(y).astype(int).tolist())
        code = next(c for c in range(1, len(used) + 2) if c not in used)
        codes[code] = 0
        y[zero] = code
    y[y == unlabeled_label] = 0.0
    return codes


def restore_labels(model, codes: dict[int, int]) -> None:
    """The model's class labels back from the internal codes of :func:`relabel`."""
    if codes:
        model.labels = [codes.get(int(v), int(v)) for v in model.labels]


def load_training(train, algo, zero_based, labels_file, unlabeled_file, negatives_as_unlabeled,
                  log, keep_unlabeled=False, unlabeled_label=0):
    """Read TRAIN (+ --unlabeled rows) for ``algo`` and check its labels.

    Returns (data, labeled mask of the rows read, their unlabeled rows' X and (file, line)
    origins if ``keep_unlabeled``, the label codes of :func:`relabel`). Unlabeled rows are
    dropped (and that said) for solvers that do not use them; a single class is an error
    except for positive-unlabeled solvers.
    """
    with process.deferred_signals():
        import numpy as np

        from formats.svmlight import read_dataset, stack_unlabeled
        from solvers.multiclass import class_labels

        _load_solver(algo)
    t0 = time.perf_counter()
    data = read_dataset(train, zero_based=zero_based, labels=labels_file)
    log.info("read %s: %d rows, %d features, %d stored values (%.2f s)", train, data.n_rows,
             data.X.shape[1], data.X.nnz, time.perf_counter() - t0)
    if algo.positive_unlabeled and unlabeled_label != 0 and np.any(data.y == 0):
        first = int(data.lines[np.flatnonzero(data.y == 0)[0]])
        raise DataError(labels_file or train, f"label 0: positive-unlabeled learning takes +1 "
                        f"(labeled positive) and {unlabeled_label} (unlabeled, "
                        f"--unlabeled-label)", first)
    codes = relabel(train, data, unlabeled_label)
    if unlabeled_label != 0:
        log.info("label %d marks the unlabeled rows (%d rows)%s", unlabeled_label,
                 int(np.sum(data.y == 0)), "; label 0 is a class" if codes else "")
    n_train = data.n_rows
    if unlabeled_file is not None:
        extra = read_dataset(unlabeled_file, zero_based=zero_based)
        log.info("read %s: %d more rows, all treated as unlabeled", unlabeled_file, extra.n_rows)
        data = stack_unlabeled(data, extra)
    if algo.linear_model:
        _check_width(train, data, np.unique(data.y[data.y != 0]).size)
    if algo.positive_unlabeled:
        _check_pu_labels(train, data, negatives_as_unlabeled, log)
    labeled = data.y != 0
    n_lab = int(labeled.sum())
    if n_lab == 0:
        raise DataError(train, f"no labeled rows (every label is {unlabeled_label})")
    X_unl = None
    if keep_unlabeled:  # their rows, and where they came from (file, line) for comments
        unl = np.flatnonzero(~labeled)
        X_unl = (data.X[unl], [(train if i < n_train else unlabeled_file, int(data.lines[i]))
                               for i in unl])
    if not algo.uses_unlabeled and n_lab < data.n_rows:
        log.info("ignoring %d unlabeled rows (label %d): %s trains on labeled rows only",
                 data.n_rows - n_lab, unlabeled_label, algo.name)
        data = data.subset(np.flatnonzero(labeled))
    classes = class_labels(data.y)
    if len(classes) < 2 and not algo.positive_unlabeled:
        raise DataError(train, f"only one class ({codes.get(classes[0], classes[0])}) among "
                        f"the labeled rows; {algo.name} needs two; for positive-unlabeled data "
                        f"use -a usmo")
    return data, labeled, X_unl, codes


def _read_validation(path, zero_based, n_features, classes, unlabeled_label=0, codes=None):
    """Labeled validation rows, their labels in the internal codes of :func:`relabel`."""
    import numpy as np

    from formats.svmlight import read_dataset

    data = read_dataset(path, zero_based=zero_based, n_features=n_features)
    unl = data.y == unlabeled_label
    if np.any(unl):
        line = int(data.lines[np.flatnonzero(unl)[0]])
        raise DataError(path, f"validation rows must be labeled (label {unlabeled_label} "
                        "found)", line)
    real = {code: v for code, v in (codes or {}).items()}
    for code, v in real.items():
        data.y[data.y == v] = code
    unknown = sorted(set(np.unique(data.y).astype(int)) - set(classes))
    if unknown:
        raise DataError(path, f"validation label {real.get(unknown[0], unknown[0])} is not a "
                        f"class of the training data "
                        f"({' '.join(str(real.get(c, c)) for c in classes)})")
    return data.X, data.y


def _accuracy(pred, y) -> tuple[int, int]:
    import numpy as np

    lab = y != 0
    return int(np.sum(pred[lab] == y[lab])), int(np.sum(lab))


def _load_solver(algo) -> None:
    """Import ``algo``'s module and, unless it starts numba only when a fit needs it (the
    linear solvers: small fits run on numpy alone), numba's thread pool; numba's first use
    (here or in the fit) holds SIGINT and SIGTERM and says when it compiles."""
    from solvers import runtime

    runtime.start_guard = process.deferred_signals
    algo.fit  # noqa: B018 -- imports the solver's module
    if not algo.numpy_nnz:
        runtime.start_numba(what=algo.name)


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
              help="memory allowed for n×n matrices (kernel, Newton system), e.g. 500M, 12G; "
                   "plain numbers are MiB [default: half the RAM] [lapsvm, laprls, tvrls, tvsvm, "
                   "cheeger-rls, cheeger-svm]")
@click.option("-q", "--quiet", is_flag=True, help="no progress output (warnings still shown)")
@click.option("--verbose", is_flag=True, help="more solver detail on stderr")
@user_errors(PROG)
def _train(train, model, algorithm, svmlin_algorithm, folds, seed, libsvm_c, zero_based,
           labels_file, unlabeled_file, unlabeled_label, transductive_file, values,
           keep_comments, probability, init_model, validation_file, negatives_as_unlabeled,
           max_memory, quiet, verbose, **kwargs):
    ctx = click.get_current_context()
    algo = _choose_algorithm(ctx, algorithm, svmlin_algorithm)
    params = _solver_params(ctx, algo, kwargs)
    if libsvm_c is not None:
        _apply_c(ctx, algo, params, libsvm_c)
    run = _run_options(ctx, algo, validation_file, max_memory, negatives_as_unlabeled)
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
    if folds is not None and process.stdout_closed():
        raise DataError("-", "cannot write the cross-validation accuracy: standard output "
                        "is closed")
    log = setup_logging(PROG, quiet, verbose)
    with Outputs({"TRAIN": train, "--labels": labels_file, "--unlabeled": unlabeled_file,
                  "--validation": validation_file}) as outputs:
        model_out = outputs.add(model, "model") if folds is None else None
        pred_out = outputs.add(transductive_file, "-l predictions")
        _train_run(train, algo, params, run, folds, seed, zero_based, labels_file,
                   unlabeled_file, validation_file, negatives_as_unlabeled, values, verbose,
                   log, outputs, model_out, pred_out, model, transductive_file, unlabeled_label,
                   keep_comments, probability, init_model)


def _train_run(train, algo, params, run, folds, seed, zero_based, labels_file, unlabeled_file,
               validation_file, negatives_as_unlabeled, values, verbose, log, outputs,
               model_out, pred_out, model, transductive_file, unlabeled_label, keep_comments,
               probability, init_model):
    from formats.model_file import model_to_text
    from formats.predictions import format_lines
    from solvers.crossval import cross_validate
    from solvers.errors import MemoryLimitError
    from solvers.multiclass import class_labels

    t0 = time.perf_counter()
    data, labeled, X_unl, codes = load_training(
        train, algo, zero_based, labels_file, unlabeled_file, negatives_as_unlabeled, log,
        keep_unlabeled=pred_out is not None, unlabeled_label=unlabeled_label)
    n_lab = int(labeled.sum())
    classes = class_labels(data.y)
    log.info("%s: %s", algo.name, " ".join(f"{k}={fmt(v)}" for k, v in params.items()))
    log.info("%d labeled rows, classes %s%s", n_lab,
             " ".join(str(codes.get(c, c)) for c in classes),
             " (one-vs-rest)" if len(classes) > 2 else "")

    if folds is not None:
        if not verbose:  # one line per fold, not per class and fold
            logging.getLogger("ssl.solver").setLevel(logging.WARNING)
        if folds > n_lab:
            raise DataError(train, f"-v {folds} needs at least {folds} labeled rows "
                            f"(found {n_lab})")
        pred = cross_validate(algo.fit, data.X, data.y, data.cost, params, folds, seed,
                              on_fold=lambda i, k: log.info("fold %d of %d", i + 1, k))
        c, t = _accuracy(pred, data.y)
        click.echo(f"Cross Validation Accuracy = {100.0 * c / t:g}%")
        return

    if "validation" in run:
        run["validation"] = _read_validation(run["validation"], zero_based, data.X.shape[1],
                                             classes, unlabeled_label, codes)
        log.info("read %s: %d validation rows", validation_file, run["validation"][0].shape[0])
    _warn_setting(algo, params, data.X, log)
    if init_model is not None:
        run["warm"] = _init_seeds(init_model, algo, params, data, codes, log)
    try:
        m = algo.fit(data.X, data.y, data.cost, params, **run)
    except MemoryLimitError as e:  # name the file whose rows make the matrices that large
        raise DataError(train, f"{data.n_rows} rows: {algo.name} {e}") from None
    if probability:
        _calibrate(train, algo, m, data, params, run, seed, verbose, log, codes)
    restore_labels(m, codes)
    if len(classes) >= 2 and not algo.positive_unlabeled:
        F = _training_values(algo, m, data.X)  # once, for both checks
        if F is not None and not _warn_one_class(algo, params, m, F, classes, log):
            _warn_lopsided(algo, m, F, data.y, codes, log)
    if verbose:
        from solvers.runtime import describe_threads

        log.debug("threads: %s", describe_threads())
        log.debug("timings: %s", " ".join(f"{k}={v[0]:.3g} s" for k, v in m.stats.items()
                                          if k.endswith("_time")))
    model_out.write(model_to_text(m))
    if pred_out is not None:
        X_unl, origins = X_unl
        if m.train_values is not None:  # the solver's own outputs: no second kernel pass
            F_unl = m.train_values[~labeled]
        else:
            F_unl = m.decision_function(X_unl)
        comments = _comments(origins) if keep_comments else None
        pred_out.write(format_lines(m, F_unl, values, comments))
    outputs.commit()
    if pred_out is not None:
        log.info("predictions for %d unlabeled rows written to %s", X_unl.shape[0],
                 transductive_file)
    obj = m.stats.get("objective")
    log.info("trained %s in %.3f s%s; model written to %s", algo.name,
             time.perf_counter() - t0,
             f", objective {' '.join(f'{v:.10g}' for v in obj)}" if obj else "", model)


def _init_seeds(path, algo, params, data, codes, log):
    """--init MODEL: the saved model's functions as the seeds of this fit, per binary task in
    the order the solver trains them (fit(..., warm=...))."""
    import numpy as np
    import scipy.sparse as sp

    from formats.model_file import read_model
    from solvers.models import KernelExpansion
    from solvers.multiclass import binary_tasks

    m = read_model(path)
    if m.algorithm != algo.name:
        raise DataError(path, f"--init needs a model of -a {algo.name}; this one is "
                        f"{m.algorithm}")
    order, tasks = binary_tasks(data.y)
    real = [codes.get(c, c) for c in order]
    if sorted(real) != sorted(m.labels):
        raise DataError(path, f"--init: the model's labels {' '.join(map(str, m.labels))} are "
                        f"not TRAIN's classes {' '.join(map(str, sorted(real)))}")

    def column(k_task):
        """(function index in m, sign) of binary task k_task."""
        if len(tasks) == 1:
            return 0, (1.0 if m.labels[0] == real[0] else -1.0)
        return m.labels.index(real[k_task]), 1.0

    fn = m.function
    n, d = data.X.shape
    seeds = []
    if isinstance(fn, KernelExpansion):
        rows = sp.csr_matrix(fn.rows)
        r = rows.shape[0]
        head = sp.csr_matrix(data.X[:r])
        if params.get("gamma") is None:  # auto: continue with the model's width
            params["gamma"] = fn.kernel.gamma
            log.info("--init: kernel γ = %.6g from the model", fn.kernel.gamma)
        if fn.kernel != _kernel_of(params, data.X) or r > n or not _same_rows(head, rows):
            raise DataError(path, f"--init: the model's {r} expansion rows are not the first "
                            f"rows of TRAIN with the same kernel (a kernel model seeds a fit "
                            "on its own training rows, new rows appended)")
        for k in range(len(tasks)):
            j, sign = column(k)
            alpha = np.zeros(n)
            alpha[:r] = sign * fn.coef[:, j]
            seeds.append((alpha, sign * float(fn.b[j])))
        log.info("--init %s: seeds α from %d of the %d rows, b from the model", path, r, n)
        return {"init": seeds}
    bias = params["bias"]
    W = np.zeros((d, fn.W.shape[1]))
    w_rows = min(d, fn.W.shape[0])
    W[:w_rows] = fn.W[:w_rows]
    for k in range(len(tasks)):
        j, sign = column(k)
        wb = float(fn.b[j]) / bias if bias > 0 else 0.0
        seeds.append(sign * np.concatenate([W[:, j], [wb]]))
    log.info("--init %s: seeds w from the model (%d features)", path, w_rows)
    return seeds


def _kernel_of(params, X):
    from solvers.kernels import KernelSpec, resolve_gamma

    gamma, _ = resolve_gamma(params["gamma"], params["kernel"], X)
    return KernelSpec(params["kernel"], float(gamma), int(params["degree"]),
                      float(params["coef0"]))


def _same_rows(A, B) -> bool:
    """Whether two CSR matrices hold the same rows (width aside)."""
    A, B = A.copy(), B.copy()
    for M in (A, B):
        M.sum_duplicates()
        M.eliminate_zeros()
    return (A.shape[0] == B.shape[0] and A.nnz == B.nnz
            and (A.indptr == B.indptr).all() and (A.indices == B.indices).all()
            and (A.data == B.data).all())


PROBABILITY_FOLDS = 5  # LIBSVM's -b 1 uses 5-fold cross-validation too


def _calibrate(train, algo, m, data, params, run, seed, verbose, log, codes) -> None:
    """--probability: the slope of m's probabilities from cross-validated decision values of
    the labeled rows (unlabeled rows stay in every training part)."""
    import numpy as np

    from solvers.calibration import fit_slope
    from solvers.crossval import cross_val_decisions

    lab = data.y != 0
    counts = {c: int(np.sum(data.y == c)) for c in m.labels}
    small = min(counts, key=lambda c: (counts[c], c))
    k = min(PROBABILITY_FOLDS, counts[small])
    if k < 2:
        raise DataError(train, f"--probability cross-validates the labeled rows, but class "
                        f"{codes.get(small, small)} has {counts[small]} labeled row; it needs "
                        "at least 2 per class")
    t0 = time.perf_counter()
    solver_log = logging.getLogger("ssl.solver")
    level = solver_log.level
    if not verbose:
        solver_log.setLevel(logging.WARNING)
    try:
        F = cross_val_decisions(algo.fit, data.X, data.y, data.cost, params, k, seed, m.labels,
                                **run)
    finally:
        solver_log.setLevel(level)
    y_idx = np.array([m.labels.index(int(v)) for v in data.y[lab]])
    m.probability, loss = fit_slope(F[lab], y_idx, len(m.labels))
    log.info("probability calibration: slope A = %.6g from %d-fold cross-validated decision "
             "values of %d labeled rows (cross-entropy %.4g, %.2f s)", m.probability, k,
             int(lab.sum()), loss, time.perf_counter() - t0)


def _comments(origins: list[tuple[str, int]]) -> list[str]:
    """The comment of each (file, line), reading each file once more."""
    from formats.svmlight import file_comments

    out = {}
    for path in dict.fromkeys(p for p, _ in origins):
        lines = [n for p, n in origins if p == path]
        out.update(zip(((path, n) for n in lines), file_comments(path, lines)))
    return [out[o] for o in origins]


def _flag(algo, name: str) -> str:
    return algo.param(name).flags[-1]


def _warn_setting(algo, params: dict, X, log) -> None:
    """Settings that make the problem degenerate on these rows, said before the fit."""
    if params.get("kernel") == "rbf" and params.get("gamma") is not None:
        from solvers.kernels import rbf_width_check, resolve_gamma

        gamma, _ = resolve_gamma(params["gamma"], "rbf", X)
        kind, g_med = rbf_width_check(X, gamma)
        if kind is not None:
            what = ("the identity (even nearest neighbours have kernel values < 0.01)"
                    if kind == "identity" else
                    "constant (even the farthest rows have kernel values > 0.99)")
            from solvers.params import GRAPH_GAMMA

            try_ = ("-g auto (the default: as wide as the graph's heat weights) or the "
                    f"median-distance width -g {g_med:.3g}" if algo.param("gamma") == GRAPH_GAMMA
                    else f"the median-distance width -g {g_med:.3g} (the default, -g auto)")
            log.warning("rbf width -g %s%s makes the kernel matrix essentially %s on these "
                        "rows: try %s", fmt(gamma), " (features: 1/features)"
                        if params["gamma"] == "features" else "", what, try_)
    if (algo.name in ("lapsvm", "laprls") and params.get("kernel") == "linear"
            and not params.get("bias")):
        log.warning("%s -t linear without a bias (-B 0, lapsvmp's default): f = Kα passes "
                    "through the origin, which costs accuracy unless the features are centred; "
                    "-B 1 adds an unregularised bias", algo.name)


def _training_values(algo, m, X):
    """The model's values on the training rows (None when it keeps none and is a kernel
    expansion, whose values would cost a kernel pass)."""
    if m.train_values is not None:
        return m.train_values
    return m.decision_function(X) if algo.linear_model else None


def _warn_one_class(algo, params: dict, m, F, classes: list, log) -> bool:
    """A fit whose values F on the training rows give one class to every row although
    several are labeled (said; returns whether it was)."""
    import numpy as np

    pred = np.unique(m.labels_from_values(F))
    if pred.size != 1:
        return False
    raised = []
    for name in algo.balance:
        v, d = params.get(name), algo.param(name).default
        if isinstance(v, (int, float)) and isinstance(d, (int, float)) and d > 0 and v > 0:
            raised.append((v / d, name, v, d))
    values = ", ".join(f"{_flag(algo, n)} {fmt(params.get(n))}" for n in algo.balance)
    hint = ""
    if raised:
        ratio, name, v, d = max(raised)
        if ratio > 1:
            hint = (f"; {_flag(algo, name)} {fmt(v)} is {ratio:.3g}× its default {fmt(d)}, "
                    f"try a smaller value")
    log.warning("%s predicts class %s for all %d training rows although %d classes are "
                "labeled: a degenerate fit, the labeled rows are outweighed (%s)%s",
                algo.name, pred[0], F.shape[0], len(classes), values, hint)
    return True


LOPSIDED = 3.0  # a class's share of the unlabeled rows this many times below its labeled share
LOPSIDED_MIN_ROWS = 20


def _warn_lopsided(algo, m, F, y, codes: dict, log) -> None:
    """A semi-supervised fit (values F on the training rows) that gives some class under
    1/LOPSIDED of its share of the labeled rows among the unlabeled rows: often a cut that
    split off a small cluster rather than the classes (tvrls on text at k = 10: 12.6 %
    positive against 42 %, 40 % error)."""
    import numpy as np

    if not algo.uses_unlabeled:
        return
    unl = y == 0
    if unl.sum() < LOPSIDED_MIN_ROWS or (~unl).sum() < 2:
        return
    pred = np.asarray(m.labels_from_values(F[unl]))
    lab = np.array([codes.get(int(v), int(v)) for v in y[~unl]])
    worst = None
    for c in np.unique(lab):
        share_l, share_u = float(np.mean(lab == c)), float(np.mean(pred == c))
        if share_u * LOPSIDED < share_l and (worst is None or share_u / share_l < worst[0]):
            worst = (share_u / share_l, c, share_u, share_l)
    if worst is not None:
        _, c, share_u, share_l = worst
        log.warning("%s puts %.1f %% of the %d unlabeled rows in class %s, against %.1f %% of "
                    "the labeled rows: unless the unlabeled rows are that unbalanced, the "
                    "solution has cut off part of a class rather than separated the classes "
                    "(the kernel, graph or weight of the unlabeled rows may not suit the data)",
                    algo.name, 100 * share_u, int(unl.sum()), c, 100 * share_l)


for _opt in param_options():
    _train.params.append(_opt)


def main(argv=None):
    """Console entry point."""
    return process.run(_train, PROG, argv)


if __name__ == "__main__":
    raise SystemExit(main())

