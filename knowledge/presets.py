"""All presets: conventions, and accelerators and models built from the data files.

An accelerator preset pins the chip's numbers at bf16 (``h100``) or at another
precision (``h100_fp8``, ``b200_fp4``); a model preset pins the architecture
facts that are quantities of the model. Every pinned value keeps the source and
date of the fact it came from.
"""

from __future__ import annotations

import difflib
from functools import lru_cache

from chalk.knowledge import data
from chalk.knowledge.conventions import CONVENTIONS, EQUAL_SPLIT, FITS, LAYOUTS, PRECISIONS
from chalk.symbolic.errors import UnknownNameError, UsageError
from chalk.symbolic.presets import Preset, PresetValue
from chalk.symbolic.printing.numbers import format_number
from chalk.symbolic.units import Q_

# accelerator fact -> quantity it pins directly
_CHIP_FACTS = {
    "hbm_capacity": "hbm_capacity",
    "hbm_bandwidth": "hbm_bandwidth",
    "scale_up_size": "scale_up_size",
    "scale_out_bandwidth": "scale_out_bandwidth",
    "chip_price": "chip_price",
}
_PRECISIONS = ("bf16", "fp8", "fp4")
_SHORT_CHIPS = {"gb200": "gb200_nvl72", "gb300": "gb300_nvl72", "rubin": "rubin_nvl72"}
# the short chip names, alone and with a precision (gb200_fp8 is gb200_nvl72_fp8)
_ALIASES = {**_SHORT_CHIPS,
            **{f"{short}_{p}": f"{full}_{p}" for short, full in _SHORT_CHIPS.items()
               for p in _PRECISIONS[1:]}}


def _value(fact: data.Fact, text: str | None = None, note: str | None = None,
           headline: bool = False) -> PresetValue:
    return PresetValue(
        text or fact.text,
        fact.source,
        fact.date,
        note if note is not None else fact.note,
        fact.estimate,
        headline,
    )


# A model's published sizes are rounded headlines ("235B"); where the preset's
# architecture determines them they give way to it and stay as cross-checks.
_HEADLINES = frozenset({"total_params", "active_params"})


def _accelerator_presets(record: data.Record) -> list[Preset]:
    base = {}
    for fact_name, quantity in _CHIP_FACTS.items():
        if fact_name in record.facts:
            base[quantity] = _value(record.facts[fact_name])
    bidirectional = record.facts.get("scale_up_bandwidth_bidirectional")
    if bidirectional is not None:
        one_way = Q_(bidirectional.value, bidirectional.unit).to("byte/s").magnitude / 2
        base["scale_up_bandwidth"] = _value(
            bidirectional, f"{one_way:.6g} byte/s",
            f"half of the bidirectional {bidirectional.text}"
            + (f"; {bidirectional.note}" if bidirectional.note else ""),
        )
    for precision in _PRECISIONS:  # every peak the datasheet gives, whatever is computed at
        flops = record.facts.get(f"flops_{precision}")
        if flops is not None:
            base[f"chip_flops_{precision}"] = _value(flops)
    presets = []
    for precision in _PRECISIONS:
        flops = record.facts.get(f"flops_{precision}")
        name = record.id if precision == "bf16" else f"{record.id}_{precision}"
        values = dict(base)
        if flops is not None:
            # the peak of the format this preset names: it gives way (as a headline does)
            # to the peak of the format a precision preset states the matmuls run in
            values["chip_flops"] = _value(flops, note=f"{precision} dense, unless a "
                                          "precision preset names another format" +
                                          (f"; {flops.note}" if flops.note else ""),
                                          headline=True)
        elif precision != "bf16":
            continue
        description = f"{record.name}, {precision} compute"
        if flops is None:
            others = [p for p in _PRECISIONS if f"flops_{p}" in record.facts]
            description = (f"{record.name}, no bf16 FLOP/s figure"
                           + (f" (see {record.id}_{others[0]})" if others else ""))
        presets.append(Preset(name, "accelerator", description, values))
    return presets


def _model_preset(record: data.Record, variables) -> Preset:
    values = {}
    for fact_name, fact in record.facts.items():
        if fact_name in variables:
            values[fact_name] = _value(fact, headline=fact_name in _HEADLINES)
    # n_kv_layers follows from n_layers and n_local_layers (architecture.py); a model
    # without sliding-window layers has none, which its attention kind says.
    attention = record.fields.get("attention")
    if "n_local_layers" not in values and "n_layers" in record.facts:
        fact = record.facts["n_layers"]
        values["n_local_layers"] = _value(fact, "0", f"{attention} attention: no sliding-window "
                                          "layers, every layer keeps its own KV cache")
    total = record.facts.get("total_params")
    active = record.facts.get("active_params")
    summary = record.name
    if total is not None and active is not None:
        summary += (f" ({format_number(total.value / 1e9, 3)}B total, "
                    f"{format_number(active.value / 1e9, 3)}B active)")
    return Preset(record.id, "model", summary, values)


@lru_cache(maxsize=1)
def all_presets() -> dict[str, Preset]:
    """Every preset by name."""
    from chalk.knowledge import load_model

    variables = load_model().variables
    presets: dict[str, Preset] = dict(CONVENTIONS)
    presets.update(PRECISIONS)
    presets.update(FITS)
    presets.update(LAYOUTS)
    presets[EQUAL_SPLIT.name] = EQUAL_SPLIT
    for record in data.accelerators().values():
        for preset in _accelerator_presets(record):
            presets[preset.name] = preset
    for record in data.models().values():
        presets[record.id] = _model_preset(record, variables)
    for record in data.memory_tiers().values():
        if record.fields.get("kind") == "hbm":
            continue  # HBM tiers come from the accelerators, priced at their rent
        tier = _tier_preset(record)
        presets[tier.name] = tier
    for record in data.accelerators().values():
        tier = _hbm_tier_preset(record)
        if tier is not None:
            presets[tier.name] = tier
    return presets


AMORTISATION = PresetValue(
    "4 year",
    "assumption: straight-line depreciation over 4 years (hyperscaler server lives are 4-6 "
    "years in their filings)",
    "2026-11-29", "an assumption, not a measurement", estimate=True)


def _tier_preset(record: data.Record) -> Preset:
    values = {}
    for fact_name in ("tier_capacity", "tier_bandwidth"):
        if fact_name in record.facts:
            values[fact_name] = _value(record.facts[fact_name])
    price = record.facts.get("purchase_price_per_gb")
    if price is not None:
        values["tier_price_per_byte"] = _value(price)
        values["amortisation_time"] = AMORTISATION
    kind = record.fields.get("kind", "tier")
    return Preset(f"tier_{record.id}", "tier", f"{kind}: {record.name}", values)


def _hbm_tier_preset(record: data.Record):
    """A chip's HBM as a memory tier, priced at the chip's rental price."""
    needed = ("hbm_capacity", "hbm_bandwidth", "chip_price")
    if not all(n in record.facts for n in needed):
        return None
    values = {
        "tier_capacity": _value(record.facts["hbm_capacity"]),
        "tier_bandwidth": _value(record.facts["hbm_bandwidth"]),
        "tier_price": _value(record.facts["chip_price"],
                             note="the whole chip's rent: HBM cannot be rented alone"),
    }
    return Preset(f"tier_hbm_{record.id}", "tier", f"hbm: {record.name}, priced at the chip's "
                  "rent (lecture 1:55:42-1:56:23)", values)


def chip_preset(chip: str, precision: str) -> Preset:
    """The preset of ``chip`` computing at ``precision``: its ``chip_flops`` is the
    datasheet peak for that number format (``h100`` with ``"fp8"`` gives ``h100_fp8``).

    Parameters
    ----------
    chip : str
        An accelerator id or short name (``"h100"``, ``"gb200"``).
    precision : str
        ``"bf16"``, ``"fp8"`` or ``"fp4"``.

    Raises
    ------
    UnknownNameError
        For a chip or a precision chalk does not know.
    UsageError
        When the chip's datasheet gives no peak for that format (the H100 has no FP4
        peak): naming the formats it has.
    """
    if precision not in _PRECISIONS:
        close = difflib.get_close_matches(precision, _PRECISIONS, n=1, cutoff=0.5)
        raise UnknownNameError(precision, "precision preset", close)
    record_id = _SHORT_CHIPS.get(chip, chip)
    record = data.accelerators().get(record_id)
    if record is None:
        close = difflib.get_close_matches(chip, list(data.accelerators()) + list(_SHORT_CHIPS),
                                          n=3, cutoff=0.6)
        raise UnknownNameError(chip, "preset", close)
    if f"flops_{precision}" not in record.facts:
        has = [p for p in _PRECISIONS if f"flops_{p}" in record.facts]
        raise UsageError(f"{record.name} has no {precision} peak in its datasheet (it has "
                         f"{', '.join(has) or 'none'}); pick one of those or pin chip_flops")
    return preset(record_id if precision == "bf16" else f"{record_id}_{precision}")


def preset(name: str) -> Preset:
    """The preset called ``name``.

    Raises
    ------
    UnknownNameError
        With close matches as suggestions.
    """
    if name in CONVENTIONS:  # no data files needed for the conventions
        return CONVENTIONS[name]
    presets = all_presets()
    name = _ALIASES.get(name, name)
    if name in presets:
        return presets[name]
    close = difflib.get_close_matches(name, list(presets) + list(_ALIASES), n=3, cutoff=0.6)
    raise UnknownNameError(name, "preset", close)
