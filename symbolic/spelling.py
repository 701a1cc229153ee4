"""Accepted spellings of units, and what to say when a unit is written another way.

The parser (:mod:`chalk.symbolic.parsing`) asks here for the error to raise on an
unknown unit name, and the pin checks ask for a hint on a wrong dimension. Nothing
here reads numbers or evaluates text: names are compared as strings.
"""

from __future__ import annotations

import difflib
import re

from chalk.symbolic.errors import UnitError

# Scale letters a person writes against a count (200k, 1.5M, 100B). Inside a unit name
# only the SI prefixes are accepted (kilo is k, giga is G): B there would read as byte.
COUNT_MULTIPLIERS = ("k", "K", "M", "G", "B", "T", "P")
_AS_PREFIX = {"k": "k", "K": "k", "M": "M", "G": "G", "B": "G", "T": "T", "P": "P"}

# Prefix symbols tried when a near miss carries one (Mtokn -> Mtoken).
_PREFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "k", "M", "G", "T", "P", "E", "m", "µ", "u", "n",
             "p")

_GENERIC = ("not a unit chalk knows (e.g. s, ms, h, day, byte, GB, TB/s, FLOP, token, "
            "sequence, param, chip, USD)")


def _spellings() -> list[str]:
    from chalk.symbolic.units import ureg

    return sorted(ureg)  # every unit name, symbol and alias the registry defines


def _known(name: str) -> bool:
    from chalk.symbolic.units import ureg

    return bool(ureg.parse_unit_name(name))


def unknown_unit(name: str) -> UnitError:
    """The error for a unit name the registry does not know, with the accepted spelling.

    A bare count multiplier (``M``), a count multiplier used as a prefix (``Bparam``),
    ``FLOPS`` (rate or plural?) and near misses (``tokn``, ``gb``) each get their own
    suggestion; anything else lists a few units chalk knows.
    """
    if name in COUNT_MULTIPLIERS:
        return UnitError(name, f"{name} is a count multiplier, not a unit: glue it to the "
                               f"number with a space before the unit ('1.5{name} token'), or "
                               f"make it the prefix of a unit ('{_AS_PREFIX[name]}token', "
                               f"'USD/1{name} token')")
    flops = re.fullmatch(r"(Ki|Mi|Gi|Ti|[kMGTPE]?)FLOPS", name)
    if flops:
        prefix = flops.group(1)
        return UnitError(name, "FLOPS could mean FLOP per second or a count of FLOPs",
                         (f"{prefix}FLOP/s", f"{prefix}FLOP"))
    if len(name) > 1 and name[0] in _AS_PREFIX and _AS_PREFIX[name[0]] != name[0] \
            and _known(name[1:]):
        fixed = _AS_PREFIX[name[0]] + name[1:]
        return UnitError(name, f"{name[0]} is not a prefix inside a unit name; write "
                               f"{fixed}, or put {name[0]} against the number "
                               f"('100{name[0]} {name[1:]}')", (fixed,))
    suggestions = near_misses(name)
    if suggestions:
        return UnitError(name, "not a unit chalk knows", suggestions)
    return UnitError(name, _GENERIC)


def near_misses(name: str, limit: int = 3) -> tuple[str, ...]:
    """Accepted unit spellings close to ``name``, closest first: the same letters in
    another case (``gb``), or a typo in the unit name after an optional prefix
    (``sequnce``, ``Mtokn``)."""
    spellings = _spellings()
    found: set[str] = set()
    for prefix in ("", *_PREFIXES):
        head, rest = name[:len(prefix)], name[len(prefix):]
        if head.casefold() != prefix.casefold() or not rest:
            continue
        found |= {prefix + s for s in spellings if s.casefold() == rest.casefold()}
        # a typo is looked for only after a prefix written exactly (not 't' of 'tokn')
        if head == prefix and (not prefix or len(rest) > 3):
            found |= {prefix + s for s in difflib.get_close_matches(rest, spellings, n=limit,
                                                                    cutoff=0.75)}
    found = {s for s in found if s != name and _known(s)}

    def closeness(spelling: str) -> tuple[bool, float]:
        return (spelling.casefold() != name.casefold(),
                -difflib.SequenceMatcher(None, name, spelling).ratio())

    return tuple(sorted(found, key=lambda s: (*closeness(s), s)))[:limit]


def dimension_hint(text: str, extra_bytes: bool, unit_text: str) -> str:
    """How to write a value whose unit has the wrong dimension, or "" when there is
    nothing to add to "needs a unit like ...".

    ``extra_bytes`` says the given dimension is the wanted one times bytes: a ``B`` after
    a space was read as byte where a billion was meant.
    """
    if not extra_bytes or not re.search(r"(?<![A-Za-z])B(?![A-Za-z])", text):
        return ""
    number = re.match(r"\s*([+-]?[\d.,_]+(?:[eE][+-]?\d+)?)", text)
    if not number:
        return ""
    digits = number.group(1)
    return (f"B after a space is byte; for a billion write B against the number "
            f"('{digits}B {unit_text}') or '{digits}e9 {unit_text}'")
