"""``chalk imply``: everything a price sheet implies, with the assumptions it needed.

Each deduction is an ordinary solve whose pins come from the sheet, from the
user, and, where neither says, from a stated default (the lecture's 100B active
parameters, its 300 FLOP/byte, an H100 for costs). Deductions the sheet cannot
support are listed with the reason, not dropped silently.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from chalk.api import Solution, load_presets, resolve, solve
from chalk.knowledge import load_model
from chalk.knowledge.price_sheets import PriceSheet, price_sheet
from chalk.solvers.pinned import Layer
from chalk.solvers.pins import parse_given
from chalk.symbolic.errors import ChalkError
from chalk.symbolic.parsing import parse_unit_cached
from chalk.symbolic.printing.quantities import format_seconds

DEFAULT_ACTIVE = ("active_params", "100e9 param",
                  "assumed: the lecture's guess for a frontier model (1:31:27-1:31:38)")
DEFAULT_INTENSITY = ("hardware_intensity", "300 FLOP/byte",
                     "assumed: the lecture's FLOP per byte of HBM bandwidth (18:05-18:46)")
DEFAULT_CHIP = "h100"


@dataclass
class Deduction:
    """One thing the sheet implies, or why it cannot be deduced."""

    title: str
    targets: tuple[str, ...]
    solution: Solution | None = None
    skipped: str = ""
    lines: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        out = {"title": self.title, "targets": list(self.targets), "summary": self.lines}
        if self.solution is not None:
            out.update(self.solution.to_dict())
        if self.skipped:
            out["skipped"] = self.skipped
        return out


@dataclass
class Implication:
    sheet: PriceSheet
    assumptions: list[tuple[str, str, str]]
    deductions: list[Deduction]

    def text(self, derivations: bool = True) -> str:
        s = self.sheet
        lines = [f"{s.title} ({s.id}), prices of {s.date}", f"source: {s.source}", ""]
        lines.append("assumptions")
        for name, value, origin in self.assumptions:
            lines.append(f"  {name} = {value}  ({origin})")
        for index, d in enumerate(self.deductions, 1):
            lines.append("")
            lines.append(f"{index}. {d.title}")
            if d.skipped:
                lines.append(f"   not deduced: {d.skipped}")
                continue
            lines.extend(f"   {line}" for line in d.lines)
            if derivations and d.solution is not None:
                body = d.solution.derivation.text().splitlines()
                start = body.index("derivation") if "derivation" in body else 0
                lines.extend(f"   {line}" for line in body[start:])
        return "\n".join(lines)

    def to_dict(self) -> dict:
        s = self.sheet
        return {
            "sheet": {"id": s.id, "provider": s.provider, "model": s.model, "source": s.source,
                      "date": s.date},
            "assumptions": [{"name": n, "value": v, "origin": o} for n, v, o in self.assumptions],
            "deductions": [d.to_dict() for d in self.deductions],
        }


def _price(fact) -> str:
    return f"{fact.value:g} {fact.unit}"


def imply(sheet: str | PriceSheet, given: Iterable[str] | Mapping[str, object] = (),
          presets=()) -> Implication:
    """Run every deduction the sheet's fields allow."""
    sheet = price_sheet(sheet) if isinstance(sheet, str) else sheet
    model = load_model()
    given_pairs = [(model.variable(n).name, v) for n, v in parse_given(given)]
    preset_objects = load_presets(presets)
    resolved = resolve(model, dict(given_pairs), preset_objects)
    pinned, conventions = resolved.pins, resolved.conventions
    user = dict(given_pairs)
    assumptions: list[tuple[str, str, str]] = []
    for name, pin in pinned.items():
        if pin.layer is Layer.GIVEN:
            assumptions.append((name, pin.text, "given"))
        elif pin.layer is Layer.PRESET:
            assumptions.append((name, pin.text, pin.origin))
    assumptions.append(("conventions", conventions,
                        "named preset" if any(p.kind == "conventions" for p in preset_objects)
                        else "default"))
    if "active_params" not in pinned:
        name, value, origin = DEFAULT_ACTIVE
        user[name] = value
        assumptions.append(DEFAULT_ACTIVE)
    has_chip = "chip_flops" in pinned and "hbm_bandwidth" in pinned
    needs_intensity = "hardware_intensity" not in pinned and not has_chip

    def run(title, targets, pins, extra_presets=(), explain=None) -> Deduction:
        deduction = Deduction(title, tuple(targets))
        try:
            # what the prices imply leads; a value a preset states is its cross-check
            solution = solve(list(targets), {**user, **pins},
                             [*preset_objects, *extra_presets], prefer="derived")
        except ChalkError as exc:
            deduction.skipped = exc.message
            return deduction
        deduction.solution = solution
        deduction.lines = [solution.summary()]
        if explain:
            deduction.lines.extend(explain(solution))
        return deduction

    deductions = []
    kv_pin = {}
    if sheet.long_context:
        threshold = sheet.long_context["threshold"]
        pins = {"long_context_threshold": _price(threshold)}
        if needs_intensity:
            pins["hardware_intensity"] = DEFAULT_INTENSITY[1]
            if DEFAULT_INTENSITY not in assumptions:
                assumptions.append(DEFAULT_INTENSITY)
        d = run("KV-cache bytes per token from the long-context price step",
                ["kv_bytes_per_token"], pins,
                explain=lambda s: [f"the price step at {threshold.text} is taken as the context "
                                   "where KV reads match the matmuls"])
        deductions.append(d)
        if d.solution is not None and "kv_bytes_per_token" not in pinned:
            kv_pin = {"kv_bytes_per_token": f"{d.solution.value('kv_bytes_per_token')!r} "
                                            "byte/token"}
        long_in = sheet.long_context.get("input")
        if long_in is not None:
            ratio_note = []
            long_out = sheet.long_context.get("output")
            if long_out is not None:
                factor = long_out.value / sheet.prices["output"].value
                ratio_note = [f"output price above the step: x{factor:.3g}"]
            deductions.append(run(
                "Long-context premium", ["long_context_price_ratio"],
                {"price_input": _price(sheet.prices["input"]),
                 "price_input_long": _price(long_in)},
                explain=lambda s, note=ratio_note: note))
    else:
        deductions.append(Deduction("KV-cache bytes per token from the long-context price step",
                                    ("kv_bytes_per_token",),
                                    skipped="the sheet has no long-context price tier"))

    deductions.append(run(
        "Decode utilisation from the output/input price ratio",
        ["output_input_price_ratio", "decode_mfu_ratio"],
        {"price_input": _price(sheet.prices["input"]),
         "price_output": _price(sheet.prices["output"])},
        explain=lambda s: ["decode is memory-bound: at this ratio it uses about "
                           f"{100 * s.value('decode_mfu_ratio'):.3g}% of the FLOPs prefill "
                           "does per chip-second"]))

    deductions.extend(_cache_deductions(sheet, run, kv_pin, pinned))

    chip_presets = [] if "chip_flops" in pinned and "chip_price" in pinned else [DEFAULT_CHIP]
    if chip_presets:
        assumptions.append(("chip", DEFAULT_CHIP, "assumed for the cost floor; pass --preset "
                                                  "with another accelerator to change it"))
    input_price = sheet.prices["input"]
    deductions.append(run(
        "Cost floor per token on the stated chip", ["cost_per_token_floor"], {},
        extra_presets=chip_presets,
        explain=lambda s: [f"input price {input_price.text} is "
                           f"{_ratio(input_price, s, 'cost_per_token_floor')} times this floor "
                           "(prefill at full utilisation)"]))

    if sheet.fast_mode:
        fast = sheet.fast_mode
        if "price_ratio" in fast and "speedup" in fast:
            deductions.append(run(
                "Fast mode: what k x the price for s x the speed says about the batch",
                ["fast_batch_ratio"],
                {"fast_price_ratio": _price(fast["price_ratio"]),
                 "fast_speedup": _price(fast["speedup"])},
                explain=lambda s: [
                    f"the fast tier runs about 1/{1 / s.value('fast_batch_ratio'):.3g} of the "
                    "normal batch: nearer the latency floor, where weight reads dominate a step"]))
        else:
            deductions.append(Deduction("Fast mode", ("fast_batch_ratio",),
                                        skipped="the sheet gives a price ratio but no speed-up"))
    return Implication(sheet, assumptions, deductions)


def _ratio(price_fact, solution: Solution, name: str) -> str:
    price = price_fact.value * _base(price_fact.unit)
    floor = solution.value(name) * _base("USD/token")
    return f"{price / floor:.3g}"


def _base(unit: str) -> float:
    from chalk.symbolic.units import base_factor

    return base_factor(parse_unit_cached(unit))


def _cache_deductions(sheet: PriceSheet, run, kv_pin, pinned) -> list[Deduction]:
    from chalk.applications.tiers import tier_table

    out = []
    holdings = []
    storage = sheet.prices.get("cache_storage")
    if storage is not None and storage.value > 0:
        holdings.append(("explicit cache storage", {"cache_storage_price": _price(storage)},
                         None))
    targets_for = {True: ["cache_price_per_byte_hour"],
                   False: ["cache_storage_price", "cache_price_per_byte_hour"]}
    for write in sheet.cache_writes:
        holdings.append((f"cache write held {write.hold_time.text}",
                         {"price_cache_write": _price(write.price),
                          "price_input": _price(sheet.prices["input"]),
                          "cache_hold_time": _price(write.hold_time)},
                         write.hold_time.value * _base(write.hold_time.unit)))
    if not holdings:
        reason = ("cache storage is free (the provider keeps it on cheap storage)"
                  if storage is not None else "the sheet prices no cache storage or writes")
        return [Deduction("Prompt-cache storage and the memory tier it points to",
                          ("cache_price_per_byte_hour",), skipped=reason)]
    if not kv_pin and "kv_bytes_per_token" not in pinned:
        return [Deduction("Prompt-cache storage and the memory tier it points to",
                          ("cache_price_per_byte_hour",),
                          skipped="needs KV bytes per token: pin kv_bytes_per_token or use a "
                                  "sheet with a long-context tier")]
    tiers = [t for t in tier_table() if not math.isnan(t.cost_per_gb_hour)]
    for label, pins, hold in holdings:
        def explain(s, hold=hold):
            price = s.value("cache_price_per_byte_hour", "USD/GB/hour")
            lines = [f"storage is priced at {price:.3g} USD per GB of KV per hour"]
            if hold is not None:
                match = min(tiers, key=lambda t: abs(math.log(t.drain_time_s / hold)))
                lines.append(f"hold time {format_seconds(hold)} is closest to the drain time of "
                             f"{match.name} ({match.kind}, {format_seconds(match.drain_time_s)}), "
                             "the tier where holding and reading back cost the same")
                lines.append(f"that tier costs {match.cost_per_gb_hour:.3g} USD/GB/hour: the "
                             f"price is {price / match.cost_per_gb_hour:.3g} times its cost")
            by_kind = {}
            for t in tiers:
                by_kind.setdefault(t.kind, []).append(t.cost_per_gb_hour)
            spans = ", ".join(f"{k} {min(v):.2g}-{max(v):.2g}" for k, v in by_kind.items())
            lines.append(f"tier costs in the data (USD/GB/hour): {spans}")
            return lines

        out.append(run(f"Prompt-cache storage ({label}) and the memory tier it points to",
                       targets_for["cache_storage_price" in pins],
                       {**pins, **kv_pin}, explain=explain))
    return out
