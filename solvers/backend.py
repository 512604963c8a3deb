"""Which implementation a fit runs on, decided once before it starts (:func:`backend`).

Two backends compute the same fits (the same predictions; objectives equal up to the order of
sums, tested per solver):

* ``numpy``: whole-array numpy and scipy operations, nothing compiled. Per iteration a few dozen
  C loops instead of one compiled loop (2-6x slower per CG iteration), but nothing to start.
* ``numba``: compiled loops on every core. numba's start costs a process about half a second
  before any work (its import, its compiler target's set-up, each cached function's load),
  more than a whole small fit takes on numpy.

So a small fit of a solver that has a numpy path starts on numpy, unless numba already runs in
the process (a command: a large file's compiled parser, a ``-j`` worker; the library's fits
ignore that, :func:`ssl_svm.solvers.host.budget.history_free`, so that a call's result does not
depend on what its host ran before), or a command will check a ``da`` fit
(:data:`CHECK_ON_NUMBA`). A numpy fit still moves to numba for good once its work outgrows
numba's start (:class:`ssl_svm.solvers.linear.Routines`), and a command's check of it
continues on numpy only while its folds' work stays below that
(:func:`ssl_svm.solvers.host.budget.plan_check`): both count work, not seconds, so that the
same inputs give the same bytes. A command's folds run in processes forked from it on either
backend (:mod:`ssl_svm.solvers.host.forks`). ``lapsvm``, ``laprls`` and the TV family have a
numpy path for their exact form on few rows; ``usmo`` has none yet and runs on numba.

Imports no numerical library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

NUMPY = "numpy"
NUMBA = "numba"
CHOICES = ("auto", NUMPY, NUMBA)

# solvers with a numpy path: up to how many stored values of X (the linear family) or rows
# (the Laplacian solvers' exact form) a fit starts on it. The linear family: numba's start
# (~0.3-0.5 s) is about what numpy takes for 10⁸ units of CG work (1.5-2.5 ns a unit on a9a,
# w8a, pcmac, rcv1, mnist38), which a fit on 10⁵ values rarely reaches.
NUMPY_NNZ = 100_000
NUMPY_ROWS = 3000
# the TV family's exact form: its Chambolle-Pock steps take ~2x numba's time on numpy (55
# against 28 µs a step on usps49-10's graph); whole commands with their check ran 0.74-0.96x
# numba's on 500 rows (pcmac) and 1.03-1.15x on 1,296 (usps49-10)
NUMPY_TV_ROWS = 1000
NUMPY_PATHS = {"svm": ("stored values", NUMPY_NNZ), "rls": ("stored values", NUMPY_NNZ),
               "tsvm": ("stored values", NUMPY_NNZ), "da": ("stored values", NUMPY_NNZ),
               "lapsvm": ("rows", NUMPY_ROWS), "laprls": ("rows", NUMPY_ROWS),
               **{tv: ("rows", NUMPY_TV_ROWS) for tv in ("tvrls", "tvsvm", "cheeger-rls",
                                                          "cheeger-svm")}}
# solvers whose fit is one dense step when every row is labeled, with none of the loops numba
# compiles, and the rows up to which they then take numpy: Cheeger-RLS puts the labels back on
# every row at each step, so its fit is the smoothing step of the labels (no start, no TV
# step); the dense kernel and factor are the BLAS's on either backend, up to the exact form's
# rows of lapsvm and laprls (the shuttle sample's 2,000 rows: 0.57-0.65 s against 1.01-1.07 s
# on numba, the same model bytes). cheeger-svm's SMO and tvrls's iteration still run.
ALL_LABELED_ROWS = {"cheeger-rls": NUMPY_ROWS}
# solvers whose fit a command's check repeats in k folds, where the fit and its folds together
# run slower on numpy than numba's start: da's annealing (the pcmac sample with its check,
# even with the folds at the fit's λ: BENCHMARKS.md, small data); tsvm's are faster on numpy
# and its folds follow budget.plan_check
CHECK_ON_NUMBA = ("da",)


@dataclass(frozen=True)
class Backend:
    """A fit's backend: ``name`` (:data:`NUMPY` or :data:`NUMBA`) and why it was chosen."""

    name: str
    reason: str

    @property
    def numpy(self) -> bool:
        return self.name == NUMPY

    def __str__(self) -> str:
        return self.name

    def describe(self) -> str:
        return f"{self.name} ({self.reason})"


def has_numpy_path(algo: str) -> bool:
    """Whether solver ``algo`` has a numpy path."""
    return algo in NUMPY_PATHS


def backend(algo: str, rows: int, nnz: int, options: Mapping | None = None) -> Backend:
    """The backend of a fit of solver ``algo`` on ``rows`` rows with ``nnz`` stored values.

    ``options``: ``"backend"``, the one asked for (``auto``, ``numpy``, ``numba``, or a
    :class:`Backend`, returned as it is; numpy for what has no numpy path is a
    ``ValueError``); ``"checked_folds"``, the folds of the check a command will run after the fit
    (0: none; :data:`CHECK_ON_NUMBA`); ``"unlabeled"``, the fit's unlabeled rows (0:
    :data:`ALL_LABELED_ROWS`; None: not known); the solver's parameters ``"landmarks"`` and
    ``"knn"`` (the landmark form and the approximate search run on numba). Whether numba
    already runs in the process counts outside
    :func:`~ssl_svm.solvers.host.budget.history_free` only."""
    options = options or {}
    asked = options.get("backend") or "auto"
    if isinstance(asked, Backend):
        return asked
    if asked not in CHOICES:
        raise ValueError(f"backend must be one of {', '.join(CHOICES)}, not {asked!r}")
    path = NUMPY_PATHS.get(algo)
    # parts of a solver that only numba runs: the landmark form, the approximate kNN search
    only_numba = ("the landmark form" if options.get("landmarks") is not None else
                  "the approximate neighbour search" if options.get("knn") == "approximate"
                  else None)
    if asked == NUMBA:
        return Backend(NUMBA, "asked for")
    if path is None or only_numba:
        why = f"{algo} has no numpy path" if path is None else f"{only_numba} runs on numba"
        if asked == NUMPY:
            raise ValueError(f"{why}: numpy cannot run it (numpy paths: "
                             f"{', '.join(NUMPY_PATHS)})")
        return Backend(NUMBA, why)
    if asked == NUMPY:
        return Backend(NUMPY, "asked for")
    unit, limit = path
    size = nnz if unit == "stored values" else rows
    labeled = ""
    if options.get("unlabeled") == 0 and algo in ALL_LABELED_ROWS:
        limit = ALL_LABELED_ROWS[algo]
        labeled = " (every row labeled: one smoothing step)"
    if size > limit:
        return Backend(NUMBA, f"{size:,} {unit}, over {limit:,}{labeled}")
    from ssl_svm.solvers.host import budget

    if budget.numba_started_before():
        return Backend(NUMBA, "numba already runs in this process")
    folds = int(options.get("checked_folds") or 0)
    if folds and algo in CHECK_ON_NUMBA:
        return Backend(NUMBA, f"the fit and its check's {folds} folds outlast numba's start")
    return Backend(NUMPY, f"{size:,} {unit}, at most {limit:,}{labeled}: no compiler to "
                          "start")
