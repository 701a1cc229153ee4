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
from chalk.knowledge.price_sheets import CacheWrite, PriceSheet, price_sheet
from chalk.solvers.pinning.pinned import Layer
from chalk.solvers.pinning.pins import parse_given
from chalk.solvers.pinning.variants import for_pins
from chalk.solvers.pinning.yielding import yield_headlines
from chalk.symbolic.errors import ChalkError
from chalk.symbolic.parsing import parse_unit_cached
from chalk.symbolic.printing.numbers import format_display, format_gap
from chalk.symbolic.printing.quantities import format_quantity
from chalk.symbolic.printing.readable import Readable

DEFAULT_ACTIVE = ("active_params", "100e9 param",
                  "assumed: the lecture's guess for a frontier model (1:31:27-1:31:38)")
DEFAULT_INTENSITY = ("hardware_intensity", "300 FLOP/byte",
                     "assumed: the lecture's FLOP per byte of HBM bandwidth (18:05-18:46)")
DEFAULT_KV_ELEMENT = ("kv_bytes_per_element", "2 byte",
                      "assumed: a bf16 KV cache, the common serving choice; pass --preset fp8 "
                      "or --given to change it")
DEFAULT_CHIP = "h100"
AGREE = 0.10  # a price-implied value within 10% of a known one agrees with it
KV_FROM_STEP = "the long-context price step"  # a KV size's origin when the prices give it


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
    pins : dict
        The pins the deduction added to the user's (the sheet's prices and the defaults
        it needed), so a later deduction can derive the same quantity in its own solve.
    """

    key: str
    title: str
    targets: tuple[str, ...]
    solution: Solution | None = None
    skipped: str = ""
    lines: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    details: dict = field(default_factory=dict)
    pins: dict = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        out = {"key": self.key, "title": self.title, "targets": list(self.targets),
               "summary": self.lines, "checks": self.checks, **self.details}
        if self.solution is not None:
            out.update(self.solution.to_dict())
        if self.skipped:
            out["skipped"] = self.skipped
        return out


@dataclass(repr=False)
class Implication(Readable):
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
                    body[start] = _midpoint_heading(d.solution)
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


def _midpoint_heading(solution: Solution) -> str:
    """The heading of a ranged solution's derivation: it runs at each range's mid-point,
    so where a result's value there is not its Monte Carlo median the heading says so."""
    differ = [f"{t} = {solution.derivation.show(t)} here"
              for t in solution.targets
              if t in solution.uncertainty.summaries
              and _show_base(solution, t, solution.uncertainty.summaries[t].median)
              != solution.derivation.show(t)]
    text = "derivation (at each range's mid-point"
    if differ:
        text += (f": {', '.join(differ)}; the median above is over the Monte Carlo samples, "
                 "so the two differ by sampling (and, with several ranges, by how they combine)")
    return text + ")"


def _show_base(solution: Solution, name: str, base_value: float) -> str:
    variable = solution.derivation.model.variables[name]
    return format_display(base_value / variable.to_base, variable.display)


def central(solution: Solution, name: str, unit: str | None = None) -> float:
    """The value imply quotes for ``name``: the Monte Carlo median when a pin it rests on
    is a range (as the headline prints it), else the value."""
    if solution.uncertainty is not None and name in solution.uncertainty.summaries:
        return float(solution.median(name, unit).magnitude)
    return solution.value(name, unit)


def central_text(solution: Solution, name: str) -> str:
    """``central`` as the headline prints it, labelled ``(median)`` when it is one."""
    variable = solution.derivation.model.variables[name]
    shown = format_quantity(central(solution, name), variable.pint_unit)
    ranged = solution.uncertainty is not None and name in solution.uncertainty.summaries
    return f"{shown} (median)" if ranged else shown


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
        deduction = Deduction(key, title, tuple(targets), pins=dict(pins))
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
    kv = _kv_source(ctx, deductions[0])
    deductions.extend(_cache(ctx, kv))
    floor = _floor(ctx)  # first: it states the chip assumption the cache reads share
    deductions.extend(_cache_read(ctx))
    deductions.append(floor)
    deductions.extend(_batch(ctx))
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
            note = [f"output price above the step: x{factor:.3g} ({long_out.text} against "
                    f"{sheet.prices['output'].text})"]
        out.append(ctx.run("premium", "Long-context premium", ["long_context_price_ratio"],
                           {"price_input": _price(sheet.prices["input"]),
                            "price_input_long": _price(long_in)},
                           explain=lambda s: note, compare=False))
    return out


def _decode(ctx: _Context) -> Deduction:
    sheet = ctx.sheet
    output, input_ = sheet.prices["output"], sheet.prices["input"]
    return ctx.run(
        "decode", "Decode utilisation from the output/input price ratio",
        ["output_input_price_ratio", "decode_mfu_ratio"],
        {"price_input": _price(input_), "price_output": _price(output)},
        explain=lambda s: [f"from the output price {output.text} over the input price "
                           f"{input_.text}",
                           "decode is memory-bound: at this ratio it uses about "
                           f"{100 * central(s, 'decode_mfu_ratio'):.3g}% of the FLOPs prefill "
                           "does per chip-second"], compare=False)


@dataclass(frozen=True)
class KvSource:
    """Where the cache deductions get the KV bytes per token from.

    Attributes
    ----------
    pins : dict
        What a cache deduction adds to its own pins to derive the KV size in the same
        solve (the long-context step's pins), so a range behind it carries through;
        empty when the user's pins and presets give the size.
    origin : str
        Where the size comes from, as printed (a preset's name, ``given``, or the step).
    """

    pins: Mapping[str, str]
    origin: str


def _kv_source(ctx: _Context, kv_deduction: Deduction) -> KvSource | None:
    """The user's pins or presets first (a model's architecture knows its KV better than
    a price step guesses it), else the long-context price step; None without either."""
    known = ctx.known("kv_bytes_per_token")
    if known is not None:
        _, _, behind = known
        return KvSource({}, ", ".join(sorted({ctx.pinned[n].preset or "given"
                                               for n in behind})))
    if kv_deduction.solution is not None:
        return KvSource(kv_deduction.pins, KV_FROM_STEP)
    return None


@dataclass(frozen=True)
class Holding:
    """One way a sheet charges for keeping KV in its prompt cache.

    Attributes
    ----------
    short : str
        A label for a table cell (``storage``, ``5 min write``).
    basis : str
        The price it comes from, in words, with the price itself.
    pins : dict
        The sheet's prices as pins for the cache deduction.
    hold_s : float or None
        The hold time a write buys, in seconds (None for a storage price).
    write : CacheWrite or None
        The write it comes from (None for a storage price).
    """

    short: str
    basis: str
    pins: Mapping[str, str]
    hold_s: float | None
    write: CacheWrite | None = None


def holdings(sheet: PriceSheet) -> list[Holding]:
    """The sheet's storage price (if it charges one) and each cache write, in that order,
    the writes shortest hold first."""
    out = []
    storage = sheet.prices.get("cache_storage")
    if storage is not None and storage.value > 0:
        out.append(Holding("storage", f"the storage price, {storage.text}",
                           {"cache_storage_price": _price(storage)}, None))
    input_ = sheet.prices["input"]
    for write in sorted(sheet.cache_writes, key=lambda w: in_unit(w.hold_time, "s")):
        hold = write.hold_time.text
        out.append(Holding(
            f"{hold} write",
            f"the {hold} write, {write.price.text}, less the input price {input_.text}, "
            f"spread over {hold}",
            {"price_cache_write": _price(write.price), "price_input": _price(input_),
             "cache_hold_time": _price(write.hold_time)},
            in_unit(write.hold_time, "s"), write))
    return out


def headline_holding(sheet: PriceSheet) -> Holding | None:
    """The holding a one-column table shows (``imply`` over several sheets, ``atlas``):
    the storage price if the sheet charges one, else its shortest-hold write, the cache a
    request gets unless it asks for longer."""
    found = holdings(sheet)
    return found[0] if found else None


def _cache(ctx: _Context, kv: KvSource | None) -> list[Deduction]:
    from chalk.applications.tiers import tier_table

    sheet = ctx.sheet
    title = "Prompt-cache prices and the memory tier they point to"
    storage = sheet.prices.get("cache_storage")
    read = sheet.prices.get("cache_read")
    read_price = in_unit(read, "USD/Mtoken") if read is not None else None
    priced = holdings(sheet)
    if not priced and storage is None and read is None:
        return [Deduction("cache", title, ("cache_price_per_byte_hour",),
                          skipped="the sheet prices no cache storage, writes or reads")]
    if kv is None:
        return [Deduction("cache", title, ("kv_bytes_per_token",),
                          skipped="needs KV bytes per token: pin kv_bytes_per_token, use a "
                                  "model preset, or use a sheet with a long-context tier")]

    def kv_line(s):
        return f"KV bytes per token: {central_text(s, 'kv_bytes_per_token')} from {kv.origin}"

    if not priced:
        # free storage, or none priced (a read discount alone): the reads are the evidence
        free = storage is not None
        label = "free storage" if free else "read price only"

        def explain_reads(s):
            size = central(s, "kv_bytes_per_token", "byte/token")
            verdict = tier_verdict(kind_spans(tier_table(), size), 0.0 if free else None,
                                   None, read_price, size)
            explain_reads.verdict = verdict
            lines = [kv_line(s)]
            if not free:
                lines.append("the sheet charges no storage and no write premium: only the "
                             f"cache-read price {read.text} bears on the tier")
            return [*lines, *verdict.lines]

        d = ctx.run("cache", f"{title} ({label})", ["kv_bytes_per_token"], dict(kv.pins),
                    explain=explain_reads, compare=False)
        if d.solution is not None:
            d.details["verdict"] = explain_reads.verdict.to_dict()
            d.details["holding"] = label
            d.details["kv_from"] = kv.origin
        return [d]
    out = []
    for holding in priced:
        targets = ["kv_bytes_per_token", "cache_price_per_byte_hour"]
        if "cache_storage_price" not in holding.pins:
            targets.insert(1, "cache_storage_price")

        def explain(s, holding=holding):
            size = central(s, "kv_bytes_per_token", "byte/token")
            price = central(s, "cache_price_per_byte_hour", "USD/GB/hour")
            verdict: TierVerdict = tier_verdict(kind_spans(tier_table(), size), price,
                                                holding.hold_s, read_price, size)
            explain.verdict = verdict
            return [f"priced from {holding.basis}", kv_line(s), *verdict.lines]

        d = ctx.run("cache", f"{title} ({holding.short})", targets,
                    {**holding.pins, **kv.pins}, explain=explain, compare=False)
        if d.solution is not None:
            d.details["verdict"] = explain.verdict.to_dict()
            d.details["holding"] = holding.short
            d.details["priced_from"] = holding.basis
            d.details["kv_from"] = kv.origin
        out.append(d)
    return out


def _cache_read(ctx: _Context) -> list[Deduction]:
    """What the cache-read price says against recomputing the cached prefix."""
    sheet = ctx.sheet
    read = sheet.prices.get("cache_read")
    if read is None:
        return []
    input_ = sheet.prices["input"]

    def explain(s):
        remat = central(s, "remat_cost_per_token", "USD/token")
        ratio = in_unit(read, "USD/token") / remat
        discount = in_unit(read, "USD/token") / in_unit(input_, "USD/token")
        lines = [f"the cache-read price {read.text} is {discount:.3g} times the input price "
                 f"{input_.text}, and {ratio:.3g} times what recomputing the KV costs at the "
                 "floor"]
        if ratio < 1:
            lines.append("below the cost of recomputing: the provider must keep the KV and "
                         "read it back (recomputing would cost more than the read earns), "
                         "or sell reads below cost")
        else:
            lines.append("at or above the cost of recomputing: the read price would pay for "
                         "recomputing the prefix as well as for keeping it")
        return lines

    return [ctx.run("read", "Cache reads: the read price against recomputing the prefix",
                    ["remat_cost_per_token"], {}, extra_presets=ctx.chip_presets,
                    explain=explain, compare=False)]


def _floor(ctx: _Context) -> Deduction:
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


def _below_floor(ctx: _Context, floor: Solution, bound: dict) -> list[str]:
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
        largest = solve("active_params", {**given, "cost_per_token_floor": _price(price)},
                        [*ctx.presets, *ctx.chip_presets])
    except ChalkError as exc:
        bound.update({"chip": chip, "skipped": exc.message})
        return [f"below the floor; the largest model it pays for was not solved: {exc.message}"]
    bound.update({"chip": chip, "active_params": central(largest, "active_params", "param")})
    return [f"below the floor: this price implies at most active_params = "
            f"{central_text(largest, 'active_params')} on {chip} (at the floor's "
            f"assumptions: {terms}), or a subsidy"]


def _batch(ctx: _Context) -> list[Deduction]:
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
