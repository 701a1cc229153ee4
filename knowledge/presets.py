"""All presets: conventions, and accelerators and models built from the data files.

An accelerator preset pins the chip's numbers at bf16 (``h100``) or at another
precision (``h100_fp8``, ``b200_fp4``); a model preset pins the architecture
facts that are quantities of the model. Every pinned value keeps the source and
date of the fact it came from.
"""

from __future__ import annotations

import difflib
from functools import lru_cache

from knowledge import data
from knowledge.conventions import CONVENTIONS
from symbolic.errors import UnknownNameError
from symbolic.presets import Preset, PresetValue
from symbolic.units import Q_, format_number

# accelerator fact -> quantity it pins directly
_CHIP_FACTS = {
    "hbm_capacity": "hbm_capacity",
    "hbm_bandwidth": "hbm_bandwidth",
    "scale_up_size": "scale_up_size",
    "scale_out_bandwidth": "scale_out_bandwidth",
    "chip_price": "chip_price",
}
_PRECISIONS = ("bf16", "fp8", "fp4")
_ALIASES = {"gb200": "gb200_nvl72", "gb300": "gb300_nvl72", "rubin": "rubin_nvl72"}


def _value(fact: data.Fact, text: str | None = None, note: str | None = None) -> PresetValue:
    return PresetValue(
        text or fact.text,
        fact.source,
        fact.date,
        note if note is not None else fact.note,
        fact.estimate,
    )


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
    presets = []
    for precision in _PRECISIONS:
        flops = record.facts.get(f"flops_{precision}")
        name = record.id if precision == "bf16" else f"{record.id}_{precision}"
        values = dict(base)
        if flops is not None:
            values["chip_flops"] = _value(flops, note=f"{precision} dense" +
                                          (f"; {flops.note}" if flops.note else ""))
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
            values[fact_name] = _value(fact)
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
    from knowledge import load_model

    variables = load_model().variables
    presets: dict[str, Preset] = dict(CONVENTIONS)
    for record in data.accelerators().values():
        for preset in _accelerator_presets(record):
            presets[preset.name] = preset
    for record in data.models().values():
        presets[record.id] = _model_preset(record, variables)
    return presets


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
