"""ssl-predict: apply a model file to an SVMlight file, streaming it in fixed-size chunks.

numpy, the parser and the model reader are imported where a run needs them (see ssl_cli.train).
"""

from __future__ import annotations

import os
import sys

import click

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
from ssl_svm.cli.parallel import Progress, Runner, resolve_jobs
from ssl_svm.cli.solver_options import complete_file
from ssl_svm.formats import CHUNK_BYTES
from ssl_svm.formats.errors import DataError
from ssl_svm.solvers.host import pools

CHUNK_MB = CHUNK_BYTES >> 20
WINDOW_PER_WORKER = 4  # input pieces in flight per worker: memory ~ 4 × (piece + its output)
_MODELS: dict = {}  # per worker process: model file -> (mtime, size, model)


def _model(source):
    """The model itself, or loaded once per process from its path (local workers)."""
    if not isinstance(source, tuple):
        return source
    from ssl_svm.formats.model_file import read_model

    path, mtime, size = source
    hit = _MODELS.get(path)
    if hit is None or hit[:2] != (mtime, size):
        hit = (mtime, size, read_model(path))
        _MODELS[path] = hit
    return hit[2]


def predict_block(model_source, block: bytes, first_line: int, name: str, has_label: bool,
                  zero_based: bool, values: bool, threads: int | None = None,
                  blas: int | None = None, keep_comments: bool = False,
                  probability: bool = False):
    """(prediction lines, labels of the rows, predicted labels, rows) for whole input lines.

    The one code path of sequential and parallel prediction, so their outputs are identical.
    ``blas``: run BLAS with this many threads, the count of the process that reads the input:
    a dense product's rounding depends on how BLAS splits it among threads, and workers
    (loky, Dask) start with one thread each, so kernel models' decision values would differ in
    the last digits.
    """
    from ssl_svm.formats.errors import DataError
    from ssl_svm.formats.predictions import format_lines
    from ssl_svm.formats.svmlight import block_comments, parse_block
    from ssl_svm.solvers.errors import NonFiniteError

    pools.limit_threads(threads)
    model = _model(model_source)
    part = parse_block(block, first_line, name, has_label=has_label, zero_based=zero_based,
                       n_features=model.n_features)
    if part.n_rows == 0:
        return "", part.y, part.y, 0
    try:
        if blas is None:
            F = model.decision_function(part.X)
        else:
            with pools.blas_limit(blas):
                F = model.decision_function(part.X)
    except NonFiniteError as e:
        raise DataError(name, str(e), line=int(part.lines[e.row])) from None
    comments = block_comments(block, first_line, part.lines) if keep_comments else None
    return (format_lines(model, F, values, comments, probability), part.y,
            model.labels_from_values(F), part.n_rows)

PROG = "ssl-predict"

EPILOG = """\b
Output: one line per input row, in input order: the predicted label; with --values the label
then the decision value (binary) or one value per label in the model's 'labels' order
(one-vs-rest). With labeled input (label != 0; any label when the model has a class 0),
'Accuracy = x% (c/t)' goes to stderr; with labels 1 and 0 only (positive-unlabeled), the
recall on the positives, the predicted-positive share of the unlabeled rows and the PU metric.

\b
Parallel: -j N predicts N pieces of the input at once in local processes, --cluster on a
Dask cluster (the model goes to each worker once, the input pieces are read here and
shipped, so no shared file system is needed); the output is the same, in input order, and
memory stays flat (at most 4 pieces per worker in flight).

\b
Examples:
  ssl-predict test.svm train.svm.model predictions
  zcat big.svm.gz | ssl-predict --values - my.model - | head
  ssl-predict -j -1 huge.svm my.model huge.pred
  ssl-predict --cluster tcp://scheduler:8786 huge.svm my.model huge.pred

Exit status: 0 ok, 1 data or model error, 2 usage error."""


@click.command(context_settings=CONTEXT, epilog=EPILOG,
               help="Predict the rows of TEST (SVMlight format, '-' = stdin) with MODEL and "
                    "write one line per row to OUTPUT (default or '-': stdout).")
@click.argument("test", metavar="TEST", shell_complete=complete_file)
@click.argument("model_path", metavar="MODEL", shell_complete=complete_file)
@click.argument("output", metavar="[OUTPUT|-]", required=False, shell_complete=complete_file)
@click.option("--values", is_flag=True, help="also write the decision value(s)")
@click.option("--probability", is_flag=True,
              help="write one probability per label after the label, in the order of a first "
                   "line 'labels L1 L2 ...' (as LIBSVM's svm-predict -b 1); needs a model "
                   "trained with ssl-train --probability")
@libsvm_b_option()
@click.option("--keep-comments", is_flag=True,
              help="end each output line with its input row's comment ('# id'), so predictions "
                   "join back to records without counting lines")
@click.option("--zero-based", is_flag=True, help="feature indices start at 0 (default: 1)")
@click.option("--labels", "labels_file", default=None, metavar="FILE",
              shell_complete=complete_file,
              help="true labels in FILE, one per line; TEST then has features only (SVMlin's "
                   "layout)")
@click.option("--chunk-mb", type=click.IntRange(1, 4096), default=CHUNK_MB,
              show_default=True, help="read TEST in pieces of this many MB (memory stays flat)")
@click.option("-j", "--jobs", "n_jobs", type=int, default=1, show_default=True, metavar="N",
              help="local worker processes; -1 = all cores; at most the CPUs available and "
                   "the pieces of work there are")
@click.option("--cluster", default=None, metavar="ADDRESS",
              help="predict on a Dask cluster, e.g. tcp://HOST:8786 (needs pip install "
                   "'dask[distributed]')")
@click.option("-q", "--quiet", is_flag=True, help="do not print the accuracy or progress")
@version_option(PROG)
@user_errors(PROG)
def _predict(test, model_path, output, values, probability, libsvm_b, keep_comments,
             zero_based, labels_file, chunk_mb, n_jobs, cluster, quiet):
    probability = probability_flag(probability, libsvm_b)
    if cluster is not None and n_jobs != 1:
        raise click.UsageError("-j is for local processes; the cluster's workers set the "
                               "parallelism of --cluster")
    if probability and values:
        raise click.UsageError("give --values (decision values) or --probability, not both")
    resolve_jobs(n_jobs)
    log = setup_logging(PROG, quiet, False)
    with process.deferred_signals():
        import numpy as np

        from ssl_svm.formats.model_file import read_model
        from ssl_svm.formats.svmlight import _LabelsFile, iter_line_blocks, open_input
        from ssl_svm.solvers.host import numba_start

        numba_start.set_start(label="ssl-predict")

    with Outputs({"TEST": test, "MODEL": model_path, "--labels": labels_file}) as outputs:
        out = outputs.add("-" if output is None else output, "predictions")
        model = read_model(model_path)
        if probability and model.probability is None:
            raise DataError(model_path, "the model has no probability calibration: train it "
                            "with ssl-train --probability")
        zero_class = 0 in model.labels
        lab = _LabelsFile(labels_file) if labels_file is not None else None
        stream = open_input(test)
        size = _input_size(test)
        progress = Progress(size or 1, "MB", enabled=not quiet and size is not None and
                            sys.stderr.isatty() and size > 4 * (chunk_mb << 20))
        runner = None
        correct = total = rows = 0
        pu = PUCounts()
        classes = np.asarray(model.labels, dtype=float)
        strangers: set = set()
        n_strange = 0
        try:
            if probability:  # the columns' labels, first, as svm-predict -b 1 writes them
                out.write("labels " + " ".join(str(int(v)) for v in model.labels) + "\n")
            blocks = iter_line_blocks(stream, test, chunk_mb << 20)
            if n_jobs == 1 and cluster is None:
                results = (predict_block(model, b, first, test, lab is None, zero_based, values,
                                         keep_comments=keep_comments, probability=probability)
                           + (len(b),) for b, first in blocks)
            else:
                pieces = -(-size // (chunk_mb << 20)) if size is not None else None
                runner = Runner(n_jobs, cluster, scatter=[model], tasks=pieces)
                if runner.client is None:
                    st = os.stat(model_path)
                    source = (os.path.abspath(model_path), st.st_mtime_ns, st.st_size)
                else:
                    source = model
                log.debug("predicting with %s", runner.describe())
                blas = pools.blas_threads()
                results = runner.run(_sized, ((source, b, first, test, lab is None, zero_based,
                                               values, runner.threads_per_worker, blas,
                                               keep_comments, probability)
                                              for b, first in blocks),
                                     window=WINDOW_PER_WORKER * runner.workers)
            for text, y, pred, n, nbytes in results:
                if lab is not None and n:
                    y = lab.take(n, test)
                out.write(text)
                # label 0 is "unlabeled", unless the model has a class 0 (--unlabeled-label)
                labeled = y != 0 if not zero_class else np.ones(y.size, dtype=bool)
                known = np.isin(y, classes)
                if np.any(labeled & ~known):  # not a class of the model: said, not counted
                    strangers.update(np.unique(y[labeled & ~known]).tolist())
                    n_strange += int(np.sum(labeled & ~known))
                    labeled &= known
                if labeled.any():
                    correct += int(np.sum(pred[labeled] == y[labeled]))
                    total += int(labeled.sum())
                pu.add(y, pred)
                rows += n
                progress.update(nbytes / size if size else 0, f"{rows} rows")
            if lab is not None:
                lab.finish(test)
            outputs.commit()
        finally:
            progress.clear()
            if runner is not None:
                runner.close()
            if test != "-":
                stream.close()
    if n_strange:
        shown = ", ".join(f"{v:g}" for v in sorted(strangers)[:5])
        log.warning("%s: %d labeled row%s with label%s %s, not %s class of the model (%s): "
                    "%s; were the labels mapped otherwise for training (in Python, classes "
                    "0/1 against the file's -1/+1)?", test, n_strange,
                    "" if n_strange == 1 else "s", "" if len(strangers) == 1 else "s", shown,
                    "a" if len(strangers) == 1 else "any", ", ".join(
                        f"{v:g}" for v in model.labels),
                    f"the accuracy counts the other {total} row{'s' if total != 1 else ''} "
                    "only" if total else "no accuracy can be given")
    if pu.applies(model.labels, zero_class):
        # labels 1 and 0 only: every row not labeled 1 is unlabeled, none is a known negative
        log.info("%s", pu.line())
    elif total:
        log.info("Accuracy = %g%% (%d/%d)", 100.0 * correct / total, correct, total)
    elif rows == 0:
        log.warning("%s has no data rows", test)


class PUCounts:
    """What a positive-unlabeled test file (labels 1 and 0 only) can say of the predictions:
    recall on the labeled positives, the predicted-positive share of the unlabeled rows, and
    Lee & Liu's PU metric recall² / P(ŷ = 1) (P over all rows), which needs no negatives.
    Accuracy there would count only the positives (or every unlabeled row as wrong)."""

    def __init__(self):
        self.other = False  # a label besides 1 and 0
        self.pos = self.pos_hit = self.unl = self.unl_hit = 0

    def add(self, y, pred) -> None:
        import numpy as np

        if y.size == 0:
            return
        self.other = self.other or bool(np.any((y != 0) & (y != 1)))
        pos, unl, hit = y == 1, y == 0, pred == 1
        self.pos += int(pos.sum())
        self.pos_hit += int((pos & hit).sum())
        self.unl += int(unl.sum())
        self.unl_hit += int((unl & hit).sum())

    def applies(self, model_labels, zero_class: bool) -> bool:
        return (not self.other and not zero_class and self.pos > 0 and self.unl > 0
                and 1 in model_labels)

    def line(self) -> str:
        recall = self.pos_hit / self.pos
        rate = (self.pos_hit + self.unl_hit) / (self.pos + self.unl)
        metric = recall * recall / rate if rate > 0 else 0.0
        return (f"PU (labels 1 and 0 only): recall on the labeled positives = "
                f"{100.0 * recall:g}% ({self.pos_hit}/{self.pos}), predicted positive among the "
                f"unlabeled = {100.0 * self.unl_hit / self.unl:g}% ({self.unl_hit}/{self.unl}), "
                f"PU metric recall²/P(ŷ=1) = {metric:.6g}")


def _sized(source, block, *args):
    return predict_block(source, block, *args) + (len(block),)


def _input_size(path: str) -> int | None:
    """Bytes of an uncompressed regular file (for the progress bar), else None."""
    if path == "-" or path.endswith((".gz", ".bz2")):
        return None
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def main(argv=None):
    """Console entry point."""
    return process.run(_predict, PROG, argv)


if __name__ == "__main__":
    raise SystemExit(main())
