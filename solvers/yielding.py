"""Which pins give way: lower layers to higher ones that determine the same quantity.

A conventions default yields to a chip's or a model's own figures, a preset's value to
the user's; a zero (absence) yields to anything that determines its quantity, and a
published headline ("235B") to the architecture it rounds. :func:`outranked` is the one
rule; :func:`yield_defaults` applies it to a question's pins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from chalk.solvers.execute import compile_plan
from chalk.solvers.pinned import Layer, Pin
from chalk.solvers.placeholders import run
from chalk.solvers.plan import analyse_pins, make_plan
from chalk.solvers.tolerances import PINS
from chalk.symbolic.errors import ChalkError
from chalk.symbolic.model import Model


@dataclass(frozen=True)
class Yielded:
    """Pins after lower layers gave way: the pins in force and a note per pin set aside."""

    pins: dict[str, Pin]
    notes: tuple[str, ...]
    # pins whose values decided whether a default gave way (it yields only to pins
    # that roughly agree with it): another value of one may change the preparation
    sensitive: frozenset[str] = frozenset()


def yield_defaults(model: Model, pins: Mapping[str, Pin], targets: tuple[str, ...]) -> Yielded:
    """Set aside lower-layer pins that higher layers already determine.

    A conventions value (the lecture's 300 FLOP/byte, say) yields to a chip's own FLOP/s
    and bandwidth; a preset value yields to what the user gave. A number yields only to
    pins that roughly agree with it (:data:`~chalk.solvers.tolerances.PINS`), otherwise
    the disagreement stays and is reported as a conflict; a zero stands for absence and
    always yields. Conflicts among equals remain errors.
    """
    pins = dict(pins)
    notes = []
    weighed = False
    over = _over_determined(model, pins, targets)
    for layer in (Layer.CONVENTIONS, Layer.PRESET):
        for name in sorted(n for n, p in pins.items() if p.layer is layer and n in over):
            higher = _determined_from_above(model, pins, targets, name)
            if higher is None:
                continue
            without = {n: p for n, p in pins.items() if n != name}
            default = pins[name].value
            weighed |= bool(default) and not pins[name].headline
            implied = implied_value(model, without, name) if default else None
            if pins[name].headline:
                if implied is None:
                    continue
            elif default and (implied is None
                              or abs(implied - default) > PINS.yield_rtol * abs(default)):
                continue
            notes.append(_yield_note(pins[name], higher))
            pins = without
    return Yielded(pins, tuple(notes), frozenset(over) if weighed else frozenset())


def _yield_note(pin: Pin, higher) -> str:
    kind = (" (a zero: absence)" if pin.value == 0
            else " (a published headline)" if pin.headline else "")
    return (f"{pin.origin} value {pin.text}{kind} of {pin.name} set aside: "
            f"{', '.join(sorted(higher))} determine it")


def number_free(note: str) -> bool:
    """Whether a note says a zero default or a published headline gave way: that happens
    whatever the numbers (both yield to any pins that determine their quantity), so an
    answer with only such notes may be replayed with other numbers. (Ask for the
    quantity itself to see the headline beside what the other pins give.)"""
    return ((" (a zero: absence) of " in note or " (a published headline) of " in note)
            and note.endswith(" determine it"))


def _over_determined(model: Model, pins: Mapping[str, Pin],
                     targets: tuple[str, ...]) -> set[str]:
    """Pins the others could determine: those in a dependent relation's reduced row.
    Only these can give way, and setting pins aside never adds to them, so one analysis
    spares planning once per pin."""
    analysis = make_plan(model, frozenset(pins), targets).analysis
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


def _determined_from_above(model, pins, targets, name) -> tuple[str, ...] | None:
    """The pins behind ``name`` if, without it, pins of higher layers determine it."""
    without = {n: p for n, p in pins.items() if n != name}
    higher = tuple(analyse_pins(model, frozenset(without), (name,)).pins_behind(model, name))
    # ranks are compared first: most candidates are of the layer of what lies behind
    # them, and that spares planning the question once per candidate
    if not outranked(pins[name], [without[h] for h in higher]):
        return None
    if not make_plan(model, frozenset(without), targets).determines(name):
        return None
    return higher


def outranked(pin: Pin, behind: Sequence[Pin]) -> bool:
    """Whether pins of higher layers (``behind``: those a derivation of ``pin``'s quantity
    rests on) take precedence over ``pin``.

    A number gives way only when every pin behind the derivation is of a higher layer.
    A zero stands for absence (no sliding-window KV, attention left out): it gives way as
    soon as a higher layer brings what determines the quantity, even if lower-layer pins
    such as another zero also feed in. A published headline figure ("235B") gives way to
    pins of its own layer or higher that determine it (a model's architecture).
    """
    if not behind:
        return False
    if pin.headline:
        return all(b.layer >= pin.layer for b in behind)
    if pin.value == 0:
        return (any(b.layer > pin.layer for b in behind)
                and all(b.layer >= pin.layer for b in behind))
    return all(b.layer > pin.layer for b in behind)


def implied_value(model: Model, pins: Mapping[str, Pin], name: str) -> float | None:
    """The value (base units) the pins imply for ``name``; None if they do not give one."""
    plan = make_plan(model, frozenset(pins), (name,))
    if not plan.determined:
        return None
    try:
        values, _, _ = run(compile_plan(model, plan), {n: p.value for n, p in pins.items()})
    except ChalkError:
        return None
    return values.get(name)
