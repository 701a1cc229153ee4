"""Published serving measurements beside chalk's roofline bound (issue 23's acceptance table).

Each row of ``knowledge/data/serving_measurements.yaml`` becomes one ``chalk.solve`` with
the row's chip at the precision it ran (``presets.chip_preset``), its model and precision
presets, and its conditions pinned:

* ``n_chips`` as published;
* ``context_length`` = input + output / 2, the mean context over a request's decode. A
  step's time grows linearly with the context in each regime and max() is convex, so the
  mean step is at least the step at the mean context: the rate at the mean context bounds
  the measured one. Without a published output length, the input alone (the shortest
  context a decoding sequence has);
* ``batch_size`` where the source states it; otherwise ``memory_fill = 1``, the largest
  batch whose KV cache fits in HBM beside the weights, the most any engine can decode at
  once.

The bound is the decode rate alone: prefill time, scheduling and communication only lower
what a system measures, so measured/bound <= 1 for a sound bound, and a row above 1 is
flagged. Beside it, for rows with both lengths published and a total or per-chip rate,
the whole-request bound (``output_tokens_per_second``): the same replica also prefills
each prompt, at its compute bound, between decode steps (``knowledge/requests.py``).
The medians are over every row and over the comparable ones (decode-dominated:
output at least as long as input, or a decode-only measurement; no speculative decoding,
which the careful conventions count as one token per step).

Usage::

    python benchmarks/serving_bounds.py
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


@dataclass(frozen=True)
class Row:
    """One measurement beside its bound (rates in output tokens per second, as published:
    in total, per chip or per user)."""

    id: str
    name: str
    measured: float
    bound: float
    batch: float
    regime: str
    comparable: bool
    request_bound: float | None = None  # whole requests, prefill included, where known

    @property
    def request_ratio(self) -> float | None:
        return None if self.request_bound is None else self.measured / self.request_bound

    @property
    def ratio(self) -> float:
        return self.measured / self.bound

    @property
    def beats_bound(self) -> bool:
        return self.ratio > 1 or (self.request_ratio or 0) > 1


def question(record) -> tuple[list[str], dict[str, str], list]:
    """The targets, pins and presets that ask chalk for a measurement's decode bound (the
    calibration reads its questions from the same place)."""
    from chalk.applications.calibrate.rows import decode_question

    return decode_question(record)


def _tokens(record, fact: str) -> float | None:
    from chalk.applications.calibrate.rows import measured_tokens

    return measured_tokens(record, fact)


def request_question(record) -> tuple[list[str], dict[str, str], list] | None:
    """The whole-request question of a measurement, as the calibration asks it (None
    without both lengths, or for a per-user rate, which a decode step bounds)."""
    from chalk.applications.calibrate.rows import request_question as asked

    return asked(record)


def comparable(record) -> bool:
    """Decode-dominated, without speculative decoding: the rows a decode bound fits."""
    output_tokens = _tokens(record, "output_tokens")
    decode_dominated = output_tokens is None or output_tokens >= _tokens(record, "input_tokens")
    return decode_dominated and not record.fields.get("speculative", False)


def bound_row(record) -> Row:
    """Solve one measurement's question and set the bound beside the measured rate."""
    from chalk import solve

    targets, given, presets = question(record)
    solution = solve(targets, given=given, presets=presets)
    total = solution.value("tokens_per_second", "token/s")
    batch = (solution.value("batch_size", "sequence") if "batch_size" in targets
             else record.facts["batch_size"].quantity().to("sequence").magnitude)
    chips = record.facts["n_chips"].quantity().to("chip").magnitude
    bound = {"total": total, "per_chip": total / chips,
             "per_user": total / batch}[record.fields["metric"]]
    regime = ("compute" if solution.value("t_compute", "s") >= solution.value("t_memory", "s")
              else "memory")
    request_bound = None
    asked = request_question(record)
    if asked is not None:
        whole = solve(asked[0], given=asked[1], presets=asked[2]).value(
            "output_tokens_per_second", "token/s")
        request_bound = whole if record.fields["metric"] == "total" else whole / chips
    return Row(record.id, record.name, record.facts["measured"].quantity().to(
        "token/s").magnitude, bound, batch, regime, comparable(record), request_bound)


def bound_rows(records=None) -> list[Row]:
    """Every measurement (or those given) beside its bound, in file order."""
    from chalk.knowledge import data

    records = data.serving_measurements().values() if records is None else records
    return [bound_row(r) for r in records]


def summary(rows: list[Row]) -> dict:
    """Medians of measured/bound over every row and over the comparable ones, and the rows
    that beat their bound."""
    kept = [r.ratio for r in rows if r.comparable]
    whole = [r.request_ratio for r in rows if r.request_ratio is not None]
    return {"rows": len(rows), "median": statistics.median(r.ratio for r in rows),
            "comparable": len(kept), "median_comparable": statistics.median(kept) if kept
            else float("nan"), "beats_bound": [r.id for r in rows if r.beats_bound],
            "at_least_half": sum(r.ratio >= 0.5 for r in rows),
            "requests": len(whole), "median_request": statistics.median(whole) if whole
            else float("nan")}


def _table(rows: list[Row]) -> str:
    head = (f"{'measurement':<42} {'measured':>10} {'bound':>11} {'ratio':>6} "
            f"{'request':>11} {'ratio':>6} {'batch':>9} {'regime':<8} note")
    lines = [head, "-" * len(head)]
    for r in rows:
        note = "BEATS ITS BOUND" if r.beats_bound else ("" if r.comparable else
                                                         "not comparable")
        whole = ("" if r.request_bound is None else f"{r.request_bound:,.0f}",
                 "" if r.request_ratio is None else f"{r.request_ratio:.2f}")
        lines.append(f"{r.id:<42} {r.measured:>10,.0f} {r.bound:>11,.0f} {r.ratio:>6.2f} "
                     f"{whole[0]:>11} {whole[1]:>6} {r.batch:>9,.0f} {r.regime:<8} {note}")
    return "\n".join(lines)


def main() -> dict:
    """Print the table and its medians; return :func:`summary`'s figures."""
    rows = bound_rows()
    print("Output tokens/s as published (total, per chip or per user) beside chalk's decode "
          "bound\n")
    print(_table(rows))
    s = summary(rows)
    print(f"\nmedian measured/bound: {s['median']:.2f} over {s['rows']} rows; "
          f"{s['median_comparable']:.2f} over the {s['comparable']} comparable rows; "
          f"{s['at_least_half']} of {s['rows']} at 0.5 or more")
    print(f"median measured/whole-request bound: {s['median_request']:.2f} over the "
          f"{s['requests']} rows with both lengths and a total or per-chip rate")
    print("rows that beat their bound: " + (", ".join(s["beats_bound"]) or "none"))
    return s


if __name__ == "__main__":
    main()
