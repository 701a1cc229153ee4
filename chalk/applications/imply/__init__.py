"""``chalk imply``: everything a price sheet implies, with the assumptions it needed.

Each deduction is an ordinary solve whose pins come from the sheet, from the user's
pins and presets, and, where neither says, from a stated default (the lecture's 100B
active parameters, its 300 FLOP/byte, an H100 for costs). A sheet for an open-weight
model names its model preset, which is used unless another model preset is given.
What the prices imply leads; where the user's pins or presets give the same quantity
another way, that value is shown beside it as a cross-check with the gap between
them. Deductions the sheet cannot support are listed with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from chalk.applications.imply.cache import (
    Holding,
    KvSource,
    cache_deductions,
    cache_read_deductions,
    headline_holding,
    holdings,
    kv_source,
)
from chalk.applications.imply.context import KV_FROM_STEP, Context, in_unit
from chalk.applications.imply.prices import (
    batch_deductions,
    decode_deduction,
    fast_deductions,
    floor_deduction,
    long_context_deductions,
)
from chalk.applications.imply.results import Deduction, Implication, central, central_text
from chalk.knowledge.price_sheets import PriceSheet, price_sheet

__all__ = ["Deduction", "Holding", "Implication", "KV_FROM_STEP", "KvSource", "central",
           "central_text", "headline_holding", "holdings", "imply", "in_unit"]


def imply(sheet: str | PriceSheet, given: Iterable[str] | Mapping[str, object] = (),
          presets=()) -> Implication:
    """Run every deduction the sheet's fields allow.

    Parameters
    ----------
    sheet : str or PriceSheet
        A shipped sheet id (``chalk list sheets``), a YAML file, or a loaded sheet.
    given : mapping or iterable of "NAME=VALUE UNIT"
        Pins used in every deduction; one for a quantity a deduction derives becomes
        that deduction's cross-check.
    presets : str or sequence of str
        Conventions, accelerator, precision and model presets.

    Returns
    -------
    Implication
    """
    sheet = price_sheet(sheet) if isinstance(sheet, str) else sheet
    ctx = Context(sheet, given, presets)
    deductions = [*long_context_deductions(ctx), decode_deduction(ctx)]
    kv = kv_source(ctx, deductions[0])
    deductions.extend(cache_deductions(ctx, kv))
    floor = floor_deduction(ctx)  # first: it states the chip assumption the cache reads share
    deductions.extend(cache_read_deductions(ctx))
    deductions.append(floor)
    deductions.extend(batch_deductions(ctx))
    deductions.extend(fast_deductions(ctx))
    return Implication(sheet, ctx.assumptions, deductions)
