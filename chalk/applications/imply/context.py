"""The pins, presets and stated defaults in force for one price sheet, and how each
deduction is run as an ordinary solve with what the user's pins give as its cross-check."""

from __future__ import annotations

from chalk.api import Solution, load_presets, resolve, solve
from chalk.applications.imply.results import Deduction
from chalk.knowledge import load_model
from chalk.knowledge.price_sheets import PriceSheet
from chalk.solvers.pinning.pinned import Layer
from chalk.solvers.pinning.pins import parse_given
from chalk.solvers.pinning.variants import for_pins
from chalk.solvers.pinning.yielding import yield_headlines
from chalk.symbolic.errors import ChalkError
from chalk.symbolic.parsing import parse_unit_cached
from chalk.symbolic.printing.numbers import format_gap
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
KV_FROM_STEP = "the long-context price step"  # a KV size's origin when the prices give it


def price_pin(fact) -> str:
    """A sheet fact as the text of a pin (its exact value and unit)."""
    return f"{fact.value!r} {fact.unit}"


def _base(unit: str) -> float:
    from chalk.symbolic.units import base_factor

    return base_factor(parse_unit_cached(unit))


def in_unit(fact, unit: str) -> float:
    """A sheet fact's value in ``unit``."""
    return fact.value * _base(fact.unit) / _base(unit)


class Context:
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

