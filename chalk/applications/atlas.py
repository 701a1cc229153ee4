"""The atlas: what every shipped price sheet implies, fitted at once, with intervals.

Two joint fits (:mod:`chalk.applications.fit`) over the shipped sheets, then the memory
tier each sheet's cache prices point to at the fitted KV size:

* **Decode utilisation per provider.** Each sheet's output/input price ratio is an
  observation of ``output_input_price_ratio`` with a log-normal spread of
  ``RATIO_SIGMA`` (prices are rounded and margins differ by model); one
  ``decode_mfu_ratio`` per provider is fitted to all of that provider's sheets, so a
  sheet priced unlike its siblings shows as an outlier.
* **KV bytes per token per sheet** with a long-context price step. The step's threshold
  is an observation of ``long_context_threshold`` with a log-normal spread of
  ``STEP_SIGMA``: the lecture takes the step to sit near, not exactly at, the context
  where KV reads match the matmuls (1:35:18-1:36:03). The model's active parameters and
  the chip's FLOP per byte are assumptions (the lecture's, as in ``chalk imply``), so the
  interval is what the step says given them, not the uncertainty in them.
* **Memory tier per sheet**: the tier verdict of :mod:`chalk.applications.cache_verdict`
  at the fitted KV size and at both ends of its interval.

Where a sheet's model is an open-weight preset, its true KV size (from the architecture,
bf16 cache) is shown beside whatever the prices imply.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from chalk.applications.fit import FitResult, fit
from chalk.applications.imply import headline_holding
from chalk.knowledge.price_sheets import PriceSheet, shipped_sheets
from chalk.symbolic.printing.numbers import format_number
from chalk.symbolic.printing.readable import Readable

RATIO_SIGMA = 0.1  # sd of ln(output/input price ratio) about the provider's cost ratio
STEP_SIGMA = 0.35  # sd of ln(threshold / crossover): a step near the crossover, not at it
ACTIVE = "100e9 param"  # the lecture's guess for a frontier model (1:31:27-1:31:38)
INTENSITY = "300 FLOP/byte"  # the lecture's FLOP per byte of HBM bandwidth (18:05-18:46)
ASSUMPTIONS = (
    f"output/input price ratios scatter about each provider's cost ratio with a log sd of "
    f"{RATIO_SIGMA:g} (one decode utilisation per provider)",
    f"a long-context price step sits within a log sd of {STEP_SIGMA:g} (a factor "
    f"{math.exp(STEP_SIGMA):.2g}) of the context where KV reads match the matmuls "
    "(lecture 1:35:18-1:36:03)",
    f"active_params = {ACTIVE} and hardware_intensity = {INTENSITY} (the lecture's) for a "
    "model without a preset; careful conventions (2 FLOP per parameter per token)",
)


@dataclass
class AtlasRow:
    """One sheet: what its prices imply, each with a 90% interval where it has one."""

    sheet: str
    provider: str
    ratio: float
    decode: tuple[float, float, float]  # the provider's fitted utilisation, low, high
    ratio_z: float  # this sheet's ratio against its provider's fit, in sd
    kv: tuple[float, float, float] | None = None  # byte/token: value, low, high
    kv_true: float | None = None  # from a model preset's architecture (bf16 cache)
    storage: tuple[float, float, float] | None = None  # USD/GB/hour at kv, high kv, low kv
    storage_from: str = ""  # the holding it is priced from (imply's label: storage, 5 min write)
    tier: str = "-"
    free_storage: bool = False

    def cells(self) -> dict[str, str]:
        def span(triple, digits=3):
            value, low, high = triple
            return (f"{format_number(value, digits)} ({format_number(low, 2)}-"
                    f"{format_number(high, 2)})")

        return {
            "sheet": self.sheet,
            "provider": self.provider,
            "out/in": format_number(self.ratio, 4),
            "z": f"{self.ratio_z:+.1f}",
            "decode util. (provider)": span(self.decode),
            "KV byte/token (90%)": span(self.kv, 4) if self.kv else "-",
            "true KV": format_number(self.kv_true, 4) if self.kv_true else "-",
            "cache USD/GB/h": (f"{span(self.storage)} ({self.storage_from})" if self.storage
                               else "free" if self.free_storage else "-"),
            "tier": self.tier,
        }


@dataclass(repr=False)
class Atlas(Readable):
    """The atlas: per-sheet rows, and the two fits behind them."""

    rows: list[AtlasRow]
    decode_fit: FitResult
    kv_fit: FitResult
    assumptions: tuple[str, ...] = ASSUMPTIONS
    notes: list[str] = field(default_factory=list)

    def row(self, sheet: str) -> AtlasRow:
        return next(r for r in self.rows if r.sheet == sheet)

    def text(self) -> str:
        cells = [r.cells() for r in self.rows]
        headers = list(cells[0])
        widths = {h: max(len(h), *(len(c[h]) for c in cells)) for h in headers}
        lines = ["atlas: what every shipped price sheet implies (90% intervals)", ""]
        lines.append("  ".join(h.ljust(widths[h]) for h in headers))
        lines.append("  ".join("-" * widths[h] for h in headers))
        lines.extend("  ".join(c[h].ljust(widths[h]) for h in headers) for c in cells)
        lines += ["", "decode utilisation per provider (90% interval), from "
                  f"{len(self.decode_fit.residuals)} sheets:"]
        for e in self.decode_fit.estimates:
            lines.append(f"  {e.group or e.name}: {format_number(e.value, 3)} "
                         f"({format_number(e.low, 3)} to {format_number(e.high, 3)}), "
                         f"{e.method}")
        outliers = self.decode_fit.outliers
        if outliers:
            lines.append("  priced unlike its provider's other sheets (|z| > "
                         f"{self.decode_fit.outlier_z:g}): "
                         + ", ".join(f"{r.subject} (z = {r.z:+.1f})" for r in outliers))
        lines += ["", "assumptions"] + [f"  {a}" for a in self.assumptions]
        lines += ["", "columns: z is the sheet's ratio against its provider's fit in standard "
                  "deviations; KV from the long-context step; true KV from the model's "
                  "architecture where it is public; cache price per GB of KV per hour at the "
                  "fitted KV (interval from the KV interval), from the storage price where the "
                  "sheet charges one, else its shortest-hold write, as in chalk imply's table "
                  "(named in the cell); tier from the cache verdict, on the read price alone "
                  "where the sheet prices no storage or write"]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def figure(self):
        """Each sheet's implied cache price per GB-hour against the tiers' holding costs."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from chalk.applications.comparison import tier_bands

        priced = [r for r in self.rows if r.storage]
        fig, ax = plt.subplots(figsize=(9, 1.6 + 0.45 * max(1, len(priced))))
        tier_bands(ax)
        for i, r in enumerate(priced):
            value, low, high = r.storage
            ax.errorbar([value], [i], xerr=[[value - low], [high - value]], fmt="ko",
                        capsize=3)
        ax.set_yticks(range(len(priced)), [r.sheet for r in priced], fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("cache price, USD per GB of KV per hour (90% interval from the KV size)")
        ax.set_title("What each sheet charges to hold KV, against what each tier costs")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
        fig.tight_layout()
        return fig

    def to_dict(self) -> dict:
        return {"rows": [{**r.cells(), "values": {
                    "ratio": r.ratio, "decode": r.decode, "ratio_z": r.ratio_z, "kv": r.kv,
                    "kv_true": r.kv_true, "storage": r.storage}} for r in self.rows],
                "assumptions": list(self.assumptions), "notes": self.notes,
                "decode_fit": self.decode_fit.to_dict(), "kv_fit": self.kv_fit.to_dict()}


def _key(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text.lower()).strip("_")


def _usd_per_mtoken(fact) -> float:
    from chalk.symbolic.parsing import parse_unit_cached
    from chalk.symbolic.units import base_factor

    return fact.value * base_factor(parse_unit_cached(fact.unit)) * 1e6


def _ratio(sheet: PriceSheet) -> float:
    return _usd_per_mtoken(sheet.prices["output"]) / _usd_per_mtoken(sheet.prices["input"])


def decode_spec(sheets: list[PriceSheet]) -> dict:
    """The fit of one decode utilisation per provider to every sheet's price ratio."""
    return {
        "title": "decode utilisation per provider, from output/input price ratios",
        "unknowns": {"decode_mfu_ratio": {"prior": "0.001..1", "per": "provider"}},
        "subjects": {s.id: {"labels": {"provider": _key(s.provider)}} for s in sheets},
        "observations": [
            {"quantity": "output_input_price_ratio",
             "value": f"lognormal({_ratio(s)!r}, {RATIO_SIGMA})",
             "subject": s.id, "source": s.source, "date": s.date} for s in sheets],
    }


def kv_spec(sheets: list[PriceSheet]) -> dict:
    """The fit of each long-context sheet's KV bytes per token to its price step."""
    stepped = [s for s in sheets if s.long_context]
    return {
        "title": "KV bytes per token per sheet, from long-context price steps",
        "pins": {"active_params": ACTIVE, "hardware_intensity": INTENSITY},
        "unknowns": {"kv_bytes_per_token": {"prior": "1..1e8 byte/token", "per": "subject"}},
        "subjects": {s.id: {} for s in stepped},
        "observations": [
            {"quantity": "long_context_threshold",
             "value": f"lognormal({s.long_context['threshold'].text}, {STEP_SIGMA})",
             "subject": s.id, "source": s.long_context["threshold"].source or s.source,
             "date": s.date} for s in stepped],
    }


def atlas(sheets: list[PriceSheet] | None = None) -> Atlas:
    """Fit every shipped price sheet (or ``sheets``) at once; see the module docstring.

    Parameters
    ----------
    sheets : list of PriceSheet, optional
        The sheets to fit (default: every shipped sheet).

    Returns
    -------
    Atlas
        ``.rows`` (one per sheet), ``.text()``, ``.to_dict()``, and the two fits.
    """
    from chalk.solvers.bulk.progress import task

    sheets = list(shipped_sheets().values()) if sheets is None else list(sheets)
    # the two fits, then each sheet's row (a tier verdict, a preset's true KV bytes)
    with task(f"atlas: 2 fits, {len(sheets)} sheets", 2 + len(sheets)) as progress:
        # the sheets scatter more than their stated uncertainty: the intervals say so
        decode = fit(decode_spec(sheets), scale_intervals=True)
        progress.advance()
        kv = fit(kv_spec(sheets), scale_intervals=True)
        progress.advance()
        residual_of = {r.subject: r for r in decode.residuals}
        rows = []
        for s in sheets:
            provider = _key(s.provider)
            e = decode[f"decode_mfu_ratio@{provider}"]
            row = AtlasRow(s.id, provider, _ratio(s), (e.value, e.low, e.high),
                           residual_of[s.id].z)
            if s.long_context:
                k = kv[f"kv_bytes_per_token@{s.id}"]
                row.kv = (k.value, k.low, k.high)
            if s.preset:
                row.kv_true = _true_kv(s.preset)
            kv_bytes = row.kv[0] if row.kv else row.kv_true
            storage = s.prices.get("cache_storage")
            row.free_storage = storage is not None and storage.value == 0
            if kv_bytes:
                row.storage, row.tier = _tier(s, row.kv or (kv_bytes, kv_bytes, kv_bytes))
                holding = headline_holding(s)
                row.storage_from = holding.short if holding is not None else ""
            rows.append(row)
            progress.advance()
    notes = [f"{f.title}: {n}" for f in (decode, kv) for n in f.notes
             if n.startswith(("the observations scatter", "intervals scaled"))]
    return Atlas(rows, decode, kv, notes=notes)


def _true_kv(preset: str) -> float:
    from chalk.api import solve

    return solve("kv_bytes_per_token", {"kv_bytes_per_element": "2 byte"},
                 [preset]).value("kv_bytes_per_token", "byte/token")


def _tier(sheet: PriceSheet, kv: tuple[float, float, float]):
    """Storage price per GB-hour at the KV size and its interval, and the tier verdict at
    the KV size (naming another where the interval's ends give one)."""
    from chalk.applications.cache_verdict import kind_spans, tier_verdict
    from chalk.applications.tiers import tier_table

    storage = sheet.prices.get("cache_storage")
    read = sheet.prices.get("cache_read")
    read_price = _usd_per_mtoken(read) if read is not None else None
    free = storage is not None and storage.value == 0
    per_token_hour, hold = None, None  # USD per token per hour, seconds
    holding = headline_holding(sheet)  # the one chalk imply's table shows
    if holding is not None and holding.write is None:
        per_token_hour = _usd_per_mtoken(storage) / 1e6 * 3600
    elif holding is not None:
        hold = holding.hold_s
        premium = _usd_per_mtoken(holding.write.price) - _usd_per_mtoken(sheet.prices["input"])
        per_token_hour = premium / 1e6 / (hold / 3600)
    if per_token_hour is None and not free and read_price is None:
        return None, "-"
    verdicts = []
    for size in kv:
        spans = kind_spans(tier_table(), size)
        price = (per_token_hour / size * 1e9 if per_token_hour
                 else 0.0 if free else None)  # None: a read price alone
        verdicts.append(tier_verdict(spans, price, hold, read_price, size))
    main = verdicts[0]
    tier = main.favoured or "/".join(main.kinds) or "none"
    others = {v.favoured for v in verdicts[1:] if v.favoured and v.favoured != main.favoured}
    if others:
        tier += f" ({'/'.join(sorted(others))} at the interval's ends)"
    if not per_token_hour:
        return None, tier
    value, low_kv, high_kv = kv
    return (per_token_hour / value * 1e9, per_token_hour / high_kv * 1e9,
            per_token_hour / low_kv * 1e9), tier
