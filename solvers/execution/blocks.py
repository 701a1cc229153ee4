"""Simultaneous blocks: several relations solved together for several quantities.

Each combination of regimes is torn (solvers.execution.tearing) and solved by its named
strategy (solvers.execution.strategies); the physical solutions are kept. One solution is an
answer, several are an ambiguity, a flat direction is a degenerate pin set, and none
is "no solution" only when every search was complete (closed forms, or a scan of a
single torn quantity over its plausible range); otherwise the search failed. The two
rescues tried when no physical solution was found (placeholders moved, a physical member
of a flat family) are registered here as strategies too.
"""

from __future__ import annotations

import numpy as np
from chalk.solvers.analysis.at_solution import flat_at, other_quantities
from chalk.solvers.analysis.conditioning import block_elasticities, verdict
from chalk.solvers.analysis.jacobian import log_jacobian_at
from chalk.solvers.analysis.reference import reference_point
from chalk.solvers.execution import numeric
from chalk.solvers.execution.steps import StepRecord, guards_hold, inputs_of, physical, show
from chalk.solvers.execution.strategies import (
    FLAT_MEMBER,
    PLACEHOLDERS_MOVED,
    REGISTRY,
    Search,
    register,
    search_range,
)
from chalk.solvers.tolerances import BLOCK, NEWTON
from chalk.symbolic.errors import AmbiguousSolution, NoSolution, SearchFailed
from chalk.symbolic.model import Model

MULTI_START = "numeric block (multi-start)"  # a block whose answer is not proven unique
COMPLETE = "numeric block"  # a block whose every search was complete


def run_block(model: Model, cstep, env, regime, pick: int | None = None) -> StepRecord:
    """Solve one compiled block on ``env`` (base units), adding its values to ``env``.

    A block whose equations are flat along some direction at the solution (the pins
    fix only a combination of some of its quantities) keeps one solution of that
    family and says so; whether a target depends on the flat direction is decided at
    the solution by the caller (solvers.analysis.at_solution.open_at), not here. Several distinct
    solutions raise :class:`AmbiguousSolution` with their count, unless ``pick`` says
    which one to keep (in the order they are listed).
    """
    names = list(cstep.step.variables)
    guesses = {n: (model.variables[n].typical or 1.0) * model.variables[n].to_base
               for n in names}
    ranges = {n: search_range(model.variables[n]) for n in names}
    found, unphysical = [], []  # (values, branch, search) and (scope, branch, search)
    tears = set()
    flat: set[str] = set()
    flat_branches: set[int] = set()  # branches whose solutions form a flat family
    complete = True  # whether every search was exhaustive (else "none" proves nothing)
    for branch in cstep.block_branches:
        if set_aside(cstep, branch, regime):
            continue
        tears.update(branch.tears)
        search = branch.solve(env, guesses, ranges, reference_point(model).values)
        complete = complete and search.complete
        for scope in search.solutions:
            if _admissible(model, branch, names, scope, cstep.provisional):
                found.append(({n: scope[n] for n in names}, branch, search))
                directions = _flat(model, cstep, branch, env, scope, names)
                if directions:
                    flat.update(directions)
                    flat_branches.add(id(branch))
            else:
                unphysical.append((scope, branch, search))
    moved: dict[str, float] = {}
    if not found and cstep.held:  # (none at these placeholder values proves nothing)
        moved = REGISTRY[PLACEHOLDERS_MOVED].solve(model, cstep, env, names, guesses, regime,
                                                   found)
        if moved:  # least squares proves nothing unique
            complete = complete and REGISTRY[PLACEHOLDERS_MOVED].complete
    if not found:
        for scope, branch, search in unphysical:
            # one point of a family a branch search found: the family is one answer, so
            # the block's completeness stays that of the branch searches
            member = REGISTRY[FLAT_MEMBER].solve(model, cstep, branch, env, scope, names,
                                                 guesses, cstep.provisional)
            if member is not None:
                found.append((member[0], branch, search))
                flat.update(member[1])
                flat_branches.add(id(branch))
                break
    distinct = []
    for solution, branch, search in found:
        if id(branch) in flat_branches and any(b is branch for _, b, _ in distinct):
            continue  # points of one flat family are one answer, not several
        if not any(all(abs(solution[n] - s[n]) <= BLOCK.distinct_rtol * abs(s[n])
                       for n in names) for s, _, _ in distinct):
            distinct.append((solution, branch, search))
    if not distinct:
        relations = ", ".join(cstep.step.relations)
        if not complete:  # a failed multi-start proves nothing: say so, and how to narrow it
            raise SearchFailed(", ".join(names), f"no start of the numeric search on the "
                               f"simultaneous relations {relations} reached one, but one may "
                               f"exist; pin one of {', '.join(sorted(tears))} to solve the "
                               "rest directly")
        scanned = (f" with {', '.join(sorted(tears))} in its plausible range" if len(tears) == 1
                   else " with each torn quantity in its plausible range" if tears else "")
        raise NoSolution(", ".join(names), f"the simultaneous relations {relations} have "
                         f"no physical solution{scanned}{_why_none(model, cstep, env, regime)}")
    options = [", ".join(f"{n} = {show(model, n, s[n])}" for n in names)
               + (f" ({', '.join(b.labels)})" if b.labels else "") for s, b, _ in distinct]
    if len(distinct) > 1 and pick is None:
        shown = options[:3] + ([f"and {len(distinct) - 3} more"] if len(distinct) > 3 else [])
        raise AmbiguousSolution(", ".join(names), shown,
                                "pin another quantity or choose a --regime",
                                count=len(distinct))
    if pick is not None and pick >= len(distinct):
        raise SearchFailed(", ".join(names), f"the path followed needs solution {pick + 1} of "
                           f"the simultaneous relations, and {len(distinct)} were found here")
    solution, branch, search = distinct[pick or 0]
    env.update(moved)
    env.update(solution)
    if branch.tears:
        note = (f"solved together, guessing {', '.join(sorted(branch.tears))} and solving the "
                f"rest by their closed forms; {search.note}")
    else:
        note = f"solved together: {search.note}"
    if search.complete and not complete:
        note += ("; other regimes were searched by scipy.optimize.root from several starts, "
                 "so other solutions may exist")
    if len(distinct) > 1:
        others = "; ".join(o for i, o in enumerate(options) if i != pick)
        note += f"; one of {len(distinct)} solutions (also: {others})"
    if moved:
        note += (f"; with {', '.join(sorted(moved))} at their first placeholder values these "
                 "relations have no solution the search could reach, so they were moved to "
                 "values where they have one (they cancel from the answer)")
    if flat:
        note += (f"; the relations leave {', '.join(sorted(flat))} free along one direction "
                 "here, so one point of that family was kept")
    conditioning = _conditioning(model, cstep, env, names, branch)
    if conditioning:
        note += f"; {conditioning}"
    if branch.labels:
        note += "; regime: " + ", ".join(branch.labels)
    method = COMPLETE if complete else MULTI_START
    return StepRecord(cstep.step.relations, tuple(names), None, method,
                      inputs_of(cstep.relations, names, model),
                      ", ".join(branch.labels) or None, note, flat=bool(flat),
                      regimes=tuple(sorted(branch.regimes.items())))


def _why_none(model: Model, cstep, env, regime) -> str:
    """What goes wrong in each regime combination solved in closed form, as a clause
    ("": none can say): the quantity that would be non-physical, or the regime
    inequality that would fail."""
    reasons = []
    for branch in cstep.block_branches:
        if set_aside(cstep, branch, regime):
            continue
        why = branch.why_not(env, lambda n, v: physical(model, n, v),
                             lambda n, v: show(model, n, v))
        if why:
            where = f"{', '.join(branch.labels)}: " if branch.labels else ""
            reasons.append(where + why)
    return f" ({'; '.join(reasons)})" if reasons else ""


def _conditioning(model: Model, cstep, env, names, branch) -> str:
    """A warning when the block's answer amplifies relative changes in its inputs a
    great deal (a saturated relation inverted, say); raises IllConditioned when no
    digit of it survives. Elasticities come from the block's log-space Jacobian at
    the solution (solvers.analysis.conditioning.block_elasticities, as the vectorised
    run measures each point): d ln x / d ln inputs = -J_x^-1 J_inputs."""
    relations = list(cstep.step.relations)
    inputs = block_inputs(model, cstep)
    try:
        rows = log_jacobian_at(model, relations, env, [*names, *inputs],
                               branch_regimes(model, cstep, branch))
    except (ArithmeticError, ValueError, KeyError):
        return ""
    elasticity, _, _ = block_elasticities(rows[:, :len(names)], rows[:, len(names):])
    if not elasticity.size or not np.all(np.isfinite(elasticity)):
        return ""  # singular: a flat family, which the question's own check decides
    i, j = np.unravel_index(np.argmax(np.abs(elasticity)), elasticity.shape)
    return verdict(names[i], float(abs(elasticity[i, j])), inputs[j], relations)


def block_inputs(model: Model, cstep) -> list[str]:
    """The quantities a block's relations read besides those it solves for."""
    return other_quantities(model, cstep.step.relations, cstep.step.variables)


def branch_regimes(model: Model, cstep, branch) -> dict[str, str]:
    """Relation name -> the regime ``branch`` takes it in (its relations with a max or
    min)."""
    return {r: label for r in cstep.step.relations for label, _ in model.relations[r].regimes
            if label in branch.labels}


def _admissible(model: Model, branch, names, scope, provisional=frozenset()) -> bool:
    """Every quantity of the block physical (within its bounds unless provisional) and the
    branch's regime inequalities held."""
    return (all(physical(model, n, scope[n], n in provisional) for n in names)
            and guards_hold(branch.guards, scope))


def set_aside(cstep, branch, regime) -> bool:
    """Whether a regime combination is excluded by the regime asked for."""
    if regime is None:
        return False
    if isinstance(regime, str):
        return bool(branch.labels) and regime not in branch.labels and _labels_known(
            cstep, regime)
    return any(regime.get(r, label) != label for r, label in branch.regimes.items())


def _labels_known(cstep, regime) -> bool:
    return any(regime == label for r in cstep.relations for label, _ in r.regimes)


@register(PLACEHOLDERS_MOVED, complete=False, role="rescue")
def move_held(model: Model, cstep, env, names, guesses, regime, found) -> dict[str, float]:
    """Placeholder values at which the block has a solution, found with the block's
    quantities (``found`` gets the solution); empty if none was reached.

    Quantities that cancel from the answer are held at arbitrary values, and at those the
    block may have no solution (or none a search can reach). Solved together with the
    block, as unknowns the equations do not fix, they take values near the model's
    reference point at which it has one; no earlier step has read them (``cstep.held``).
    """
    held = sorted(cstep.held)
    reference = reference_point(model).values
    unknowns = list(names) + held
    for branch in cstep.block_branches:
        if set_aside(cstep, branch, regime):
            continue

        def residuals(values, branch=branch):
            return branch.all_residuals({**env, **{h: values[h] for h in held}},
                                        {n: values[n] for n in names})

        starts = [{n: reference[n] for n in unknowns} if all(
            reference.get(n, 0) > 0 for n in unknowns) else None,
                  {**guesses, **{h: env[h] for h in held}}]
        solution = numeric.solve_underdetermined(residuals, unknowns,
                                                 [s for s in starts if s is not None])
        if solution is None:
            continue
        scope = {**env, **solution}
        if _admissible(model, branch, names, scope, cstep.provisional) and all(
                physical(model, h, solution[h], True) for h in held):
            search = Search((scope,), False, PLACEHOLDERS_MOVED,
                            "solved with them by least squares in log space from the model's "
                            "reference point; other solutions may exist")
            found.append(({n: solution[n] for n in names}, branch, search))
            return {h: solution[h] for h in held}
    return {}


def _flat(model: Model, cstep, branch, env, scope, names) -> list[str]:
    """The block's quantities along which its relations (in ``branch``'s regimes) are
    flat at the solution ``scope``."""
    return flat_at(model, cstep.step.relations, {**env, **scope}, names, branch.regimes)


@register(FLAT_MEMBER, complete=False, role="rescue")
def physical_member(model: Model, cstep, branch, env, scope, names, guesses,
                    provisional=frozenset()):
    """A physical solution in the flat family of a non-physical one, with the flat
    quantities; ``None`` if there is none.

    Multi-start on a block the pins fix only up to a combination can wander along the
    flat direction to a non-physical end (1e59 FLOP/token, say). The flat tears are put
    back at their typical values and the others re-solved.
    """
    flat = _flat(model, cstep, branch, env, scope, names)
    held = {t: guesses[t] for t in branch.tears if t in flat}
    if not held:
        return None
    free = [t for t in branch.tears if t not in held]
    if free:
        trials = numeric.solve_tears(
            lambda values: branch.residual(env, {**held, **values}), free, guesses)
    else:
        held_ok = all(abs(r) < NEWTON.accept for r in branch.residual(env, held))
        trials = [{}] if held_ok else []
    for values in trials:
        complete = branch.complete(env, {**held, **values})
        if _admissible(model, branch, names, complete, provisional):
            return {n: complete[n] for n in names}, flat
    return None
