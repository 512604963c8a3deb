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
    low/high: valid range; ``low_open``/``high_open`` exclude the end point. A bound left
    as None is still finite: ±:data:`FLOAT_LIMIT` for floats, :data:`INT_LIMIT` for integers
    (no value a solver could take without overflowing or running for ever is accepted).
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
    # for number parameters: names accepted besides numbers ("auto" is the default, None)
    names: tuple[str, ...] = ()
    # what the help says of the valid values when not a range of the type (a str parameter
    # checked by ``validate``)
    range_hint: str | None = None

    def with_default(self, default, help: str | None = None) -> Param:
        return replace(self, default=default, help=help or self.help)

    @property
    def option(self) -> str:
        """The flags as shown in messages, e.g. ``-W/--lambda``."""
        return "/".join(self.flags)

    @property
    def lo(self):
        """The effective lower bound."""
        if self.low is not None:
            return self.low
        return -INT_LIMIT if self.type is int else -FLOAT_LIMIT

    @property
    def hi(self):
        """The effective upper bound."""
        if self.high is not None:
            return self.high
        return INT_LIMIT if self.type is int else FLOAT_LIMIT

    def range_text(self) -> str:
        if self.range_hint is not None:
            return self.range_hint
        if self.choices:
            alias = dict((v, k) for k, v in self.aliases)
            return "one of " + ", ".join(
                f"{c} ({alias[c]})" if c in alias else c for c in self.choices)
        return f"{'(' if self.low_open else '['}{_num(self.lo)}, {_num(self.hi)}" \
               f"{')' if self.high_open else ']'}"

    def check(self, value):
        """``value`` converted to the parameter's type; ValueError with a message if invalid."""
        if str(value) in self.names:
            return None if str(value) == "auto" else str(value)
        if self.type is str:
            v = dict(self.aliases).get(str(value), str(value))
            if self.choices and v not in self.choices:
                raise ValueError(f"{self.option} must be {self.range_text()} (got '{v}')")
            if not v or any(c.isspace() for c in v):  # a model file's param line cannot hold it
                raise ValueError(f"{self.option} must be {self.range_text()}, without spaces "
                                 f"(got {v!r})")
            if self.validate is not None:
                self.validate(v)
            return v
        try:
            if self.type is int:
                f = float(value)
                if f == f and abs(f) > 2.0 ** 62:  # say the range, not a 300-digit integer
                    raise ValueError(f"{self.option} must be in {self.range_text()} (got "
                                     f"{_num(f)})")
                if not f.is_integer():
                    raise TypeError
                v = int(f)
            else:
                v = float(value)
        except ValueError as e:
            if str(e).startswith(self.option):
                raise
            kind = "an integer" if self.type is int else "a number"
            kind += "".join(f" or {n}" for n in self.names)
            raise ValueError(f"{self.option} must be {kind} (got '{value}')") from None
        except TypeError:
            kind = "an integer" if self.type is int else "a number"
            raise ValueError(f"{self.option} must be {kind} (got '{value}')") from None
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"{self.option} must be finite (got {value})")
        bad = (v < self.lo or (self.low_open and v == self.lo) or
               v > self.hi or (self.high_open and v == self.hi))
        if bad:
            raise ValueError(f"{self.option} must be in {self.range_text()} (got {_num(v)})")
        return v


def _num(v) -> str:
    if v is None:
        return "auto"
    return f"{v:g}" if isinstance(v, float) else str(v)


INT_LIMIT = 2**31 - 1  # integer options: a C int
FLOAT_LIMIT = 1e15  # number options without a bound of their own: |value| at most this
TOL_LOW = 1e-12  # tolerances: below this no stopping rule is met in double precision


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
                low=TOL_LOW, high=1.0, high_open=True)
BIAS = Param("bias", ("-B", "--bias"), float, 1.0,
             "value of the constant feature appended to every row for the bias; 0 = no bias "
             "(as liblinear's -B; the bias weight is regularised)",
             low=0.0)
MAX_ITER = Param("max_iter", ("--max-iter",), int, 50,
                 "maximum number of outer iterations", low=1, high=1_000_000)
LAMBDA_U = Param("lambda_u", ("-U", "--lambda-u"), float, 1.0,
                 "weight λ_u of the unlabeled rows' loss (SVMlin's -U); 0 ignores them",
                 low=0.0, high=1e6)
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
              "kernel γ (rbf, poly); auto = rbf: 1/median squared distance between rows (256 "
              "sampled, printed), poly: 1/number of features; features = 1/number of "
              "features, LIBSVM's default; a Gaussian of width σ is γ = 1/(2σ²)",
              low=0.0, low_open=True, names=("auto", "features"))
DEGREE = Param("degree", ("-d", "--degree"), int, 3, "poly kernel degree", low=1, high=50)
COEF0 = Param("coef0", ("-r", "--coef0"), float, 0.0, "poly kernel coef0")

# The graph solvers' rbf default: the kernel at the scale of the graph (graph.graph_gamma).
GRAPH_GAMMA = GAMMA.with_default(
    None, "kernel γ (rbf, poly); auto = rbf: 1/(2t²), as wide as the graph's heat weights (t = "
          "--heat-width, by default the mean distance to the k neighbours; printed), poly: "
          "1/number of features; features = 1/number of features, LIBSVM's default; a "
          "Gaussian of width σ is γ = 1/(2σ²)")

# The kNN graph and its Laplacian, shared by the manifold and TV solvers.
NEIGHBORS = Param("neighbors", ("-k", "--neighbors"), int, 6,
                  "number of nearest neighbours of each row in the graph (Euclidean)", low=1)
GRAPH_WEIGHTS = Param("graph_weights", ("--graph-weights",), str, "heat",
                      "edge weights: heat exp(-d²/(2t²)), binary 1, or self-tuning "
                      "exp(-d²/(σ_i σ_j)) with σ_i the distance to row i's k-th neighbour "
                      "(Zelnik-Manor & Perona 2004)",
                      choices=("heat", "binary", "self-tuning"), metavar="NAME")
GRAPH_METRIC = Param("graph_metric", ("--graph-metric",), str, "auto",
                     "distance of the graph and the kernel: euclidean on the rows as given, "
                     "cosine (every row scaled to unit length first, at training and at "
                     "prediction; for text), or scaled (every column divided by its range on "
                     "the training rows first, at prediction too; as LIBSVM's svm-scale); "
                     "auto: cosine for sparse rows (at most 10 % of the entries stored) with "
                     "no negative value and not all at unit length already, else scaled when "
                     "the largest column range is over 10 times the median one, else "
                     "euclidean; the model records the metric taken",
                     choices=("auto", "euclidean", "cosine", "scaled"), metavar="NAME")
KNN_SEARCH = Param("knn", ("--knn",), str, "auto",
                   "nearest-neighbour search of the graph: exact (n² distances), approximate "
                   "(a random-projection forest, then NN-descent: near n·log n work, seeded, "
                   "the same graph on any number of threads; about 97 % of the exact "
                   "neighbours on mnist), or auto: exact up to 100,000 rows, approximate "
                   "above; the model records the search taken",
                   choices=("auto", "exact", "approximate"), metavar="NAME")
# the graph solvers' rbf width defaults to the heat width, γ = 1/(2t²): below 1e-7 it would
# pass the 1e15 that every γ must stay under (a model file holds no larger), and below ~1e-154
# t² underflows to 0; any width far under the data's resolution gives the same all-zero
# weights, so the bound loses nothing
HEAT_WIDTH = Param("heat_width", ("--heat-width",), float, None,
                   "heat-weight width t; default the mean distance to the k neighbours",
                   low=1e-7)
LAPLACIAN = Param("laplacian", ("--laplacian",), str, "normalized",
                  "graph Laplacian: normalized I - D^-1/2 W D^-1/2, or unnormalized D - W",
                  choices=("normalized", "unnormalized"), metavar="NAME")
LAPLACIAN_DEGREE = Param("laplacian_degree", ("--laplacian-degree",), int, None,
                         "power p of the Laplacian in the graph regulariser (L^p); auto = "
                         "chosen with -k auto (see -k)", low=1, high=20, names=("auto",))
# The manifold solvers' graph: -k auto looks at the data (graph.auto_graph).
_LAP_NEIGHBORS = replace(
    NEIGHBORS, default=None, names=("auto",),
    help="number of nearest neighbours of each row in the graph (Euclidean); auto: from c = "
         "median distance of 256 sampled rows to their 2nd nearest row / median distance "
         "between rows — c < 0.3 (sharp manifold): 6 with --laplacian-degree 1; c < 0.6: 10 "
         "with degree 2; else (distances concentrate: text, noisy clusters) 50 with degree 5; "
         "the choice is printed")

# --------------------------------------------------------------------------- each solver's list
# Declared here, in a module that imports no numerical library, so that the registry, the
# options and --help are built without loading numpy, scipy or numba (start-up time).

MFN_ITER_MAX = 1000  # Newton steps of L2-SVM-MFN (SVMlin: 50, too few on badly scaled data)
CG_ITER_MAX = 10000  # SVMlin: CG iterations of one CGLS solve
# a fit begun on numpy (solvers.backend) moves to numba after NUMPY_WORK units of CG work,
# over all of a fit's solves (solvers.linear.Routines): numba's start-up costs ~0.3 s, about
# what numpy takes for that much work (1.5-2.5 ns a unit on a9a, w8a, pcmac, rcv1, mnist38).
NUMPY_WORK = 100_000_000
EARLY_STOPS = ("stability", "validation", "mixed", "none")

# the linear family's λ, chosen from the data when not given (solvers.linear.choose_lambda)
# (the same help as LAMBDA: the options' help says it once, the defaults grouped; what auto
# does is said when it runs and in the documentation)
LAMBDA_AUTO = replace(LAMBDA, default=None, names=("auto",))
LAMBDA_PATH = (10.0, 1.0, 0.1, 0.01, 0.001, 1e-4)  # largest first: a warm-started path

_LINEAR_PARAMS = {
    "svm": (LAMBDA_AUTO, COST_POSITIVE, COST_NEGATIVE, EPSILON, BIAS,
            MAX_ITER.with_default(MFN_ITER_MAX, "maximum number of Newton steps")),
    "rls": (LAMBDA_AUTO, COST_POSITIVE, COST_NEGATIVE, EPSILON, BIAS,
            MAX_ITER.with_default(CG_ITER_MAX, "maximum number of CG iterations")),
}

_MFN_ITER = MAX_ITER.with_default(MFN_ITER_MAX, "maximum number of Newton steps per retraining")
_S3VM_PARAMS = {
    "tsvm": (LAMBDA_AUTO, LAMBDA_U, MAX_SWITCH, POSITIVE_FRACTION, EPSILON, BIAS, _MFN_ITER),
    # da's auto is its own (solvers.s3vm.da_lambda_auto): SVMlin's λ = 1 unless that fit puts
    # the unlabeled rows in one class or nearly so; its annealing needs the larger λ on dense
    # rows, where tsvm's rule lost (BENCHMARKS.md, settings behind the defaults)
    "da": (LAMBDA_AUTO, LAMBDA_U, POSITIVE_FRACTION, EPSILON, BIAS, _MFN_ITER),
}
# da's λ auto, tried in turn (SVMlin's default first)
DA_LAMBDAS = (1.0, 0.1, 0.01, 0.001)
# a class's share of the unlabeled rows this many times below its labeled share (or below the
# share r a semi-supervised solver was asked for) is a lopsided fit
LOPSIDED = 3.0

# Laplacian SVM / RLS (Melacci & Belkin)
GAMMA_A = Param("gamma_a", ("--gamma-a",), float, 1e-6,
                "ambient-norm weight γ_A (of αᵀKα)", low=0.0)
GAMMA_I = Param("gamma_i", ("--gamma-i",), float, 1.0,
                "intrinsic-norm weight γ_I (of fᵀL^p f)", low=0.0)
_LAP_SOLVER = Param("solver", ("--solver",), str, "pcg",
                    "pcg: conjugate gradient preconditioned by K, with early stopping; newton: "
                    "exact primal Newton, O(n³)", choices=("pcg", "newton"), metavar="NAME")
_EARLY_STOP = Param("early_stop", ("--early-stop",), str, "stability",
                    "PCG stopping rule: stability (fewer than 1.5 % of unlabeled signs change "
                    "between checks every ceil(sqrt(n)/2) iterations), validation (validation "
                    "error stops improving; needs --validation), mixed (both), none (gradient "
                    "tolerance -e)", choices=EARLY_STOPS, metavar="RULE")
_LAP_BIAS = BIAS.with_default(0.0, "1 adds an unregularised bias b to f = Kα + b (with a "
                              "normalized Laplacian b also enters fᵀLf); 0 = no bias, as "
                              "lapsvmp's default")
_LAP_EPS = EPSILON.with_default(1e-6, "PCG gradient tolerance for --early-stop none: stop when "
                                "the preconditioned gradient norm falls to ε times its value "
                                "at α = 0")
_LAP_ITER = MAX_ITER.with_default(None, "maximum PCG iterations (default 10·n) or Newton steps "
                                  "(default 50)")
_LANDMARKS = Param("landmarks", ("--landmarks", "--nystrom"), int, None,
                   "number m of landmark rows z_j of f = Σ_j α_j k(·, z_j) + b: M = every "
                   "labeled row and a seeded sample of the others (all rows if M ≥ n), fitted "
                   "as --landmark-fit says (no n×n matrix; --solver and --early-stop do not "
                   "apply), and the model keeps the M rows; 0 = the exact n×n kernel; auto: "
                   "the exact kernel up to 20,000 rows when it fits in --max-memory, else 2,000 "
                   "landmarks (or the labeled rows and 1,000 more), fewer if the memory needs; "
                   "printed", low=0, names=("auto",))
LANDMARK_FITS = ("auto", "project", "restrict")
_LANDMARK_FIT = Param("landmark_fit", ("--landmark-fit",), str, "auto",
                      "how the landmark form finds f: project = solve the problem over the "
                      "values on all n rows (the ambient norm γ_A taken on the values) by "
                      "Newton and CG on the sparse Laplacian, then fit the landmark expansion "
                      "to those values by least squares (over at most 200,000 rows: every "
                      "labeled row, the landmarks and a seeded sample; O(n·k + M²) memory; -l "
                      "writes the values, the model is their fit for new rows); restrict = the "
                      "objective restricted to functions spanned by the landmarks, solved "
                      "exactly (O(n·M) memory; M = n is the exact problem); auto: restrict when "
                      "every row is a landmark, else project; printed",
                      choices=LANDMARK_FITS, metavar="HOW")
_LAP_COMMON = (KERNEL, GRAPH_GAMMA, DEGREE, COEF0, _LAP_NEIGHBORS, GRAPH_METRIC, KNN_SEARCH,
               GRAPH_WEIGHTS, HEAT_WIDTH, LAPLACIAN, LAPLACIAN_DEGREE, GAMMA_A, GAMMA_I,
               _LANDMARKS, _LANDMARK_FIT)
_LAP_PARAMS = {
    "lapsvm": _LAP_COMMON + (_LAP_SOLVER, _EARLY_STOP, _LAP_EPS, _LAP_BIAS, _LAP_ITER),
    "laprls": _LAP_COMMON + (
        replace(_LAP_SOLVER, default="auto", choices=("auto", "newton", "pcg"),
                help="auto: newton up to 4000 rows, pcg above; newton: direct solve of the "
                     "linear system (one Newton step), O(n³); pcg: conjugate gradient "
                     "preconditioned by K"),
        _EARLY_STOP, _LAP_EPS, _LAP_BIAS, _LAP_ITER),
}

# USMO (Sansone et al.)
_PRIOR = Param("prior", ("--prior",), str, "auto",
               "class prior π: the positive fraction of the unlabeled rows, a number in (0, 1), "
               "or auto = a mixture-proportion estimate (Blanchard, Lee & Scott 2010; Scott "
               "2015): the ratio U(s ≥ t)/P(s ≥ t) of unlabeled to labeled-positive rows "
               "scoring above thresholds t of cross-fitted logistic regressions of P against "
               "U, minimised over thresholds keeping ≥ 40 % of P above; printed with a 90 % "
               "bootstrap interval, and a warning when the interval is wide or the estimate "
               "is an upper bound only",
               metavar="PI", range_hint="(0, 1) or auto",
               validate=lambda v: parse_prior(v))
_TAU = Param("epsilon", ("-e", "--epsilon"), float, 1e-3,
             "τ: stop when no pair violates the optimality conditions by more than τ",
             low=TOL_LOW)
_CACHE = Param("cache_mb", ("-m", "--cache-mb"), float, 100.0,
               "kernel-row cache size in MB (LIBSVM's -m)", low=1.0, high=1e7)
_USMO_LAMBDA = replace(
    LAMBDA, default=None, names=("auto",),
    help="regularisation λ: c1 = π/(2λp), c2 = 1/(2λn); auto (the default): the best of 0.1, "
         "0.01, …, 1e-6 by 3-fold cross-validation of the PU metric recall²/P(ŷ=1) on a "
         "seeded sample of 20,000 rows (2,000 with a nonlinear kernel) holding a quarter of "
         "labeled positives, printed")
_USMO_LANDMARKS = Param("landmarks", ("--landmarks", "--nystrom"), int, None,
                        "nonlinear kernels: M > 0 = f = Σ_j α_j k(·, z_j) + β over M landmark "
                        "rows z_j (a seeded uniform sample), fitted exactly on the Nyström "
                        "features K(X, Z)·K(Z, Z)^(-1/2) by the linear kernel's coordinate "
                        "descent (12·n·M bytes; M = n is the exact problem), and the model "
                        "keeps the M rows; 0 = the exact kernel form (SMO, n² kernel values a "
                        "pass); auto: the exact form up to 20,000 rows, else 2,000 landmarks, "
                        "fewer if --max-memory needs; printed", low=0, names=("auto",))
_USMO_PARAMS = (_USMO_LAMBDA,
                _PRIOR, KERNEL.with_default("linear"), GAMMA, DEGREE, COEF0, _USMO_LANDMARKS,
                _TAU, _CACHE,
                replace(MAX_ITER, high=INT_LIMIT).with_default(
                    10_000_000, "maximum number of SMO pair steps (the linear kernel's "
                    "coordinate descent: of passes over the unlabeled rows)"))


def parse_prior(v) -> float | None:
    """None for auto, else a float in (0, 1); ValueError otherwise."""
    if v is None or str(v) == "auto":
        return None
    try:
        x = float(v)
    except ValueError:
        raise ValueError(f"--prior must be a number in (0, 1) or auto (got '{v}')") from None
    if not 0.0 < x < 1.0:
        raise ValueError(f"--prior must be in (0, 1) (got {v})")
    return x

# The TV family (Bresson & Zhang)
# TV weight γ taken when --tv-gamma is not given. Two classes: 0.1 (chosen first on USPS 4 vs
# 9) cut a small cluster off on text (pcmac: 12 % / 1 % of the unlabeled rows in a class of
# 51 %, tvrls / tvsvm) and left g241d at chance; 0.01 is better on USPS 4 vs 9 itself (10
# labels per class, 3 draws: 3.0 % against 3.6 %), on pcmac (96 %), and on 5 of the SSL
# book's 7 sets (6 splits, tvrls: mean 25.6 → 22.2 %; worse on Digit1 +0.7, COIL2 +1.4,
# USPS +4.9; BENCHMARKS.md)
TV_GAMMA_BINARY = 0.01
TV_GAMMA_MULTICLASS = 0.03
_TV_GAMMA = Param("tv_gamma", ("--tv-gamma",), float, None,
                  "TV weight γ of the paper: γ‖Dg‖ with ‖Dg‖ = Σ_ij w_ij|g_i − g_j|; default "
                  f"{TV_GAMMA_BINARY:g} for two classes, {TV_GAMMA_MULTICLASS:g} for more "
                  "(larger values cut small clusters off)", low=0.0, low_open=True)
_ETA = Param("eta", ("--eta",), float, 100.0,
             "label fidelity η of the paper: η/2 Σ_labeled (y_i − f_i)²", low=0.0,
             low_open=True)
_MU = Param("mu", ("--mu",), float, 1.0,
            "slack weight μ of the paper's SVM steps: μ Σ ξ_i over the labeled rows",
            low=0.0, low_open=True)
_MU_TV = _MU.with_default(100.0)
_R1 = Param("r1", ("--r1",), float, 1.0,
            "augmented-Lagrangian penalty r1 of f = g (the paper's r in the multi-class and "
            "Cheeger RLS/SVM steps): the kernel step solves with λI + r1·K",
            low=0.0, low_open=True)
_R2 = Param("r2", ("--r2",), float, 1.0,
            "augmented-Lagrangian penalty r2 of h = g (binary TV-RLS/TV-SVM)",
            low=0.0, low_open=True)
_C = Param("cheeger_step", ("--cheeger-step",), float, 0.1,
           "step c of the Cheeger iteration: g = f + c·sign(f), TV weight Eⁿ/(2c)",
           low=0.0, low_open=True)
_PROX_TOL = Param("prox_tol", ("--prox-tol",), float, 1e-4,
                  "relative duality gap at which each TV proximal step (Chambolle-Pock) stops",
                  low=TOL_LOW, high=1.0, high_open=True)
_TV_LANDMARKS = Param("landmarks", ("--landmarks", "--nystrom"), int, None,
                      "kernel rank: M > 0 = a Nyström kernel over M landmark rows (every "
                      "labeled row and a seeded sample of the others): O(n·M) memory and time "
                      "per step, and the model keeps only the M landmarks; 0 = the exact n×n "
                      "kernel (16·n² bytes, n³ time); auto: the exact kernel up to 20,000 rows "
                      "when it fits in --max-memory, else 2,000 landmarks (or the labeled rows "
                      "and 1,000 more), fewer if the memory needs; printed (--nystrom: the "
                      "same)", low=0, names=("auto",))
_CLASS_NORM = Param("class_norm", ("--class-norm",), str, "auto",
                    "multi-class only: norm of class k's column after the simplex step, "
                    "from its share p_k of the labeled rows (1/c unless a χ² test at 1 % "
                    "says the classes differ in size): n = √(N·c·p_k) (√N with "
                    "balanced labels, as the binary formulations; best on USPS 0/1/4/9) or "
                    "n/c = √(N·p_k), the norm of a one-hot column: converges 2.5-5x "
                    "faster with ten classes; TV-SVM / TV-RLS error on 10-class mnist with "
                    "10 labels per class 14 / 17 % against 19 / 22 % at 5,000 rows, 9.6 / "
                    "14.5 % against 9.2 / 19.1 % at 10,000; worse on USPS; auto = n, or n/c "
                    "when every row is labeled (the labels' own norm, which n exceeds √c "
                    "times); the model records the one taken; ignored for two classes",
                    choices=("auto", "n", "n/c"), metavar="NAME")
_START_TV = Param("start", ("--start",), str, "cheeger",
                  "start of the two-class splitting: cheeger = the Cheeger-RLS solution on the "
                  "same graph and kernel (one cheeger-rls run first; USPS 4 vs 9, 1 label per "
                  "class: 3.6 % error), labels = the labels, tiny noise elsewhere (32.7 %: it "
                  "settles on a wrong cut); more classes always start from the labels",
                  choices=("cheeger", "labels"), metavar="NAME")
# the Cheeger cut's share r by default: ½ (the paper's balanced cut) unless the labeled rows'
# positive fraction is further from ½ than this many binomial standard errors (the one-sided
# 0.5 % level). USPS of the SSL book (20 % positives, 100 labels, 12 splits: 5.2-6.8 standard
# errors) 32.7 → 7.4 % error; its balanced sets (at most 2.2) unchanged. Taking the labeled
# fraction as it is cost them: with 10 labels g241c 13.3 → 19.2 and Digit1 5.5 → 10.1 % (3,
# 6 or 7 positives of 10 read as 30/70 or 60/40), pcmac 5.0 → 10.7 % (42 % of 50 labeled)
CUT_SHARE_Z = 2.576
_R_CHEEGER = POSITIVE_FRACTION.with_default(
    None, "two classes: share r of the rows put in the positive class (the (1-r)-quantile "
    "replaces the median of the Cheeger balance term and the mean of the TV splitting's "
    "normalisation); default: 0.5, the paper's balanced cut, unless the labeled rows' "
    f"positive fraction is further from 0.5 than {CUT_SHARE_Z:g} binomial standard errors, "
    "then that fraction; ignored for more classes")
_START_CHEEGER = Param("start", ("--start",), str, "auto",
                       "start of the multi-class iteration: tv = the multi-class TV-SVM "
                       "solution on the same graph and kernel (one tvsvm run first), labels = "
                       "the labels, 1/c elsewhere, auto = tv when some class has a single "
                       "labeled row, else labels (USPS 0/1/4/9, 1 label per class: 2.0 % error "
                       "from tv, 71 % from labels; 10-class mnist with 2-10 labels per class: "
                       "labels better by 3-7 points); two classes always start from the "
                       "labels; the model records the start taken",
                       choices=("auto", "tv", "labels"), metavar="NAME")
_TV_LAMBDA = LAMBDA.with_default(1.0, "RKHS weight λ of the paper: λ/2‖f‖²_K")
_TOL = EPSILON.with_default(1e-4, "outer tolerance: stop when the relative change of the "
                                  "transductive solution falls to it")
# the normalised TV splitting does not settle below ~1e-2 (its residuals hover at 0.5-1.5 %
# on USPS) while its errors are stable from about 40 iterations on
_TOL_TV = _TOL.with_default(1e-2)
_TV_ITER = replace(MAX_ITER, high=100_000).with_default(100, "maximum number of outer "
                                                        "iterations")
_NEIGHBORS = NEIGHBORS.with_default(10)
_TV_COMMON = (KERNEL, GRAPH_GAMMA, DEGREE, COEF0, _NEIGHBORS, GRAPH_METRIC, KNN_SEARCH,
              GRAPH_WEIGHTS, HEAT_WIDTH, _TV_LAMBDA, _R1, _TV_LANDMARKS)
_TAIL = (_TOL, _TV_ITER, _PROX_TOL)
_TAIL_TV = (_TOL_TV, _TV_ITER, _PROX_TOL)
_TV_PARAMS = {
    "tvrls": _TV_COMMON + (_ETA, _TV_GAMMA, _R2, _CLASS_NORM, _R_CHEEGER, _START_TV) + _TAIL_TV,
    "tvsvm": _TV_COMMON + (_MU_TV, _TV_GAMMA, _R2, _CLASS_NORM, _R_CHEEGER, _START_TV)
    + _TAIL_TV,
    "cheeger-rls": _TV_COMMON + (_C, _R_CHEEGER, _START_CHEEGER) + _TAIL,
    "cheeger-svm": _TV_COMMON + (_MU, _C, _R_CHEEGER, _START_CHEEGER) + _TAIL,
}

TV_OUT_OF_SAMPLE = (
    "Out of sample every method predicts with f(x) = Σ_j K(x, x_j) α_j over all training rows: "
    "tvrls/tvsvm with α of the last kernel step (the paper's f = Kα); cheeger-rls/svm with α "
    "of the RLS/SVM smoothing of the final solution. -l writes the transductive solution: for "
    "two classes the graph function g (tvrls/tvsvm) or f (cheeger), for more classes f = Kα "
    "(tvrls/tvsvm) or the simplex solution (cheeger). With --landmarks M the kernel is the "
    "Nyström one, K̃(x, z) = k(x, X_M) W⁺ k(X_M, z), and the model is its expansion over the M "
    "landmark rows, equal to K̃α on the training rows")

SOLVER_PARAMS: dict[str, tuple[Param, ...]] = {
    **_LINEAR_PARAMS, **_S3VM_PARAMS, **_LAP_PARAMS, "usmo": _USMO_PARAMS, **_TV_PARAMS,
}
