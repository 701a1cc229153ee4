"""The Python API: pins in, pint Quantities and a derivation out.

>>> from chalk import solve
>>> s = solve("hbm_drain_time", given={"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"})
>>> round(s.value("hbm_drain_time", "ms"), 6)
14.4
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from numbers import Integral, Real

from chalk.knowledge import load_model
from chalk.knowledge.conventions import CONVENTIONS, DEFAULT_CONVENTIONS
from chalk.solvers.counts import fractional_counts, redrawn_counts
from chalk.solvers.derivation import Derivation
from chalk.solvers.execute import compile_plan
from chalk.solvers.flags import reported
from chalk.solvers.pinned import Pin
from chalk.solvers.pins import ResolvedPins, read_value, resolve_pins
from chalk.solvers.plan import Plan, make_plan
from chalk.solvers.ranged_pins import judge_ranges, set_aside_ranges
from chalk.solvers.solving import compute
from chalk.solvers.symbolic_solve import DEFAULT_TIMEOUT
from chalk.solvers.tolerances import PINS
from chalk.solvers.uncertainty import SENSITIVITY_METHOD, Propagation, elasticities, propagate
from chalk.solvers.variants import for_pins
from chalk.solvers.yielding import (
    held_counts,
    outranked,
    override_presets,
    yield_defaults,
    yield_headlines,
)
from chalk.solvers.zeros import following_pins, put_zeros, used_zeros, zero_pins
from chalk.solvers.zeros import note as absent_note
from chalk.symbolic.errors import ChalkError, UsageError
from chalk.symbolic.model import Model
from chalk.symbolic.presets import Preset
from chalk.symbolic.printing.expressions import monomial_text
from chalk.symbolic.printing.numbers import format_gap
from chalk.symbolic.printing.quantities import format_quantity
from chalk.symbolic.units import Q_

DEFAULT_RTOL = PINS.agreement_rtol  # pins from public sources are rounded
# What solve accepts, here and on the command line (chalk.cli.main reads these)
SAMPLE_LIMITS = (100, 10_000_000)  # a 90% interval needs ~100 draws; 1e7 fit in memory
RTOL_LIMITS = (0.0, 1.0)  # both open: 0 accepts no rounding, 1 accepts any two numbers
REGIMES = ("compute-bound", "memory-bound")
PREFERENCES = ("stated", "derived")

Given = Mapping[str, object] | Iterable[str]


@dataclass(frozen=True)
class Options:
    """How a question is solved; the same on every path.

    Attributes
    ----------
    regime : str, optional
        ``"compute-bound"`` or ``"memory-bound"``: the side of a max() to take where
        both could hold.
    rtol : float
        Relative tolerance of the cross-checks of surplus pins.
    timeout : float
        Seconds allowed for any one symbolic solve.
    prefer : {"stated", "derived"}
        For a target a preset states: answer with the statement or the derivation.
    samples, seed : int
        Monte Carlo samples and seed for ranged pins.
    """

    regime: str | None = None
    rtol: float = DEFAULT_RTOL
    timeout: float = DEFAULT_TIMEOUT
    prefer: str = "stated"
    samples: int | None = None
    seed: int = 0


class Solution:
    """Answers with units, plus the derivation that produced them.

    ``solution["critical_batch_size"]`` is a pint Quantity in the quantity's
    declared unit; ``solution.derivation`` says how it was obtained.
    """

    def __init__(self, targets: Sequence[str], derivation: Derivation, plan: Plan,
                 uncertainty: Propagation | None = None, stated: Mapping | None = None,
                 override: Mapping[str, float] | None = None):
        self.targets = tuple(targets)
        self.derivation = derivation
        self.plan = plan
        self.uncertainty = uncertainty
        self.stated = dict(stated or {})  # target -> what a preset states, and the check
        self._override = dict(override or {})  # target -> base value answered instead
        self.question = None  # the CompiledQuestion answered, set by it

    def __getitem__(self, name: str):
        model = self.derivation.model
        variable = model.variable(name)
        if variable.name not in self.derivation.values:
            raise KeyError(f"{name} was not determined by this solution")
        if variable.name in self._override:
            return Q_(self._override[variable.name] / variable.to_base, variable.pint_unit)
        if not self.derivation.determined(variable.name):
            raise KeyError(f"{name} is not fixed by the pins: it depends on "
                           f"{', '.join(self.derivation.placeholders)}, which cancel from "
                           f"{', '.join(self.targets)}")
        return Q_(self.derivation.declared(variable.name), variable.pint_unit)

    @property
    def results(self) -> dict:
        """The targets as pint Quantities."""
        return {t: self[t] for t in self.targets}

    def elasticities(self, target: str) -> list[tuple[str, float]]:
        """d ln(target) / d ln(pin) at this solution's pins, for every pin that moves
        ``target``, largest first (:func:`chalk.solvers.uncertainty.elasticities`)."""
        compiled = compile_plan(self.derivation.model, self.plan)
        return elasticities(compiled, self.derivation.pins, target)

    def base_value(self, name: str) -> float | None:
        """A quantity's answer in base units, or None if this solution does not fix it
        (not computed, or resting on a placeholder value)."""
        variable = self.derivation.model.variable(name)
        if variable.name in self._override:
            return self._override[variable.name]
        if (variable.name not in self.derivation.values
                or not self.derivation.determined(variable.name)):
            return None
        return float(self.derivation.values[variable.name])

    def value(self, name: str, unit: str | None = None) -> float:
        """A determined quantity as a float, in ``unit`` or its declared unit."""
        quantity = self[name]
        return float(quantity.to(unit).magnitude if unit else quantity.magnitude)

    def interval(self, name: str, unit: str | None = None) -> tuple:
        """The 90% interval (5th, 95th percentile) of an uncertain result, as Quantities."""
        summary = self._summary(name)
        variable = self.derivation.model.variable(name)
        out = tuple(Q_(x / variable.to_base, variable.pint_unit)
                    for x in (summary.low, summary.high))
        return tuple(q.to(unit) for q in out) if unit else out

    def median(self, name: str, unit: str | None = None):
        """The Monte Carlo median of an uncertain result, as a Quantity."""
        variable = self.derivation.model.variable(name)
        q = Q_(self._summary(name).median / variable.to_base, variable.pint_unit)
        return q.to(unit) if unit else q

    def _summary(self, name: str):
        if self.uncertainty is None or name not in self.uncertainty.summaries:
            raise KeyError(f"{name} has no uncertainty: no pin it depends on is a range")
        return self.uncertainty.summaries[name]

    def to_dict(self) -> dict:
        """``{"results": ..., "steps": ..., "pins": ..., "checks": ...}`` for scripts.

        ``value`` is the result at the pins' nominal values (the derivation's);
        with uncertain pins each result adds ``low``, ``median``, ``high`` (5th, 50th,
        95th percentiles) and ``sensitivity`` (share of the spread per pin).
        """
        body = self.derivation.to_dict()
        results = {t: self.derivation.json_value(t) for t in self.targets}
        for t, entry in self.stated.items():
            if t in self._override:
                results[t]["value"] = self.value(t)
            results[t]["stated"] = {k: v for k, v in entry.items() if v != ""}
        if self.uncertainty is not None:
            for t, summary in self.uncertainty.summaries.items():
                scale = self.derivation.model.variables[t].to_base
                results[t].update({
                    "low": summary.low / scale, "median": summary.median / scale,
                    "high": summary.high / scale,
                    "sensitivity": dict(summary.sensitivity),
                })
                if summary.linear:
                    results[t]["linear"] = [x / scale for x in summary.linear]
            body["uncertainty"] = {"method": self.uncertainty.method(),
                                   "sensitivity_method": SENSITIVITY_METHOD,
                                   "notes": self.uncertainty.notes}
        return {"results": results, **body}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def _show(self, name: str, base_value: float) -> str:
        variable = self.derivation.model.variables[name]
        return format_quantity(base_value / variable.to_base, variable.pint_unit)

    def headline(self) -> str:
        lines = []
        for t in self.targets:
            summary = (self.uncertainty.summaries.get(t) if self.uncertainty else None)
            if summary is None:
                entry = self.stated.get(t)
                suffix = ""
                if entry and entry["answer"] == "stated":
                    suffix = f" (stated by {entry['origin']})"
                elif entry:
                    suffix = f" (derived; {entry['origin']} states it too)"
                shown = format_quantity(self.value(t), self.derivation.model.variables[t]
                                        .pint_unit)
                lines.append(f"{t} = {shown}{suffix}")
            else:
                lines.append(f"{t} = {self._show(t, summary.median)} (median; 90% interval "
                             f"{self._show(t, summary.low)} to {self._show(t, summary.high)})")
        return "\n".join(lines)

    def summary(self) -> str:
        """The answers, then what is reported beside them (``memory_fill``), then flags."""
        return "\n".join([self.headline(), *self.derivation.reported_lines(),
                          *self.derivation.flag_lines()])

    def uncertainty_text(self) -> str:
        if self.uncertainty is None:
            return ""
        u = self.uncertainty
        lines = ["uncertainty", f"  {u.method()}"]
        for t, summary in u.summaries.items():
            if summary.linear:
                lo, hi = summary.linear
                lines.append(f"  {t}: first-order (log-space Jacobian) 90% interval "
                             f"{self._show(t, lo)} to {self._show(t, hi)}")
            drivers = ", ".join(f"{n} {100 * share:.0f}%" for n, share in summary.sensitivity)
            lines.append(f"  {t}: spread driven by {drivers}")
        if any(len(s.sensitivity) > 1 for s in u.summaries.values()):
            lines.append(f"  shares: {SENSITIVITY_METHOD}")
        lines.extend(f"  note: {note}" for note in u.notes)
        lines.append("  the derivation below is at the nominal value of each range")
        return "\n".join(lines)

    def __str__(self) -> str:
        parts = [self.summary()]
        if self.uncertainty is not None:
            parts.append(self.uncertainty_text())
        parts.append(self.derivation.text())
        return "\n\n".join(parts)

    def __repr__(self) -> str:
        inner = ", ".join(f"{t}={self.derivation.show(t)}" for t in self.targets)
        return f"Solution({inner})"

    def _repr_markdown_(self) -> str:
        heads = "\n".join(f"- **{t}** = {self.derivation.show(t)}" for t in self.targets)
        return heads + "\n\n" + self.derivation.markdown()


@dataclass(frozen=True)
class Explanation:
    """The plan for a question, before any number is computed."""

    model: Model
    plan: Plan
    pins: Mapping[str, Pin]
    notes: tuple[str, ...]
    conventions: str

    def text(self) -> str:
        plan, model = self.plan, self.model
        lines = [f"targets: {', '.join(plan.targets)}", f"conventions: {self.conventions}"]
        lines.append(f"pinned: {', '.join(sorted(plan.pinned)) or '(none)'}")
        if plan.undetermined:
            lines.append(f"not determined: {', '.join(plan.undetermined)}")
            for _, combo in plan.fixed:
                if len(combo) > 1:
                    lines.append(f"  the pins fix only {monomial_text(dict(combo))}")
            if plan.completions:
                lines.append("smallest sets of extra pins that would determine them:")
                lines.extend(f"  {{{', '.join(c)}}}" for c in plan.completions)
            else:
                lines.append("no set of up to 3 extra pins determines them")
            if plan.from_inputs:
                lines.append(f"or, from inputs: {{{', '.join(plan.from_inputs)}}}")
        if plan.placeholders:
            lines.append(f"cancels: {', '.join(plan.placeholders)} (any value gives the same "
                         f"{', '.join(plan.targets)}; the steps hold a placeholder value)")
        if plan.regime:
            lines.append(f"planned in the regimes: {', '.join(plan.regime)}")
        lines.append("steps:")
        if not plan.steps:
            lines.append("  (none)")
        for index, step in enumerate(plan.steps, 1):
            if step.simultaneous:
                lines.append(f"  {index}. solve {', '.join(step.relations)} together for "
                             f"{', '.join(step.variables)} (numeric block)")
            else:
                relation = model.relations[step.relations[0]]
                lines.append(f"  {index}. {relation.name}: {relation.equation}  ->  "
                             f"{step.variables[0]}  [{relation.source}]")
        if plan.checks:
            lines.append("cross-checks:")
            lines.extend(f"  {c}: {model.relations[c].equation}" for c in plan.checks)
        if plan.unused_pins:
            lines.append(f"pins not needed: {', '.join(plan.unused_pins)}")
        for note in self.notes:
            lines.append(f"note: {note}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        plan = self.plan
        return {
            "targets": list(plan.targets),
            "conventions": self.conventions,
            "pinned": sorted(plan.pinned),
            "determined": plan.determined,
            "undetermined": list(plan.undetermined),
            "completions": [list(c) for c in plan.completions],
            "fixed": {t: monomial_text(dict(c)) for t, c in plan.fixed if len(c) > 1},
            "cancels": list(plan.placeholders),
            "from_inputs": list(plan.from_inputs),
            "steps": [{"relations": list(s.relations), "solved_for": list(s.variables),
                       "simultaneous": s.simultaneous} for s in plan.steps],
            "checks": list(plan.checks),
            "unused_pins": list(plan.unused_pins),
            "notes": list(self.notes),
        }


def _targets(model: Model, targets) -> tuple[str, ...]:
    if isinstance(targets, str):
        targets = [targets]
    names = []
    for t in targets:
        name = model.variable(t).name
        if not model.relations_of(name):
            raise UsageError(f"no relation involves {name} yet, so it cannot be solved for")
        if name not in names:
            names.append(name)
    if not names:
        raise UsageError("name at least one quantity to solve for")
    return tuple(names)


def load_presets(presets) -> list[Preset]:
    """Presets by name (or already loaded), in order; a single name may be a string."""
    if isinstance(presets, (str, Preset)):
        presets = [presets]
    if not presets:
        return []
    from chalk.knowledge.presets import preset  # reads the data files: only when asked

    return [p if isinstance(p, Preset) else preset(p) for p in presets]


def resolve(model: Model, given: Given = (), presets=(), targets=()) -> ResolvedPins:
    """The pins in force for a question: the conventions (``careful`` unless presets
    name others), then each preset, then ``given``, each checked against its quantity."""
    return resolve_pins(model, given, load_presets(presets), targets,
                        CONVENTIONS[DEFAULT_CONVENTIONS])


@dataclass(frozen=True)
class Prepared:
    """A question with its pins resolved and planned, before any number is computed.

    Attributes
    ----------
    model : Model
    targets : tuple of str
        Canonical names of the quantities asked for.
    pins : mapping of name to Pin
        Every pin in force (conventions, presets, the user's), after lower layers
        yielded to higher ones.
    notes : tuple of str
        What was set aside and why.
    conventions : str
        The counting conventions in force.
    plan : Plan
    stated : mapping of name to Pin
        Targets a preset or the conventions state a value for (set aside from the pins).
    reported : tuple of (name, bound)
        Quantities a condition asks to see beside these answers (``memory_fill`` beside a
        serving answer), planned with the targets when the pins determine them.
    range_checks : mapping of name to Pin
        Ranged or distributed pins that the other pins determine, set aside: the plan
        derives them, and each range is judged against that
        (:func:`chalk.solvers.ranged_pins.judge_ranges`).
    value_sensitive : frozenset of str
        Pins whose values decided whether a lower-layer value gave way: with another
        value of one of them the question must be prepared again.
    """

    model: Model
    targets: tuple[str, ...]
    pins: Mapping[str, Pin]
    notes: tuple[str, ...]
    conventions: str
    plan: Plan
    stated: Mapping[str, Pin]
    reported: tuple[tuple[str, str], ...] = ()
    range_checks: Mapping[str, Pin] = field(default_factory=dict)
    value_sensitive: frozenset[str] = frozenset()


def _used_quantities(model: Model, plan: Plan) -> set[str]:
    """Every quantity of the relations a plan solves with or checks."""
    return {v for r in plan.relations for v in model.variables_in(r)}


def _zeros_used(plan: Plan, original: Model, zeros: frozenset[str]) -> Plan:
    """The plan with the zero pins its relations had before the zeros were put in
    counted as used."""
    used = used_zeros(original, plan.relations, zeros)
    return replace(plan, unused_pins=tuple(p for p in plan.unused_pins if p not in used))


def _settle(model: Model, pins: dict[str, Pin], names: tuple[str, ...], plan: Plan,
            ranged: Mapping[str, Pin] | None = None) -> tuple:
    """The last passes over a final pin set, the same whichever targets were asked.

    Ranged pins that the other pins determine are set aside (each is judged against what
    the plan derives), and the quantities conditions report beside the answers
    (``memory_fill`` beside a serving answer) are planned with the targets.

    Returns
    -------
    plan, pins, reported (name, bound) pairs, and the ranged pins set aside (with
    ``ranged``, those set aside before)
    """
    ranged = dict(ranged or {})
    if plan.checks and plan.determined:
        pins, more = set_aside_ranges(model, pins, names, _used_quantities(model, plan))
        ranged.update(more)
    extra = reported(model, plan, names) if plan.determined else ()
    if extra or ranged:
        plan = make_plan(model, frozenset(pins),
                         names + tuple(n for n, _ in extra) + tuple(ranged))
    return plan, pins, extra, ranged


def prepare(targets, given: Given = (), presets=(), model: Model | None = None,
            drop: Iterable[str] = (), values: Mapping[str, float] | None = None) -> Prepared:
    """Resolve pins and plan a question (what :func:`solve` does before computing).

    ``values`` (base units) replace the values of pins already in force, each keeping
    its layer and source: the same question asked at another point.
    """
    model = model if model is not None else load_model()
    names = _targets(model, targets)
    resolved = resolve(model, given, presets, names)
    pins, notes, sensitive = resolved.pins, (), frozenset()
    if values:
        pins = dict(pins)
        for name, value in values.items():
            if name not in pins:
                raise UsageError(f"{name} is not pinned in this question; pin it when "
                                 "making the question")
            pins[name] = moved_pin(model, pins[name], value)
        resolved = replace(resolved, pins=pins)
    dropped = {model.variable(n).name for n in drop}
    if dropped:
        pins = {k: v for k, v in pins.items() if k not in dropped}
        resolved = replace(resolved, stated={k: v for k, v in resolved.stated.items()
                                             if k not in dropped})
    model, chosen = for_pins(model, pins)  # latent or grouped-query attention, say
    if chosen:
        notes = (chosen,)
    # with zeros pinned this plan is a first look (planned again once they are put in),
    # which need not say what would complete an under-determined question
    final = not zero_pins(pins)
    plan = make_plan(model, frozenset(pins), names, explain=final)
    # a count the model's preset states keeps its value when asked for beside a serving
    # figure that would re-derive it (n_local_layers beside a given KV size)
    held = held_counts(model, resolved.stated, plan)
    if held:
        pins = {**pins, **held}
        plan = make_plan(model, frozenset(pins), names, explain=final)
    if plan.checks:
        yielded = yield_defaults(model, pins, names)
        sensitive |= yielded.sensitive
        if yielded.notes:
            pins, notes = yielded.pins, notes + yielded.notes
            plan = make_plan(model, frozenset(pins), names, explain=final)
    headlines = yield_headlines(model, pins)  # one size per model, whatever is asked
    if headlines.notes:
        pins, notes = headlines.pins, notes + headlines.notes
        plan = make_plan(model, frozenset(pins), names, explain=final)
        if plan.checks:  # what the architecture now derives may outrank other defaults
            yielded = yield_defaults(model, pins, names)
            sensitive |= yielded.sensitive
            if yielded.notes:
                pins, notes = yielded.pins, notes + yielded.notes
                plan = make_plan(model, frozenset(pins), names, explain=final)
    if plan.checks:  # a user's pin stands over what presets alone derive for it
        overridden = override_presets(model, pins, names)
        if overridden.set_aside:
            model, notes = overridden.model, notes + overridden.notes
            # the notes compare the user's value with what the presets give: any other
            # value is prepared again, so no note quotes a value no longer asked
            sensitive |= frozenset(pins)
            plan = make_plan(model, frozenset(pins), names, explain=final)
    zeros = zero_pins(pins)
    if plan.determined and not zeros & _used_quantities(model, plan):
        zeros = frozenset()  # no relation the answer rests on has an absent term
    absent = put_zeros(model, zeros)
    original = None  # the model before absent terms were taken out, if they were
    if absent.model is not model:
        original = model
        pins = {**pins, **following_pins(absent, model, pins)}
        model = absent.model
        if absent_note(absent):
            notes += (absent_note(absent),)
        plan = make_plan(model, frozenset(pins), names)
        if plan.checks:  # with the absent terms gone, more may now give way
            yielded = yield_defaults(model, pins, names)
            sensitive |= yielded.sensitive
            if yielded.notes:
                pins, notes = yielded.pins, notes + yielded.notes
                plan = make_plan(model, frozenset(pins), names)
        plan = _zeros_used(plan, original, zero_pins(pins))
    elif not final:
        plan = make_plan(model, frozenset(pins), names)
    plan, pins, extra, ranged = _settle(model, pins, names, plan)
    if (extra or ranged) and original is not None:
        plan = _zeros_used(plan, original, zero_pins(pins))
    return Prepared(model, names, pins, notes, resolved.conventions, plan, resolved.stated,
                    extra, ranged, sensitive)


def moved_pin(model: Model, pin: Pin, value: float) -> Pin:
    """``pin`` at another base value (keeping its layer and source), shown as such; a
    range or distribution moved to one value is that value."""
    variable = model.variables[pin.name]
    # read as a value the user typed: the same bounds and finiteness checks
    base, text = read_value(variable, Q_(float(value) / variable.to_base, variable.pint_unit))
    return replace(pin, value=base, text=text, spread=None)  # a ranged pin at one point


def _is_whole(value) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _is_real(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _names(argument: str, names, single: bool):
    """``names`` as a list (a single name as it is, if ``single``); UsageError unless it
    is a list of names."""
    if isinstance(names, str) and single:
        return names
    one = "a quantity name or " if single else ""
    if isinstance(names, (str, Mapping)) or not isinstance(names, Iterable):
        raise UsageError(f"{argument} must be {one}a list of quantity names, not "
                         f"{_shown(names)}")
    names = list(names)  # read once: a generator is empty the second time
    if not all(isinstance(n, str) for n in names):
        raise UsageError(f"{argument} must be {one}a list of quantity names (text)")
    return names


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _pin_value(name: str, value) -> None:
    """Refuse a whole number (alone or as a Quantity's magnitude) no float can hold."""
    magnitude = getattr(value, "magnitude", value)
    if _is_whole(magnitude):
        try:
            float(magnitude)
        except OverflowError:
            raise UsageError(f"given {name}={_shown(magnitude)} is too large for a "
                             f"floating-point number (at most about 1.8e308)") from None


def _question(targets, given, presets) -> tuple:
    """``(targets, given, presets)`` read once each (lists for iterables), or UsageError
    naming the argument and what it accepts, for what :func:`solve` and :func:`explain`
    cannot read (the engine would fail on it with a bare TypeError or OverflowError)."""
    targets = _names("targets", targets, single=True)
    pins = "given must be a mapping {name: value} or a list of \"NAME=VALUE UNIT\" texts"
    if isinstance(given, Mapping):
        items = list(given.items())
    elif isinstance(given, Iterable) and not isinstance(given, str):
        given = list(given)
        items = [item for item in given if not isinstance(item, str)]
        if not all(isinstance(item, tuple) and len(item) == 2 for item in items):
            raise UsageError(pins)
    else:
        raise UsageError(f"{pins}, not {_shown(given)}")
    for name, value in items:
        if not isinstance(name, str):
            raise UsageError(f"{pins}: the name {_shown(name)} is not text")
        _pin_value(name, value)
    if presets is None or isinstance(presets, (str, Preset)):
        return targets, given, presets
    presets = list(presets) if isinstance(presets, Iterable) else None
    if presets is None or not all(isinstance(p, (str, Preset)) for p in presets):
        raise UsageError("presets must be a preset name or a list of them")
    return targets, given, presets


def _options(regime, rtol, timeout, samples, seed, prefer, drop) -> list[str]:
    """``drop`` as a list, or UsageError for an option the command line would refuse (the
    same choices and limits) or the engine could not use."""
    if regime is not None and regime not in REGIMES:
        raise UsageError(f"regime must be None, {' or '.join(map(repr, REGIMES))}, not "
                         f"{_shown(regime)}")
    if prefer not in PREFERENCES:
        raise UsageError(f"prefer must be {' or '.join(map(repr, PREFERENCES))}, not "
                         f"{_shown(prefer)}")
    low, high = RTOL_LIMITS
    if not _is_real(rtol) or not low < rtol < high:
        raise UsageError(f"rtol must be a number between {low:g} and {high:g} (both "
                         f"excluded), not {_shown(rtol)}")
    if not _is_real(timeout) or not 0 < timeout < math.inf:
        raise UsageError(f"timeout must be a positive number of seconds, not "
                         f"{_shown(timeout)}")
    low, high = SAMPLE_LIMITS
    if samples is not None and (not _is_whole(samples) or not low <= samples <= high):
        raise UsageError(f"samples must be a whole number from {low:,} to {high:,}, not "
                         f"{_shown(samples)}")
    if not _is_whole(seed) or seed < 0:
        raise UsageError(f"seed must be a whole number, 0 or more, not {_shown(seed)}")
    return _names("drop", drop, single=False)


def explain(targets: str | Sequence[str], given: Given = (), presets=(), *,
            model: Model | None = None) -> Explanation:
    """The plan and diagnosis for a question, without computing numbers."""
    targets, given, presets = _question(targets, given, presets)
    q = prepare(targets, given, presets, model)
    return Explanation(q.model, q.plan, q.pins, q.notes, q.conventions)


def solve(targets: str | Sequence[str], given: Given = (), presets=(), *,
          regime: str | None = None, rtol: float = DEFAULT_RTOL,
          timeout: float = DEFAULT_TIMEOUT, model: Model | None = None,
          samples: int | None = None, seed: int = 0, prefer: str = "stated",
          drop: Iterable[str] = ()) -> Solution:
    """Solve for ``targets`` from pins and presets.

    Parameters
    ----------
    targets : str or sequence of str
        Quantity names (or aliases) to determine.
    given : mapping or iterable of "NAME=VALUE UNIT"
        Pins: text such as ``"3.35 TB/s"``, pint Quantities from ``chalk.ureg``,
        or plain numbers for dimensionless quantities.
    presets : str or sequence of str
        Preset names applied before ``given`` (``lecture``, ``h100``, ...).
    regime : str, optional
        ``"compute-bound"`` or ``"memory-bound"`` to resolve a max(...) that
        both regimes could satisfy.
    rtol : float
        Relative tolerance for cross-checks of surplus pins, between 0 and 1.
    timeout : float
        Seconds (positive) allowed for any one symbolic solve before falling back
        to a numeric one.
    model : Model, optional
        Another set of relations (default: the knowledge base).
    samples, seed : int
        Monte Carlo samples and random seed, used when a pin is a range or a
        distribution (``"100e9..300e9 param"``, ``"2 TB/s ±10%"``): 100 to 10,000,000
        samples, by default 100,000, fewer (and said) if a step with no closed form
        would take too long; a seed of 0 or more.
    prefer : {"stated", "derived"}
        For a target a preset or the conventions state a value for (``chip_flops``
        with ``--preset h100``): answer with the statement (default) or with what the
        other pins derive where they give a value. The other is shown beside it as a
        cross-check, and a disagreement is named, not raised.
    drop : iterable of str
        Quantities whose preset or convention values are left out, to see what the
        remaining pins imply for them or through them.

    Returns
    -------
    Solution

    Raises
    ------
    ChalkError
        Subclasses name the problem: unknown name, wrong dimension,
        under-determined (with the pins that would complete it), inconsistent
        pins (with the relation and both values), no or several physical values;
        :class:`~chalk.symbolic.errors.UsageError` for an argument outside what is
        accepted above, naming it.
    """
    targets, given, presets = _question(targets, given, presets)
    drop = _options(regime, rtol, timeout, samples, seed, prefer, drop)
    options = Options(regime=regime, rtol=rtol, timeout=timeout, prefer=prefer,
                      samples=samples, seed=seed)
    # the body chalk.compiled.CompiledQuestion.solve runs at the pins as given
    return solve_prepared(prepare(targets, given, presets, model, drop), options)


def checked_arguments(targets, given, presets, options: Options, drop=()):
    """The arguments of a question, each checked as :func:`solve` checks them.

    Returns
    -------
    targets, given, presets, drop
        With iterators read once into lists.

    Raises
    ------
    UsageError
        Naming the first argument outside what is accepted.
    """
    targets, given, presets = _question(targets, given, presets)
    drop = _options(options.regime, options.rtol, options.timeout, options.samples,
                    options.seed, options.prefer, drop)
    return targets, given, presets, drop


def solve_prepared(q: Prepared, options: Options) -> Solution:
    """Compute a prepared question with ``options``: the one body behind every solve."""
    kwargs = dict(regime=options.regime, rtol=options.rtol, timeout=options.timeout,
                  samples=options.samples, seed=options.seed)
    if q.stated:
        return _solve_stated(q, options.prefer, kwargs)
    return _solve_prepared(q, **kwargs)


def _solve_prepared(q: Prepared, regime=None, rtol=DEFAULT_RTOL, timeout=DEFAULT_TIMEOUT,
                    samples=None, seed=0, stated=None) -> Solution:
    """Compute a prepared question."""
    notes = q.notes
    try:
        done = compute(q.model, q.plan, q.pins, regime, rtol, timeout)
    except ChalkError as exc:
        if not q.reported:
            raise
        # what is reported beside the answer must never cost the answer itself
        names = ", ".join(n for n, _ in q.reported)
        q = replace(q, plan=make_plan(q.model, frozenset(q.pins), q.targets), reported=())
        done = compute(q.model, q.plan, q.pins, regime, rtol, timeout)
        notes += (f"{names} not reported: {exc.message}",)
    plan = done.plan
    propagation = None
    used = _used_quantities(q.model, plan)
    if any(p.spread is not None and n in used for n, p in q.pins.items()):
        # a range on a pin this answer does not use has no share in its spread
        pins = {n: p for n, p in q.pins.items() if p.spread is None or n in used}
        propagation = propagate(done.compiled, pins, q.targets + tuple(q.range_checks),
                                samples, seed, regime)
    if q.range_checks:
        notes += judge_ranges(q.model, q.range_checks, q.plan, done.values, propagation,
                              rtol)
    derived = [n for n in done.values if n not in q.pins and n not in plan.placeholders]
    counts = fractional_counts(q.model, done.values, derived)
    notes += redrawn_counts(q.model, plan.analysis, derived)
    derivation = Derivation(q.model, q.conventions, q.pins, done.records, done.checks,
                            done.values, notes + done.notes, plan.unused_pins, rtol,
                            plan.placeholders, plan.provisional, q.targets,
                            done.flags + counts, q.reported)
    return Solution(q.targets, derivation, plan, propagation, stated or {})


def _solve_stated(q: Prepared, prefer: str, options: dict) -> Solution:
    """Targets that a preset or the conventions state a value for.

    A stated target that the other pins also determine is solved for like any target,
    and the statement becomes its cross-check (a disagreement is named, not raised);
    one they do not determine is answered from the statement. The answer is the
    statement unless ``prefer`` is ``"derived"``, or unless everything that derives it
    comes from higher layers than the statement (as pins yield: the conventions' zero
    sliding-window KV gives way to a hybrid model's preset, a preset's figure to the
    user's own numbers).
    """
    model, names = q.model, q.targets
    derivable = _derivable(q)
    main = stated_plan(q)
    failure = ""
    try:
        solution = _solve_prepared(main, **options)
    except ChalkError as exc:
        if not derivable:
            raise
        # the other pins would give a value but cannot be solved here: use the statements
        failure = exc.message
        solution = _solve_prepared(_answered_with(q, {**q.pins, **q.stated}), **options)
    values = solution.derivation.values
    info, notes, override = {}, [], {}
    for t, pin in q.stated.items():
        variable = model.variables[t]
        stated_text = format_quantity(pin.value / variable.to_base, variable.pint_unit)
        entry = {"stated": pin.value / variable.to_base, "origin": pin.origin,
                 "source": pin.source, "date": pin.date}
        if t in derivable and not failure:
            derived = values[t]
            shown = format_quantity(derived / variable.to_base, variable.pint_unit)
            gap = abs(derived - pin.value) / max(abs(derived), abs(pin.value))
            entry.update(derived=derived / variable.to_base, relative_difference=gap)
            verdict = (f"they agree within {format_gap(gap)}" if gap <= options["rtol"]
                       else f"they differ: {format_gap(gap)}")
            behind = q.plan.analysis.pins_behind(model, t)
            replaced = _outranked(q, t)
            if prefer == "derived" or replaced:
                entry["answer"] = "derived"
                why = (f", set aside: {', '.join(behind)} determine it" if replaced
                       and prefer != "derived" else "")
                notes.append(f"{t}: the pins give {shown}; {pin.origin} states "
                             f"{stated_text}{why}; {verdict}")
            else:
                entry["answer"] = "stated"
                override[t] = pin.value
                notes.append(f"{t}: {pin.origin} states {stated_text}; the other pins give "
                             f"{shown}; {verdict}")
        else:
            entry["answer"] = "stated"
            why = (f"the other pins would give it but cannot be solved ({failure})" if failure
                   and t in derivable
                   else "a count of the model's config, kept: the other pins would derive "
                   "it from serving figures" if t in q.pins
                   else "the other pins do not determine it, so there is nothing to check "
                   "it against")
            notes.append(f"{t}: {pin.origin} states {stated_text}; {why}")
        info[t] = entry
    derivation = replace(solution.derivation, notes=solution.derivation.notes + tuple(notes),
                         targets=names)
    return Solution(names, derivation, solution.plan, solution.uncertainty, info, override)


def stated_plan(q: Prepared) -> Prepared:
    """The question as run when presets state some targets: a stated target the other
    pins determine is solved for (its statement checks it); one they do not is taken
    from the statement as a pin."""
    derivable = _derivable(q)
    return _answered_with(q, {**q.pins, **{t: p for t, p in q.stated.items()
                                          if t not in derivable}})


def _answered_with(q: Prepared, pins: dict) -> Prepared:
    """``q`` run with ``pins`` (statements among them), settled as :func:`prepare`
    settles, so the reported conditions (``memory_fill``) and the ranges set aside do not
    depend on which targets a statement answers."""
    names = q.targets
    rest = tuple(t for t in names if t not in pins) or names
    plan, pins, extra, ranged = _settle(q.model, pins, rest,
                                        make_plan(q.model, frozenset(pins), rest),
                                        q.range_checks)
    return replace(q, pins=pins, stated={}, plan=plan, reported=extra, range_checks=ranged)


def _derivable(q: Prepared) -> set[str]:
    """The stated targets the other pins determine: solved for, the statement their
    check. A held count (:func:`chalk.solvers.yielding.held_counts`) is pinned, so the
    plan "determines" it only as a pin."""
    return {t for t in q.stated if t not in q.pins and q.plan.determines(t)}


def _outranked(q: Prepared, target: str) -> bool:
    """Whether what derives a stated target comes from higher layers than the statement."""
    behind = q.plan.analysis.pins_behind(q.model, target)
    return outranked(q.stated[target], [q.pins[b] for b in behind], q.model)


def stated_answers(q: Prepared, prefer: str) -> dict[str, str]:
    """For each stated target, ``"stated"`` or ``"derived"``: which one is the answer
    when the other pins can be solved (as :func:`solve` decides)."""
    out = {}
    derivable = _derivable(q)
    for t in q.stated:
        out[t] = ("derived" if t in derivable and (prefer == "derived" or _outranked(q, t))
                  else "stated")
    return out
