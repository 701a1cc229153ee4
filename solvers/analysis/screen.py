"""Whether pins could determine a quantity in some regime: a screen before a plan.

A rank analysis (solvers.analysis.rank) decides what a pin set determines, one sparse
elimination per pin set and regime combination. Ruling a quantity out is much cheaper,
in the coordinates of what the relations leave open. The rows of the relations without
a max() or min() are the same in every combination; their null space has an
orthonormal basis ``N`` (one row per quantity, one column per open direction, one
singular value decomposition per model). An open direction is ``N a``; pinning ``s``
asks ``N[s] a = 0``, and a max()/min() relation in one of its regimes (or as the
mixture of them all) asks ``(r N) a = 0`` of its row ``r`` there. A quantity ``x`` is
fixed exactly when ``N[x] a = 0`` on every ``a`` those leave, that is when ``N[x]`` is a
combination of the pins' rows and the chosen regime rows. So each question is a few
least-squares problems the size of the pins by the open directions: with the mixture
rows, then one regime per relation whose rows still matter, depth first, a branch given
up once all the rows still to choose from cannot do it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from chalk.solvers.analysis.jacobian import log_rows, regime_rows
from chalk.solvers.tolerances import RANK
from chalk.symbolic.model import MODELS_KEPT, Model


def may_determine(model: Model, pinned: Collection[str], name: str) -> bool:
    """Whether ``pinned`` could determine ``name``, in the mixture of regimes or in one
    combination of them.

    False only when, in every combination, the part of ``name``'s open directions left
    outside what the pins and that combination's rows fix is above
    ``RANK.regime_screen``: far above rounding, so a rank analysis would find it
    undetermined. True otherwise (the analysis then decides), and for a pinned ``name``.
    """
    if name in pinned:
        return True
    return _may_determine(model, frozenset(pinned), name)


@lru_cache(maxsize=4096)
def _may_determine(model: Model, pinned: frozenset[str], name: str) -> bool:
    # remembered: a question's preparation screens the same pins for the same quantity
    # again and again (each headline, default and stated target is weighed in several
    # passes); over the fast test loop about four calls in five were repeats
    space = _open_directions(model)
    i = space.column.get(name)
    if i is None:
        return False  # no relation holds it
    left, choices = _beside_pins(model, frozenset(pinned))
    wanted = left(space.basis[i])
    # the mixture of every max()/min(), then one regime each
    return (_small(wanted) or _small(wanted, [c[0] for c in choices])
            or _one_regime_each(wanted, [c[1:] for c in choices]))


def clear_caches() -> None:
    """Forget what the screen remembered of pin sets (the open directions of each model
    stay: they belong to the model, as its rows do)."""
    _may_determine.cache_clear()
    _beside_pins.cache_clear()


@lru_cache(maxsize=64)
def _beside_pins(model: Model, pinned: frozenset[str]):
    """The projection onto what ``pinned`` leave open, and per max()/min() relation
    that still moves something there its rows so projected (mixture first)."""
    space = _open_directions(model)
    left = projection_outside([space.basis[space.column[p]] for p in sorted(pinned)
                               if p in space.column], space.basis.shape[1])
    choices = []
    for options in space.regime_options:
        # a row is left out only where it is rounding: however small, any other part of
        # one is a direction it may fix (span does not care for size); a regime whose row
        # is rounding here spans less than any other, so it is not tried beside them
        mixture, *regimes = (left(row) for row in options)
        moving = [v for v in regimes if _moves(v)]
        if _moves(mixture) or moving:
            choices.append([mixture, *(moving or regimes[:1])])
    return left, choices


def _moves(row: np.ndarray) -> bool:
    """Whether a projected row is more than rounding (``RANK.rtol`` of a row's size)."""
    return bool(np.linalg.norm(row) > RANK.rtol)


def _one_regime_each(wanted: np.ndarray, choices: list[list[np.ndarray]]) -> bool:
    """Whether one row from each of ``choices`` spans ``wanted`` (within
    ``RANK.regime_screen``), tried depth first: each row chosen is taken out of what is
    left to span and of the rows still to choose from, and a branch is given up as soon
    as every row still to choose from, all at once, cannot span what is left."""
    if _small(wanted):
        return True
    if not choices or not _small(wanted, [v for c in choices for v in c]):
        return False
    for row in choices[0]:
        if not _moves(row):
            rest, left = choices[1:], wanted
        else:
            unit = row / np.linalg.norm(row)  # a row merely small counts: never stricter
            left = wanted - unit * (unit @ wanted)
            rest = [[v - unit * (unit @ v) for v in c] for c in choices[1:]]
        if _one_regime_each(left, rest):
            return True
    return False


def row_space(matrix: np.ndarray, complement: bool = False) -> np.ndarray:
    """An orthonormal basis (one vector a row) of the span of ``matrix``'s rows, or with
    ``complement`` of its orthogonal complement.

    A direction counts as spanned when its singular value is above rounding: one
    counted in that is not makes a screen more permissive, never stricter.
    """
    if not matrix.size:
        return np.eye(matrix.shape[1]) if complement else np.zeros((0, matrix.shape[1]))
    _, values, vt = np.linalg.svd(matrix, full_matrices=complement)
    rank = int(np.sum(values > values[0] * np.finfo(float).eps * max(matrix.shape)))
    return vt[rank:] if complement else vt[:rank]


def projection_outside(rows: list[np.ndarray], size: int):
    """The projection onto what ``rows`` (vectors of ``size``) leave: the orthogonal
    complement of their span, as :func:`row_space` counts it."""
    if not rows:
        return lambda v: v
    kept = row_space(np.array(rows).reshape(-1, size))
    return lambda v: v - kept.T @ (kept @ v)


def _small(wanted: np.ndarray, by: list[np.ndarray] | None = None) -> bool:
    """Whether ``wanted`` is within ``RANK.regime_screen`` of the span of ``by``."""
    if by:
        matrix = np.array(by).T
        weights, *_ = np.linalg.lstsq(matrix, wanted, rcond=None)
        wanted = wanted - matrix @ weights
    return bool(np.linalg.norm(wanted) <= RANK.regime_screen)


@dataclass(frozen=True)
class _Space:
    """A model's open directions: ``basis`` (a row per quantity of ``column``) spans the
    null space of the rows no regime changes; ``regime_options`` holds, per max()/min()
    relation, its mixture row and then each regime's row, in those coordinates."""

    column: dict[str, int]
    basis: np.ndarray
    regime_options: tuple[tuple[np.ndarray, ...], ...]


@lru_cache(maxsize=MODELS_KEPT)
def _open_directions(model: Model) -> _Space:
    rows = log_rows(model)
    changing = sorted(n for n, r in model.relations.items() if r.has_regimes())
    columns = sorted({c for row in rows.values() for c in row.entries}
                     | {c for _, by_relation in regime_rows(model)
                        for row in by_relation.values() for c in row.entries})
    column = {c: i for i, c in enumerate(columns)}

    def vector(row) -> np.ndarray:
        out = np.zeros(len(columns))
        for c, v in row.entries.items():
            out[column[c]] = float(v)
        return out

    fixed = [vector(rows[n]) for n in sorted(rows) if n not in changing]
    basis = row_space(np.array(fixed).reshape(-1, len(columns)), complement=True).T
    options = []
    for name in changing:
        seen = {id(rows[name]): rows[name]}
        for _, by_relation in regime_rows(model):
            seen.setdefault(id(by_relation[name]), by_relation[name])
        options.append(tuple(vector(row) @ basis for row in seen.values()))
    return _Space(column, basis, tuple(options))
