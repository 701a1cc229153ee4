"""Numbers for people, in plain Python: ``5,354``, ``671e9``, ``28% apart``, ``14.4 ms``.

Nothing here imports pint, sympy or numpy: a value is shown through a
:class:`UnitDisplay`, the few facts about its unit that printing needs, which
:mod:`chalk.symbolic.printing.quantities` derives from a pint unit (and a cached
command-line answer stores).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def format_gap(difference: float) -> str:
    """How far apart two sides are, from ``|a - b| / max(|a|, |b|)``.

    Small gaps read as a percentage (``28% apart``); once one side is more than twice
    the other, as a factor (``a factor 128,000 apart``), which a percentage near 100%
    would hide; a difference above 1 means the sides have opposite signs.
    """
    if difference > 1:
        return "of opposite sign"
    if difference <= 0.5:
        return f"{100 * difference:.3g}% apart"
    if difference >= 1:
        return "one side zero"
    return f"a factor {format_number(1 / (1 - difference), 3)} apart"


def format_side(value: float, reference: float) -> str:
    """How ``value`` stands to a positive ``reference``: ``4.01x below``, ``28% above``.

    As :func:`format_gap`, a factor once one is more than twice the other, a percentage
    (of the reference) below that.
    """
    ratio = value / reference
    word = "below" if ratio < 1 else "above"
    factor = 1 / ratio if ratio < 1 else ratio
    if factor >= 2:
        return f"{format_number(factor, 3)}x {word}"
    return f"{100 * abs(ratio - 1):.3g}% {word}"


def format_number(x: float, digits: int = 4) -> str:
    """A float with ``digits`` significant digits, thousands separators in the
    everyday range and plain scientific notation (``6.71e11``) outside it."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    a = abs(x)
    if 1e-3 <= a < 1e7:
        decimals = max(0, digits - 1 - math.floor(math.log10(a)))
        text = f"{x:,.{decimals}f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return text
    # Engineering notation (exponent a multiple of 3) reads like 671e9, 4.44e-8.
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    exponent = int(exponent)
    shift = exponent % 3
    value = float(mantissa) * 10**shift
    text = f"{value:.{max(0, digits - 1 - shift)}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text}e{exponent - shift}"


# Ladders used to show a time, a size or a rate with a readable prefix.
LADDERS = {
    "time": (("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0), ("min", 60.0),
             ("h", 3600.0), ("day", 86400.0)),
    "bytes": (("byte", 1.0), ("kB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12),
              ("PB", 1e15)),
    "byte rate": tuple((f"{p}B/s", f) for p, f in (("", 1.0), ("k", 1e3), ("M", 1e6),
                                                   ("G", 1e9), ("T", 1e12), ("P", 1e15))),
    "FLOP rate": tuple((f"{p}FLOP/s", f) for p, f in (("", 1.0), ("k", 1e3), ("M", 1e6),
                                                      ("G", 1e9), ("T", 1e12), ("P", 1e15),
                                                      ("E", 1e18))),
    # Prices have one rung each, the unit price lists use, so that two prices always
    # read side by side: per million tokens, per GB, per hour of holding.
    "token price": (("USD/Mtoken", 1e-6),),
    "token-hour price": (("USD/Mtoken/hour", 1e-6 / 3600),),
    "byte price": (("USD/GB", 1e-9),),
    "byte-hour price": (("USD/GB/hour", 1e-9 / 3600),),
}
# Ladders applied at every size; the others only from 1e4 base units up.
_ALWAYS = ("time", "token price", "token-hour price", "byte price", "byte-hour price")


@dataclass(frozen=True)
class UnitDisplay:
    """What showing a value in a unit needs: the unit as text, its factor to base units,
    and which ladder of :data:`LADDERS` applies ("" for none)."""

    text: str
    to_base: float
    ladder: str = ""


def _ladder(value: float, ladder) -> tuple[float, str]:
    a = abs(value)
    chosen = ladder[0]
    for name, size in ladder:
        if a >= size * 0.9999:
            chosen = (name, size)
    return value / chosen[1], chosen[0]


def column_scale(values, display: UnitDisplay) -> tuple[str, float]:
    """One unit for a column of values given in ``display``'s unit: the rung of its ladder
    that :func:`format_display` would give the largest finite value, as ``(unit text,
    factor)``; multiply each value by the factor to show it in that unit."""
    finite = [abs(v) for v in values if v == v and not math.isinf(v) and v != 0]
    if not display.ladder or not finite:
        return display.text, 1.0
    base = max(finite) * display.to_base
    if display.ladder not in _ALWAYS and base < 1e4:
        return display.text, 1.0
    _, name = _ladder(base, LADDERS[display.ladder])
    size = dict(LADDERS[display.ladder])[name]
    return name, display.to_base / size


def format_display(value: float, display: UnitDisplay, digits: int = 4) -> str:
    """Format a magnitude given in a unit for people (``14.4 ms``, ``0.132 USD/Mtoken``).

    Pure times get a readable prefix; prices per token, per byte and per hour of holding
    are shown as price lists write them (``USD/Mtoken``, ``USD/Mtoken/hour``,
    ``USD/GB``, ``USD/GB/hour``); byte counts and byte or FLOP rates get a prefix from
    1e4 up; everything else is shown in the unit itself.
    """
    if display.ladder and value != 0:
        base = value * display.to_base
        if display.ladder in _ALWAYS:
            shown, name = _ladder(base, LADDERS[display.ladder])
            return f"{format_number(shown, digits)} {name}"
        if abs(base) >= 1e4:
            shown, name = _ladder(base, LADDERS[display.ladder])
            return f"{format_number(shown, digits)} {name}"
    return f"{format_number(value, digits)} {display.text}".rstrip()
