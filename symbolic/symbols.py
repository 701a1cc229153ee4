"""The one symbol factory.

Every sympy Symbol in chalk is made here, so one name always maps to one Symbol
with the same assumptions (two Symbols that differ only in assumptions would be
different nodes in the dependency graph). Names are validated identifiers from
the vocabulary, never raw user text: a Symbol name reaches generated code in
some sympy paths, so it must not be able to carry code.
"""

from __future__ import annotations

import keyword
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import sympy

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

_SYMBOLS: dict[str, sympy.Symbol] = {}


def validate_name(name: str) -> str:
    """Return ``name`` if it is a safe quantity name, else raise ValueError."""
    if (
        not isinstance(name, str)
        or not NAME_PATTERN.match(name)
        or keyword.iskeyword(name)
        or "__" in name
    ):
        raise ValueError(f"{name!r} is not a valid quantity name (lower-case identifier)")
    return name


def symbol(name: str) -> sympy.Symbol:
    """The unique positive real Symbol for ``name``."""
    existing = _SYMBOLS.get(name)
    if existing is not None:
        return existing
    validate_name(name)
    import sympy  # only here: checking names needs no algebra

    made = sympy.Symbol(name, positive=True)
    _SYMBOLS[name] = made
    return made
