"""Several price sheets side by side: :func:`compare` runs :func:`imply` on each and
lays the answers out as one table across providers, and :func:`implied_tier_figure`
draws their cache prices against the tiers' holding costs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chalk.applications.cache_verdict import kind_spans
from chalk.applications.imply import (
    KV_FROM_STEP,
    Deduction,
    Implication,
    central,
    headline_holding,
    imply,
    in_unit,
)
from chalk.knowledge.price_sheets import PriceSheet
from chalk.symbolic.printing.numbers import format_number
from chalk.symbolic.printing.readable import Readable


@dataclass(repr=False)
class Comparison(Readable):
    """Several sheets side by side: one row per sheet, one column per deduction."""

    implications: list[Implication]

    COLUMNS = (("output/input", "decode", "output_input_price_ratio"),
               ("decode util.", "decode", "decode_mfu_ratio"),
               ("KV byte/token", "kv", "kv_bytes_per_token"),
               ("cache USD/GB/h", "cache", "cache_price_per_byte_hour"),
               ("tier", "cache", None),
               ("input/floor", "floor", None),
               ("fast batch", "fast", "fast_batch_ratio"))

    def rows(self) -> list[dict[str, str]]:
        out = []
        for imp in self.implications:
            row = {"sheet": imp.sheet.id}
            for column, key, target in self.COLUMNS:
                row[column] = _cell(imp, key, target, column)
            out.append(row)
        return out

    def notes(self) -> list[str]:
        """Per sheet, where its row's KV size and cache price come from when a reader
        could take them for something else."""
        out = []
        for imp in self.implications:
            cache = row_cache(imp)
            if cache is None or cache.solution is None:
                continue
            used = central(cache.solution, "kv_bytes_per_token", "byte/token")
            step = imp.deduction("kv")
            line = (f"{imp.sheet.id}: cache price from {cache.details['priced_from']}"
                    if "priced_from" in cache.details
                    else f"{imp.sheet.id}: tier from the cache-read price "
                         f"({cache.details['holding']})")
            line += f", at KV {format_number(used, 4)} byte/token from {cache.details['kv_from']}"
            if step is not None and step.solution is not None \
                    and cache.details["kv_from"] != KV_FROM_STEP:
                implied = central(step.solution, "kv_bytes_per_token", "byte/token")
                line += (f" (the long-context step implies {format_number(implied, 4)} "
                         "byte/token; the row uses the size its pins and presets give)")
            out.append(line)
        return out

    def text(self) -> str:
        rows = self.rows()
        headers = ["sheet", *[c for c, _, _ in self.COLUMNS]]
        widths = {h: max(len(h), *(len(r[h]) for r in rows)) for h in headers}
        lines = ["  ".join(h.ljust(widths[h]) for h in headers),
                 "  ".join("-" * widths[h] for h in headers)]
        for r in rows:
            lines.append("  ".join(r[h].ljust(widths[h]) for h in headers))
        lines.append("")
        lines.append("- : not deduced from that sheet (chalk imply SHEET says why); KV: the size "
                     "the row's cache price and tier use, and where it comes from; cache: from "
                     "the storage price where the sheet charges one, else its shortest-hold "
                     "write (named); tier: the memory tier the cache prices point to; "
                     "input/floor: input price over the compute floor on the assumed chip")
        lines.extend(self.notes())
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"rows": self.rows(), "notes": self.notes(),
                "sheets": [imp.to_dict() for imp in self.implications]}


def row_cache(imp: Implication) -> Deduction | None:
    """The cache deduction a one-row summary shows: the sheet's headline holding
    (:func:`~chalk.applications.imply.headline_holding`), else its free-storage or
    read-only verdict."""
    done = [d for d in imp.deductions if d.key == "cache" and d.solution is not None]
    headline = headline_holding(imp.sheet)
    wanted = headline.short if headline is not None else None
    return next((d for d in done if wanted is None or d.details.get("holding") == wanted),
                None)


def _kv_cell(imp: Implication) -> str:
    cache = row_cache(imp)
    if cache is not None:
        origin = cache.details["kv_from"]
        value = central(cache.solution, "kv_bytes_per_token", "byte/token")
    else:
        step = imp.deduction("kv")
        if step is None or step.solution is None:
            return "-"
        origin, value = KV_FROM_STEP, central(step.solution, "kv_bytes_per_token", "byte/token")
    tag = "step" if origin == KV_FROM_STEP else origin
    return f"{format_number(value, 4)} ({tag})"


def _cell(imp: Implication, key: str, target: str | None, column: str) -> str:
    if column == "KV byte/token":
        return _kv_cell(imp)
    if key == "cache":
        d = row_cache(imp)
        if d is None:
            return "-"
        if column == "tier":
            verdict = d.details.get("verdict", {})
            return verdict.get("favoured") or "/".join(verdict.get("kinds", ())) or "none"
        if target not in d.solution.derivation.values:
            return d.details["holding"]  # free storage or a read price alone: no price to show
        return f"{central(d.solution, target, 'USD/GB/hour'):.3g} ({d.details['holding']})"
    d = imp.deduction(key)
    if d is None or d.solution is None:
        return "-"
    if column == "input/floor":
        floor = central(d.solution, "cost_per_token_floor", "USD/token")
        price = in_unit(imp.sheet.prices["input"], "USD/token")
        return f"{price / floor:.3g}"
    if target not in d.solution.derivation.values:
        return "-"
    return format_number(central(d.solution, target), 4)


def compare(sheets: Sequence[str | PriceSheet], given=(), presets=()) -> Comparison:
    """:func:`imply` over several sheets, for a table across providers.

    Parameters
    ----------
    sheets : sequence of str or PriceSheet
        Shipped sheet ids, YAML files or loaded sheets.
    given, presets
        As for :func:`imply`, used for every sheet.

    Returns
    -------
    Comparison
        ``.rows()`` (one dict per sheet), ``.text()``, ``.to_dict()``.
    """
    return Comparison([imply(s, given, presets) for s in sheets])


def implied_tier_figure(implications: Sequence[Implication]):
    """A matplotlib figure: each sheet's cache price per GB-hour against the holding cost
    of each tier kind (bands), on a log scale; sheets without one are left out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt


    points = []
    for imp in implications:
        for d in imp.deductions:
            # a free-storage or read-only verdict has no price to place
            if d.key == "cache" and d.solution is not None \
                    and "cache_price_per_byte_hour" in d.solution.derivation.values:
                points.append((f"{imp.sheet.id}\n{d.details['holding']}",
                               central(d.solution, "cache_price_per_byte_hour",
                                       "USD/GB/hour")))
    fig, ax = plt.subplots(figsize=(9, 1.5 + 0.45 * max(1, len(points))))
    tier_bands(ax)
    for i, (_, value) in enumerate(points):
        ax.plot([value], [i], "ko")
    ax.set_yticks(range(len(points)), [p[0] for p in points], fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("USD per GB of KV per hour")
    ax.set_title("Cache storage price implied by each sheet, against tier holding costs")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    fig.tight_layout()
    return fig


def tier_bands(ax) -> None:
    """Shade each tier kind's span of holding cost (USD per GB-hour) on ``ax``."""
    from chalk.applications.tiers import tier_table

    colours = {"hbm": "tab:red", "dram": "tab:orange", "flash": "tab:green", "disk": "tab:blue"}
    for kind, span in kind_spans(tier_table(), 1.0).items():
        low, high = span.cost_per_gb_hour
        ax.axvspan(low / 1.05, high * 1.05, color=colours[kind], alpha=0.25,
                   label=f"{kind} holding cost")
