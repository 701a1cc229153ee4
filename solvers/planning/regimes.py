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
from chalk.solvers.analysis.screen import projection_outside
from chalk.solvers.tolerances import RANK
from chalk.symbolic.model import MODELS_KEPT, Model


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


@lru_cache(maxsize=MODELS_KEPT)
def _distinct_regime_rows(model: Model) -> tuple[tuple[tuple[str, object], ...], ...]:
    """Every row any regime of any max()/min() relation takes, once each (per model)."""
    rows = {(name, tuple(sorted(row.entries.items())))
            for _, by_relation in regime_rows(model) for name, row in by_relation.items()}
    return tuple(entries for _, entries in sorted(rows))


@lru_cache(maxsize=MODELS_KEPT)
def _by_labels(model: Model) -> dict:
    """Each regime combination's rows by its labels (per model)."""
    return dict(regime_rows(model))


def may_fix(model: Model, pinned: frozenset[str], targets, labels: tuple[str, ...]) -> bool:
    """Whether the regime combination ``labels`` could fix every target (a screen run
    before its rank analysis).

    A target is fixed when its unit direction lies in the span of the Jacobian's rows
    over the unpinned quantities. The rows no regime changes are the same in every
    combination, so their span is taken once per pin set; a combination adds only its
    max()/min() rows. Their parts outside that span must then reach what the unit
    direction leaves outside it. This is decided in floating point, and a combination is
    set aside only when more than ``RANK.regime_screen`` is left over: far above
    rounding, so the analysis still decides every combination that could fix a target.
    """
    screen = regime_screens(model, pinned)
    branch = _by_labels(model)[labels]
    added = np.array([screen.outside(name, branch[name]) for name in screen.regime_relations])
    for target in targets:
        if target in pinned:
            continue
        wanted = screen.outside_unit(target)
        if wanted is None:  # not a quantity of the Jacobian's unpinned columns
            return True
        if added.size and added.any():
            weights, *_ = np.linalg.lstsq(added.T, wanted, rcond=None)
            wanted = wanted - added.T @ weights
        if np.linalg.norm(wanted) > RANK.regime_screen:
            return False
    return True


class _Screen:
    """The span of the rows no regime changes, over one pin set's unpinned quantities."""

    def __init__(self, model: Model, pinned: frozenset[str]):
        from chalk.solvers.analysis.jacobian import log_rows

        self.regime_relations = tuple(sorted(n for n, r in model.relations.items()
                                             if r.has_regimes()))
        changing = set(self.regime_relations)
        rows = log_rows(model)
        columns = sorted({c for row in rows.values() for c in row.entries} - pinned)
        self.column = {c: i for i, c in enumerate(columns)}
        fixed = [self._vector(row) for name, row in rows.items() if name not in changing]
        self._outside = projection_outside(fixed, len(columns))
        # each branch's row is shared by half the combinations: projected once
        self._projected: dict[tuple[str, int], tuple[object, np.ndarray]] = {}

    def _vector(self, row) -> np.ndarray:
        out = np.zeros(len(self.column))
        for c, v in row.entries.items():
            i = self.column.get(c)
            if i is not None:
                out[i] = float(v)
        return out

    def outside(self, relation: str, row) -> np.ndarray:
        """A regime relation's row's part outside the span of the rows no regime changes
        (remembered per row object)."""
        key = (relation, id(row))
        if key not in self._projected:
            self._projected[key] = (row, self._outside(self._vector(row)))
        return self._projected[key][1]

    def outside_unit(self, name: str) -> np.ndarray | None:
        """The unit direction of ``name``'s part outside that span (None for a quantity
        no row holds)."""
        i = self.column.get(name)
        if i is None:
            return None
        unit = np.zeros(len(self.column))
        unit[i] = 1.0
        return self._outside(unit)


@lru_cache(maxsize=64)
def regime_screens(model: Model, pinned: frozenset[str]) -> _Screen:
    """The screen of :func:`may_fix` for one pin set (cached)."""
    return _Screen(model, pinned)
