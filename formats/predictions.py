"""Prediction files: one line per row, in input order.

Without values: the predicted label. With values: the label, then the decision value (binary
models) or one value per label in the model's ``labels`` order (one-vs-rest). Floats are
written with ``repr`` (exact).
"""

from __future__ import annotations

import numpy as np


def format_lines(model, F: np.ndarray, values: bool) -> str:
    """Prediction lines for decision values F (rows x functions), ``\\n``-terminated."""
    labels = model.labels_from_values(F).tolist()
    if not values:
        return "".join(f"{v}\n" for v in labels)
    if F.shape[1] == 1:
        return "".join(f"{v} {f!r}\n" for v, f in zip(labels, F[:, 0].tolist()))
    return "".join(f"{v} " + " ".join(map(repr, row)) + "\n"
                   for v, row in zip(labels, F.tolist()))
