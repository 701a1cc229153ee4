"""A restricted parser for values, units and pins typed by users.

Nothing here calls ``eval``, ``exec``, ``sympify`` or ``parse_expr``: text is
split into tokens by regular expressions, numbers are read with ``float`` on a
validated digit string, and unit names are looked up in chalk's registry one by
one. Anything else is rejected with a one-line :class:`ParseError`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from chalk.symbolic.errors import ParseError
from chalk.symbolic.spelling import unknown_unit
from chalk.symbolic.symbols import NAME_PATTERN

if TYPE_CHECKING:  # pragma: no cover
    import pint
    from pint.util import UnitsContainer

MAX_TEXT = 200  # longer values are refused before any work is done

# A number: digits with optional thousands separators, a fraction, an exponent, and
# an optional count multiplier written against it (200k, 1.5M, 100B, 15T).
#
# The rule that keeps B apart from byte: a multiplier is a letter glued to a plain
# number (no exponent) and standing alone, followed by a space or the end of the text.
# Letters glued to the number that run on into a longer word, or into '/', are the unit:
# 100B param = 1e11 param, 100B = 1e11, but 80GB = 80 GB, 2B/param = 2 byte/param,
# 1e9B = 1e9 byte, and 100 B = 100 byte (a unit is written after a space).
_NUMBER = re.compile(
    r"""(?P<sign>[+-]?)
        (?P<mantissa>\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d[\d_]*(?:\.\d*)?|\.\d+)
        (?:[eE](?P<exponent>[+-]?\d+))?
        (?:(?(exponent)(?!)|(?P<multiplier>Ki|Mi|Gi|Ti|k|K|M|G|B|T|P)(?=\s|$)))?
        (?![0-9_.,])""",
    re.VERBOSE,
)
_MULTIPLIERS = {
    "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9, "T": 1e12, "P": 1e15,
    "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40,
}
# Inside a unit, a scale written before a unit name, as a word of its own ('USD/M tokens')
# or after a 1 ('USD/1M tokens'), is rewritten to the SI prefix glued to the name
# (Mtokens); B and K read as G and k there, and a bare B stays byte.
#
# Micro is written with the micro sign µ (U+00B5) or the Greek letter μ (U+03BC), which look
# the same; both are read, as the micro sign.
#
# Prices are pasted as people write them: a currency sign ($ for USD, ¢ for cent), "per"
# for a division, and a scale spelled out ("per million tokens", "per 1 million tokens").
_UNIT_TOKEN = re.compile(r"\s*(?:(?P<scale>1[kKMGBT]|[kKMGT]"
                         r"|(?:1\s+)?(?:thousand|million|billion|trillion))\s+"
                         r"(?P<scaled>[A-Za-zµμ][A-Za-z0-9_µμ]*)"
                         r"|(?P<name>[A-Za-zµμ%][A-Za-z0-9_µμ]*)|(?P<op>\*\*|[*/·^()])"
                         r"|(?P<currency>[$¢])|(?P<int>[+-]?\d+))")
_SCALE_PREFIX = {"k": "k", "K": "k", "M": "M", "G": "G", "B": "G", "T": "T",
                 "thousand": "k", "million": "M", "billion": "G", "trillion": "T"}
_CURRENCY = {"$": "USD", "¢": "cent"}
_LEADING_DOLLAR = re.compile(r"\s*\$\s*")
_MAX_EXPONENT = 300


@dataclass(frozen=True)
class ParsedValue:
    """A magnitude and the unit it was written in (``None`` for a bare number)."""

    magnitude: float
    unit: pint.Unit | None
    text: str


def parse_number(text: str) -> tuple[float, str]:
    """Read a leading number; return it and the rest of the text.

    Raises
    ------
    ParseError
        If the text does not start with a finite number of sane size.
    """
    original = text
    text = text.strip()
    if re.match(r"[+-]?0[xXbBoO][0-9a-fA-F]", text):
        raise ParseError(original, "hexadecimal, binary and octal numbers are not accepted; "
                                   "write the number in decimal")
    match = _NUMBER.match(text)
    if not match:
        raise ParseError(original, "expected a number such as 3.35, 2e12 or 200k")
    mantissa = match.group("mantissa").replace(",", "").replace("_", "")
    exponent = match.group("exponent")
    if exponent is not None and abs(int(exponent)) > _MAX_EXPONENT:
        raise ParseError(original,
                         f"exponent {exponent} is out of range (at most ±{_MAX_EXPONENT})")
    digits = match.group("sign") + mantissa + (f"e{exponent}" if exponent is not None else "")
    value = float(digits)  # a validated digit string, not arbitrary text
    multiplier = match.group("multiplier")
    if multiplier:
        value *= _MULTIPLIERS[multiplier]
    if not math.isfinite(value):
        raise ParseError(original, "the number is too large")
    return value, text[match.end():]


@lru_cache(maxsize=2048)
def parse_unit(text: str) -> pint.Unit:
    """Read a unit expression such as ``TB/s``, ``FLOP/(param·token)``, ``USD / hour``.

    Grammar: products (``*``, ``·`` or a space) and quotients (``/``) of unit
    names with integer powers (``^2``, ``**-1``) and parentheses.
    """
    from chalk.symbolic.units import ureg  # numbers alone need no unit registry

    original = text
    tokens = _tokenize_unit(text)
    parser = _UnitParser(tokens, original)
    container = parser.expression()
    if parser.position != len(tokens):
        raise ParseError(original, f"unexpected {tokens[parser.position][1]!r} in the unit")
    return ureg.Unit(container)


@lru_cache(maxsize=512)
def parse_unit_cached(text: str) -> pint.Unit:
    """:func:`parse_unit` for unit strings chalk itself wrote (declarations), cached."""
    return parse_unit(text)


def _tokenize_unit(text: str) -> list[tuple[str, str]]:
    tokens = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _UNIT_TOKEN.match(text, position)
        if not match or match.end() == position:
            bad = text[position:].strip()[:1]
            raise ParseError(text, f"unexpected character {bad!r} in a unit")
        if match.group("scale"):
            scale = match.group("scale").split()[-1]
            prefix = _SCALE_PREFIX.get(scale) or _SCALE_PREFIX[scale[-1]]
            tokens.append(("name", _micro(prefix + match.group("scaled"))))
        elif match.group("name") and match.group("name").lower() == "per":
            tokens.append(("op", "/"))  # "USD per hour"
        elif match.group("name"):
            tokens.append(("name", _micro(match.group("name"))))
        elif match.group("currency"):
            tokens.append(("name", _CURRENCY[match.group("currency")]))
        elif match.group("op"):
            tokens.append(("op", match.group("op")))
        else:
            tokens.append(("int", match.group("int")))
        position = match.end()
    if not tokens:
        raise ParseError(text, "expected a unit")
    return tokens


def _micro(name: str) -> str:
    """``name`` with the Greek letter mu written as the micro sign."""
    return name.replace("\u03bc", "\u00b5")


class _UnitParser:
    def __init__(self, tokens, text):
        self.tokens = tokens
        self.text = text
        self.position = 0

    def peek(self):
        return self.tokens[self.position] if self.position < len(self.tokens) else (None, None)

    def take(self):
        token = self.peek()
        self.position += 1
        return token

    def expression(self) -> UnitsContainer:
        result = self.power()
        while True:
            kind, value = self.peek()
            if kind == "op" and value in ("*", "·"):
                self.take()
                result = result * self.power()
            elif kind == "op" and value == "/":
                self.take()
                result = result / self.power()
            elif kind == "name" or (kind == "op" and value == "("):
                result = result * self.power()  # juxtaposition multiplies
            else:
                return result

    def power(self) -> UnitsContainer:
        base = self.atom()
        kind, value = self.peek()
        if kind == "op" and value in ("^", "**"):
            self.take()
            kind, value = self.take()
            if kind != "int":
                raise ParseError(self.text, "a unit power must be a whole number")
            exponent = int(value)
            if abs(exponent) > 4:
                raise ParseError(self.text, f"unit power {exponent} is out of range")
            return base**exponent
        return base

    def atom(self) -> UnitsContainer:
        from pint.util import UnitsContainer

        kind, value = self.take()
        if kind == "name":
            return UnitsContainer({_unit_name(value, self.text): 1})
        if kind == "int" and value == "1":
            return UnitsContainer()
        if kind == "op" and value == "(":
            inner = self.expression()
            closing = self.take()
            if closing != ("op", ")"):
                raise ParseError(self.text, "unbalanced parentheses in the unit")
            return inner
        shown = value if value is not None else "end of text"
        raise ParseError(self.text, f"expected a unit name, found {shown!r}")


def _unit_name(name: str, text: str) -> str:
    if len(name) > 40:
        raise ParseError(text, "unit name too long")
    from chalk.symbolic.units import ureg

    candidates = ureg.parse_unit_name(name)
    if not candidates:
        raise unknown_unit(name)
    prefix, unit, _suffix = candidates[0]
    return prefix + unit


def parse_value(text: str) -> ParsedValue:
    """Read ``NUMBER [UNIT]``: ``3.35 TB/s``, ``200k token``, ``2``, ``50%``."""
    if not isinstance(text, str):
        raise ParseError(str(text), "expected text")
    if len(text) > MAX_TEXT:
        raise ParseError(text, f"longer than {MAX_TEXT} characters")
    dollar = _LEADING_DOLLAR.match(text)  # "$3 / 1M tokens": the sign is the unit
    try:
        magnitude, rest = parse_number(text[dollar.end():] if dollar else text)
    except ParseError as exc:
        raise ParseError(text, exc.reason, exc.hint) from None
    rest = ("$ " + rest if dollar else rest).strip()
    if not rest:
        return ParsedValue(magnitude, None, text.strip())
    try:
        unit = parse_unit(rest)
    except ParseError as exc:
        raise ParseError(text, exc.reason, "write a number then a unit, e.g. '3.35 TB/s'") from None
    return ParsedValue(magnitude, unit, text.strip())


def split_pin(text: str) -> tuple[str, str]:
    """Split ``NAME=VALUE`` into a validated name and the value text."""
    if not isinstance(text, str):
        raise ParseError(str(text), "expected NAME=VALUE")
    if len(text) > MAX_TEXT + 70:
        raise ParseError(text, "too long for a pin")
    if "=" not in text:
        raise ParseError(text, "expected NAME=VALUE, e.g. 'hbm_bandwidth=3.35 TB/s'")
    name, value = text.split("=", 1)
    name = name.strip()
    if not NAME_PATTERN.match(name) or "__" in name:
        raise ParseError(text, f"{name[:40]!r} is not a quantity name",
                         "names are lower-case words joined by '_'")
    return name, value.strip()


@dataclass(frozen=True)
class ParsedSpread:
    """A distribution written as text: kind, two magnitudes and their unit."""

    kind: str  # "range", "relative", "uniform", "loguniform", "normal", "lognormal"
    a: float
    b: float
    unit: pint.Unit | None
    text: str


_NAMED = re.compile(r"^\s*(uniform|loguniform|normal|lognormal)\s*\((.*)\)\s*$")
_RELATIVE = re.compile(r"^(?P<value>.*?)\s*(?:±|\+-|\+/-)\s*(?P<pct>[0-9.]+)\s*%\s*$")


def looks_uncertain(text: str) -> bool:
    """Whether value text is a range or distribution rather than one number."""
    return isinstance(text, str) and (".." in text or "±" in text or "+-" in text
                                      or bool(_NAMED.match(text)))


def parse_spread(text: str) -> ParsedSpread:
    """Read a range or distribution (see :mod:`symbolic.uncertain` for the forms)."""
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise ParseError(str(text)[:60], f"longer than {MAX_TEXT} characters")
    named = _NAMED.match(text)
    if named:
        kind, inner = named.group(1), named.group(2)
        parts = inner.split(",")
        if len(parts) != 2:
            raise ParseError(text, f"{kind}(...) takes two values")
        first, second = parse_value(parts[0]), parse_value(parts[1])
        if kind == "lognormal":
            if second.unit is not None:
                raise ParseError(text, "lognormal(median, sigma): sigma is a plain number")
            unit = first.unit
            b = second.magnitude
        else:
            unit, b = _common_unit(first, second, text)
        return ParsedSpread(kind, first.magnitude, b, unit, text.strip())
    relative = _RELATIVE.match(text)
    if relative:
        centre = parse_value(relative.group("value"))
        fraction = float(parse_number(relative.group("pct"))[0]) / 100
        return ParsedSpread("relative", centre.magnitude, fraction, centre.unit, text.strip())
    if ".." in text:
        low_text, high_text = text.split("..", 1)
        high = parse_value(high_text)
        low = parse_value(low_text)
        if low.unit is None:
            low = ParsedValue(low.magnitude, high.unit, low.text)
        unit, b = _common_unit(low, high, text)
        return ParsedSpread("range", low.magnitude, b, unit, text.strip())
    raise ParseError(text, "expected a range 'LOW..HIGH UNIT', 'VALUE UNIT ±P%' or a "
                           "distribution such as 'lognormal(100e9 param, 0.5)'")


def _common_unit(first: ParsedValue, second: ParsedValue, text: str):
    """Both magnitudes in the first one's unit (the second is converted)."""
    if first.unit is None and second.unit is None:
        return None, second.magnitude
    if first.unit is None or second.unit is None:
        raise ParseError(text, "give both values a unit, or neither")
    if first.unit.dimensionality != second.unit.dimensionality:
        raise ParseError(text, "the two values have different dimensions")
    factor = (1.0 * second.unit).to(first.unit).magnitude
    return first.unit, second.magnitude * factor
