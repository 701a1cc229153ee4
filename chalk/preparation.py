"""Preparing a question: the pins in force and the plan, before any number is computed.

:func:`prepare` resolves the conventions, presets and the user's pins into one checked set,
lets lower layers give way where higher ones determine their quantity, takes absent terms
out, holds a model's counts, sets ranged pins aside where the others determine them, and
adds the quantities a condition reports beside the answers. The result, a
:class:`Prepared`, is what every path computes from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from chalk.knowledge import load_model
from chalk.knowledge.conventions import CONVENTIONS, DEFAULT_CONVENTIONS
from chalk.solvers.bulk.ranged_pins import set_aside_ranges
from chalk.solvers.pinning.pinned import Pin
from chalk.solvers.pinning.pins import ResolvedPins, read_value, resolve_pins
from chalk.solvers.pinning.variants import for_pins
from chalk.solvers.pinning.yielding import (
    held_counts,
    outranked,
    override_presets,
    yield_defaults,
    yield_headlines,
)
from chalk.solvers.pinning.zeros import following_pins, put_zeros, used_zeros, zero_pins
from chalk.solvers.pinning.zeros import note as absent_note
from chalk.solvers.planning.plan import Plan, make_plan
from chalk.solvers.records.flags import reported
from chalk.symbolic.errors import UsageError
from chalk.symbolic.model import Model
from chalk.symbolic.presets import Preset
from chalk.symbolic.units import Q_

Given = Mapping[str, object] | Iterable[str]



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
        (:func:`chalk.solvers.bulk.ranged_pins.judge_ranges`).
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



def used_quantities(model: Model, plan: Plan) -> set[str]:
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
        pins, more = set_aside_ranges(model, pins, names, used_quantities(model, plan))
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
    if plan.determined and not zeros & used_quantities(model, plan):
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



def stated_plan(q: Prepared) -> Prepared:
    """The question as run when presets state some targets: a stated target the other
    pins determine is solved for (its statement checks it); one they do not is taken
    from the statement as a pin."""
    derivable = derivable_statements(q)
    return answered_with(q, {**q.pins, **{t: p for t, p in q.stated.items()
                                          if t not in derivable}})



def answered_with(q: Prepared, pins: dict) -> Prepared:
    """``q`` run with ``pins`` (statements among them), settled as :func:`prepare`
    settles, so the reported conditions (``memory_fill``) and the ranges set aside do not
    depend on which targets a statement answers."""
    names = q.targets
    rest = tuple(t for t in names if t not in pins) or names
    plan, pins, extra, ranged = _settle(q.model, pins, rest,
                                        make_plan(q.model, frozenset(pins), rest),
                                        q.range_checks)
    return replace(q, pins=pins, stated={}, plan=plan, reported=extra, range_checks=ranged)



def derivable_statements(q: Prepared) -> set[str]:
    """The stated targets the other pins determine: solved for, the statement their
    check. A held count (:func:`chalk.solvers.pinning.yielding.held_counts`) is pinned, so the
    plan "determines" it only as a pin."""
    return {t for t in q.stated if t not in q.pins and q.plan.determines(t)}



def statement_outranked(q: Prepared, target: str) -> bool:
    """Whether what derives a stated target comes from higher layers than the statement."""
    behind = q.plan.analysis.pins_behind(q.model, target)
    return outranked(q.stated[target], [q.pins[b] for b in behind], q.model)



def stated_answers(q: Prepared, prefer: str) -> dict[str, str]:
    """For each stated target, ``"stated"`` or ``"derived"``: which one is the answer
    when the other pins can be solved (as :func:`solve` decides)."""
    out = {}
    derivable = derivable_statements(q)
    for t in q.stated:
        out[t] = ("derived" if t in derivable and (prefer == "derived" or statement_outranked(q, t))
                  else "stated")
    return out
