"""The cache deductions: what the sheet's prompt-cache storage, write and read prices
say about the memory tier the KV is kept in, and where the KV size they need comes from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from chalk.applications.cache_verdict import TierVerdict, kind_spans, tier_verdict
from chalk.applications.imply.context import KV_FROM_STEP, Context, in_unit, price_pin
from chalk.applications.imply.results import Deduction, central, central_text
from chalk.knowledge.price_sheets import CacheWrite, PriceSheet


@dataclass(frozen=True)
class KvSource:
    """Where the cache deductions get the KV bytes per token from.

    Attributes
    ----------
    pins : dict
        What a cache deduction adds to its own pins to derive the KV size in the same
        solve (the long-context step's pins), so a range behind it carries through;
        empty when the user's pins and presets give the size.
    origin : str
        Where the size comes from, as printed (a preset's name, ``given``, or the step).
    """

    pins: Mapping[str, str]
    origin: str


def kv_source(ctx: Context, kv_deduction: Deduction) -> KvSource | None:
    """The user's pins or presets first (a model's architecture knows its KV better than
    a price step guesses it), else the long-context price step; None without either."""
    known = ctx.known("kv_bytes_per_token")
    if known is not None:
        _, _, behind = known
        return KvSource({}, ", ".join(sorted({ctx.pinned[n].preset or "given"
                                               for n in behind})))
    if kv_deduction.solution is not None:
        return KvSource(kv_deduction.pins, KV_FROM_STEP)
    return None


@dataclass(frozen=True)
class Holding:
    """One way a sheet charges for keeping KV in its prompt cache.

    Attributes
    ----------
    short : str
        A label for a table cell (``storage``, ``5 min write``).
    basis : str
        The price it comes from, in words, with the price itself.
    pins : dict
        The sheet's prices as pins for the cache deduction.
    hold_s : float or None
        The hold time a write buys, in seconds (None for a storage price).
    write : CacheWrite or None
        The write it comes from (None for a storage price).
    """

    short: str
    basis: str
    pins: Mapping[str, str]
    hold_s: float | None
    write: CacheWrite | None = None


def holdings(sheet: PriceSheet) -> list[Holding]:
    """The sheet's storage price (if it charges one) and each cache write, in that order,
    the writes shortest hold first."""
    out = []
    storage = sheet.prices.get("cache_storage")
    if storage is not None and storage.value > 0:
        out.append(Holding("storage", f"the storage price, {storage.text}",
                           {"cache_storage_price": price_pin(storage)}, None))
    input_ = sheet.prices["input"]
    for write in sorted(sheet.cache_writes, key=lambda w: in_unit(w.hold_time, "s")):
        hold = write.hold_time.text
        out.append(Holding(
            f"{hold} write",
            f"the {hold} write, {write.price.text}, less the input price {input_.text}, "
            f"spread over {hold}",
            {"price_cache_write": price_pin(write.price), "price_input": price_pin(input_),
             "cache_hold_time": price_pin(write.hold_time)},
            in_unit(write.hold_time, "s"), write))
    return out


def headline_holding(sheet: PriceSheet) -> Holding | None:
    """The holding a one-column table shows (``imply`` over several sheets, ``atlas``):
    the storage price if the sheet charges one, else its shortest-hold write, the cache a
    request gets unless it asks for longer."""
    found = holdings(sheet)
    return found[0] if found else None


def cache_deductions(ctx: Context, kv: KvSource | None) -> list[Deduction]:
    from chalk.applications.tiers import tier_table

    sheet = ctx.sheet
    title = "Prompt-cache prices and the memory tier they point to"
    storage = sheet.prices.get("cache_storage")
    read = sheet.prices.get("cache_read")
    read_price = in_unit(read, "USD/Mtoken") if read is not None else None
    priced = holdings(sheet)
    if not priced and storage is None and read is None:
        return [Deduction("cache", title, ("cache_price_per_byte_hour",),
                          skipped="the sheet prices no cache storage, writes or reads")]
    if kv is None:
        return [Deduction("cache", title, ("kv_bytes_per_token",),
                          skipped="needs KV bytes per token: pin kv_bytes_per_token, use a "
                                  "model preset, or use a sheet with a long-context tier")]

    def kv_line(s):
        return f"KV bytes per token: {central_text(s, 'kv_bytes_per_token')} from {kv.origin}"

    if not priced:
        # free storage, or none priced (a read discount alone): the reads are the evidence
        free = storage is not None
        label = "free storage" if free else "read price only"

        def explain_reads(s):
            size = central(s, "kv_bytes_per_token", "byte/token")
            verdict = tier_verdict(kind_spans(tier_table(), size), 0.0 if free else None,
                                   None, read_price, size)
            explain_reads.verdict = verdict
            lines = [kv_line(s)]
            if not free:
                lines.append("the sheet charges no storage and no write premium: only the "
                             f"cache-read price {read.text} bears on the tier")
            return [*lines, *verdict.lines]

        d = ctx.run("cache", f"{title} ({label})", ["kv_bytes_per_token"], dict(kv.pins),
                    explain=explain_reads, compare=False)
        if d.solution is not None:
            d.details["verdict"] = explain_reads.verdict.to_dict()
            d.details["holding"] = label
            d.details["kv_from"] = kv.origin
        return [d]
    out = []
    for holding in priced:
        targets = ["kv_bytes_per_token", "cache_price_per_byte_hour"]
        if "cache_storage_price" not in holding.pins:
            targets.insert(1, "cache_storage_price")

        def explain(s, holding=holding):
            size = central(s, "kv_bytes_per_token", "byte/token")
            price = central(s, "cache_price_per_byte_hour", "USD/GB/hour")
            verdict: TierVerdict = tier_verdict(kind_spans(tier_table(), size), price,
                                                holding.hold_s, read_price, size)
            explain.verdict = verdict
            return [f"priced from {holding.basis}", kv_line(s), *verdict.lines]

        d = ctx.run("cache", f"{title} ({holding.short})", targets,
                    {**holding.pins, **kv.pins}, explain=explain, compare=False)
        if d.solution is not None:
            d.details["verdict"] = explain.verdict.to_dict()
            d.details["holding"] = holding.short
            d.details["priced_from"] = holding.basis
            d.details["kv_from"] = kv.origin
        out.append(d)
    return out


def cache_read_deductions(ctx: Context) -> list[Deduction]:
    """What the cache-read price says against recomputing the cached prefix."""
    sheet = ctx.sheet
    read = sheet.prices.get("cache_read")
    if read is None:
        return []
    input_ = sheet.prices["input"]

    def explain(s):
        remat = central(s, "remat_cost_per_token", "USD/token")
        ratio = in_unit(read, "USD/token") / remat
        discount = in_unit(read, "USD/token") / in_unit(input_, "USD/token")
        lines = [f"the cache-read price {read.text} is {discount:.3g} times the input price "
                 f"{input_.text}, and {ratio:.3g} times what recomputing the KV costs at the "
                 "floor"]
        if ratio < 1:
            lines.append("below the cost of recomputing: the provider must keep the KV and "
                         "read it back (recomputing would cost more than the read earns), "
                         "or sell reads below cost")
        else:
            lines.append("at or above the cost of recomputing: the read price would pay for "
                         "recomputing the prefix as well as for keeping it")
        return lines

    return [ctx.run("read", "Cache reads: the read price against recomputing the prefix",
                    ["remat_cost_per_token"], {}, extra_presets=ctx.chip_presets,
                    explain=explain, compare=False)]

