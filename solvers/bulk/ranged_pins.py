"""Ranged pins that the other pins also determine: set aside, then judged by overlap.

A range says where a quantity lies, not what it is; when exact pins elsewhere fix the
same quantity, comparing them with the range's midpoint would call a value inside the
range a conflict. Such a pin is set aside before solving, the plan derives the quantity,
and the range is judged against what the other pins give.
"""

from __future__ import annotations

from collections.abc import Mapping

from chalk.solvers.analysis.screen import may_determine
from chalk.solvers.bulk.uncertainty import Propagation
from chalk.solvers.pinning.pinned import Pin
from chalk.solvers.planning.plan import Plan, make_plan
from chalk.symbolic.errors import RangeDisagrees
from chalk.symbolic.model import Model
from chalk.symbolic.printing.quantities import format_quantity


def set_aside_ranges(model: Model, pins: Mapping[str, Pin], names: tuple[str, ...],
                     used: set[str]) -> tuple[dict, dict]:
    """Ranged pins the rest determine, taken out of the pins (a check would compare the
    other pins' value with the range's midpoint, and call a value inside it a conflict).

    Widest first (by the spread of the log), so of two ranges that each determine the
    other the narrower, which says more, is kept and the wider is judged against it.
    """
    pins, aside = dict(pins), {}
    ranged = [n for n in used if n in pins and pins[n].spread is not None]
    for name in sorted(ranged, key=lambda n: (-pins[n].spread.log_sd, n)):
        rest = {k: v for k, v in pins.items() if k != name}
        if not all(may_determine(model, rest, t) for t in (*names, name)):
            continue
        if make_plan(model, frozenset(rest), (*names, name), explain=False).determined:
            pins, aside[name] = rest, pins[name]
    return pins, aside


def judge_ranges(model: Model, range_checks: Mapping[str, Pin], plan: Plan,
                 values: Mapping[str, float], propagation: Propagation | None,
                 rtol: float) -> tuple[dict, ...]:
    """Judge each set-aside range by overlap with what the other pins give.

    The rule: a range claims its whole width, a distribution its central 90%; the other
    pins claim their value, or its 90% interval when they are uncertain too. The two
    agree when these overlap, widened by ``rtol``; the derived value is the one used.
    Returns the data of a ``set_aside`` note per range (:mod:`chalk.solvers.records.notes`):
    ``name``, ``behind`` (the pins that determine it), ``derived`` and ``claimed`` (as
    shown) and ``spread`` (whether the derived value is an interval).

    Raises
    ------
    RangeDisagrees
        If a claimed range and the derived value or interval do not overlap.
    """
    notes = []
    for name, pin in range_checks.items():
        variable = model.variables[name]

        def show(x, variable=variable):
            return format_quantity(x / variable.to_base, variable.pint_unit)

        low, high = pin.spread.interval()
        claimed = (f"range {show(low)} to {show(high)}"
                   if pin.spread.kind in ("uniform", "loguniform")
                   else f"90% interval {show(low)} to {show(high)}")
        summary = propagation.summaries.pop(name, None) if propagation else None
        if summary is not None:
            d_low, d_high = summary.low, summary.high
            derived = f"{show(summary.median)} (90% interval {show(d_low)} to {show(d_high)})"
        else:
            d_low = d_high = values[name]
            derived = show(values[name])
        behind = tuple(plan.analysis.pins_behind(model, name))
        if d_low > high * (1 + rtol) or d_high < low * (1 - rtol):
            raise RangeDisagrees(name, claimed, derived, behind)
        notes.append({"name": name, "behind": behind, "derived": derived,
                      "claimed": claimed, "spread": summary is not None})
    return tuple(notes)
