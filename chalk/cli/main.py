"""The ``chalk`` command line: a thin layer over the Python API.

User mistakes print one line to stderr and exit with status 2; nothing is
printed to stdout until the whole answer is ready.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from chalk.cli.options import (
    Parser,
    UsageProblem,
    add_pin_options,
    add_question,
    add_quiet,
    add_solve,
)
from chalk.symbolic.errors import ChalkError, KnowledgeError

EXAMPLES = """examples:
  chalk solve critical_batch_size --preset lecture --given "sparsity_factor=8"
  chalk solve kv_bytes_per_token --preset lecture \\
      --given "context_crossover=200k token" --given "active_params=100e9 param"
  chalk explain step_time --preset h100 --preset deepseek_v3
  chalk list relations --filter batch
"""


def build_parser() -> argparse.ArgumentParser:
    """The ``chalk`` parser: built once per process (about 5 ms) and shared, as parsing
    leaves it unchanged (an appended option copies its default list before adding)."""
    global _PARSER
    if _PARSER is None:
        _PARSER = _new_parser()
    return _PARSER


_PARSER: argparse.ArgumentParser | None = None


def _new_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="chalk", description="Deduce how LLMs are trained and served from "
                     "public numbers, with units checked and every step shown.",
                     epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version="chalk 0.1.0")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    add_solve(commands)

    explain = commands.add_parser("explain", help="show the plan and diagnosis, no numbers",
                                  description="Show how TARGETs would be solved, or what is "
                                  "missing, without computing numbers.")
    add_question(explain)
    add_quiet(explain)

    imply = commands.add_parser("imply", help="everything a price sheet implies",
                                description="Run every deduction a price sheet's fields "
                                "allow, stating the assumptions each needed.")
    imply.add_argument("sheets", nargs="*", metavar="PRICE_SHEET",
                       help="a shipped sheet id (chalk list sheets) or a YAML file; with "
                            "several, a table across them")
    add_pin_options(imply, given_help="an assumption to use instead of the defaults "
                                      "(repeatable)")
    imply.add_argument("--all", action="store_true", help="every shipped sheet, as a table")
    add_quiet(imply)
    imply.add_argument("--brief", action="store_true", help="results only, no derivations")
    imply.add_argument("--plot", metavar="FILE", help="also draw the cache prices against the "
                       "tiers' holding costs (PNG or SVG)")

    atlas = commands.add_parser("atlas", help="what every shipped price sheet implies, "
                                "fitted at once", description="Fit every shipped price sheet "
                                "at once: decode utilisation per provider, KV bytes per token "
                                "from long-context steps, the memory tier cache prices point "
                                "to, each with a 90% interval.")
    atlas.add_argument("--json", action="store_true", help="print one JSON object")
    add_quiet(atlas)
    atlas.add_argument("--plot", metavar="FILE", help="also draw cache prices against the "
                       "tiers' holding costs (PNG or SVG)")

    sweep = commands.add_parser("sweep", help="a target against one pin over a grid",
                                description="Evaluate TARGETs over a grid of one pin, with "
                                "regime changes marked.")
    sweep.add_argument("targets", nargs="+", metavar="TARGET", help="quantities to tabulate")
    sweep.add_argument("--over", required=True, metavar="NAME=START..STOP",
                       help="the swept pin, e.g. 'batch_size=1..4096 sequence'")
    sweep.add_argument("--steps", type=int, default=21, help="grid points (default 21)")
    sweep.add_argument("--log", action="store_true", help="space the grid logarithmically")
    add_pin_options(sweep, json=False)
    sweep.add_argument("--regime", choices=["compute-bound", "memory-bound"])
    add_quiet(sweep)
    form = sweep.add_mutually_exclusive_group()
    form.add_argument("--csv", action="store_true", help="print CSV")
    form.add_argument("--json", action="store_true", help="print one JSON object")

    from chalk.applications.plots import PLOTS

    plot = commands.add_parser("plot", help="draw one of the lecture's figures",
                               description="Draw a figure from the engine: "
                               + ", ".join(PLOTS))
    plot.add_argument("name", metavar="NAME")
    add_pin_options(plot, json=False)
    plot.add_argument("--sheet", help="price sheet drawn over cost_vs_context")
    plot.add_argument("--out", required=True, metavar="FILE", help="PNG or SVG file to write")
    plot.add_argument("--svg", action="store_true", help="write SVG (also chosen by .svg)")
    add_quiet(plot)

    fit = commands.add_parser("fit", help="fit unknowns to many noisy observations",
                              description="Estimate unknowns from observations with "
                              "uncertainties (a TOML file, docs/FIT.md): 90% intervals, what "
                              "the observations cannot fix, residuals and outliers.")
    fit.add_argument("file", metavar="FILE", help="a fit file (TOML)")
    fit.add_argument("--loss", choices=["linear", "soft_l1", "huber", "cauchy"],
                     help="least squares (linear) or a robust loss; default: the file's, "
                          "else linear")
    fit.add_argument("--outlier-z", type=float, default=None, metavar="Z",
                     help="flag residuals beyond Z standard deviations (default 3)")
    fit.add_argument("--scale-intervals", action="store_true", default=None,
                     help="widen the intervals by the square root of the observed dispersion "
                          "(chi-squared / dof) when above 1; default: the file's "
                          "scale_by_dispersion, else off")
    fit.add_argument("--json", action="store_true", help="print one JSON object")
    add_quiet(fit)
    fit.add_argument("--plot", metavar="FILE", help="also draw the residuals (PNG or SVG)")

    report = commands.add_parser("report", help="run a deduction file into a report",
                                 description="Run a deduction file (TOML) and write the "
                                 "report as HTML and/or Markdown. 'lecture' names the shipped "
                                 "file with every deduction of the lecture.")
    report.add_argument("file", metavar="FILE", help="a deduction file, or 'lecture'")
    report.add_argument("--html", metavar="OUT", help="write a self-contained HTML file")
    report.add_argument("--md", metavar="OUT", help="write Markdown (plots as PNG beside it)")
    add_quiet(report)

    from chalk.cli.optimize import add_parser as add_optimize

    add_optimize(commands, Parser)
    from chalk.cli.calibrate import add_parser as add_calibrate

    add_calibrate(commands, Parser)

    listing = commands.add_parser("list", help="list variables, relations or presets",
                                  description="List what chalk knows.")
    listing.add_argument("what", nargs="?", default="all", metavar="KIND",
                         choices=["all", "variables", "relations", "conditions", "presets",
                                  "sheets"])
    listing.add_argument("-f", "--filter", default="", metavar="TEXT",
                         help="only entries whose name, description or source contain TEXT")
    listing.add_argument("--json", action="store_true", help="print one JSON object")
    add_quiet(listing)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``chalk`` command line on ``argv`` (default: ``sys.argv[1:]``).

    Returns the exit status: 0, 2 for a user mistake (one line on stderr), 130 on
    Ctrl-C, 1 for a problem in chalk itself (one line, or its traceback with
    ``CHALK_TRACEBACK=1``).
    """
    from chalk.cli.boundary import internal_error, interrupted

    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 0
        from chalk.solvers.bulk import progress

        progress.set_quiet(getattr(args, "quiet", False))
        with progress.task(f"chalk {args.command}"):
            output = _run(args)
    except UsageProblem as exc:
        print(f"chalk: error: {exc}", file=sys.stderr)
        return 2
    except ChalkError as exc:
        print(f"chalk: error: {exc.message}", file=sys.stderr)
        return exc.exit_status
    except KnowledgeError as exc:
        print(f"chalk: knowledge base error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return interrupted()
    except Exception as exc:  # a bug: one line, not a page of Python
        return internal_error(exc)
    sys.stdout.write(output if output.endswith("\n") else output + "\n")
    return 0


def _run(args) -> str:
    from chalk import api

    if args.command == "solve":
        if args.seed < 0:
            raise UsageProblem(f"--seed must be a whole number, 0 or more, not {args.seed}")
        options = {"regime": args.regime, "seed": args.seed}
        if args.samples is not None:
            low, high = api.SAMPLE_LIMITS
            if not low <= args.samples <= high:
                raise UsageProblem(f"--samples must be between {low} and {high}")
            options["samples"] = args.samples
        if args.rtol is not None:
            low, high = api.RTOL_LIMITS
            if not low < args.rtol < high:
                raise UsageProblem(f"--rtol must be between {low:g} and {high:g}")
            options["rtol"] = args.rtol
        if args.calibrated is not None or args.calibration is not None:
            from chalk.cli.calibrate import solve_calibrated

            return solve_calibrated(args, options)
        solution = api.solve(args.targets, args.given, args.preset, **options)
        if args.json:
            output = solution.to_json()
        elif args.brief:
            from chalk.solvers.records.brief import brief_text

            output = brief_text(solution.summary().splitlines(), solution.derivation)
        else:
            output = str(solution)
        from chalk.cli.fast import remember

        remember(args, solution)  # compiled for the next run of a question of this shape
        return output
    if args.command == "explain":
        explanation = api.explain(args.targets, args.given, args.preset)
        return json.dumps(explanation.to_dict(), indent=2) if args.json else explanation.text()
    if args.command == "sweep":
        from chalk.applications.sweep import parse_over, sweep

        name, start, stop = parse_over(args.over)
        table = sweep(args.targets, name, start, stop, args.steps, args.log, args.given,
                      args.preset, args.regime)
        return table.to_csv() if args.csv else table.to_json() if args.json else table.text()
    if args.command == "report":
        return _report(args)
    if args.command == "fit":
        return _fit(args)
    if args.command == "plot":
        from chalk.applications.plots import plot, render
        from chalk.cli.output import PLOT_FORMATS, Outputs

        outputs = Outputs([args.sheet])
        fmt = outputs.declare("--out", args.out, PLOT_FORMATS, "svg" if args.svg else None)
        options = {"sheet": args.sheet} if args.sheet else {}
        if args.sheet and args.name != "cost_vs_context":
            raise UsageProblem("--sheet applies to cost_vs_context only")
        data = render(plot(args.name, args.given, args.preset, **options), fmt)
        outputs.write({args.out: data})
        return f"wrote {args.out} ({fmt}, {len(data):,} bytes)"
    if args.command == "optimize":
        from chalk.cli.optimize import run as run_optimize

        return run_optimize(args)
    if args.command == "calibrate":
        from chalk.cli.calibrate import run as run_calibrate

        return run_calibrate(args)
    if args.command == "imply":
        return _imply(args)
    if args.command == "atlas":
        return _atlas(args)
    from chalk.listing import listing

    return listing(args.what, args.filter, args.json)


def _plot_destination(args, inputs=()):
    """The checked ``--plot`` destination and its format (None without ``--plot``), found
    before any work, not after."""
    if args.plot is None:
        return None
    from chalk.cli.output import PLOT_FORMATS, Outputs

    outputs = Outputs(inputs)
    return outputs, outputs.declare("--plot", args.plot, PLOT_FORMATS)


def _with_plot(out: str, args, destination, figure) -> str:
    """Write ``figure()`` to the ``--plot`` destination if there is one, and say so."""
    if destination is None:
        return out
    from chalk.applications.plots import render

    outputs, fmt = destination
    outputs.write({args.plot: render(figure(), fmt)})
    return out if args.json else f"{out}\nwrote {args.plot}"


def _atlas(args) -> str:
    from chalk.applications.atlas import atlas

    destination = _plot_destination(args)
    result = atlas()
    out = json.dumps(result.to_dict(), indent=2) if args.json else result.text()
    return _with_plot(out, args, destination, result.figure)


def _imply(args) -> str:
    from chalk.applications.comparison import compare, implied_tier_figure
    from chalk.applications.imply import imply

    if args.all and args.sheets:
        raise UsageProblem("give sheet ids or --all, not both")
    if not args.all and not args.sheets:
        raise UsageProblem("name a price sheet (chalk list sheets) or pass --all")
    destination = _plot_destination(args, args.sheets)
    if args.all:
        from chalk.knowledge.price_sheets import shipped_sheets

        names = list(shipped_sheets())
    else:
        names = args.sheets
    if len(names) == 1 and not args.all:
        result = imply(names[0], args.given, args.preset)
        implications = [result]
        out = (json.dumps(result.to_dict(), indent=2) if args.json
               else result.text(derivations=not args.brief))
    else:
        from chalk.solvers.bulk.progress import counted

        result = compare(counted("price sheets", names), args.given, args.preset)
        implications = result.implications
        out = json.dumps(result.to_dict(), indent=2) if args.json else result.text()
    return _with_plot(out, args, destination, lambda: implied_tier_figure(implications))


def _fit(args) -> str:
    from chalk.applications.fit import fit

    destination = _plot_destination(args, [args.file])
    if args.outlier_z is not None and not 1 <= args.outlier_z <= 20:
        raise UsageProblem("--outlier-z must be between 1 and 20")
    result = fit(args.file, loss=args.loss, outlier_z=args.outlier_z,
                 scale_intervals=args.scale_intervals)
    out = result.to_json() if args.json else result.text()
    return _with_plot(out, args, destination, result.figure)


def _report(args) -> str:
    from pathlib import Path

    from chalk.cli.output import HTML_FORMATS, MARKDOWN_FORMATS, Outputs
    from chalk.report import build, markdown, render_html
    from chalk.report.deduction import DEDUCTIONS_DIR

    inputs = [args.file]
    # os.path.exists, not Path.exists: a name the system cannot look up (too long) is
    # no file here, and the reader says so in one line
    if not os.path.exists(args.file) and not args.file.endswith(".toml"):
        inputs.append(DEDUCTIONS_DIR / f"{args.file}.toml")  # a shipped file, by its name
    outputs = Outputs(inputs)
    if args.html is not None:  # say so before minutes of work, not after
        outputs.declare("--html", args.html, HTML_FORMATS)
    if args.md is not None:
        outputs.declare("--md", args.md, MARKDOWN_FORMATS)
    built = build(args.file)
    contents: dict[str, bytes] = {}
    if args.html is not None:
        contents[args.html] = render_html(built).encode("utf-8")
    if args.md is not None:
        target = Path(args.md)
        text, assets = markdown(built, f"{target.stem}-")
        contents[args.md] = text.encode("utf-8")
        for name, data in assets.items():
            contents[str(target.parent / name)] = data
    if not contents:
        text, _ = markdown(built)
        return text
    outputs.write(contents)
    return "wrote " + ", ".join(contents)
