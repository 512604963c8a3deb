"""Training on rows held on a Dask cluster: the prepared rows of
:func:`ssl_svm.pipeline.train` when they stay on the workers (:class:`ClusterTraining`), as
blocks read there by :mod:`ssl_svm.transport`. They fit and check themselves where they are:
the linear family's fit is :func:`ssl_svm.solvers.distributed.fit_model` over the blocks, its
check trains the folds there too.
"""

from __future__ import annotations

import logging

import numpy as np

from ssl_svm.formats.errors import DataError

log = logging.getLogger("ssl.cluster")

# the algorithms a cluster fit runs: the linear family, and the graph family's landmark form
LINEAR = ("rls", "svm", "tsvm", "da")
GRAPH = ("lapsvm", "laprls")
ALGORITHMS = LINEAR + GRAPH


def block_kind(name: str) -> str:
    """The type of block (:data:`ssl_svm.transport.BLOCK_TYPES`) algorithm ``name`` fits on."""
    return "graph" if name in GRAPH else "linear"

class ClusterTraining:
    """The data of a cluster fit once read: the blocks, the internal class labels, the label
    codes (:func:`ssl_svm.training.relabel`), the rows and labeled rows. The prepared rows of
    :func:`ssl_svm.pipeline.train` when they are held on a cluster: they fit and check
    themselves where they are (:meth:`fit`, :meth:`check`)."""

    def __init__(self, blocks, classes, codes, rows, n_lab, costs, name):
        self.blocks = blocks
        self.classes = classes
        self.codes = codes
        self.rows = rows
        self.n_lab = n_lab
        self.costs = costs
        self.name = name
        self.graph_fit = None  # a graph fit's built graph and system (GraphFit)

    def fit(self, algo, params: dict):
        """:func:`fit` on these rows."""
        return fit(self, algo, params)

    def check(self, algo, params: dict, m, how: str = "auto", seed: int = 0,
              source: str | None = "TRAIN"):
        """:func:`check` on these rows."""
        return check(self, algo, params, m, how, seed, source)


def prepare(blocks, algo, name: str, unlabeled_label: int = 0) -> ClusterTraining:
    """:func:`ssl_svm.training.prepare`'s checks and label codes on the blocks: the widest
    block sets d, label ``unlabeled_label`` marks the unlabeled rows."""
    from ssl_svm.solvers.multiclass import class_labels

    S = blocks.summaries
    blocks.d = max(s["width"] for s in S)
    blocks.call("widen", blocks.d)
    counts: dict[float, int] = {}
    for s in S:
        for v, c in s["labels"].items():
            counts[v] = counts.get(v, 0) + c
    labels = np.array(sorted(counts))
    codes = {}
    if unlabeled_label != 0:
        from ssl_svm.training import relabel

        mapped = labels.copy()
        codes = relabel(mapped, unlabeled_label)
        mapping = {float(a): float(b) for a, b in zip(labels, mapped) if a != b}
        if mapping:
            blocks.call("relabel", mapping)
            counts = {mapping.get(v, v): c for v, c in counts.items()}
    rows = sum(counts.values())
    n_lab = rows - counts.get(0.0, 0)
    if n_lab == 0:
        raise DataError(name, f"no labeled rows (every label is {unlabeled_label})")
    classes = class_labels(np.array([v for v in counts if v != 0]))
    if len(classes) < 2:
        raise DataError(name, f"only one class ({codes.get(classes[0], classes[0])}) among "
                        f"the labeled rows; {algo.name} needs two; for positive-unlabeled "
                        "data use -a usmo")
    if not algo.uses_unlabeled and n_lab < rows:
        log.info("ignoring %d unlabeled rows (label %d): %s trains on labeled rows only",
                 rows - n_lab, unlabeled_label, algo.name)
    return ClusterTraining(blocks, classes, codes, rows, n_lab, any(s["costs"] for s in S),
                           name)


def fit(training: ClusterTraining, algo, params: dict):
    """Train ``algo`` on every row; the model has the real labels and passed
    :meth:`Model.check_finite`."""
    from ssl_svm.solvers.distributed import fit_model
    from ssl_svm.training import restore_labels

    blocks = training.blocks
    if algo.name in GRAPH:
        from ssl_svm.solvers import graph_distributed

        blocks.call("set_view", None)
        m = graph_distributed.fit_model(blocks, algo.name, training.classes, params,
                                        costs=training.costs, keep=True)
        training.graph_fit = m.warm.pop("cluster_fit")  # the check's folds solve on it
        blocks.call("stash_values")  # the rows' values (-l) stay the fit's through them
        m.check_finite()
        restore_labels(m, training.codes)
        return m
    blocks.call("set_view", None)
    if len(blocks.socks) == 1:  # every block in one process: drive them there
        level = logging.getLogger("ssl.solver").getEffectiveLevel()
        m = blocks.request([(0, "drive", (blocks.d, level, (algo.name, training.classes,
                                                            params), {"costs": training.costs}))
                            ])[0]
    else:
        m = fit_model(blocks, algo.name, training.classes, params, costs=training.costs)
    m.check_finite()
    restore_labels(m, training.codes)
    log.debug("%d calls to the workers' blocks", blocks.calls)
    return m


def held_out_labels(training: ClusterTraining, algo, params: dict, k: int, seed: int,
                    on_fold=None, hide=None):
    """(the labeled rows' labels, their held-out predictions) in row order, internal codes:
    each fold's model trained on the rows in view (its labeled rows held out, and the local
    rows ``hide[b]`` of each block b too: unlabeled rows left out of every fold), then
    predicting them where they are; the folds of
    :func:`ssl_svm.solvers.crossval.stratified_folds` (k, seed) over the labeled rows."""
    from ssl_svm.solvers.crossval import stratified_folds
    from ssl_svm.solvers.distributed import fit_model
    from ssl_svm.solvers.errors import ProblemError

    blocks = training.blocks
    blocks.call("set_view", None)
    where = blocks.call("labeled_in_view")
    y = np.concatenate(blocks.call("labels_of_labeled"))
    folds = stratified_folds(y, k, seed)
    starts = np.cumsum([0] + [w.size for w in where])
    pred = np.zeros(y.size)
    try:
        for i in range(k):
            if on_fold is not None:
                on_fold(i, k)
            held = [w[folds[starts[b]:starts[b + 1]] == i] for b, w in enumerate(where)]
            for b, h in enumerate(held):
                blocks.call_one(b, "set_view", h if hide is None else np.union1d(h, hide[b]))
            try:
                m = (training.graph_fit.refit() if algo.name in GRAPH else
                     fit_model(blocks, algo.name, training.classes, params,
                               costs=training.costs))
            except ProblemError as e:
                raise ProblemError(f"cross-validation fold {i + 1} of {k}: {e} (a class has too "
                                   "few labeled rows for this many folds)") from None
            for b, h in enumerate(held):
                if h.size:
                    F = values_at(training, m, b, h)
                    pred[starts[b]:starts[b + 1]][folds[starts[b]:starts[b + 1]] == i] = \
                        m.labels_from_values(F)
    finally:
        blocks.call("set_view", None)
        if algo.name in GRAPH:
            blocks.call("restore_values")
    return y, pred


def cross_validate(training: ClusterTraining, algo, params: dict, k: int, seed: int,
                   on_fold=None) -> float:
    """:func:`solvers.crossval.cross_validate` on the blocks (:func:`held_out_labels`).
    Returns the accuracy over the labeled rows (a fraction). The graph family builds its
    graph, kernel and landmark system once, on every row (:func:`fit`), and each fold solves
    on them with its labeled rows' labels hidden, as the check's folds: the held-out rows
    stay in the graph, unlabeled (one process's -v leaves them out of a graph built per
    fold)."""
    if algo.name in GRAPH:
        log.info("-v: %s's graph and landmark system built once on every row; each fold "
                 "solves on them with its labeled rows' labels hidden (the rows stay in the "
                 "graph, unlabeled)", algo.name)
        fit(training, algo, params)
    y, pred = held_out_labels(training, algo, params, k, seed, on_fold)
    return float(np.sum(pred == y)) / y.size


def check(training: ClusterTraining, algo, params: dict, m, how: str = "auto", seed: int = 0,
           source: str | None = "TRAIN"):
    """The check after a cluster fit (:func:`ssl_svm.trust.check_fit`'s, on the blocks): the
    fit's folds trained where the rows are (``how`` auto: on the share of the unlabeled rows
    of :func:`ssl_svm.trust.check_share`, the same seeded rows as in one process), the svm on
    the labeled rows gathered here, both models' labels of the unlabeled rows compared where
    they are; said (:func:`ssl_svm.trust.report`) and returned (None when not run). ``m``:
    the fit's model, real labels."""
    import time as _time

    import scipy.sparse as sp

    from ssl_svm import trust
    from ssl_svm.solvers import progress
    from ssl_svm.training import internal_labels

    if how == "none" or not algo.uses_unlabeled or algo.positive_unlabeled:
        return None
    blocks = training.blocks
    blocks.call("set_view", None)
    unl_rows = blocks.call("unlabeled_rows")
    u = sum(r.size for r in unl_rows)
    if u == 0:
        return None
    t0 = _time.perf_counter()
    unl_fit = internal_labels(np.concatenate([m.labels_from_values(
        values_at(training, m, b, r)) if r.size else np.zeros(0)
        for b, r in enumerate(unl_rows)]), training.codes)
    if np.unique(unl_fit).size == 1:
        return None  # a one-class fit, said already
    where = blocks.call("labeled_in_view")
    parts = [blocks.call_one(b, "labeled_rows", w) for b, w in enumerate(where) if w.size]
    Xl = sp.vstack([p[0] for p in parts], format="csr")
    yl, cl = np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts])
    k = trust.folds_for(yl)  # 0: only the unlabeled rows' disagreement bounds the loss
    share = trust.check_share(k, u) if how == "auto" and k else 1.0
    if algo.name in GRAPH and share < 1.0:
        # the folds solve on the fit's graph and landmark system: on every row, as --check cv
        log.info("--check: the folds of a graph fit on a cluster keep every unlabeled row (the "
                 "fit's graph), as --check cv")
        share = 1.0
    hide, sample = None, None
    if share < 1.0:
        # the rows trust.unlabeled_sample keeps in one process: the same seeded choice over
        # the unlabeled rows in row order
        y_all = np.concatenate([np.zeros(u), np.ones(yl.size)])  # only its zeros matter
        keep = trust.unlabeled_sample(y_all, share, seed)
        if keep is not None:
            keep = keep[keep < u]
            starts = np.cumsum([0] + [r.size for r in unl_rows])
            hide = [np.setdiff1d(r, r[keep[(keep >= starts[b]) & (keep < starts[b + 1])]
                                       - starts[b]])
                    for b, r in enumerate(unl_rows)]
            sample = (keep.size, u)
    with progress.quiet_solvers():  # the folds' own iteration remarks are not the user's
        y, held = np.zeros(0), np.zeros(0)
        if k:
            y, held = held_out_labels(training, algo, trust.fold_params(algo, params, m), k,
                                      seed, hide=hide)
        svm, base = trust.baseline(Xl, yl, cl, k, seed, params)
        unl_svm = np.concatenate([svm.labels_from_values(
            blocks.call_one(b, "predict_rows", svm.function.W, svm.function.b, r))
            if r.size else np.zeros(0) for b, r in enumerate(unl_rows)])
    c = trust.comparison(algo.name, k, y, held, base, svm, unl_fit, unl_svm,
                         _time.perf_counter() - t0, sample)
    trust.report(c, source)
    return c


def values_at(training: ClusterTraining, m, b: int, rows) -> np.ndarray:
    """``m``'s decision values (rows × functions) at block b's local rows ``rows``, where they
    are: a linear model's, or a graph fit's expansion (what a new row gets, as one process's
    check takes them)."""
    if m.algorithm in GRAPH:
        return training.graph_fit.values(m, b, rows)
    fn = m.function
    return training.blocks.call_one(b, "predict_rows", fn.W, fn.b, rows)


def unlabeled_values(training: ClusterTraining, m):
    """The unlabeled rows' decision values (rows × functions), block by block in row order:
    the linear model's values there, or the graph fit's values kept there (the transductive
    solution, as in one process)."""
    blocks = training.blocks
    fn = m.function
    for b in range(len(blocks.layout)):
        rows = blocks.call_one(b, "unlabeled_rows")
        if rows.size:
            yield (blocks.call_one(b, "values_at", rows) if m.algorithm in GRAPH else
                   blocks.call_one(b, "predict_rows", fn.W, fn.b, rows))


def write_transductive(training: ClusterTraining, m, out, values: bool) -> int:
    """The unlabeled rows' predictions (:func:`unlabeled_values`), in row order, into ``out``
    (one block's lines here at a time). Returns the rows written."""
    from ssl_svm.formats.predictions import format_lines

    n = 0
    for F in unlabeled_values(training, m):
        out.write(format_lines(m, F, values))
        n += F.shape[0]
    return n
