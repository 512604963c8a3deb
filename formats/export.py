"""Models as LIBLINEAR and LIBSVM model files, for the predictors people deploy with.

Both formats follow the projects' own ``save_model`` (linear.cpp, svm.cpp), numbers written with
``repr`` (17 significant digits: the C readers' ``strtod`` gets the same doubles back).

* LIBLINEAR (``liblinear_text``): a linear model, or a kernel expansion with the linear kernel
  (collapsed to w = Σ_i coef_i x_i), binary or one-vs-rest. Written as ``L2R_L2LOSS_SVC`` with
  ``bias 1`` and the intercept as the bias weight: LIBLINEAR's predictor then computes
  w·x + b and takes the first label where it is positive (binary) or the arg max (one-vs-rest),
  as ssl-predict does. LIBLINEAR has no probability model for this solver type: a
  calibration is not exported.
* LIBSVM (``libsvm_text``): a binary kernel expansion (lapsvm, laprls, usmo, the TV family;
  kernels linear, poly, rbf with LIBSVM's definitions) as ``c_svc`` with the expansion rows as
  support vectors and rho = -b; a binary linear model as one support vector w with the linear
  kernel. A calibration becomes probA = -A, probB = 0 (LIBSVM's P = 1/(1 + exp(probA·f +
  probB)) is then ours). LIBSVM's multi-class models vote one-vs-one, so a one-vs-rest model
  has no LIBSVM form.

With no format asked for (``inferred_text``), the one that holds the model most directly.
"""

from __future__ import annotations

import io

import numpy as np
import scipy.sparse as sp

from ssl_svm.solvers.models import LinearFunctions, Model

LIBSVM_KERNELS = {"linear": "linear", "poly": "polynomial", "rbf": "rbf"}


class ExportError(ValueError):
    """The model has no form in the requested format (the message says why)."""


def _check_rows(model: Model, tool: str) -> None:
    """ExportError for a model that scales every row to unit length (--graph-metric cosine)
    or every column (scaled) before its kernel: LIBSVM's and LIBLINEAR's predictors take rows
    as given, so the exported file would predict other values."""
    fn = model.function
    if not isinstance(fn, LinearFunctions) and fn.unit_rows:
        raise ExportError(f"the {model.algorithm} model scales every row to unit length before "
                          f"its kernel (--graph-metric cosine), which {tool}'s predictor does "
                          "not do; scale the rows to unit length yourself and train with "
                          "--graph-metric euclidean to export")
    if not isinstance(fn, LinearFunctions) and fn.column_scale is not None:
        raise ExportError(f"the {model.algorithm} model divides every column by its range "
                          f"before its kernel (--graph-metric scaled), which {tool}'s "
                          "predictor does not do; scale the columns yourself (svm-scale) and "
                          "train with --graph-metric euclidean to export")


def _weights(model: Model) -> np.ndarray:
    """The d × k weight matrix of a linear model or of a linear-kernel expansion."""
    fn = model.function
    if isinstance(fn, LinearFunctions):
        return np.asarray(fn.W, dtype=np.float64)
    _check_rows(model, "LIBLINEAR")
    if fn.kernel.name != "linear":
        raise ExportError(f"a {model.algorithm} model with the {fn.kernel.name} kernel is not "
                          "linear; LIBLINEAR holds linear models only (use --format libsvm for "
                          "a binary kernel model)")
    R = sp.csr_matrix(fn.rows)
    return np.asarray(R.T @ np.asarray(fn.coef, dtype=np.float64))


def liblinear_text(model: Model) -> str:
    """The model as a LIBLINEAR model file."""
    W = _weights(model)
    b = np.asarray(model.function.b, dtype=np.float64)
    d, k = W.shape
    out = io.StringIO()
    w = out.write
    w("solver_type L2R_L2LOSS_SVC\n")
    w(f"nr_class {len(model.labels)}\n")
    w("label " + " ".join(str(int(v)) for v in model.labels) + "\n")
    w(f"nr_feature {d}\n")
    w("bias 1\n")
    w("w\n")
    for row in np.vstack([W, b[None, :]]).tolist():
        w(" ".join(repr(float(v)) for v in row) + " \n")
    return out.getvalue()


def libsvm_text(model: Model) -> str:
    """The model as a LIBSVM model file."""
    fn = model.function
    if len(model.labels) != 2:
        raise ExportError(f"a {len(model.labels)}-class one-vs-rest model has no LIBSVM form "
                          "(LIBSVM's multi-class models vote one-vs-one); --format liblinear "
                          "holds one-vs-rest linear models")
    _check_rows(model, "LIBSVM")
    if isinstance(fn, LinearFunctions):
        kernel, gamma, degree, coef0 = "linear", 0.0, 3, 0.0
        rows = sp.csr_matrix(np.asarray(fn.W, dtype=np.float64)[:, 0][None, :])
        coef = np.ones(1)
    else:
        if fn.kernel.name not in LIBSVM_KERNELS:
            raise ExportError(f"LIBSVM has no '{fn.kernel.name}' kernel")
        kernel = LIBSVM_KERNELS[fn.kernel.name]
        gamma, degree, coef0 = fn.kernel.gamma, fn.kernel.degree, fn.kernel.coef0
        rows = sp.csr_matrix(fn.rows, copy=True)
        rows.sort_indices()  # LIBSVM reads a row's indices in increasing order
        coef = np.asarray(fn.coef, dtype=np.float64)[:, 0]
    keep = np.flatnonzero(coef != 0.0)  # zero coefficients add nothing to the sum
    if keep.size == 0:
        keep = np.arange(min(1, coef.size))
    # LIBSVM lists a class's support vectors together: positive coefficients (towards the
    # first label) first; for two classes every one is summed with its own coefficient
    order = keep[np.argsort(coef[keep] <= 0, kind="stable")]
    n_pos = int(np.sum(coef[order] > 0))
    rows, coef = rows[order], coef[order]
    out = io.StringIO()
    w = out.write
    w("svm_type c_svc\n")
    w(f"kernel_type {kernel}\n")
    if kernel == "polynomial":
        w(f"degree {int(degree)}\n")
    if kernel in ("polynomial", "rbf"):
        w(f"gamma {gamma!r}\n")
    if kernel == "polynomial":
        w(f"coef0 {coef0!r}\n")
    w("nr_class 2\n")
    w(f"total_sv {coef.size}\n")
    w(f"rho {-float(fn.b[0]) + 0.0!r}\n")  # + 0.0: rho 0.0, never -0.0
    w("label " + " ".join(str(int(v)) for v in model.labels) + "\n")
    if model.probability is not None:
        w(f"probA {-float(model.probability)!r}\n")
        w("probB 0.0\n")
    w(f"nr_sv {n_pos} {coef.size - n_pos}\n")
    w("SV\n")
    for i in range(rows.shape[0]):
        a, z = rows.indptr[i], rows.indptr[i + 1]
        feats = " ".join(f"{j + 1}:{v!r}" for j, v in
                         zip(rows.indices[a:z].tolist(), rows.data[a:z].tolist()))
        w(f"{float(coef[i])!r} {feats} \n")
    return out.getvalue()


FORMATS = {"liblinear": liblinear_text, "libsvm": libsvm_text}


def inferred_text(model: Model) -> tuple[str, str]:
    """(text, format) of ``model`` in the format that holds it most directly, LIBLINEAR for a
    weight vector and LIBSVM for a kernel expansion, else in the other (a one-vs-rest
    linear-kernel expansion: LIBLINEAR only); ExportError, the first format's reason, when
    neither has a form of it."""
    order = (("liblinear", "libsvm") if isinstance(model.function, LinearFunctions)
             else ("libsvm", "liblinear"))
    first = None
    for name in order:
        try:
            return FORMATS[name](model), name
        except ExportError as e:
            first = first or e
    raise ExportError(f"{first}; it has no {order[1]} form either")
