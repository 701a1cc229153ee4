"""Self-checks of the whole knowledge base: round trips and consistency checks.

A consistent state is drawn (inputs at random in realistic ranges, everything
else solved forwards); then a random *sufficient* set of pins is taken from it
(the free columns of the log-space Jacobian reduced in a random pivot order, so
outputs are pinned as often as inputs) and everything else is solved back. Each
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
from functools import cache, lru_cache

import numpy as np
from chalk.knowledge import load_model
from chalk.solvers.bulk.vectorised import evaluate
from chalk.solvers.execution.blocks import MULTI_START
from chalk.solvers.execution.execute import compile_plan
from chalk.solvers.planning.plan import make_plan
from chalk.symbolic.errors import AmbiguousSolution, ChalkError, DegenerateError, InconsistentPins
from chalk.symbolic.printing.quantities import format_quantity
from chalk.symbolic.units import Q_

from chalk.api import prepare, solve

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


def sufficient_pins(model, rng: random.Random, natural: bool = False) -> list[str]:
    """A random set of quantities that, pinned, fixes every other quantity of ``model``.

    The log-space Jacobian of the whole model is reduced with pivots chosen in a random
    order; the columns left free are a basis of what the relations leave open, so
    pinning exactly them determines the rest. With ``natural`` the derived quantities
    pivot first and bounded ones (ratios of at least 1, shares of at most 1) last, so
    the basis is made of inputs that can be drawn within their bounds.
    """
    from chalk.solvers.analysis.rank import analyse

    names = sorted(v for v in model.variables if model.relations_of(v))
    keys = {n: rng.random() for n in names}
    order = sorted(model.relations)
    rng.shuffle(order)

    def bounded(name):
        variable = model.variables[name]
        return variable.lower is not None or variable.upper is not None

    def preference(name):
        if not natural:
            return keys[name]
        return (not model.variables[name].derived, bounded(name), keys[name])

    preferred: dict[str, str] = {}
    if natural:  # each relation computes the quantity it naturally produces
        choices = {r: _natural_outputs(model, r) for r in sorted(model.relations)}
        taken: set[str] = set()
        for level in range(4):  # strongest preferences first, across all relations
            for r, levels in choices.items():
                if r in preferred:
                    continue
                for v in levels[level]:
                    if v not in taken:
                        preferred[r] = v
                        taken.add(v)
                        break
        order = [r for r in order if r in preferred] + [r for r in order if r not in preferred]
    return sorted(analyse(model, (), (), order, preferred, preference).free)


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

    levels: list[list[str]] = [[], [], [], []]
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


@cache
def topic_model(topic_module: str):
    """The relations of one knowledge module and the quantities they use, as a model.

    One model per topic for the whole process: the engine caches what it works out per
    model (reference point, plans, compiled steps) by identity, so every test module and
    benchmark that draws from a topic shares that work instead of redoing it.
    """
    from importlib import import_module

    return submodel(import_module(f"chalk.knowledge.{topic_module}").RELATIONS)


def submodel(relations):
    """Some relations of the knowledge base, with the quantities and variants they use."""
    from chalk.symbolic.model import build_model

    full = load_model()
    relations = list(relations)
    variants = {r.variant: full.variants[r.variant] for r in relations if r.variant}
    names = sorted({v for r in relations for v in full.variables_in(r.name)}
                   | {m for v in variants.values() for m in v.markers})
    return build_model([full.variables[n] for n in names], relations, (), variants.values())


def consistent_state(seed: int, model=None, conditioning: float = 1e8) -> dict[str, float]:
    """A state where every relation holds (declared units), drawn at random.

    Typical values are scattered by a factor of about e either way (seeded) and moved
    onto the solution set by Gauss-Newton in log space, inputs staying close to where
    they were drawn (solvers.analysis.reference). A draw that leaves a quantity outside its
    bounds, or a relation so saturated that it amplifies rounding more than
    ``conditioning`` times, is skipped.

    A draw depends on nothing but its arguments, so each is made once per process (most
    seeds are skipped, and the search that decides so is most of a probe's time): a test
    and a benchmark drawing the same seeds share the work. The caller gets its own copy.
    """
    found = _drawn_state(seed, model or load_model(), conditioning)
    if isinstance(found, Skip):
        raise Skip(str(found), found.reason)  # a new one: no traceback kept from before
    return dict(found)


@lru_cache(maxsize=4096)
def _drawn_state(seed: int, model, conditioning: float) -> dict[str, float] | Skip:
    """:func:`consistent_state`'s draw, or the :class:`Skip` saying why it is unusable."""
    try:
        return _draw_state(seed, model, conditioning)
    except Skip as skipped:
        return skipped


def _draw_state(seed: int, model, conditioning: float) -> dict[str, float]:
    from chalk.solvers.analysis.reference import consistent_point

    point = consistent_point(model, seed, STATE_SPREAD, atol=STATE_ATOL)
    if not point.converged:
        raise Skip(f"no consistent state near this draw (residual {point.residual:.2g})")
    state = {}
    for name, base in point.values.items():
        variable = model.variables[name]
        if not variable.admits(base):
            raise Skip(f"the draw puts {name} outside its bounds", reason="bounds")
        state[name] = base / variable.to_base
    worst = _worst_conditioning(model, state)
    if worst > conditioning:
        raise Skip(f"the drawn state is ill-conditioned (a relation amplifies rounding "
                   f"{worst:.2g} times)")
    return state


PROBE_CONDITIONING = 1e6  # probes use states where no relation is nearly saturated
STATE_SPREAD = 1.0  # sd of ln(value / typical) of a drawn state, before projection
STATE_ATOL = 1e-14  # a drawn state holds every relation nearly to rounding


def _worst_conditioning(model, state: dict[str, float], step: float = 1e-6) -> float:
    """The largest ratio between how strongly a relation depends on one of its quantities
    and on another: solving for the weak one would amplify rounding by that much."""
    from chalk.symbolic.evaluate import compile_expr

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
    pins = sufficient_pins(model, random.Random(seed))
    unknowns = sorted(v for v in state if v not in pins)
    return _solve_back(model, state, pins, unknowns)


def _solve_back(model, state, pins, unknowns) -> Outcome:
    given = {n: Q_(state[n], model.variables[n].pint_unit) for n in pins}
    try:
        s = solve(unknowns, given, ["none"], model=model)
    except (AmbiguousSolution, DegenerateError) as exc:
        raise Skip(f"not determined by these pins: {exc}", reason=type(exc).__name__) from None
    errors = {n: abs(s.value(n) - state[n]) / abs(state[n]) for n in unknowns}
    # the conditioning allowance costs a re-solve: measure it only when 1e-9 is missed
    allowance = (_allowances(model, pins, unknowns, state, s)
                 if any(e > RTOL for e in errors.values()) else dict.fromkeys(unknowns, RTOL))
    worst, worst_name = 0.0, ""
    for name in unknowns:
        ratio = errors[name] / allowance[name]
        if ratio > worst:
            worst, worst_name = ratio, name
    multistart = any("from several starts" in step.note for step in s.derivation.steps)
    return Outcome(sorted(pins), unknowns, worst, worst_name, multistart,
                   _max_residual(model, s.derivation.values))


@dataclass
class ProbeResult:
    """One probe: a target, a minimal set of pins that determines it, what chalk said."""

    target: str
    pins: list[str]
    # "answered", "two solutions" (verified: the pins do not fix the target), "genuine
    # refusal" (several values listed, not followed to the end), "another solution",
    # "wrong", "refused"
    verdict: str
    detail: str = ""


def probe(state: dict[str, float], seed: int, model=None) -> ProbeResult:
    """Draw a minimal pin set that determines a random target at ``state`` in every
    max() regime, and ask chalk for the target.

    The pins start as every other quantity; each is dropped, in random order, when the
    target stays determined without it. Determinedness is decided here independently of
    chalk's planner: by the rank of the log-space Jacobian at ``state`` itself (central
    differences, singular values), once per combination of max() regimes; a state where
    a relation's gradient is not finite raises :class:`Skip`. An answer must come back
    to the drawn value. A refusal that lists two or more complete solutions, which hold
    every relation here and differ in the target, shows that the pins do not fix it
    ("two solutions"); one that lists several values otherwise is a "genuine refusal".
    """
    from chalk.solvers.pinning.variants import for_pins, set_aside

    model = model or load_model()
    rng = random.Random(seed)
    names = sorted(state)
    target = rng.choice(names)
    jacobians = {}  # per set of variants the pins rule out (solvers.pinning.variants)
    pins = [n for n in names if n != target]
    rng.shuffle(pins)

    def fixes(pinned):
        # only the relations of the kind of model the pins mark apply (latent attention's
        # widths pinned: the grouped-query forms do not hold)
        key = set_aside(model, pinned)
        if key not in jacobians:
            jacobians[key] = _state_jacobians(for_pins(model, pinned)[0], state, names)
        return all(_determines(j, names, pinned, target) for j in jacobians[key])

    # Drop pins in random order while the target stays fixed, trying runs of them at once
    # and splitting a run that cannot go: a pin found needed stays needed as more go.
    kept = set(pins)
    runs = [pins[i:i + 16] for i in range(0, len(pins), 16)]
    while runs:
        run = runs.pop(0)
        if fixes(kept - set(run)):
            kept -= set(run)
        elif len(run) > 1:
            runs[:0] = [run[:len(run) // 2], run[len(run) // 2:]]
    chosen = sorted(kept)
    given = {n: Q_(state[n], model.variables[n].pint_unit) for n in chosen}
    try:
        s = solve(target, given, ["none"], model=model)
    except AmbiguousSolution as exc:
        shown = show_value(model, target, state[target])
        if _verified_solutions(model, target, exc.solutions):
            drawn = any(abs(v[target] / model.variables[target].to_base - state[target])
                        <= 1e-6 * abs(state[target]) for v in exc.solutions)
            return ProbeResult(target, chosen, "two solutions",
                               f"{exc.message} (drawn {shown}"
                               f"{', among them' if drawn else ', not among them'})")
        # the option texts name the ambiguous quantity only if it is asked for alone
        options = [o if " = " in o else f"{exc.name} = {o.split(': ', 1)[-1]}"
                   for o in exc.options]
        drawn = any(_mentions(o, model, state) for o in options)
        # Genuine: two or more solutions listed (with the drawn state, which near a
        # saturated relation the search may not be the one to find, there are then at
        # least two).
        verdict = "genuine refusal" if len(options) > 1 else "refused"
        return ProbeResult(target, chosen, verdict,
                           f"{type(exc).__name__}: {exc.message} (drawn {shown}"
                           f"{', listed' if drawn else ', not listed'})")
    except ChalkError as exc:
        return ProbeResult(target, chosen, "refused", f"{type(exc).__name__}: {exc.message}")
    got = s.value(target)
    error = abs(got - state[target]) / abs(state[target])
    if error <= RTOL or error <= _allowances(model, chosen, [target], state, s)[target]:
        return ProbeResult(target, chosen, "answered")
    detail = f"got {got!r}, drawn {state[target]!r}"
    flagged = any(step.method == MULTI_START for step in s.derivation.steps)
    if flagged and _max_residual(model, s.derivation.values) < 1e-8:
        # another solution, which the derivation says may not be the only one
        return ProbeResult(target, chosen, "another solution", detail)
    return ProbeResult(target, chosen, "wrong", detail)


def _verified_solutions(model, target: str, solutions) -> bool:
    """Whether ``solutions`` (base units) are at least two complete solutions that every
    relation holds at (to 1e-8, evaluated here) with different values of ``target``: then
    the pins do not determine it, whatever each regime's rank says."""
    good = [v for v in solutions if target in v and _max_residual(model, v) < 1e-8]
    values = sorted(v[target] for v in good)
    return len(values) > 1 and values[-1] - values[0] > 1e-6 * abs(values[-1])


def show_value(model, name: str, declared: float) -> str:
    variable = model.variables[name]
    return format_quantity(declared, variable.pint_unit)


def _mentions(option: str, model, state: dict[str, float]) -> bool:
    """Whether an ambiguity's option is the drawn state: every ``name = value`` it shows
    matches the state to the digits printed (and it shows at least one)."""
    import re

    from chalk.symbolic.parsing import parse_value

    shown = 0
    for name, text in re.findall(r"([a-z][a-z0-9_]*) = ([^,;()]+)", option):
        if name not in state:
            continue
        try:
            parsed = parse_value(text.strip())
            unit = model.variables[name].pint_unit
            value = (Q_(parsed.magnitude, parsed.unit).to(unit).magnitude
                     if parsed.unit is not None else parsed.magnitude)
        except Exception:  # noqa: BLE001 - text that is not a value of this quantity
            continue
        if abs(value - state[name]) > 2e-3 * abs(state[name]):
            return False
        shown += 1
    return shown > 0


def _state_jacobians(model, state, names) -> list[np.ndarray]:
    """The log-space Jacobian of every relation at ``state`` (forward differentiation of
    each relation's sides, exact to rounding), one matrix per combination of max()/min()
    regimes: each regime's branch of a relation gives its own row."""
    import itertools

    from chalk.solvers.analysis.gradient import compile_log_gradient
    from chalk.solvers.execution.symbolic_solve import branches

    constants = model.constant_values()
    base = {n: state[n] * model.variables[n].to_base for n in names}
    index = {n: i for i, n in enumerate(names)}
    per_relation = []
    for relation in model.relations.values():
        options = []
        for branch in branches(relation, set(relation.symbols)):
            lhs = compile_log_gradient(branch.lhs, constants)
            rhs = compile_log_gradient(branch.rhs, constants)
            (a, ga), (b, gb) = lhs(base), rhs(base)
            scale = abs(a) + abs(b)
            row = np.zeros(len(names))
            for name, d in ga.items():
                row[index[name]] += d / scale
            for name, d in gb.items():
                row[index[name]] -= d / scale
            options.append(row)
        per_relation.append(options)
    out = [np.array(rows) for rows in itertools.product(*per_relation)]
    if not all(np.all(np.isfinite(j)) for j in out):
        raise Skip("a relation's gradient is not finite at the drawn state", "other")
    return out


def _determines(jacobian: np.ndarray, names, pinned, target) -> bool:
    """Whether pinning ``pinned`` fixes ``target``: no null direction of the unpinned
    columns moves it."""
    columns = [i for i, n in enumerate(names) if n not in pinned]
    sub = jacobian[:, columns]
    try:
        _, singular, vt = np.linalg.svd(sub)
    except np.linalg.LinAlgError:  # LAPACK's divide and conquer can fail to converge
        from scipy.linalg import svd

        _, singular, vt = svd(sub, lapack_driver="gesvd")
    tol = PROBE_RTOL * (singular[0] if singular.size else 1.0)
    rank = int(np.sum(singular > tol))
    null = vt[rank:]
    position = columns.index(names.index(target))
    return not null.size or float(np.max(np.abs(null[:, position]))) < PROBE_NULL


PROBE_RTOL = 1e-10  # singular values below this share of the largest count as zero
# A target moved by less than this along a unit null direction is fixed: near a saturated
# relation a quantity can move by 1e-6 or so, which is free, not fixed to rounding.
PROBE_NULL = 1e-9


def _max_residual(model, values: dict) -> float:
    """The largest relative residual of any relation at the given base-unit values."""
    from chalk.symbolic.evaluate import compile_expr

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
    # what the derivation itself reports of ill-conditioned steps (a block's elasticity)
    import re

    reported = [float(x) for step in solution.derivation.steps
                for x in re.findall(r"moves \w+ ([0-9.e+]+) times as much", step.note)]
    out = {}
    for name in unknowns:
        v = values[name]
        centre = v[0]
        spread = np.nanmax(np.abs(v[1:] - centre)) / abs(centre) if centre else 0.0
        amplification = spread / 1e-9 if np.isfinite(spread) else 1e9
        amplification = max([amplification, *reported])
        out[name] = max(RTOL, amplification * EPS * 64)
    return out


def consistency(state: dict[str, float], seed: int, model=None) -> tuple[str, str]:
    """Surplus pins pass; one of them perturbed by 10% fails at a relation containing it.

    Returns the perturbed quantity and the relation the error named.
    """
    model = model or load_model()
    rng = random.Random(seed)
    basis = sufficient_pins(model, rng)
    unknowns = sorted(v for v in state if v not in basis)
    extra = rng.sample(unknowns, k=min(3, len(unknowns)))
    pins = sorted(basis) + extra
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
    # be absorbed by re-solving the rest. The steps are those of the solution, and of the
    # question's plan as first made: an answer found regime by regime came from another
    # plan, and the perturbed pins may not need that detour.
    used_by_steps = set()
    first_plan = prepare(targets, given, ["none"], model=model).plan
    for relations in [step.relations for step in s.derivation.steps] + [
            step.relations for step in first_plan.steps]:
        for r in relations:
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
        answered = solve(targets, perturbed, ["none"], rtol=1e-6, model=model)
    except InconsistentPins as exc:
        if victim not in model.variables_in(exc.relation):
            raise AssertionError(f"perturbing {victim} was blamed on {exc.relation}, which "
                                 "does not contain it") from None
        return victim, exc.relation
    except ChalkError as exc:
        raise Skip(f"perturbed pins have no physical solution: {exc.message}") from None
    values = answered.derivation.values
    if model.variables_in(check.relation) <= set(values) and _max_residual(model,
                                                                          values) < 1e-8:
        # every relation holds at chalk's answer: the perturbed pins agree after all (in
        # another max() regime, say), and there was nothing to catch
        raise Skip(f"a 10% change in {victim} is consistent: every relation holds at the "
                   "answer")
    raise AssertionError(f"a 10% change in {victim} passed the consistency check")


def _check_shift(model, relation: str, values: dict, victim: str) -> float:
    """How far apart a 10% change in ``victim`` pulls the two sides of ``relation``."""
    from chalk.symbolic.evaluate import compile_expr

    r = model.relations[relation]
    constants = model.constant_values()
    lhs, rhs = compile_expr(r.lhs, constants), compile_expr(r.rhs, constants)
    moved = dict(values)
    moved[victim] = values[victim] * 1.1
    with np.errstate(all="ignore"):
        a, b = float(lhs(moved)), float(rhs(moved))
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale else 0.0
