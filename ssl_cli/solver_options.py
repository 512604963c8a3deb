"""The solver options of ssl-train and ssl-tune, built from the registry's ``Param`` lists, and
their help: all solvers at once, or one solver's (``-a NAME -h``).

Imports no numerical library (``--help`` stays fast).
"""

from __future__ import annotations

import math

import click
from click.shell_completion import CompletionItem

from ssl_svm.solvers.registry import ALGORITHMS, all_params, by_svmlin_code

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

    # the usage -h prints without -a (LIBSVM's ~40 lines); --help prints every option
    short_usage = ""

    def parse_args(self, ctx, args):
        ctx.meta["ssl.help_algorithm"] = peek_algorithm(args)
        head = args[:args.index("--")] if "--" in args else args
        ctx.meta["ssl.help_short"] = "-h" in head and "--help" not in head
        return super().parse_args(ctx, args)

    def get_help(self, ctx):
        if (self.short_usage and ctx.meta.get("ssl.help_short")
                and self._algorithm(ctx) is None):
            return self.short_usage.format(prog=ctx.command_path,
                                           solvers=solver_lines()).rstrip("\n")
        return super().get_help(ctx)

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
        formatter.write_text(f"'{ctx.command_path} --help' without -a lists every option of "
                             "every solver.")


def solver_lines() -> str:
    """One line per solver for a short usage: its name and the head of its summary."""
    lines = []
    for name, a in ALGORITHMS.items():
        head = a.summary.split(" (")[0].split(":")[0]
        lines.append(f"  {name:<12} {head[:84]}")
    return "\n".join(lines)


def choose_algorithm(ctx, algorithm: str | None, svmlin: str | None):
    """The registry entry named by -a NAME or SVMlin's -A N (default svm); usage errors for an
    unknown name or a contradiction."""
    codes = by_svmlin_code()
    if svmlin is not None:
        try:
            code = int(svmlin)
        except ValueError:
            code = None
        if code not in codes:
            raise click.BadParameter(
                f"'{svmlin}' is not one of {', '.join(str(c) for c in sorted(codes))} "
                f"({', '.join(f'{c} = {n}' for c, n in sorted(codes.items()))})",
                ctx, param_hint="'-A'")
        name = codes[code]
        if algorithm is not None and algorithm != name:
            raise click.UsageError(f"-A {svmlin} means -a {name}, but -a {algorithm} was given",
                                   ctx)
        return ALGORITHMS[name]
    name = algorithm or "svm"
    if name not in ALGORITHMS:
        raise click.BadParameter(f"unknown algorithm '{name}' (available: "
                                 f"{', '.join(ALGORITHMS)})", ctx, param_hint="'-a'")
    return ALGORITHMS[name]


def solver_params(ctx, algo, kwargs, grid_py: bool = False, own_only: bool = False) -> dict:
    """Every parameter of ``algo``: its defaults and the options given (checked); an option of
    another solver is a usage error (skipped with ``own_only``: several solvers share the
    options, each takes its own). ``grid_py``: the call has LIBSVM's ``-c`` (tools/grid.py),
    which also passes ``-g`` whatever the kernel: a ``-g`` the solver has no use for is then
    ignored with a warning, not a usage error (which grid.py would hide, then wait for ever)."""
    params = algo.defaults()
    for name, uses in all_params().items():
        key = f"p_{name}"
        if ctx.get_parameter_source(key) != click.core.ParameterSource.COMMANDLINE:
            continue
        p = algo.param(name)
        if p is None and own_only:
            continue
        if p is None and grid_py and name == "gamma":
            click.echo(f"{ctx.command_path}: warning: -g {kwargs[key]} ignored: -a {algo.name} "
                       "has no kernel (LIBSVM's grid.py passes -g with -c; give it -log2g null "
                       "to search C alone)", err=True)
            continue
        if p is None:
            users = ", ".join(a.name for a, _ in uses)
            raise click.UsageError(f"option {uses[0][1].option} is not used by -a {algo.name} "
                                   f"(it is used by: {users})", ctx)
        try:
            params[name] = p.check(kwargs[key])
        except ValueError as e:
            raise click.UsageError(str(e), ctx) from None
    return params


def run_options(ctx, algo, validation_file, max_memory, negatives_as_unlabeled) -> dict:
    """Check --validation / --max-memory / --negatives-as-unlabeled against the solver;
    returns what fit() gets."""
    run = {}
    for name, flag, value in (("validation", "--validation", validation_file),
                              ("max_memory", "--max-memory", max_memory),
                              ("negatives_as_unlabeled", "--negatives-as-unlabeled",
                               True if negatives_as_unlabeled else None)):
        if value is None:
            continue
        if name not in algo.run_options:
            users = ", ".join(a.name for a in ALGORITHMS.values() if name in a.run_options)
            raise click.UsageError(f"option {flag} is not used by -a {algo.name} (it is used "
                                   f"by: {users})", ctx)
        if name == "max_memory":
            from ssl_svm.solvers.kernels import parse_memory

            try:
                run[name] = parse_memory(value)
            except ValueError as e:
                raise click.BadParameter(str(e), ctx, param_hint="'--max-memory'") from None
        else:
            run[name] = value
    early = None
    if algo.param("early_stop") is not None:
        early = ctx.params.get("p_early_stop") or algo.param("early_stop").default
    if early in ("validation", "mixed") and "validation" not in run:
        raise click.UsageError(f"--early-stop {early} needs --validation FILE", ctx)
    return run


def apply_c(ctx, algo, params: dict, c: float) -> None:
    """-c C (LIBSVM's C, as tools/grid.py passes it): the regulariser becomes 1/(2C)."""
    if not (c > 0 and math.isfinite(c)):
        raise click.BadParameter(f"must be in (0, inf) (got {c:g})", ctx, param_hint="'-c'")
    name = "lambda" if algo.param("lambda") else "gamma_a" if algo.param("gamma_a") else None
    if name is None:
        raise click.UsageError(f"-c is not used by -a {algo.name}", ctx)
    p = algo.param(name)
    if ctx.get_parameter_source(f"p_{name}") == click.core.ParameterSource.COMMANDLINE:
        raise click.UsageError(f"-c sets {p.option}; give one or the other", ctx)
    try:
        params[name] = p.check(1.0 / (2.0 * c))
    except ValueError as e:
        raise click.UsageError(f"-c {c:g}: {e}", ctx) from None
