"""What a fit is asked to do: observations, unknowns with priors, subjects, pins.

Read from a TOML file (:func:`load_spec`) or from the same structure as Python
mappings (:func:`read_spec`); docs/FIT.md documents every key. Everything is checked
here, before any number is computed: quantity names against the model, values and
spreads by chalk's restricted parser, subject ids and labels against the strict
identifier pattern. User text is only ever looked up or parsed, never turned into a
symbol (subjects key dictionaries; the relations keep their own symbols).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from chalk.knowledge import fields, files
from chalk.solvers.pinning.pins import read_spread, read_value
from chalk.symbolic.errors import ChalkError, DataError
from chalk.symbolic.model import Model
from chalk.symbolic.parsing import looks_uncertain
from chalk.symbolic.symbols import NAME_PATTERN
from chalk.symbolic.uncertain import Spread

LOSSES = ("linear", "soft_l1", "huber", "cauchy")
ALL = "all"  # one parameter shared by every subject
SUBJECT = "subject"  # one parameter per subject
_TOP = {"title", "presets", "pins", "unknowns", "subjects", "observations", "loss",
        "outlier_z", "scale_by_dispersion"}
_SUBJECT_KEYS = {"presets", "pins", "labels"}
_OBSERVATION_KEYS = {"quantity", "value", "subject", "source", "date", "note"}
_UNKNOWN_KEYS = {"prior", "per"}
MAX_ITEMS = 5000  # unknown quantities: more is a mistake, not a fit (observations and
# subjects are limited only by the fit's measured cost, estimate.refuse_too_large)


@dataclass(frozen=True)
class Observation:
    """One observed value with its uncertainty.

    ``value`` is the central value in base units; ``log_sd`` the standard deviation of
    its natural log (:attr:`Spread.log_sd` of the spread as written).
    """

    index: int
    quantity: str
    subject: str
    value: float
    log_sd: float
    text: str
    source: str = ""
    date: str = ""


@dataclass(frozen=True)
class Unknown:
    """A quantity to estimate, its prior, and how it is shared across subjects.

    ``per`` is ``"all"`` (one value for every subject), ``"subject"`` (one per subject)
    or a label key (one per value of that label, e.g. one per ``chip``).
    """

    quantity: str
    prior: Spread
    per: str = ALL


@dataclass(frozen=True)
class Subject:
    """A provider, model or chip the relations are instantiated for."""

    name: str
    presets: tuple[str, ...] = ()
    pins: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FitSpec:
    """A checked fit: every name canonical, every value in base units."""

    title: str
    presets: tuple[str, ...]
    pins: Mapping[str, str]
    unknowns: tuple[Unknown, ...]
    subjects: tuple[Subject, ...]
    observations: tuple[Observation, ...]
    loss: str = "linear"
    outlier_z: float = 3.0
    scale_by_dispersion: bool = False


def load_spec(path: str | Path, model: Model) -> FitSpec:
    """Read and check a fit file (TOML)."""
    raw = files.load_toml(path, "file not found; give the path of a fit file (TOML, see "
                               "docs/FIT.md)")
    return read_spec(raw, model, files.shown_name(path))


def read_spec(raw: Mapping, model: Model, shown: str = "fit") -> FitSpec:
    """Check a fit given as mappings (the structure of the TOML file)."""
    if not isinstance(raw, Mapping):
        raise DataError(shown, "-", "-", "expected a table of fit settings")
    unknown = set(raw) - _TOP
    if unknown:
        raise DataError(shown, "-", sorted(unknown)[0][:40], "unknown key (expected one of "
                        f"{', '.join(sorted(_TOP))})")
    title = raw.get("title", "")
    if not isinstance(title, str) or len(title) > 400:
        raise DataError(shown, "-", "title", "expected text")
    loss = raw.get("loss", "linear")
    if loss not in LOSSES:
        raise DataError(shown, "-", "loss", f"expected one of {', '.join(LOSSES)}")
    outlier_z = raw.get("outlier_z", 3.0)
    if isinstance(outlier_z, bool) or not isinstance(outlier_z, (int, float)) \
            or not 1 <= outlier_z <= 20:
        raise DataError(shown, "-", "outlier_z", "expected a number from 1 to 20")
    scale = raw.get("scale_by_dispersion", False)
    if not isinstance(scale, bool):
        raise DataError(shown, "-", "scale_by_dispersion", "expected true or false")
    presets = _names(raw.get("presets", []), shown, "-", "presets")
    pins = _pins(raw.get("pins", {}), model, shown, "-")
    subjects = _subjects(raw.get("subjects", {}), model, shown)
    unknowns = _unknowns(raw.get("unknowns", {}), model, subjects, shown)
    observations = _observations(raw.get("observations", []), model, subjects, shown)
    fixed = set(pins) | {n for s in subjects for n in s.pins}
    for u in unknowns:
        if u.quantity in fixed:
            raise DataError(shown, "unknowns", u.quantity, "also pinned; a quantity is either "
                            "pinned or estimated")
    by_name = {s.name: s for s in subjects}
    for o in observations:
        if o.quantity in pins or o.quantity in by_name.get(o.subject, Subject("")).pins:
            raise DataError(shown, f"observations[{o.index}]", "quantity",
                            f"{o.quantity} is pinned; make it an unknown to fit it")
    return FitSpec(title, presets, pins, unknowns, subjects, observations, loss,
                   float(outlier_z), scale)


def _identifier(text, shown, entry, key) -> str:
    if not isinstance(text, str) or not NAME_PATTERN.match(text) or "__" in text:
        raise DataError(shown, entry, key, f"{str(text)[:40]!r} is not a plain lower-case "
                        "identifier (letters, digits, _; starting with a letter)")
    return text


def _names(items, shown, entry, key) -> tuple[str, ...]:
    if isinstance(items, str):
        items = [items]
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise DataError(shown, entry, key, "expected a list of preset names")
    return tuple(items)


def _pins(items, model: Model, shown: str, entry: str) -> dict[str, str]:
    if not isinstance(items, Mapping):
        raise DataError(shown, entry, "pins", "expected a table of NAME = \"VALUE UNIT\"")
    pins, written = {}, {}
    for name, text in items.items():
        if not isinstance(text, str):
            raise DataError(shown, entry, f"pins.{name}", "expected \"VALUE UNIT\" as text")
        try:
            variable = model.variable(name)
            read_value(variable, text)
        except ChalkError as exc:
            raise DataError(shown, entry, f"pins.{name}", exc.message) from None
        if variable.name in pins:  # an alias and its name, as solve and report refuse
            raise DataError(shown, entry, f"pins.{name}", f"{variable.name} is pinned twice "
                            f"(as {written[variable.name]} and {name}); give it once")
        pins[variable.name], written[variable.name] = text, name
    return pins


def _subjects(items, model: Model, shown: str) -> tuple[Subject, ...]:
    if not isinstance(items, Mapping):
        raise DataError(shown, "subjects", "-", "expected [subjects.NAME] tables")
    subjects = []
    for name, body in items.items():
        entry = f"subjects.{str(name)[:40]}"
        _identifier(name, shown, entry, "-")
        if not isinstance(body, Mapping):
            raise DataError(shown, entry, "-", "expected a table")
        extra = set(body) - _SUBJECT_KEYS
        if extra:
            raise DataError(shown, entry, sorted(extra)[0][:40], "unknown key (expected presets, "
                            "pins, labels)")
        labels = body.get("labels", {})
        if not isinstance(labels, Mapping):
            raise DataError(shown, entry, "labels", "expected a table of KEY = \"VALUE\"")
        for key, value in labels.items():
            _identifier(key, shown, entry, "labels")
            _identifier(value, shown, entry, f"labels.{key}")
            if key in (ALL, SUBJECT):
                raise DataError(shown, entry, f"labels.{key}", "reserved word; pick another "
                                "label")
        subjects.append(Subject(name, _names(body.get("presets", []), shown, entry, "presets"),
                                _pins(body.get("pins", {}), model, shown, entry),
                                dict(labels)))
    return tuple(subjects)


def _unknowns(items, model: Model, subjects, shown: str) -> tuple[Unknown, ...]:
    if not isinstance(items, Mapping) or not items:
        raise DataError(shown, "unknowns", "-", "name at least one unknown: NAME = \"LOW..HIGH "
                        "UNIT\" (or { prior = ..., per = ... })")
    if len(items) > MAX_ITEMS:
        raise DataError(shown, "unknowns", "-", f"more than {MAX_ITEMS} unknowns")
    out, seen = [], set()
    for name, body in items.items():
        field_ = f"unknowns.{str(name)[:60]}"
        if isinstance(body, str):
            body = {"prior": body}
        if not isinstance(body, Mapping) or "prior" not in body:
            raise DataError(shown, "unknowns", field_, "expected a prior: \"LOW..HIGH UNIT\" "
                            "or a distribution")
        extra = set(body) - _UNKNOWN_KEYS
        if extra:
            raise DataError(shown, "unknowns", f"{field_}.{sorted(extra)[0][:40]}", "unknown key "
                            "(expected prior, per)")
        try:
            variable = model.variable(name)
            prior_text = body["prior"]
            if not isinstance(prior_text, str) or not looks_uncertain(prior_text):
                raise DataError(shown, "unknowns", field_, "the prior must be a range or a "
                                "distribution, e.g. \"1e3..1e6 byte/token\"")
            prior = read_spread(variable, prior_text)
        except DataError:
            raise
        except ChalkError as exc:
            raise DataError(shown, "unknowns", field_, exc.message) from None
        if prior.bounds()[0] <= 0:
            raise DataError(shown, "unknowns", field_, "the fit works in logarithms, so the "
                            "prior must stay above zero (use a range or lognormal)")
        per = body.get("per", ALL)
        if per not in (ALL, SUBJECT):
            _identifier(per, shown, "unknowns", f"{field_}.per")
            missing = [s.name for s in subjects if per not in s.labels]
            if missing or not subjects:
                raise DataError(shown, "unknowns", f"{field_}.per", f"one per {per!r} needs "
                                f"every subject to have labels.{per}"
                                + (f" ({missing[0]} has none)" if missing else ""))
        elif per == SUBJECT and not subjects:
            raise DataError(shown, "unknowns", f"{field_}.per", "one per subject needs "
                            "[subjects.NAME] tables")
        if variable.name in seen:
            raise DataError(shown, "unknowns", field_, "named twice")
        seen.add(variable.name)
        out.append(Unknown(variable.name, prior, per))
    return tuple(out)


def _observations(items, model: Model, subjects, shown: str) -> tuple[Observation, ...]:
    if not isinstance(items, list) or not items:
        raise DataError(shown, "observations", "-", "give at least one [[observations]] "
                        "with quantity and value")
    names = [s.name for s in subjects]
    declared = set(names)
    out = []
    for index, body in enumerate(items):
        entry = f"observations[{index}]"
        if not isinstance(body, Mapping):
            raise DataError(shown, entry, "-", "expected a table")
        extra = set(body) - _OBSERVATION_KEYS
        if extra:
            raise DataError(shown, entry, sorted(extra)[0][:40], "unknown key (expected "
                            f"{', '.join(sorted(_OBSERVATION_KEYS))})")
        for key in ("quantity", "value"):
            if not isinstance(body.get(key), str):
                raise DataError(shown, entry, key, "missing")
        for key in ("source", "date", "note", "subject"):
            if key in body:
                fields.text_or_date(key, body[key], shown, entry, key, 400, numbers=False)
        subject = body.get("subject", "")
        if subject and subject not in declared:
            raise DataError(shown, entry, "subject", f"{subject[:40]!r} is not a declared "
                            "subject" + (f" (one of {', '.join(names[:8])})" if names
                                         else "; declare it as [subjects.NAME]"))
        if names and not subject:
            raise DataError(shown, entry, "subject", f"missing; name one of "
                            f"{', '.join(names[:8])}")
        text = body["value"]
        try:
            variable = model.variable(body["quantity"])
            if not looks_uncertain(text):
                raise DataError(shown, entry, "value", "give its uncertainty, e.g. \"200k "
                                "token ±10%\" or \"lognormal(200k token, 0.1)\"")
            spread = read_spread(variable, text)
        except DataError:
            raise
        except ChalkError as exc:
            raise DataError(shown, entry, "value", exc.message) from None
        if spread.nominal <= 0 or not math.isfinite(spread.log_sd) or spread.log_sd <= 0:
            raise DataError(shown, entry, "value", "the fit compares logarithms, so the value "
                            "must be above zero with a non-zero spread")
        out.append(Observation(index, variable.name, subject, spread.nominal, spread.log_sd,
                               text.strip(), body.get("source", ""), body.get("date", "")))
    return tuple(out)
