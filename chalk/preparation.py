"""Preparing a question: the pins in force and the plan, before any number is computed.

:func:`prepare` resolves the conventions, presets and the user's pins into one checked set
and runs it through :data:`PASSES`, in order, each a function from :class:`State` to
State that may add typed notes (:class:`~chalk.solvers.records.notes.Note`):

1. :func:`move_values`: the question asked at other values of its pins;
2. :func:`drop_pins`: values the question asks to leave out;
3. :func:`choose_variant`: the kind of model the pins are about;
4. :func:`hold_counts`: a model's stated counts keep their values;
5. :func:`yield_lower_layers`: lower layers give way where higher ones determine them;
6. :func:`one_size_per_model`: published headline sizes give way to the architecture;
7. :func:`user_pins_stand`: a user's pin stands over what presets alone derive;
8. :func:`put_in_zeros`: pinned zeros take absent terms out (what they leave
   determined gives way again, as in 5 and 7);
9. :func:`settle`: ranged pins set aside, reported conditions planned with the targets.

A pass plans only through :func:`planned`, which makes a plan only for a model and pin
set not yet planned. The result, a :class:`Prepared`, is what every path computes from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from chalk.knowledge import load_model
from chalk.knowledge.conventions import CONVENTIONS, DEFAULT_CONVENTIONS
from chalk.solvers.bulk.ranged_pins import set_aside_ranges
from chalk.solvers.pinning.pinned import Layer, Pin, ground_zeros
from chalk.solvers.pinning.pins import ResolvedPins, read_value, resolve_pins
from chalk.solvers.pinning.variants import for_pins
from chalk.solvers.pinning.yielding import (
    held_counts,
    override_presets,
    yield_defaults,
    yield_headlines,
)
from chalk.solvers.pinning.zeros import (
    absent_for,
    following_pins,
    put_zeros,
    used_zeros,
    zero_pins,
)
from chalk.solvers.pinning.zeros import note as absent_note
from chalk.solvers.planning.plan import Plan, completions_replacing, make_plan
from chalk.solvers.records.flags import reported
from chalk.solvers.records.notes import Note
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
    notes : tuple of Note
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
    notes: tuple[Note, ...]
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



@dataclass(frozen=True)
class State:
    """A question part way through preparation: what each pass reads and returns.

    Attributes
    ----------
    model : Model
        The relations in force (narrowed by a variant, by user pins standing over
        presets, or by absent terms).
    targets : tuple of str
    pins : mapping of name to Pin
    stated : mapping of name to Pin
        Targets a preset or the conventions state a value for.
    conventions : str
    notes : tuple of Note
        What the passes so far set aside, and why.
    sensitive : frozenset of str
        Pins whose values decided whether a lower-layer value gave way.
    moves : mapping of name to float
        Base values asked for in place of pins' own (:func:`moved_pin`).
    drop : frozenset of str
        Quantities whose presets' and conventions' values are left out.
    explain : bool
        Whether a plan says what would complete an under-determined question: not while
        zeros are pinned and not yet put in (that plan is a first look).
    original : Model or None
        The model before absent terms were taken out, once they were.
    reported, range_checks
        As :class:`Prepared`, once settled.
    plan : Plan or None
        The plan of exactly this model, these pins and targets, or None until a pass
        needs it (:func:`planned`): a pass that changes the pins or the model drops it,
        so each pin set is planned at most once.
    """

    model: Model
    targets: tuple[str, ...]
    pins: Mapping[str, Pin]
    stated: Mapping[str, Pin]
    conventions: str
    notes: tuple[Note, ...] = ()
    sensitive: frozenset[str] = frozenset()
    moves: Mapping[str, float] = field(default_factory=dict)
    drop: frozenset[str] = frozenset()
    explain: bool = True
    original: Model | None = None
    reported: tuple[tuple[str, str], ...] = ()
    range_checks: Mapping[str, Pin] = field(default_factory=dict)
    plan: Plan | None = None


def planned(state: State) -> State:
    """``state`` with its plan (made only if it has none)."""
    if state.plan is not None:
        return state
    plan = make_plan(state.model, frozenset(state.pins), state.targets, explain=state.explain)
    if state.original is not None:  # zeros put in still shaped the relations used
        plan = _zeros_used(plan, state.original, zero_pins(state.pins))
    return replace(state, plan=plan)


def _repinned(state: State, pins: Mapping[str, Pin], notes=(), sensitive=frozenset(),
              **changes) -> State:
    """``state`` with other pins (or a model, in ``changes``) and more notes: unplanned."""
    return replace(state, pins=pins, notes=state.notes + tuple(notes),
                   sensitive=state.sensitive | sensitive, plan=None, **changes)


def move_values(state: State) -> State:
    """Pins in force take the values asked for (each keeping its layer and source)."""
    if not state.moves:
        return state
    pins = dict(state.pins)
    for name, value in state.moves.items():
        if name not in pins:
            raise UsageError(f"{name} is not pinned in this question; pin it when "
                             "making the question")
        pins[name] = moved_pin(state.model, pins[name], value)
    return _repinned(state, pins)


def drop_pins(state: State) -> State:
    """Values the question asks to leave out are taken out of the pins and statements."""
    dropped = {state.model.variable(n).name for n in state.drop}
    if not dropped:
        return state
    return _repinned(state, {k: v for k, v in state.pins.items() if k not in dropped},
                     stated={k: v for k, v in state.stated.items() if k not in dropped})


def choose_variant(state: State) -> State:
    """The kind of model the pins are about (latent or grouped-query attention, say); a
    plan before zeros are put in is a first look (:attr:`State.explain`)."""
    # a statement says what kind of model this is whether or not it is asked for
    model, chosen = for_pins(state.model, {**state.pins, **state.stated})
    explain = not zero_pins(state.pins)
    if model is state.model and explain == state.explain:
        return state
    return replace(state, model=model, notes=state.notes + ((chosen,) if chosen else ()),
                   explain=explain, plan=None)


def hold_counts(state: State) -> State:
    """A count the model's preset states keeps its value when asked for beside a serving
    figure that would re-derive it (``n_local_layers`` beside a given KV size)."""
    state = planned(state)
    held = held_counts(state.model, state.stated, state.plan)
    return _repinned(state, {**state.pins, **held}) if held else state


def yield_lower_layers(state: State) -> State:
    """Lower-layer values that higher layers determine give way
    (:func:`~chalk.solvers.pinning.yielding.yield_defaults`)."""
    state = planned(state)
    if not state.plan.checks:
        return state
    yielded = yield_defaults(state.model, state.pins, state.targets, state.plan)
    if not yielded.notes:
        return replace(state, sensitive=state.sensitive | yielded.sensitive)
    return _repinned(state, yielded.pins, yielded.notes, yielded.sensitive)


def one_size_per_model(state: State) -> State:
    """Published headline figures give way to what determines them whatever is asked;
    what that then derives may outrank other defaults, which may in turn free another
    headline (a chip's datasheet FLOP/s waits on the lecture's 300 FLOP/byte giving way
    to the chip): repeated until nothing more gives way. Each round sets pins aside, so
    it ends."""
    while True:
        # statements of asked targets are facts here as when not asked (the fp8 preset's
        # matmul share derives H200's FP8 peak whether or not the share is the question)
        headlines = yield_headlines(state.model, {**state.stated, **state.pins})
        # An asked headline the other pins determine stays a statement, their value its
        # cross-check; one that gives way only to another statement (H200's datasheet
        # FLOP/s to fp8's matmul share, both asked) is derived like any target.
        kept = {k for k, pin in state.stated.items() if k in headlines.pins or k not in
                yield_headlines(state.model, {**state.pins, k: pin}).pins}
        notes = tuple(n for n in headlines.notes if n.data["name"] not in kept)
        if not notes:
            return state
        stated = {k: v for k, v in state.stated.items() if k in kept}
        pins = {k: v for k, v in headlines.pins.items() if k in state.pins}  # held counts stay
        state = yield_lower_layers(_repinned(state, pins, notes, stated=stated))


def user_pins_stand(state: State) -> State:
    """A user's pin stands over what presets alone derive for it, the presets' value
    its cross-check (:func:`~chalk.solvers.pinning.yielding.override_presets`)."""
    state = planned(state)
    if not state.plan.checks:
        return state
    overridden = override_presets(state.model, state.pins, state.targets, state.plan)
    if not overridden.set_aside:
        return state
    # the notes compare the user's value with what the presets give: any other value
    # is prepared again, so no note quotes a value no longer asked
    return _repinned(state, state.pins, overridden.notes, frozenset(state.pins),
                     model=overridden.model)


def put_in_zeros(state: State) -> State:
    """Pinned zeros take their absent terms out of the relations the answer rests on,
    and what they leave determined may then give way, lower layers to higher ones and
    presets' values to the user's pins; from here plans say what would complete an
    under-determined question.

    Only with the zeros in does a relation show that presets alone determine a
    quantity the user pinned: before, a term a zero removes still holds an unknown
    (H800's FP4 peak beside bf16's zero FP4 share), so the user's ``chip_flops`` looked
    like what determines that unknown rather than a second value of its own quantity.
    """
    zeros = zero_pins(state.pins)
    if zeros:
        state = planned(state)
        if (state.plan.determined and not zeros & used_quantities(state.model, state.plan)
                and not _beside_given(state.model, state.pins, zeros)):
            # no relation the answer rests on has an absent term, and no user pin's
            # cross-check waits on one
            zeros = frozenset()
    absent = put_zeros(state.model, zeros, ground_zeros(state.pins))
    if absent.model is state.model:
        if state.explain:
            return state
        # a determined plan has nothing to complete: the first look is the plan
        keep = state.plan if state.plan is not None and state.plan.determined else None
        return replace(state, explain=True, plan=keep)
    note = absent_note(absent)
    state = _repinned(state, {**state.pins, **following_pins(absent, state.model, state.pins)},
                      (note,) if note else (), model=absent.model, original=state.model,
                      explain=True)
    return user_pins_stand(yield_lower_layers(state))


def _beside_given(model: Model, pins: Mapping[str, Pin], zeros: frozenset[str]) -> bool:
    """Whether the zeros take an unpinned quantity out of a relation that keeps a user's
    single-valued pin: with them in, the presets may determine that pin's quantity (an
    H100's ``chip_flops`` from its bf16 peak once bf16's zero FP4 share removes the
    unknown FP4 peak), and :func:`user_pins_stand` then makes theirs its cross-check."""
    absent = put_zeros(model, zeros, ground_zeros(pins)).model
    given = {n for n, p in pins.items() if p.layer is Layer.GIVEN and p.spread is None}
    kept = {r for g in given for r in model.relations_of(g) if r in absent.relations}
    return any(n not in pins for r in kept
               for n in model.variables_in(r) - absent.variables_in(r))


def settle(state: State) -> State:
    """Ranged pins the others determine are set aside (each judged against what the
    plan derives) and the quantities conditions report beside the answers
    (``memory_fill``) are planned with the targets: the same whichever targets were
    asked."""
    state = planned(state)
    plan, pins, extra, ranged = settled_plan(state.model, state.pins, state.targets,
                                             state.plan, state.range_checks)
    if plan is not state.plan and state.original is not None:
        plan = _zeros_used(plan, state.original, zero_pins(pins))
    return replace(state, pins=pins, plan=plan, reported=extra, range_checks=ranged)


def complete_past_zeros(state: State) -> State:
    """An under-determined question that no extra pin completes is offered the pins that
    would replace a default's zero where that zero took out the only relations naming a
    target: the user's value stands over the default's (``acceptance_rate`` appears only
    in the relation that ``accepted_tokens_per_step = 0``, no speculation, removes; pinning
    it with ``draft_tokens`` determines the rate)."""
    state = planned(state)
    plan, original = state.plan, state.original
    if plan.determined or plan.completions or original is None:
        return state
    removed = set(original.relations) - set(state.model.relations)

    def defaults_in(relations):
        return {n for r in relations for n in original.variables_in(r) if n in state.pins
                and state.pins[n].value == 0 and state.pins[n].layer is not Layer.GIVEN}

    # one absence is several zeros (no speculation: nothing accepted, nothing thrown away):
    # those that share a removed relation are replaced together
    release = defaults_in(r for t in plan.undetermined for r in original.relations_of(t)
                          if r in removed)
    while more := defaults_in(r for n in release for r in original.relations_of(n)
                              if r in removed) - release:
        release |= more
    if not release:
        return state
    # the zeros that followed from those go with them: they are put in again from the rest
    gone = set(release)
    follows = absent_for(original, state.pins).follows
    while more := {name for name, _, behind in follows if gone & set(behind)} - gone:
        gone |= more
    pins = {n: p for n, p in state.pins.items() if n not in gone}
    absent = absent_for(original, pins)
    pins.update(following_pins(absent, original, pins))
    found = completions_replacing(absent.model, frozenset(pins), state.targets,
                                  frozenset(release))
    # a set replaces only the zeros it names: the others stay in force, and the set must
    # complete the question with them (a pinned decode_tokens_per_step does not replace
    # nothing accepted)
    followers = {name for name, _, _ in follows}
    found = tuple(c for c in found if _completes_beside(state, original, followers, c))
    return replace(state, plan=replace(plan, completions=found)) if found else state


def _completes_beside(state: State, original: Model, followers: set[str], extra) -> bool:
    """Whether pinning ``extra`` determines the targets with the other pins in force, the
    zeros that followed from zeros (``followers``) followed again from those left."""
    pins = {n: p for n, p in state.pins.items() if n not in followers and n not in extra}
    absent = absent_for(original, pins)
    pins.update({n: p for n, p in following_pins(absent, original, pins).items()
                 if n not in extra})
    return make_plan(absent.model, frozenset(pins) | set(extra), state.targets,
                     explain=False).determined


# The passes of :func:`prepare`, in order; each takes a State and returns one.
PASSES = (move_values, drop_pins, choose_variant, hold_counts, yield_lower_layers,
          one_size_per_model, user_pins_stand, put_in_zeros, settle, complete_past_zeros)


def settled_plan(model: Model, pins: dict[str, Pin], names: tuple[str, ...], plan: Plan,
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
    """Resolve pins and plan a question (what :func:`solve` does before computing): the
    resolved pins run through :data:`PASSES` in order.

    ``values`` (base units) replace the values of pins already in force, each keeping
    its layer and source: the same question asked at another point.
    """
    model = model if model is not None else load_model()
    names = _targets(model, targets)
    resolved = resolve(model, given, presets, names)
    return _passed(model, names, resolved, frozenset(drop), values)


def _passed(model: Model, names: tuple[str, ...], resolved: ResolvedPins,
            drop: frozenset[str], values: Mapping[str, float] | None = None) -> Prepared:
    """Resolved pins run through :data:`PASSES`."""
    state = State(model, names, resolved.pins, resolved.stated, resolved.conventions,
                  moves=dict(values or {}), drop=drop)
    for step in PASSES:
        state = step(state)
    return Prepared(state.model, names, state.pins, state.notes, state.conventions,
                    state.plan, state.stated, state.reported, state.range_checks,
                    state.sensitive)


# Questions prepared lately, by shape (:func:`_shape`): each with the pins it was resolved
# with, so that one asked again at other values of the user's pins is not prepared again.
_PREPARED: dict[tuple, tuple[ResolvedPins, Prepared]] = {}
_PREPARED_KEPT = 64


def prepare_again(targets, given: Given = (), presets=(), model: Model | None = None,
                  drop: Iterable[str] = ()) -> Prepared:
    """:func:`prepare`, reusing the preparation of an earlier question of the same shape.

    The shape is everything but the values of the user's single-valued pins: the model,
    targets, presets and drops, each pin's name, layer and provenance, and whether its
    value is zero (a zero takes a term out). A question of a known shape is prepared
    afresh only where a pin whose value decided the preparation
    (:attr:`Prepared.value_sensitive`) changed, or a pin the passes changed; otherwise
    the earlier preparation is taken with the new pins put in place of the old, as
    :class:`chalk.compiled.CompiledQuestion` asks a question again at new values (the
    user's own text kept, as :func:`prepare` keeps it).
    """
    model = model if model is not None else load_model()
    names = _targets(model, targets)
    resolved = resolve(model, given, presets, names)
    drop = frozenset(drop)
    key = _shape(model, names, presets, resolved, drop)
    if key is None:  # a range or a distribution (judged by value), or a Preset object
        return _passed(model, names, resolved, drop)
    earlier = _PREPARED.get(key)
    if earlier is not None:
        again = _repinned_prepared(*earlier, resolved)
        if again is not None:
            return again
    prepared = _passed(model, names, resolved, drop)
    if len(_PREPARED) >= _PREPARED_KEPT:
        _PREPARED.clear()  # start again (one call, safe beside other threads)
    _PREPARED[key] = (resolved, prepared)
    return prepared


def _shape(model: Model, names: tuple[str, ...], presets, resolved: ResolvedPins,
           drop: frozenset[str]) -> tuple | None:
    """What a question's preparation may depend on besides the values of the user's pins:
    None for a question with a ranged or distributed pin, or with a preset given as an
    object (a name stands for the same data every time)."""
    if isinstance(presets, str):
        presets = (presets,)
    presets = tuple(presets or ())
    if not all(isinstance(p, str) for p in presets):
        return None
    given = []
    for pin in resolved.pins.values():
        if pin.layer is not Layer.GIVEN:
            continue  # the presets' and conventions': the same for the same names
        if pin.spread is not None:
            return None
        given.append((pin.name, pin.source, pin.date, pin.note, pin.estimate, pin.replaces,
                      pin.headline, (pin.value > 0) - (pin.value < 0)))
    return (model, names, presets, drop, tuple(given))


def _repinned_prepared(before: ResolvedPins, prepared: Prepared,
                       resolved: ResolvedPins) -> Prepared | None:
    """``prepared`` (made from ``before``) with the user's pins of ``resolved``, the same
    shape; None where it must be prepared afresh."""
    pins = dict(prepared.pins)
    for name, pin in resolved.pins.items():
        old = before.pins[name]
        if pin is old or pin == old:
            continue
        if name in prepared.value_sensitive or prepared.pins.get(name) != old:
            return None
        pins[name] = pin
    return replace(prepared, pins=pins)


def moved_pin(model: Model, pin: Pin, value: float) -> Pin:
    """``pin`` at another base value (keeping its layer and source), shown as such; a
    range or distribution moved to one value is that value."""
    variable = model.variables[pin.name]
    # read as a value the user typed: the same bounds and finiteness checks
    base, text = read_value(variable, Q_(float(value) / variable.to_base, variable.pint_unit))
    return replace(pin, value=base, text=text, spread=None)  # a ranged pin at one point
