"""Quantities pinned at zero: terms that are absent, not numbers to solve with.

Every other value chalk meets is positive, so its planner reasons in logarithms and
by names. A zero does not fit that: ``n_dense_layers = 0`` removes a term from a
sum (and with it the need to know the dense MLP's width), and attention FLOPs left
out (``attention_flops_per_token = 0``) turn the step's compute back into the
lecture's weight matmuls alone. Planning by names alone would still ask for the
width, or miss that the critical batch is the weight read over the per-sequence
matmul time.

So before planning, each pinned zero is put into the relations it appears in:

* a relation whose two sides both vanish holds whatever the rest is, and goes;
* one whose side vanishes while the other is a single quantity that may be zero,
  times constants, makes that quantity zero too (``untied_embeddings = 0`` leaves no
  separate embedding table), which is pinned as a zero that follows and put in turn;
* one whose side vanishes while the other is a difference (terms of both signs) says
  the positive terms equal the negative ones: ``attention_surplus_time_per_flop = 0``
  leaves ``1/attention_chip_flops = 1/chip_flops``, attention at the matmuls' peak;
  but where the relation defines the absent quantity from others that are computed by
  relations of their own, a default's absence is no ground for them (as a zero gives way
  only to what computes it forwards, :mod:`chalk.solvers.pinning.yielding`) and the
  relation is set aside: the conventions' ``kv_extra_copies = 0`` never sizes an
  attention group. A zero the user states is a fact like any other pin (a ground,
  :func:`ground_zeros`): the balanced relation stays, so it fixes what it can or
  disagrees with the other pins (16 chips of tensor-parallel attention over Llama 3.1
  70B's 8 KV heads hold each head twice, which a stated ``kv_extra_copies = 0`` denies);
* one whose side vanishes while the other cannot (a product, or a sum, of positive
  quantities) only defines the absent quantity: with it absent the relation says
  nothing and is set aside;
* every other relation keeps its name and source, with the absent terms gone.

The result is a model of its own (cached per set of zeros) whose reference point is
found from its parent's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache

import sympy
from chalk.solvers.pinning.pinned import Pin, ground_zeros
from chalk.solvers.planning.forward import defining_relation
from chalk.solvers.records.notes import Kind, Note
from chalk.symbolic.model import Model, narrowed_model
from chalk.symbolic.printing.numbers import format_display


@dataclass(frozen=True)
class Absent:
    """What pinned zeros did to a model.

    Attributes
    ----------
    model : Model
        The model with the zeros put in.
    follows : tuple of (name, relation, causes)
        Quantities that are zero because others are, the relation that says so, and the
        pinned zeros behind it.
    set_aside : tuple of str
        Relations that hold identically or only define an absent quantity.
    """

    model: Model
    follows: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    set_aside: tuple[str, ...] = ()


def zero_pins(pins: Mapping[str, Pin]) -> frozenset[str]:
    """Names pinned at exactly zero (a range is never a zero)."""
    return frozenset(n for n, p in pins.items() if p.value == 0 and p.spread is None)


def put_zeros(model: Model, zeros: frozenset[str],
              grounds: frozenset[str] = frozenset()) -> Absent:
    """The model with ``zeros`` put into its relations (cached per set); those of
    ``grounds`` (the user's, :func:`ground_zeros`) are facts, never set aside as the
    mere definition of an absent quantity."""
    if not zeros or not any(model.relations_of(z) for z in zeros):
        return Absent(model)
    return _put(model, zeros, frozenset(grounds) & zeros)


def absent_for(model: Model, pins: Mapping[str, Pin]) -> Absent:
    """The model with the zeros of ``pins`` put in, the user's as grounds."""
    return put_zeros(model, zero_pins(pins), ground_zeros(pins))


@lru_cache(maxsize=32)
def _put(model: Model, zeros: frozenset[str], grounds: frozenset[str] = frozenset()) -> Absent:
    zero = set(zeros)
    causes: dict[str, tuple[str, ...]] = {z: (z,) for z in zero}
    follows: list[tuple[str, str, tuple[str, ...]]] = []
    relations = dict(model.relations)
    set_aside: list[str] = []
    changed = True
    while changed:
        changed = False
        for name, relation in list(relations.items()):
            hit = {s for s in relation.symbols if s.name in zero}
            if not hit:
                continue
            subs = {s: 0 for s in hit}
            lhs, rhs = relation.lhs.subs(subs), relation.rhs.subs(subs)
            behind = tuple(sorted({c for s in hit for c in causes[s.name]}))
            if lhs == 0 and rhs == 0:
                del relations[name]
                set_aside.append(name)
                continue
            if lhs == 0 or rhs == 0:
                other = rhs if lhs == 0 else lhs
                sides = _balance(other)
                stated = any(s.name in grounds for s in hit)
                if sides is not None and (stated or not _grounds_upstream(model, name, hit,
                                                                          other)):
                    relations[name] = replace(relation, lhs=sides[0], rhs=sides[1])
                    continue
                single = _single_quantity(model, other)
                del relations[name]
                if single is not None and model.variables[single].allow_zero:
                    zero.add(single)
                    causes[single] = behind
                    follows.append((single, name, behind))
                    changed = True
                else:
                    set_aside.append(name)
                continue
            if lhs != relation.lhs or rhs != relation.rhs:
                relations[name] = replace(relation, lhs=lhs, rhs=rhs)
    narrowed = narrowed_model(model, relations.values())
    return Absent(narrowed, tuple(follows), tuple(sorted(set_aside)))


def _balance(expr: sympy.Expr) -> tuple[sympy.Expr, sympy.Expr] | None:
    """``expr = 0`` as its positive terms equal to its negative ones, or None when
    ``expr`` is not a sum with terms of both signs."""
    if not expr.is_Add:
        return None
    positive, negative = [], []
    for term in expr.args:
        (negative if term.as_coeff_Mul()[0] < 0 else positive).append(term)
    if not positive or not negative:
        return None
    return sympy.Add(*positive), -sympy.Add(*negative)


def _grounds_upstream(model: Model, relation: str, hit, other: sympy.Expr) -> bool:
    """Whether ``relation`` defines a zero (in ``hit``) from ``other``, a side naming a
    quantity that a relation of its own computes: balanced, the absence would be a
    ground for that quantity."""
    if not any(defining_relation(model, s.name) == relation for s in hit):
        return False
    return any(defining_relation(model, s.name) not in (None, relation)
               for s in other.free_symbols if s.name in model.variables)


def _single_quantity(model: Model, expr: sympy.Expr) -> str | None:
    """The one quantity in ``expr`` if it is that quantity times constants."""
    names = [s.name for s in expr.free_symbols if s.name in model.variables]
    if len(names) != 1:
        return None
    symbol = model.variables[names[0]].symbol
    if not expr.is_Mul and expr != symbol:
        return None
    return names[0]


def following_pins(absent: Absent, model: Model, pins: Mapping[str, Pin]) -> dict[str, Pin]:
    """A pin at zero for each quantity that follows from pinned zeros, at the highest
    layer among its causes, saying where it comes from."""
    out = {}
    for name, relation, behind in absent.follows:
        if name in pins:
            continue
        cause = max((pins[c] for c in behind if c in pins), key=lambda p: p.layer)
        variable = model.variables[name]
        shown = format_display(0.0, variable.display)
        out[name] = Pin(name, 0.0, shown, cause.layer, cause.preset,
                        f"follows from {', '.join(f'{c} = 0' for c in behind)} "
                        f"(relation {relation})", cause.date,
                        "absent because those are")
    return out


def note(absent: Absent) -> Note | None:
    """The derivation's note on what the zeros removed (None when nothing)."""
    return Note(Kind.ABSENT, {"set_aside": absent.set_aside}) if absent.set_aside else None


def used_zeros(original: Model, relations: set[str], zeros: frozenset[str]) -> set[str]:
    """Zero pins that were put into one of ``relations`` (names the plan uses): they
    shaped the answer though the narrowed relations no longer name them."""
    return {z for r in relations if r in original.relations
            for z in original.variables_in(r) if z in zeros}
