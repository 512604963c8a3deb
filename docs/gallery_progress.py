"""Says on stderr which gallery example ``make docs`` runs and how long it took: with ``-q``
sphinx is otherwise silent for minutes (longer on a cold numba cache)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

_started: dict[str, float] = {}


def say(gallery_conf, fname, when) -> None:
    """sphinx-gallery's ``reset_modules`` hook: one line before an example, one after."""
    if fname is None:
        return
    name = Path(fname).name
    if when == "before":
        _started[name] = time.perf_counter()
        print(f"   gallery: running {name} ...", file=sys.stderr, flush=True)
    elif name in _started:
        took = time.perf_counter() - _started.pop(name)
        print(f"   gallery: {name} done ({took:.0f} s)", file=sys.stderr, flush=True)
