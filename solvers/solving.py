"""Solving a plan and holding it to account.

:func:`compute` runs a determined plan from pins: it checks every surplus pin against
the relation that links it, refuses a target the pins do not fix where the solution
actually is, follows each solution of a step that has several through the rest of
the plan (keeping those every later step and check allows), and, when a block through
``max()`` defeats the search as a whole or a regime is left open, solves again regime
by regime. Nothing here knows what the quantities mean.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from chalk.solvers.at_solution import open_at
from chalk.solvers.blocks import MULTI_START
from chalk.solvers.conflicts import inconsistency
from chalk.solvers.execute import CompiledPlan, compile_plan
from chalk.solvers.flags import flags
from chalk.solvers.paths import explore
from chalk.solvers.pinned import Pin
from chalk.solvers.placeholders import run
from chalk.solvers.plan import (
    Plan,
    determined_in_every_regime,
    make_plan,
    regime_mapping,
    regime_plans,
)
from chalk.solvers.steps import CheckRecord, StepRecord
from chalk.solvers.symbolic_solve import DEFAULT_TIMEOUT
from chalk.solvers.tolerances import PINS, STEPS
from chalk.symbolic.errors import (
    AmbiguousSolution,
    ChalkError,
    IllConditioned,
    InconsistentPins,
    NoSolution,
    SearchFailed,
)
from chalk.symbolic.evaluate import compile_expr
from chalk.symbolic.model import Model
from chalk.symbolic.printing.quantities import format_quantity
from chalk.symbolic.relations import Relation
from chalk.symbolic.variables import known_constant


@dataclass(frozen=True)
class Computed:
    """A plan run to numbers.

    Attributes
    ----------
    plan : Plan
        The plan the numbers come from (a regime's plan if the solve went regime by
        regime).
    compiled : CompiledPlan
    values : dict of name to float
        Every quantity computed or pinned, in base units.
    records : tuple of StepRecord
        What each step did.
    checks : tuple of CheckRecord
        The cross-checks of surplus pins, all within tolerance.
    notes : tuple of str
        How the solve went where that matters to the answer (regime by regime, a
        multi-start search that cannot prove the answer unique).
    flags : tuple of str
        Determined values past a bound the model declares (:mod:`chalk.solvers.flags`).
    """

    plan: Plan
    compiled: CompiledPlan
    values: dict[str, float]
    records: tuple[StepRecord, ...]
    checks: tuple[CheckRecord, ...]
    notes: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()


def compute(model: Model, plan: Plan, pins: Mapping[str, Pin], regime: str | None = None,
            rtol: float = PINS.agreement_rtol, timeout: float = DEFAULT_TIMEOUT) -> Computed:
    """Run a determined plan from pins, with its cross-checks.

    Parameters
    ----------
    model : Model
    plan : Plan
        A plan that determines its targets (else its under-determined error is raised).
    pins : mapping of name to Pin
    regime : str, optional
        The max() regime the user chose.
    rtol : float
        Relative tolerance of the cross-checks.
    timeout : float
        Seconds allowed for any one symbolic solve.

    Raises
    ------
    ChalkError
        Under-determined, inconsistent pins, no or several physical values.
    """
    if not plan.determined:
        raise plan.underdetermined_error()
    base = {n: p.value for n, p in pins.items()}
    notes: tuple[str, ...] = ()
    try:
        done = run_checked(model, plan, base, pins, regime, rtol, timeout)
    except SearchFailed as exc:  # an ambiguity found is information; a failed search is not
        done = solve_by_regimes(model, plan, base, pins, regime, rtol, timeout, exc)
        notes = (f"solved in each combination of max() regimes: only {done.notes[0]} holds "
                 "at the solution",)
    except InconsistentPins as exc:
        if not (plan.placeholders and _reads_regimes(model, plan)):
            raise
        # A quantity held at a placeholder value can put a max() into the regime in which
        # a cross-check fails though the pins agree; in the regime the numbers are in, that
        # check may fix the quantity instead. Each regime on its own settles it.
        done = solve_by_regimes(model, plan, base, pins, regime, rtol, timeout, exc)
        notes = (f"solved in each combination of max() regimes: only {done.notes[0]} holds "
                 "at the solution",)
    except AmbiguousSolution as exc:
        if exc.solutions or exc.count or not determined_in_every_regime(
                model, plan.pinned, plan.targets):
            raise  # (a regime in which a target is free may hold: it stays open)
        # A regime left open (a max() whose losing argument may take any value, or a
        # target that turns on which regime holds): planned regime by regime, the other
        # relations may fix it, or rule all but one regime out.
        done = solve_by_regimes(model, plan, base, pins, regime, rtol, timeout, exc)
        notes = (f"solved in each combination of max() regimes: only {done.notes[0]} holds "
                 "at the solution",)
    else:
        notes = done.notes  # how steps with several solutions were settled
        if any(r.method == MULTI_START for r in done.records):
            # not proven unique: each regime on its own may settle it with complete searches
            try:  # two regimes each with a solution prove the answer ambiguous: say so
                found = solve_by_regimes(model, plan, base, pins, regime, rtol, timeout, None)
            except AmbiguousSolution:
                raise
            except ChalkError:
                found = None
            if found is not None and not any(r.method == MULTI_START for r in found.records):
                done = found
                notes = (f"solved in each combination of max() regimes (the block as a whole "
                         f"needed a multi-start search): only {found.notes[0]} holds at the "
                         "solution",)
    notes += tuple(
        f"step {i} ({', '.join(r.variables)}) is one solution a multi-start search found; "
        "others may exist: pin one of its quantities to make the answer unique"
        for i, r in enumerate(done.records, 1) if r.method == MULTI_START)
    plan = done.plan
    found = flags(model, done.values, lambda n: n not in plan.placeholders
                  and n not in plan.provisional)
    return replace(done, notes=notes, flags=found)


def _reads_regimes(model: Model, plan: Plan) -> bool:
    """Whether a relation the plan solves with or checks has max()/min() regimes."""
    return any(model.relations[r].has_regimes() for r in plan.relations)


def run_checked(model: Model, plan: Plan, base: Mapping[str, float],
                pins: Mapping[str, Pin], regime, rtol: float, timeout: float) -> Computed:
    """Run a plan; raise on a failed cross-check or a target left open at the solution.
    ``regime`` is a regime name or a mapping of relation to regime label.

    A step with several discrete solutions (two roots, a block's two solutions) is not
    yet an ambiguity: each is followed through the rest of the plan, and one that a
    later step, a cross-check or the rank test at the solution rules out is set aside
    (the derivation says why). Only solutions that survive everything and differ in a
    target are an ambiguity; when they all give the same targets, the first is kept.
    """
    compiled = compile_plan(model, plan, timeout)
    survivors: list[Computed] = []
    failures: list[tuple[dict[int, int], ChalkError]] = []
    forks: dict[int, AmbiguousSolution] = {}  # step index -> the ambiguity it raised
    for path in explore(lambda choices: _run_once(model, plan, compiled, base, pins, regime,
                                                  rtol, choices)):
        if path.error is None:
            survivors.append(path.result)
        elif path.forked:
            forks.setdefault(path.error.step, path.error)
        elif not path.choices:
            raise _as_proven(path.error)
        else:
            failures.append((path.choices, path.error))
    unsettled = [exc for _, exc in failures if not _rules_out(exc)]
    if unsettled:
        # a path that is itself ambiguous, or whose search failed without proving that
        # it has no solution, cannot be set aside: the first ambiguity stands
        raise next((e for e in unsettled if isinstance(e, AmbiguousSolution)), forks[min(forks)])
    if not survivors:
        # every path fails: where pins disagree on each, the path that comes closest to
        # agreeing is the one meant, and its disagreement the one to report
        disagreements = [e for _, e in failures if isinstance(e, InconsistentPins)]
        raise min(disagreements, key=lambda e: e.difference) if disagreements \
            else _as_proven(failures[0][1])
    distinct: list[Computed] = []
    for entry in survivors:
        if not any(_same_targets(plan.targets, entry.values, other.values) for other in distinct):
            distinct.append(entry)
    if len(distinct) > 1:
        options = [", ".join(f"{t} = {show_value(model, t, e.values[t])}" for t in plan.targets)
                   for e in distinct]
        hints = dict.fromkeys(exc.hint for exc in forks.values())
        raise AmbiguousSolution(", ".join(plan.targets), options,
                                "every relation holds with each; " + "; ".join(hints),
                                solutions=tuple(dict(e.values) for e in distinct))
    kept = distinct[0]
    if not forks:
        return kept
    notes = []
    for step, exc in sorted(forks.items()):
        why = [f"with {exc.options[c[step]] if c[step] < len(exc.options) else 'another'}, "
               f"{err.message}" for c, err in failures if step in c]
        said = f"step {step + 1} ({exc.name}) has {exc.count} physical solutions"
        if len(survivors) > 1:
            notes.append(f"{said}; the targets are the same with each")
        else:
            notes.append(f"{said}; only one carries through the rest"
                         + (" (set aside: " + "; ".join(why) + ")" if why else ""))
    return replace(kept, notes=tuple(notes))


def _run_once(model, plan, compiled, base, pins, regime, rtol, choices) -> Computed:
    values, records, checks = run(compiled, base, regime, choices)
    for i, check in enumerate(checks):
        if not check.ok(rtol):
            check = checks[i] = replace(check, gain=check_gain(compiled, base, regime, i,
                                                                check, choices))
        if not check.ok(rtol):
            raise inconsistency(model, check, pins, plan)
    check_fixed_at_solution(model, plan, values, records, regime)
    return Computed(plan, compiled, values, tuple(records), tuple(checks))


def _as_proven(exc: ChalkError) -> ChalkError:
    """The error to report for the question: "no solution" found downstream of a search
    that was not complete becomes a search that failed (another of its solutions may
    lead to one), though it rules out the path it ended."""
    if isinstance(exc, NoSolution) and not isinstance(exc, SearchFailed) and exc.after_search:
        return SearchFailed(exc.name, f"{exc.reason}, with the values of "
                            f"{', '.join(exc.after_search)} that a multi-start search found "
                            "(it may have others); pin one of them")
    return exc


def _rules_out(exc: ChalkError) -> bool:
    """Whether an error on one path proves that path has no solution: no physical value
    (found by a complete search) or pins its values contradict."""
    if isinstance(exc, (SearchFailed, IllConditioned)):
        return False
    return isinstance(exc, (NoSolution, InconsistentPins))


def _same_targets(targets, a: Mapping[str, float], b: Mapping[str, float]) -> bool:
    return all(abs(a[t] - b[t]) <= STEPS.distinct_rtol * max(abs(a[t]), abs(b[t]))
               for t in targets)


def show_value(model: Model, name: str, value: float) -> str:
    variable = model.variables[name]
    return format_quantity(value / variable.to_base, variable.pint_unit)


def check_gain(compiled: CompiledPlan, base: Mapping[str, float], regime, index: int,
               check: CheckRecord, choices: Mapping[int, int] | None = None) -> float:
    """How far the ``index``-th cross-check (``check``, at ``base``) moves its relative
    difference when one pin moves: the largest ``|d difference / d ln pin|`` over the
    pins, by one-sided differences through the whole plan.

    Pins from public sources are trusted to a relative tolerance; a check whose side is
    computed through a cancelling difference (a small term got by subtracting two large
    ones) turns that tolerance into a larger gap, which is no conflict. At least 1.
    """
    start = check.signed
    gain = 1.0
    step = PINS.gain_step
    for name, value in base.items():
        if not isinstance(value, float) or value <= 0:
            continue
        moved = dict(base)
        moved[name] = value * math.exp(step)
        try:
            _, _, trial = run(compiled, moved, regime, choices)
        except ChalkError:
            continue
        gain = max(gain, abs(trial[index].signed - start) / step)
    return gain


def solve_by_regimes(model: Model, plan: Plan, base: Mapping[str, float],
                     pins: Mapping[str, Pin], regime, rtol: float, timeout: float,
                     first: ChalkError | None) -> Computed | None:
    """Solve again in each combination of max()/min() regimes separately.

    A block with a max() solved as one system can defeat the numeric search, or leave
    a target open at the point it finds, where each regime on its own is a short chain
    of closed forms. Each regime combination that fixes the targets is planned and run
    in that regime; a solution counts only if every max() relation whose quantities it
    has holds with its arguments in that regime. One solution is the answer (its
    ``notes`` hold the regimes it was found in); several are an ambiguity; none
    re-raises ``first`` (or returns None if there is none). Regime combinations in which
    the pins leave a target free are not searched.
    """
    if regime is not None or not any(r.has_regimes() for r in model.relations.values()):
        if first is None:
            return None
        raise first
    targets = plan.targets
    wanted = tuple(dict.fromkeys(
        targets + tuple(v for r in model.relations.values() if r.has_regimes()
                        for v in sorted(model.variables_in(r.name)) if v not in pins)))
    found: list[Computed] = []
    for candidate in regime_plans(model, frozenset(pins), targets):
        mapping = regime_mapping(candidate.regime)
        # also compute the arguments of every max() the regime plan fixes, to test it
        checked = [v for v in wanted if candidate.analysis.is_determined(v)]
        full = make_plan(model, frozenset(pins), tuple(checked), candidate.regime)
        try:
            result = run_checked(model, full, base, pins, mapping, rtol, timeout)
        except ChalkError:
            continue
        if not regimes_hold(model, result.values, mapping):
            continue
        used = [label for label in candidate.regime
                if model.variables_in(label.split(": ", 1)[0]) <= set(result.values)]
        found.append(replace(result, plan=replace(full, targets=targets),
                             notes=(", ".join(used) or ", ".join(candidate.regime),)))
    distinct: list[Computed] = []
    for entry in found:
        if not any(all(abs(entry.values[t] - other.values[t])
                       <= STEPS.distinct_rtol * abs(other.values[t]) for t in targets)
                   for other in distinct):
            distinct.append(entry)
    if not distinct:
        if first is None:
            return None
        raise first
    if len(distinct) > 1:
        name = targets[0]
        variable = model.variables[name]
        options = [f"{format_quantity(e.values[name] / variable.to_base, variable.pint_unit)}"
                   f" ({e.notes[0]})" for e in distinct]
        raise AmbiguousSolution(name, options, "pin another quantity or choose a --regime",
                                solutions=tuple(dict(e.values) for e in distinct))
    return distinct[0]


def _regime_arguments(relation: Relation, values: Mapping[str, float]) -> dict[str, float]:
    """The value of each regime argument of a max()/min() relation (KeyError if a
    quantity has no value)."""
    constants = {s.name: known_constant(s.name).base_value for s in relation.symbols
                 if known_constant(s.name) is not None}
    return {label: float(compile_expr(expr, constants)(values))
            for label, expr in relation.regimes}


def regimes_hold(model: Model, values: Mapping[str, float], mapping: Mapping[str, str]) -> bool:
    """Whether every max()/min() relation whose quantities all have values holds with its
    arguments in the regime ``mapping`` names for it."""
    for name, label in mapping.items():
        relation = model.relations[name]
        if not model.variables_in(name) <= set(values):
            continue
        args = _regime_arguments(relation, values)
        best = min(args.values()) if relation.is_min() else max(args.values())
        if abs(args[label] - best) > STEPS.guard_rtol * abs(best):
            return False
    return True


def balanced(relation: Relation, values: Mapping[str, float]) -> bool:
    """Whether a max()/min() relation sits where its regime arguments are equal."""
    if not relation.regimes:
        return False
    try:
        args = sorted(_regime_arguments(relation, values).values())
    except KeyError:
        return False
    return len(args) > 1 and abs(args[-1] - args[-2]) <= STEPS.guard_rtol * abs(args[-1])


def check_fixed_at_solution(model: Model, plan: Plan, values: Mapping[str, float], records,
                            regime=None) -> None:
    """Refuse a target the pins do not fix where the solution actually is.

    The plan decides with generic rows (a max() as a mixture of its regimes, sums at a
    reference point); in the regime the numbers land in, or with placeholders held,
    a target may still be free. At a balance point, where a max()'s arguments are equal,
    both regimes hold, and the target must be fixed in each (unless the user chose one).
    Checked only when something of this kind can happen.

    Raises
    ------
    AmbiguousSolution
        Naming the first target left open.
    """
    steps = plan.steps
    # a block that found its equations flat at the solution kept one point of a family:
    # whether a target moves along it is decided here
    risky = (any(r.flat for r in records) or plan.placeholders or plan.regime
             or any(s.simultaneous or any(model.relations[r].has_regimes()
                                          for r in s.relations) for s in steps))
    if not risky:
        return
    relations = [r for s in steps for r in s.relations] + list(plan.checks)
    unknowns = set(plan.computed) | set(plan.placeholders)
    chosen = {}
    for record in records:
        if record.regimes:
            chosen.update(record.regimes)
            continue
        for r in record.relations:
            for label, _ in model.relations[r].regimes:
                if record.regime and label in record.regime.split(", "):
                    chosen[r] = label
    combos = [chosen]
    if regime is None:
        for name in dict.fromkeys(relations):
            if balanced(model.relations[name], values):
                combos = [{**c, name: label} for c in combos
                          for label, _ in model.relations[name].regimes]
    left_open = ()
    for combo in combos:
        left_open = open_at(model, relations, values, unknowns, plan.targets, combo)
        if left_open:
            break
    if not left_open:
        return
    regimes = sorted({r.regime for r in records if r.regime})
    where = f" in the {', '.join(regimes)} regime the numbers put it in" if regimes else ""
    name = left_open[0]
    raise AmbiguousSolution(name, [f"any value the relations allow{where}"],
                            "pin another quantity" + (" or choose another --regime"
                                                      if regimes else ""))
