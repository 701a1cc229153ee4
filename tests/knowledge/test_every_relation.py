"""Every relation, solved for every one of its quantities, from a consistent state.

For each relation a state is drawn (random inputs in realistic ranges, the
relation's own output computed by sympy, independently of chalk's solver);
then each quantity is solved back from all the others through ``chalk.solve``
on a one-relation model and must return to its drawn value. The relation alone is
under test, so no conventions are in force (the ``none`` preset, as in the round trips):
a convention stating one of its quantities (no sliding-window layers) would answer for it.
"""

import math
import random

import pytest
import sympy
from chalk.knowledge import load_model
from chalk.symbolic.errors import (
    AmbiguousSolution,
    NoSolution,
    RoundedUp,
    UnderdeterminedError,
)
from chalk.symbolic.units import Q_
from selfcheck import submodel

from chalk import solve

MODEL = load_model()
CASES = [(r, v) for r in sorted(MODEL.relations) for v in sorted(MODEL.variables_in(r))]


def output_of(relation):
    names = MODEL.variables_in(relation.name)
    if relation.name in names:
        return relation.name
    lhs_vars = sorted(s.name for s in relation.lhs.free_symbols if s.name in names)
    return lhs_vars[0]


def draw_state(relation, rng):
    names = MODEL.variables_in(relation.name)
    output = output_of(relation)
    symbols = {s.name: s for s in relation.symbols}
    constants = {symbols[c]: sympy.Integer(1) for c in symbols if c in MODEL.constants}
    for _ in range(200):
        state = {}
        for name in sorted(names - {output}):
            v = MODEL.variables[name]
            low = max(v.typical / 10, v.lower or 0)
            high = v.typical * 10 if v.upper is None else min(v.typical * 10, v.upper)
            state[name] = math.exp(rng.uniform(math.log(max(low, 1e-300)), math.log(high)))
        subs = {symbols[n]: sympy.Float(x * MODEL.variables[n].to_base, 30)
                for n, x in state.items()}
        subs.update(constants)
        roots = sympy.solve(sympy.Eq(relation.lhs.xreplace(subs), relation.rhs.xreplace(subs)),
                            symbols[output])
        roots = [complex(r) for r in roots]
        roots = [r.real for r in roots if abs(r.imag) < 1e-12 and r.real > 0]
        if len(roots) != 1:
            continue
        value = roots[0] / MODEL.variables[output].to_base
        if MODEL.variables[output].admits(roots[0]):
            state[output] = value
            return state
    raise AssertionError(f"could not draw a state for {relation.name}")


def signed_residual(relation, state):
    symbols = {s.name: s for s in relation.symbols}
    subs = {symbols[n]: sympy.Float(x * MODEL.variables[n].to_base, 30) for n, x in
            state.items()}
    subs.update({symbols[c]: 1 for c in symbols if c in MODEL.constants})
    lhs = relation.lhs.xreplace(subs).evalf(30)
    rhs = relation.rhs.xreplace(subs).evalf(30)
    return float((lhs - rhs) / max(abs(lhs), abs(rhs)))


def residual(relation, state):
    return abs(signed_residual(relation, state))


def sensitivity(relation, state, name, step=1e-6):
    """How much the relation's relative residual moves per relative change of ``name``."""
    nudged = dict(state)
    nudged[name] = state[name] * (1 + step)
    return abs(signed_residual(relation, nudged)) / step


@pytest.mark.slow
@pytest.mark.parametrize(("relation_name", "unknown"), CASES,
                         ids=[f"{r}->{v}" for r, v in CASES])
def test_relation_round_trip(relation_name, unknown):
    relation = MODEL.relations[relation_name]
    rng = random.Random(f"{relation_name}/{unknown}")
    state = draw_state(relation, rng)
    assert residual(relation, state) < 1e-12  # the drawn state satisfies the relation
    single = submodel([relation])
    pins = {n: Q_(x, MODEL.variables[n].pint_unit) for n, x in state.items() if n != unknown}
    if relation.only_when_chosen:
        # it holds once the pins say the model is of its kind: its variant's markers are
        # pinned (n_kv_heads says grouped-query attention), and a marker is never solved
        # from it, since nothing would then say which kind the model is
        markers = MODEL.variants[relation.variant].markers
        if unknown in markers:
            with pytest.raises(UnderdeterminedError):
                solve(unknown, given=pins, presets=["none"], model=single)
            return
        pins.update({m: Q_(MODEL.variables[m].typical, MODEL.variables[m].pint_unit)
                     for m in markers if m not in pins})
    try:
        solution = solve(unknown, given=pins, presets=["none"], model=single)
    except RoundedUp:
        # A whole count gives back no one value of what it rounds up: refused by design.
        assert relation.rounds(unknown)
        return
    except NoSolution:
        # Cancellation can leave nothing of a quantity the relation barely depends on.
        assert sensitivity(relation, state, unknown) < 1e-3
        return
    except AmbiguousSolution:
        # Only a max/min (the losing argument is merely bounded) or a relation that barely
        # depends on the quantity in this state may leave it undetermined.
        assert relation.has_regimes() or sensitivity(relation, state, unknown) < 1e-3
        return
    got = solution.value(unknown)
    if sensitivity(relation, state, unknown) > 1e-3:
        assert got == pytest.approx(state[unknown], rel=1e-9)
    else:
        # The relation barely depends on this quantity here (a saturated expert count,
        # say): any value it accepts is a correct answer.
        assert residual(relation, {**state, unknown: got}) < 1e-9


def test_every_relation_is_exercised_backwards():
    backwards = {r for r, v in CASES if v != output_of(MODEL.relations[r])}
    assert backwards == set(MODEL.relations)
