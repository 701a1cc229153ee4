"""Which way the relations run: what a quantity feeds forward into, and what computes it.

A relation that defines a quantity (named after it, or with it alone on its left side)
computes it from the others; the quantities it enters are downstream of them. A pinned
measurement downstream of a quantity is what that quantity helps to explain, not a
ground for its value: :func:`computed_from` says whether pins compute a quantity without
such inversions, which is how a zero (an absence) is judged before it gives way
(:mod:`chalk.solvers.pinning.yielding`).
"""

from __future__ import annotations

from functools import lru_cache

import sympy
from chalk.symbolic.model import MODELS_KEPT, Model


def defining_relation(model: Model, name: str) -> str | None:
    """The relation that defines a derived quantity: named after it, or with it alone on
    its left side."""
    if name in model.relations and name in model.variables_in(name):
        return name
    for r in model.relations_of(name):
        lhs = model.relations[r].lhs
        if lhs.is_Symbol and lhs.name == name:
            return r
    return None


def downstream(model: Model, name: str) -> frozenset[str]:
    """The quantities ``name`` feeds forward into: those whose defining relation it
    enters, those whose defining relation they enter, and so on. A pin among them is a
    measurement of something ``name`` helps compute, not a ground for its value."""
    feeds = _feeds(model)
    found, stack = set(), [name]
    while stack:
        for later in feeds.get(stack.pop(), ()):
            if later not in found:
                found.add(later)
                stack.append(later)
    found.discard(name)
    return frozenset(found)


@lru_cache(maxsize=MODELS_KEPT)
def whole_counts(model: Model) -> frozenset[str]:
    """Quantities a relation gives by rounding another (``replicas_needed``), and those
    computed from them: they run forwards only, so none is a ground for what it rounds."""
    whole = {v for r in model.relations.values() for v in model.variables_in(r.name)
             if any(r.rounds(u) for u in model.variables_in(r.name)) and not r.rounds(v)}
    return frozenset(whole.union(*(downstream(model, w) for w in whole)))


def computed_from(model: Model, name: str, known, zeros=frozenset(),
                  avoid=frozenset()) -> frozenset[str] | None:
    """The ``known`` quantities from which ``name`` is computed, one relation at a time;
    None if they do not compute it.

    Each step solves one relation for its one unknown quantity. A relation is solved
    for a quantity it does not define only if no known zero (``zeros``: absences) takes
    that quantity out of it: ``t_alltoall = 0`` says nothing of the bytes a token
    sends, but ``n_local_layers = 0`` leaves ``n_kv_layers = n_layers``. ``known``
    should hold no measurement downstream of ``name`` (:func:`downstream`): from those
    the relations would explain it backwards. No step computes a quantity in ``avoid``:
    given ``downstream(model, name)``, no chain goes through what ``name`` feeds and back
    (an asked price step is where the crossover is, and the crossover read backwards
    would give the tokens a step accepts).
    """
    if name in known:
        return None
    behind = {k: frozenset({k}) for k in known}
    changed = True
    while changed and name not in behind:
        changed = False
        for r in model.relations:
            variables = model.variables_in(r)
            unknown = [v for v in variables if v not in behind]
            if len(unknown) != 1:
                continue
            target = unknown[0]
            if target in avoid:
                continue
            if not (_defines(model, r, target)
                    or _solvable_past_zeros(model, r, target, frozenset(zeros & variables))):
                continue
            behind[target] = frozenset().union(*(behind[v] for v in variables if v != target))
            changed = True
    return behind.get(name)


def _defines(model: Model, relation: str, name: str) -> bool:
    """Whether ``relation`` defines ``name``: it has ``name`` alone on its left side, or is
    named after it with ``name`` on its left side only."""
    r = model.relations[relation]
    symbol = model.variables[name].symbol
    return r.lhs == symbol or (relation == name and symbol not in r.rhs.free_symbols)


@lru_cache(maxsize=1024)
def _solvable_past_zeros(model: Model, relation: str, name: str,
                         zeros: frozenset[str]) -> bool:
    """Whether ``relation`` with the ``zeros`` put in still relates ``name`` to the
    rest, neither side emptied nor infinite: solving it for ``name`` then uses no
    absence as a number."""
    if not zeros:
        return True
    r = model.relations[relation]
    put_in = {model.variables[z].symbol: 0 for z in zeros}
    sides = (r.lhs.subs(put_in), r.rhs.subs(put_in))
    # a side the zeros empty (0 = bytes x tokens) fixes nothing but that a factor is 0
    return (all(side != 0 and not side.has(sympy.zoo, sympy.nan, sympy.oo) for side in sides)
            and model.variables[name].symbol in (sides[0] - sides[1]).free_symbols)


@lru_cache(maxsize=MODELS_KEPT)
def _feeds(model: Model) -> dict[str, frozenset[str]]:
    """For each quantity, the derived quantities whose defining relation it enters."""
    feeds: dict[str, set[str]] = {}
    for name, variable in model.variables.items():
        relation = defining_relation(model, name) if variable.derived else None
        for source in model.variables_in(relation) - {name} if relation else ():
            feeds.setdefault(source, set()).add(name)
    return {k: frozenset(v) for k, v in feeds.items()}
