"""Solving a plan: one run with its checks, and regime by regime when that cannot settle it.

:func:`compute` runs a determined plan from pins with :func:`solvers.execution.checked.run_checked`
(every surplus pin checked, every solution of a step with several followed, each target
checked where the solution actually is). When that ends in a search that failed, a
cross-check a placeholder's regime made fail, or a regime left open, it solves again one
combination of max() regimes at a time and keeps the one whose inequalities hold.
Nothing here knows what the quantities mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from chalk.solvers.execution.blocks import MULTI_START
from chalk.solvers.execution.checked import Computed, regimes_hold, run_checked
from chalk.solvers.execution.symbolic_solve import DEFAULT_TIMEOUT
from chalk.solvers.pinning.pinned import Pin
from chalk.solvers.planning.plan import (
    Plan,
    determined_in_every_regime,
    make_plan,
    regime_mapping,
    regime_plans,
)
from chalk.solvers.records.flags import flags
from chalk.solvers.tolerances import PINS, STEPS
from chalk.symbolic.errors import (
    AmbiguousSolution,
    ChalkError,
    InconsistentPins,
    SearchFailed,
)
from chalk.symbolic.model import Model
from chalk.symbolic.printing.quantities import format_quantity


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
    notes: tuple[dict, ...] = ()
    try:
        done = run_checked(model, plan, base, pins, regime, rtol, timeout)
    except (SearchFailed, InconsistentPins, AmbiguousSolution) as exc:
        if not _regimes_may_settle(model, plan, exc):
            raise
        done = solve_by_regimes(model, plan, base, pins, regime, rtol, timeout, exc)
        notes = done.notes[:1]  # the regimes that hold (solve_by_regimes)
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
                notes = ({**found.notes[0], "whole_block": True},)
    notes += tuple({"how": "multi_start", "step": i, "variables": tuple(r.variables)}
                   for i, r in enumerate(done.records, 1) if r.method == MULTI_START)
    plan = done.plan
    found = flags(model, done.values, lambda n: n not in plan.placeholders
                  and n not in plan.provisional)
    return replace(done, notes=notes, flags=found)


def _regimes_may_settle(model: Model, plan: Plan, exc: ChalkError) -> bool:
    """Whether solving one max() regime at a time may settle what the plan, with each
    max() a mixture of its regimes, could not.

    - A search that failed proves nothing (an ambiguity found, by contrast, is
      information).
    - A cross-check that fails in a plan holding placeholders, with a max() among its
      relations: a placeholder value can put the max() in the regime in which the check
      fails though the pins agree; in the regime the numbers are in, the check may fix
      that quantity instead.
    - A regime left open (a max() whose losing argument may take any value, or a target
      that turns on which regime holds), when every regime fixes the targets: the other
      relations may rule all but one regime out. If a regime leaves a target free, it
      may hold, and the question stays open.
    """
    if isinstance(exc, SearchFailed):
        return True
    if isinstance(exc, InconsistentPins):
        return bool(plan.placeholders) and any(model.relations[r].has_regimes()
                                               for r in plan.relations)
    return not (exc.solutions or exc.count) and determined_in_every_regime(
        model, plan.pinned, plan.targets)


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
                             notes=({"how": "regimes", "regimes": ", ".join(used)
                                     or ", ".join(candidate.regime), "whole_block": False},)))
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
                   f" ({e.notes[0]['regimes']})" for e in distinct]
        raise AmbiguousSolution(name, options, "pin another quantity or choose a --regime",
                                solutions=tuple(dict(e.values) for e in distinct))
    return distinct[0]
