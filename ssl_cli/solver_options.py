"""The solver options of ssl-train and ssl-tune, built from the registry's ``Param`` lists, and
their help: all solvers at once, or one solver's (``-a NAME -h``).

Imports no numerical library (``--help`` stays fast).
"""

from __future__ import annotations

import click
from click.shell_completion import CompletionItem

from solvers.registry import ALGORITHMS, all_params

# the command-line parameters (click names) that only some solvers take, by the name the
# registry's ``run_options`` uses
RUN_OPTION_PARAMS = {"validation_file": "validation", "negatives_as_unlabeled":
                     "negatives_as_unlabeled", "max_memory": "max_memory"}


def fmt(v) -> str:
    """A parameter value as help text and logs show it (None = chosen at run time)."""
    if v is None:
        return "auto"
    return f"{v:g}" if isinstance(v, float) else str(v)


def option_text(uses) -> str:
    """One help text for a parameter declared by several solvers: equal texts are said once,
    with the defaults grouped by value (``default 1 (rls, svm), 0.001 (tsvm, da)``)."""
    groups: dict[tuple, list[tuple[str, str]]] = {}
    for a, q in uses:
        groups.setdefault((q.help, q.range_text()), []).append((a.name, fmt(q.default)))
    parts = []
    for (text, rng), members in groups.items():
        by_default: dict[str, list[str]] = {}
        for name, d in members:
            by_default.setdefault(d, []).append(name)
        names = ", ".join(n for n, _ in members)
        if len(by_default) == 1:
            defaults = f"default {members[0][1]}"
            tail = f" [{names}]"
        else:
            defaults = "default " + ", ".join(f"{d} ({', '.join(ns)})"
                                             for d, ns in by_default.items())
            tail = ""
        if len(groups) == 1:
            parts.append(f"{text}. Range {rng}, {defaults}{tail}")
        else:
            parts.append(f"{names}: {text}; range {rng}, {defaults}")
    return "; ".join(parts)


def param_options() -> list[click.Option]:
    """A click option per parameter name over all solvers (value None = not given)."""
    opts = []
    for name, uses in all_params().items():
        p = uses[0][1]
        opts.append(click.Option([*p.flags, f"p_{name}"], default=None,
                                 metavar=p.metavar or p.type.__name__.upper(),
                                 help=option_text(uses)))
    return opts


def complete_algorithm(ctx, param, incomplete: str) -> list[CompletionItem]:
    return [CompletionItem(n, help=a.summary) for n, a in ALGORITHMS.items()
            if n.startswith(incomplete)]


def complete_file(ctx, param, incomplete: str) -> list[CompletionItem]:
    return [CompletionItem(incomplete, type="file")]


def peek_algorithm(args: list[str]) -> str | None:
    """The solver named by -a/--algorithm/-A in raw arguments (for -h), if any."""
    from solvers.registry import by_svmlin_code

    it = iter(args)
    for a in it:
        if a == "--":
            break
        value = None
        if a in ("-a", "--algorithm", "-A"):
            value = next(it, None)
            if a == "-A":
                value = by_svmlin_code().get(int(value)) if value and value.isdigit() else None
        elif a.startswith("--algorithm="):
            value = a.split("=", 1)[1]
        elif a.startswith("-a") and len(a) > 2 and not a.startswith("--"):
            value = a[2:]
        if value is not None:
            return value if value in ALGORITHMS else None
    return None


class SolverCommand(click.Command):
    """A command with solver options whose ``-h`` shows, after ``-a NAME``, the common
    options and that solver's own (its help text, range and default) instead of all."""

    def parse_args(self, ctx, args):
        ctx.meta["ssl.help_algorithm"] = peek_algorithm(args)
        return super().parse_args(ctx, args)

    def _algorithm(self, ctx):
        return ALGORITHMS.get(ctx.meta.get("ssl.help_algorithm") or "")

    def format_options(self, ctx, formatter):
        algo = self._algorithm(ctx)
        if algo is None:
            return super().format_options(ctx, formatter)
        common = []
        own = [(f"{', '.join(p.flags)} {p.metavar or p.type.__name__.upper()}",
                f"{p.help}. Range {p.range_text()}, default {fmt(p.default)}")
               for p in algo.params]  # in the solver's own order
        for param in self.get_params(ctx):
            if not isinstance(param, click.Option) or param.name.startswith("p_"):
                continue
            run_name = RUN_OPTION_PARAMS.get(param.name)
            if run_name is not None and run_name not in algo.run_options:
                continue
            rv = param.get_help_record(ctx)
            if rv is not None:
                common.append(rv)
        with formatter.section("Options"):
            formatter.write_dl(common)
        with formatter.section(f"{algo.name} options"):
            formatter.write_dl(own)

    def format_epilog(self, ctx, formatter):
        algo = self._algorithm(ctx)
        if algo is None:
            return super().format_epilog(ctx, formatter)
        code = f" (SVMlin's -A {algo.svmlin_code})" if algo.svmlin_code is not None else ""
        formatter.write_paragraph()
        formatter.write_text(f"{algo.name}{code}: {algo.summary}")
        formatter.write_paragraph()
        formatter.write_text(f"'{ctx.command_path} -h' without -a lists every solver.")
