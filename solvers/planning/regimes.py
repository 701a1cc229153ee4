"""Whether choosing max()/min() regimes could fix what their mixture leaves open.

The planner first decides with each ``max`` as a mixture of its regimes; a target left
open there may be fixed in one regime combination. Trying every combination costs one
analysis each, so these tests say first whether any could.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from chalk.solvers.analysis.jacobian import regime_rows
from chalk.solvers.analysis.rank import RankAnalysis
from chalk.solvers.tolerances import RANK
from chalk.symbolic.model import Model


def regimes_reach(model: Model, analysis: RankAnalysis, targets) -> bool:
    """Whether a max()/min() relation touches what the pins leave open about the targets
    (otherwise no choice of regime can fix them)."""
    reached = set(targets)
    for t in targets:
        reached |= set(analysis.open_part(t))
    for row in analysis.rows.values():
        if reached & {c for c in row if c not in analysis.pinned}:
            reached |= {c for c in row if c not in analysis.pinned}
    return any(relation.has_regimes() and model.variables_in(name) & reached
               for name, relation in model.relations.items())


def free_in_every_regime(model: Model, analysis: RankAnalysis, target: str) -> bool:
    """Whether some direction the pins leave open moves ``target`` while keeping both
    regimes of every max()/min() relation holding to first order.

    Such a direction solves every regime combination's system as well as the mixture's,
    so no choice of regimes can fix the target, and the combinations need not be tried.
    The open directions are parametrised by the free quantities: a free one moves by
    itself, a pivot by minus its reduced row, anything fixed not at all. The target is
    free in every regime when its own components are not a combination of the regime
    rows' (least squares, to ``RANK.null_component`` of their size).
    """
    free = analysis.free
    if not free:
        return False

    def moves(name: str, column: str) -> float:
        if name == column:
            return 1.0
        row = analysis.rows.get(name)
        return -float(row.get(column, 0)) if row is not None else 0.0

    wanted = np.array([moves(target, f) for f in free])
    if not wanted.any():
        return False
    system = np.array([[sum(float(c) * moves(v, f) for v, c in entries
                            if v not in analysis.pinned) for f in free]
                       for entries in _distinct_regime_rows(model)]).reshape(-1, len(free))
    if not system.any():
        return True
    weights, *_ = np.linalg.lstsq(system.T, wanted, rcond=None)
    left = np.linalg.norm(system.T @ weights - wanted)
    return bool(left > RANK.null_component * np.linalg.norm(wanted))


@lru_cache(maxsize=16)
def _distinct_regime_rows(model: Model) -> tuple[tuple[tuple[str, object], ...], ...]:
    """Every row any regime of any max()/min() relation takes, once each (per model)."""
    rows = {(name, tuple(sorted(row.entries.items())))
            for _, by_relation in regime_rows(model) for name, row in by_relation.items()}
    return tuple(entries for _, entries in sorted(rows))
