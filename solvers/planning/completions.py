"""The smallest sets of extra pins that would determine under-determined targets.

They come from the null space a :class:`~chalk.solvers.analysis.rank.RankAnalysis` leaves:
pinning a set removes the directions its members move along, so the smallest sets
whose null-space vectors span the targets' are the answer (circuits of the
null-space matroid, found by projection rather than by trying every plan).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction

import numpy as np
from chalk.solvers.analysis.jacobian import Number
from chalk.solvers.analysis.rank import RankAnalysis
from chalk.solvers.tolerances import RANK


def completions(analysis: RankAnalysis, targets: Sequence[str], candidates: Iterable[str],
                key: Callable[[tuple[str, ...]], object] | None = None,
                max_size: int | None = None, require: frozenset[str] = frozenset()
                ) -> tuple[tuple[str, ...], ...]:
    """The smallest sets of extra pins that would determine every target (with
    ``require``, the smallest among those naming at least one of its quantities).

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
    space = _NullSpace(analysis)
    pool_names = sorted(n for n in set(candidates) - set(targets)
                        if not analysis.is_determined(n))
    order = key or (lambda c: c)
    found = _smallest(space, open_targets, pool_names, order, max_size, require)
    if not found and len(open_targets) > 1 and not require:
        # Several targets and no set of as many pins as targets: offer the smallest unions
        # of each target's own smallest completions (each exact; a smaller joint set may
        # exist, which this does not search for).
        each = [sorted(set(_smallest(space, [t], pool_names, order, max_size)), key=order)
                [:RANK.max_completions] for t in open_targets]
        if all(each):
            unions = {tuple(sorted(set().union(*combo))) for combo in itertools.product(*each)}
            smallest = min(len(u) for u in unions)
            found = [u for u in unions if len(u) == smallest and len(u) <= max_size]
    unique = sorted(set(found), key=order)
    return tuple(unique[:RANK.max_completions])


class _NullSpace:
    """Null-space vectors of one analysis, each computed once (coordinates: the free
    quantities of the components asked about)."""

    def __init__(self, analysis: RankAnalysis):
        self.analysis = analysis
        self.components = _components(analysis)
        self._null: dict[str, dict[str, Number]] = {}

    def null(self, name: str) -> dict[str, Number]:
        if name not in self._null:
            self._null[name] = self.analysis.null_vector(name)
        return self._null[name]

    def vectors(self, names: Sequence[str], free: Sequence[str]) -> np.ndarray:
        position = {f: i for i, f in enumerate(free)}
        out = np.zeros((len(names), len(free)))
        for row, name in enumerate(names):
            for c, v in self.null(name).items():
                if c in position:
                    out[row, position[c]] = float(v)
        return out


def _smallest(space: _NullSpace, open_targets: list[str], pool_names: list[str],
              order: Callable, max_size: int, require: frozenset[str] = frozenset()
              ) -> list[tuple[str, ...]]:
    """The smallest completions of as many pins as needed (no unions of targets'), each
    naming one of ``require`` if it is given."""
    wanted_free = set()
    for t in open_targets:
        wanted_free |= space.components.get(t, set())
    free = sorted(wanted_free)
    if not free:
        return []
    target_matrix = space.vectors(open_targets, free)
    every = space.vectors(pool_names, free)
    moving = np.flatnonzero(np.any(every != 0, axis=1))
    if not moving.size:
        return []
    # Larger sets grow from the first candidates of the pool: put first those that move a
    # direction the targets move along, so that a large component (one coupled through
    # sums) does not crowd them out with quantities that could only cancel each other.
    support = np.any(target_matrix != 0, axis=0)
    along = np.any(every[:, support] != 0, axis=1)
    ranked = sorted(moving, key=lambda i: (not along[i], order((pool_names[i],))))
    names = [pool_names[i] for i in ranked]
    vectors = every[ranked]
    needed = int(np.linalg.matrix_rank(target_matrix, tol=1e-9))
    found: list[tuple[str, ...]] = []
    for size in range(max(needed, 1), max_size + 1):
        if needed == 1 and size <= 2:
            found.extend(_through_quotient(vectors, target_matrix, names, size))
        elif needed > 1 and size > needed:
            break  # several targets: beyond the fewest pins, unions of each one's
        else:
            bases = itertools.combinations(range(min(len(names), RANK.completion_pool)),
                                           size - 1)
            for base in bases:
                found.extend(_completing(vectors, target_matrix, base, names))
        if require:
            found = [f for f in found if require & set(f)]
        if found:
            break
    return found


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
    for i, j in _near_parallel(units[candidates]):
        i, j = candidates[i], candidates[j]
        # parallel when what is left of one after taking out the other's direction is
        # nil: a residual is linear in the angle, where 1 - |cos| is quadratic and let
        # through pairs 1e-5 apart (a saturated curve's tiny sensitivities)
        cosine = units[j] @ units[i]
        if np.linalg.norm(units[j] - cosine * units[i]) > 1e-9:
            continue
        # the two must not be parallel themselves (then neither reaches the target)
        pair = vectors[[i, j]]
        if np.linalg.matrix_rank(pair, tol=1e-9 * float(np.max(np.abs(pair)))) == 2:
            found.append(tuple(sorted((names[i], names[j]))))
    return found


def _near_parallel(units: np.ndarray, window: float = 1e-8) -> set[tuple[int, int]]:
    """Pairs ``(i, j)``, ``i < j``, of unit rows that may be parallel (either sign).

    Each row is given the sign that makes its product with a fixed generic vector
    positive (both signs when that product is near zero), then projected on a second
    generic vector: rows equal to within ``window`` project within ``window`` of each
    other, so after one sort only neighbours need comparing, in O(n log n) rather than
    over all n^2 pairs.
    """
    count, width = units.shape
    if count < 2:
        return set()
    steps = np.arange(1, width + 1)
    signer, direction = np.cos(steps * 1.2345), np.cos(steps * 2.7183 + 0.5)
    direction /= np.linalg.norm(direction)
    lean = units @ signer
    rows, owners = [], []
    for sign in (1.0, -1.0):
        keep = (sign * lean > 0) | (np.abs(lean) <= 1e-6)
        rows.append(sign * units[keep])
        owners.append(np.flatnonzero(keep))
    owner = np.concatenate(owners)
    projected = np.concatenate(rows) @ direction
    order = np.argsort(projected, kind="stable")
    ranked = projected[order]
    pairs = set()
    for a in range(len(order) - 1):
        b = a + 1
        while b < len(order) and ranked[b] - ranked[a] <= window:
            i, j = owner[order[a]], owner[order[b]]
            if i != j:
                pairs.add((min(i, j), max(i, j)))
            b += 1
    return pairs


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
