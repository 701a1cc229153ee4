"""The rank of the relations at a solution: what they leave open there.

The planner decides what the pins determine from generic rows (solvers.analysis.rank): a max()
as a mixture of its regimes, sums linearised at the model's reference point. At the
solution itself the numbers can say otherwise: the regime they land in may leave a
target free, or a block may be flat along a direction (the pins fix only a
combination of its quantities). Both are decided here from the log-space Jacobian at
the solution, with exact gradients, by singular values at ``RANK.rtol_at``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from chalk.solvers.analysis.jacobian import log_jacobian_at
from chalk.solvers.tolerances import BLOCK, RANK
from chalk.symbolic.model import Model


def flat_at(model: Model, relations: Sequence[str], values: Mapping[str, float],
            names: Sequence[str], regimes: Mapping[str, str] | None = None) -> list[str]:
    """Quantities along which ``relations`` are flat at ``values`` (base units).

    The relations' log-space Jacobian over ``names`` is taken with exact gradients (each
    max() or min() in the regime ``regimes`` names for it), so a singular value below
    ``RANK.rtol_at`` times the largest is rounding, not a small but genuine sensitivity.
    A quantity is named when its share of a null direction is above
    ``BLOCK.flat_share`` of the largest share; empty if the Jacobian is regular (or
    cannot be evaluated there).
    """
    try:
        with np.errstate(all="ignore"):
            rows = log_jacobian_at(model, relations, values, names, regimes)
    except (ArithmeticError, ValueError, KeyError):
        return []
    if not rows.size or not np.all(np.isfinite(rows)):
        return []
    null = _null_directions(rows)
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
    rows = log_jacobian_at(model, relations, values, names, regimes, skip_undefined=True)
    if not len(rows):
        return tuple(t for t in targets if t in index)
    null = _null_directions(rows)
    if not null.size:
        return ()
    return tuple(t for t in targets if t in index
                 and float(np.max(np.abs(null[:, index[t]]))) > RANK.null_component)


def _null_directions(rows: np.ndarray) -> np.ndarray:
    """Unit vectors spanning the null space of ``rows`` (one per row of the result):
    singular values below ``RANK.rtol_at`` times the largest count as zero."""
    _, singular, vt = np.linalg.svd(rows)
    largest = singular[0] if singular.size else 0.0
    rank = int(np.sum(singular > RANK.rtol_at * largest)) if largest else 0
    return vt[rank:]
