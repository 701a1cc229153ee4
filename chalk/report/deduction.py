"""Deduction files: what someone knows and wants to know, written down once (TOML).

::

    title = "What Gemini's long-context price implies"
    description = "The question in words."
    presets = ["lecture"]            # applied to every question
    samples = 20000                  # Monte Carlo samples for ranges (optional)
    compared_with = "the lecture"    # whose numbers the stated values are (optional)

    [pins]                           # known values; a table adds a source note
    context_crossover = "200k token"
    active_params = { value = "100e9..300e9 param", source = "lecture 1:31:27", date = "2026" }

    [[questions]]
    title = "KV bytes per token"
    text = "What KV cache per token does the 200K step imply?"
    targets = ["kv_bytes_per_token"]
    pins = { }                       # extra pins for this question only (optional)
    presets = [ ]                    # extra presets (optional)
    regime = "memory-bound"          # optional
    stated = { value = "1.7 kB/token", at = "1:38:28", quote = "almost 2 kilobyte" }
                                     # the number a source states for the same question
                                     # (optional; a range "LOW..HIGH UNIT" is allowed;
                                     # target = "NAME" when the question has several;
                                     # `lecture = ...` is the same key under its old name)

    [[sweeps]]                       # title, text, targets, over = "NAME=LOW..HIGH", steps, log
    [[plots]]                        # title, text, name, sheet (cost_vs_context), pins, presets
    [[fits]]                         # title, text, and file = "my_fit.toml" (a chalk fit
                                     # file, relative to this one; docs/FIT.md) or atlas = true

Every key is checked; a mistake names the file, the entry and the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from chalk.knowledge import fields, files
from chalk.knowledge.data import DEDUCTIONS_DIR, MAX_NAME, MAX_SOURCE
from chalk.symbolic.errors import ChalkError, DataError, ParseError
from chalk.symbolic.parsing import MAX_TEXT, looks_uncertain, parse_spread, parse_value
from chalk.symbolic.presets import PresetValue
from chalk.symbolic.symbols import NAME_PATTERN

_TOP = {"title", "description", "presets", "pins", "samples", "seed", "compared_with",
        "questions", "sweeps", "plots", "fits"}
_ENTRY = {
    "questions": {"title", "text", "targets", "pins", "presets", "regime", "stated",
                  "lecture"},
    "sweeps": {"title", "text", "targets", "over", "steps", "log", "pins", "presets"},
    "plots": {"title", "text", "name", "sheet", "pins", "presets"},
    "fits": {"title", "text", "file", "atlas"},
}
_REQUIRED = {"questions": ("title", "targets"), "sweeps": ("title", "targets", "over"),
             "plots": ("title", "name"), "fits": ("title",)}


@dataclass(frozen=True)
class Stated:
    """A number a source (the file's ``compared_with``) gives for a question's answer.

    ``value`` is the text as written (``"15 ms"`` or a range ``"1 s..10 s"``), ``at``
    where it is said (a timestamp), ``target`` the answer it is compared with.
    """

    value: str
    at: str
    target: str
    quote: str = ""


@dataclass
class Entry:
    kind: str
    title: str
    text: str
    options: dict
    pins: dict = field(default_factory=dict)
    presets: list = field(default_factory=list)
    stated: Stated | None = None


@dataclass
class DeductionFile:
    path: str
    title: str
    description: str
    presets: list[str]
    pins: dict[str, PresetValue]
    samples: int
    seed: int
    entries: list[Entry]
    compared_with: str = "the stated source"


def _fit_source(options: dict, shown: str, label: str) -> None:
    """A fit section names exactly one of a fit file or the shipped atlas."""
    if "atlas" in options and not isinstance(options["atlas"], bool):
        raise DataError(shown, label, "atlas", "expected true or false")
    has_file = "file" in options
    if has_file and (not isinstance(options["file"], str) or len(options["file"]) > MAX_TEXT
                     or not options["file"].endswith(".toml")):
        raise DataError(shown, label, "file", "expected the path of a fit file (.toml)")
    if has_file == bool(options.get("atlas")):
        raise DataError(shown, label, "file", "give either file = \"FIT.toml\" or atlas = "
                                              "true")


def _strings(value, path, entry, key) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataError(path, entry, key, "expected a list of names")
    return value


def _pins(raw, path, entry) -> dict[str, PresetValue]:
    out = _pin_table(raw, path, entry)
    for name, value in out.items():  # names and values must read, before anything runs
        field = f"pins.{name}"
        if not NAME_PATTERN.match(name) or "__" in name:
            raise DataError(path, entry, field, "not a quantity name (lower-case words "
                                                 "joined by '_')")
        try:
            if looks_uncertain(value.text):
                parse_spread(value.text)
            else:
                parse_value(value.text)
        except ChalkError as exc:
            raise DataError(path, entry, field, exc.message) from None
    return out


def _pin_table(raw, path, entry) -> dict[str, PresetValue]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise DataError(path, entry, "pins", "expected a table of NAME = VALUE")
    out = {}
    for name, value in raw.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = repr(value)
        if isinstance(value, str):
            out[name] = PresetValue(value, "", "")
            continue
        if not isinstance(value, dict):
            raise DataError(path, entry, f"pins.{name}", "expected a value string or a table")
        unknown = set(value) - {"value", "source", "date", "note"}
        if unknown:
            raise DataError(path, entry, f"pins.{name}.{sorted(unknown)[0]}", "unknown key")
        if not isinstance(value.get("value"), (str, int, float)) \
                or isinstance(value["value"], bool):
            raise DataError(path, entry, f"pins.{name}", "missing value")
        number = value["value"]
        meta = {key: fields.text_or_date(key, value.get(key, ""), path, entry,
                                         f"pins.{name}.{key}", limit, numbers=False)
                for key, limit in (("source", MAX_SOURCE), ("date", MAX_NAME),
                                   ("note", MAX_SOURCE))}
        out[name] = PresetValue(number if isinstance(number, str) else repr(number),
                                meta["source"], meta["date"], meta["note"])
    return out


def _stated(raw, targets, path, entry, key: str = "stated") -> Stated | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = {"value": raw}
    if not isinstance(raw, dict):
        raise DataError(path, entry, key, "expected a table { value = ..., at = ... }")
    unknown = set(raw) - {"value", "at", "target", "quote"}
    if unknown:
        raise DataError(path, entry, f"{key}.{sorted(unknown)[0]}", "unknown key")
    for part in ("value", "at", "target", "quote"):
        if part in raw and (not isinstance(raw[part], str) or len(raw[part]) > MAX_TEXT):
            raise DataError(path, entry, f"{key}.{part}", "expected text")
    if "value" not in raw:
        raise DataError(path, entry, f"{key}.value", "missing")
    try:
        if looks_uncertain(raw["value"]):
            if parse_spread(raw["value"]).kind != "range":
                raise DataError(path, entry, f"{key}.value",
                                "expected a value or a range 'LOW..HIGH UNIT'")
        else:
            parse_value(raw["value"])
    except ParseError as exc:
        raise DataError(path, entry, f"{key}.value", exc.message) from None
    target = raw.get("target", targets[0] if targets else "")
    if target not in targets:
        raise DataError(path, entry, f"{key}.target",
                        f"not one of the targets ({', '.join(targets)})")
    return Stated(raw["value"], raw.get("at", ""), target, raw.get("quote", ""))


def load(name_or_path: str) -> DeductionFile:
    """Read a deduction file by path, or a shipped one by name (``lecture``)."""
    path = Path(name_or_path)
    if not files.exists(path) and not name_or_path.endswith(".toml") \
            and NAME_PATTERN.match(name_or_path):
        shipped = DEDUCTIONS_DIR / f"{name_or_path}.toml"
        if shipped.exists():
            path = shipped
    shown = files.shown_name(path)
    raw = files.load_toml(path, "file not found (or name a shipped deduction, such as "
                                "'lecture')")
    unknown = set(raw) - _TOP
    if unknown:
        raise DataError(shown, "-", sorted(unknown)[0][:40], "unknown key")
    if "title" not in raw:
        raise DataError(shown, "-", "title", "missing")
    title = fields.text(raw["title"], shown, "-", "title", 4000, numbers=False)
    description = fields.text(raw.get("description", ""), shown, "-", "description", 20_000,
                             numbers=False)
    samples, seed = raw.get("samples", 20_000), raw.get("seed", 0)
    if isinstance(samples, bool) or not isinstance(samples, int) \
            or not 100 <= samples <= 10_000_000:
        raise DataError(shown, "-", "samples", "expected a whole number from 100 to 10000000")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise DataError(shown, "-", "seed", "expected a whole number from 0 to 4294967295")
    entries = []
    for kind in ("questions", "sweeps", "plots", "fits"):
        items = raw.get(kind, [])
        if not isinstance(items, list):
            raise DataError(shown, kind, "-", f"write each as [[{kind}]]")
        for index, item in enumerate(items):
            label = f"{kind}[{index}]"
            if not isinstance(item, dict):
                raise DataError(shown, label, "-", "expected a table")
            unknown = set(item) - _ENTRY[kind]
            if unknown:
                raise DataError(shown, label, sorted(unknown)[0][:40], "unknown key")
            for key in _REQUIRED[kind]:
                if key not in item:
                    raise DataError(shown, label, key, "missing")
            for key in ("title", "text"):
                if key in item and (not isinstance(item[key], str) or len(item[key]) > 4000):
                    raise DataError(shown, label, key, "expected text")
            options = {k: v for k, v in item.items()
                       if k not in ("title", "text", "pins", "presets")}
            if "targets" in options:
                options["targets"] = _strings(options["targets"], shown, label, "targets")
            for key in ("name", "over", "sheet", "regime"):
                if key in options and (not isinstance(options[key], str)
                                       or len(options[key]) > MAX_TEXT):
                    raise DataError(shown, label, key, "expected text")
            if "steps" in options and (isinstance(options["steps"], bool)
                                       or not isinstance(options["steps"], int)
                                       or not 2 <= options["steps"] <= 1_000_000):
                raise DataError(shown, label, "steps", "expected a whole number from 2 to "
                                                       "1000000")
            if kind == "fits":
                _fit_source(options, shown, label)
            if "log" in options and not isinstance(options["log"], bool):
                raise DataError(shown, label, "log", "expected true or false")
            if options.get("regime") not in (None, "compute-bound", "memory-bound"):
                raise DataError(shown, label, "regime",
                                "expected 'compute-bound' or 'memory-bound'")
            if "stated" in options and "lecture" in options:
                raise DataError(shown, label, "lecture", "give the stated number once, as "
                                                         "stated = { ... }")
            key = "lecture" if "lecture" in options else "stated"
            raw_stated = options.pop(key, None)
            entries.append(Entry(kind, item["title"], item.get("text", ""), options,
                                 _pins(item.get("pins"), shown, label),
                                 _strings(item.get("presets", []), shown, label, "presets"),
                                 _stated(raw_stated, options.get("targets", []), shown, label,
                                         key)))
    if not entries:
        raise DataError(shown, "-", "questions", "the file asks nothing")
    try:
        pins = _pins(raw.get("pins"), shown, "-")
    except ParseError as exc:
        raise DataError(shown, "-", "pins", exc.message) from None
    # whose numbers the stated values are: named by the file, else "the lecture" for a
    # file written with the old key
    old_key = any(entry.stated is not None and "lecture" in item
                  for entry, item in zip(entries, raw.get("questions", []), strict=False))
    compared_with = fields.text(raw["compared_with"], shown, "-", "compared_with", MAX_NAME,
                                numbers=False) if "compared_with" in raw else \
        "the lecture" if old_key else "the stated source"
    return DeductionFile(str(path), title, description,
                         _strings(raw.get("presets", []), shown, "-", "presets"), pins,
                         samples, seed, entries, compared_with)
