"""Self-checks of the whole knowledge base: round trips and consistency checks.

A consistent state is drawn (inputs at random in realistic ranges, everything
else solved forwards); then a random *sufficient* set of pins is taken from it
(a random maximum matching decides which relation solves for what, so outputs
are pinned as often as inputs) and everything else is solved back. Each
quantity must return to its drawn value within 1e-9 relative, or within what
the problem's own conditioning allows in floating point (measured by nudging
the pins). Surplus pins drawn from a consistent state must pass the
consistency check; perturbed by 10% they must fail it, at a relation that
contains the perturbed quantity. The test suite runs a few hundred of these;
``benchmarks/run.py round_trips`` runs 10,000.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import networkx as nx
import numpy as np

from knowledge import load_model
from solvers.api import solve
from solvers.execute import compile_plan
from solvers.plan import make_plan
from solvers.structure import maximum_matching
from solvers.vectorised import evaluate
from symbolic.errors import (
    AmbiguousSolution,
    ChalkError,
    DegenerateError,
    InconsistentPins,
)
from symbolic.units import Q_

RTOL = 1e-9
EPS = np.finfo(float).eps


class Skip(Exception):
    """The draw is not usable (no physical state, or several): not a failure.

    ``reason`` names the kind (the chalk error behind it, when there is one).
    """

    def __init__(self, message: str, reason: str = "other"):
        super().__init__(message)
        self.reason = reason


@dataclass
class Outcome:
    pins: list[str]
    unknowns: list[str]
    worst: float  # largest error relative to its allowance (<= 1 passes)
    worst_name: str
    multistart: bool = False  # a block was solved from several starts: unique unproven
    residual: float = 0.0  # largest relative residual of any relation at the answer


def _matching(model, rng: random.Random, prefer_natural: bool):
    """A maximum matching of relations to variables, randomised (or natural-first)."""
    graph = nx.Graph()
    relations = list(model.relations)
    rng.shuffle(relations)
    for r in relations:
        names = sorted(model.variables_in(r))
        rng.shuffle(names)
        graph.add_node(("r", r), bipartite=0)
        for v in names:
            graph.add_edge(("r", r), ("v", v))
    initial = {}
    if prefer_natural:  # each relation solves for the quantity it naturally produces
        choices = {r: _natural_outputs(model, r) for r in sorted(relations)}
        for level in range(4):  # strongest preferences first, across all relations
            for r, levels in choices.items():
                if ("r", r) in initial:
                    continue
                for v in levels[level]:
                    if ("v", v) not in initial:
                        initial[("r", r)] = ("v", v)
                        initial[("v", v)] = ("r", r)
                        break
    matching = maximum_matching(graph)
    if prefer_natural:
        matching = _improve(graph, initial, matching)
    return {k[1]: v[1] for k, v in matching.items() if k[0] == "r"}


def _natural_outputs(model, name: str) -> list[list[str]]:
    """Quantities a relation can produce from positive inputs without leaving its bounds,
    by preference: its lone left-hand symbol; a positive term of a sum; its namesake; a
    factor with a positive power. Bounded quantities (ratios at least 1, utilisations at
    most 1) are left to be drawn as inputs."""
    import sympy

    relation = model.relations[name]
    names = model.variables_in(name)

    def ok(v):
        var = model.variables.get(v)
        return var is not None and v in names and var.lower is None and var.upper is None

    levels = [[], [], [], []]
    if relation.lhs.is_Symbol and ok(relation.lhs.name):
        levels[0].append(relation.lhs.name)
    for side in (relation.lhs, relation.rhs):
        if isinstance(side, sympy.Add):
            for term in side.args:
                if not term.could_extract_minus_sign():
                    levels[1].extend(sorted(s.name for s in term.free_symbols if ok(s.name)))
        else:
            powers = side.as_powers_dict()
            levels[3].extend(sorted(b.name for b, e in powers.items()
                                    if b.is_Symbol and ok(b.name) and e.is_positive))
    if ok(name):
        levels[2].append(name)
    return levels


def _improve(graph, initial, fallback):
    """Grow ``initial`` to a maximum matching by augmenting paths (keeps its choices)."""
    matching = dict(initial)
    relations = [n for n in graph if n[0] == "r"]
    for start in relations:
        if start in matching:
            continue
        # breadth-first search for an augmenting path from this relation
        parent, frontier, found = {start: None}, [start], None
        while frontier and found is None:
            nxt = []
            for r in frontier:
                for v in graph[r]:
                    if v in parent:
                        continue
                    parent[v] = r
                    mate = matching.get(v)
                    if mate is None:
                        found = v
                        break
                    parent[mate] = v
                    nxt.append(mate)
                if found is not None:
                    break
            frontier = nxt
        node = found
        while node is not None:
            r = parent[node]
            previous = matching.get(r)
            matching[node], matching[r] = r, node
            node = previous
    if sum(1 for n in matching if n[0] == "r") < sum(1 for n in fallback if n[0] == "r"):
        return fallback
    return matching


def _draw(variable, rng: random.Random, spread: float = 3.0) -> float:
    typical = variable.typical or 1.0
    low, high = typical / spread, typical * spread
    if variable.lower is not None:
        low = max(low, variable.lower)
    if variable.upper is not None:
        high = min(high, variable.upper)
    if not variable.scale_like or low <= 0:
        return rng.uniform(low, high)
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def topic_model(topic_module: str):
    """The relations of one knowledge module and the quantities they use, as a model."""
    from importlib import import_module

    from symbolic.model import build_model

    full = load_model()
    relations = import_module(f"knowledge.{topic_module}").RELATIONS
    names = sorted({v for r in relations for v in full.variables_in(r.name)})
    return build_model([full.variables[n] for n in names], relations)


def consistent_state(seed: int, model=None) -> dict[str, float]:
    """Inputs drawn at random, every other quantity solved forwards (declared units)."""
    model = model or load_model()
    rng = random.Random(seed)
    solved_by = _matching(model, random.Random(0), prefer_natural=True)
    outputs = set(solved_by.values())
    inputs = sorted(v for v in model.variables if v not in outputs and model.relations_of(v))
    given = {n: Q_(_draw(model.variables[n], rng), model.variables[n].pint_unit)
             for n in inputs}
    try:
        s = solve(sorted(outputs), given, ["none"], model=model)
    except ChalkError as exc:  # several physical states (ambiguous) included
        raise Skip(f"no single physical state: {exc}") from None
    state = {n: q.magnitude for n, q in ((n, given[n]) for n in inputs)}
    state.update({n: s.value(n) for n in outputs})
    worst = _worst_conditioning(model, state)
    if worst > 1e8:
        raise Skip(f"the drawn state is ill-conditioned (a relation amplifies rounding "
                   f"{worst:.2g} times)")
    return state


def _worst_conditioning(model, state: dict[str, float], step: float = 1e-6) -> float:
    """The largest ratio between how strongly a relation depends on one of its quantities
    and on another: solving for the weak one would amplify rounding by that much."""
    from symbolic.evaluate import compile_expr

    constants = model.constant_values()
    base = {n: state[n] * model.variables[n].to_base for n in state}
    worst = 1.0
    for relation in model.relations.values():
        lhs = compile_expr(relation.lhs, constants)
        rhs = compile_expr(relation.rhs, constants)
        gradient = []
        for name in sorted(model.variables_in(relation.name)):
            up, down = dict(base), dict(base)
            up[name] *= math.exp(step)
            down[name] *= math.exp(-step)
            with np.errstate(all="ignore"):
                g = ((float(lhs(up)) - float(rhs(up))) - (float(lhs(down)) - float(rhs(down))))
            scale = max(abs(float(lhs(base))), abs(float(rhs(base))), 1e-300)
            gradient.append(abs(g) / (2 * step * scale))
        # A quantity the relation does not depend on here (the losing side of a max)
        # leaves it open rather than ill-conditioned: that case is reported as ambiguous.
        moving = [g for g in gradient if g > 1e-12]
        if len(moving) >= 2:
            worst = max(worst, max(moving) / min(moving))
        if not relation.regimes and moving and len(moving) < len(gradient):
            worst = math.inf  # saturated: the relation no longer depends on a quantity
    return worst


def round_trip(state: dict[str, float], seed: int, model=None) -> Outcome:
    """Pin a random sufficient set from ``state``, solve the rest, compare."""
    model = model or load_model()
    solved_by = _matching(model, random.Random(seed), prefer_natural=False)
    unknowns = sorted(set(solved_by.values()))
    pins = sorted(v for v in state if v not in solved_by.values())
    given = {n: Q_(state[n], model.variables[n].pint_unit) for n in pins}
    try:
        s = solve(unknowns, given, ["none"], model=model)
    except (AmbiguousSolution, DegenerateError) as exc:
        raise Skip(f"not determined by these pins: {exc}", reason=type(exc).__name__) from None
    allowance = _allowances(model, pins, unknowns, state, s)
    worst, worst_name = 0.0, ""
    for name in unknowns:
        got, want = s.value(name), state[name]
        error = abs(got - want) / abs(want)
        ratio = error / allowance[name]
        if ratio > worst:
            worst, worst_name = ratio, name
    multistart = any("from several starts" in step.note for step in s.derivation.steps)
    return Outcome(pins, unknowns, worst, worst_name, multistart,
                   _max_residual(model, s.derivation.values))


def _max_residual(model, values: dict) -> float:
    """The largest relative residual of any relation at the given base-unit values."""
    from symbolic.evaluate import compile_expr

    constants = model.constant_values()
    worst = 0.0
    for relation in model.relations.values():
        if not model.variables_in(relation.name) <= set(values):
            continue
        lhs = compile_expr(relation.lhs, constants)
        rhs = compile_expr(relation.rhs, constants)
        with np.errstate(all="ignore"):
            a, b = float(lhs(values)), float(rhs(values))
        scale = max(abs(a), abs(b))
        if scale:
            worst = max(worst, abs(a - b) / scale)
    return worst


def _allowances(model, pins, unknowns, state, solution) -> dict[str, float]:
    """1e-9, or more where nudging the pins by 1e-9 moves a result by more (ill-conditioned)."""
    plan = make_plan(model, frozenset(solution.derivation.pins), tuple(unknowns))
    compiled = compile_plan(model, plan)
    base = {n: p.value for n, p in solution.derivation.pins.items()}
    rng = np.random.default_rng(0)
    trials = 8
    arrays = {n: np.full(trials + 1, v) for n, v in base.items()}
    for n in pins:
        arrays[n][1:] *= 1 + 1e-9 * rng.choice([-1.0, 1.0], trials)
    values = evaluate(compiled, arrays, None, trials + 1).values
    out = {}
    for name in unknowns:
        v = values[name]
        centre = v[0]
        spread = np.nanmax(np.abs(v[1:] - centre)) / abs(centre) if centre else 0.0
        amplification = spread / 1e-9 if np.isfinite(spread) else 1e9
        out[name] = max(RTOL, amplification * EPS * 64)
    return out


def consistency(state: dict[str, float], seed: int, model=None) -> tuple[str, str]:
    """Surplus pins pass; one of them perturbed by 10% fails at a relation containing it.

    Returns the perturbed quantity and the relation the error named.
    """
    model = model or load_model()
    rng = random.Random(seed)
    solved_by = _matching(model, rng, prefer_natural=False)
    unknowns = sorted(set(solved_by.values()))
    extra = rng.sample(unknowns, k=min(3, len(unknowns)))
    pins = sorted(v for v in state if v not in solved_by.values()) + extra
    targets = [u for u in unknowns if u not in extra][:5] or [unknowns[0]]
    given = {n: Q_(state[n], model.variables[n].pint_unit) for n in pins}
    try:
        s = solve(targets, given, ["none"], rtol=1e-6, model=model)
    except (AmbiguousSolution, DegenerateError) as exc:
        raise Skip(str(exc)) from None
    if not s.derivation.checks:
        raise Skip("the extra pins created no cross-check")
    check = rng.choice(s.derivation.checks)
    # A pin that no solve step uses can only be tested by the checks: perturbing it cannot
    # be absorbed by re-solving the rest.
    used_by_steps = set()
    for step in s.derivation.steps:
        for r in step.relations:
            used_by_steps |= model.variables_in(r)
    pinned_in_check = sorted((model.variables_in(check.relation) & set(given))
                             - used_by_steps)
    if not pinned_in_check:
        raise Skip("every pin of the cross-check also feeds a solve step")
    victim = rng.choice(pinned_in_check)
    if _check_shift(model, check.relation, s.derivation.values, victim) < 1e-4:
        raise Skip(f"the cross-check {check.relation} barely depends on {victim} here")
    perturbed = dict(given)
    perturbed[victim] = given[victim] * 1.1
    try:
        solve(targets, perturbed, ["none"], rtol=1e-6, model=model)
    except InconsistentPins as exc:
        if victim not in model.variables_in(exc.relation):
            raise AssertionError(f"perturbing {victim} was blamed on {exc.relation}, which "
                                 "does not contain it") from None
        return victim, exc.relation
    except ChalkError as exc:
        raise Skip(f"perturbed pins have no physical solution: {exc.message}") from None
    raise AssertionError(f"a 10% change in {victim} passed the consistency check")


def _check_shift(model, relation: str, values: dict, victim: str) -> float:
    """How far apart a 10% change in ``victim`` pulls the two sides of ``relation``."""
    from symbolic.evaluate import compile_expr

    r = model.relations[relation]
    constants = model.constant_values()
    lhs, rhs = compile_expr(r.lhs, constants), compile_expr(r.rhs, constants)
    moved = dict(values)
    moved[victim] = values[victim] * 1.1
    with np.errstate(all="ignore"):
        a, b = float(lhs(moved)), float(rhs(moved))
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale else 0.0
