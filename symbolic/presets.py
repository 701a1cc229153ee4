"""Presets: named bundles of pins, each value with its source and date."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PresetValue:
    """One pinned value of a preset, written as text for the restricted parser."""

    text: str
    source: str
    date: str
    note: str = ""
    estimate: bool = False
    # a published, rounded figure ("235B") that the preset's other values may determine
    # more exactly: it gives way to them and is shown beside them as a cross-check
    headline: bool = False
    # quantities that, stated, give the headline's value though it feeds them: a layout
    # said either way (attention groups, or the chips of one), not a measurement of it
    gives_way_to: tuple[str, ...] = ()


@dataclass(frozen=True)
class Preset:
    """A named set of pins.

    Parameters
    ----------
    name : str
        What users type after ``--preset``.
    kind : str
        ``"conventions"`` (exactly one applies; ``careful`` unless another is
        named), ``"accelerator"``, ``"model"``, ``"tier"`` or ``"prices"``.
    description : str
        One line.
    values : mapping of quantity name to PresetValue
    """

    name: str
    kind: str
    description: str
    values: Mapping[str, PresetValue] = field(default_factory=dict)
