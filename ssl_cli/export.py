"""ssl-export: a model file as a LIBLINEAR or LIBSVM model file (see formats.export)."""

from __future__ import annotations

import click

from ssl_svm.cli import process
from ssl_svm.cli.common import CONTEXT, setup_logging, user_errors, version_option
from ssl_svm.cli.outputs import Outputs
from ssl_svm.cli.solver_options import complete_file

PROG = "ssl-export"

EPILOG = """\b
What each format holds:
  liblinear  linear models (rls, svm, tsvm, da, usmo -t linear) and kernel models with the
             linear kernel (collapsed to one weight vector), binary or one-vs-rest;
             liblinear's predict gives the same labels and decision values
  libsvm     binary models: kernel expansions (lapsvm, laprls, usmo, tvrls, tvsvm,
             cheeger-rls, cheeger-svm; kernels linear, poly, rbf) and linear models (one
             support vector); a --probability calibration becomes probA/probB.
             One-vs-rest models have no LIBSVM form (LIBSVM votes one-vs-one).

\b
Examples:
  ssl-export train.svm.model model.liblinear               # a linear model: liblinear
  liblinear-predict test.svm model.liblinear out          # LIBLINEAR's own predictor
  ssl-export best.model best.exported    # any model: the line printed names its predictor
  ssl-export --format libsvm lap.model lap.libsvm && svm-predict test.svm lap.libsvm out

Exit status: 0 ok, 1 the model cannot be read or has no form in that format, 2 usage error."""


# the line after the export names the predictors that read the file written
READERS = {"liblinear": "read it with LIBLINEAR's predict (liblinear-predict, or liblinear's "
                        "Python load_model), not with LIBSVM's svm-predict",
           "libsvm": "read it with LIBSVM's svm-predict (or libsvm's Python svm_load_model), "
                     "not with LIBLINEAR's predict"}


@click.command(context_settings=CONTEXT, epilog=EPILOG,
               help="Write MODEL (an ssl-model file) as a LIBLINEAR or LIBSVM model file OUT, "
                    "for those projects' predictors (C, Java, Python, ...).")
@click.argument("model_path", metavar="MODEL", shell_complete=complete_file)
@click.argument("out_path", metavar="OUT|-", shell_complete=complete_file)
@click.option("-f", "--format", "fmt", type=click.Choice(["liblinear", "libsvm"]),
              default=None,
              help="the target format (default: the one that holds MODEL: liblinear for a "
                   "weight vector, libsvm for a kernel expansion; the other when that one "
                   "cannot; printed)")
@click.option("-q", "--quiet", is_flag=True, help="no message on stderr")
@version_option(PROG)
@user_errors(PROG)
def _export(model_path, out_path, fmt, quiet):
    log = setup_logging(PROG, quiet, False)
    with process.deferred_signals():
        from ssl_svm.formats.errors import DataError
        from ssl_svm.formats.export import FORMATS, ExportError, inferred_text
        from ssl_svm.formats.model_file import read_model

    with Outputs({"MODEL": model_path}) as outputs:
        out = outputs.add(out_path, f"{fmt or 'exported'} model")
        model = read_model(model_path)
        how = ""
        try:
            if fmt is None:
                text, fmt = inferred_text(model)
                how = "; format inferred, --format to choose"
            else:
                text = FORMATS[fmt](model)
        except ExportError as e:
            raise DataError(model_path, str(e)) from None
        out.write(text)
        outputs.commit()
    log.info("%s model (%s, %d labels%s) written to %s: %s", fmt, model.algorithm,
             len(model.labels), how, out_path, READERS[fmt])


def main(argv=None):
    """Console entry point."""
    return process.run(_export, PROG, argv)


if __name__ == "__main__":
    raise SystemExit(main())
