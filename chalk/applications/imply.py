"""``chalk imply``: everything a price sheet implies, with the assumptions it needed.

Each deduction is an ordinary solve whose pins come from the sheet, from the user's
pins and presets, and, where neither says, from a stated default (the lecture's 100B
active parameters, its 300 FLOP/byte, an H100 for costs). A sheet for an open-weight
model names its model preset, which is used unless another model preset is given.
What the prices imply leads; where the user's pins or presets give the same quantity
another way, that value is shown beside it as a cross-check with the gap between
them. Deductions the sheet cannot support are listed with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from chalk.api import Solution, load_presets, resolve, solve
from chalk.applications.cache_verdict import TierVerdict, kind_spans, tier_verdict
from chalk.knowledge import load_model
from chalk.knowledge.price_sheets import PriceSheet, price_sheet
from chalk.solvers.pinning.pinned import Layer
from chalk.solvers.pinning.pins import parse_given
from chalk.solvers.pinning.variants import for_pins
from chalk.solvers.pinning.yielding import yield_headlines
from chalk.symbolic.errors import ChalkError
from chalk.symbolic.parsing import parse_unit_cached
from chalk.symbolic.printing.numbers import format_gap, format_number
from chalk.symbolic.printing.quantities import format_quantity

DEFAULT_ACTIVE = ("active_params", "100e9 param",
                  "assumed: the lecture's guess for a frontier model (1:31:27-1:31:38)")
DEFAULT_INTENSITY = ("hardware_intensity", "300 FLOP/byte",
                     "assumed: the lecture's FLOP per byte of HBM bandwidth (18:05-18:46)")
DEFAULT_KV_ELEMENT = ("kv_bytes_per_element", "2 byte",
                      "assumed: a bf16 KV cache, the common serving choice; pass --preset fp8 "
                      "or --given to change it")
DEFAULT_CHIP = "h100"
AGREE = 0.10  # a price-implied value within 10% of a known one agrees with it


@dataclass
class Deduction:
    """One thing the sheet implies, or why it cannot be deduced.

    Attributes
    ----------
    key : str
        Short name of the deduction (``kv``, ``decode``, ``cache``, ``floor``, ``fast``).
    title : str
    targets : tuple of str
    solution : Solution or None
    skipped : str
        Why it was not deduced ("" if it was).
    lines : list of str
        The answer and what it means, in words.
    checks : list of str
        Values the user's pins or presets give for the same quantities, and the gaps.
    details : dict
        Structured extras for ``--json`` (the tier verdict, the fast-mode optimiser).
    """

    key: str
    title: str
    targets: tuple[str, ...]
    solution: Solution | None = None
    skipped: str = ""
    lines: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        out = {"key": self.key, "title": self.title, "targets": list(self.targets),
               "summary": self.lines, "checks": self.checks, **self.details}
        if self.solution is not None:
            out.update(self.solution.to_dict())
        if self.skipped:
            out["skipped"] = self.skipped
        return out


@dataclass
class Implication:
    """What one price sheet implies: the assumptions in force and each deduction."""

    sheet: PriceSheet
    assumptions: list[tuple[str, str, str]]
    deductions: list[Deduction]

    def deduction(self, key: str) -> Deduction | None:
        return next((d for d in self.deductions if d.key == key), None)

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
            for line in d.lines + d.checks:
                lines.extend(f"   {part}" for part in line.splitlines())
            if derivations and d.solution is not None:
                body = d.solution.derivation.text().splitlines()
                start = body.index("derivation") if "derivation" in body else 0
                if d.solution.uncertainty is not None:
                    body[start] = "derivation (at each range's mid-point)"
                # what cancels is said with the pins, which are not shown here
                body[start:start] = d.solution.derivation.cancel_lines()
                lines.extend(f"   {line}" for line in body[start:])
        return "\n".join(lines)

    def to_dict(self) -> dict:
        s = self.sheet
        return {
            "sheet": {"id": s.id, "provider": s.provider, "model": s.model, "source": s.source,
                      "date": s.date, "preset": s.preset},
            "assumptions": [{"name": n, "value": v, "origin": o} for n, v, o in self.assumptions],
            "deductions": [d.to_dict() for d in self.deductions],
        }


def _price(fact) -> str:
    return f"{fact.value!r} {fact.unit}"


def _base(unit: str) -> float:
    from chalk.symbolic.units import base_factor

    return base_factor(parse_unit_cached(unit))


def in_unit(fact, unit: str) -> float:
    """A sheet fact's value in ``unit``."""
    return fact.value * _base(fact.unit) / _base(unit)


class _Context:
    """The pins and presets in force for one sheet, and how each deduction is run."""

    def __init__(self, sheet: PriceSheet, given, presets):
        self.sheet = sheet
        self.model = load_model()
        self.user = {self.model.variable(n).name: v for n, v in parse_given(given)}
        self.presets = load_presets(presets)
        self.assumptions: list[tuple[str, str, str]] = []
        if sheet.preset and not any(p.kind == "model" for p in self.presets):
            self.presets += load_presets([sheet.preset])
            self.assumptions.append(("model", sheet.preset, "the sheet's model is open-weight: "
                                     "its preset is used by default; pass another model "
                                     "preset to change it"))
        resolved = resolve(self.model, dict(self.user), self.presets)
        self.pinned, conventions = resolved.pins, resolved.conventions
        self._list_pins()
        self.assumptions.append((
            "conventions", conventions,
            "named preset" if any(p.kind == "conventions" for p in self.presets)
            else "default"))
        self.defaults: dict[str, str] = {}
        if "active_params" not in self.pinned:
            self.defaults["active_params"] = DEFAULT_ACTIVE[1]
            self.assumptions.append(DEFAULT_ACTIVE)
        if any(p.kind == "model" for p in self.presets) \
                and "kv_bytes_per_element" not in self.pinned:
            self.defaults["kv_bytes_per_element"] = DEFAULT_KV_ELEMENT[1]
            self.assumptions.append(DEFAULT_KV_ELEMENT)
        self.chip_presets = ([] if "chip_flops" in self.pinned and "chip_price" in self.pinned
                             else load_presets([DEFAULT_CHIP]))

    def _list_pins(self):
        by_preset: dict[str, list[str]] = {}
        # a headline size the architecture determines gives way to it in every deduction
        # (yield_headlines): listed as what it is, not as the size used
        model, _ = for_pins(self.model, self.pinned)
        kept = yield_headlines(model, self.pinned).pins
        for name, pin in self.pinned.items():
            if pin.layer is Layer.GIVEN:
                self.assumptions.append((name, pin.text, "given"))
            elif pin.layer is Layer.PRESET:
                shown = (f"{name} = {pin.text} published, the architecture's count used"
                         if name not in kept else f"{name} = {pin.text}")
                by_preset.setdefault(pin.preset, []).append(shown)
        for preset, values in by_preset.items():
            shown = "; ".join(values[:4]) + (f"; and {len(values) - 4} more" if len(values) > 4
                                             else "")
            self.assumptions.append((f"preset {preset}", f"{len(values)} values", shown))

    def assume(self, item):
        if item not in self.assumptions:
            self.assumptions.append(item)

    def known(self, target: str) -> tuple[float, str, tuple[str, ...]] | None:
        """The value the user's pins and presets alone give ``target`` (base units), where
        it came from, and the preset or given pins behind it; None if they do not."""
        if target in self.user:
            pin = self.pinned[target]
            return pin.value, "you gave", (target,)
        try:
            s = solve(target, {**self.defaults, **self.user}, self.presets)
        except ChalkError:
            return None
        behind = tuple(n for n in s.plan.analysis.pins_behind(s.derivation.model, target)
                       if n in self.pinned and self.pinned[n].layer is not Layer.CONVENTIONS)
        if not behind:
            return None
        origin = {self.pinned[n].preset or "given" for n in behind}
        return (s.derivation.values[target],
                f"{' and '.join(sorted(origin))} give{'s' if len(origin) == 1 else ''}", behind)

    def run(self, key, title, targets, pins, extra_presets=(), explain=None,
            compare=True) -> Deduction:
        deduction = Deduction(key, title, tuple(targets))
        knowns = {t: self.known(t) for t in targets} if compare and pins else {}
        knowns = {t: k for t, k in knowns.items() if k is not None}
        drop = {n for _, _, behind in knowns.values() for n in behind} | set(knowns)
        user = {k: v for k, v in {**self.defaults, **self.user}.items() if k not in drop}
        try:
            # what the prices imply leads; a value a preset states is its cross-check
            solution = solve(list(targets), {**user, **pins},
                             [*self.presets, *extra_presets], prefer="derived",
                             drop=drop - set(self.user))
        except ChalkError as exc:
            deduction.skipped = exc.message
            return deduction
        deduction.solution = solution
        deduction.lines = [solution.summary(), *_drivers(solution)]
        if explain:
            deduction.lines.extend(explain(solution))
        for t, (value, origin, _) in knowns.items():
            variable = self.model.variables[t]
            derived = solution.derivation.values[t]
            shown = format_quantity(value / variable.to_base, variable.pint_unit)
            gap = abs(derived - value) / max(abs(derived), abs(value))
            verdict = (f"they agree within {format_gap(gap)}" if gap <= AGREE
                       else f"{format_gap(gap)}")
            deduction.checks.append(f"cross-check: {origin} {t} = {shown}; the prices imply "
                                    f"{solution.derivation.show(t)}: {verdict}")
        return deduction


def _drivers(solution: Solution) -> list[str]:
    if solution.uncertainty is None:
        return []
    out = []
    for t in solution.targets:
        summary = solution.uncertainty.summaries.get(t)
        if summary is not None and summary.sensitivity:
            shares = ", ".join(f"{n} {100 * share:.0f}%" for n, share in summary.sensitivity[:3])
            out.append(f"{t}: spread driven by {shares}")
    return out


def imply(sheet: str | PriceSheet, given: Iterable[str] | Mapping[str, object] = (),
          presets=()) -> Implication:
    """Run every deduction the sheet's fields allow.

    Parameters
    ----------
    sheet : str or PriceSheet
        A shipped sheet id (``chalk list sheets``), a YAML file, or a loaded sheet.
    given : mapping or iterable of "NAME=VALUE UNIT"
        Pins used in every deduction; one for a quantity a deduction derives becomes
        that deduction's cross-check.
    presets : str or sequence of str
        Conventions, accelerator, precision and model presets.

    Returns
    -------
    Implication
    """
    sheet = price_sheet(sheet) if isinstance(sheet, str) else sheet
    ctx = _Context(sheet, given, presets)
    deductions = [*_long_context(ctx), _decode(ctx)]
    kv = _kv_bytes(ctx, deductions[0])
    deductions.extend(_cache(ctx, kv))
    deductions.append(_floor(ctx))
    deductions.extend(_fast(ctx))
    return Implication(sheet, ctx.assumptions, deductions)


def _long_context(ctx: _Context) -> list[Deduction]:
    sheet = ctx.sheet
    if not sheet.long_context:
        return [Deduction("kv", "KV-cache bytes per token from the long-context price step",
                          ("kv_bytes_per_token",),
                          skipped="the sheet has no long-context price tier")]
    threshold = sheet.long_context["threshold"]
    pins = {"long_context_threshold": _price(threshold)}
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
            note = [f"output price above the step: x{factor:.3g}"]
        out.append(ctx.run("premium", "Long-context premium", ["long_context_price_ratio"],
                           {"price_input": _price(sheet.prices["input"]),
                            "price_input_long": _price(long_in)},
                           explain=lambda s: note, compare=False))
    return out


def _decode(ctx: _Context) -> Deduction:
    sheet = ctx.sheet
    return ctx.run(
        "decode", "Decode utilisation from the output/input price ratio",
        ["output_input_price_ratio", "decode_mfu_ratio"],
        {"price_input": _price(sheet.prices["input"]),
         "price_output": _price(sheet.prices["output"])},
        explain=lambda s: ["decode is memory-bound: at this ratio it uses about "
                           f"{100 * s.value('decode_mfu_ratio'):.3g}% of the FLOPs prefill "
                           "does per chip-second"], compare=False)


def _kv_bytes(ctx: _Context, kv_deduction: Deduction) -> tuple[float, str] | None:
    """KV bytes per token for the cache deductions (base units) and where it came from:
    the user's pins or presets first, else the long-context price step."""
    known = ctx.known("kv_bytes_per_token")
    if known is not None:
        value, _, behind = known
        return value, ", ".join(sorted({ctx.pinned[n].preset or "given" for n in behind}))
    if kv_deduction.solution is not None:
        return (kv_deduction.solution.derivation.values["kv_bytes_per_token"],
                "the long-context price step")
    return None


def _cache(ctx: _Context, kv) -> list[Deduction]:
    from chalk.applications.tiers import tier_table

    sheet = ctx.sheet
    title = "Prompt-cache prices and the memory tier they point to"
    storage = sheet.prices.get("cache_storage")
    read = sheet.prices.get("cache_read")
    read_price = in_unit(read, "USD/Mtoken") if read is not None else None
    holdings = []
    if storage is not None and storage.value > 0:
        holdings.append(("explicit storage", {"cache_storage_price": _price(storage)}, None))
    for write in sheet.cache_writes:
        holdings.append((f"a write held {write.hold_time.text}",
                         {"price_cache_write": _price(write.price),
                          "price_input": _price(sheet.prices["input"]),
                          "cache_hold_time": _price(write.hold_time)},
                         in_unit(write.hold_time, "s")))
    if not holdings and (storage is None or read is None):
        return [Deduction("cache", title, ("cache_price_per_byte_hour",),
                          skipped="the sheet prices no cache storage, writes or reads")]
    if kv is None:
        return [Deduction("cache", title, ("cache_price_per_byte_hour",),
                          skipped="needs KV bytes per token: pin kv_bytes_per_token, use a "
                                  "model preset, or use a sheet with a long-context tier")]
    kv_value, kv_origin = kv
    kv_pin = {"kv_bytes_per_token": f"{kv_value!r} byte/token"}
    spans = kind_spans(tier_table(), kv_value)
    kv_line = (f"KV bytes per token: {format_number(kv_value)} byte/token (from {kv_origin})")
    if not holdings:  # free storage: the verdict rests on the storage and read prices alone
        verdict = tier_verdict(spans, 0.0, None, read_price, kv_value)
        return [Deduction("cache", f"{title} (free storage)", ("cache_price_per_byte_hour",),
                          lines=[kv_line, *verdict.lines], details={"verdict": verdict.to_dict()})]
    out = []
    for label, pins, hold in holdings:
        targets = (["cache_price_per_byte_hour"] if "cache_storage_price" in pins
                   else ["cache_storage_price", "cache_price_per_byte_hour"])

        def explain(s, hold=hold):
            price = s.value("cache_price_per_byte_hour", "USD/GB/hour")
            verdict: TierVerdict = tier_verdict(spans, price, hold, read_price, kv_value)
            explain.verdict = verdict
            return [kv_line, *verdict.lines]

        d = ctx.run("cache", f"{title} ({label})", targets, {**pins, **kv_pin},
                    explain=explain, compare=False)
        if d.solution is not None:
            d.details["verdict"] = explain.verdict.to_dict()
        out.append(d)
    return out


def _floor(ctx: _Context) -> Deduction:
    sheet = ctx.sheet
    if ctx.chip_presets:
        ctx.assume(("chip", DEFAULT_CHIP, "assumed for the cost floor; pass --preset with "
                                          "another accelerator to change it"))
    input_price = sheet.prices["input"]

    def explain(s):
        ratio = in_unit(input_price, "USD/token") / s.value("cost_per_token_floor", "USD/token")
        return [f"input price {input_price.text} is {ratio:.3g} times this floor (prefill at "
                "full utilisation)"]

    return ctx.run("floor", "Cost floor per token on the stated chip", ["cost_per_token_floor"],
                   {}, extra_presets=ctx.chip_presets, explain=explain, compare=False)


def _fast(ctx: _Context) -> list[Deduction]:
    from chalk.applications.optimize import fast_mode

    sheet = ctx.sheet
    fast = sheet.fast_mode
    if not fast and "fast_price_ratio" not in ctx.user:
        return []
    title = "Fast mode: what k x the price for s x the speed says about the batch"
    ratio = ctx.user.get("fast_price_ratio") or (_price(fast["price_ratio"])
                                                 if "price_ratio" in fast else None)
    speedup = ctx.user.get("fast_speedup") or (_price(fast["speedup"])
                                               if "speedup" in fast else None)
    if ratio is None or speedup is None:
        missing = "price ratio" if ratio is None else "speed-up"
        return [Deduction("fast", title, ("fast_batch_ratio",),
                          skipped=f"the sheet gives no {missing}; pass it with --given "
                                  f"\"fast_{'price_ratio' if ratio is None else 'speedup'}=...\"")]
    pins = {"fast_price_ratio": ratio, "fast_speedup": speedup}

    def explain(s):
        share = 1 / s.value("fast_batch_ratio")
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
