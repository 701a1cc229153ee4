"""Memory tiers side by side: drain time and holding cost of every tier preset."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from symbolic.errors import UnderdeterminedError


@dataclass(frozen=True)
class TierRow:
    name: str
    kind: str
    drain_time_s: float
    cost_per_gb_hour: float
    capacity_bytes: float
    bandwidth_bytes_s: float


@lru_cache(maxsize=1)
def tier_table() -> tuple[TierRow, ...]:
    """Every tier preset solved for its drain time and cost per GB-hour."""
    from knowledge.presets import all_presets
    from solvers.api import solve

    rows = []
    for preset in all_presets().values():
        if preset.kind != "tier":
            continue
        kind = preset.description.split(":", 1)[0]
        drain = solve("tier_drain_time", presets=[preset])
        try:
            cost = solve("tier_cost_per_byte_hour", presets=[preset]).value(
                "tier_cost_per_byte_hour", "USD/GB/hour")
        except UnderdeterminedError:
            cost = math.nan  # no price in the data for this tier
        rows.append(TierRow(preset.name, kind, drain.value("tier_drain_time", "s"), cost,
                            drain.value("tier_capacity", "byte"),
                            drain.value("tier_bandwidth", "byte/s")))
    return tuple(sorted(rows, key=lambda r: r.drain_time_s))
