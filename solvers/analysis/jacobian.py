"""Rows of the log-space Jacobian: exact for products of powers, else linearised.

Every quantity is positive, so with ``y = ln x`` a product of powers is linear in the
``y`` with its exponents as exact coefficients (:func:`log_rows`); any other relation is
linearised at the model's reference point (solvers.analysis.reference), a ``max`` as a mixture
of its regimes, or taken in one regime (:func:`regime_rows`). At a solution, the
Jacobian of chosen relations comes from :func:`log_jacobian_at`. Gradients are taken over
the plain trees evaluation runs (solvers.analysis.gradient).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache

import numpy as np
from chalk.solvers.analysis.gradient import compile_log_gradient
from chalk.symbolic.logspace import log_row, monomial_row
from chalk.symbolic.model import MODELS_KEPT, Model
from chalk.symbolic.relations import continuous

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

    @cached_property
    def integers(self) -> tuple[dict[str, int], int]:
        """An exact row as integers over their least common denominator, ``(n, den)``
        with ``entries[c] == n[c] / den`` (for elimination in integer arithmetic)."""
        den = math.lcm(*(Fraction(v).denominator for v in self.entries.values()))
        return {c: int(Fraction(v) * den) for c, v in self.entries.items()}, den


@lru_cache(maxsize=MODELS_KEPT)
def log_rows(model: Model) -> Mapping[str, LogRow]:
    """Every relation's log-space row (cached per model).

    A relation that is not a product of powers is linearised at the model's reference
    point; where it cannot be (no usable point), it gets a generic row of its pattern.
    """
    shared = _shared_rows(model)
    return {name: shared.get(name) or _log_row(model, name, relation.lhs, relation.rhs)
            for name, relation in model.relations.items()}


def _shared_rows(model: Model) -> dict[str, LogRow]:
    """The rows a narrowed model has in common with the model it narrows: those of the
    same relation that are exact, or linearised where both reference points agree on
    the relation's quantities (a model keeping a subset of the relations is at its
    parent's point). The rest are taken afresh."""
    parent = model.parent
    if parent is None:
        return {}
    rows = log_rows(parent)
    here = there = None
    shared = {}
    for name, relation in model.relations.items():
        row = rows.get(name)
        if row is None or parent.relations.get(name) is not relation:
            continue
        if not row.exact:
            if here is None:
                from chalk.solvers.analysis.reference import reference_point

                here, there = reference_point(model).values, reference_point(parent).values
            if any(here.get(v) != there.get(v) for v in model.variables_in(name)):
                continue
        shared[name] = row
    return shared


@lru_cache(maxsize=MODELS_KEPT)
def regime_rows(model: Model) -> tuple[tuple[tuple[str, ...], Mapping[str, LogRow]], ...]:
    """The rows of every combination of max()/min() regimes (cached per model).

    Each combination names its regimes and maps every relation with a max or min to
    the row of the branch that holds in it (the losing argument dropped); other
    relations keep their rows. Empty when the model has no max or min.
    """
    import itertools

    from chalk.solvers.execution.symbolic_solve import branches

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
    lhs, rhs = continuous(lhs), continuous(rhs)  # a whole count follows what it rounds
    exact = monomial_row(lhs, rhs)
    if exact is not None:
        return LogRow(name, {k: v for k, v in exact.items() if k in model.variables}, True)
    from chalk.solvers.analysis.reference import reference_point

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
    # sorted: the order of a row's entries is the order elimination adds them up in
    entries = {k: float(v) for k, v in sorted(gradient.items())
               if k in model.variables and v != 0.0}
    return LogRow(name, entries, False)


def _generic_weight(relation: str, name: str) -> float:
    """A fixed, generic (irrational-looking) coefficient for one entry of a row."""
    import hashlib

    digest = hashlib.sha256(f"{relation}/{name}".encode()).digest()
    return 0.5 + int.from_bytes(digest[:8], "big") / 2**64


@lru_cache(maxsize=4096)
def relation_sides(relation, regime: str | None = None) -> tuple:
    """The relation's two sympy sides, in the regime named (the whole relation if it
    names none of its branches)."""
    from chalk.solvers.execution.symbolic_solve import branches

    if regime is not None:
        for branch in branches(relation, set(relation.symbols)):
            if branch.regime == regime:
                return branch.lhs, branch.rhs
    return relation.lhs, relation.rhs


@lru_cache(maxsize=4096)
def relation_gradients(relation, regime: str | None = None) -> tuple:
    """Value-and-gradient evaluators of a relation's two sides: in the regime named, or
    else in whichever argument of a max/min is larger (smaller) where it is evaluated."""
    from chalk.symbolic.variables import known_constant

    constants = {s.name: known_constant(s.name).base_value for s in relation.symbols
                 if known_constant(s.name) is not None}
    lhs, rhs = relation_sides(relation, regime)
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
        try:
            (a, ga), (b, gb) = _sides(model, name, values, regimes)
        except (ArithmeticError, ValueError, KeyError):
            if skip_undefined:
                continue
            raise
        scale = abs(a) + abs(b)
        if skip_undefined and (not scale or not np.isfinite(scale)):
            continue
        row = np.zeros(len(columns))
        _fill(row, ga, gb, scale, index)
        rows.append(row)
    return np.array(rows).reshape(len(rows), len(columns))


def log_jacobians(model: Model, relations: Sequence[str], values: Mapping[str, object],
                  columns: Sequence[str], regimes: Mapping[str, str], size: int) -> np.ndarray:
    """:func:`log_jacobian_at` at many points at once: ``values`` hold arrays of ``size``
    elements (or floats), and the result has shape ``(rows, columns, size)`` (the points
    last, so that arithmetic over them runs on contiguous arrays); an entry is nan or inf
    where a side is off its domain at that element."""
    index = {n: i for i, n in enumerate(columns)}
    out = np.zeros((len(relations), len(columns), size))
    with np.errstate(all="ignore"):
        for row, name in zip(out, relations, strict=True):
            (a, ga), (b, gb) = _sides(model, name, values, regimes)
            _fill(row, ga, gb, np.abs(a) + np.abs(b), index)
    return out


def _sides(model: Model, name: str, values, regimes: Mapping[str, str]) -> tuple:
    """Value and gradient of relation ``name``'s two sides at ``values``."""
    lhs, rhs = relation_gradients(model.relations[name], regimes.get(name))
    return lhs(values), rhs(values)


def _fill(row: np.ndarray, ga, gb, scale, index: Mapping[str, int]) -> None:
    """Add one relation's row over the columns ``index`` names into ``row`` (zeros), from
    its sides' gradients and ``|lhs| + |rhs|``."""
    for n, d in ga.items():
        if n in index:
            row[index[n]] += d / scale
    for n, d in gb.items():
        if n in index:
            row[index[n]] -= d / scale
