"""Counts of a model's config (layers, heads, widths) are whole numbers.

A count the pins derive as 39.06 is not a model; it is still an answer (the pins may be
rounded figures), so it is flagged on its own line rather than refused, and a count
derived from anything but other counts (a KV size, say) is named in a note, whatever its
value. Which quantities are such counts is their declaration's ``structural``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from chalk.solvers.records.notes import Kind, Note
from chalk.symbolic.printing.numbers import format_display
from chalk.symbolic.variables import BOUND_RTOL

if TYPE_CHECKING:  # pragma: no cover
    from chalk.solvers.analysis.rank import RankAnalysis
    from chalk.symbolic.model import Model


def fractional_counts(model: Model, values: Mapping[str, float],
                      derived: Iterable[str]) -> tuple[str, ...]:
    """A flag line for each count among ``derived`` whose value is not a whole number
    (beyond rounding, :data:`~chalk.symbolic.variables.BOUND_RTOL`)."""
    out = []
    for name in derived:
        variable = model.variables.get(name)
        if variable is None or not variable.structural or name not in values:
            continue
        value = values[name] / variable.to_base
        if abs(value - round(value)) > BOUND_RTOL * max(1.0, abs(value)):
            out.append(f"{name} = {format_display(value, variable.display)} is not a whole "
                       f"number: a model's config has whole {variable.description}")
    return tuple(out)


def redrawn_counts(model: Model, analysis: RankAnalysis,
                   derived: Iterable[str]) -> tuple[Note, ...]:
    """A note for each count among ``derived`` that rests on a pin which is no count:
    a value that holds whatever the numbers are (whether it comes out whole or not), so an
    answer carrying one is never replayed with other numbers."""
    out = []
    for name in derived:
        variable = model.variables.get(name)
        if variable is None or not variable.structural:
            continue
        others = [b for b in analysis.pins_behind(model, name)
                  if not model.variables[b].structural]
        if others:
            out.append(Note(Kind.COUNT, {"name": name, "others": tuple(others)}))
    return tuple(out)
