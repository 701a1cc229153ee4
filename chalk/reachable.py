"""The most a set of pins can reach, said beside a refusal.

Asked for a speed one user cannot get (1,000 token/s where the weights alone take 5 ms
a step), the solver finds no physical value and names the quantity that would have to
be negative. What the user wants to hear is the bound: the value their figure takes at
the edge of the free quantity's range (a batch of one sequence), when that edge is where
the figure is most extreme. A deployment's throughput is most at the other edge, the
largest batch its HBM holds (``memory_fill = 1``): asked for a rate no batch reaches, the
refusal says the most the deployment can do. This module asks that question again with
the edge pinned.
"""

from __future__ import annotations

import math

from chalk.symbolic.errors import ChalkError


def reachable_bounds(solve, model, prepared, given, presets, options) -> str:
    """A clause naming, for each figure the user pinned that the relations compute, the
    most (or least) it reaches at the edge of an unpinned quantity's declared range;
    "" when none can be said.

    The edge is a :class:`~chalk.symbolic.relations.Condition` on a quantity the
    question leaves free: ``batch_size >= 1 sequence`` or ``memory_fill <= 1``. The
    figure is solved there and just inside it; it is reported only where the user's
    value lies beyond the edge's value, away from the value inside (so the edge is the
    extreme in the direction asked, as it is for a quantity monotone over the range).
    ``solve`` is :func:`chalk.solve`, passed in by it.
    """
    from chalk.solvers.pinning.pinned import Layer
    from chalk.solvers.pinning.pins import parse_given
    from chalk.solvers.records.flags import bound_value
    from chalk.symbolic.printing.quantities import format_quantity

    pairs = [(model.variable(n).name, v) for n, v in parse_given(given)]
    pinned = {n for n, _ in pairs}
    figures = [n for n, p in prepared.pins.items()
               if p.layer is Layer.GIVEN and model.variables[n].derived]
    inward = {">=": 1 + EDGE_STEP, "<=": 1 - EDGE_STEP}
    edges = [c for c in model.conditions.values()
             if c.kind in inward and c.quantity not in pinned]
    clauses = []
    for condition in edges:
        free = model.variables[condition.quantity]
        edge = bound_value(condition)
        for figure in figures:
            rest = [(n, v) for n, v in pairs if n != figure]
            values = []
            for at in (edge, edge * inward[condition.kind]):
                shown = f"{at / free.to_base!r} {free.unit}"
                try:
                    answer = solve(figure, [*rest, (free.name, shown)], presets,
                                   regime=options.regime, rtol=options.rtol,
                                   timeout=options.timeout)
                except ChalkError:
                    break
                values.append(answer.value(figure) * model.variables[figure].to_base)
            if len(values) < 2 or not all(math.isfinite(v) for v in values):
                continue
            asked = prepared.pins[figure].value
            if (asked - values[0]) * (values[0] - values[1]) <= 0:
                continue  # not the extreme in the direction asked
            most = "most" if asked > values[0] else "least"
            variable = model.variables[figure]
            clauses.append(f"the {most} these pins reach is {figure} = "
                           f"{format_quantity(values[0] / variable.to_base, variable.pint_unit)}"
                           f", at {condition.quantity} = "
                           f"{format_quantity(edge / free.to_base, free.pint_unit)}")
    return "; ".join(clauses)


EDGE_STEP = 0.01  # how far inside the edge the figure is solved again, to see its direction
