"""Flags: answers that break a bound the model declares (a :class:`Condition`).

No relation forces a batch to hold at least one sequence, or the KV cache to fit in
memory; an answer past such a bound is still an answer, but a suspicious one, and says
so on its own line. Plain functions over numbers (and the flag line, a str that knows its
quantity), so a cached answer flags the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING

from chalk.solvers.tolerances import STEPS
from chalk.symbolic.printing.numbers import UnitDisplay, format_display

if TYPE_CHECKING:  # pragma: no cover
    from chalk.solvers.planning.plan import Plan
    from chalk.symbolic.model import Model
    from chalk.symbolic.relations import Condition

SHOWN_DIGITS = 4  # significant digits a flagged value and its bound are printed with


class Flag(str):
    """A flag's line, knowing the quantity it is about (``flag.quantity``).

    A str, so flags print, compare and serialise as their lines; the quantity lets a
    reported value that is flagged be shown once, as failed.
    """

    quantity: str

    def __new__(cls, quantity: str, text: str) -> Flag:
        flag = super().__new__(cls, text)
        flag.quantity = quantity
        return flag


def _as_shown(x):
    """``x`` rounded to the significant digits values are printed with (elementwise for
    an array)."""
    if isinstance(x, (int, float)):  # a number: the cached CLI path loads no numpy
        if x == 0 or not math.isfinite(x):
            return x
        return round(x, SHOWN_DIGITS - 1 - math.floor(math.log10(abs(x))))
    import numpy as np

    return np.vectorize(_as_shown, otypes=[float])(x)


def violated(value, bound: float, kind: str):
    """Whether ``value`` is past ``bound`` (elementwise for an array).

    Past it beyond the arithmetic's rounding and as printed: a value that prints as the
    bound (``memory_fill = 1`` at 1.00002) is on it, so it is never called past it.
    """
    slack = STEPS.guard_rtol * abs(bound)
    shown, edge = _as_shown(value), _as_shown(bound)
    if kind == ">=":
        return (value < bound - slack) & (shown < edge)
    return (value > bound + slack) & (shown > edge)


def flag_text(quantity: str, value: float, bound: float, kind: str, meaning: str,
              display: UnitDisplay, to_base: float) -> Flag:
    """One line: the value, the bound it is past, and what that says."""
    side = "below" if kind == ">=" else "above"
    return Flag(quantity,
                f"{quantity} = {format_display(value / to_base, display, SHOWN_DIGITS)} is "
                f"{side} {format_display(bound / to_base, display, SHOWN_DIGITS)}: {meaning}")


@lru_cache(maxsize=1024)
def bound_value(condition: Condition) -> float:
    """The condition's bound in base units (a condition is frozen, and its bound is
    asked on every solve)."""
    from chalk.symbolic.evaluate import compile_expr
    from chalk.symbolic.variables import known_constant

    constants = {s.name: known_constant(s.name).base_value
                 for s in condition.bound.free_symbols}
    return float(compile_expr(condition.bound, constants)({}))


def flags(model: Model, values: Mapping[str, float],
          determined: Callable[[str], bool]) -> tuple[Flag, ...]:
    """A line for every condition broken by a determined value, in declaration order."""
    out = []
    for condition in model.conditions.values():
        name = condition.quantity
        if name not in values or not determined(name):
            continue
        bound = bound_value(condition)
        if violated(values[name], bound, condition.kind):
            variable = model.variables[name]
            out.append(flag_text(name, values[name], bound, condition.kind,
                                 condition.meaning, variable.display, variable.to_base))
    return tuple(out)


def reported(model: Model, plan: Plan, targets: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Quantities to report beside these answers, with the bound each is held to.

    A condition reported with a topic (``fits_in_memory`` with ``"serving"``) adds its
    quantity whenever a target or a computed quantity is of that topic and the pins
    determine it, so a serving answer shows how full the chips are even when they fit.

    Returns
    -------
    tuple of (name, inequality text)
    """
    topics = {model.variables[n].topic for n in (*targets, *plan.computed)}
    out: list[tuple[str, str]] = []
    for condition in model.conditions.values():
        name = condition.quantity
        if (name in targets or any(name == n for n, _ in out)
                or not topics.intersection(condition.reported_with)
                or not plan.determines(name)):
            continue
        out.append((name, condition.inequality))
    return tuple(out)
