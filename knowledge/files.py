"""Reading the files chalk is given, strictly: as data, within bounds, in UTF-8.

Price sheets and the shipped data files (YAML) and fit and report files (TOML) all come
through here. A file is read only if it is a regular file (a folder, a FIFO or a device is
refused from its ``stat``, before it is opened), at most :data:`MAX_BYTES` long and UTF-8
text. YAML is read as plain data with none of YAML 1.1's conversions: a plain scalar is
``null``, ``true``/``false``, a decimal number, or else the text as written (so ``010`` is
10, and ``0x10``, ``1:30`` and ``2026-13-45`` stay text for the field's own check to judge).
Duplicate keys, anchors and aliases, tags and more than one document are refused, and both
formats are refused past :data:`MAX_DEPTH` levels of nesting. Every refusal is a
:class:`DataError` naming the file (and the line, where there is one). What each field
must hold is checked by the reader of each kind of file (with :mod:`chalk.knowledge.fields`).
"""

from __future__ import annotations

import codecs
import math
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path

import yaml
from chalk.symbolic.errors import DataError

MAX_BYTES = 4_000_000  # a fit of 5,000 observations is well under 1 MB
MAX_DEPTH = 24  # the deepest shipped structure is 4 levels
MAX_VALUES = 200_000  # values in a YAML file with its aliases expanded (shipped: ~8,000)
MAX_SHOWN = 60  # characters of a file name shown in a message

# libyaml's event parser when PyYAML was built with it: a state machine in C (no recursion),
# and a fifth of a second faster at each start of the command line than the pure one.
_PARSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False,
         "FALSE": False}
_INT = re.compile(r"[-+]?[0-9]+")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_MAX_DIGITS = 300  # a longer integer stays text (the value parser refuses it by length)

# TOML's strings and comments, where a bracket is not nesting; and the brackets themselves
_TOML_TOKEN = re.compile(r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"'
                         r"|'[^'\n]*'|#[^\n]*|[\[\]{}]", re.DOTALL)


def shown_name(path: Path | str) -> str:
    """The name a message gives a file: its last part, cut short if it is very long."""
    name = Path(path).name or str(path)
    return name if len(name) <= MAX_SHOWN else name[:MAX_SHOWN - 3] + "..."


def exists(path: Path | str) -> bool:
    """Whether something exists at ``path`` (never raises, even for an impossible name)."""
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


_KINDS = ((stat.S_ISDIR, "is a folder"), (stat.S_ISFIFO, "is a FIFO (named pipe)"),
          (stat.S_ISCHR, "is a device"), (stat.S_ISBLK, "is a device"),
          (stat.S_ISSOCK, "is a socket"))


def _not_regular(mode: int) -> str:
    return next((what for test, what in _KINDS if test(mode)), "is not a regular file")


def read_text(path: Path | str, missing: str = "file not found") -> str:
    """The UTF-8 text of the regular file at ``path``.

    Parameters
    ----------
    path : Path or str
    missing : str
        The reason given when nothing is at ``path`` (say what to give instead).

    Raises
    ------
    DataError
        Nothing there, not a regular file, unreadable, larger than :data:`MAX_BYTES`, or
        not UTF-8 (a UTF-8 byte-order mark is allowed and dropped).
    """
    shown = shown_name(path)
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise DataError(shown, "-", "-", missing) from None
    except ValueError:  # a NUL byte in the name
        raise DataError(shown, "-", "-", "not a usable file name") from None
    except OSError as exc:
        raise DataError(shown, "-", "-", f"cannot be read ({_lower(exc)})") from None
    if not stat.S_ISREG(info.st_mode):
        raise DataError(shown, "-", "-", f"{_not_regular(info.st_mode)}; give a file")
    if info.st_size > MAX_BYTES:
        raise DataError(shown, "-", "-", f"larger than {MAX_BYTES // 1_000_000} MB")
    try:
        # no blocking on a FIFO put there since the stat; checked again once open
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise DataError(shown, "-", "-", f"cannot be read ({_lower(exc)})") from None
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise DataError(shown, "-", "-", f"{_not_regular(mode)}; give a file")
        try:
            data = handle.read(MAX_BYTES + 1)
        except OSError as exc:
            raise DataError(shown, "-", "-", f"cannot be read ({_lower(exc)})") from None
    if len(data) > MAX_BYTES:
        raise DataError(shown, "-", "-", f"larger than {MAX_BYTES // 1_000_000} MB")
    return _decode(data, shown)


def _lower(exc: OSError) -> str:
    reason = exc.strerror or type(exc).__name__
    return reason[:1].lower() + reason[1:]


def _decode(data: bytes, shown: str) -> str:
    for bom, name in ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
                      (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16")):
        if data.startswith(bom):
            raise DataError(shown, "-", "-", f"is {name} text; save it as UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataError(shown, "-", "-", f"is not UTF-8 text (byte 0x{data[exc.start]:02x} "
                                         f"on line {line}); save it as UTF-8") from None


def load_yaml(path: Path | str, missing: str = "file not found") -> object:
    """The data in a YAML file: mappings (with text keys), lists, text, numbers,
    booleans and ``None``; see the module docstring for what is refused."""
    return parse_yaml(read_text(path, missing), shown_name(path))


def parse_yaml(text: str, shown: str) -> object:
    """The data in YAML ``text`` (``shown`` names it in errors)."""
    parser = _PARSER(text)
    try:
        return _build(parser, shown)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        if "maximum nesting depth" in problem:
            # some libyaml builds stop deep nesting while scanning ahead, before the
            # builder's own limit: the same refusal whichever comes first
            line = mark.line + 1 if mark is not None else 0
            raise DataError(shown, "-", "-", f"line {line}: nested more than {MAX_DEPTH} "
                            "levels deep") from None
        raise DataError(shown, "-", "-", f"not valid YAML{where} ({problem})") from None
    finally:
        parser.dispose()


class _Open:
    """A mapping or list being read: its value, the key awaiting a value (a mapping's),
    the line of each key so far, its anchor, and where the value count stood when it
    opened."""

    __slots__ = ("value", "key", "lines", "anchor", "start", "height")

    def __init__(self, value, anchor=None, start=0):
        self.value, self.key, self.lines = value, None, {}
        self.anchor, self.start, self.height = anchor, start, 0

    def wants_key(self) -> bool:
        return isinstance(self.value, dict) and self.key is None


def _build(parser, shown: str) -> object:
    """Assemble the document from the parser's events, with a stack instead of recursion.

    An alias stands for the very object its anchor named (nothing is copied), and counts
    as every value in it: the document may hold at most :data:`MAX_VALUES` values so
    counted, which stops an alias bomb at its first few lines. An alias may only name a
    finished value, so no structure contains itself.
    """
    stack = [_Open([])]
    anchors: dict[str, tuple[object, int, int]] = {}  # value, values in it, its height
    count = documents = 0

    def fail(line: int, reason: str):
        raise DataError(shown, "-", "-", f"line {line}: {reason}")

    def add(value, line: int, values: int, height: int) -> None:
        nonlocal count
        count += values
        if count > MAX_VALUES:
            fail(line, f"more than {MAX_VALUES} values once aliases are expanded; write "
                       "the file without '*' aliases")
        if len(stack) + height > MAX_DEPTH + 1:
            fail(line, f"nested more than {MAX_DEPTH} levels deep")
        top = stack[-1]
        top.height = max(top.height, height + 1)
        if isinstance(top.value, dict):
            top.value[top.key] = value
            top.key = None
        else:
            top.value.append(value)

    while True:
        event = parser.get_event()
        line = event.start_mark.line + 1 if event.start_mark is not None else 0
        if isinstance(event, yaml.StreamEndEvent):
            return stack[0].value[0] if stack[0].value else None
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                fail(line, "a second YAML document; keep one per file")
            continue
        if isinstance(event, (yaml.StreamStartEvent, yaml.DocumentEndEvent)):
            continue
        tag = getattr(event, "tag", None)
        if tag is not None and not (isinstance(event, yaml.ScalarEvent) and tag == "!"):
            fail(line, f"YAML tags ({tag.replace('tag:yaml.org,2002:', '!!')[:40]!r}) are "
                       "not accepted; write plain values")
        top = stack[-1]
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            done = stack.pop()
            values = count - done.start
            if done.anchor is not None:
                anchors[done.anchor] = (done.value, values, done.height)
            count = done.start  # counted again, whole, as it is added to its parent
            add(done.value, line, values, done.height)
        elif top.wants_key():
            if not isinstance(event, yaml.ScalarEvent):
                fail(line, "a key must be plain text (not a list, a mapping or an alias)")
            if event.anchor is not None:
                fail(line, "an anchor on a key is not accepted")
            if event.value in top.lines:
                fail(line, f"key {event.value[:40]!r} appears twice (first on line "
                           f"{top.lines[event.value]}); keep one")
            top.lines[event.value] = line
            top.key = event.value
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in anchors:
                fail(line, f"alias '*{event.anchor[:40]}' names no finished anchor above it")
            value, values, height = anchors[event.anchor]
            add(value, line, values, height)
        elif isinstance(event, yaml.ScalarEvent):
            value = _scalar(event)
            if event.anchor is not None:
                anchors[event.anchor] = (value, 1, 0)
            add(value, line, 1, 0)
        else:  # a mapping or a list opens
            if len(stack) > MAX_DEPTH:
                fail(line, f"nested more than {MAX_DEPTH} levels deep")
            stack.append(_Open({} if isinstance(event, yaml.MappingStartEvent) else [],
                               event.anchor, count))
            count += 1  # the container itself


def _scalar(event) -> object:
    """A scalar's value: quoted and block text as written; plain text read as YAML 1.2's
    core schema reads it, in decimal only."""
    text = event.value
    if not event.implicit[0]:
        return text
    if text in _NULL:
        return None
    if text in _BOOL:
        return _BOOL[text]
    if _INT.fullmatch(text):
        return int(text) if len(text) <= _MAX_DIGITS else text
    if _FLOAT.fullmatch(text):
        value = float(text)
        return value if math.isfinite(value) else text  # the value parser names the exponent
    return text


def load_toml(path: Path | str, missing: str = "file not found") -> dict:
    """The table in a TOML file, refused past :data:`MAX_DEPTH` levels of nesting."""
    shown = shown_name(path)
    text = read_text(path, missing)
    _check_brackets(text, shown)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DataError(shown, "-", "-", f"not valid TOML ({str(exc)[:80]})") from None
    except ValueError:  # an integer past Python's limit on digits
        raise DataError(shown, "-", "-", "not valid TOML (a number with too many "
                                         "digits)") from None
    check_depth(data, shown)
    return data


def _check_brackets(text: str, shown: str) -> None:
    """Refuse arrays and inline tables nested past the limit before tomllib, which
    recurses into them, reads the file."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return  # too few brackets to nest that deep
    depth = 0
    for token in _TOML_TOKEN.finditer(text):
        bracket = token.group()
        if bracket in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, token.start()) + 1
                raise DataError(shown, "-", "-", f"line {line}: nested more than "
                                                 f"{MAX_DEPTH} levels deep")
        elif bracket in "]}":
            depth = max(depth - 1, 0)


def check_depth(data, shown: str) -> None:
    """Refuse ``data`` nested past :data:`MAX_DEPTH` (dotted TOML keys nest without
    brackets), walking it without recursion."""
    stack = [(data, 0)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, Mapping) else \
            node if isinstance(node, list) else ()
        for child in children:
            if isinstance(child, (Mapping, list)):
                if depth + 1 > MAX_DEPTH:
                    raise DataError(shown, "-", "-", f"nested more than {MAX_DEPTH} levels "
                                                     "deep")
                stack.append((child, depth + 1))
