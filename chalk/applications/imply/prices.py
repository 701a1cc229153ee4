"""The deductions from the sheet's prices and their ratios: the KV size from the
long-context step, decode utilisation, the cost floor, the batch and fast tiers."""

from __future__ import annotations

from chalk.api import Solution, solve
from chalk.applications.imply.context import (
    DEFAULT_CHIP,
    DEFAULT_INTENSITY,
    Context,
    in_unit,
    price_pin,
)
from chalk.applications.imply.results import Deduction, central, central_text
from chalk.symbolic.errors import ChalkError


def long_context_deductions(ctx: Context) -> list[Deduction]:
    sheet = ctx.sheet
    if not sheet.long_context:
        return [Deduction("kv", "KV-cache bytes per token from the long-context price step",
                          ("kv_bytes_per_token",),
                          skipped="the sheet has no long-context price tier")]
    threshold = sheet.long_context["threshold"]
    pins = {"long_context_threshold": price_pin(threshold)}
    has_chip = "chip_flops" in ctx.pinned and "hbm_bandwidth" in ctx.pinned
    if "hardware_intensity" not in ctx.pinned and not has_chip:
        pins["hardware_intensity"] = DEFAULT_INTENSITY[1]
        ctx.assume(DEFAULT_INTENSITY)
    out = [ctx.run("kv", "KV-cache bytes per token from the long-context price step",
                   ["kv_bytes_per_token"], pins,
                   explain=lambda s: [f"the price step at {threshold.text} is taken as the "
                                      "context where KV reads match the matmuls"])]
    long_in = sheet.long_context.get("input")
    if long_in is not None:
        note = []
        long_out = sheet.long_context.get("output")
        if long_out is not None:
            factor = in_unit(long_out, "USD/Mtoken") / in_unit(sheet.prices["output"], "USD/Mtoken")
            note = [f"output price above the step: x{factor:.3g} ({long_out.text} against "
                    f"{sheet.prices['output'].text})"]
        out.append(ctx.run("premium", "Long-context premium", ["long_context_price_ratio"],
                           {"price_input": price_pin(sheet.prices["input"]),
                            "price_input_long": price_pin(long_in)},
                           explain=lambda s: note, compare=False))
    return out


def decode_deduction(ctx: Context) -> Deduction:
    sheet = ctx.sheet
    output, input_ = sheet.prices["output"], sheet.prices["input"]
    return ctx.run(
        "decode", "Decode utilisation from the output/input price ratio",
        ["output_input_price_ratio", "decode_mfu_ratio"],
        {"price_input": price_pin(input_), "price_output": price_pin(output)},
        explain=lambda s: [f"from the output price {output.text} over the input price "
                           f"{input_.text}",
                           "decode is memory-bound: at this ratio it uses about "
                           f"{100 * central(s, 'decode_mfu_ratio'):.3g}% of the FLOPs prefill "
                           "does per chip-second"], compare=False)



def floor_deduction(ctx: Context) -> Deduction:
    sheet = ctx.sheet
    if ctx.chip_presets:
        ctx.assume(("chip", DEFAULT_CHIP, "assumed for the cost floor; pass --preset with "
                                          "another accelerator to change it"))
    input_price = sheet.prices["input"]
    bound: dict = {}

    def explain(s):
        ratio = in_unit(input_price, "USD/token") / central(s, "cost_per_token_floor",
                                                            "USD/token")
        lines = [f"input price {input_price.text} is {ratio:.3g} times this floor (prefill "
                 "at full utilisation)"]
        if ratio < 1:
            lines.extend(_below_floor(ctx, s, bound))
        return lines

    d = ctx.run("floor", "Cost floor per token on the stated chip", ["cost_per_token_floor"],
                {}, extra_presets=ctx.chip_presets, explain=explain, compare=False)
    if bound:
        d.details["below_floor"] = bound
    return d


def _below_floor(ctx: Context, floor: Solution, bound: dict) -> list[str]:
    """An input price under the floor, in words: the largest model the price pays for on
    the chip (solved backwards, price = floor), or, where a model preset fixes the model,
    a subsidy or a cheaper chip-hour."""
    price = ctx.sheet.prices["input"]
    pins = floor.derivation.pins
    chip = pins["chip_flops"].preset or "the given chip"
    terms = (f"{floor.derivation.show('flops_per_param')}, prefill at full utilisation, "
             f"{chip} at {floor.derivation.show('chip_flops')} and "
             f"{floor.derivation.show('chip_price')}")
    if "active_params" not in ctx.defaults and "active_params" not in ctx.user:
        bound.update({"chip": chip, "active_params": None})
        return [f"below the floor: the model's active parameters "
                f"({central_text(floor, 'active_params')}) are fixed by its preset, so at "
                f"the floor's assumptions ({terms}) this price does not pay for the compute: "
                "a subsidy, or chip-hours cheaper than assumed"]
    given = {n: v for n, v in {**ctx.defaults, **ctx.user}.items() if n != "active_params"}
    try:
        largest = solve("active_params", {**given, "cost_per_token_floor": price_pin(price)},
                        [*ctx.presets, *ctx.chip_presets])
    except ChalkError as exc:
        bound.update({"chip": chip, "skipped": exc.message})
        return [f"below the floor; the largest model it pays for was not solved: {exc.message}"]
    bound.update({"chip": chip, "active_params": central(largest, "active_params", "param")})
    return [f"below the floor: this price implies at most active_params = "
            f"{central_text(largest, 'active_params')} on {chip} (at the floor's "
            f"assumptions: {terms}), or a subsidy"]


def batch_deductions(ctx: Context) -> list[Deduction]:
    """A batch discount read through the fast-tier relation the other way round: the
    standard tier is the dearer, faster one, the batch tier the normal one."""
    sheet = ctx.sheet
    if not sheet.batch:
        return []
    ratio = sheet.batch["price_ratio"]
    premium = 1 / ratio.value  # the standard price over the batch price

    def explain(s):
        times = 1 / central(s, "fast_batch_ratio")
        return [f"the batch tier at {ratio.text} times the standard price: the standard tier "
                f"is the fast tier at {premium:.3g} times the batch price; fast_speedup = 1 "
                "is assumed (standard steps no faster than batch ones: if batch steps are "
                "slower, the batch is larger still)",
                f"so the batch tier runs at least {times:.3g} times the standard batch on "
                "the same chips at the same margin, or sells chip time that would otherwise "
                "sit idle, which the prices alone cannot tell apart"]

    return [ctx.run("batch", "Batch tier: what the discount says about the batch",
                    ["fast_batch_ratio"],
                    {"fast_price_ratio": f"{premium!r}", "fast_speedup": "1"},
                    explain=explain, compare=False)]


def fast_deductions(ctx: Context) -> list[Deduction]:
    from chalk.applications.optimize import fast_mode

    sheet = ctx.sheet
    fast = sheet.fast_mode
    if not fast and "fast_price_ratio" not in ctx.user:
        return []
    title = "Fast mode: what k x the price for s x the speed says about the batch"
    ratio = ctx.user.get("fast_price_ratio") or (price_pin(fast["price_ratio"])
                                                 if "price_ratio" in fast else None)
    speedup = ctx.user.get("fast_speedup") or (price_pin(fast["speedup"])
                                               if "speedup" in fast else None)
    if ratio is None or speedup is None:
        missing = "price ratio" if ratio is None else "speed-up"
        return [Deduction("fast", title, ("fast_batch_ratio",),
                          skipped=f"the sheet gives no {missing}; pass it with --given "
                                  f"\"fast_{'price_ratio' if ratio is None else 'speedup'}=...\"")]
    pins = {"fast_price_ratio": ratio, "fast_speedup": speedup}

    def explain(s):
        share = 1 / central(s, "fast_batch_ratio")
        return [f"the fast tier runs about 1/{share:.3g} of the normal batch: nearer the "
                "latency floor, where weight reads dominate a step"]

    d = ctx.run("fast", title, ["fast_batch_ratio"], pins, compare=False, explain=explain)
    if d.solution is None:
        return [d]
    k = d.solution.derivation.values["fast_price_ratio"]
    s = d.solution.derivation.values["fast_speedup"]
    given = {n: v for n, v in {**ctx.defaults, **ctx.user}.items()
             if n not in ("fast_price_ratio", "fast_speedup")}
    try:
        found = fast_mode(k, s, given, [*ctx.presets, *ctx.chip_presets])
    except ChalkError as exc:
        d.lines.append("batches and step times: the optimiser needs a model and a deployment "
                       "as well: pass a model preset (or total_params and kv_bytes_per_token), "
                       "context_length and n_chips with --preset and --given")
        d.details["optimiser"] = {"skipped": exc.message}
        return [d]
    d.lines.extend(found.lines[2:])
    d.details["optimiser"] = {"feasible": found.feasible, "batch": found.batch,
                              "batch_fast": found.batch_fast, "lines": found.lines}
    return [d]
