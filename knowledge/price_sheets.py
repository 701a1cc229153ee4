"""API price sheets: loading and validating them (the shipped ones or a user's YAML).

A sheet has standard prices, optionally a long-context tier, cache-write prices
by hold time, a faster (priority) tier and a cheaper batch tier. Every price keeps
the source and date of the sheet or of its section. The format is documented in
``docs/PRICE_SHEETS.md``.

Shipped sheets must name a source and a date; a user's own sheet may leave them
out, and its prices are then marked :data:`UNSOURCED` and :data:`UNDATED`.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from chalk.knowledge import fields, files
from chalk.knowledge.data import DATA_DIR, MAX_NAME, MAX_SOURCE, Fact, inherit, read_fact
from chalk.symbolic.errors import DataError, UnknownNameError
from chalk.symbolic.symbols import NAME_PATTERN
from chalk.symbolic.units import ureg

_SHEET_KEYS = {"id", "provider", "model", "source", "date", "note", "prices", "long_context",
               "cache_writes", "fast_mode", "batch", "preset"}
_PRICE_KEYS = {"input", "output", "cache_read", "cache_storage"}
_LONG_KEYS = {"threshold", "input", "output", "cache_read"}
_FAST_KEYS = {"price_ratio", "speedup"}
_BATCH_KEYS = {"price_ratio"}
_META = {"source", "date", "note"}
_WRITE_KEYS = {"hold_time", "price"}

# What a personal sheet's prices carry when it names no source or date.
UNSOURCED = "unsourced (personal sheet)"
UNDATED = "an unstated date"


@dataclass(frozen=True)
class CacheWrite:
    hold_time: Fact
    price: Fact


@dataclass(frozen=True)
class PriceSheet:
    """One provider's prices for one model, each a sourced :class:`Fact`."""

    id: str
    provider: str
    model: str
    source: str
    date: str
    note: str = ""
    prices: Mapping[str, Fact] = field(default_factory=dict)
    long_context: Mapping[str, Fact] = field(default_factory=dict)
    cache_writes: tuple[CacheWrite, ...] = ()
    fast_mode: Mapping[str, Fact] = field(default_factory=dict)
    batch: Mapping[str, Fact] = field(default_factory=dict)  # a cheaper, slower tier
    preset: str = ""  # the shipped model preset of an open-weight model, if there is one

    @property
    def title(self) -> str:
        return f"{self.provider} {self.model}"

    @property
    def sourced(self) -> bool:
        """Whether the sheet names its source (a personal sheet may not)."""
        return self.source != UNSOURCED


# What other price lists call the fields of a sheet (OpenAI's "cached input", a
# "prompt"/"completion" pair), so a pasted name is pointed at chalk's own.
_OTHER_NAMES = {
    "cached_input": "cache_read", "cache_input": "cache_read", "cached": "cache_read",
    "cache_hit": "cache_read", "cache_hits": "cache_read", "input_cached": "cache_read",
    "cached_read": "cache_read", "prompt_cache_read": "cache_read",
    "cache_write": "cache_writes", "cache_creation": "cache_writes",
    "cache_storage_per_hour": "cache_storage", "storage": "cache_storage",
    "prompt": "input", "input_tokens": "input", "completion": "output",
    "output_tokens": "output", "long_context_threshold": "threshold",
}


def _refuse_unknown(raw: Mapping, allowed, path, entry, where: str = "") -> None:
    """Raise for the first key of ``raw`` not in ``allowed``, naming the closest one."""
    fields.known_keys(raw, allowed, path, entry, None, where=where, other_names=_OTHER_NAMES)


# The unit each field must carry (its dimension is checked, any scale accepted).
_UNITS = {"input": "USD/Mtoken", "output": "USD/Mtoken", "cache_read": "USD/Mtoken",
          "cache_storage": "USD/Mtoken/hour", "threshold": "token", "price_ratio": "",
          "speedup": "", "hold_time": "s", "price": "USD/Mtoken"}


def _checked(fact: Fact, path, entry, field) -> Fact:
    """``fact`` if its unit has the dimension its field (``section.key``) needs."""
    wanted = _UNITS[field.rsplit(".", 1)[-1]]
    got = ureg.get_dimensionality(fact.unit) if fact.unit else ureg.get_dimensionality("")
    if got != ureg.get_dimensionality(wanted or ""):
        shown = fact.unit or "no unit"
        example = f"e.g. '{fact.value:g} {wanted}'" if wanted else "a plain number"
        raise DataError(path, entry, field, f"{fact.text!r} has {shown}; this field needs "
                                            f"{wanted or 'no unit'} ({example})")
    return fact


def _section(raw, allowed, path, entry, name, inherited, zero_ok=frozenset()):
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise DataError(path, entry, name, f"expected a mapping, found {fields.describe(raw)}")
    _refuse_unknown(raw, allowed | _META, path, entry, name)
    scope = inherit(raw, inherited, path, entry, name)
    return {key: _checked(read_fact(raw[key], path, entry, f"{name}.{key}", scope,
                                    positive=key not in zero_ok), path, entry, f"{name}.{key}")
            for key in raw if key in allowed}  # file order: the first fault is reported


def read_sheet(raw, path: str, index: int = 0, personal: bool = False) -> PriceSheet:
    """Validate one sheet; errors name the file, the entry and the field.

    Parameters
    ----------
    raw : object
        The sheet as loaded from YAML.
    path : str
        The file name shown in errors.
    index : int
        The sheet's position in its file, shown while it has no valid id.
    personal : bool
        A user's own sheet: ``source`` and ``date`` may be left out, and are then
        :data:`UNSOURCED` and :data:`UNDATED`. Shipped sheets must give both.
    """
    if not isinstance(raw, Mapping):
        raise DataError(path, f"#{index}", "-", "expected a mapping")
    ident = raw.get("id")
    if not isinstance(ident, str) or not NAME_PATTERN.match(ident):
        raise DataError(path, f"#{index}", "id", "missing or not a lower-case identifier")
    _refuse_unknown(raw, _SHEET_KEYS, path, ident)
    for key in ("provider", "model", "source", "date"):
        if key in raw and (raw[key] is None or not str(raw[key]).strip()):
            raise DataError(path, ident, key, "blank; give a value or leave the key out"
                            if personal and key in ("source", "date") else "missing")
        if key not in raw and not (personal and key in ("source", "date")):
            raise DataError(path, ident, key, "missing")
    limits = {"provider": MAX_NAME, "model": MAX_NAME, "source": MAX_SOURCE, "date": MAX_NAME,
              "note": MAX_SOURCE, "preset": 64}
    text = {key: fields.text_or_date(key, raw[key], path, ident, key, limit)
            for key, limit in limits.items() if raw.get(key) is not None}
    inherited = {"source": text.get("source", UNSOURCED).strip(),
                 "date": text.get("date", UNDATED).strip()}
    prices = _section(raw.get("prices"), _PRICE_KEYS, path, ident, "prices", inherited,
                      zero_ok=frozenset({"cache_storage"}))
    for key in ("input", "output"):
        if key not in prices:
            raise DataError(path, ident, f"prices.{key}", "missing")
    long_context = _section(raw.get("long_context"), _LONG_KEYS, path, ident, "long_context",
                            inherited)
    if long_context and "threshold" not in long_context:
        raise DataError(path, ident, "long_context.threshold", "missing")
    writes = []
    listed = fields.listing(raw.get("cache_writes"), path, ident, "cache_writes",
                           "{hold_time, price} mappings")
    for n, item in enumerate(listed):
        if not isinstance(item, Mapping):
            raise DataError(path, ident, f"cache_writes[{n}]",
                            "expected {hold_time, price} (and optional source, date, note)")
        _refuse_unknown(item, _WRITE_KEYS | _META, path, ident, f"cache_writes[{n}]")
        scope = inherit(item, inherited, path, ident, f"cache_writes[{n}]")
        if "hold_time" not in item or "price" not in item:
            raise DataError(path, ident, f"cache_writes[{n}]", "needs hold_time and price")
        hold_field, price_field = f"cache_writes[{n}].hold_time", f"cache_writes[{n}].price"
        writes.append(CacheWrite(
            _checked(read_fact(item["hold_time"], path, ident, hold_field, scope), path, ident,
                     hold_field),
            _checked(read_fact(item["price"], path, ident, price_field, scope), path, ident,
                     price_field)))
    fast = _section(raw.get("fast_mode"), _FAST_KEYS, path, ident, "fast_mode", inherited)
    batch = _section(raw.get("batch"), _BATCH_KEYS, path, ident, "batch", inherited)
    if batch and "price_ratio" not in batch:
        raise DataError(path, ident, "batch.price_ratio", "missing")
    if batch and batch["price_ratio"].value >= 1:
        raise DataError(path, ident, "batch.price_ratio",
                        f"{batch['price_ratio'].text!r} is not a discount; a batch tier's "
                        "price over the standard one is below 1 (e.g. 0.5 for -50%); a "
                        "dearer, faster tier goes under fast_mode")
    model_preset = text.get("preset", "")
    if model_preset:
        from chalk.knowledge.presets import all_presets

        known = all_presets()
        if model_preset not in known or known[model_preset].kind != "model":
            models = [n for n, p in known.items() if p.kind == "model"]
            close = difflib.get_close_matches(model_preset, models, n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else "; see 'chalk list presets'"
            raise DataError(path, ident, "preset", f"{model_preset!r} is not a model preset"
                                                   + hint)
    return PriceSheet(ident, text["provider"], text["model"], inherited["source"],
                      inherited["date"], text.get("note", ""), prices, long_context,
                      tuple(writes), fast, batch, model_preset)


def read_sheets(path: Path, personal: bool = False) -> dict[str, PriceSheet]:
    """Every sheet in a YAML file holding ``price_sheets: [...]`` or one sheet
    (``personal``: see :func:`read_sheet`)."""
    data = files.load_yaml(path)
    shown = files.shown_name(path)
    entries = data.get("price_sheets") if isinstance(data, Mapping) and "price_sheets" in data \
        else [data]
    if not isinstance(entries, list):
        raise DataError(shown, "-", "price_sheets", "expected a list")
    sheets = {}
    for index, raw in enumerate(entries):
        sheet = read_sheet(raw, shown, index, personal)
        if sheet.id in sheets:
            raise DataError(shown, sheet.id, "id", "duplicate id")
        sheets[sheet.id] = sheet
    return sheets


@lru_cache(maxsize=1)
def shipped_sheets() -> dict[str, PriceSheet]:
    """The price sheets that come with chalk."""
    return read_sheets(DATA_DIR / "price_sheets.yaml")


def price_sheet(name_or_path: str) -> PriceSheet:
    """A shipped sheet by id, or the single sheet in a user's YAML file (which may leave
    out its source and date)."""
    sheets = shipped_sheets()
    if name_or_path in sheets:
        return sheets[name_or_path]
    path = Path(name_or_path)
    if name_or_path.endswith((".yaml", ".yml")) or files.exists(path):
        found = read_sheets(path, personal=True)
        if len(found) != 1:
            raise DataError(files.shown_name(path), "-", "price_sheets",
                            f"holds {len(found)} sheets; name one id instead")
        return next(iter(found.values()))
    close = difflib.get_close_matches(name_or_path, list(sheets), n=3, cutoff=0.5)
    raise UnknownNameError(name_or_path, "price sheet", close)
