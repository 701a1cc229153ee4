"""Executing a plan: numbers in, numbers out, with a record of every step.

A plan is compiled once (closed forms found, expressions turned into fast
evaluators) and cached; running it again with new pin values only evaluates.
Each explicit step keeps the physical root (finite, positive, within the
quantity's bounds, in a regime whose inequalities hold) and says which one it
kept and why. Several survivors are never a silent guess: the step raises an
ambiguity with their count, and the caller (solvers.execution.checked) follows each one
through the rest of the plan by naming it in ``choices``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from chalk.solvers.analysis.conditioning import cannot_amplify, measured_inputs
from chalk.solvers.analysis.conditioning import check as conditioning_check
from chalk.solvers.execution import numeric
from chalk.solvers.execution.blocks import MULTI_START, run_block
from chalk.solvers.execution.rounding import refusal
from chalk.solvers.execution.steps import (
    GUARD_RTOL,
    CheckRecord,
    StepRecord,
    guards_hold,
    inputs_of,
    may_leave_open,
    physical,
    regime_for,
    regime_taken,
    show,
)
from chalk.solvers.execution.strategies import search_range
from chalk.solvers.execution.symbolic_solve import (
    DEFAULT_TIMEOUT,
    Candidate,
    branches,
    solve_relation,
)
from chalk.solvers.execution.tearing import tear
from chalk.solvers.planning.plan import Plan, Step, make_plan
from chalk.solvers.tolerances import STEPS
from chalk.symbolic.errors import AmbiguousSolution, NoSolution, RoundedUp, SearchFailed
from chalk.symbolic.evaluate import compile_expr
from chalk.symbolic.model import Model
from chalk.symbolic.printing.expressions import plain
from chalk.symbolic.printing.quantities import format_display, unit_display
from chalk.symbolic.relations import Relation


@dataclass
class _CompiledCandidate:
    candidate: Candidate
    value: object
    guards: list
    polish: bool = False  # polished on its relation's sides (:func:`polishes`)
    # conditioning.cannot_amplify: elasticities bounded by its exponents, nothing to check
    bounded: bool = False
    last_record: StepRecord | None = None  # of the last run that took it (_record)
    # the inputs its elasticity is measured against (:func:`measured_for`)
    measured: tuple = ()
    # scalar refusals already measured, by the values of the form's quantities
    # (solvers.bulk.vectorised.scalar_refused): a pure function of them
    verdicts: dict = field(default_factory=dict, repr=False, compare=False)


@dataclass
class CompiledStep:
    """One step of a compiled plan: its relations and what solving them needs
    (closed-form candidates, regime arguments), fixed once per plan."""

    step: Step
    kind: str  # "explicit", "numeric", "block"
    relations: tuple[Relation, ...]
    candidates: list = field(default_factory=list)
    regime_args: list = field(default_factory=list)
    regime_low_wins: bool = False  # the forward regime is a min(): the smallest argument wins
    regime_display: object = None  # how the note shows the arguments (their own unit)
    equation: tuple | None = None
    block_branches: list = field(default_factory=list)
    note: str = ""
    provisional: frozenset = frozenset()  # its quantities that depend on a placeholder
    # placeholders it reads that no earlier step has: free to move if it needs them to
    held: frozenset = frozenset()
    inputs: tuple = ()  # the other quantities of its relations (steps.inputs_of)
    conditioning_inputs: tuple = ()  # what its answer is measured against (below)
    # the one closed form an explicit step always takes, where nothing about it is
    # decided at run time (:func:`_direct`); None otherwise
    direct: _CompiledCandidate | None = None


@dataclass
class CompiledPlan:
    plan: Plan
    model: Model
    steps: list
    checks: list  # (Relation, lhs evaluator, rhs evaluator)
    constants: dict
    steps_may_open: bool = False  # steps.may_leave_open of its steps


def clear_caches() -> None:
    """Forget every compiled plan and closed form (for benchmarks of cold solves)."""
    from chalk.solvers.execution.symbolic_solve import clear_cache

    _compiled.cache_clear()
    clear_cache()


def compile_plan(model: Model, plan: Plan, timeout: float = DEFAULT_TIMEOUT) -> CompiledPlan:
    """Closed forms and evaluators for every step of ``plan`` (cached)."""
    return _compiled(model, plan.pinned, plan.targets, timeout, plan.regime)


@lru_cache(maxsize=256)
def _compiled(model: Model, pinned, targets, timeout, regime=()) -> CompiledPlan:
    plan = make_plan(model, pinned, targets, regime)
    constants = model.constant_values()
    steps = [_compile_step(model, step, constants, timeout) for step in plan.steps]
    used: set[str] = set()  # placeholders an earlier step has read
    for compiled in steps:
        compiled.provisional = frozenset(compiled.step.variables) & plan.provisional
        compiled.inputs = inputs_of(compiled.relations, compiled.step.variables, model)
        if compiled.kind == "explicit":
            compiled.conditioning_inputs = tuple(conditioning_inputs(model, compiled))
            for cc in compiled.candidates:
                if cc.candidate.expr is not None and not cc.bounded:
                    cc.measured = measured_for(model, compiled.relations[0],
                                               compiled.step.variables[0], cc.candidate.expr)
        compiled.direct = _direct(compiled)
        inputs = set(compiled.inputs)
        compiled.held = frozenset(inputs & set(plan.placeholders) - used)
        used |= inputs & set(plan.placeholders)
    checks = []
    for name in plan.checks:
        relation = model.relations[name]
        checks.append((relation, compile_expr(relation.lhs, constants),
                       compile_expr(relation.rhs, constants)))
    return CompiledPlan(plan, model, steps, checks, constants,
                        may_leave_open(model, plan.steps))


def _direct(cstep: CompiledStep) -> _CompiledCandidate | None:
    """The candidate of an explicit step with nothing to decide at run time: one closed
    form, no regime, guard, polish, conditioning check or regime note. Such a step is
    its value and the physical test (:func:`_run_explicit` with all of that skipped gives
    the same record); anything else takes the full path."""
    if cstep.kind != "explicit" or cstep.regime_args or len(cstep.candidates) != 1:
        return None
    cc = cstep.candidates[0]
    simple = (cc.candidate.expr is not None and not cc.candidate.regime and not cc.guards
              and not cc.polish and cc.bounded)
    return cc if simple else None


def _compile_step(model: Model, step: Step, constants, timeout) -> CompiledStep:
    relations = tuple(model.relations[r] for r in step.relations)
    if not step.simultaneous:
        relation, variable = relations[0], step.variables[0]
        solved = solve_relation(relation, variable, timeout)
        compiled = CompiledStep(step, "explicit", relations, note=solved.note)
        if solved.numeric:
            compiled.kind = "numeric"
            compiled.equation = (compile_expr(relation.lhs, constants),
                                 compile_expr(relation.rhs, constants))
        for candidate in solved.candidates:
            value = (compile_expr(candidate.expr, constants) if candidate.expr is not None
                     else tuple(compile_expr(side, constants) for side in candidate.free))
            compiled.candidates.append(_CompiledCandidate(
                candidate, value,
                [(compile_expr(a, constants), compile_expr(b, constants))
                 for a, b in candidate.guards],
                candidate.expr is not None and polishes(relation, variable, candidate.expr),
                candidate.expr is not None and cannot_amplify(candidate.expr)))
        if relation.regimes and not relation.inside_regime_node(variable):
            compiled.regime_args = [(label, compile_expr(expr, constants))
                                    for label, expr in relation.regimes]
            compiled.regime_low_wins = relation.is_min()
            compiled.regime_display = unit_display(
                model.base_unit_of(relation.regimes[0][1]))
        return compiled
    # A simultaneous block: one smooth system per combination of regimes. A whole count
    # solved together with what it rounds would let the search stop anywhere in a step.
    rounded = sorted(v for r in relations for v in step.variables if r.rounds(v))
    if rounded:
        raise RoundedUp(rounded[0], f"it is solved together with the whole count it rounds "
                        f"to, which any value of a range gives; pin {rounded[0]} itself")
    unknown_symbols = {s for r in relations for s in r.symbols if s.name in step.variables}
    per_relation = [branches(r, unknown_symbols) for r in relations]
    compiled = CompiledStep(step, "block", relations)
    zero_ok = frozenset(v for v in step.variables if model.variables[v].allow_zero)
    for combo in itertools.product(*per_relation):
        compiled.block_branches.append(tear(relations, step.variables, list(combo), constants,
                                            timeout, zero_ok))
    return compiled


def run_steps(compiled: CompiledPlan, pins: Mapping[str, float], regime: str | None = None,
              choices: Mapping[int, int] | None = None):
    """Evaluate every step of a compiled plan once, at ``pins`` (base units, with any
    placeholders among them), and its cross-checks.

    A step with several discrete solutions raises :class:`AmbiguousSolution` with its
    index and their count, unless ``choices`` (step index to solution index, in the order
    the step lists them) says which to follow. Quantities that cancel are given values
    by :func:`chalk.solvers.execution.placeholders.run`.

    Returns
    -------
    values : dict of name to float
        Pins, placeholders and every computed quantity.
    records : list of StepRecord
    checks : list of CheckRecord
    """
    choices = choices or {}
    model = compiled.model
    env: dict[str, float] = dict(compiled.constants)
    env.update(pins)
    records = []
    # Closed forms are evaluated where they may overflow or divide by zero; the value is
    # then judged (not physical), so numpy's warnings would say nothing. One context for
    # the whole run: entering one costs more than most steps.
    with np.errstate(all="ignore"):
        for index, cstep in enumerate(compiled.steps):
            pick = choices.get(index)
            try:
                if cstep.kind == "block":
                    records.append(run_block(model, cstep, env, regime, pick))
                elif cstep.kind == "numeric":
                    records.append(run_numeric(model, cstep, env, pick))
                elif cstep.direct is not None and pick is None:
                    records.append(_run_direct(model, cstep, env, regime))
                else:
                    records.append(_run_explicit(model, cstep, env, regime, pick))
            except AmbiguousSolution as exc:
                if exc.count and exc.step is None:
                    exc.step = index
                raise
            except NoSolution as exc:
                unproven = _searched_upstream(model, cstep, records)
                if unproven is not None and not isinstance(exc, SearchFailed):
                    exc.after_search = unproven.variables
                raise
        checks = []
        for relation, lhs, rhs in compiled.checks:
            left, right = float(lhs(env)), float(rhs(env))
            scale = max(abs(left), abs(right))
            difference = 0.0 if scale == 0 else abs(left - right) / scale
            checks.append(CheckRecord(relation.name, left, right, difference))
    values = {k: v for k, v in env.items() if k in model.variables}
    return values, records, checks


def _searched_upstream(model: Model, cstep: CompiledStep, records) -> StepRecord | None:
    """The nearest earlier step feeding ``cstep`` (directly or through other steps) whose
    solution a search did not prove unique; ``None`` if every one was."""
    made_by = {v: record for record in records for v in record.variables}
    frontier = list(inputs_of(cstep.relations, cstep.step.variables, model))
    seen: set[str] = set()
    while frontier:
        name = frontier.pop(0)
        if name in seen or name not in made_by:
            continue
        seen.add(name)
        record = made_by[name]
        if record.method == MULTI_START:
            return record
        frontier.extend(record.inputs)
    return None


def _run_direct(model: Model, cstep: CompiledStep, env, regime) -> StepRecord:
    """An explicit step with nothing to decide (:func:`_direct`): its value where it is
    physical; where not, the full path says why."""
    name, cc = cstep.step.variables[0], cstep.direct
    value = cc.value(env)
    if isinstance(value, complex) or not physical(model, name, value,
                                                  name in cstep.provisional):
        return _run_explicit(model, cstep, env, regime)
    value = float(value)
    env[name] = value
    return _record(cstep, cc, None, cstep.note)


def _run_explicit(model: Model, cstep: CompiledStep, env, regime, pick=None) -> StepRecord:
    relation = cstep.relations[0]
    name = cstep.step.variables[0]
    survivors = []
    rejected = []
    unbounded = []
    overflowed = False
    wanted = regime_for(regime, relation.name)
    for cc in cstep.candidates:
        if wanted and cc.candidate.regime and cc.candidate.regime != wanted:
            rejected.append(f"{cc.candidate.regime} branch set aside (--regime {wanted})")
            continue
        if cc.candidate.expr is None:
            left, right = (float(side(env)) for side in cc.value)
            if abs(numeric.relative_residual(left, right)) < GUARD_RTOL:
                unbounded.append(cc.candidate)
            continue
        value = cc.value(env)  # (run_steps silences numpy's floating-point warnings)
        if isinstance(value, complex) or not physical(model, name, value,
                                                      name in cstep.provisional):
            if not np.isfinite(value):
                overflowed = True
            real = not isinstance(value, complex) and np.isfinite(value)
            shown = show(model, name, float(value)) if real else f"{value!s:.10}"
            rejected.append(f"{plain(cc.candidate.expr)} gives {shown} (not physical: "
                            f"{name} must be {model.variables[name].requirement()})")
            continue
        value = float(value)
        if cc.polish:  # sums can cancel in floating point
            lhs, rhs = _sides(model, cstep)
            value = numeric.polish_root(lhs, rhs, env, name, value)
        if cc.guards and not guards_hold(cc.guards, {**env, name: value}):
            rejected.append(f"{cc.candidate.regime or 'branch'} gives {show(model, name, value)} "
                            "but its inequalities fail")
            continue
        survivors.append((value, cc))
    survivors = _dedupe(survivors)
    conditioning = ""
    # A product of powers has bounded elasticities (its exponents), and so do sums and
    # extremes of them; only forms with differences or transcendental functions can
    # amplify rounding.
    if len(survivors) == 1 and not unbounded and not survivors[0][1].bounded:
        value, chosen = survivors[0]
        conditioning = conditioning_check(name, relation.name, chosen.value, env,
                                          chosen.measured, value)
    if unbounded:
        options = [f"{cc.candidate.regime or 'a branch'}: {show(model, name, v)}"
                   for v, cc in survivors]
        options += [f"{c.regime or 'a branch'}: any value its inequalities allow"
                    for c in unbounded]
        labels = [cc.candidate.regime for _, cc in survivors] + [c.regime for c in unbounded]
        hint = ("choose one with --regime " + " or --regime ".join(labels)
                if all(labels) else "pin another quantity")
        if len(options) > 1 or not survivors:
            raise AmbiguousSolution(name, options, hint)
    if not survivors and overflowed and not relation.has_regimes():
        # The closed form is exact but overflows in floating point: search instead.
        _sides(model, cstep)
        record = run_numeric(model, cstep, env)
        return StepRecord(record.relations, record.variables, None, record.method,
                          record.inputs, None,
                          "the closed form overflows in floating point; " + record.note)
    if not survivors:
        why = "; ".join(rejected) or "no closed form applies"
        raise NoSolution(name, f"relation {relation.name}: {why}")
    # printed only when there is a choice: printing an expression costs more than the step
    options = ([f"{cc.candidate.regime or plain(cc.candidate.expr)}: {show(model, name, v)}"
                for v, cc in survivors] if len(survivors) > 1 else [])
    if len(survivors) > 1 and pick is None:
        labels = [cc.candidate.regime for _, cc in survivors]
        hint = ("choose one with --regime " + " or --regime ".join(labels)) if all(labels) \
            else "pin another quantity to tell them apart"
        raise AmbiguousSolution(name, options, hint, count=len(survivors))
    if pick is not None and pick >= len(survivors):
        raise NoSolution(name, f"relation {relation.name}: the path followed needs root "
                         f"{pick + 1}, and {len(survivors)} are physical here")
    value, chosen = survivors[pick or 0]
    candidate = chosen.candidate
    env[name] = value
    note_parts = [cstep.note] if cstep.note else []
    if len(survivors) > 1:
        note_parts.append(_followed(options, pick))
    if conditioning:
        note_parts.append(conditioning)
    if rejected:
        note_parts.append("kept the physical root; set aside: " + "; ".join(rejected))
    active = candidate.regime
    if cstep.regime_args:
        args = [(label, float(fn(env))) for label, fn in cstep.regime_args]
        active, said = regime_taken(args, cstep.regime_low_wins,
                                    lambda v: format_display(v, cstep.regime_display))
        note_parts.append(said)
        if wanted and wanted != active and wanted in {label for label, _ in args}:
            note_parts.append(f"the numbers put this step {active}, not {wanted}")
    elif candidate.regime:
        note_parts.append(f"{candidate.regime} regime: its inequalities hold")
    return _record(cstep, chosen, active, "; ".join(note_parts))


def _record(cstep: CompiledStep, chosen: _CompiledCandidate, active: str | None,
            note: str) -> StepRecord:
    """The record of an explicit step solved by ``chosen``'s closed form. Records are
    frozen, so the last one made with it is handed out again where the regime and note
    are the same (they are, unless the note shows values): making one costs more than
    the step's arithmetic."""
    record = chosen.last_record
    if record is None or record.regime != active or record.note != note:
        candidate = chosen.candidate
        record = chosen.last_record = StepRecord(
            (cstep.relations[0].name,), cstep.step.variables, candidate.expr,
            candidate.method, cstep.inputs, active, note)
    return record


def _sides(model: Model, cstep: CompiledStep) -> tuple:
    """The step's relation as two compiled sides, compiled once when first needed."""
    if cstep.equation is None:
        relation = cstep.relations[0]
        constants = model.constant_values()
        cstep.equation = (compile_expr(relation.lhs, constants),
                          compile_expr(relation.rhs, constants))
    return cstep.equation


def conditioning_inputs(model: Model, cstep: CompiledStep) -> list[str]:
    """The quantities an explicit step's answer is measured against for conditioning
    (solvers.analysis.conditioning): every other quantity of its relation but those it
    rounds to a whole count (exact: its jump at a whole input is the rounding the
    relation states, not digits lost)."""
    return relation_inputs(model, cstep.relations[0], cstep.step.variables[0])


def relation_inputs(model: Model, relation: Relation, name: str) -> list[str]:
    """The quantities the conditioning of ``relation`` solved for ``name`` may be measured
    against (:func:`conditioning_inputs`, for one relation and its unknown; of these, a
    closed form measures those :func:`~chalk.solvers.analysis.conditioning.measured_inputs`
    keeps)."""
    return [v for v in model.variables_in(relation.name)
            if v != name and not relation.rounds(v)]


def monomial(expr) -> bool:
    """A product of symbols to numeric powers (elasticities bounded by the exponents)."""
    factors = expr.args if expr.is_Mul else (expr,)
    for factor in factors:
        base = factor.base if factor.is_Pow and factor.exp.is_Number else factor
        if not (base.is_Symbol or base.is_Number):
            return False
    return True


def polishes(relation: Relation, name: str, expr) -> bool:
    """Whether the closed form ``expr`` of ``name`` on ``relation`` is polished on the
    relation's two sides (:func:`numeric.polish_root`) after it is evaluated: unless it is
    a product of powers (nothing cancels) or the relation's own side (:func:`_as_written`).
    The CLI cache replays a stored step by the same rule."""
    return not (monomial(expr) or _as_written(relation, name, expr))


def measured_for(model: Model, relation: Relation, name: str, expr) -> tuple[str, ...]:
    """The inputs the conditioning of the closed form ``expr`` of ``name`` on ``relation``
    is measured against: of :func:`relation_inputs`, those
    :func:`~chalk.solvers.analysis.conditioning.measured_inputs` keeps."""
    return measured_inputs(expr, relation_inputs(model, relation, name))


def _as_written(relation: Relation, name: str, expr) -> bool:
    """Whether ``relation`` reads ``name = expr`` (either way round): the closed form is
    then the relation's own side, evaluated by the same arithmetic, so the relation holds
    at its value to the last bit and :func:`numeric.polish_root` would return it as is."""
    if expr is None:
        return False
    return ((relation.lhs.is_Symbol and relation.lhs.name == name and relation.rhs == expr)
            or (relation.rhs.is_Symbol and relation.rhs.name == name and relation.lhs == expr))


def _dedupe(survivors):
    if len(survivors) < 2:
        return survivors
    out = []
    for value, candidate in survivors:
        if not any(abs(value - v) <= STEPS.distinct_rtol * max(abs(value), abs(v))
                   for v, _ in out):
            out.append((value, candidate))
    return out


def _followed(options, pick: int) -> str:
    """The derivation's note for a step solved on one of several solutions."""
    others = "; ".join(o for i, o in enumerate(options) if i != pick)
    return f"one of {len(options)} physical solutions, {options[pick]} (also: {others})"


def run_numeric(model: Model, cstep: CompiledStep, env, pick=None) -> StepRecord:
    """Solve a one-relation step with no closed form by a root scan over the plausible
    range of its unknown; ``env`` holds the values known so far (base units)."""
    relation = cstep.relations[0]
    name = cstep.step.variables[0]
    if relation.rounds(name):
        raise refusal(model, relation, name, env)
    low, high = search_range(model.variables[name])
    roots = [r for r in numeric.roots_1d(cstep.equation, name, env, low, high)
             if physical(model, name, r, name in cstep.provisional)]
    if not roots:
        raise NoSolution(name, f"relation {relation.name} has no positive root in the "
                         f"plausible range of {name} ({show(model, name, low)} to "
                         f"{show(model, name, high)})")
    options = [show(model, name, r) for r in roots]
    if pick is not None and pick >= len(roots):
        raise NoSolution(name, f"relation {relation.name}: the path followed needs root "
                         f"{pick + 1}, and {len(roots)} are physical here")
    if len(roots) > 1 and pick is None:
        raise AmbiguousSolution(name, options, "pin another quantity to tell them apart",
                                count=len(roots))
    env[name] = roots[pick or 0]
    note = (cstep.note + "; " if cstep.note else "") + (
        "solved numerically (every sign change over its plausible range bracketed, brentq)")
    if len(roots) > 1:
        note += "; " + _followed(options, pick)
    return StepRecord((relation.name,), (name,), None, "numeric (brentq)",
                      inputs_of(cstep.relations, (name,), model), None, note)
