"""``chalk optimize``: balance points and optima from the command line."""

from __future__ import annotations

import json

import pint

from chalk.solvers.pinning.pins import parse_given
from chalk.symbolic.errors import ChalkError, UsageError
from chalk.symbolic.parsing import parse_number, parse_value


def add_parser(commands, parser_class) -> None:
    optimize = commands.add_parser("optimize", help="balance points and optima (SciPy)",
                                   description="Find balance points and optima numerically.")
    kinds = optimize.add_subparsers(dest="kind", metavar="KIND", parser_class=parser_class,
                                    required=True)

    from chalk.cli.options import add_pin_options as common
    from chalk.cli.options import add_quiet

    c = kinds.add_parser("crossover", help="where two quantities are equal as a third varies")
    c.add_argument("first")
    c.add_argument("second")
    c.add_argument("--over", required=True, metavar="NAME=LOW..HIGH")
    common(c)
    b = kinds.add_parser("cheapest-batch", help="cheapest batch within a latency budget")
    b.add_argument("--latency", required=True, metavar="VALUE UNIT", help="step-time budget")
    common(b)
    lb = kinds.add_parser("largest-batch",
                          help="largest batch that fits in HBM (and a latency budget)")
    lb.add_argument("--latency", metavar="VALUE UNIT", help="optional step-time budget")
    common(lb)
    sl = kinds.add_parser("slo", help="most output per chip, or cheapest token, of whole "
                          "requests under TPOT and TTFT limits")
    sl.add_argument("--objective", choices=["throughput", "cost"], default="throughput",
                    help="output tokens per second per chip (default), or cost per token")
    sl.add_argument("--tpot", metavar="VALUE UNIT", help="longest time per output token, "
                    "e.g. '50 ms/token'")
    sl.add_argument("--ttft", metavar="VALUE UNIT", help="longest time to first token, "
                    "e.g. '2 s'")
    sl.add_argument("--chips", metavar="N,N,...", help="chip counts of a replica to try")
    common(sl)
    f = kinds.add_parser("fast-mode", help="batches behind 'k x price for s x speed'")
    f.add_argument("--price-ratio", required=True, metavar="K")
    f.add_argument("--speedup", required=True, metavar="S")
    f.add_argument("--normal-step", default="100 ms", metavar="VALUE UNIT",
                   help="longest step of the normal tier (default 100 ms)")
    common(f)
    t = kinds.add_parser("tiers", help="cheapest memory tier by hold time, and crossovers")
    t.add_argument("--kv-bytes", required=True, metavar="VALUE UNIT",
                   help="KV bytes per token, e.g. '3333 byte/token'")
    common(t)
    ch = kinds.add_parser("chinchilla", help="compute-optimal or lifetime-optimal model size")
    ch.add_argument("--fit", default="besiroglu2024", choices=["besiroglu2024", "hoffmann2022"])
    ch.add_argument("--compute", metavar="VALUE FLOP", help="pre-training budget")
    ch.add_argument("--loss", metavar="L", help="target loss (with --inference-tokens)")
    ch.add_argument("--inference-tokens", metavar="VALUE token")
    ch.add_argument("--decode-inefficiency", default="1", metavar="X")
    ch.add_argument("--json", action="store_true", help="print one JSON object")
    for kind in (c, b, lb, sl, f, t, ch):
        add_quiet(kind)


def _number(text: str, what: str) -> float:
    try:
        value, rest = parse_number(text)
    except ChalkError as exc:
        raise UsageError(f"{what} needs a plain number: {exc.message}") from None
    if rest.strip():
        raise UsageError(f"{what} is a plain number, not {text!r}")
    return value


def _base(text: str, unit: str, what: str) -> float:
    try:
        parsed = parse_value(text)
    except ChalkError as exc:
        raise UsageError(f"{what}: {exc.message}") from None
    if parsed.unit is None:
        raise UsageError(f"{what} needs a unit, e.g. '{parsed.magnitude:g} {unit}'")
    try:
        return float((parsed.magnitude * parsed.unit).to(unit).magnitude)
    except pint.DimensionalityError:
        raise UsageError(f"{what} must be in {unit}, not {parsed.unit}") from None


def run(args) -> str:
    if args.kind == "crossover":
        from chalk.applications.optimize import crossover
        from chalk.applications.sweep import parse_over

        name, low, high = parse_over(args.over)
        found = crossover(args.first, args.second, name, low, high, args.given, args.preset)
        if args.json:
            return json.dumps({"first": found.first, "second": found.second,
                               "over": found.over, "roots": found.shown, "notes": found.notes},
                              indent=2)
        return found.text()
    if args.kind == "cheapest-batch":
        from chalk.applications.optimize import cheapest_batch

        found = cheapest_batch(args.latency, args.given, args.preset)
        if args.json:
            return json.dumps({**found.shown, "whole_batch": found.whole,
                               "active_constraint": found.active,
                               "flags": list(found.flags)}, indent=2)
        return found.text()
    if args.kind == "largest-batch":
        from chalk.applications.optimize import largest_batch

        found = largest_batch(args.given, args.preset, args.latency)
        if args.json:
            return json.dumps({**found.shown, "whole_batch": found.whole,
                               "active_constraint": found.active}, indent=2)
        return found.text()
    if args.kind == "slo":
        from chalk.applications.optimize import best_under_slo

        chips = [_number(c, "--chips") for c in args.chips.split(",")] if args.chips else ()
        found = best_under_slo(args.objective, args.tpot, args.ttft, args.given, args.preset,
                               chips)
        if args.json:
            return json.dumps({**found.shown, "active_constraint": found.active,
                               "flags": list(found.flags)}, indent=2)
        return found.text()
    if args.kind == "fast-mode":
        from chalk.applications.optimize import fast_mode

        found = fast_mode(_number(args.price_ratio, "--price-ratio"),
                          _number(args.speedup, "--speedup"), args.given, args.preset,
                          args.normal_step)
        if args.json:
            return json.dumps({"feasible": found.feasible, "lines": found.lines}, indent=2)
        return found.text()
    if args.kind == "tiers":
        from chalk.applications.tiers import tier_costs

        remat = dict(parse_given(args.given)) or None
        found = tier_costs(args.kv_bytes, remat=remat, presets=args.preset if remat else ())
        return json.dumps(found.to_dict(), indent=2) if args.json else found.text()
    from chalk.applications.chinchilla import compute_optimal, lifetime_optimum

    if args.compute:
        found = compute_optimal(_base(args.compute, "FLOP", "--compute"), args.fit)
        if args.json:
            return json.dumps({"params": found.params, "tokens": found.tokens,
                               "tokens_per_param": found.tokens_per_param, "loss": found.loss},
                              indent=2)
        return found.line()
    if args.loss and args.inference_tokens:
        found = lifetime_optimum(_number(args.loss, "--loss"),
                                 _base(args.inference_tokens, "token", "--inference-tokens"),
                                 args.fit, _number(args.decode_inefficiency,
                                                   "--decode-inefficiency"))
        if args.json:
            return json.dumps({"optimum": vars(found.optimum), "heuristic": vars(found.heuristic),
                               "excess": found.excess}, indent=2)
        return found.text()
    raise UsageError("give --compute, or --loss with --inference-tokens")
