"""Quantities that cancel: a plan run with them held at placeholder values.

The rank analysis finds quantities that cancel from the targets (any value gives the
same answer) and the plan holds them at placeholder values, a multiple of their
typical values. Two things can still go wrong at an arbitrary value, and each is
handled here rather than by asking the user for a quantity the answer does not need:

* a later step has no physical solution there: other common multiples are tried, and
  a finer scan when a complete search proved each coarse one infeasible;
* which max() regime holds turns on the placeholder: the targets are computed again
  at other values and must agree (else the answer is refused as ambiguous).

(A cross-check that fails only because a placeholder put a max() in the wrong regime is
settled regime by regime, in solvers.execution.solving.)
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from chalk.solvers.execution.execute import CompiledPlan, run_steps
from chalk.solvers.execution.paths import explore
from chalk.solvers.execution.steps import show
from chalk.solvers.tolerances import STEPS
from chalk.symbolic.errors import AmbiguousSolution, ChalkError, NoSolution, SearchFailed


def placeholder_values(compiled: CompiledPlan, factor: float = 1.0) -> dict[str, float]:
    """Base-unit values for the plan's placeholders: each quantity's typical value times
    ``factor``, kept inside its bounds. Any value gives the same answers."""
    out = {}
    for name in compiled.plan.placeholders:
        variable = compiled.model.variables[name]
        value = (variable.typical or 1.0) * factor
        if variable.lower is not None:
            value = max(value, variable.lower)
        if variable.upper is not None:
            value = min(value, variable.upper)
        out[name] = value * variable.to_base
    return out


def run(compiled: CompiledPlan, pins: Mapping[str, float], regime: str | None = None,
        choices: Mapping[int, int] | None = None):
    """Evaluate a compiled plan on pin values (base units).

    Quantities that cancel are held at placeholder values; if the steps have no
    physical solution at one placeholder value (a sum whose parts must fit inside a
    pinned total, say), other values are tried, since any feasible one gives the same
    answers. ``choices`` and what is returned (values, step records, check records) are
    as for :func:`chalk.solvers.execution.execute.run_steps`, run at the placeholder values kept.
    """
    choices = choices or {}
    if not compiled.plan.placeholders:
        return run_steps(compiled, pins, regime, choices)
    first = None
    factors = list(PLACEHOLDER_FACTORS)
    index = 0
    while index < len(factors):
        factor = factors[index]
        index += 1
        trial = dict(pins)
        trial.update(placeholder_values(compiled, factor))
        try:
            done = run_steps(compiled, trial, regime, choices)
        except AmbiguousSolution:
            # several solutions at one placeholder value: another value may leave only one
            # of them physical, which would then look unique (and may not be the one meant)
            raise
        except ChalkError as exc:
            first = first or exc
            if index == len(PLACEHOLDER_FACTORS) and _complete_miss(first):
                # none of the coarse values works, and each search was complete: the
                # feasible values may lie in a narrow window between them; scan for it
                factors += [f for f in _placeholder_scan() if f not in factors]
            continue
        _same_at_other_placeholders(compiled, pins, regime, done[0], factors[index:],
                                    choices)
        return done
    if isinstance(first, NoSolution) and not isinstance(first, SearchFailed):
        # "No solution" was found only at arbitrary values of quantities that cancel; that
        # proves nothing about the question itself.
        held = ", ".join(compiled.plan.placeholders)
        raise SearchFailed(first.name, f"{first.message.split(': ', 1)[-1]}, at every value "
                           f"tried for {held}, which cancel from the answer; pin one of them")
    raise first


PLACEHOLDER_FACTORS = STEPS.placeholder_factors  # multiples of typical tried in turn


def _placeholder_scan() -> list[float]:
    """Common multiples of the placeholders' typical values scanned when none of
    ``PLACEHOLDER_FACTORS`` gives a solution: evenly spaced in log, nearest 1 first."""
    low, high = STEPS.placeholder_scan_span
    grid = np.geomspace(low, high, STEPS.placeholder_scan_points)
    return sorted((float(f) for f in grid), key=lambda f: abs(np.log(f)))


def _complete_miss(exc: ChalkError) -> bool:
    """A failure that a complete search proved (no physical value), not a search that
    failed: cheap enough to try again at many placeholder values."""
    return isinstance(exc, NoSolution) and not isinstance(exc, SearchFailed)


def _same_at_other_placeholders(compiled: CompiledPlan, pins, regime, values,
                                factors, choices) -> None:
    """Check that the targets do not move with the placeholders.

    The rank analysis decides that a quantity cancels from a generic mixture of each
    max()'s regimes; when which regime holds depends on the placeholder itself, each
    regime may fix the target to a different value. The targets are therefore computed
    again at the next placeholder values that have a solution, and must agree.

    Raises
    ------
    AmbiguousSolution
        If they differ: the answer depends on the quantities held as placeholders.
    """
    targets = [t for t in compiled.plan.targets if t in values]
    for factor in factors:
        trial = dict(pins)
        trial.update(placeholder_values(compiled, factor))
        if choices:
            # one path through steps with several solutions: at another placeholder value
            # they may be listed in another order, so it must match one of that value's
            paths = explore(lambda c, trial=trial: run_steps(compiled, trial, regime, c)[0])
            others = [path.result for path in paths if path.error is None]
        else:
            try:
                others = [run_steps(compiled, trial, regime, choices)[0]]
            except ChalkError:
                continue
        if not others:
            continue
        moved = []
        for other in others:
            moved = [t for t in targets if abs(other[t] - values[t])
                     > STEPS.placeholder_rtol * max(abs(other[t]), abs(values[t]))]
            if not moved:
                break
        if moved:
            held = ", ".join(compiled.plan.placeholders)
            model = compiled.model
            options = [", ".join(f"{t} = {show(model, t, v[t])}" for t in moved)
                       for v in (values, others[0])]
            raise AmbiguousSolution(", ".join(moved), options,
                                    f"the value depends on {held}, which the pins leave "
                                    "free (which max() regime holds turns on them); pin "
                                    "one of them", solutions=(dict(values), dict(others[0])))
        return

