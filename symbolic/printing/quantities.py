"""Units and dimensions for people: ``FLOP/(param·token)``, ``bytes/time``, ``14.4 ms``.

The pint side of printing: how a pint unit reads, and the :class:`UnitDisplay` a value
in it is shown through (numbers themselves are formatted in
:mod:`chalk.symbolic.printing.numbers`).
"""

from __future__ import annotations

from functools import lru_cache

import pint
from chalk.symbolic.printing.numbers import (
    UnitDisplay,
    format_display,
)
from chalk.symbolic.units import Unit, base_factor, dimensionality, unit_items, ureg

# How base dimensions read in messages.
_DIMENSION_WORDS = {
    "[time]": "time",
    "[information]": "bytes",
    "[compute]": "FLOPs",
    "[token]": "tokens",
    "[sequence]": "sequences",
    "[parameter]": "params",
    "[chip]": "chips",
    "[currency]": "money",
}


def describe_dimension(dim: pint.util.UnitsContainer) -> str:
    """Read a dimensionality like ``[information]/[time]`` as 'bytes/time'."""
    if not dim:
        return "dimensionless"
    num = [(k, v) for k, v in sorted(dim.items()) if v > 0]
    den = [(k, -v) for k, v in sorted(dim.items()) if v < 0]

    def part(items):
        words = []
        for k, e in items:
            w = _DIMENSION_WORDS.get(k, k.strip("[]"))
            words.append(w if e == 1 else f"{w}^{_fmt_exp(e)}")
        return "·".join(words)

    top = part(num) if num else "1"
    if not den:
        return top
    bottom = part(den)
    return f"{top}/({bottom})" if len(den) > 1 else f"{top}/{bottom}"


def _fmt_exp(e) -> str:
    return str(int(e)) if float(e).is_integer() else f"{float(e):g}"


# Short forms for unprefixed units in human-readable output.
_SHORT = {"second": "s", "minute": "min", "hour": "h", "percent": "%"}


def _unit_word(name: str) -> str:
    if name in _SHORT:
        return _SHORT[name]
    if any(prefix == "" and unit == name for prefix, unit, _ in ureg.parse_unit_name(name)):
        # an unprefixed unit: keep its readable name
        return name
    # A prefixed unit: pint's symbol form reads best (TB, ms, GiB).
    return f"{Unit(name):~}"


@lru_cache(maxsize=1024)
def format_unit(unit: pint.Unit) -> str:
    """Human form of a unit, e.g. ``FLOP/(param·token)``, ``byte/s``, ``TB``."""
    items = list(unit_items(unit))
    if not items:
        return ""
    num = [(n, e) for n, e in items if e > 0]
    den = [(n, -e) for n, e in items if e < 0]

    def part(group):
        return "·".join(
            _unit_word(n) if e == 1 else f"{_unit_word(n)}^{_fmt_exp(e)}" for n, e in group
        )

    top = part(num) if num else "1"
    if not den:
        return top
    bottom = part(den)
    return f"{top}/({bottom})" if len(den) > 1 else f"{top}/{bottom}"


@lru_cache(maxsize=1024)
def unit_display(unit: pint.Unit) -> UnitDisplay:
    """How values in ``unit`` are shown (see :func:`format_display`)."""
    dim = dimensionality(unit)
    ladder = _LADDER_OF.get(dim, "")
    return UnitDisplay(format_unit(unit), base_factor(unit), ladder)


def format_quantity(value: float, unit: pint.Unit, digits: int = 4) -> str:
    """Format a magnitude given in ``unit`` for people (``14.4 ms``, ``5,354 sequence``).

    Times, byte counts, byte and FLOP rates get a readable prefix and prices the unit
    price lists use (see :func:`format_display`); everything else is shown in ``unit``
    itself, which is the quantity's declared unit.
    """
    return format_display(value, unit_display(unit), digits)


def format_seconds(seconds: float, digits: int = 4) -> str:
    """A duration in seconds with a readable unit (``14.4 ms``, ``5 minute``)."""
    return format_display(seconds, _seconds_display(), digits)


@lru_cache(maxsize=1)
def _seconds_display() -> UnitDisplay:
    # a derivation shows every max()'s arguments in seconds: pint is asked for the unit
    # once, not per step
    return unit_display(ureg.second)


_LADDER_OF = {ureg.get_dimensionality(unit): ladder for unit, ladder in (
    ("second", "time"), ("byte", "bytes"), ("byte/second", "byte rate"),
    ("FLOP/second", "FLOP rate"), ("USD/token", "token price"),
    ("USD/token/second", "token-hour price"), ("USD/byte", "byte price"),
    ("USD/byte/second", "byte-hour price"))}
