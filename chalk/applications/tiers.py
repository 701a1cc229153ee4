"""Memory tiers side by side: drain time and holding cost of every tier preset."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from chalk.symbolic.errors import UnderdeterminedError
from chalk.symbolic.printing.quantities import format_quantity, format_seconds
from chalk.symbolic.printing.readable import Readable
from chalk.symbolic.units import ureg


@dataclass(frozen=True)
class TierRow:
    """One memory tier: plain numbers in the units their names say, and the same numbers
    as pint Quantities (``drain_time``, ``price``, ``capacity``, ``bandwidth``)."""

    name: str
    kind: str
    drain_time_s: float
    cost_per_gb_hour: float
    capacity_bytes: float
    bandwidth_bytes_s: float

    @property
    def drain_time(self):
        return ureg.Quantity(self.drain_time_s, "s")

    @property
    def price(self):
        """USD per GB per hour held (NaN where the data has no price)."""
        return ureg.Quantity(self.cost_per_gb_hour, "USD/GB/hour")

    @property
    def capacity(self):
        return ureg.Quantity(self.capacity_bytes, "byte")

    @property
    def bandwidth(self):
        return ureg.Quantity(self.bandwidth_bytes_s, "byte/s")

    def cells(self) -> tuple[str, ...]:
        """The row as printed: name, kind, capacity, bandwidth, drain time, price."""
        price = ("no price in the data" if math.isnan(self.cost_per_gb_hour)
                 else format_quantity(self.cost_per_gb_hour, ureg.Unit("USD/GB/hour")))
        return (self.name, self.kind, format_quantity(self.capacity_bytes, ureg.byte),
                format_quantity(self.bandwidth_bytes_s, ureg.Unit("byte/s")),
                format_seconds(self.drain_time_s), price)


_HEADINGS = ("tier", "kind", "capacity", "bandwidth", "drain time", "price")


class TierTable(tuple):
    """The memory tiers, fastest to drain first: a tuple of :class:`TierRow` that prints
    as a table (``text()``, and a Markdown table in a notebook)."""

    def text(self) -> str:
        rows = [_HEADINGS, *(row.cells() for row in self)]
        widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADINGS))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                         for r in rows)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        if not self:
            return "<TierTable: no tiers>"
        first, last = self[0], self[-1]
        return (f"<TierTable: {len(self)} tiers, {first.name} (drains in "
                f"{format_seconds(first.drain_time_s)}) to {last.name} "
                f"({format_seconds(last.drain_time_s)}); .text() prints them>")

    def _repr_markdown_(self) -> str:
        lines = ["| " + " | ".join(_HEADINGS) + " |", "|" + "---|" * len(_HEADINGS)]
        lines += ["| " + " | ".join(row.cells()) + " |" for row in self]
        return "\n".join(lines)


@lru_cache(maxsize=1)
def tier_table() -> TierTable:
    """Every memory-tier preset with its drain time and holding price.

    Returns
    -------
    TierTable
        A tuple of TierRow sorted by drain time, printable as a table; each row has
        ``name``, ``kind`` (hbm, dram, flash, disk), ``drain_time_s`` (capacity over
        bandwidth, s), ``cost_per_gb_hour`` (USD, NaN where the data has no price),
        ``capacity_bytes`` and ``bandwidth_bytes_s``, and the same numbers as
        Quantities (``drain_time``, ``price``, ``capacity``, ``bandwidth``).
    """
    from chalk.api import solve
    from chalk.knowledge.presets import all_presets

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
    return TierTable(sorted(rows, key=lambda r: r.drain_time_s))


@dataclass(repr=False)
class TierCosts(Readable):
    """Cost of keeping one token's KV for each hold time, per tier, and where the
    cheapest option changes."""

    hold_times: np.ndarray  # seconds
    costs: dict[str, np.ndarray]  # option -> USD per token
    cheapest: list[str]
    crossovers: list[tuple[float, str, str]]  # (hold time s, cheaper before, cheaper after)
    kv_bytes_per_token: float

    def text(self, marks: tuple[float, ...] = (300.0, 3600.0)) -> str:
        lines = [f"KV bytes per token: {self.kv_bytes_per_token:,.0f}"]
        lines.append("cheapest option changes at:")
        for t, before, after in self.crossovers:
            lines.append(f"  hold {format_seconds(t)}: {before} -> {after}")
        for mark in marks:
            i = int(np.argmin(np.abs(np.log(self.hold_times / mark))))
            lines.append(f"at {format_seconds(mark)} the cheapest is {self.cheapest[i]}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"kv_bytes_per_token": self.kv_bytes_per_token,
                "crossovers": [{"hold_time_s": t, "from": a, "to": b}
                               for t, a, b in self.crossovers]}


def tier_costs(kv_bytes_per_token: str, tiers: list[str] | None = None,
               remat: dict | None = None, low: float = 1.0, high: float = 30 * 86400.0,
               points: int = 400, presets=()) -> TierCosts:
    """What keeping one token's KV and reading it back costs on each tier, by hold time.

    Parameters
    ----------
    kv_bytes_per_token : str
        The KV size as value text (``"1667 byte/token"``).
    tiers : list of str, optional
        Tier preset names (default: every tier with a price in the data).
    remat : dict, optional
        Pins for ``remat_cost_per_token`` (active params, chip FLOP/s and price), with
        ``presets``: adds recomputing the KV, whose cost does not depend on the hold time.
    low, high : float
        The hold times considered, in seconds.
    points : int
        Grid points between them (geometric).
    presets : sequence, optional
        Presets for the recompute option (a chip and a model supply its pins).

    Returns
    -------
    TierCosts
        ``hold_times`` (s), ``costs[option]`` (USD/token per hold time), the
        ``cheapest`` option per hold time and ``crossovers``, each (hold time in s,
        cheaper before, cheaper after); ``text()`` prints them.
    """
    from scipy.optimize import brentq

    from chalk.api import solve
    from chalk.applications.sweep import sweep
    from chalk.knowledge import load_model
    from chalk.knowledge.presets import all_presets, preset
    from chalk.solvers.pinning.pins import read_value

    if tiers is None:
        tiers = [p.name for p in all_presets().values() if p.kind == "tier"]
    holds = np.geomspace(low, high, points)
    curves = {}
    for name in tiers:
        try:
            table = sweep("tier_cost_per_token", "hold_time", f"{low} s", f"{high} s", points,
                          log=True, given={"kv_bytes_per_token": kv_bytes_per_token},
                          presets=[preset(name)])
        except UnderdeterminedError:
            continue  # a tier without a price in the data
        curves[name] = table.y_values["tier_cost_per_token"]
    if remat is not None:
        value = solve("remat_cost_per_token", given=remat, presets=presets).value(
            "remat_cost_per_token")
        curves["recompute"] = np.full(points, value)
    names = list(curves)
    stacked = np.vstack([curves[n] for n in names])
    best = [names[i] for i in np.argmin(stacked, axis=0)]

    def fit(option):
        if option == "recompute":
            return lambda t: curves["recompute"][0]
        cost = curves[option]
        slope = (cost[-1] - cost[0]) / (holds[-1] - holds[0])  # linear in hold time
        intercept = cost[0] - slope * holds[0]
        return lambda t: intercept + slope * t

    crossovers = []
    for i in range(1, points):
        if best[i] != best[i - 1]:
            before, after = fit(best[i - 1]), fit(best[i])
            t = brentq(lambda x, b=before, a=after: b(x) - a(x), holds[i - 1], holds[i])
            crossovers.append((t, best[i - 1], best[i]))
    kv_base, _ = read_value(load_model().variable("kv_bytes_per_token"), kv_bytes_per_token)
    return TierCosts(holds, curves, best, crossovers, kv_base)
