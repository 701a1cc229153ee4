"""Numbers, units and dimensions for people: ``14.4 ms``, ``5,354 sequence``, ``bytes/time``.

Plain Python over pint units; nothing here imports sympy, so a cached command-line
answer can be printed without it.
"""

from __future__ import annotations

import math
from functools import lru_cache

import pint
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


# Ladders used to show a time or a size with a readable prefix.
_TIME_LADDER = [("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0), ("min", 60.0),
                ("h", 3600.0), ("day", 86400.0)]
_BYTE_LADDER = [("byte", 1.0), ("kB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12),
                ("PB", 1e15)]


def _ladder(value: float, ladder) -> tuple[float, str]:
    a = abs(value)
    chosen = ladder[0]
    for name, size in ladder:
        if a >= size * 0.9999:
            chosen = (name, size)
    return value / chosen[1], chosen[0]


def format_quantity(value: float, unit: pint.Unit, digits: int = 4) -> str:
    """Format a magnitude given in ``unit`` for people (``14.4 ms``, ``5,354 sequence``).

    Pure times and pure byte counts get a readable prefix; everything else is shown in
    ``unit`` itself, which is the quantity's declared unit.
    """
    dim = dimensionality(unit)
    if dim == _TIME_DIM and value != 0:
        shown, name = _ladder(value * base_factor(unit), _TIME_LADDER)
        if name == "day" and abs(shown) >= 1e4:
            return f"{format_number(shown, digits)} day"
        return f"{format_number(shown, digits)} {name}"
    if dim == _BYTE_DIM and value != 0 and abs(value * base_factor(unit)) >= 1e4:
        shown, name = _ladder(value * base_factor(unit), _BYTE_LADDER)
        return f"{format_number(shown, digits)} {name}"
    if dim in _RATE_LADDERS and value != 0 and abs(value * base_factor(unit)) >= 1e4:
        shown, name = _ladder(value * base_factor(unit), _RATE_LADDERS[dim])
        return f"{format_number(shown, digits)} {name}"
    text = format_unit(unit)
    return f"{format_number(value, digits)} {text}".rstrip()


def format_seconds(seconds: float, digits: int = 4) -> str:
    """A duration in seconds with a readable unit (``14.4 ms``, ``5 minute``)."""
    return format_quantity(seconds, ureg.second, digits)


_TIME_DIM = ureg.get_dimensionality("second")
_BYTE_DIM = ureg.get_dimensionality("byte")
_RATE_LADDERS = {
    ureg.get_dimensionality("byte/second"):
        [(f"{p}B/s", f) for p, f in (("", 1.0), ("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12),
                                     ("P", 1e15))],
    ureg.get_dimensionality("FLOP/second"):
        [(f"{p}FLOP/s", f) for p, f in (("", 1.0), ("k", 1e3), ("M", 1e6), ("G", 1e9),
                                        ("T", 1e12), ("P", 1e15), ("E", 1e18))],
}
