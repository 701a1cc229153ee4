"""Executing a plan: numbers in, numbers out, with a record of every step.

A plan is compiled once (closed forms found, expressions turned into fast
evaluators) and cached; running it again with new pin values only evaluates.
Each explicit step keeps the physical root (finite, positive, within the
quantity's bounds, in a regime whose inequalities hold) and says which one it
kept and why; several survivors are an error, never a silent guess.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import sympy

from solvers import numeric
from solvers.conditioning import check as conditioning_check
from solvers.plan import Plan, Step, make_plan
from solvers.symbolic_solve import DEFAULT_TIMEOUT, Candidate, branches, solve_relation
from solvers.tearing import degenerate_directions, tear
from symbolic.errors import AmbiguousSolution, DegenerateError, NoSolution, SearchFailed
from symbolic.evaluate import compile_expr
from symbolic.model import Model
from symbolic.printing import plain
from symbolic.relations import Relation
from symbolic.units import format_quantity, format_seconds

GUARD_RTOL = 1e-9
MULTI_START = "numeric block (multi-start)"  # a block whose answer is not proven unique


@dataclass
class _CompiledCandidate:
    candidate: Candidate
    value: object
    guards: list


@dataclass
class _CompiledStep:
    step: Step
    kind: str  # "explicit", "numeric", "block"
    relations: tuple[Relation, ...]
    candidates: list = field(default_factory=list)
    regime_args: list = field(default_factory=list)
    regime_low_wins: bool = False  # the forward regime is a min(): the smallest argument wins
    equation: tuple | None = None
    block_branches: list = field(default_factory=list)
    note: str = ""


@dataclass(frozen=True)
class StepRecord:
    """One line of a derivation: what was solved, how, and from what."""

    relations: tuple[str, ...]
    variables: tuple[str, ...]
    expression: sympy.Expr | None
    method: str
    inputs: tuple[str, ...]
    regime: str | None = None
    note: str = ""


@dataclass(frozen=True)
class CheckRecord:
    """A surplus relation evaluated on known values: a cross-check."""

    relation: str
    lhs: float
    rhs: float
    difference: float  # relative

    def ok(self, rtol: float) -> bool:
        return self.difference <= rtol


@dataclass
class CompiledPlan:
    plan: Plan
    model: Model
    steps: list
    checks: list  # (Relation, lhs evaluator, rhs evaluator)
    constants: dict


def compile_plan(model: Model, plan: Plan, timeout: float = DEFAULT_TIMEOUT) -> CompiledPlan:
    """Closed forms and evaluators for every step of ``plan`` (cached)."""
    return _compiled(model, plan.pinned, plan.targets, timeout)


@lru_cache(maxsize=256)
def _compiled(model: Model, pinned, targets, timeout) -> CompiledPlan:
    plan = make_plan(model, pinned, targets)
    constants = model.constant_values()
    steps = [_compile_step(model, step, constants, timeout) for step in plan.steps]
    checks = []
    for name in plan.checks:
        relation = model.relations[name]
        checks.append((relation, compile_expr(relation.lhs, constants),
                       compile_expr(relation.rhs, constants)))
    return CompiledPlan(plan, model, steps, checks, constants)


def _compile_step(model: Model, step: Step, constants, timeout) -> _CompiledStep:
    relations = tuple(model.relations[r] for r in step.relations)
    if not step.simultaneous:
        relation, variable = relations[0], step.variables[0]
        solved = solve_relation(relation, variable, timeout)
        compiled = _CompiledStep(step, "explicit", relations, note=solved.note)
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
                 for a, b in candidate.guards]))
        symbol = next(s for s in relation.symbols if s.name == variable)
        if relation.regimes and not any(
            symbol in node.free_symbols
            for node in relation.lhs.atoms(sympy.Max, sympy.Min) | relation.rhs.atoms(
                sympy.Max, sympy.Min)
        ):
            compiled.regime_args = [(label, compile_expr(expr, constants))
                                    for label, expr in relation.regimes]
            compiled.regime_low_wins = _regime_node_is_min(relation)
        return compiled
    # A simultaneous block: one smooth system per combination of regimes.
    unknown_symbols = {s for r in relations for s in r.symbols if s.name in step.variables}
    per_relation = [branches(r, unknown_symbols) for r in relations]
    compiled = _CompiledStep(step, "block", relations)
    for combo in itertools.product(*per_relation):
        compiled.block_branches.append(tear(relations, step.variables, list(combo), constants,
                                            timeout))
    return compiled


def run(compiled: CompiledPlan, pins: Mapping[str, float], regime: str | None = None):
    """Evaluate a compiled plan on pin values (base units).

    Returns
    -------
    values : dict of name to float
        Pins and every computed quantity.
    records : list of StepRecord
    checks : list of CheckRecord
    """
    model = compiled.model
    env: dict[str, float] = dict(compiled.constants)
    env.update(pins)
    records = []
    for cstep in compiled.steps:
        if cstep.kind == "block":
            records.append(_run_block(model, cstep, env, regime))
        elif cstep.kind == "numeric":
            records.append(_run_numeric(model, cstep, env))
        else:
            records.append(_run_explicit(model, cstep, env, regime))
    checks = []
    for relation, lhs, rhs in compiled.checks:
        with np.errstate(all="ignore"):
            left, right = float(lhs(env)), float(rhs(env))
        scale = max(abs(left), abs(right))
        difference = 0.0 if scale == 0 else abs(left - right) / scale
        checks.append(CheckRecord(relation.name, left, right, difference))
    values = {k: v for k, v in env.items() if k in model.variables}
    return values, records, checks


def _inputs(relations, solved, model) -> tuple[str, ...]:
    names = set()
    for r in relations:
        names |= model.variables_in(r.name)
    return tuple(sorted(names - set(solved)))


def _physical(model: Model, name: str, value) -> bool:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return False
    return math.isfinite(value) and model.variables[name].admits(value)


def _flat_with_physical_members(model: Model, branch, env, scope, names, guesses
                                ) -> list[str]:
    """The flat quantities of a non-physical block solution whose family of solutions
    also holds physical ones; empty otherwise.

    Multi-start on a block the pins fix only up to a combination can wander along the
    flat direction to a non-physical end (1e59 FLOP/token, say). Saying "no physical
    solution" there would be false: the flat tears are put back at their typical values,
    the others re-solved, and a physical solution found that way shows the family.
    """
    flat = degenerate_directions(branch, env, scope, names)
    held = {t: guesses[t] for t in branch.tears if t in flat}
    if not held:
        return []
    free = [t for t in branch.tears if t not in held]
    if free:
        trials = numeric.solve_tears(
            lambda values: branch.residual(env, {**held, **values}), free, guesses)
    else:
        trials = [{}] if all(abs(r) < 1e-10 for r in branch.residual(env, held)) else []
    for values in trials:
        member = branch.complete(env, {**held, **values})
        if all(_physical(model, n, member[n]) for n in names) and _guards_hold(
                branch.guards, member):
            return flat
    return []


def _guards_hold(guards, env) -> bool:
    for a, b in guards:
        left, right = float(a(env)), float(b(env))
        if left < right - GUARD_RTOL * max(abs(left), abs(right)):
            return False
    return True


def _show(model: Model, name: str, value: float) -> str:
    v = model.variables[name]
    return format_quantity(value / v.to_base, v.pint_unit)


def _run_explicit(model: Model, cstep: _CompiledStep, env, regime) -> StepRecord:
    relation = cstep.relations[0]
    name = cstep.step.variables[0]
    survivors = []
    rejected = []
    unbounded = []
    overflowed = False
    for cc in cstep.candidates:
        if regime and cc.candidate.regime and cc.candidate.regime != regime:
            rejected.append(f"{cc.candidate.regime} branch set aside (--regime {regime})")
            continue
        if cc.candidate.expr is None:
            left, right = (float(side(env)) for side in cc.value)
            if abs(numeric.relative_residual(left, right)) < GUARD_RTOL:
                unbounded.append(cc.candidate)
            continue
        with np.errstate(all="ignore"):
            value = cc.value(env)
        if isinstance(value, complex) or not _physical(model, name, value):
            if not np.isfinite(value):
                overflowed = True
            real = not isinstance(value, complex) and np.isfinite(value)
            shown = _show(model, name, float(value)) if real else f"{value!s:.10}"
            rejected.append(f"{plain(cc.candidate.expr)} gives {shown} (not physical)")
            continue
        value = float(value)
        trial = dict(env)
        trial[name] = value
        if not _guards_hold(cc.guards, trial):
            rejected.append(f"{cc.candidate.regime or 'branch'} gives {_show(model, name, value)} "
                            "but its inequalities fail")
            continue
        survivors.append((value, cc.candidate))
    survivors = _dedupe(survivors)
    conditioning = ""
    # A product of powers has bounded elasticities (its exponents); only forms with sums
    # or transcendental functions can amplify rounding.
    if len(survivors) == 1 and not unbounded and not _monomial(survivors[0][1].expr):
        chosen = next(cc for cc in cstep.candidates if cc.candidate is survivors[0][1])
        inputs = [v for v in model.variables_in(relation.name) if v != name]
        conditioning = conditioning_check(name, relation.name, chosen.value, env, inputs,
                                          survivors[0][0])
    if unbounded:
        options = [f"{c.regime or 'a branch'}: {_show(model, name, v)}" for v, c in survivors]
        options += [f"{c.regime or 'a branch'}: any value its inequalities allow"
                    for c in unbounded]
        labels = [c.regime for _, c in survivors] + [c.regime for c in unbounded]
        hint = ("choose one with --regime " + " or --regime ".join(labels)
                if all(labels) else "pin another quantity")
        if len(options) > 1 or not survivors:
            raise AmbiguousSolution(name, options, hint)
    if not survivors and overflowed and not relation.has_regimes():
        # The closed form is exact but overflows in floating point: search instead.
        if cstep.equation is None:
            constants = model.constant_values()
            cstep.equation = (compile_expr(relation.lhs, constants),
                              compile_expr(relation.rhs, constants))
        record = _run_numeric(model, cstep, env)
        return StepRecord(record.relations, record.variables, None, record.method,
                          record.inputs, None,
                          "the closed form overflows in floating point; " + record.note)
    if not survivors:
        why = "; ".join(rejected) or "no closed form applies"
        raise NoSolution(name, f"relation {relation.name}: {why}")
    if len(survivors) > 1:
        options = [f"{c.regime or plain(c.expr)}: {_show(model, name, v)}" for v, c in survivors]
        hint = ("choose one with --regime " + " or --regime ".join(
            c.regime for _, c in survivors)) if all(c.regime for _, c in survivors) \
            else "pin another quantity to tell them apart"
        raise AmbiguousSolution(name, options, hint)
    value, candidate = survivors[0]
    env[name] = value
    note_parts = [cstep.note] if cstep.note else []
    if conditioning:
        note_parts.append(conditioning)
    if rejected:
        note_parts.append("kept the physical root; set aside: " + "; ".join(rejected))
    active = candidate.regime
    if cstep.regime_args:
        args = [(label, float(fn(env))) for label, fn in cstep.regime_args]
        pick = min if cstep.regime_low_wins else max
        active, _ = pick(args, key=lambda item: item[1])
        others = ", ".join(f"{label.split('-')[0]} {format_seconds(v)}" for label, v in args)
        note_parts.append(f"{active} ({others})")
        if regime and regime != active and regime in {label for label, _ in args}:
            note_parts.append(f"the numbers put this step {active}, not {regime}")
    elif candidate.regime:
        note_parts.append(f"{candidate.regime} regime: its inequalities hold")
    return StepRecord((relation.name,), (name,), candidate.expr, candidate.method,
                      _inputs(cstep.relations, (name,), model), active, "; ".join(note_parts))


def _monomial(expr) -> bool:
    """A product of symbols to numeric powers (elasticities bounded by the exponents)."""
    factors = expr.args if expr.is_Mul else (expr,)
    for factor in factors:
        base = factor.base if factor.is_Pow and factor.exp.is_Number else factor
        if not (base.is_Symbol or base.is_Number):
            return False
    return True


def _regime_node_is_min(relation) -> bool:
    """Whether the max/min whose arguments name the regimes is a min."""
    first = relation.regimes[0][1]
    nodes = relation.lhs.atoms(sympy.Max, sympy.Min) | relation.rhs.atoms(sympy.Max, sympy.Min)
    return any(isinstance(n, sympy.Min) and first in n.args for n in nodes)


def _dedupe(survivors):
    out = []
    for value, candidate in survivors:
        if not any(abs(value - v) <= 1e-9 * max(abs(value), abs(v)) for v, _ in out):
            out.append((value, candidate))
    return out


def _run_numeric(model: Model, cstep: _CompiledStep, env) -> StepRecord:
    relation = cstep.relations[0]
    name = cstep.step.variables[0]
    roots = [r for r in numeric.roots_1d(cstep.equation, name, env) if _physical(model, name, r)]
    if not roots:
        raise NoSolution(name, f"relation {relation.name} has no positive root")
    if len(roots) > 1:
        raise AmbiguousSolution(name, [_show(model, name, r) for r in roots],
                                "pin another quantity to tell them apart")
    env[name] = roots[0]
    note = (cstep.note + "; " if cstep.note else "") + "solved numerically (bracketing + brentq)"
    return StepRecord((relation.name,), (name,), None, "numeric (brentq)",
                      _inputs(cstep.relations, (name,), model), None, note)


def _run_block(model: Model, cstep: _CompiledStep, env, regime) -> StepRecord:
    names = list(cstep.step.variables)
    guesses = {n: (model.variables[n].typical or 1.0) * model.variables[n].to_base
               for n in names}
    found, unphysical = [], []
    tears = set()
    multistart = False  # whether any regime's search was multi-start (proves nothing)
    for branch in cstep.block_branches:
        labels = branch.labels
        if regime and labels and regime not in labels and _labels_known(cstep, regime):
            continue
        tears.update(branch.tears)
        multistart = multistart or len(branch.tears) > 1
        for scope in branch.solve(env, guesses):
            solution = {n: scope[n] for n in names}
            if all(_physical(model, n, solution[n]) for n in names) and _guards_hold(
                    branch.guards, scope):
                found.append((solution, labels))
                flat = degenerate_directions(branch, env, scope, names)
                if flat:
                    raise DegenerateError(flat)
            else:
                unphysical.append((branch, scope))
    if not found:
        for branch, scope in unphysical:
            flat = _flat_with_physical_members(model, branch, env, scope, names, guesses)
            if flat:
                raise DegenerateError(flat)
    distinct = []
    for solution, labels in found:
        if not any(all(abs(solution[n] - s[n]) <= 1e-7 * abs(s[n]) for n in names)
                   for s, _ in distinct):
            distinct.append((solution, labels))
    if not distinct:
        relations = ", ".join(cstep.step.relations)
        if multistart:  # a failed multi-start proves nothing: say so, and how to narrow it
            raise SearchFailed(", ".join(names), f"no start of the numeric search on the "
                               f"simultaneous relations {relations} reached one, but one may "
                               f"exist; pin one of {', '.join(sorted(tears))} to solve the "
                               "rest directly")
        raise NoSolution(", ".join(names), f"the simultaneous relations {relations} have "
                         "no physical solution")
    if len(distinct) > 1:
        options = [", ".join(f"{n} = {_show(model, n, s[n])}" for n in names)
                   + (f" ({', '.join(lab)})" if lab else "") for s, lab in distinct[:3]]
        if len(distinct) > 3:
            options.append(f"and {len(distinct) - 3} more")
        raise AmbiguousSolution(", ".join(names), options,
                                "pin another quantity or choose a --regime")
    solution, labels = distinct[0]
    env.update(solution)
    how = ("every root of one torn quantity bracketed and refined (brentq)" if not multistart
           else "scipy.optimize.root from several starts, in log space; other solutions "
                "may exist that no start reached")
    note = (f"solved together, guessing {', '.join(sorted(tears))} and solving the rest by "
            f"their closed forms; {how}")
    if labels:
        note += "; regime: " + ", ".join(labels)
    method = MULTI_START if multistart else "numeric block"
    return StepRecord(cstep.step.relations, tuple(names), None, method,
                      _inputs(cstep.relations, names, model), ", ".join(labels) or None, note)


def _labels_known(cstep, regime) -> bool:
    return any(regime == label for r in cstep.relations for label, _ in r.regimes)
