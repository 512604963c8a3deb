"""ssl-predict: apply a model file to an SVMlight file, streaming it in fixed-size chunks."""

from __future__ import annotations

import click
import numpy as np

from formats.model_file import read_model
from formats.predictions import format_lines
from formats.svmlight import CHUNK_BYTES, iter_chunks
from ssl_cli.common import CONTEXT, AtomicOutput, setup_logging, user_errors

PROG = "ssl-predict"

EPILOG = """\b
Output: one line per input row, in input order: the predicted label; with --values the label
then the decision value (binary) or one value per label in the model's 'labels' order
(one-vs-rest). With labeled input (label != 0), 'Accuracy = x% (c/t)' goes to stderr.

\b
Examples:
  ssl-predict test.svm train.svm.model predictions
  zcat big.svm.gz | ssl-predict --values - my.model - | head

Exit status: 0 ok, 1 data or model error, 2 usage error."""


@click.command(context_settings=CONTEXT, epilog=EPILOG,
               help="Predict the rows of TEST (SVMlight format, '-' = stdin) with MODEL and "
                    "write one line per row to OUTPUT (default or '-': stdout).")
@click.argument("test", metavar="TEST")
@click.argument("model_path", metavar="MODEL")
@click.argument("output", metavar="[OUTPUT|-]", required=False)
@click.option("--values", is_flag=True, help="also write the decision value(s)")
@click.option("--zero-based", is_flag=True, help="feature indices start at 0 (default: 1)")
@click.option("--labels", "labels_file", default=None, metavar="FILE",
              help="true labels in FILE, one per line; TEST then has features only (SVMlin's "
                   "layout)")
@click.option("--chunk-mb", type=click.IntRange(1, 4096), default=CHUNK_BYTES >> 20,
              show_default=True, help="read TEST in pieces of this many MB (memory stays flat)")
@click.option("-q", "--quiet", is_flag=True, help="do not print the accuracy")
@user_errors(PROG)
def _predict(test, model_path, output, values, zero_based, labels_file, chunk_mb, quiet):
    log = setup_logging(PROG, quiet, False)
    model = read_model(model_path)
    out = AtomicOutput(output)
    correct = total = rows = 0
    try:
        for chunk in iter_chunks(test, zero_based=zero_based, labels=labels_file,
                                 n_features=model.n_features, chunk_bytes=chunk_mb << 20):
            F = model.decision_function(chunk.X)
            out.write(format_lines(model, F, values))
            lab = chunk.y != 0
            if lab.any():
                pred = model.labels_from_values(F[lab])
                correct += int(np.sum(pred == chunk.y[lab]))
                total += int(lab.sum())
            rows += chunk.n_rows
        out.commit()
    except BaseException:
        out.discard()
        raise
    if total:
        log.info("Accuracy = %g%% (%d/%d)", 100.0 * correct / total, correct, total)
    elif rows == 0:
        log.warning("%s has no data rows", test)


def main(argv=None):
    """Console entry point."""
    return _predict.main(args=argv, prog_name=PROG)


if __name__ == "__main__":
    raise SystemExit(main())
