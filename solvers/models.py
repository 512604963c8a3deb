"""Trained models: what a solver returns and what the model file stores.

A model has ``k`` decision functions. Binary models have one (``k = 1``) and two labels; the
first label is predicted where the decision value is > 0, the second otherwise. One-vs-rest
models have one function per label, in the order of ``labels``, and predict the label of the
largest value (the first on ties).

Two kinds of functions:

* :class:`LinearFunctions` -- ``f(x) = x·W + b`` with W of shape (n_features, k).
* :class:`KernelExpansion` -- ``f(x) = sum_i K(x, z_i) coef_i + b`` over expansion rows z_i
  (CSR, shared by all k functions), coef of shape (m, k).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ssl_svm.solvers.errors import NonFiniteError
from ssl_svm.solvers.kernels import (
    KernelSpec,
    kernel_times,
    prepare,
    scale_columns,
    sqnorms,
    unit_rows,
)


@dataclass
class LinearFunctions:
    W: np.ndarray  # (n_features, k)
    b: np.ndarray  # (k,)

    def decision(self, X) -> np.ndarray:
        return np.asarray(X @ self.W) + self.b


@dataclass
class KernelExpansion:
    kernel: KernelSpec
    rows: sp.csr_matrix  # (m, n_features)
    coef: np.ndarray  # (m, k)
    b: np.ndarray  # (k,)
    # every input row is scaled to unit length before the kernel (--graph-metric cosine: the
    # expansion rows were, at training); the model file's 'kernel_rows unit'
    unit_rows: bool = False
    # every input column j is multiplied by column_scale[j] before the kernel (--graph-metric
    # scaled: 1 / the column's range over the training rows, as the expansion rows were); the
    # model file's 'kernel_scale' line; None: the columns as given
    column_scale: np.ndarray | None = None

    _prepared: object = field(default=None, repr=False, compare=False)

    def transform(self, X):
        """The rows as the kernel sees them: columns scaled (``column_scale``), then each row
        at unit length (``unit_rows``)."""
        if self.column_scale is not None:
            X = scale_columns(X, self.column_scale)
        if self.unit_rows:
            X = unit_rows(X)
        return X

    def decision(self, X) -> np.ndarray:
        """Σ_i K(x, z_i) coef_i + b (x as :meth:`transform` gives it), computed in blocks of
        rows of X."""
        if self._prepared is None:  # once per model, not once per prediction chunk
            Z = prepare(self.rows)
            self._prepared = (Z, sqnorms(Z) if self.kernel.name == "rbf" else None)
        Z, zn = self._prepared
        return kernel_times(self.kernel, self.transform(X), Z, self.coef, zn) + self.b


@dataclass
class Model:
    """A trained classifier and everything needed to describe how it was made.

    params: every training parameter of the algorithm (name -> value), in declaration order.
    stats: training statistics (name -> list of numbers, one per decision function where that
    applies), e.g. objective, iterations, train_time in seconds.
    """

    algorithm: str
    labels: list[int]
    n_features: int
    function: LinearFunctions | KernelExpansion
    params: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)
    # decision values on the training rows when the solver has them anyway (kernel solvers);
    # not stored in the model file
    train_values: np.ndarray | None = field(default=None, repr=False, compare=False)
    # what a solver that supports warm starts hands to its next fit on the same rows
    # (fit(..., warm=model.warm)); never stored in the model file
    warm: object = field(default=None, repr=False, compare=False)
    # slope A of the probability calibration (ssl-train --probability), None without one:
    # P(label k) ∝ 1/(1 + exp(-A f_k)), see :meth:`probabilities`
    probability: float | None = None

    @property
    def n_functions(self) -> int:
        return int(self.function.b.size)

    def _fit_width(self, X):
        """Make X exactly n_features wide: extra columns are ignored, missing ones are zero."""
        d = X.shape[1]
        if d == self.n_features:
            return X
        if d > self.n_features:
            return X[:, : self.n_features]
        X = sp.csr_matrix(X)
        return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], self.n_features))

    def decision_function(self, X) -> np.ndarray:
        """Decision values, shape (rows, k); :class:`NonFiniteError` if any is not finite
        (no label or score is ever computed from an overflow)."""
        with np.errstate(all="ignore"):
            F = self.function.decision(self._fit_width(X))
        ok = np.isfinite(F).all(axis=1)
        if not ok.all():
            row = int(np.flatnonzero(~ok)[0])
            raise NonFiniteError("the decision value is not a finite number (the row's or the "
                                 "model's values are too large: rescale the features)", row)
        return F

    def check_finite(self) -> None:
        """:class:`NonFiniteError` unless every number of the fitted function, its training
        decision values and its objective is finite: a fit that overflowed is an error, never
        a model."""
        fn = self.function
        parts = [fn.b] + ([fn.W] if isinstance(fn, LinearFunctions) else
                          [fn.coef, np.array([fn.kernel.gamma, fn.kernel.coef0])])
        if self.train_values is not None:
            parts.append(self.train_values)
        parts.append(np.asarray(self.stats.get("objective", []), dtype=float))
        if not all(np.isfinite(p).all() for p in parts):
            raise NonFiniteError(f"{self.algorithm} did not converge to finite numbers "
                                 "(overflow): the features or costs are too large for these "
                                 "parameters; rescale the features")

    def labels_from_values(self, F: np.ndarray) -> np.ndarray:
        labels = np.asarray(self.labels)
        if F.shape[1] == 1:
            return np.where(F[:, 0] > 0, labels[0], labels[1])
        return labels[np.argmax(F, axis=1)]

    def probabilities(self, F: np.ndarray) -> np.ndarray:
        """Class probabilities (rows × labels, in ``labels`` order) from decision values F.

        Binary: P(labels[0]) = σ(A f), P(labels[1]) = 1 - σ(A f); one-vs-rest:
        P(k) = σ(A f_k) / Σ_j σ(A f_j), σ(t) = 1/(1 + e^-t), one slope A > 0 for all classes
        and no offset. Each probability is then increasing in its own decision value with
        σ(0) = 1/2 at the boundary, so the most probable label is the predicted label
        (:meth:`labels_from_values`), by construction."""
        from scipy.special import expit, log_expit, softmax

        if self.probability is None:
            raise ValueError("the model has no probability calibration")
        T = self.probability * np.asarray(F, dtype=np.float64)
        if F.shape[1] == 1:
            return np.column_stack([expit(T[:, 0]), expit(-T[:, 0])])
        return softmax(log_expit(T), axis=1)  # in logs: σ underflows for very negative values

    def predict(self, X) -> np.ndarray:
        return self.labels_from_values(self.decision_function(X))
