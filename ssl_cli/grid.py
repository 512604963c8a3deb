"""``-G name=spec`` grid specifications, checked against the solvers' parameter declarations.

A spec is a comma-separated list of items; an item is a value or a range:
``START:STOP:xFACTOR`` (geometric, FACTOR > 1) or ``START:STOP:+STEP`` (arithmetic), both
including STOP when it is reached (to 9 significant digits). Examples: ``lambda=1e-4:1e-1:x10``
(4 values), ``gamma=0.5,1,2``, ``neighbors=4:12:+2``, ``kernel=linear,rbf``.
"""

from __future__ import annotations

import math

import click

from ssl_svm.selection.tuning import Grid
from ssl_svm.solvers.params import Param

MAX_VALUES = 10000  # values of one axis
MAX_POINTS = 100_000  # points of the whole grid


def _num(text: str, spec: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise click.UsageError(f"-G {spec}: '{text}' is not a number") from None
    if not math.isfinite(v):
        raise click.UsageError(f"-G {spec}: '{text}' is not a finite number")
    return v


def _clean(v: float) -> float:
    """Round away the drift of repeated products (1e-4·10³ -> 0.1, not 0.10000000000000002)."""
    return float(f"{v:.12g}")


def _range(item: str, spec: str) -> list:
    parts = item.split(":")
    if len(parts) != 3 or not parts[2] or parts[2][0] not in "x+":
        raise click.UsageError(f"-G {spec}: '{item}' is not a range; a range is "
                               "START:STOP:xFACTOR (geometric) or START:STOP:+STEP (arithmetic)")
    a, b = _num(parts[0], spec), _num(parts[1], spec)
    step = _num(parts[2][1:], spec)
    if b < a:
        raise click.UsageError(f"-G {spec}: the range '{item}' goes down (STOP < START)")
    out = []
    stop = b * (1 + 1e-9) if b > 0 else b + 1e-9 * abs(b) + 1e-300
    if parts[2][0] == "x":
        if step <= 1 or a <= 0:
            raise click.UsageError(f"-G {spec}: a geometric range needs START > 0 and "
                                   f"FACTOR > 1 (got '{item}')")
        k = 0
        while len(out) <= MAX_VALUES:
            try:
                v = _clean(a * step ** k)
            except OverflowError:  # FACTOR**k alone overflows; the product may not
                e = math.log(a) + k * math.log(step)
                v = _clean(math.exp(e)) if e < 709.7 else math.inf
            if v > stop or not math.isfinite(v):
                break
            out.append(v)
            k += 1
    else:
        if step <= 0:
            raise click.UsageError(f"-G {spec}: an arithmetic range needs STEP > 0 (got "
                                   f"'{item}')")
        k = 0
        while len(out) <= MAX_VALUES:
            v = _clean(a + step * k)
            if v > stop or not math.isfinite(v):
                break
            if k and v == out[-1]:
                raise click.UsageError(f"-G {spec}: the step of '{item}' is too small to "
                                       "change the value")
            out.append(v)
            k += 1
    if len(out) > MAX_VALUES:
        raise click.UsageError(f"-G {spec}: '{item}' has more than {MAX_VALUES} values")
    return out


def parse_axis(spec: str, params: tuple[Param, ...], algorithm: str) -> tuple[str, list]:
    """(parameter name, its values checked and converted) for one ``-G`` spec."""
    valid = ", ".join(p.name for p in params)
    if "=" not in spec:
        raise click.UsageError(f"-G {spec}: expected NAME=VALUES, e.g. -G lambda=1e-4:1e-1:x10 "
                               f"(names for -a {algorithm}: {valid})")
    name, _, values = spec.partition("=")
    name = name.strip().replace("-", "_").lstrip("_")
    p = next((q for q in params if q.name == name), None)
    if p is None:
        raise click.UsageError(f"-G {spec}: unknown parameter '{name}' for -a {algorithm} "
                               f"(valid: {valid})")
    raw: list = []
    for item in values.split(","):
        item = item.strip()
        if not item:
            raise click.UsageError(f"-G {spec}: empty value")
        if ":" in item and p.type is not str:
            raw.extend(_range(item, spec))
        else:
            raw.append(item)
    out = []
    for v in raw:
        try:
            c = p.check(v)
        except ValueError as e:
            raise click.UsageError(f"-G {spec}: {e}") from None
        if c not in out:
            out.append(c)
    return p.name, out


def parse_grid(specs: tuple[str, ...], params: tuple[Param, ...], algorithm: str,
               fixed: set[str]) -> Grid:
    """The grid of all ``-G`` specs; a name twice, or also given as a fixed option, is an
    error."""
    axes: list[tuple[str, list]] = []
    for spec in specs:
        name, values = parse_axis(spec, params, algorithm)
        if any(n == name for n, _ in axes):
            raise click.UsageError(f"-G {spec}: {name} is already on the grid")
        if name in fixed:
            opt = next(p.option for p in params if p.name == name)
            raise click.UsageError(f"-G {spec}: {name} is also fixed by {opt}; give one or the "
                                   "other")
        axes.append((name, values))
    size = math.prod(len(v) for _, v in axes)
    if size > MAX_POINTS:
        raise click.UsageError(f"the grid has {size:,} points, more than {MAX_POINTS:,}; use "
                               "fewer values per axis")
    return Grid(axes)
