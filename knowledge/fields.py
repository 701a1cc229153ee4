"""Checks of one field of a data file: its type, its length, and for dates the calendar.

Shared by the readers of price sheets, data files, fit files and report files, so that a
wrong type is named the same way everywhere: the file, the entry, the field, what was
expected and what was found.
"""

from __future__ import annotations

import datetime
import difflib
import re
from collections.abc import Mapping

from chalk.symbolic.errors import DataError


def text(value, shown: str, entry: str, field: str, limit: int = 2000,
         numbers: bool = True) -> str:
    """A text field: text (or, with ``numbers``, a number, as written by ``str``) of at
    most ``limit`` characters; a list, a table, true/false or nothing is refused."""
    plain = isinstance(value, str) or (numbers and isinstance(value, (int, float))
                                       and not isinstance(value, bool))
    if not plain:
        raise DataError(shown, entry, field, f"expected text, found {describe(value)}")
    out = str(value)
    if len(out) > limit:
        raise DataError(shown, entry, field, f"longer than {limit} characters")
    return out


_ISO_DATE = re.compile(r"(?<![\d-])(\d{4})-(\d{2})-(\d{2})(?![\d-])")


def date(value, shown: str, entry: str, field: str, limit: int = 200,
         numbers: bool = True) -> str:
    """A date field: free text (``2025-06..2026-09``, ``GA 2025-06-17``) in which every
    ``YYYY-MM-DD`` is a day of the calendar (``2026-13-45`` is a slip, not a date)."""
    out = text(value, shown, entry, field, limit, numbers)
    for match in _ISO_DATE.finditer(out):
        try:
            datetime.date(*(int(part) for part in match.groups()))
        except ValueError as exc:
            raise DataError(shown, entry, field, f"{match.group()!r} is not a date ({exc}); "
                                                 "write YYYY-MM-DD") from None
    return out


def text_or_date(key: str, value, shown: str, entry: str, field: str, limit: int,
                 numbers: bool = True) -> str:
    """:func:`date` for a key called ``date``, :func:`text` for any other."""
    return (date if key == "date" else text)(value, shown, entry, field, limit, numbers)


def flag(value, shown: str, entry: str, field: str) -> bool:
    """A true/false field."""
    if not isinstance(value, bool):
        raise DataError(shown, entry, field, f"expected true or false, found {describe(value)}")
    return value


def known_keys(raw: Mapping, allowed, shown: str, entry: str, field: str | None,
               *, where: str = "", other_names: Mapping[str, str] | None = None) -> None:
    """Refuse the first key of ``raw`` that is not in ``allowed``, naming the closest one
    (a misspelt key would otherwise be dropped without a word).

    ``field=None`` names the key itself as the field (under ``where``); ``other_names``
    maps names other formats use to the allowed one meant, for keys too far in spelling
    for a close match.
    """
    unknown = sorted(set(raw) - set(allowed), key=str)
    if not unknown:
        return
    key = str(unknown[0])
    meant = (other_names or {}).get(key)
    close = [meant] if meant in allowed else \
        difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.6)
    if field is None:
        hint = f"; did you mean {close[0]!r}?" if close else \
            "; expected one of " + ", ".join(sorted(allowed))
        raise DataError(shown, entry, f"{where}.{key}" if where else key, "unknown key" + hint)
    hint = f"; did you mean {close[0]!r}?" if close else "; expected " + ", ".join(allowed)
    raise DataError(shown, entry, field, f"unknown key {unknown[0]!r}{hint}")


def listing(value, shown: str, entry: str, field: str, what: str) -> list:
    """A list field (``what`` says what each item is); nothing is an empty list."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise DataError(shown, entry, field, f"expected a list of {what}, found "
                                             f"{describe(value)}")
    return value


def describe(value) -> str:
    """What a loaded value is, in words, for a message."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return "a date or time" if hasattr(value, "isoformat") else type(value).__name__
