"""Prediction files: one line per row, in input order.

Without values: the predicted label. With values: the label, then the decision value (binary
models) or one value per label in the model's ``labels`` order (one-vs-rest). Floats are
written with ``repr`` (exact).
"""

from __future__ import annotations

import numpy as np


def format_lines(model, F: np.ndarray, values: bool, comments: list[str] | None = None,
                 probability: bool = False) -> str:
    """Prediction lines for decision values F (rows x functions), ``\\n``-terminated: the
    label, then with ``values`` the decision value(s) or with ``probability`` one probability
    per label in the model's label order; with ``comments``, each row's input comment
    follows as `` # comment`` (none if it had none)."""
    labels = model.labels_from_values(F).tolist()
    if probability:
        P = model.probabilities(F)
        heads = [f"{v} " + " ".join(map(repr, row)) for v, row in zip(labels, P.tolist())]
    elif not values:
        heads = [str(v) for v in labels]
    elif F.shape[1] == 1:
        heads = [f"{v} {f!r}" for v, f in zip(labels, F[:, 0].tolist())]
    else:
        heads = [f"{v} " + " ".join(map(repr, row)) for v, row in zip(labels, F.tolist())]
    if comments is None:
        return "".join(h + "\n" for h in heads)
    return "".join(f"{h} # {c}\n" if c else h + "\n" for h, c in zip(heads, comments))
