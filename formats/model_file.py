"""Model files: versioned, self-describing text (``ssl-model 1``).

Layout (one item per line, ``#`` lines are not allowed; floats are written with ``repr``, which
round-trips exactly and does not depend on the locale)::

    ssl-model 1
    version 0.1.0                    # the ssl-svm release that wrote it (absent in files
                                     # written before 0.1.0 had it; read and ignored)
    algorithm svm
    kind linear                      # linear | kernel
    n_features 7511                  # the width of the rows the model was trained on
    labels 1 -1                      # binary: 2 labels, the first where f(x) > 0
    functions 1                      # 1 (binary) or one per label (one-vs-rest)
    param lambda 0.001               # every training parameter, in declaration order
    stat objective 0.0213041183      # training statistics, one value per function or one
                                     # (timings are not written: equal runs, equal bytes)
    probability 2.37                 # optional (ssl-train --probability): the slope A of
                                     # P(label k) ∝ 1/(1 + exp(-A f_k))
    kernel rbf                       # kernel models only: name and LIBSVM parameters
    kernel_gamma 0.5
    kernel_degree 3
    kernel_coef0 0
    kernel_rows unit                 # optional (--graph-metric cosine): every row scaled to
                                     # unit length before the kernel, at prediction too
    kernel_scale 0.5 0.01 1          # optional (--graph-metric scaled): column j multiplied
                                     # by its factor before the kernel, at prediction too
    intercept 0.12                   # one value per function
    weights 4                        # linear: number of nonzero feature rows, then per row:
    17 0.25                          #   1-based feature index, one weight per function
    expansion 10                     # kernel: number of expansion rows, then per row:
    0.5 3:1.25 7:0.5                 #   one coefficient per function, then index:value pairs
    end

Writes are atomic (temporary file + rename). Loading validates every line and raises
:class:`formats.errors.DataError` naming the file and line for a truncated, foreign, malformed
or newer-version file.
"""

from __future__ import annotations

import functools
import io
import math
import sys

import numpy as np
import scipy.sparse as sp

from ssl_svm.formats.errors import DataError
from ssl_svm.formats.svmlight import atomic_write_bytes
from ssl_svm.formats.textparse import INDEX_MAX, LABEL_MAX
from ssl_svm.solvers.kernels import KERNELS, KernelSpec, default_memory_limit, human_bytes
from ssl_svm.solvers.models import KernelExpansion, LinearFunctions, Model
from ssl_svm.solvers.params import COEF0, DEGREE, GAMMA
from ssl_svm.solvers.registry import ALGORITHMS

MAGIC = "ssl-model"
VERSION = 1
# weights, coefficients and values of a model: finite, and far enough from overflow that a
# decision value over rows of at most textparse.VALUE_MAX stays a number where it can
VALUE_LIMIT = 1e300


def _f(v) -> str:
    return repr(float(v))


def _value(v) -> str:
    if v is None:  # a parameter left to its data-dependent default
        return "auto"
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return _f(v)
    s = str(v)
    if not s or any(c.isspace() for c in s):
        raise ValueError(f"parameter value {s!r} cannot be written (empty or has spaces)")
    return s


@functools.lru_cache(maxsize=1)
def package_version() -> str:
    """The installed ssl-svm's version ('unknown' when run from an uninstalled checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ssl-svm")
    except PackageNotFoundError:
        return "unknown"


def model_to_text(model: Model) -> str:
    fn = model.function
    k = model.n_functions
    out = io.StringIO()
    w = out.write
    w(f"{MAGIC} {VERSION}\n")
    w(f"version {package_version()}\n")
    w(f"algorithm {model.algorithm}\n")
    w(f"kind {'linear' if isinstance(fn, LinearFunctions) else 'kernel'}\n")
    w(f"n_features {int(model.n_features)}\n")
    w("labels " + " ".join(str(int(v)) for v in model.labels) + "\n")
    w(f"functions {k}\n")
    for name, v in model.params.items():
        w(f"param {name} {_value(v)}\n")
    for name, vals in model.stats.items():
        if name.endswith("_time"):  # timings differ run to run; the file must not
            continue
        vals = vals if isinstance(vals, (list, tuple, np.ndarray)) else [vals]
        w(f"stat {name} " + " ".join(_value(v) for v in vals) + "\n")
    if model.probability is not None:
        w(f"probability {_f(model.probability)}\n")
    if isinstance(fn, KernelExpansion):
        ks = fn.kernel
        w(f"kernel {ks.name}\nkernel_gamma {_f(ks.gamma)}\nkernel_degree {int(ks.degree)}\n"
          f"kernel_coef0 {_f(ks.coef0)}\n")
        if fn.unit_rows:
            w("kernel_rows unit\n")
        if fn.column_scale is not None:
            w("kernel_scale " + " ".join(_f(v) for v in fn.column_scale) + "\n")
    w("intercept " + " ".join(_f(v) for v in fn.b) + "\n")
    if isinstance(fn, LinearFunctions):
        W = np.asarray(fn.W, dtype=np.float64)
        nz = np.flatnonzero(np.any(W != 0, axis=1))
        w(f"weights {nz.size}\n")
        rows = W[nz].tolist()
        for j, r in zip((nz + 1).tolist(), rows):
            w(f"{j} " + " ".join(map(repr, r)) + "\n")
    else:
        R = sp.csr_matrix(fn.rows)
        if not R.has_canonical_format:  # rows from an array a user built: the file's indices
            R = R.copy()  # must increase, once each, or it would not load
            R.sum_duplicates()
        coef = np.asarray(fn.coef, dtype=np.float64)
        w(f"expansion {R.shape[0]}\n")
        for i in range(R.shape[0]):
            a, b = R.indptr[i], R.indptr[i + 1]
            feats = " ".join(f"{j + 1}:{v!r}" for j, v in
                             zip(R.indices[a:b].tolist(), R.data[a:b].tolist()))
            w(" ".join(map(repr, coef[i].tolist())) + (" " + feats if feats else "") + "\n")
    w("end\n")
    return out.getvalue()


def write_model(model: Model, path: str) -> None:
    """Write ``model`` to ``path`` atomically (``-`` writes to standard output)."""
    text = model_to_text(model)
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        atomic_write_bytes(path, text.encode("ascii"))
    except OSError as e:
        raise DataError(path, f"cannot write model: {e.strerror or e}") from None


# --------------------------------------------------------------------------- reading

class _Lines:
    def __init__(self, path: str, text: str):
        self.path = path
        self.lines = text.split("\n")
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.i = 0

    def error(self, msg: str, line: int | None = None):
        return DataError(self.path, msg, line=line if line is not None else self.i)

    def next(self, what: str) -> list[str]:
        if self.i >= len(self.lines):
            raise DataError(self.path, f"truncated model file (ends before {what})")
        self.i += 1
        return self.lines[self.i - 1].split()

    def keyed(self, key: str, nvals: int | None = None) -> list[str]:
        parts = self.next(f"the '{key}' line")
        if not parts or parts[0] != key:
            got = parts[0] if parts else "an empty line"
            raise self.error(f"expected '{key}', found '{got}'")
        vals = parts[1:]
        if nvals is not None and len(vals) != nvals:
            raise self.error(f"'{key}' needs {nvals} value{'s' if nvals != 1 else ''}, "
                             f"found {len(vals)}")
        return vals


def _int(L: _Lines, s: str, what: str, low: int = 0, high: int | None = None) -> int:
    if len(s) > 24:  # no count or index here has that many digits
        raise L.error(f"{what} '{s[:24]}...' is out of range")
    try:
        v = int(s)
    except ValueError:
        raise L.error(f"malformed {what} '{s}'") from None
    if v < low:
        raise L.error(f"{what} must be at least {low} (found {v})")
    if high is not None and v > high:
        raise L.error(f"{what} must be at most {high} (found {v})")
    return v


def _float(L: _Lines, s: str, what: str, low: float = -VALUE_LIMIT,
           high: float = VALUE_LIMIT) -> float:
    try:
        v = float(s)
    except ValueError:
        raise L.error(f"malformed {what} '{s[:40]}'") from None
    if not math.isfinite(v):
        raise L.error(f"{what} '{s}' is not finite")
    if not low <= v <= high:
        raise L.error(f"{what} {s} is out of range [{low:g}, {high:g}]")
    return v


def _typed(s: str):
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        return s


def model_from_text(text: str, path: str) -> Model:
    L = _Lines(path, text)
    first = L.lines[0].split() if L.lines else []
    if not first:
        raise DataError(path, "empty model file" if not L.lines else
                        "not an ssl-model file (the first line is empty)")
    if first[0] != MAGIC:
        hint = ""
        if first[0] in ("svm_type", "solver_type"):
            hint = " (it looks like a LIBSVM/liblinear model)"
        raise DataError(path, f"not an ssl-model file (the first line starts with "
                        f"'{first[0][:40]}'){hint}", line=1)
    if len(first) != 2 or not first[1].isdigit():
        raise DataError(path, "malformed version line (expected 'ssl-model 1')", line=1)
    version = int(first[1])
    if version > VERSION:
        raise DataError(path, f"model format version {version} is newer than this program "
                        f"reads (version {VERSION}); upgrade ssl-svm", line=1)
    if version < 1:
        raise DataError(path, f"unknown model format version {version}", line=1)
    L.i = 1
    if len(L.lines) > 1 and L.lines[1].split()[:1] == ["version"]:
        # which release wrote the file: informative only (the format is 'ssl-model N')
        if len(L.keyed("version")) != 1:
            raise L.error("'version' needs one value")
    algorithm = L.keyed("algorithm", 1)[0]
    algo = ALGORITHMS.get(algorithm)
    if algo is None:
        raise L.error(f"unknown algorithm '{algorithm[:40]}' (this program has "
                      f"{', '.join(ALGORITHMS)})")
    kind = L.keyed("kind", 1)[0]
    if kind not in ("linear", "kernel"):
        raise L.error(f"unknown model kind '{kind}' (expected linear or kernel)")
    d = _int(L, L.keyed("n_features", 1)[0], "n_features", 0, INDEX_MAX + 1)
    labels = [_int(L, s, "label", -LABEL_MAX, LABEL_MAX) for s in L.keyed("labels")]
    if len(labels) < 2 or len(set(labels)) != len(labels):
        raise L.error("'labels' needs at least two distinct labels")
    k = _int(L, L.keyed("functions", 1)[0], "number of functions", 1)
    if k != (1 if len(labels) == 2 else len(labels)):
        raise L.error(f"{k} functions do not fit {len(labels)} labels "
                      "(binary: 1, one-vs-rest: one per label)")
    params: dict = {}
    stats: dict = {}
    probability = None
    while True:
        parts = L.next("the 'intercept' line")
        if not parts:
            raise L.error("unexpected empty line")
        key = parts[0]
        if key == "param":
            if len(parts) != 3:
                raise L.error("'param' needs a name and one value")
            if parts[1] in params:
                raise L.error(f"parameter '{parts[1]}' given twice")
            params[parts[1]] = _typed(parts[2])
            p = algo.param(parts[1])
            if p is not None and parts[2] != "auto":
                try:  # what ssl-train would refuse, a model file does not bring in
                    p.check(parts[2])
                except ValueError as e:
                    raise L.error(f"parameter {parts[1]}: {e}") from None
        elif key == "stat":
            if len(parts) < 3:
                raise L.error("'stat' needs a name and at least one value")
            stats[parts[1]] = [_typed(s) for s in parts[2:]]
        elif key == "probability":
            if len(parts) != 2 or probability is not None:
                raise L.error("'probability' needs one value, once")
            probability = _float(L, parts[1], "probability slope", 0.0, 1e15)
            if probability <= 0.0:
                raise L.error("the probability slope must be positive")
        else:
            L.i -= 1
            break
    kernel = None
    unit = False  # 'kernel_rows unit': rows at unit length before the kernel
    scale = None  # 'kernel_scale': the columns' factors before the kernel
    if kind == "kernel":
        name = L.keyed("kernel", 1)[0]
        if name not in KERNELS:
            raise L.error(f"unknown kernel '{name}'")
        gamma = _float(L, L.keyed("kernel_gamma", 1)[0], "kernel_gamma", 0.0, GAMMA.hi)
        degree = _int(L, L.keyed("kernel_degree", 1)[0], "kernel_degree", 0, DEGREE.hi)
        coef0 = _float(L, L.keyed("kernel_coef0", 1)[0], "kernel_coef0", COEF0.lo, COEF0.hi)
        kernel = KernelSpec(name, gamma, degree, coef0)
        parts = L.next("the 'intercept' line")
        if parts[:1] == ["kernel_rows"]:
            if parts[1:] != ["unit"]:
                raise L.error("'kernel_rows' takes one value, unit")
            unit = True
            parts = L.next("the 'intercept' line")
        if parts[:1] == ["kernel_scale"]:
            if not 1 <= len(parts) - 1 <= d:
                raise L.error(f"'kernel_scale' takes one factor per feature, 1 to {d}")
            scale = np.array([_float(L, v, "column factor", 0.0) for v in parts[1:]])
        else:
            L.i -= 1
    b = np.array([_float(L, s, "intercept") for s in L.keyed("intercept", k)])
    left = len(L.lines) - L.i - 1  # lines after the count, 'end' included
    if kind == "linear":
        nrows = _int(L, L.keyed("weights", 1)[0], "number of weight lines", 0)
        if nrows > left:  # checked before any allocation
            raise DataError(path, f"truncated model file (ends before the {nrows} weight lines)")
        need = 8 * d * k
        if need > default_memory_limit():
            raise DataError(path, f"n_features {d} needs a weight matrix of "
                            f"{human_bytes(need)}, more than this machine allows "
                            f"({human_bytes(default_memory_limit())})", line=4)
        W = np.zeros((d, k))
        prev = 0
        for _ in range(nrows):
            parts = L.next(f"the {nrows} weight lines")
            if len(parts) != k + 1:
                raise L.error(f"a weight line needs a feature index and {k} "
                              f"weight{'s' if k > 1 else ''}")
            j = _int(L, parts[0], "feature index", 1)
            if j > d:
                raise L.error(f"feature index {j} exceeds n_features {d}")
            if j <= prev:
                raise L.error("feature indices of the weight lines must increase")
            prev = j
            W[j - 1] = [_float(L, s, "weight") for s in parts[1:]]
        function = LinearFunctions(W, b)
    else:
        m = _int(L, L.keyed("expansion", 1)[0], "number of expansion rows", 0)
        if m > left:
            raise DataError(path, f"truncated model file (ends before the {m} expansion rows)")
        coef = np.zeros((m, k))
        data: list[float] = []
        indices: list[int] = []
        indptr = [0]
        for i in range(m):
            parts = L.next(f"the {m} expansion rows")
            if len(parts) < k:
                raise L.error(f"an expansion row needs {k} coefficient{'s' if k > 1 else ''}")
            coef[i] = [_float(L, s, "coefficient") for s in parts[:k]]
            prev = 0
            for tok in parts[k:]:
                js, _, vs = tok.partition(":")
                j = _int(L, js, "feature index", 1)
                if j > d or j <= prev:
                    raise L.error(f"bad feature index {j} (indices increase, at most {d})")
                prev = j
                indices.append(j - 1)
                data.append(_float(L, vs, "feature value"))
            indptr.append(len(data))
        rows = sp.csr_matrix((np.array(data, dtype=np.float64),
                              np.array(indices, dtype=np.int32),
                              np.array(indptr, dtype=np.int64)), shape=(m, d))
        function = KernelExpansion(kernel, rows, coef, b, unit_rows=unit, column_scale=scale)
    end = L.next("the final 'end' line")
    if end != ["end"]:
        raise L.error("expected the final 'end' line")
    if L.i != len(L.lines):
        raise DataError(path, "unexpected lines after 'end'", line=L.i + 1)
    return Model(algorithm, labels, d, function, params, stats, probability=probability)


def read_model(path: str) -> Model:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise DataError(path, f"cannot open model: {e.strerror or e}") from None
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise DataError(path, "not an ssl-model file (it is not plain text)") from None
    return model_from_text(text, path)
