"""The algorithm registry: name -> solver, with its parameters declared once.

``ssl-train`` builds its options, and the model file its ``param`` lines, from this table.
It imports no solver module: a solver's module (numpy, scipy, numba and its compiled
functions) is loaded when its ``fit`` is first used, so ``--help``, option errors and the other
solvers' runs do not pay for it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, replace

from ssl_svm.solvers.params import SOLVER_PARAMS, Param


@dataclass(frozen=True)
class Algorithm:
    """A registered solver.

    fit(X, y, cost, params) -> Model (``fit_ref`` = "module:function", imported on first use),
    where X is CSR, y float labels (0 = unlabeled, passed only
    when ``uses_unlabeled``), cost the per-row cost factors, params a dict with a value for
    every declared parameter.
    """

    name: str
    summary: str
    params: tuple[Param, ...]
    fit_ref: str
    uses_unlabeled: bool
    svmlin_code: int | None = None  # SVMlin's -A number
    # keyword arguments fit() also takes: "validation" = (X, y) of a labeled validation file,
    # "max_memory" = bytes allowed for n×n matrices, "negatives_as_unlabeled" = bool,
    # "backend" = solvers.backend.Backend or its name (the solvers with a numpy path)
    run_options: tuple[str, ...] = ()
    # learns from labeled positives (+1) and unlabeled rows (0) only
    positive_unlabeled: bool = False
    # the regularisation parameter along which fit(..., warm=model.warm) may be seeded by the
    # previous fit on the same rows (ssl-tune's warm starts), largest value first; None = no
    # warm starts
    warm_path: str | None = None
    # the model is a weight vector per function over all the features (its size grows with
    # the largest feature index, whatever the number of stored values)
    linear_model: bool = False
    # the parameters that weigh regularisation or the unlabeled rows against the labeled
    # loss: named when a fit predicts one class for every training row
    balance: tuple[str, ...] = ()
    # fit(..., warm=...) accepts seeds built from a saved model (ssl-train --init): a convex
    # problem, so the seeded fit reaches the cold start's optimum
    init_start: bool = False
    # fit(..., warm={**model.warm, "seeds": None}) on the rows of ``model``'s fit, with other
    # labels, reuses what depends on the rows alone (the graph and the kernel matrix) and
    # nothing the labels made: the check's folds hide their labels instead of dropping rows
    rows_reuse: bool = False
    # parameters whose auto value (None) the check's folds take from the fit (its
    # model.stats[name], one value for every task) instead of choosing it again, as the
    # check's supervised svm reuses its λ: one choice a side (da's costs whole fits; tsvm's,
    # the svm's own choice, sets how long each fold takes: 0.5-2.5 s on usps49-10)
    fold_reuse: tuple[str, ...] = ()

    @property
    def fit(self) -> Callable:
        """The solver's fit, its result checked: a model that is not finite is an error."""
        module, name = self.fit_ref.split(":")
        return _checked(getattr(importlib.import_module(module), name))

    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params}

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


def _checked(fit: Callable) -> Callable:
    def checked_fit(*args, **kwargs):
        model = fit(*args, **kwargs)
        model.check_finite()
        return model

    checked_fit.__wrapped__ = fit
    return checked_fit


ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        Algorithm("rls", "regularised least squares on the labeled rows (one CGLS solve)",
                  SOLVER_PARAMS["rls"], "ssl_svm.solvers.linear:fit_rls",
                  uses_unlabeled=False, svmlin_code=0, linear_model=True,
                  warm_path="lambda", run_options=("backend",)),
        Algorithm("svm", "L2-SVM (squared hinge) by modified finite Newton, SVMlin's L2-SVM-MFN",
                  SOLVER_PARAMS["svm"], "ssl_svm.solvers.linear:fit_svm",
                  uses_unlabeled=False, svmlin_code=1, linear_model=True,
                  warm_path="lambda", run_options=("backend",)),
        Algorithm("tsvm", "transductive L2-SVM with multiple label switching (SVMlin's TSVM)",
                  SOLVER_PARAMS["tsvm"], "ssl_svm.solvers.s3vm:fit_tsvm", uses_unlabeled=True,
                  svmlin_code=2, linear_model=True,
                  warm_path="lambda", run_options=("backend",), fold_reuse=("lambda",)),
        Algorithm("da", "deterministic-annealing semi-supervised SVM (SVMlin's DA-S3VM)",
                  SOLVER_PARAMS["da"], "ssl_svm.solvers.s3vm:fit_da", uses_unlabeled=True,
                  svmlin_code=3, linear_model=True, run_options=("backend",),
                  fold_reuse=("lambda",)),
        Algorithm("lapsvm", "Laplacian SVM in the primal (Melacci & Belkin): minimises "
                  "1/2 [Σ_labeled c·max(0, 1 - y f)² + γ_A αᵀKα + γ_I fᵀL^p f] over f = Kα "
                  "(+ b), all rows' kNN graph Laplacian L, no 1/l factors (lapsvmp's "
                  "convention); PCG with early stopping or Newton",
                  SOLVER_PARAMS["lapsvm"], "ssl_svm.solvers.lapsvm:fit_lapsvm", uses_unlabeled=True,
                  run_options=("validation", "max_memory", "backend"), warm_path="gamma_a",
                  rows_reuse=True),
        Algorithm("laprls", "Laplacian RLS: as lapsvm with the squared loss (y - f)² on the "
                  "labeled rows; direct solve or PCG",
                  SOLVER_PARAMS["laprls"], "ssl_svm.solvers.lapsvm:fit_laprls", uses_unlabeled=True,
                  run_options=("validation", "max_memory", "backend"), warm_path="gamma_a",
                  rows_reuse=True),
        Algorithm("usmo", "positive-unlabeled SVM with the double hinge loss (Sansone et al. "
                  "2016): labels +1 = labeled positive, 0 = unlabeled; exact optimum of the "
                  "convex dual by dual coordinate descent (linear kernel) or SMO, memory linear "
                  "in the rows",
                  SOLVER_PARAMS["usmo"], "ssl_svm.solvers.usmo:fit_usmo", uses_unlabeled=True,
                  run_options=("negatives_as_unlabeled", "max_memory"),
                  positive_unlabeled=True),
        Algorithm("tvrls", "graph total-variation RLS (Bresson & Zhang 2012): η/2 Σ_labeled "
                  "(y - f)² + λ/2‖f‖²_K + γ‖Df‖ by augmented-Lagrangian splitting with a "
                  "Chambolle-Pock TV step and the paper's normalisation; native multi-class "
                  "on the simplex",
                  SOLVER_PARAMS["tvrls"], "ssl_svm.solvers.tvsvm:fit_tvrls", uses_unlabeled=True,
                  run_options=("max_memory", "backend")),
        Algorithm("tvsvm", "graph total-variation SVM: as tvrls with the hinge loss on the "
                  "labeled rows (exact SMO step)",
                  SOLVER_PARAMS["tvsvm"], "ssl_svm.solvers.tvsvm:fit_tvsvm", uses_unlabeled=True,
                  run_options=("max_memory", "backend")),
        Algorithm("cheeger-rls", "Cheeger-cut RLS: the inverse-power iteration on the ratio "
                  "‖Df‖/Σ|f - median f| with labels fixed and an RLS smoothing step",
                  SOLVER_PARAMS["cheeger-rls"], "ssl_svm.solvers.tvsvm:fit_cheeger_rls",
                  uses_unlabeled=True,
                  run_options=("max_memory", "backend")),
        Algorithm("cheeger-svm", "Cheeger-cut SVM: as cheeger-rls with an SVM smoothing step",
                  SOLVER_PARAMS["cheeger-svm"], "ssl_svm.solvers.tvsvm:fit_cheeger_svm",
                  uses_unlabeled=True,
                  run_options=("max_memory", "backend")),
    )
}

_BALANCE = {"rls": ("lambda",), "svm": ("lambda",), "tsvm": ("lambda", "lambda_u"),
            "da": ("lambda", "lambda_u"), "lapsvm": ("gamma_i", "gamma_a"),
            "laprls": ("gamma_i", "gamma_a"), "usmo": ("lambda",),
            "tvrls": ("tv_gamma", "eta"), "tvsvm": ("tv_gamma", "mu"),
            "cheeger-rls": ("cheeger_step",), "cheeger-svm": ("cheeger_step", "mu")}
_INIT_START = {"rls", "svm", "lapsvm", "laprls"}
ALGORITHMS = {k: replace(a, balance=_BALANCE[k], init_start=k in _INIT_START)
              for k, a in ALGORITHMS.items()}


def all_params() -> dict[str, list[tuple[Algorithm, Param]]]:
    """Every parameter name with the algorithms that declare it (for option generation).

    Raises at import time if two algorithms spell the same parameter differently.
    """
    out: dict[str, list[tuple[Algorithm, Param]]] = {}
    for a in ALGORITHMS.values():
        for p in a.params:
            out.setdefault(p.name, []).append((a, p))
    for name, uses in out.items():
        spellings = {(p.flags, p.type) for _, p in uses}
        if len(spellings) != 1:
            raise RuntimeError(f"parameter {name} is declared with different flags or types")
    return out


def by_svmlin_code() -> dict[int, str]:
    return {a.svmlin_code: a.name for a in ALGORITHMS.values() if a.svmlin_code is not None}
