"""Solver parameters, declared once.

Each solver lists its :class:`Param` objects; ``ssl-train``'s options, the model file's
``param`` lines, ``ssl-tune``'s grid names and the help text are generated from them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Param:
    """One training parameter.

    name: canonical name (model files, grids), e.g. ``lambda``.
    flags: command-line spellings, short (the ancestors' letter) first, e.g. ``("-W", "--lambda")``.
    type: ``float``, ``int`` or ``str``. choices: allowed values for ``str`` parameters.
    low/high: valid range; ``low_open``/``high_open`` exclude the end point.
    """

    name: str
    flags: tuple[str, ...]
    type: type
    default: object
    help: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    aliases: tuple[tuple[str, str], ...] = ()  # other spellings of choices, e.g. ("2", "rbf")
    validate: object = None  # for str parameters: callable raising ValueError if invalid

    def with_default(self, default, help: str | None = None) -> Param:
        return replace(self, default=default, help=help or self.help)

    @property
    def option(self) -> str:
        """The flags as shown in messages, e.g. ``-W/--lambda``."""
        return "/".join(self.flags)

    def range_text(self) -> str:
        if self.choices:
            alias = dict((v, k) for k, v in self.aliases)
            return "one of " + ", ".join(
                f"{c} ({alias[c]})" if c in alias else c for c in self.choices)
        lo = "-inf" if self.low is None else _num(self.low)
        hi = "inf" if self.high is None else _num(self.high)
        return f"{'(' if self.low_open or self.low is None else '['}{lo}, {hi}" \
               f"{')' if self.high_open or self.high is None else ']'}"

    def check(self, value):
        """``value`` converted to the parameter's type; ValueError with a message if invalid."""
        if self.type is str:
            v = dict(self.aliases).get(str(value), str(value))
            if self.choices and v not in self.choices:
                raise ValueError(f"{self.option} must be {self.range_text()} (got '{v}')")
            if self.validate is not None:
                self.validate(v)
            return v
        try:
            if self.type is int:
                f = float(value)
                if not f.is_integer():
                    raise ValueError
                v = int(f)
            else:
                v = float(value)
        except (TypeError, ValueError):
            kind = "an integer" if self.type is int else "a number"
            raise ValueError(f"{self.option} must be {kind} (got '{value}')") from None
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"{self.option} must be finite (got {value})")
        bad = ((self.low is not None and (v < self.low or (self.low_open and v == self.low))) or
               (self.high is not None and (v > self.high or (self.high_open and v == self.high))))
        if bad:
            raise ValueError(f"{self.option} must be in {self.range_text()} (got {_num(v)})")
        return v


def _num(v) -> str:
    if v is None:
        return "auto"
    return f"{v:g}" if isinstance(v, float) else str(v)


# Parameters shared by several solvers. A solver may re-declare one with its own default.
LAMBDA = Param("lambda", ("-W", "--lambda"), float, 1.0,
               "regularisation λ: the objective is λ/2·||w||² + loss (SVMlin's -W)",
               low=0.0, low_open=True)
COST_POSITIVE = Param("cost_positive", ("-Cp", "--cost-positive"), float, 1.0,
                      "cost factor of the positive rows' losses (SVMlin's -Cp)",
                      low=0.0, low_open=True)
COST_NEGATIVE = Param("cost_negative", ("-Cn", "--cost-negative"), float, 1.0,
                      "cost factor of the negative rows' losses (SVMlin's -Cn)",
                      low=0.0, low_open=True)
EPSILON = Param("epsilon", ("-e", "--epsilon"), float, 1e-6,
                "tolerance: CG residual and margin agreement (SVMlin's EPSILON)",
                low=0.0, low_open=True, high=1.0, high_open=True)
BIAS = Param("bias", ("-B", "--bias"), float, 1.0,
             "value of the constant feature appended to every row for the bias; 0 = no bias "
             "(as liblinear's -B; the bias weight is regularised)",
             low=0.0)
MAX_ITER = Param("max_iter", ("--max-iter",), int, 50,
                 "maximum number of outer iterations", low=1)
LAMBDA_U = Param("lambda_u", ("-U", "--lambda-u"), float, 1.0,
                 "weight λ_u of the unlabeled rows' loss (SVMlin's -U); 0 ignores them",
                 low=0.0)
MAX_SWITCH = Param("max_switch", ("-S", "--max-switch"), int, 10000,
                   "maximum number of label pairs switched per step (SVMlin's -S); 1 is "
                   "Joachims' original TSVM", low=1)
POSITIVE_FRACTION = Param("positive_fraction", ("-R", "--positive-fraction"), float, None,
                          "fraction r of the unlabeled rows in the positive class (SVMlin's -R); "
                          "default: the labeled rows' positive fraction; two-class problems "
                          "only (one-vs-rest takes each class's labeled fraction)",
                          low=0.0, high=1.0, low_open=True, high_open=True)


# Kernels (LIBSVM's letters and conventions), shared by the kernel solvers.
KERNEL = Param("kernel", ("-t", "--kernel"), str, "rbf",
               "kernel: linear u·v, poly (γ u·v + coef0)^degree, rbf exp(-γ|u-v|²) "
               "(LIBSVM's numbers 0, 1, 2 also accepted)",
               choices=("linear", "poly", "rbf"),
               aliases=(("0", "linear"), ("1", "poly"), ("2", "rbf")), metavar="NAME")
GAMMA = Param("gamma", ("-g", "--gamma"), float, None,
              "kernel γ (rbf, poly); default 1/number of features, as LIBSVM; a Gaussian of "
              "width σ is γ = 1/(2σ²)", low=0.0, low_open=True)
DEGREE = Param("degree", ("-d", "--degree"), int, 3, "poly kernel degree", low=1, high=50)
COEF0 = Param("coef0", ("-r", "--coef0"), float, 0.0, "poly kernel coef0")

# The kNN graph and its Laplacian, shared by the manifold and TV solvers.
NEIGHBORS = Param("neighbors", ("-k", "--neighbors"), int, 6,
                  "number of nearest neighbours of each row in the graph (Euclidean)", low=1)
GRAPH_WEIGHTS = Param("graph_weights", ("--graph-weights",), str, "heat",
                      "edge weights: heat exp(-d²/(2t²)), binary 1, or self-tuning "
                      "exp(-d²/(σ_i σ_j)) with σ_i the distance to row i's k-th neighbour "
                      "(Zelnik-Manor & Perona 2004)",
                      choices=("heat", "binary", "self-tuning"), metavar="NAME")
HEAT_WIDTH = Param("heat_width", ("--heat-width",), float, None,
                   "heat-weight width t; default the mean distance to the k neighbours",
                   low=0.0, low_open=True)
LAPLACIAN = Param("laplacian", ("--laplacian",), str, "normalized",
                  "graph Laplacian: normalized I - D^-1/2 W D^-1/2, or unnormalized D - W",
                  choices=("normalized", "unnormalized"), metavar="NAME")
LAPLACIAN_DEGREE = Param("laplacian_degree", ("--laplacian-degree",), int, 1,
                         "power p of the Laplacian in the graph regulariser (L^p)", low=1,
                         high=20)
