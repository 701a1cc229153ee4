"""What every step of a plan produces, and the tests every value it keeps must pass.

Shared by explicit steps (solvers.execution.execute) and simultaneous blocks
(solvers.execution.blocks): the records a derivation is made of, whether a value is
physical, whether a regime's inequalities hold, and how a value is shown in a message.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chalk.solvers.tolerances import STEPS
from chalk.symbolic.printing.numbers import format_display

if TYPE_CHECKING:  # pragma: no cover
    import sympy
    from chalk.symbolic.model import Model

GUARD_RTOL = STEPS.guard_rtol  # a regime inequality may fail by this much and still hold


@dataclass(frozen=True)
class StepRecord:
    """One line of a derivation: what was solved, how, and from what.

    ``expression`` is the closed form used (None for a numeric or simultaneous
    solve). A record replayed from a cached plan carries the closed form as text
    instead: ``formula``, and ``template``, the formula with each input as a slot
    (see :func:`fill`).
    """

    relations: tuple[str, ...]
    variables: tuple[str, ...]
    expression: sympy.Expr | None
    method: str
    inputs: tuple[str, ...]
    regime: str | None = None
    note: str = ""
    formula: str = ""
    template: str = ""
    flat: bool = False  # a block left free along a direction (one point of a family kept)
    # (relation, regime label) of each max()/min() of a block: ``regime`` lists the labels
    # alone, which two relations with the same labels (compute-bound, ...) make ambiguous
    regimes: tuple[tuple[str, str], ...] = ()

    @property
    def closed_form(self) -> bool:
        return self.expression is not None or bool(self.formula)

    def formula_text(self) -> str:
        """The closed form as text: ``total_params/active_params``."""
        if self.formula:
            return self.formula
        from chalk.symbolic.printing.expressions import plain

        return plain(self.expression)

    def substituted_text(self, shown: Mapping[str, str]) -> str:
        """The closed form with each input replaced by its shown value."""
        if self.template:
            return fill(self.template, self.inputs, shown)
        from chalk.symbolic.printing.expressions import substituted

        return substituted(self.expression, shown)


def regime_taken(args, low_wins: bool, show_time) -> tuple[str, str]:
    """The regime a max() (or min()) evaluated forwards takes, and the note saying so.

    ``args`` are (label, value) for each argument, values in seconds; ``show_time``
    formats one of them (``598.6 µs``).
    """
    pick = min if low_wins else max
    active, _ = pick(args, key=lambda item: item[1])
    others = ", ".join(f"{label.split('-')[0]} {show_time(v)}" for label, v in args)
    return active, f"{active} ({others})"


def slot(index: int) -> str:
    """The placeholder for the ``index``-th input of a formula template: characters no
    printed formula or value contains."""
    return f"\x00{index}\x00"


def fill(template: str, inputs: tuple[str, ...], shown: Mapping[str, str]) -> str:
    """A formula template with each input's slot replaced by its shown value."""
    for index, name in enumerate(inputs):
        template = template.replace(slot(index), shown[name])
    return template


@dataclass(frozen=True)
class CheckRecord:
    """A surplus relation evaluated on known values: a cross-check."""

    relation: str
    lhs: float
    rhs: float
    difference: float  # relative
    # how much the steps amplify the pins' relative error into this difference (at least
    # 1): a side computed through a cancelling difference may be off by gain x rtol
    gain: float = 1.0

    def ok(self, rtol: float) -> bool:
        return self.difference <= rtol * max(1.0, self.gain)

    @property
    def signed(self) -> float:
        """The relative difference with its sign: ``(lhs - rhs) / max(|lhs|, |rhs|)``."""
        scale = max(abs(self.lhs), abs(self.rhs))
        return 0.0 if scale == 0 else (self.lhs - self.rhs) / scale


def inputs_of(relations, solved, model) -> tuple[str, ...]:
    names = set()
    for r in relations:
        names |= model.variables_in(r.name)
    return tuple(sorted(names - set(solved)))


def may_leave_open(model: Model, steps) -> bool:
    """Whether a plan's steps can leave a quantity free at the solution though the plan
    fixes it: a simultaneous block, or a step solved backwards through a max()/min()
    (:func:`regime_decides`)."""
    return any(s.simultaneous or any(regime_decides(model.relations[r], s.variables)
                                     for r in s.relations) for s in steps)


def regime_decides(relation, solved) -> bool:
    """Whether the regime a max()/min() relation is in can leave the quantity it is solved
    for free: only when that quantity is inside the max() (solved backwards through it).
    Evaluated forwards (``step_time`` from its arguments, or a factor beside the max()),
    the step's own entry in the Jacobian is the same in every regime, so the regime
    changes no more than a relation without one would."""
    return relation.has_regimes() and any(relation.inside_regime_node(v) for v in solved)


def regime_for(regime, relation: str) -> str | None:
    """The regime asked for one relation: ``regime`` is a label for every max()/min()
    (the ``--regime`` option) or a mapping of relation name to label (or ``None``)."""
    if regime is None or isinstance(regime, str):
        return regime
    return regime.get(relation)


def physical(model: Model, name: str, value, provisional: bool = False) -> bool:
    """Whether a value can be kept: finite and within the quantity's bounds.

    A ``provisional`` quantity (one that depends on a placeholder, so its value is an
    artefact of an arbitrary choice) need only be positive (or zero where allowed): its
    declared bounds say nothing about it.
    """
    try:
        value = float(value)
    except (TypeError, ValueError):
        return False
    if not math.isfinite(value):
        return False
    if provisional:
        return value > 0 or (value == 0 and model.variables[name].allow_zero)
    return model.variables[name].admits(value)


def guards_hold(guards, env) -> bool:
    for a, b in guards:
        left, right = float(a(env)), float(b(env))
        if left < right - GUARD_RTOL * max(abs(left), abs(right)):
            return False
    return True


def show(model: Model, name: str, value: float) -> str:
    v = model.variables[name]
    return format_display(value / v.to_base, v.display)
