"""Whether any pins could determine a quantity: a floating-point screen before a plan.

A rank analysis (solvers.analysis.rank) decides what a pin set determines, one sparse
elimination per pin set and regime combination. Whether a quantity *could* be
determined is much cheaper to rule out. Every relation's log-space row, in every regime
of every max()/min() (solvers.analysis.jacobian), spans a space ``L`` over the model's
quantities; its orthogonal complement ``N`` holds the directions no relation constrains.
Pins ``S`` determine a quantity ``x`` in some regime combination only if the unit vector
of ``x`` lies in ``L + span(e_s for s in S)`` (each combination's rows lie in ``L``), that
is, only if the row of ``x`` in a basis of ``N`` is a combination of the rows of ``S``.
One singular value decomposition per model gives that basis; each question is then a
least-squares problem of pins by free directions.
"""

from __future__ import annotations

from collections.abc import Collection
from functools import lru_cache

import numpy as np
from chalk.solvers.analysis.jacobian import log_rows, regime_rows
from chalk.solvers.tolerances import RANK
from chalk.symbolic.model import MODELS_KEPT, Model


def may_determine(model: Model, pinned: Collection[str], name: str) -> bool:
    """Whether ``pinned`` could determine ``name`` in some regime combination.

    False only when the row of ``name`` in the free directions leaves more than
    ``RANK.regime_screen`` outside the span of the pins' rows: far above rounding, so a
    rank analysis would find it undetermined in every combination. True otherwise
    (the analysis then decides), and for a pinned ``name``.
    """
    if name in pinned:
        return True
    column, null = _free_directions(model)
    i = column.get(name)
    if i is None:
        return False  # no relation holds it
    wanted = null[i]
    pins = [column[p] for p in pinned if p in column]
    if pins:
        held = null[pins]
        weights, *_ = np.linalg.lstsq(held.T, wanted, rcond=None)
        wanted = wanted - held.T @ weights
    return bool(np.linalg.norm(wanted) <= RANK.regime_screen)


@lru_cache(maxsize=MODELS_KEPT)
def _free_directions(model: Model) -> tuple[dict[str, int], np.ndarray]:
    """The model's quantities by column, and an orthonormal basis of the directions no
    row of any regime constrains (one row per quantity; cached per model)."""
    rows = {tuple(sorted(row.entries.items())) for row in log_rows(model).values()}
    rows |= {tuple(sorted(row.entries.items()))
             for _, by_relation in regime_rows(model) for row in by_relation.values()}
    columns = sorted({c for row in rows for c, _ in row})
    column = {c: i for i, c in enumerate(columns)}
    matrix = np.zeros((len(rows), len(columns)))
    for r, row in enumerate(sorted(rows)):
        for c, v in row:
            matrix[r, column[c]] = float(v)
    _, values, basis = np.linalg.svd(matrix, full_matrices=True)
    # every direction with a singular value above rounding counts as constrained; keeping
    # small ones makes the span larger and the screen more permissive, never stricter
    rank = int(np.sum(values > values[0] * np.finfo(float).eps * max(matrix.shape)))
    return column, basis[rank:].T
