"""A question's targets as functions of one quantity, and a minimum searched in its log."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from chalk.compiled import Options, compile_question
from chalk.solvers.pinning.pins import parse_given, read_value
from chalk.symbolic.errors import BeyondSearch, NoSolution, UsageError
from chalk.symbolic.printing.quantities import format_quantity

GRID = 400


def minimize_in_log(objective, low: float, high: float, name: str, unit: str,
                    question: str, xatol: float = 1e-12, edges=("below", "above"),
                    minimised: str = "the objective") -> float:
    """The x in [low, high] that minimises ``objective(x)``, searched in log x.

    Parameters
    ----------
    objective : callable
        float -> float, unimodal on the range.
    low, high : float
        The range searched (positive).
    name, unit : str
        The quantity searched and the unit ``low`` and ``high`` are in, for messages.
    question : str
        What the search answers, for messages.
    xatol : float
        Tolerance on log x.
    edges : tuple of str
        Which ends are search bounds ("below" for ``low``, "above" for ``high``); an
        end that is a real constraint may hold the optimum.
    minimised : str
        What ``objective`` measures, for messages (``"the loss"``).

    Raises
    ------
    BeyondSearch
        The objective is no larger at a search bound than at the minimum found: the
        optimum lies at or past that bound.
    NoSolution
        The objective is not finite at the minimum found.
    """
    from scipy.optimize import minimize_scalar

    best = minimize_scalar(lambda t: objective(math.exp(t)), method="bounded",
                           bounds=(math.log(low), math.log(high)), options={"xatol": xatol})
    if not math.isfinite(best.fun):
        raise NoSolution(name, f"{question}: {minimised} is not a finite number at any "
                               f"{name} searched ({low:.4g}..{high:.4g} {unit})")
    for side, bound in (("below", low), ("above", high)):
        if side in edges and objective(bound) <= best.fun:
            raise BeyondSearch(name, side, f"{bound:.4g} {unit}", question)
    return math.exp(best.x)


class Curve:
    """Targets as functions of one quantity, from a compiled plan.

    ``Curve(targets, over, given, presets)`` plans the targets with ``over`` pinned
    (at its typical value, as a stand-in); calling it with an array of ``over`` values
    (base units) evaluates every target at once. Quantities in ``tie`` move in
    proportion with ``over``.
    """

    def __init__(self, targets: Sequence[str], over: str, given, presets, tie: Sequence[str] = (),
                 regime: str | None = None):
        self.question = self._plan(targets, over, parse_given(given), presets, tie, regime)
        q = self.question.prepared
        model, names, pins, plan = q.model, q.targets, q.pins, q.plan
        self.model, self.names, self.pins, self.plan = model, names, pins, plan
        # quantities reported beside these answers (memory_fill), when the pins fix them
        self.reported = self.question.reported
        self.over = model.variable(over).name
        self.tie = [model.variable(t).name for t in tie]
        self.regime = regime
        self.base = {n: p.value for n, p in pins.items()}

    @staticmethod
    def _plan(targets, over, pairs, presets, tie, regime):
        from chalk.knowledge import load_model

        model = load_model()
        variable = model.variable(over)
        typical = f"{variable.typical or 1!r} {variable.unit}"
        extra = [(over, typical)] + [(t, f"{model.variable(t).typical or 1!r} "
                                         f"{model.variable(t).unit}") for t in tie]
        question = compile_question(list(targets), [*pairs, *extra], presets,
                                    options=Options(regime=regime))
        if not question.prepared.plan.determined:
            raise question.prepared.plan.underdetermined_error()
        return question

    def __call__(self, xs) -> dict[str, np.ndarray]:
        """Every target and reported quantity at ``xs`` (base units): the answer
        ``chalk.solve`` gives at each, NaN where it refuses."""
        xs = np.atleast_1d(np.asarray(xs, dtype=float))
        values = {self.over: xs}
        for t in self.tie:
            scale = self.model.variables[t].to_base / self.model.variables[self.over].to_base
            values[t] = xs * scale
        return self.question.evaluate(values).values

    def show(self, name: str, base_value: float) -> str:
        v = self.model.variables[name]
        return format_quantity(base_value / v.to_base, v.pint_unit)


def search_bounds(model, name, low, high):
    variable = model.variable(name)
    lo, _ = read_value(variable, low)
    hi, _ = read_value(variable, high)
    if not 0 < lo < hi:
        raise UsageError(f"the range of {variable.name} must have 0 < low < high")
    return lo, hi




def flags_at(curve: Curve, values: dict) -> tuple[str, ...]:
    """Flag lines for the conditions a curve's values break at one point."""
    from chalk.solvers.records.flags import flags

    point = {n: float(np.atleast_1d(v)[0]) for n, v in values.items()}
    return flags(curve.model, point, lambda n: True)
