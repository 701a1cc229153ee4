"""Turning what the user gave (text, quantities, presets) into checked pins.

Layers, later overriding earlier (:class:`Layer`): a conventions preset (the one
named, else the caller's default), then each named preset in order, then the
user's own pins. A preset value for a quantity the user asked for is kept apart
as what the preset states about it. Every value is parsed by the restricted parser,
dimension-checked against its quantity and range-checked.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache

import numpy as np
import pint
from chalk.solvers.pinning.pinned import Layer, Pin
from chalk.symbolic.errors import (
    BoundsError,
    DimensionMismatch,
    MissingUnit,
    ParseError,
    UsageError,
)
from chalk.symbolic.model import Model
from chalk.symbolic.parsing import looks_uncertain, parse_spread, parse_value, split_pin
from chalk.symbolic.presets import Preset, PresetValue
from chalk.symbolic.printing.quantities import describe_dimension, format_unit
from chalk.symbolic.spelling import dimension_hint
from chalk.symbolic.uncertain import Spread
from chalk.symbolic.units import base_factor, base_unit, dimensionality, ureg
from chalk.symbolic.variables import Variable


@dataclass(frozen=True)
class ResolvedPins:
    """Every pin in force for a question, with what was set aside.

    Attributes
    ----------
    pins : dict of name to Pin
    conventions : str
        Name of the conventions preset in force ("" if none).
    stated : dict of name to Pin
        For each target a preset or the conventions give a value for: that value
        (what the preset states about a quantity that is asked for).
    """

    pins: dict[str, Pin]
    conventions: str = ""
    stated: dict[str, Pin] = field(default_factory=dict)


@lru_cache(maxsize=4096)
def _read_text(variable: Variable, text: str) -> tuple[float, str]:
    return _read_value(variable, text)


def read_value(variable: Variable, value) -> tuple[float, str]:
    """Check ``value`` against ``variable``; return its base-unit magnitude and text.

    ``value`` may be text (``"3.35 TB/s"``), a pint Quantity from chalk's
    registry, or a plain number for a dimensionless quantity.
    """
    if isinstance(value, str):
        return _read_text(variable, value)  # presets repeat the same texts
    return _read_value(variable, value)


def _read_value(variable: Variable, value) -> tuple[float, str]:
    """:func:`read_value` without the cache for text."""
    name = variable.name
    if isinstance(value, bool):
        raise ParseError(str(value), f"{name} needs a number")
    if isinstance(value, str):
        parsed = parse_value(value)
        magnitude, unit, text = parsed.magnitude, parsed.unit, parsed.text
        if unit is None and not variable.dimensionality:
            unit_factor = 1.0
        elif unit is None:
            raise MissingUnit(name, text, format_unit(variable.pint_unit))
        else:
            _check_dimension(variable, unit, text)
            unit_factor = base_factor(unit)
    elif isinstance(value, pint.Quantity):
        if value._REGISTRY is not ureg:
            raise ParseError(str(value), "quantities must be made with chalk's registry "
                             "(chalk.Q_ or chalk.ureg)")
        unit = value.units
        text = f"{_number_text(value.magnitude)} {format_unit(unit)}".strip()
        magnitude = _finite(value.magnitude, text, name)
        _check_dimension(variable, unit, text)
        unit_factor = base_factor(unit)
    elif isinstance(value, (numbers.Real, Decimal)):  # numpy's, Fraction, Decimal: real too
        text = _number_text(value)
        magnitude = _finite(value, text, name)
        if variable.dimensionality:
            raise MissingUnit(name, text, format_unit(variable.pint_unit))
        unit_factor = 1.0
    else:
        raise ParseError(str(value)[:60], f"{name} needs a number with a unit")
    base = magnitude * unit_factor
    if not math.isfinite(base):
        raise ParseError(text, "the value overflows once converted to base units "
                               f"({format_unit(base_unit(variable.pint_unit))}); use a "
                               "smaller number")
    if not variable.admits(base):
        raise BoundsError(name, text, variable.requirement())
    return base, text


def read_values(variable: Variable, value):
    """Like :func:`read_value` for numbers in bulk: the base-unit magnitudes of ``value``.

    ``value`` may be anything :func:`read_value` takes, a pint Quantity holding an array,
    or a plain array (or list) in the variable's declared unit. Arrays are checked for
    their unit and for finiteness, not against the variable's bounds: a point out of
    bounds is refused where it is answered, point by point.
    """
    if isinstance(value, pint.Quantity) and not np.isscalar(value.magnitude):
        if value._REGISTRY is not ureg:
            raise ParseError(str(value)[:60], "quantities must be made with chalk's "
                             "registry (chalk.Q_ or chalk.ureg)")
        _check_dimension(variable, value.units, f"an array in {format_unit(value.units)}")
        return _finite_array(value.magnitude, variable.name) * base_factor(value.units)
    if isinstance(value, (str, pint.Quantity, bool)):
        return read_value(variable, value)[0]
    if isinstance(value, (numbers.Real, Decimal)):
        return _finite(value, _number_text(value), variable.name) * variable.to_base
    return _finite_array(value, variable.name) * variable.to_base


def _finite_array(value, name: str):
    """``value`` as a float array; non-numbers, NaN and infinities are refused."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ParseError(str(value)[:60], f"{name} needs numbers") from None
    if not np.all(np.isfinite(array)):
        raise ParseError(str(value)[:60], f"{name} needs finite numbers (no NaN or "
                                          "infinity)")
    return array


def _number_text(value) -> str:
    """A number given from Python as ``str`` writes it (``8`` for ``np.int64(8)``)."""
    try:
        return str(value)
    except ValueError:  # an int past Python's limit on digits
        return "an integer of more than 4300 digits"


def _finite(value, text: str, name: str) -> float:
    """``value`` as a float; NaN, infinity or a number past a float's range are refused."""
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    except (TypeError, ValueError):
        if isinstance(value, Decimal) and value.is_nan():  # a signalling NaN
            number = math.nan
        else:
            raise ParseError(text, f"{name} needs a single number") from None
    if math.isnan(number):
        raise ParseError(text, "not a number (NaN); give a finite value")
    if math.isinf(number):
        try:  # a Decimal past a float's range converts to inf without being infinite
            infinite = value.is_infinite() if isinstance(value, Decimal) else math.isinf(value)
        except (OverflowError, TypeError, ValueError):
            infinite = False
        raise ParseError(text, "infinite; give a finite value" if infinite else
                         "too large for a floating-point number (at most about 1.8e308)")
    return number


def read_spread(variable: Variable, text: str) -> Spread:
    """Check a range or distribution against ``variable``; return it in base units."""
    name = variable.name
    parsed = parse_spread(text)
    if parsed.unit is None and variable.dimensionality:
        raise MissingUnit(name, text, format_unit(variable.pint_unit))
    factor = 1.0
    if parsed.unit is not None:
        _check_dimension(variable, parsed.unit, text)
        factor = base_factor(parsed.unit)
    a, b = parsed.a * factor, parsed.b
    if parsed.kind == "relative":
        if not 0 < b < 1:
            raise ParseError(text, "a ± spread must be between 0% and 100%")
        kind, a, b = "uniform", a * (1 - b), a * (1 + b)
    elif parsed.kind == "range":
        b *= factor
        kind = "loguniform" if variable.scale_like else "uniform"
    elif parsed.kind == "lognormal":
        kind = "lognormal"
        if not 0 < b < 5:
            raise ParseError(text, "lognormal sigma must be between 0 and 5")
    else:
        kind, b = parsed.kind, b * factor
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ParseError(text, "the values are not finite numbers")
    if kind in ("uniform", "loguniform") and a > b:
        raise ParseError(text, "empty range: the low end is above the high end")
    if kind == "normal" and b <= 0:
        raise ParseError(text, "normal(mean, sd) needs a positive sd")
    spread = Spread(kind, a, b, text.strip())
    low, high = spread.bounds()
    for edge in (low, high):
        if not variable.admits(edge):
            raise BoundsError(name, text, variable.requirement() + " across the whole "
                              "range (a normal spread is checked to 4 sd; lognormal keeps "
                              "values positive)")
    return spread


_BYTES = ureg.get_dimensionality("byte")


def _check_dimension(variable: Variable, unit, text: str) -> None:
    got = dimensionality(unit)
    if got != variable.dimensionality:
        expected = format_unit(variable.pint_unit)
        extra_bytes = got == variable.dimensionality * _BYTES
        raise DimensionMismatch(
            variable.name, text, expected,
            describe_dimension(got), describe_dimension(variable.dimensionality),
            dimension_hint(text, extra_bytes, expected),
        )


def parse_given(items: Iterable[str] | Mapping[str, object]) -> list[tuple[str, object]]:
    """``["a=1 s", ...]`` or ``{"a": "1 s"}`` as (name, value) pairs, in order."""
    if isinstance(items, Mapping):
        return list(items.items())
    return [item if isinstance(item, tuple) and len(item) == 2 else split_pin(item)
            for item in items]


def _given_pin(variable: Variable, raw_value, replaces: str) -> Pin:
    """The user's pin of ``variable`` from ``raw_value`` (text, a Spread, a Quantity, a
    number or a PresetValue with its source), standing over a lower layer's pin from
    ``replaces`` ("" if none)."""
    provenance = {}
    if isinstance(raw_value, PresetValue):  # a user's value with its source note
        provenance = {"source": raw_value.source, "date": raw_value.date,
                      "note": raw_value.note, "estimate": raw_value.estimate}
        raw_value = raw_value.text
    spread = None
    if isinstance(raw_value, Spread):
        spread, text = raw_value, raw_value.text
    elif isinstance(raw_value, str) and looks_uncertain(raw_value):
        spread, text = read_spread(variable, raw_value), raw_value.strip()
    if spread is not None:
        value = spread.nominal
    else:
        value, text = read_value(variable, raw_value)
    return Pin(variable.name, value, text, Layer.GIVEN, replaces=replaces, spread=spread,
               **provenance)


@lru_cache(maxsize=4096)
def _text_pin(variable: Variable, text: str, replaces: str) -> Pin:
    """:func:`_given_pin` for value text, read once per quantity and exact text (the same
    pins are asked again with one value changed, and reading one costs more than the
    solve's arithmetic). Pins and their spreads are frozen, so a pin handed out twice
    cannot be changed through either; a text that is refused is read again each time."""
    return _given_pin(variable, text, replaces)


# The conventions and presets of recent questions, layered (see :func:`_layered`): a
# question asked again with new values of the user's pins layers the same presets.
_LAYERED: dict[tuple, tuple] = {}
_LAYERED_KEPT = 64


def _layered(model: Model, presets: tuple[Preset, ...], targets: tuple[str, ...],
             default_conventions: Preset | None) -> tuple:
    """The conventions in force (a Preset or None) and the pins and statements of the
    conventions and presets, layered in order (each read and checked once per
    combination: presets are data, so their layering depends on nothing else)."""
    key = (id(model), tuple(map(id, presets)), targets, id(default_conventions))
    kept = _LAYERED.get(key)
    # the objects themselves are kept with their result, so an id is never reused
    if kept is not None and kept[0] is model and kept[2] is default_conventions \
            and all(a is b for a, b in zip(kept[1], presets, strict=True)):
        return kept[3]
    named_conventions = [p for p in presets if p.kind == "conventions"]
    if len({p.name for p in named_conventions}) > 1:
        names = " and ".join(sorted({p.name for p in named_conventions}))
        raise UsageError(f"presets {names} are both counting conventions; pick one")
    conventions = named_conventions[0] if named_conventions else default_conventions
    layers = [(conventions, Layer.CONVENTIONS)] if conventions is not None else []
    layers += [(p, Layer.PRESET) for p in presets if p.kind != "conventions"]

    pins: dict[str, Pin] = {}
    stated: dict[str, Pin] = {}
    for preset, layer in layers:
        for raw_name, item in preset.values.items():
            if preset.kind == "conventions" and raw_name not in model.variables:
                continue  # a default for a quantity this model does not have
            variable = model.variable(raw_name)
            value, text = read_value(variable, item.text)
            previous = pins.get(variable.name)
            pin = Pin(variable.name, value, text, layer, preset.name, item.source, item.date,
                      item.note, item.estimate, previous.origin if previous else "",
                      headline=item.headline, gives_way_to=item.gives_way_to)
            (stated if variable.name in targets else pins)[variable.name] = pin
    result = (conventions, pins, stated)
    if len(_LAYERED) >= _LAYERED_KEPT:
        _LAYERED.clear()  # start again (one call, safe beside other threads)
    _LAYERED[key] = (model, presets, default_conventions, result)
    return result


def resolve_pins(
    model: Model,
    given: Iterable[str] | Mapping[str, object] = (),
    presets: Iterable[Preset] = (),
    targets: Iterable[str] = (),
    default_conventions: Preset | None = None,
) -> ResolvedPins:
    """Layer conventions, presets and user pins into one checked set.

    Parameters
    ----------
    model : Model
    given : mapping or iterable of "NAME=VALUE UNIT"
        The user's pins.
    presets : iterable of Preset
        In order; at most one may be a conventions preset.
    targets : iterable of str
        Quantities asked for: a preset value for one of them is kept apart as
        stated (see :class:`ResolvedPins`), and a user pin for one is an error.
    default_conventions : Preset, optional
        The conventions in force when no conventions preset is named.

    Returns
    -------
    ResolvedPins
    """
    targets = tuple(model.variable(t).name for t in targets)
    presets = tuple(presets)
    conventions, pins, stated = _layered(model, presets, targets, default_conventions)
    pins, stated = dict(pins), dict(stated)
    for raw_name, raw_value in parse_given(given):
        variable = model.variable(raw_name)
        if variable.name in targets:
            raise UsageError(f"{variable.name} is both pinned and asked for; drop the pin or "
                             "the target")
        previous = pins.get(variable.name)
        replaces = previous.origin if previous else ""
        pin = (_text_pin(variable, raw_value, replaces) if isinstance(raw_value, str)
               else _given_pin(variable, raw_value, replaces))
        if previous is not None and previous.layer is Layer.GIVEN:
            raise UsageError(f"{variable.name} is pinned twice; give it once")
        pins[variable.name] = pin
    return ResolvedPins(pins, conventions.name if conventions is not None else "", stated)
