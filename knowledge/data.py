"""Loading and validating the sourced data files in ``knowledge/data``.

Every number in a data file is a *fact*: a value with its unit (read by the
restricted parser, never evaluated), the source it comes from and the date it
was true. A file that breaks the schema fails with the file, the entry and the
field at fault.

Schema
------
A fact is a mapping ``{value: "<number> <unit>", source: str, date: str,
note: str (optional), estimate: bool (optional)}``. Files:

``accelerators.yaml``
    ``accelerators: [{id, name, vendor, facts: {fact name: fact}}]``
``models.yaml``
    ``models: [{id, name, attention, facts: {...}}]``
``memory_tiers.yaml``
    ``tiers: [{id, name, kind, facts: {...}}]``
``price_sheets.yaml``
    ``price_sheets: [{id, provider, model, source, date, prices: {...},
    long_context: {...}, cache_writes: [...], fast_mode: {...}}]``; a price
    written as a bare string inherits its section's (or the sheet's) source
    and date (every field in ``docs/PRICE_SHEETS.md``).
``serving_measurements.yaml``
    ``measurements: [{id, name, source, date, engine, engine_version, parallelism, model,
    chip, precision, metric, speculative, note, facts: {measured, n_chips, input_tokens,
    output_tokens, batch_size, ttft, tpot, expert_parallelism,
    attention_tensor_parallelism}}]`` and no other key. ``engine`` is an
    identifier (``tensorrt_llm``, ``vllm``) and ``engine_version`` the release and the
    benchmark tool as published; ``parallelism`` the layout as published (``TP8``,
    ``DEP4``); ``model``, ``chip`` and ``precision`` name presets; ``metric`` says what
    ``measured`` counts (``total``, ``per_chip`` or ``per_user`` output tokens per second).
    ``batch_size`` (the batch or the concurrency), ``ttft`` and ``tpot`` only where the
    source states them; ``expert_parallelism`` and ``attention_tensor_parallelism`` (the
    chips of one attention group: 1 under attention data parallel) only where the source
    states the layout; ``output_tokens`` unless a note says why the source does not;
    ``speculative: true`` for a run that drafted tokens. Each fact's dimension is checked
    and every fact inherits its entry's source and date.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from chalk.knowledge import fields, files
from chalk.symbolic.errors import ChalkError, DataError
from chalk.symbolic.parsing import parse_value
from chalk.symbolic.symbols import NAME_PATTERN
from chalk.symbolic.units import Q_

DATA_DIR = Path(__file__).with_name("data")
# Scripted deductions shipped with the knowledge base (run by ``chalk report NAME``).
DEDUCTIONS_DIR = Path(__file__).with_name("deductions")
MAX_NAME = 200  # characters of a name, a model, a provider or a date
MAX_SOURCE = 2000  # characters of a source or a note (the longest shipped is 439)


@dataclass(frozen=True)
class Fact:
    """A sourced, dated number."""

    value: float
    unit: str
    source: str
    date: str
    note: str = ""
    estimate: bool = False
    text: str = ""

    def quantity(self):
        return Q_(self.value, self.unit) if self.unit else Q_(self.value, "dimensionless")


def inherit(raw: Mapping, inherited: Mapping[str, str], path: str, entry: str,
            where: str) -> dict[str, str]:
    """The ``source``, ``date`` and ``note`` of a fact or a section, each checked: its own
    source and date, else those it inherits (left out when there are none), and its own note
    (left out when it has none)."""
    out = {key: inherited[key] for key in ("source", "date") if key in inherited}
    for key, limit in (("source", MAX_SOURCE), ("date", MAX_NAME), ("note", MAX_SOURCE)):
        if key in raw and not (key == "note" and raw[key] is None):
            out[key] = fields.text_or_date(key, raw[key], path, entry, f"{where}.{key}", limit)
    return out


def read_fact(raw, path: str, entry: str, field: str, inherited: Mapping[str, str] | None = None,
              positive: bool = True) -> Fact:
    """Validate one fact (a mapping, or a bare value that inherits source and date)."""
    inherited = inherited or {}
    if isinstance(raw, (str, int, float)) and not isinstance(raw, bool):
        raw = {"value": raw}
    if not isinstance(raw, Mapping):
        raise DataError(path, entry, field, "expected a mapping with value, source and date")
    fields.known_keys(raw, ("value", "source", "date", "note", "estimate"), path, entry, field)
    text = raw.get("value")
    if text is None or isinstance(text, bool):
        raise DataError(path, entry, field, "missing value")
    text = fields.text(text, path, entry, field, files.MAX_BYTES)  # its length: parse_value's
    try:
        parsed = parse_value(text)
    except ChalkError as exc:
        raise DataError(path, entry, field, exc.message) from None
    if parsed.magnitude < 0 or (positive and parsed.magnitude == 0):
        raise DataError(path, entry, field, f"value {text!r} must be positive")
    scope = inherit(raw, inherited, path, entry, field)
    source, date = scope.get("source"), scope.get("date")
    if not source or not source.strip():
        raise DataError(path, entry, field, "missing source")
    if not date or not date.strip():
        raise DataError(path, entry, field, "missing date")
    unit = f"{parsed.unit}" if parsed.unit is not None else ""
    return Fact(
        value=parsed.magnitude,
        unit=unit,
        source=source.strip(),
        date=date.strip(),
        note=scope.get("note", ""),
        estimate=fields.flag(raw.get("estimate", False), path, entry, f"{field}.estimate"),
        text=text,
    )


@dataclass(frozen=True)
class Record:
    """One entry of a data file: an id, descriptive fields and its facts."""

    id: str
    name: str
    fields: Mapping[str, str]
    facts: Mapping[str, Fact]


def _records(path: Path, key: str, required: tuple[str, ...],
             zero_ok: frozenset[str] = frozenset(), required_facts: tuple[str, ...] = (),
             entry_sourced: bool = False, keys: tuple[str, ...] | None = None,
             fact_names: tuple[str, ...] | None = None):
    data = files.load_yaml(path)
    shown = files.shown_name(path)
    if not isinstance(data, Mapping) or key not in data:
        raise DataError(shown, "-", key, f"the file must hold a top-level list {key!r}")
    entries = data[key]
    if not isinstance(entries, list):
        raise DataError(shown, "-", key, "expected a list")
    out = {}
    for index, raw in enumerate(entries):
        if not isinstance(raw, Mapping):
            raise DataError(shown, f"#{index}", "-", "expected a mapping")
        ident = raw.get("id")
        if not isinstance(ident, str) or not NAME_PATTERN.match(ident):
            raise DataError(shown, f"#{index}", "id", "missing or not a lower-case identifier")
        if ident in out:
            raise DataError(shown, ident, "id", "duplicate id")
        if keys is not None:  # a file whose entries have a closed set of keys
            fields.known_keys(raw, keys, shown, ident, "-")
        for field in required:
            if not raw.get(field):
                raise DataError(shown, ident, field, "missing")
        facts_raw = raw.get("facts", {})
        if not isinstance(facts_raw, Mapping):
            raise DataError(shown, ident, "facts", "expected a mapping")
        if fact_names is not None:
            fields.known_keys(facts_raw, fact_names, shown, ident, "facts")
        for name in required_facts:
            if name not in facts_raw:
                raise DataError(shown, ident, name, "missing")
        # an entry that states one source and date for all its numbers (a measurement)
        inherited = inherit(raw, {}, shown, ident, "-") if entry_sourced else {}
        facts = {}
        for name, fact in facts_raw.items():
            if not isinstance(name, str) or not NAME_PATTERN.match(name):
                raise DataError(shown, ident, str(name), "fact names are lower-case identifiers")
            facts[name] = read_fact(fact, shown, ident, name, inherited,
                                    positive=name not in zero_ok)
        described = {k: v for k, v in raw.items() if k not in ("facts",)}
        out[ident] = Record(ident, str(raw.get("name", ident)), described, facts)
    return out


@cache
def accelerators() -> Mapping[str, Record]:
    """Accelerators by id."""
    return _records(DATA_DIR / "accelerators.yaml", "accelerators", ("name", "vendor"))


@cache
def models() -> Mapping[str, Record]:
    """Open-weight model configurations by id."""
    from chalk.knowledge.quantities import VARIABLES

    # counts such as n_dense_layers or n_shared_experts are 0 in some models
    zero_ok = frozenset(v.name for v in VARIABLES if v.allow_zero)
    return _records(DATA_DIR / "models.yaml", "models", ("name", "attention"), zero_ok)


@cache
def memory_tiers() -> Mapping[str, Record]:
    """Memory tiers (HBM, host DRAM, flash, disk) by id."""
    return _records(DATA_DIR / "memory_tiers.yaml", "tiers", ("name", "kind"))


MEASUREMENT_METRICS = ("total", "per_chip", "per_user")
# The dimension each fact of a measurement must have (any scale: "8 ms", "0.008 s").
MEASUREMENT_UNITS = {"measured": "token/s", "n_chips": "chip", "input_tokens": "token",
                     "output_tokens": "token", "batch_size": "sequence", "ttft": "s",
                     "tpot": "s", "expert_parallelism": "chip",
                     "attention_tensor_parallelism": "chip"}
# Text as published (engine_version says the release and the benchmark tool) and the
# identifiers that group rows: the engine, and the model, chip and precision presets.
_MEASUREMENT_TEXT = {"name": MAX_NAME, "engine_version": MAX_NAME, "parallelism": MAX_NAME,
                     "note": MAX_SOURCE}
_MEASUREMENT_NAMES = ("engine", "model", "chip", "precision")
_MEASUREMENT_KEYS = ("id", "name", "source", "date", "engine", "engine_version", "parallelism",
                     "model", "chip", "precision", "metric", "speculative", "note", "facts")


def _check_dimension(fact: Fact, wanted: str, shown: str, entry: str, field: str) -> None:
    if fact.quantity().dimensionality != Q_(1, wanted).dimensionality:
        raise DataError(shown, entry, field, f"{fact.text!r} is not in {wanted} (e.g. "
                                             f"'{fact.value:g} {wanted}')")


def serving_measurements(path: Path | str | None = None) -> Mapping[str, Record]:
    """Published serving measurements by id: the conditions and the measured output rate
    (with TTFT and TPOT where published), each number under its entry's source and date.

    Parameters
    ----------
    path : Path or str, optional
        A file of measurements in the shipped format (a user's own); default the shipped
        ``serving_measurements.yaml``. Read the same strict way either way.

    Raises
    ------
    DataError
        Naming the file, the entry and the field at fault.
    """
    return _shipped_measurements() if path is None else _measurements(path)


@cache
def _shipped_measurements() -> Mapping[str, Record]:
    return _measurements(DATA_DIR / "serving_measurements.yaml")


def _measurements(path: Path | str) -> Mapping[str, Record]:
    """The measurements of the file at ``path``, every field checked."""
    shown = files.shown_name(path)
    records = _records(Path(path), "measurements",
                       ("name", "source", "date", "engine", "engine_version", "parallelism",
                        "model", "chip", "precision", "metric"),
                       required_facts=("measured", "n_chips", "input_tokens"),
                       entry_sourced=True, keys=_MEASUREMENT_KEYS,
                       fact_names=tuple(MEASUREMENT_UNITS))
    for ident, record in records.items():
        raw = record.fields
        for key, limit in _MEASUREMENT_TEXT.items():
            if key in raw:  # a bare 0.10 would be read as 0.1: a version is written as text
                fields.text(raw[key], shown, ident, key, limit, numbers=False)
        for key in _MEASUREMENT_NAMES:
            if not isinstance(raw[key], str) or not NAME_PATTERN.match(raw[key]):
                raise DataError(shown, ident, key, f"expected an identifier such as "
                                                   f"'tensorrt_llm', found {raw[key]!r}")
        if raw["metric"] not in MEASUREMENT_METRICS:
            raise DataError(shown, ident, "metric", f"{raw['metric']!r} is not one of "
                                                    f"{', '.join(MEASUREMENT_METRICS)}")
        fields.flag(raw.get("speculative", False), shown, ident, "speculative")
        for name, fact in record.facts.items():
            _check_dimension(fact, MEASUREMENT_UNITS[name], shown, ident, name)
        if "output_tokens" not in record.facts and not raw.get("note"):
            raise DataError(shown, ident, "output_tokens",
                            "missing: give it, or say in a note why the source does not")
    return records
