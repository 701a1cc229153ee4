"""Naming a conflict: which relation failed, both sides with units, and the pins behind it."""

from __future__ import annotations

from collections.abc import Mapping

from chalk.solvers.execution.steps import CheckRecord
from chalk.solvers.planning.plan import Plan, upstream_pins
from chalk.symbolic.errors import InconsistentPins
from chalk.symbolic.model import Model
from chalk.symbolic.printing.numbers import format_gap
from chalk.symbolic.printing.quantities import format_quantity


def inconsistency(model: Model, check: CheckRecord, pins: Mapping[str, object],
                  plan: Plan) -> InconsistentPins:
    """The error for a failed cross-check, naming both sides and the pins behind it."""
    from chalk.symbolic.dimensions import dimension_of
    from chalk.symbolic.units import ureg

    relation = model.relations[check.relation]
    base_units = {s: _base_container(model, s) for s in relation.symbols}
    lhs_unit = ureg.Unit(dimension_of(relation.lhs, base_units))
    involved = _upstream_pins(model, plan, check.relation, pins)
    return InconsistentPins(
        relation.name, relation.equation,
        format_quantity(check.lhs, lhs_unit), format_quantity(check.rhs, lhs_unit),
        format_gap(check.difference), involved, check.difference,
    )


def _base_container(model: Model, symbol):
    from chalk.symbolic.units import base_unit, unit_items
    from pint.util import UnitsContainer

    if symbol.name in model.variables:
        unit = model.variables[symbol.name].pint_unit
    else:
        unit = model.constants[symbol.name].pint_unit
    return UnitsContainer(dict(unit_items(base_unit(unit))))


def _upstream_pins(model: Model, plan: Plan, relation: str, pins) -> list[str]:
    """Pinned quantities that feed ``relation`` directly or through earlier steps."""
    solver_of = {v: step.relations for step in plan.steps for v in step.variables}
    return upstream_pins(model, lambda v: solver_of.get(v, ()), model.variables_in(relation),
                         pins)
