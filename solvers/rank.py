"""What the pins determine, decided by rank in log space.

Every quantity is positive, so with ``y = ln x`` a relation that is a product of
powers is a linear equation in the ``y`` with rational coefficients (its
exponents); any other relation is linearised at the model's reference point
(solvers.reference), a ``max`` as a generic mixture of its regimes. Stacking
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

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import numpy as np
from chalk.solvers.tolerances import RANK
from chalk.symbolic.logspace import compile_log_gradient, log_row, monomial_row
from chalk.symbolic.model import Model

Number = Fraction | float


@dataclass(frozen=True)
class LogRow:
    """One relation's row of the log-space Jacobian over the model's quantities.

    ``exact`` rows come from products of powers and hold everywhere; the others
    were taken at the reference point.
    """

    relation: str
    entries: Mapping[str, Number]
    exact: bool


@lru_cache(maxsize=16)
def log_rows(model: Model) -> Mapping[str, LogRow]:
    """Every relation's log-space row (cached per model).

    A relation that is not a product of powers is linearised at the model's reference
    point; where it cannot be (no usable point), it gets a generic row of its pattern.
    """
    return {name: _log_row(model, name, relation.lhs, relation.rhs)
            for name, relation in model.relations.items()}


@lru_cache(maxsize=16)
def regime_rows(model: Model) -> tuple[tuple[tuple[str, ...], Mapping[str, LogRow]], ...]:
    """The rows of every combination of max()/min() regimes (cached per model).

    Each combination names its regimes and maps every relation with a max or min to
    the row of the branch that holds in it (the losing argument dropped); other
    relations keep their rows. Empty when the model has no max or min.
    """
    import itertools

    from chalk.solvers.symbolic_solve import branches

    options = []
    for name, relation in sorted(model.relations.items()):
        if not relation.has_regimes():
            continue
        choices = []
        for branch in branches(relation, set(relation.symbols)):
            label = f"{name}: {branch.regime}" if branch.regime else name
            choices.append((label, name, _log_row(model, name, branch.lhs, branch.rhs)))
        options.append(choices)
    out = []
    for combo in itertools.product(*options):
        out.append((tuple(label for label, _, _ in combo),
                    {name: row for _, name, row in combo}))
    return tuple(out) if options else ()


def _log_row(model: Model, name: str, lhs, rhs) -> LogRow:
    """The row of ``lhs = rhs``: exact for products of powers, else at the reference point
    (a max or min there as a mixture of its arguments)."""
    exact = monomial_row(lhs, rhs)
    if exact is not None:
        return LogRow(name, {k: v for k, v in exact.items() if k in model.variables}, True)
    from chalk.solvers.reference import reference_point

    point = reference_point(model)
    constants = model.constant_values()
    left = compile_log_gradient(lhs, constants, surrogate=True)
    right = compile_log_gradient(rhs, constants, surrogate=True)
    try:
        found = log_row(left, right, point.values)
        if found is None:  # a side not positive there: the relative residual's gradient
            (a, ga), (b, gb) = left(point.values), right(point.values)
            scale = abs(a) + abs(b)
            gradient = {k: ga.get(k, 0.0) / scale - gb.get(k, 0.0) / scale
                        for k in set(ga) | set(gb)} if scale else None
        else:
            gradient = found[1]
    except (ArithmeticError, ValueError):
        gradient = None
    if gradient is None or not all(np.isfinite(v) for v in gradient.values()):
        # No usable point (a model whose typical values put a relation off its domain):
        # a generic row of the relation's pattern, so rank is still decided structurally.
        gradient = {v: _generic_weight(name, v) for v in model.variables_in(name)}
    entries = {k: float(v) for k, v in gradient.items() if k in model.variables and v != 0.0}
    return LogRow(name, entries, False)


def _generic_weight(relation: str, name: str) -> float:
    """A fixed, generic (irrational-looking) coefficient for one entry of a row."""
    import hashlib

    digest = hashlib.sha256(f"{relation}/{name}".encode()).digest()
    return 0.5 + int.from_bytes(digest[:8], "big") / 2**64


@dataclass
class _Row:
    entries: dict[str, Number]
    exact: bool
    scale: float  # largest magnitude that went into the row (for the zero test)


def _is_zero(value: Number, row: _Row) -> bool:
    if row.exact:
        return value == 0
    return abs(value) <= RANK.rtol * row.scale


def _subtract(target: _Row, factor: Number, source: _Row, skip: str | None = None) -> list[str]:
    """``target -= factor * source`` in place; returns the columns that became zero."""
    exact = target.exact and source.exact and isinstance(factor, Fraction)
    if not exact and target.exact:
        target.entries = {k: float(v) for k, v in target.entries.items()}
    target.exact = exact
    if not exact:
        factor = float(factor)
    target.scale = max(target.scale, abs(float(factor)) * source.scale)
    vanished = []
    for column, value in source.entries.items():
        if column == skip:
            continue
        delta = factor * (value if exact else float(value))
        new = target.entries.get(column, 0) - delta
        if _is_zero(new, target):
            target.entries.pop(column, None)
            vanished.append(column)
        else:
            target.entries[column] = new
    return vanished


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
    """Whether a square block's own matrix (its rows over its quantities) is regular."""
    if len(quantities) == 1:
        row = block_rows[0]
        value = row.entries.get(quantities[0], 0)
        if row.exact:
            return value != 0
        largest = max(abs(float(v)) for v in row.entries.values())
        return abs(float(value)) > RANK.rtol * largest
    if all(r.exact for r in block_rows) and len(quantities) <= RANK.exact_block_limit:
        matrix = [[Fraction(r.entries.get(q, 0)) for q in quantities] for r in block_rows]
        return _exact_rank(matrix) == len(quantities)
    matrix = np.array([[float(r.entries.get(q, 0)) for q in quantities] for r in block_rows])
    scale = max(1.0, float(np.max(np.abs(matrix))))
    return np.linalg.matrix_rank(matrix, tol=RANK.rtol * scale) == len(quantities)


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
    carried along but never pivots."""
    pivots: dict[str, _Row] = {}
    solved_by: dict[str, str] = {}
    occurs: dict[str, set[str]] = {}  # non-pivot column -> pivots whose rows hold it
    dependent: list[tuple[str, dict[str, Number]]] = []
    seen_unknowns: set[str] = set()

    for relation in sequence:
        source = rows[relation]
        seen_unknowns.update(model.variables_in(relation) - fixed)
        if not source.entries:
            continue
        row = _Row(dict(source.entries), source.exact,
                   max(abs(float(v)) for v in source.entries.values()))
        for column in [c for c in row.entries if c in pivots]:
            factor = row.entries.get(column)
            if factor is None:
                continue
            _subtract(row, factor, pivots[column])
            row.entries.pop(column, None)
        candidates = [(c, v) for c, v in row.entries.items() if c not in fixed]
        if not candidates:
            dependent.append((relation, dict(row.entries)))
            continue
        if not row.exact:
            largest = max(abs(float(v)) for _, v in candidates)
            candidates = [(c, v) for c, v in candidates
                          if abs(float(v)) >= RANK.pivot_threshold * largest]
        wanted = preferred.get(relation)
        pivot = min((c for c, _ in candidates),
                    key=lambda c: (c != wanted, preference(c)))
        value = row.entries[pivot]
        inverse = (Fraction(1) / value) if row.exact else 1.0 / float(value)
        row.entries = {c: v * inverse for c, v in row.entries.items()}
        row.entries[pivot] = Fraction(1) if row.exact else 1.0
        row.scale = row.scale * abs(float(inverse))
        # keep the echelon form reduced: remove the new pivot from every earlier row
        for other in sorted(occurs.pop(pivot, ())):
            target = pivots[other]
            factor = target.entries.pop(pivot)
            vanished = _subtract(target, factor, row, skip=pivot)
            for column in vanished:
                holders = occurs.get(column)
                if holders is not None:
                    holders.discard(other)
            for column in row.entries:
                if column != pivot and column in target.entries:
                    occurs.setdefault(column, set()).add(other)
        for column in row.entries:
            if column != pivot:
                occurs.setdefault(column, set()).add(pivot)
        pivots[pivot] = row
        solved_by[pivot] = relation

    free = tuple(sorted(c for c in seen_unknowns if c not in pivots))
    return _Reduced(
        rows={p: dict(r.entries) for p, r in pivots.items()},
        solved_by=solved_by,
        dependent=tuple((r, {c: v for c, v in left.items() if c in fixed})
                        for r, left in dependent),
        free=free,
    )


def completions(analysis: RankAnalysis, targets: Sequence[str], candidates: Iterable[str],
                key: Callable[[tuple[str, ...]], object] | None = None,
                max_size: int | None = None) -> tuple[tuple[str, ...], ...]:
    """The smallest sets of extra pins that would determine every target.

    Pinning a set ``E`` removes the null-space directions along which any member
    of ``E`` moves; the targets are then determined when their null-space vectors
    lie in the span of ``E``'s. Working modulo the targets' span makes the common
    sizes direct: a single extra pin must move only along the targets (its image
    there is zero); a pair must have parallel images. Larger sets are grown from
    smaller ones taken among the candidates that sort first by ``key`` (at most
    ``RANK.completion_pool`` of them), each growth one numpy operation over every
    candidate.
    """
    max_size = RANK.max_completion_size if max_size is None else max_size
    open_targets = [t for t in targets if not analysis.is_determined(t)]
    if not open_targets:
        return ()
    components = _components(analysis)
    wanted_free = set()
    for t in open_targets:
        wanted_free |= components.get(t, set())
    free = sorted(wanted_free)
    if not free:
        return ()
    position = {f: i for i, f in enumerate(free)}

    def vector(name):
        out = np.zeros(len(free))
        for c, v in analysis.null_vector(name).items():
            if c in position:
                out[position[c]] = float(v)
        return out

    target_matrix = np.array([vector(t) for t in open_targets])
    pool = []
    for name in sorted(set(candidates) - set(targets)):
        if analysis.is_determined(name):
            continue
        v = vector(name)
        if np.any(v != 0):
            pool.append((name, v))
    if not pool:
        return ()
    order = key or (lambda c: c)
    pool.sort(key=lambda item: order((item[0],)))
    names = [n for n, _ in pool]
    vectors = np.array([v for _, v in pool])
    needed = int(np.linalg.matrix_rank(target_matrix, tol=1e-9))
    found: list[tuple[str, ...]] = []
    for size in range(max(needed, 1), max_size + 1):
        if needed == 1 and size <= 2:
            found.extend(_through_quotient(vectors, target_matrix, names, size))
        elif needed > 1 and size > needed:
            break  # several targets: beyond the fewest pins, unions of each one's (below)
        else:
            bases = itertools.combinations(range(min(len(names), RANK.completion_pool)),
                                           size - 1)
            for base in bases:
                found.extend(_completing(vectors, target_matrix, base, names))
        if found:
            break
    if not found and len(open_targets) > 1:
        # Several targets and no set of as many pins as targets: offer the smallest unions
        # of each target's own smallest completions (each exact; a smaller joint set may
        # exist, which this does not search for).
        each = [completions(analysis, [t], candidates, key, max_size) for t in open_targets]
        if all(each):
            unions = {tuple(sorted(set().union(*combo))) for combo in itertools.product(*each)}
            smallest = min(len(u) for u in unions)
            found = [u for u in unions if len(u) == smallest and len(u) <= max_size]
    unique = sorted(set(found), key=key or (lambda c: c))
    return tuple(unique[:RANK.max_completions])


def combination(analysis: RankAnalysis, target: str, extra: Sequence[str]
                ) -> dict[str, float] | None:
    """``{quantity: exponent}`` of the product of ``target`` and ``extra`` that the pins
    fix, when pinning ``extra`` would determine ``target`` (``None`` otherwise).

    Pinning ``extra`` determines ``target`` exactly when the target's null-space vector is
    a combination of theirs, ``n_t = sum(l_e n_e)``; then ``ln t - sum(l_e ln e)`` does
    not move along any free direction, so the pins fix it.
    """
    names = list(extra)
    free = sorted({c for n in [target, *names] for c in analysis.null_vector(n)})
    if not free:
        return None
    position = {f: i for i, f in enumerate(free)}

    def vector(name):
        out = np.zeros(len(free))
        for c, v in analysis.null_vector(name).items():
            out[position[c]] = float(v)
        return out

    basis = np.array([vector(n) for n in names]).T if names else np.zeros((len(free), 0))
    wanted = vector(target)
    if not names:
        return None
    weights, *_ = np.linalg.lstsq(basis, wanted, rcond=None)
    if np.linalg.norm(basis @ weights - wanted) > 1e-9 * max(1.0, np.linalg.norm(wanted)):
        return None
    out: dict[str, Number] = {target: Fraction(1)}
    for name, w in zip(names, weights, strict=True):
        if abs(w) > 1e-12:
            out[name] = _simple(-float(w))
    return out


def _simple(value: float) -> Number:
    """A small fraction if ``value`` is one to rounding, else the float."""
    near = Fraction(value).limit_denominator(64)
    return near if abs(float(near) - value) <= 1e-9 * max(1.0, abs(value)) else value


def spans(analysis: RankAnalysis, extra, targets) -> bool:
    """Whether pinning ``extra`` as well would determine every target."""
    extra = [e for e in extra if not analysis.is_determined(e)]
    open_targets = [t for t in targets if not analysis.is_determined(t)]
    if not open_targets:
        return True
    free = sorted({c for n in [*extra, *open_targets] for c in analysis.null_vector(n)})
    position = {f: i for i, f in enumerate(free)}

    def vector(name):
        out = np.zeros(len(free))
        for c, v in analysis.null_vector(name).items():
            out[position[c]] = float(v)
        return out

    t = np.array([vector(n) for n in open_targets])
    if not extra:
        return False
    e = np.array([vector(n) for n in extra])
    tol = 1e-9 * max(1.0, float(np.max(np.abs(t))), float(np.max(np.abs(e))))
    return (np.linalg.matrix_rank(np.vstack([e, t]), tol=tol)
            == np.linalg.matrix_rank(e, tol=tol))


def _through_quotient(vectors, targets, names, size) -> list[tuple[str, ...]]:
    """Completions of one or two members of a single target, modulo the target's span:
    one member whose vector lies along the target's; or two whose parts off the target
    are parallel (so a combination of them is the target's) while they are not."""
    direction = targets[0] / np.linalg.norm(targets[0])
    off = vectors - np.outer(vectors @ direction, direction)
    norms = np.linalg.norm(off, axis=1)
    scale = np.maximum(1.0, np.linalg.norm(vectors, axis=1))
    along = norms <= 1e-9 * scale
    if size == 1:
        return [(names[i],) for i in np.flatnonzero(along)]
    found = []
    units = off / np.where(along, 1.0, norms)[:, None]
    candidates = np.flatnonzero(~along)
    for position, i in enumerate(candidates):
        rest = candidates[position + 1:]
        if not rest.size:
            break
        parallel = np.abs(np.abs(units[rest] @ units[i]) - 1.0) <= 1e-9
        for j in rest[parallel]:
            # the two must not be parallel themselves (then neither reaches the target)
            pair = vectors[[i, j]]
            if np.linalg.matrix_rank(pair, tol=1e-9 * float(np.max(np.abs(pair)))) == 2:
                found.append(tuple(sorted((names[i], names[j]))))
    return found


def _completing(vectors, targets, base, names) -> list[tuple[str, ...]]:
    """Sets ``base + (j,)`` (any j outside base) that span ``targets``, with ``base``
    independent and no smaller subset doing so."""
    if base:
        chosen = vectors[list(base)]
        q, r = np.linalg.qr(chosen.T)
        if np.min(np.abs(np.diag(r))) <= 1e-9 * max(1.0, np.max(np.abs(r))):
            return []  # dependent members: a smaller set spans the same
        project = lambda m: m - (m @ q) @ q.T  # noqa: E731
        rest_targets = project(targets)
        rest = project(vectors)
    else:
        rest_targets, rest = targets, vectors
    scale = max(1.0, float(np.max(np.abs(targets))))
    target_rank = np.linalg.matrix_rank(rest_targets, tol=1e-9 * scale)
    if target_rank == 0:
        return []  # base alone suffices: found at a smaller size
    if target_rank > 1:
        return []
    direction = rest_targets[np.argmax(np.linalg.norm(rest_targets, axis=1))]
    direction = direction / np.linalg.norm(direction)
    along = rest @ direction
    off = rest - np.outer(along, direction)
    ok = (np.abs(along) > 1e-9) & (np.linalg.norm(off, axis=1) <= 1e-9 * np.maximum(
        1.0, np.abs(along)))
    members = set(base)
    return [tuple(sorted([names[i] for i in base] + [names[j]]))
            for j in range(len(names)) if ok[j] and j not in members]


def _components(analysis: RankAnalysis) -> dict[str, set[str]]:
    """For each undetermined quantity, the free quantities of its null-space component
    (connected through reduced rows that share free columns)."""
    parent: dict[str, str] = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a, b):
        parent[find(a)] = find(b)

    for f in analysis.free:
        find(f)
    for pivot in analysis.rows:
        part = analysis.open_part(pivot)
        for c in part:
            union(pivot, c)
    groups: dict[str, set[str]] = {}
    for f in analysis.free:
        groups.setdefault(find(f), set()).add(f)
    out = {}
    for name in list(analysis.rows) + list(analysis.free):
        if name in analysis.determined:
            continue
        out[name] = groups.get(find(name), set())
    return out


@lru_cache(maxsize=4096)
def relation_gradients(relation, regime: str | None = None) -> tuple:
    """Value-and-gradient evaluators of a relation's two sides: in the regime named, or
    else in whichever argument of a max/min is larger (smaller) where it is evaluated."""
    from chalk.solvers.symbolic_solve import branches
    from chalk.symbolic.variables import known_constant

    constants = {s.name: known_constant(s.name).base_value for s in relation.symbols
                 if known_constant(s.name) is not None}
    lhs, rhs = relation.lhs, relation.rhs
    if regime is not None:
        for branch in branches(relation, set(relation.symbols)):
            if branch.regime == regime:
                lhs, rhs = branch.lhs, branch.rhs
                break
    return (compile_log_gradient(lhs, constants), compile_log_gradient(rhs, constants))


def log_jacobian_at(model: Model, relations: Iterable[str], values: Mapping[str, float],
                    columns: Sequence[str], regimes: Mapping[str, str] | None = None,
                    skip_undefined: bool = False) -> np.ndarray:
    """Rows ``d(lhs - rhs)/(|lhs| + |rhs|)`` per ``d ln x`` of ``relations`` at ``values``
    over ``columns`` (each max()/min() in the regime named, else the active one).

    With ``skip_undefined`` a relation that cannot be evaluated there (a quantity with
    no value, a side off its domain) is left out instead of raising.
    """
    regimes = regimes or {}
    index = {n: i for i, n in enumerate(columns)}
    rows = []
    for name in relations:
        lhs, rhs = relation_gradients(model.relations[name], regimes.get(name))
        try:
            (a, ga), (b, gb) = lhs(values), rhs(values)
        except (ArithmeticError, ValueError, KeyError):
            if skip_undefined:
                continue
            raise
        scale = abs(a) + abs(b)
        if skip_undefined and (not scale or not np.isfinite(scale)):
            continue
        row = np.zeros(len(columns))
        for n, d in ga.items():
            if n in index:
                row[index[n]] += d / scale
        for n, d in gb.items():
            if n in index:
                row[index[n]] -= d / scale
        rows.append(row)
    return np.array(rows).reshape(len(rows), len(columns))


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
    _, singular, vt = np.linalg.svd(rows)
    largest = singular[0] if singular.size else 0.0
    rank = int(np.sum(singular > RANK.rtol_at * largest)) if largest else 0
    null = vt[rank:]
    if not null.size:
        return ()
    return tuple(t for t in targets if t in index
                 and float(np.max(np.abs(null[:, index[t]]))) > RANK.null_component)
