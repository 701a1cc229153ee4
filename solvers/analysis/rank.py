"""What the pins determine, decided by rank in log space.

Every quantity is positive, so with ``y = ln x`` a relation that is a product of
powers is a linear equation in the ``y`` with rational coefficients (its
exponents); any other relation is linearised at the model's reference point
(solvers.analysis.reference), a ``max`` as a generic mixture of its regimes. Stacking
these rows over the unpinned quantities gives the log-space Jacobian of the
question. Gaussian elimination to reduced row echelon form then says, without
computing a single answer:

* a quantity is determined exactly when its unit vector lies in the row space:
  its reduced row has no entry in a free column. A quantity that appears in the
  relations but not in that row *cancels* (the lecture's "N cancels");
* a relation whose row reduces to zero is implied by the others: with pins left
  in it, it is a cross-check of those pins; with nothing left, an identity;
* the reduced row of an undetermined quantity is the combination the pins do fix
  (``chip_flops * n_chips``, say);
* the free columns span the null space, and the smallest sets of extra pins are
  the smallest sets whose null-space vectors span the targets' (circuits of the
  null-space matroid, found by projection rather than by trying every plan).

Rows from products of powers are kept as exact fractions; a row that mixes in a
linearised relation becomes floating point and is compared with zero at a
declared relative tolerance (solvers.tolerances.RANK). Elimination is sparse and
follows the structural solve order, so a large, mostly triangular model costs
about as much as its number of entries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from chalk.solvers.analysis.jacobian import LogRow, Number, log_rows
from chalk.solvers.analysis.reduction import Echelon, ReducedRow
from chalk.solvers.tolerances import RANK
from chalk.symbolic.model import Model


@dataclass(frozen=True)
class RankAnalysis:
    """What a question's log-space Jacobian says, in reduced row echelon form.

    Attributes
    ----------
    pinned : frozenset of str
        Quantities whose values are given (columns that are never pivots).
    settled : frozenset of str
        Quantities fixed block by block in the structural solve order (each block's
        own square matrix non-singular, its inputs already fixed); they have no
        reduced row here and count as fixed in the rows of everything else.
        ``settled_by`` names each one's block of relations.
    rows : mapping of pivot quantity to its reduced row
        ``{quantity: coefficient}`` for the quantities reduced by elimination; the
        pivot has coefficient 1, every other unfixed entry is in a free column.
    solved_by : mapping of quantity to relation
        The relation that fixes (or pivots on) each quantity: the independent ones.
    dependent : tuple of (relation, fixed entries)
        Relations implied by the others; the fixed quantities left in the row are what
        the relation cross-checks (empty: an identity, never checked).
    free : tuple of str
        Unpinned quantities that are not pivots: a basis of what is left open.
    """

    pinned: frozenset[str]
    rows: Mapping[str, Mapping[str, Number]]
    solved_by: Mapping[str, str]
    dependent: tuple[tuple[str, Mapping[str, Number]], ...]
    free: tuple[str, ...]
    settled: frozenset[str] = frozenset()
    settled_by: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    determined: frozenset[str] = field(init=False)

    def __post_init__(self):
        fixed = self.pinned | self.settled
        reduced = frozenset(p for p, row in self.rows.items()
                            if not any(c != p and c not in fixed for c in row))
        object.__setattr__(self, "determined", reduced | self.settled)

    def _fixed(self, name: str) -> bool:
        return name in self.pinned or name in self.settled

    def is_determined(self, name: str) -> bool:
        """Whether the pins fix ``name`` (pins themselves count as fixed)."""
        return name in self.pinned or name in self.determined

    @property
    def checks(self) -> tuple[str, ...]:
        """Relations that cross-check pins (dependent, with fixed quantities left)."""
        return tuple(sorted(r for r, left in self.dependent if left))

    def pins_behind(self, model: Model, name: str) -> tuple[str, ...]:
        """Pins that ``name`` depends on: the fixed entries of its reduced row, followed
        back through the blocks that settled them."""
        found, seen, stack = set(), set(), [name]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            if current in self.pinned:
                found.add(current)
            elif current in self.rows:
                stack.extend(c for c in self.rows[current] if c != current and self._fixed(c))
            elif current in self.settled:
                for relation in self.settled_by.get(current, ()):
                    stack.extend(model.variables_in(relation) - {current})
        return tuple(sorted(found))

    def check_pins(self, model: Model, relation: str) -> tuple[str, ...]:
        """The pins a cross-check relation constrains."""
        for r, left in self.dependent:
            if r == relation:
                out = set()
                for c in left:
                    out.update(self.pins_behind(model, c))
                return tuple(sorted(out))
        return ()

    def open_part(self, name: str) -> dict[str, Number]:
        """The free quantities in ``name``'s reduced row with their coefficients: along
        ``ln name + sum(c * ln f)`` the pins fix the value. Empty for a determined one."""
        if name in self.rows:
            return {c: v for c, v in self.rows[name].items()
                    if c != name and not self._fixed(c)}
        return {}

    def fixed_combination(self, name: str) -> dict[str, Number] | None:
        """``{quantity: exponent}`` of a product involving ``name`` that the pins fix (its
        reduced row), or ``None`` if they fix none."""
        if name in self.rows:
            row = self.rows[name]
            return {c: v for c, v in row.items() if not self._fixed(c)}
        best = None
        for row in self.rows.values():
            if name in row:
                combo = {c: v for c, v in row.items() if not self._fixed(c)}
                if best is None or len(combo) < len(best):
                    best = combo
        if best is None:
            return None
        scale = best[name]
        return {c: v / scale for c, v in best.items()}

    def null_vector(self, name: str) -> dict[str, Number]:
        """How ``ln name`` moves along the free directions (coordinates: free quantities)."""
        if name in self.free:
            return {name: Fraction(1)}
        return {c: -v for c, v in self.open_part(name).items()}


def analyse(model: Model, pinned: Iterable[str], blocks: Sequence[tuple] = (),
            order: Sequence[str] = (), preferred: Mapping[str, str] | None = None,
            preference: Callable[[str], object] | None = None,
            regime: Mapping[str, LogRow] | None = None) -> RankAnalysis:
    """Reduce the log-space Jacobian of ``model`` with ``pinned`` quantities known.

    Parameters
    ----------
    model : Model
    pinned : iterable of str
    blocks : sequence of (relations, quantities)
        Square blocks in a structural solve order (Dulmage-Mendelsohn). Each block
        whose inputs are already fixed and whose own square matrix is non-singular
        fixes its quantities outright; that is decided on the block's small matrix,
        exactly when its rows are products of powers. Every other relation goes to
        sparse elimination.
    order : sequence of relation names
        The order the remaining rows are taken in (others follow, sorted). Rows taken
        later are the ones found dependent, so surplus relations belong at the end.
    preferred : mapping of relation to quantity, optional
        The quantity each relation should pivot on if it can (its structural match).
    preference : callable, optional
        Sort key over quantities for choosing a pivot otherwise (lowest first); the
        quantities left free are the ones that sort last.
    regime : mapping of relation to LogRow, optional
        Rows that replace the mixtures of max()/min() relations: one combination of
        regimes (see :func:`regime_rows`).
    """
    pinned = frozenset(pinned)
    rows = {**log_rows(model), **(regime or {})}
    settled: set[str] = set()
    settled_by: dict[str, tuple[str, ...]] = {}
    solved_by: dict[str, str] = {}
    done: set[str] = set()
    for relations, quantities in blocks:
        inputs = set().union(*(model.variables_in(r) for r in relations)) - set(quantities)
        if not inputs <= pinned | settled:
            continue
        if _nonsingular([rows[r] for r in relations], quantities):
            settled.update(quantities)
            settled_by.update({q: tuple(relations) for q in quantities})
            matched = preferred or {}
            for r, v in zip(relations, quantities, strict=True):
                solved_by[matched.get(r, v) if len(relations) == 1 else v] = r
            done.update(relations)
    fixed = pinned | frozenset(settled)
    remaining = [r for r in dict.fromkeys(list(order) + sorted(model.relations))
                 if r not in done]
    reduced = _eliminate(model, rows, fixed, remaining, preferred or {},
                         preference or (lambda name: name))
    solved_by.update(reduced.solved_by)
    return RankAnalysis(pinned, reduced.rows, solved_by, reduced.dependent, reduced.free,
                        frozenset(settled), settled_by)


def _nonsingular(block_rows: list[LogRow], quantities) -> bool:
    """Whether a square block's own matrix (its rows over its quantities) is regular.

    A row straight from a relation has no cancellation in it: one quantity's entry is
    regular exactly when it is not zero, however small beside the others. A larger
    floating-point block is equilibrated (each row, then each column, scaled to a
    largest entry of one) before its rank is taken at ``RANK.rtol``, so that a small
    but genuine coefficient is not mistaken for rounding.
    """
    if len(quantities) == 1:
        return block_rows[0].entries.get(quantities[0], 0) != 0
    if all(r.exact for r in block_rows) and len(quantities) <= RANK.exact_block_limit:
        matrix = [[Fraction(r.entries.get(q, 0)) for q in quantities] for r in block_rows]
        return _exact_rank(matrix) == len(quantities)
    matrix = np.array([[float(r.entries.get(q, 0)) for q in quantities] for r in block_rows])
    for axis in (1, 0):
        largest = np.max(np.abs(matrix), axis=axis, keepdims=True)
        if not np.all(largest > 0):
            return False  # a row or column of zeros
        matrix = matrix / largest
    return np.linalg.matrix_rank(matrix, tol=RANK.rtol) == len(quantities)


def _exact_rank(matrix: list[list[Fraction]]) -> int:
    """Rank of a small matrix of fractions by Gaussian elimination."""
    rows = [list(r) for r in matrix]
    rank, columns = 0, len(rows[0]) if rows else 0
    for column in range(columns):
        pivot = next((i for i in range(rank, len(rows)) if rows[i][column] != 0), None)
        if pivot is None:
            continue
        rows[rank], rows[pivot] = rows[pivot], rows[rank]
        for i in range(len(rows)):
            if i != rank and rows[i][column] != 0:
                factor = rows[i][column] / rows[rank][column]
                rows[i] = [a - factor * b for a, b in zip(rows[i], rows[rank], strict=True)]
        rank += 1
    return rank


@dataclass
class _Reduced:
    rows: dict
    solved_by: dict
    dependent: tuple
    free: tuple


def _eliminate(model, rows, fixed, sequence, preferred, preference) -> _Reduced:
    """Sparse Gauss-Jordan elimination of ``sequence``'s rows; ``fixed`` columns are
    carried along but never pivots.

    A row from a product of powers that meets floating-point rows on the way, and is left
    with no entry clear of rounding (:func:`_uncancelled`), is first tested against the
    exact rows taken before it, in exact arithmetic: if they imply it, it is dependent at
    every point. Reduced through linearised rows instead, the
    rounding of long chains of eliminations can leave more than ``RANK.rtol`` of an
    entry's size, and whether it does depends on the reference point (issue 22).
    """
    echelon = Echelon()
    pivots = echelon.pivots
    exact = _ExactSpan(fixed)
    solved_by: dict[str, str] = {}
    dependent: list[tuple[str, dict[str, Number]]] = []
    seen_unknowns: set[str] = set()

    for relation in sequence:
        source = rows[relation]
        seen_unknowns.update(model.variables_in(relation) - fixed)
        if not source.entries:
            continue
        row = ReducedRow.of(source)
        echelon.reduce(row)
        candidates = [c for c in row.entries if c not in fixed]
        if candidates and source.exact and not row.exact and not _uncancelled(row, candidates):
            implied = exact.implies(source)
            if implied is not None:
                row, candidates = implied, []
        if not candidates:
            dependent.append((relation, row.values()))
            continue
        if not row.exact:
            # a pivot may be small beside the rest of its row (a share that is small at
            # the reference point is small only there), not mostly cancelled away; where
            # every entry left is partly cancelled (none is zero: rtol kept them), the
            # row is still independent and its least cancelled entry is the pivot
            # (qk_rope_head_dim in total_params_split, 5.2e-4 of what went into it)
            candidates = [c for c in candidates
                          if abs(row.entries[c]) >= RANK.pivot_threshold * row.sizes[c]] \
                or [max(candidates, key=lambda c: abs(row.entries[c]) / row.sizes[c])]
        wanted = preferred.get(relation)
        pivot = min(candidates, key=lambda c: (c != wanted, preference(c)))
        echelon.add(pivot, row)
        solved_by[pivot] = relation
        if source.exact:
            exact.pending.append(source)

    free = tuple(sorted(c for c in seen_unknowns if c not in pivots))
    return _Reduced(
        rows={p: r.values() for p, r in pivots.items()},
        solved_by=solved_by,
        dependent=tuple((r, {c: v for c, v in left.items() if c in fixed})
                        for r, left in dependent),
        free=free,
    )


def _uncancelled(row: ReducedRow, candidates: list[str]) -> bool:
    """Whether an entry of a reduced floating-point row is no mere residue of rounding:
    at least ``RANK.pivot_threshold`` of what went into it. A row the exact rows imply
    reduces to rounding in every entry, about the machine epsilon times the pivots'
    growth (which that threshold bounds), so such a row is independent of them and needs
    no exact test (over a sample of questions, every row tested had such an entry)."""
    entries, sizes, threshold = row.entries, row.sizes, RANK.pivot_threshold
    return any(abs(entries[c]) >= threshold * sizes[c] for c in candidates)


class _ExactSpan:
    """The span of the independent exact rows taken so far, over the unfixed columns,
    in exact arithmetic; built only when a question needs it (rows wait in ``pending``)."""

    def __init__(self, fixed):
        self.fixed = fixed
        self.echelon = Echelon()
        self.pending: list[LogRow] = []

    def implies(self, source: LogRow) -> ReducedRow | None:
        """``source`` reduced to its fixed columns if the exact rows imply it, else None."""
        for waiting in self.pending:
            row = ReducedRow.of(waiting)
            self.echelon.reduce(row)
            free = [c for c in row.entries if c not in self.fixed]
            if free:  # independent of the others: it joins the span
                self.echelon.add(min(free), row)
        self.pending.clear()
        row = ReducedRow.of(source)
        self.echelon.reduce(row)
        return None if any(c not in self.fixed for c in row.entries) else row
