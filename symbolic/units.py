"""The unit registry and the pint <-> float bridge.

Numerics run on plain floats in one coherent base (second, byte, FLOP, token,
sequence, param, chip, USD); pint is used to check dimensions and to convert at
the edges. Conversion factors are cached per unit so the warm path stays cheap.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pint

ureg = pint.UnitRegistry(str(Path(__file__).with_name("units.txt")), cache_folder=None)
Q_ = ureg.Quantity
Unit = ureg.Unit

@lru_cache(maxsize=1024)
def base_factor(unit: pint.Unit) -> float:
    """Factor that converts a magnitude in ``unit`` to chalk's coherent base units."""
    return float(Q_(1.0, unit).to_base_units().magnitude)


@lru_cache(maxsize=1024)
def conversion_factor(unit: pint.Unit, to: str) -> float:
    """Factor that converts a magnitude in ``unit`` to the unit named ``to`` (chalk's
    registry has no offset units, so every conversion is a factor); pint's own error
    where the dimensions differ."""
    return float(Q_(1.0, unit).to(to).magnitude)


@lru_cache(maxsize=1024)
def dimensionality(unit: pint.Unit) -> pint.util.UnitsContainer:
    """The dimensionality of ``unit`` as a pint container."""
    return ureg.get_dimensionality(unit)


@lru_cache(maxsize=1024)
def base_unit(unit: pint.Unit) -> pint.Unit:
    """The coherent base unit with the dimension of ``unit``."""
    return Q_(1.0, unit).to_base_units().units


@lru_cache(maxsize=1024)
def unit_items(unit: pint.Unit) -> tuple[tuple[str, float], ...]:
    """The unit's names and exponents, e.g. ``(("terabyte", 1), ("second", -1))``."""
    return tuple(Q_(1.0, unit).unit_items())
