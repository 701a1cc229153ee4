"""Which pins give way: lower layers to higher ones that determine the same quantity.

A conventions default yields to a chip's or a model's own figures, a preset's value to
the user's; a zero (absence) yields to what computes its quantity, never to a
measurement it feeds into, and a published headline ("235B") to the architecture it
rounds. A count of a model's config
(layers, heads) gives way only to other such counts, never to a serving figure.
:func:`outranked` is the one rule; :func:`yield_defaults` applies it to a question's pins,
:func:`yield_headlines` to a model's headline sizes whatever is asked, and
:func:`override_presets` lets a user's pin stand over what presets alone derive for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from chalk.solvers.analysis.screen import may_determine
from chalk.solvers.execution.execute import compile_plan
from chalk.solvers.execution.placeholders import run
from chalk.solvers.pinning.pinned import Layer, Pin
from chalk.solvers.pinning.zeros import absent_for, following_pins, zero_pins
from chalk.solvers.planning.forward import computed_from, downstream
from chalk.solvers.planning.plan import (
    Plan,
    analyse_pins,
    make_plan,
)
from chalk.solvers.records.notes import Kind, Note
from chalk.solvers.tolerances import PINS
from chalk.symbolic.errors import ChalkError
from chalk.symbolic.model import Model, narrowed_model
from chalk.symbolic.printing.quantities import format_quantity


@dataclass(frozen=True)
class Yielded:
    """Pins after lower layers gave way: the pins in force and a note per pin set aside."""

    pins: dict[str, Pin]
    notes: tuple[Note, ...]
    # pins whose values decided whether a default gave way (it yields only to pins
    # that roughly agree with it): another value of one may change the preparation
    sensitive: frozenset[str] = frozenset()


def yield_defaults(model: Model, pins: Mapping[str, Pin], targets: tuple[str, ...],
                   plan: Plan | None = None) -> Yielded:
    """Set aside lower-layer pins that higher layers already determine.

    A conventions value (the lecture's 300 FLOP/byte, say) yields to a chip's own FLOP/s
    and bandwidth, whatever they imply; a preset value yields to what the user gave. A
    number yields to the user's pins only where they roughly agree with it
    (:data:`~chalk.solvers.tolerances.PINS`), otherwise the disagreement stays and is
    reported as a conflict; a zero stands for absence and
    yields whatever the values, but only to pins that compute its quantity forwards,
    never to a measurement downstream of it (a measured rate does not invent
    sliding-window KV for a dense model); a zero stated for an input (no speculation) is
    weighed after those standing in for computed quantities. Conflicts among equals
    remain errors. Published headlines are left to :func:`yield_headlines`. ``plan``, if
    given, is the question's plan of exactly these pins (it spares planning them again).
    """
    pins = dict(pins)
    notes = []
    weighed = False
    over = _over_determined(model, pins, targets, plan)
    for layer in (Layer.CONVENTIONS, Layer.PRESET):
        # headlines are yield_headlines' (whatever is asked), after these have given way;
        # a zero marked so is an absence all the same, judged with the targets
        ordered = sorted(n for n, p in pins.items()
                         if p.layer is layer and n in over and not _headline_figure(p))
        # A zero stated for an input (no speculation) is weighed after the zeros that
        # stand in for computed quantities (every expert read, no all-to-all): where two
        # absences determine each other, the stand-in gives way, whatever their names.
        stated = [n for n in ordered if not pins[n].value and not model.variables[n].derived]
        for name in [n for n in ordered if n not in stated] + stated:
            higher = _determined_from_above(model, pins, targets, name)
            if higher is None:
                continue
            without = {n: p for n, p in pins.items() if n != name}
            default = pins[name].value
            weighed |= bool(default) and not pins[name].headline
            # a convention is a stand-in for what a preset states: it gives way to presets'
            # figures whatever they imply (the lecture's 300 FLOP/byte to an H100 at its
            # FP8 peak); a number gives way to the user's pins only where they agree
            stand_in = (pins[name].layer is Layer.CONVENTIONS
                        and all(without[h].layer is Layer.PRESET for h in higher))
            implied = implied_value(model, without, name) if default and not stand_in else None
            if default and not stand_in and (
                    implied is None or abs(implied - default) > PINS.yield_rtol * abs(default)):
                continue
            notes.append(_yield_note(pins[name], higher))
            pins = without
    return Yielded(pins, tuple(notes), frozenset(over) if weighed else frozenset())


def _headline_figure(pin: Pin) -> bool:
    """Whether ``pin`` is a published headline figure (not a zero: an absence marked as
    a headline, such as attention at the matmuls' peak, yields as any zero does)."""
    return pin.headline and pin.value != 0


def _yield_note(pin: Pin, higher, **more) -> Note:
    kind = Kind.HEADLINE if _headline_figure(pin) else Kind.YIELDED
    return Note(kind, {"origin": pin.origin, "shown": pin.text, "name": pin.name,
                       "behind": tuple(sorted(higher)), "zero": pin.value == 0, **more})


def _over_determined(model: Model, pins: Mapping[str, Pin], targets: tuple[str, ...],
                     plan: Plan | None = None) -> set[str]:
    """Pins the others could determine: those in a dependent relation's reduced row.
    Only these can give way, and setting pins aside never adds to them, so one analysis
    spares planning once per pin. ``plan``: the plan of these pins, if already made."""
    plan = plan if plan is not None else make_plan(model, frozenset(pins), targets)
    analysis = plan.analysis
    out: set[str] = set()
    for _, row in analysis.dependent:
        for column, value in row.items():
            if value == 0:
                continue
            if column in pins:
                out.add(column)
            else:  # a quantity a small block settled from pins: those pins
                out.update(analysis.pins_behind(model, column))
    return out


def yield_candidates(model: Model, pins: Mapping[str, Pin],
                     targets: tuple[str, ...]) -> tuple[str, ...]:
    """The lower-layer pins that higher layers determine: those :func:`yield_defaults`
    weighs against the numbers. With none, no pin yields whatever the values are."""
    over = _over_determined(model, pins, targets)
    return tuple(name for layer in (Layer.CONVENTIONS, Layer.PRESET)
                 for name in sorted(n for n, p in pins.items() if p.layer is layer
                                    and n in over)
                 if _determined_from_above(model, pins, targets, name) is not None)


def _cannot_give_way(model: Model, pins: Mapping[str, Pin], name: str) -> bool:
    """Whether a number pinned for ``name`` surely gives way to nothing: the pins of
    higher layers alone could not determine its quantity in any regime combination.

    A number gives way only to pins that all outrank it (:func:`outranked`), and those
    pins then determine it by themselves: where the others fix it in the mixture of
    regimes, the pins its derivation rests on are all of higher layers only if those
    alone fix it; where only one regime combination fixes it, the mixture's pins are no
    ground, and what the higher layers cannot fix in any combination is not theirs to
    set. :func:`~chalk.solvers.analysis.screen.may_determine` decides this for every
    candidate from one decomposition per model, where weighing a candidate in full
    takes an analysis of the question without it.
    """
    pin = pins[name]
    if pin.value == 0 or _headline_figure(pin):
        return False
    higher = [n for n, p in pins.items() if n != name and p.layer > pin.layer]
    return not may_determine(model, higher, name)


def _determined_from_above(model, pins, targets, name) -> tuple[str, ...] | None:
    """The pins behind ``name`` if, without it, pins of higher layers determine it.

    A zero stands for absence, and gives way only where the relations compute its
    quantity (:func:`~chalk.solvers.planning.forward.computed_from`) from the other pins
    and the targets that are not downstream of it, taken as known: the touched experts
    of a batch asked for backwards from a step time are that batch's. The computation
    never passes through what the zero feeds: a price step asked for, taken as known,
    would otherwise give Llama speculative decoding through the crossover it sits at
    (``context_crossover`` read backwards into the tokens a step accepts). A measured rate
    downstream of an absent term never brings the term into being by inverting the
    relations through it (no sliding-window KV is invented for a dense model): the
    disagreement stays and is reported.
    """
    without = {n: p for n, p in pins.items() if n != name}
    if pins[name].value == 0:
        later = downstream(model, name)
        known = (frozenset(n for n in without if n not in later)
                 | {t for t in targets if t not in later})
        inputs = computed_from(model, name, known, zero_pins(without) & known, later)
        if inputs is None:
            return None
        higher = tuple(sorted(i for i in inputs if i in without))
    elif _cannot_give_way(model, pins, name):
        return None
    else:
        higher = tuple(analyse_pins(model, frozenset(without), (name,))
                       .pins_behind(model, name))
    # ranks are compared first: most candidates are of the layer of what lies behind
    # them, and that spares planning the question once per candidate
    if not outranked(pins[name], [without[h] for h in higher], model):
        return None
    if not may_determine(model, without, name) or not make_plan(
            model, frozenset(without), targets).determines(name):
        return None
    return higher


def _grounds(model: Model, others: Mapping[str, Pin], pin: Pin) -> Mapping[str, Pin]:
    """The pins among ``others`` that may ground a published headline ``pin``: not those
    downstream of its quantity (a measured step time or rate that it feeds into), so
    that no measurement resizes a model or a chip by inverting the relations, but those
    it names as another statement of itself (``gives_way_to``)."""
    later = downstream(model, pin.name) - set(pin.gives_way_to)
    return {n: p for n, p in others.items() if n not in later}


def outranked(pin: Pin, behind: Sequence[Pin], model: Model) -> bool:
    """Whether pins of higher layers (``behind``: those a derivation of ``pin``'s quantity
    rests on) take precedence over ``pin``.

    A number gives way only when every pin behind the derivation is of a higher layer.
    A zero stands for absence (no sliding-window KV, attention left out): it gives way as
    soon as a higher layer brings what computes the quantity, even if lower-layer pins
    such as another zero also feed in (``behind`` holds only pins upstream of it: see
    :func:`yield_defaults`). A published headline figure ("235B") gives way to
    pins of its own layer or higher that determine it (a model's architecture). A count
    a model preset states of its config (``structural`` in its declaration: layers,
    heads) gives way only to a derivation from such counts alone: 160 kB of KV per token
    given for a model does not make 41 of its 80 layers sliding-window ones. A
    conventions default of a count (no sliding-window layers) is no model's config and
    gives way as any default does.
    """
    if not behind:
        return False
    if (pin.layer is Layer.PRESET and _structural(model, pin.name)
            and not all(_structural(model, b.name) for b in behind)):
        return False
    if _headline_figure(pin):
        return all(b.layer >= pin.layer for b in behind)
    if pin.value == 0:
        return (any(b.layer > pin.layer for b in behind)
                and all(b.layer >= pin.layer for b in behind))
    return all(b.layer > pin.layer for b in behind)


def _structural(model: Model, name: str) -> bool:
    variable = model.variables.get(name)
    return variable is not None and variable.structural


def yield_headlines(model: Model, pins: Mapping[str, Pin]) -> Yielded:
    """Set aside published headline sizes that the other pins determine, whatever is asked.

    A model has one size within a question: where its preset's architecture determines
    ``active_params`` (69.50e9 for Llama 3.1 70B), every answer uses that count, not the
    rounded headline (70.55e9) for some targets and the count for others. Where the
    architecture gives a count only with its zeros put in (a dense model's absent
    experts), they are put in for this test; the headline stays named in the note as the
    count's cross-check.

    A headline whose choice a pin of its layer or higher states the other way (one of its
    ``gives_way_to``: a layout's chips per attention group for its count of groups) gives
    way to that statement even where the other pins do not determine it: the
    conventions' one group beside the dp_attention preset's one chip a group would
    otherwise say "one chip" for a replica whose size is asked for.
    """
    pins = dict(pins)
    notes = []
    headlines = sorted(n for n, p in pins.items() if _headline_figure(p))
    for name in headlines:
        # the architecture alone first, so that one headline is not named as the
        # ground of another; then with the other headlines still in force
        alone = {n: p for n, p in pins.items() if n not in headlines}
        for without in (alone, {n: p for n, p in pins.items() if n != name}):
            behind = _determined_by(model, without, pins[name])
            if behind is not None:
                # a model's size comes from its architecture; a chip's peak from its parts
                notes.append(_yield_note(pins[name], behind,
                                         architecture=model.variables[name].unit == "param"))
                del pins[name]
                break
        else:
            stated = tuple(sorted(g for g in pins[name].gives_way_to if g in pins
                                  and outranked(pins[name], [pins[g]], model)))
            if stated:
                notes.append(_yield_note(pins[name], stated, architecture=False))
                del pins[name]
    return Yielded(pins, tuple(notes))


def _determined_by(model: Model, without: Mapping[str, Pin], pin: Pin):
    """The pins behind ``pin``'s quantity if ``without`` determine it (with the zeros put
    in, if it takes them), pins that outrank it, and give it a value; otherwise None."""
    without = _grounds(model, without, pin)
    if may_determine(model, without, pin.name):
        plan = make_plan(model, frozenset(without), (pin.name,), explain=False)
        behind = _outranking(model, model, without, pin, plan)
        if behind is not None:
            return behind
    # a dense model's size needs its zero experts put in (as absences, not numbers
    # to solve through); that narrowed model is planned only then, as finding its
    # reference point is costly
    absent = absent_for(model, without)
    if absent.model is model:
        return None
    without = {**without, **following_pins(absent, model, without)}
    if not may_determine(absent.model, without, pin.name):
        return None
    plan = make_plan(absent.model, frozenset(without), (pin.name,), explain=False)
    return _outranking(absent.model, model, without, pin, plan)


def _outranking(used: Model, model: Model, pins: Mapping[str, Pin], pin: Pin, plan):
    """The pins behind ``pin``'s quantity in ``plan`` (of ``used``) if they determine
    it, outrank ``pin`` and give it a value; otherwise None."""
    if not plan.determined:
        return None
    behind = plan.analysis.pins_behind(used, pin.name)
    if not outranked(pin, [pins[b] for b in behind], model):
        return None
    if implied_value(used, pins, pin.name) is None:
        return None
    return behind


@dataclass(frozen=True)
class Overridden:
    """A question's model after user pins took the place of what presets derive.

    Attributes
    ----------
    model : Model
        The model without the relations through which presets alone derived a
        quantity the user pinned (the model itself when there were none).
    set_aside : tuple of str
        Those relations.
    notes : tuple of Note
        Per such pin: the user's value, the presets' value as its cross-check, the gap.
    """

    model: Model
    set_aside: tuple[str, ...] = ()
    notes: tuple[Note, ...] = ()


def override_presets(model: Model, pins: Mapping[str, Pin], targets: tuple[str, ...],
                     plan: Plan | None = None) -> Overridden:
    """Let each user pin stand where presets alone also determine its quantity.

    With ``kv_bytes_per_token`` given beside a model preset whose architecture gives
    another size, the given size is used and the relation that derives it from the
    architecture is set aside for this question, so that it neither conflicts with the
    pin nor re-derives the architecture's counts from it; what the presets give is shown
    beside the pin with the gap. A pin that other user pins also determine is left to
    the cross-checks (those are the user's own numbers disagreeing), and so is a range,
    which is judged against the derivation instead (:mod:`chalk.solvers.bulk.ranged_pins`).
    A relation is set aside only if the targets stay determined without it. ``plan``,
    if given, is the question's plan of exactly these pins.
    """
    over = _over_determined(model, pins, targets, plan)
    candidates = sorted(n for n, p in pins.items()
                        if n in over and p.layer is Layer.GIVEN and p.spread is None)
    if not candidates:
        return Overridden(model)
    if plan is None:
        plan = make_plan(model, frozenset(pins), targets, explain=False)
    determined = plan.determined
    set_aside: list[str] = []
    notes: list[Note] = []
    for name in candidates:
        without = {n: p for n, p in pins.items() if n != name}
        if not may_determine(model, without, name):
            continue
        plan = make_plan(model, frozenset(without), (name,), explain=False)
        if not plan.determined:
            continue
        behind = plan.analysis.pins_behind(model, name)
        if not behind or any(without[b].layer is Layer.GIVEN for b in behind):
            continue
        step = next((s for s in plan.steps if name in s.variables), None)
        if step is None or step.simultaneous:
            continue  # no one relation to set aside: the cross-check names the conflict
        narrowed = without_relations(model, (*set_aside, step.relations[0]))
        if determined and not make_plan(narrowed, frozenset(pins), targets,
                                        explain=False).determined:
            continue
        implied = implied_value(model, without, name)
        if implied is None:
            continue
        set_aside.append(step.relations[0])
        notes.append(_override_note(model, pins[name], implied,
                                    [without[b] for b in behind], step.relations[0]))
    if not set_aside:
        return Overridden(model)
    return Overridden(without_relations(model, tuple(set_aside)), tuple(set_aside),
                      tuple(notes))


def _override_note(model: Model, pin: Pin, implied: float, behind: Sequence[Pin],
                   relation: str) -> Note:
    variable = model.variables[pin.name]
    gap = abs(implied - pin.value) / max(abs(implied), abs(pin.value))
    return Note(Kind.OVERRIDDEN, {
        "name": pin.name,
        "given": format_quantity(pin.value / variable.to_base, variable.pint_unit),
        "implied": format_quantity(implied / variable.to_base, variable.pint_unit),
        "presets": tuple(sorted({b.preset for b in behind if b.layer is Layer.PRESET})),
        "conventions": behind[0].preset, "gap": gap, "agree": gap <= PINS.agreement_rtol,
        "relation": relation})


@lru_cache(maxsize=32)
def without_relations(model: Model, names: tuple[str, ...]) -> Model:
    """``model`` without the relations ``names`` (cached per set)."""
    keep = [r for r in model.relations.values() if r.name not in names]
    return narrowed_model(model, keep)


def held_counts(model: Model, stated: Mapping[str, Pin], plan) -> dict[str, Pin]:
    """Targets a model preset states that are counts of its config and that ``plan``
    would derive through something else than such counts: they keep the preset's value
    (asking for ``n_local_layers`` beside a given KV size answers the model's 0, whatever
    else is asked)."""
    held = {}
    for name, pin in stated.items():
        # a model's counts come from its preset; a conventions default (no sliding-window
        # layers unless a preset says so) gives way to what the user's figures derive
        if (pin.layer is not Layer.PRESET or not _structural(model, name)
                or not plan.determines(name)):
            continue
        behind = plan.analysis.pins_behind(model, name)
        if not all(_structural(model, b) for b in behind):
            held[name] = pin
    return held


def implied_value(model: Model, pins: Mapping[str, Pin], name: str) -> float | None:
    """The value (base units) the pins imply for ``name``; None if they do not give one.

    Remembered by the values of the pins the plan reads (its steps' and checks'
    relations): a question's preparation asks it for each headline, again for each
    stated target, and again for each question a sweep or an application asks, with
    pins that differ only where the plan does not look (a model's size from its
    architecture, whatever the context length)."""
    pinned = frozenset(pins)
    if not may_determine(model, pinned, name):
        return None
    plan = make_plan(model, pinned, (name,))
    if not plan.determined:
        return None
    compiled = compile_plan(model, plan)
    key = (model, pinned, name, tuple((n, pins[n].value) for n in _read_pins(compiled, pinned)))
    if key not in _IMPLIED:
        if len(_IMPLIED) >= PINS.implied_kept:
            _IMPLIED.clear()
        try:
            values, _, _ = run(compiled, {n: p.value for n, p in pins.items()})
            _IMPLIED[key] = values.get(name)
        except ChalkError:
            _IMPLIED[key] = None
    return _IMPLIED[key]


_IMPLIED: dict = {}  # implied_value's answers by the values its plan reads


def _read_pins(compiled, pinned: frozenset[str]) -> tuple[str, ...]:
    """The pins a compiled plan's run can read: those in the relations of its steps and
    of its checks."""
    model = compiled.model
    read = set()
    for step in compiled.steps:
        for relation in step.relations:
            read |= model.variables_in(relation.name)
    for relation, _, _ in compiled.checks:
        read |= model.variables_in(relation.name)
    return tuple(sorted(read & pinned))
