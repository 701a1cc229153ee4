"""Naming a conflict: which relation failed, both sides with units, and the pins behind it.

A conflict that rests on conventions' defaults names those first: a default is no
mistake of the user's, and a list of twenty pins hides the one that matters. Where such
a default sits on a bound of its quantity (an efficiency of 1: the roofline at peak) and
the user pinned a quantity of the failing relation (a measured rate), the conflict is
read against that bound: what the pins give the user's quantity at the defaults, on
which side the pin lies, and which defaults, moved off their bound, would close the gap,
the one the answer turns on first. If none can, the pin beats a physical bound and the
user's and presets' pins are what to fix.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from chalk.solvers.execution.steps import CheckRecord
from chalk.solvers.pinning.pinned import Layer, Pin, ground_zeros
from chalk.solvers.planning.plan import Plan, upstream_pins
from chalk.solvers.tolerances import PINS
from chalk.symbolic.errors import InconsistentPins, PastDefaultBound
from chalk.symbolic.model import Model
from chalk.symbolic.printing.numbers import format_gap, format_side
from chalk.symbolic.printing.quantities import format_quantity

# The failing check run again at other pin values (base units); None where the plan
# has no physical solution there.
Probe = Callable[[Mapping[str, float]], "CheckRecord | None"]


def inconsistency(model: Model, check: CheckRecord, pins: Mapping[str, Pin], plan: Plan,
                  base: Mapping[str, float], probe: Probe) -> InconsistentPins:
    """The error for a failed cross-check, naming both sides and the pins behind it.

    ``base`` holds the pin values the check failed at and ``probe`` runs it again at
    others: how the conventions' defaults among the pins move it decides which of them
    the message names (see the module docstring).
    """
    from chalk.symbolic.dimensions import dimension_of
    from chalk.symbolic.units import ureg

    relation = model.relations[check.relation]
    base_units = {s: _base_container(model, s) for s in relation.symbols}
    lhs_unit = ureg.Unit(dimension_of(relation.lhs, base_units))
    involved = _upstream_pins(model, plan, check.relation, pins)
    sides = (relation.name, relation.equation, format_quantity(check.lhs, lhs_unit),
             format_quantity(check.rhs, lhs_unit), format_gap(check.difference))
    defaults = [n for n in involved if pins[n].layer is Layer.CONVENTIONS]
    if not defaults:
        return InconsistentPins(*sides, involved, check.difference)
    others = [n for n in involved if n not in defaults]
    moves = {n: _move(model, base, n, check, probe) for n in defaults}
    # the defaults the check turns on where it stands first: their order names the regime
    moving = sorted((n for n in defaults if moves[n].slope or moves[n].reaches),
                    key=lambda n: -abs(moves[n].slope))
    at_bound = [n for n in moving if moves[n].within]
    measured = [n for n in others if pins[n].layer is Layer.GIVEN
                and n in model.variables_in(check.relation)]
    bound = _bound(base, measured[0], probe) if at_bound and len(measured) == 1 else None
    if bound is None:
        return InconsistentPins(*sides, others, check.difference, tuple(moving),
                                _shown(model, base, moving))
    name = measured[0]
    readers = tuple(n for n in at_bound if moves[n].reaches)
    named = at_bound + [n for n in moving if n not in at_bound]
    return PastDefaultBound(
        *sides, others, check.difference, tuple(named), _shown(model, base, named),
        measured=name, given=show_value(model, name, base[name]),
        bound=show_value(model, name, bound), side=format_side(base[name], bound),
        bounded=tuple(at_bound), readers=readers,
        within=" or ".join(dict.fromkeys(moves[n].within for n in (readers or at_bound))))


@dataclass(frozen=True)
class _Move:
    """How a default moves a failing check.

    Attributes
    ----------
    slope : float
        Change of the check's signed difference per unit of ln(default), moved off its
        bound (0: the check does not turn on it where it stands).
    within : str
        The side of its bound it may move to (``below 1``); empty if it sits on none.
    reaches : bool
        Whether some value on that side closes the check.
    """

    slope: float
    within: str = ""
    reaches: bool = False


def _move(model: Model, base: Mapping[str, float], name: str, check: CheckRecord,
          probe: Probe) -> _Move:
    value = base[name]
    if not isinstance(value, float) or value <= 0:
        return _Move(0.0)
    within, inward = _bound_side(model, name, value)
    step = PINS.gain_step
    start = check.signed

    def signed_at(log_factor: float) -> float | None:
        record = probe({**base, name: value * math.exp(inward * log_factor)})
        return None if record is None else record.signed

    moved = signed_at(step)
    slope = 0.0 if moved is None else (moved - start) / step
    if not within:
        return _Move(slope)
    decades = int(round(math.log10(PINS.bound_reach)))
    reaches = False
    for k in range(1, decades + 1):  # a max() may turn on it only far off the bound
        far = signed_at(k * math.log(10))
        if far is not None and (far == 0 or (far > 0) != (start > 0)):
            reaches = True
            break
    return _Move(slope, within, reaches)


def _bound_side(model: Model, name: str, value: float) -> tuple[str, int]:
    """The side of a bound a value on it may move to (``below 1``) and the direction
    in ln(value), or ("", -1) for a value on none of its quantity's bounds."""
    variable = model.variables[name]
    declared = value / variable.to_base
    for limit, word, inward in ((variable.upper, "below", -1), (variable.lower, "above", 1)):
        if limit is not None and limit > 0 and math.isclose(declared, limit, rel_tol=1e-12):
            return f"{word} {format_quantity(limit, variable.pint_unit)}", inward
    return "", -1


def _bound(base: Mapping[str, float], name: str, probe: Probe) -> float | None:
    """The value of pin ``name`` at which the check holds, the other pins as they are:
    Newton in ln(pin) on ln(lhs/rhs), one step for a relation in which it is a factor."""
    x = base[name]
    if not isinstance(x, float) or x <= 0:
        return None

    def residual(at: float) -> float | None:
        record = probe({**base, name: at})
        if record is None or record.lhs <= 0 or record.rhs <= 0:
            return None
        return math.log(record.lhs / record.rhs)

    step = PINS.gain_step
    r = residual(x)
    for _ in range(PINS.bound_steps):
        if r is None:
            return None
        if abs(r) <= PINS.bound_accept:
            return x
        moved = residual(x * math.exp(step))
        if moved is None or moved == r:
            return None
        x *= math.exp(-r * step / (moved - r))
        r = residual(x)
    return None


def _shown(model: Model, base: Mapping[str, float], names) -> tuple[str, ...]:
    return tuple(show_value(model, n, base[n]) for n in names)


def show_value(model: Model, name: str, value: float) -> str:
    """A base-unit value of quantity ``name`` as shown: ``120.2 token/s``."""
    variable = model.variables[name]
    return format_quantity(value / variable.to_base, variable.pint_unit)


def _base_container(model: Model, symbol):
    from chalk.symbolic.units import base_unit, unit_items
    from pint.util import UnitsContainer

    if symbol.name in model.variables:
        unit = model.variables[symbol.name].pint_unit
    else:
        unit = model.constants[symbol.name].pint_unit
    return UnitsContainer(dict(unit_items(base_unit(unit))))


def _upstream_pins(model: Model, plan: Plan, relation: str, pins) -> list[str]:
    """Pinned quantities that feed ``relation`` directly or through earlier steps, with
    the zeros the user stated in those relations (solvers.pinning.zeros: a relation of a
    narrowed model no longer names the zero that shaped it, a stated ``kv_extra_copies =
    0`` say, which is as much behind the conflict as any number; a preset's absences,
    a dense model's experts, are what the model is, not values to fix)."""
    solver_of = {v: step.relations for step in plan.steps for v in step.variables}
    followed: set[str] = {relation}

    def follow(name):
        found = solver_of.get(name, ())
        followed.update(found)
        return found

    names = set(upstream_pins(model, follow, model.variables_in(relation), pins))
    stated = ground_zeros(pins)
    original = model.parent
    while original is not None:  # each narrowing keeps its parent: zeros, a variant
        names |= {n for r in followed if r in original.relations
                  for n in original.variables_in(r) - model.variables_in(r) if n in stated}
        original = original.parent
    return sorted(names)
