"""The rank of the relations at a solution: what they leave open there.

The planner decides what the pins determine from generic rows (solvers.analysis.rank): a max()
as a mixture of its regimes, sums linearised at the model's reference point. At the
solution itself the numbers can say otherwise: the regime they land in may leave a
target free, or a block may be flat along a direction (the pins fix only a
combination of its quantities). Both are decided here from the log-space Jacobian at
the solution, with exact gradients, by the conditioning rule
(solvers.analysis.conditioning.block_elasticities): a direction along which rounding
in the inputs or in the relations moves the quantities ``CONDITIONING.refuse`` times
as much is not fixed by them. A nearly flat direction short of that is a genuine if
small sensitivity, answered with the conditioning's warning, never called a family.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from chalk.solvers.analysis.conditioning import block_elasticities
from chalk.solvers.analysis.jacobian import log_jacobian_at
from chalk.solvers.tolerances import BLOCK, CONDITIONING, RANK
from chalk.symbolic.model import Model


def flat_at(model: Model, relations: Sequence[str], values: Mapping[str, float],
            names: Sequence[str], regimes: Mapping[str, str] | None = None) -> list[str]:
    """Quantities along which ``relations`` are flat at ``values`` (base units).

    The relations' log-space Jacobian over ``names`` (and over their other quantities,
    the inputs) is taken with exact gradients (each max() or min() in the regime
    ``regimes`` names for it); a direction is flat when rounding reaches
    ``CONDITIONING.refuse`` along it (:func:`_null_directions`). A quantity is named
    when its share of a null direction is above ``BLOCK.flat_share`` of the largest
    share; empty if the Jacobian is regular (or cannot be evaluated there).
    """
    inputs = other_quantities(model, relations, names)
    try:
        with np.errstate(all="ignore"):
            rows = log_jacobian_at(model, relations, values, [*names, *inputs], regimes)
    except (ArithmeticError, ValueError, KeyError):
        return []
    if not rows.size or not np.all(np.isfinite(rows)):
        return []
    null = _null_directions(rows, len(names))
    if not null.size:
        return []
    weight = np.max(np.abs(null), axis=0)
    return [n for n, w in zip(names, weight, strict=True) if w > BLOCK.flat_share * weight.max()]


def open_at(model: Model, relations: Iterable[str], values: Mapping[str, float],
            unknowns: Iterable[str], targets: Iterable[str],
            regimes: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Targets that ``relations`` leave open at a solution ``values`` (base units).

    The relations' log-space Jacobian is taken at the solution itself, each max() or
    min() in the regime the numbers put it in (or the one ``regimes`` names for it, as
    at a balance point where both hold), over ``unknowns`` (what was computed, and any
    placeholders); a target moved by a direction of its null space is not fixed there,
    however the plan found it.
    """
    names = sorted(unknowns)
    if not names:
        return ()
    index = {n: i for i, n in enumerate(names)}
    relations = list(relations)
    inputs = other_quantities(model, relations, names)
    rows = rows_at(model, relations, values, [*names, *inputs], regimes, names)
    if not len(rows):
        return tuple(t for t in targets if t in index)
    null = _null_directions(rows, len(names))
    if not null.size:
        return ()
    return tuple(t for t in targets if t in index
                 and float(np.max(np.abs(null[:, index[t]]))) > RANK.null_component)


def rows_at(model: Model, relations: Iterable[str], values: Mapping[str, float],
            columns: Sequence[str], regimes: Mapping[str, str] | None,
            unknowns: Iterable[str]) -> np.ndarray:
    """The log-space Jacobian rows of ``relations`` at ``values`` over ``columns``, those
    that can be evaluated there, with the unknowns that are exactly zero read linearly.

    ln 0 has no value: in log space a quantity at zero (no extra copy, no replicated
    attention) has a column of zeros, and a relation whose two sides both vanish there
    has no scale; either way the relation that fixes the quantity at zero would seem to
    leave it free. Such a quantity's column is taken at ``RANK.zero_probe`` of its
    typical value and divided by that fraction: the change per typical value of it, a
    scale the rank does not depend on. A relation whose sides both vanish at the
    solution has its row scaled to a largest entry of 1.
    """
    relations = list(relations)
    zeros = {n for n in unknowns if values.get(n) == 0}
    if not zeros:
        return log_jacobian_at(model, relations, values, columns, regimes,
                               skip_undefined=True)
    index = {n: i for i, n in enumerate(columns)}
    probe = {n: RANK.zero_probe * (model.variables[n].typical or 1.0)
             * model.variables[n].to_base for n in zeros}
    shifted = {**values, **probe}
    rows = []
    with np.errstate(all="ignore"):
        for name in relations:
            at = log_jacobian_at(model, [name], values, columns, regimes,
                                 skip_undefined=True)
            touched = zeros & model.variables_in(name)
            if not touched:
                rows.extend(at)
                continue
            near = log_jacobian_at(model, [name], shifted, columns, regimes,
                                   skip_undefined=True)
            if not len(near) or not np.all(np.isfinite(near)):
                rows.extend(at)
                continue
            row = near[0]
            for n in touched:
                if n in index:
                    row[index[n]] /= RANK.zero_probe
            largest = float(np.max(np.abs(row)))
            if not largest:
                continue
            if not len(at):  # both sides vanish at the solution: no scale of their own
                row = row / largest
            rows.append(row)
    return np.array(rows).reshape(len(rows), len(columns))


def other_quantities(model: Model, relations: Iterable[str], names: Iterable[str]
                     ) -> list[str]:
    """The quantities of ``relations`` other than ``names`` (sorted): the inputs of a
    block solved for ``names``, what rounding enters by."""
    return sorted({v for r in relations for v in model.variables_in(r)} - set(names))


def _null_directions(rows: np.ndarray, count: int) -> np.ndarray:
    """Unit vectors over the first ``count`` columns of ``rows`` (the unknowns; the rest
    are inputs) that the relations leave open, one per row of the result: the directions
    along which rounding reaches ``CONDITIONING.refuse`` (the rule that refuses an
    ill-conditioned answer)."""
    _, reach, directions = block_elasticities(rows[:, :count], rows[:, count:])
    return directions[reach >= CONDITIONING.refuse]
