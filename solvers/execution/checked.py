"""Running a plan and holding it to account: every path, every check.

:func:`run_checked` runs a compiled plan from pins. It checks every surplus pin against
the relation that links it (allowing for steps that amplify a pin's error), refuses a
target the pins do not fix where the solution actually is, and follows each solution of
a step that has several through the rest of the plan, keeping those every later step
and check allows. Nothing here knows what the quantities mean.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from chalk.solvers.analysis.at_solution import open_at
from chalk.solvers.execution.conflicts import inconsistency, show_value
from chalk.solvers.execution.execute import CompiledPlan, compile_plan
from chalk.solvers.execution.paths import explore
from chalk.solvers.execution.placeholders import run
from chalk.solvers.execution.steps import CheckRecord, StepRecord, inputs_of, may_leave_open
from chalk.solvers.pinning.pinned import Pin
from chalk.solvers.planning.plan import Plan
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
    notes : tuple of dict
        How the solve went where that matters to the answer (regime by regime, a
        multi-start search that cannot prove the answer unique): the data of
        ``settled`` notes (:mod:`chalk.solvers.records.notes`).
    flags : tuple of str
        Determined values past a bound the model declares (:mod:`chalk.solvers.records.flags`).
    """

    plan: Plan
    compiled: CompiledPlan
    values: dict[str, float]
    records: tuple[StepRecord, ...]
    checks: tuple[CheckRecord, ...]
    notes: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()


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
        why = tuple(f"with {exc.options[c[step]] if c[step] < len(exc.options) else 'another'}"
                    f", {err.message}" for c, err in failures if step in c)
        notes.append({"how": "forks", "step": step + 1, "name": exc.name, "count": exc.count,
                      "same": len(survivors) > 1, "set_aside": why})
    return replace(kept, notes=tuple(notes))


def _run_once(model, plan, compiled, base, pins, regime, rtol, choices) -> Computed:
    values, records, checks = run(compiled, base, regime, choices)
    for i, check in enumerate(checks):
        if not check.ok(rtol):
            check = checks[i] = replace(check, gain=check_gain(compiled, base, regime, i,
                                                                check, choices))
        if not check.ok(rtol):
            raise inconsistency(model, check, pins, plan, base,
                                lambda values, i=i: _check_at(compiled, values, regime, i,
                                                              choices))
    check_fixed_at_solution(model, plan, values, records, regime,
                            compiled.steps_may_open)
    return Computed(plan, compiled, values, tuple(records), tuple(checks))


def _check_at(compiled: CompiledPlan, values: Mapping[str, float], regime, index: int,
              choices: Mapping[int, int]) -> CheckRecord | None:
    """The ``index``-th cross-check at other pin values; None where the plan has no
    physical solution there."""
    try:
        _, _, checks = run(compiled, values, regime, choices)
    except ChalkError:
        return None
    return checks[index]


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
    feeding = _feeding(compiled, index)
    for name, value in base.items():
        if not isinstance(value, float) or value <= 0:
            continue
        if feeding is not None and name not in feeding:
            continue  # the check reads nothing this pin moves: its difference stays put
        moved = dict(base)
        moved[name] = value * math.exp(step)
        try:
            _, _, trial = run(compiled, moved, regime, choices)
        except ChalkError:
            continue
        gain = max(gain, abs(trial[index].signed - start) / step)
    return gain


def _feeding(compiled: CompiledPlan, index: int) -> set[str] | None:
    """The quantities the ``index``-th cross-check of ``compiled`` reads, directly or
    through the steps that compute them; ``None`` when that cannot be told from the steps
    (placeholders: which value is kept depends on every step succeeding).

    Each step reads only the quantities of its own relations, so moving a pin outside this
    set leaves the check's difference exactly as it was (or fails another step): it cannot
    change the gain, and :func:`check_gain` need not run the plan for it.
    """
    if compiled.plan.placeholders:
        return None
    model = compiled.model
    wanted = set(model.variables_in(compiled.checks[index][0].name))
    for cstep in reversed(compiled.steps):  # a step's inputs come from the steps before it
        if wanted.intersection(cstep.step.variables):
            wanted.update(inputs_of(cstep.relations, cstep.step.variables, model))
    return wanted


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
                            regime=None, steps_may_open: bool | None = None) -> None:
    """Refuse a target the pins do not fix where the solution actually is.

    The plan decides with generic rows (a max() as a mixture of its regimes, sums at a
    reference point); in the regime the numbers land in, or with placeholders held,
    a target may still be free. At a balance point, where a max()'s arguments are equal,
    both regimes hold, and the target must be fixed in each (unless the user chose one).
    Checked only when something of this kind can happen. ``steps_may_open`` is
    :func:`~chalk.solvers.execution.steps.may_leave_open` of the plan's steps, when the
    caller has it (a compiled plan keeps it).

    Raises
    ------
    AmbiguousSolution
        Naming the first target left open.
    """
    steps = plan.steps
    if steps_may_open is None:
        steps_may_open = may_leave_open(model, steps)
    # a block that found its equations flat at the solution kept one point of a family:
    # whether a target moves along it is decided here
    if not (steps_may_open or any(r.flat for r in records) or plan.placeholders
            or plan.regime):
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
