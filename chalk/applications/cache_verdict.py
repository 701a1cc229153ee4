"""Which memory tier a prompt cache's prices point to, in plain words.

Three prices bear on it (lecture 1:55:42-2:01:25). The storage price per byte-hour
must pay for holding the KV in the tier; the hold time a provider sells is best
matched by a tier whose drain time (capacity over bandwidth) is about as long, where
holding and reading back cost the same; and the cache-read price must pay for reading
the KV back into HBM. Each is tested per tier kind (hbm, dram, flash, disk) against
the tier presets in the data, and the verdict names the kinds that pass all the tests
the sheet's prices allow, then the one the hold time favours.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from chalk.applications.tiers import TierRow
from chalk.symbolic.printing.numbers import format_number
from chalk.symbolic.printing.quantities import format_seconds

KINDS = ("hbm", "dram", "flash", "disk")  # fastest and dearest first
GB = 1e9
MTOKEN = 1e6


@dataclass(frozen=True)
class KindSpan:
    """One tier kind over its presets: the lowest and highest of each figure."""

    kind: str
    cost_per_gb_hour: tuple[float, float]
    drain_time_s: tuple[float, float]
    read_cost_per_mtoken: tuple[float, float]  # USD to read 1M tokens' KV back


@dataclass
class TierVerdict:
    """The tier kinds each price allows, and the verdict that reconciles them."""

    kinds: tuple[str, ...]  # the verdict: kinds consistent with every price given
    favoured: str | None  # the one the hold time (or, without one, the storage price) picks
    lines: list[str] = field(default_factory=list)
    spans: dict[str, KindSpan] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"kinds": list(self.kinds), "favoured": self.favoured, "lines": self.lines,
                "spans": {k: {"cost_per_gb_hour": s.cost_per_gb_hour,
                              "drain_time_s": s.drain_time_s,
                              "read_cost_per_mtoken": s.read_cost_per_mtoken}
                          for k, s in self.spans.items()}}


def kind_spans(tiers: Sequence[TierRow], kv_bytes_per_token: float) -> dict[str, KindSpan]:
    """Each priced tier kind's span of holding cost, drain time and read-back cost.

    Reading a token's KV back occupies the tier's bandwidth for kv/bandwidth seconds, at
    the tier's price per second (its cost per byte-hour times its capacity).
    """
    out = {}
    for kind in KINDS:
        rows = [t for t in tiers if t.kind == kind and math.isfinite(t.cost_per_gb_hour)]
        if not rows:
            continue
        reads = [kv_bytes_per_token / t.bandwidth_bytes_s
                 * t.cost_per_gb_hour * t.capacity_bytes / GB / 3600 * MTOKEN for t in rows]
        costs = [t.cost_per_gb_hour for t in rows]
        drains = [t.drain_time_s for t in rows]
        out[kind] = KindSpan(kind, (min(costs), max(costs)), (min(drains), max(drains)),
                             (min(reads), max(reads)))
    return out


def span_text(span: tuple[float, float], show) -> str:
    """``a to b``, or one value when the ends agree to 1%."""
    low, high = span
    return show(low) if high <= low * 1.01 else f"{show(low)} to {show(high)}"


def _money(x: float) -> str:
    return format_number(x, 3)


def _log_distance(value: float, span: tuple[float, float]) -> float:
    low, high = span
    if low <= value <= high:
        return 0.0
    return min(abs(math.log(value / low)), abs(math.log(value / high)))


def tier_verdict(spans: dict[str, KindSpan], storage_per_gb_hour: float | None,
                 hold_time_s: float | None = None, read_price_per_mtoken: float | None = None,
                 kv_bytes_per_token: float | None = None) -> TierVerdict:
    """Reconcile a cache's storage price, hold time and read price with the tiers.

    Parameters
    ----------
    spans : dict of kind to KindSpan
        From :func:`kind_spans` at the KV bytes per token in force.
    storage_per_gb_hour : float or None
        USD per GB of KV per hour the provider charges (0 for free storage, None if the
        sheet prices no storage).
    hold_time_s : float, optional
        How long a write is held.
    read_price_per_mtoken : float, optional
        The cache-read price, USD per 1M tokens.
    kv_bytes_per_token : float, optional
        Needed with free storage: the provider then pays for holding out of the read
        price, and a tier passes if one read pays for at least ``FREE_HOLD_HOURS`` of it.
    """
    kinds = [k for k in KINDS if k in spans]
    allowed = set(kinds)
    lines = []
    if storage_per_gb_hour:
        paid = [k for k in kinds if spans[k].cost_per_gb_hour[0] <= storage_per_gb_hour]
        costs = ", ".join(f"{k} {span_text(spans[k].cost_per_gb_hour, _money)}"
                          for k in kinds)
        lines.append(f"storage at {_money(storage_per_gb_hour)} USD/GB/hour pays for holding "
                     f"in {_or_none(paid)} (their holding cost in USD/GB/hour: {costs})")
        allowed &= set(paid)
    elif storage_per_gb_hour == 0 and read_price_per_mtoken and kv_bytes_per_token:
        gb_per_mtoken = kv_bytes_per_token * MTOKEN / GB
        hours = {k: read_price_per_mtoken / (gb_per_mtoken * spans[k].cost_per_gb_hour[1])
                 for k in kinds}
        paid = [k for k in kinds if hours[k] >= FREE_HOLD_HOURS]
        shown = ", ".join(f"{k} {format_seconds(3600 * hours[k])}" for k in kinds)
        lines.append(f"storage is free, so holding is paid from the read price: one read "
                     f"pays for holding a token's KV for {shown}; at least "
                     f"{FREE_HOLD_HOURS:g} hour (a cache kept for hours) rules in "
                     f"{_or_none(paid)}")
        allowed &= set(paid)
    if read_price_per_mtoken is not None:
        read_ok = [k for k in kinds
                   if spans[k].read_cost_per_mtoken[0] <= read_price_per_mtoken]
        reads = ", ".join(f"{k} {span_text(spans[k].read_cost_per_mtoken, _money)}"
                          for k in kinds)
        lines.append(f"the cache-read price {_money(read_price_per_mtoken)} USD/Mtoken pays "
                     f"for reading the KV back from {_or_none(read_ok)} (their read cost in "
                     f"USD/Mtoken: {reads})")
        allowed &= set(read_ok)
    if hold_time_s is not None:
        nearest = min(kinds, key=lambda k: (_log_distance(hold_time_s, spans[k].drain_time_s),
                                            KINDS.index(k)))
        inside = _log_distance(hold_time_s, spans[nearest].drain_time_s) == 0
        lines.append(f"a hold of {format_seconds(hold_time_s)} "
                     + ("falls within" if inside else "is nearest")
                     + f" {nearest}'s drain times "
                     f"({span_text(spans[nearest].drain_time_s, format_seconds)}), where holding "
                     "and reading back cost the same")
    verdict = tuple(k for k in kinds if k in allowed)
    favoured = None
    if verdict and hold_time_s is not None:
        favoured = min(verdict, key=lambda k: (_log_distance(hold_time_s,
                                                             spans[k].drain_time_s),
                                               KINDS.index(k)))
    elif len(verdict) == 1:
        favoured = verdict[0]
    lines.append(_verdict_sentence(verdict, favoured, spans, storage_per_gb_hour,
                                   hold_time_s))
    return TierVerdict(verdict, favoured, lines, spans)


FREE_HOLD_HOURS = 1.0


def _or_none(kinds) -> str:
    return ", ".join(kinds) if kinds else "no tier in the data"


def _verdict_sentence(verdict, favoured, spans, storage, hold) -> str:
    if not verdict:
        return ("verdict: no tier in the data fits every price; the prices are not set from "
                "the cost of any one tier")
    if favoured is None:
        text = f"verdict: {' or '.join(verdict)}: the prices allow each"
        if storage:
            margin = storage / spans[verdict[0]].cost_per_gb_hour[1]
            text += (f"; storage is priced at {format_number(margin, 3)} times even "
                     f"{verdict[0]}'s holding "
                     "cost, so the price is not set from any one tier's cost")
        return text + "; a hold time would choose between them"
    text = f"verdict: {favoured}"
    if len(verdict) > 1:
        text += f" (the prices allow {', '.join(verdict)}; the hold time matches its drain " \
                "time best)"
    elif hold is not None:
        text += " (the only tier every price allows)"
    else:
        text += " (the only tier every price allows)"
    if storage and favoured is not None:
        margin = storage / spans[favoured].cost_per_gb_hour[1]
        if margin > 10:
            text += (f"; the storage price is {format_number(margin, 3)} times {favoured}'s "
                     "holding cost, so it is a margin (or pays for the write itself), not the "
                     "cost of holding")
    return text
