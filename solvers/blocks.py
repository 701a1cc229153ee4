"""Simultaneous blocks: several relations solved together for several quantities.

Each combination of regimes is torn (solvers.tearing) and solved; the physical
solutions are kept. One solution is an answer, several are an ambiguity, a flat
direction is a degenerate pin set, and none is "no solution" only when the search
was exhaustive (a single torn quantity scanned over its whole range).
"""

from __future__ import annotations

from solvers import numeric
from solvers.steps import StepRecord, guards_hold, inputs_of, physical, show
from solvers.tearing import degenerate_directions
from symbolic.errors import AmbiguousSolution, NoSolution, SearchFailed
from symbolic.model import Model

MULTI_START = "numeric block (multi-start)"  # a block whose answer is not proven unique


def run_block(model: Model, cstep, env, regime) -> StepRecord:
    """Solve one compiled block on ``env`` (base units), adding its values to ``env``.

    A block whose equations are flat along some direction at the solution (the pins
    fix only a combination of some of its quantities) keeps one solution of that
    family and says so; whether a target depends on the flat direction is decided at
    the solution by the caller (solvers.rank.open_at), not here.
    """
    names = list(cstep.step.variables)
    guesses = {n: (model.variables[n].typical or 1.0) * model.variables[n].to_base
               for n in names}
    found, unphysical = [], []
    tears = set()
    flat: set[str] = set()
    multistart = False  # whether any regime's search was multi-start (proves nothing)
    for branch in cstep.block_branches:
        labels = branch.labels
        if regime and labels and regime not in labels and _labels_known(cstep, regime):
            continue
        tears.update(branch.tears)
        multistart = multistart or len(branch.tears) > 1
        for scope in branch.solve(env, guesses):
            if _admissible(model, branch, names, scope):
                found.append(({n: scope[n] for n in names}, labels))
                flat.update(degenerate_directions(branch, env, scope, names))
            else:
                unphysical.append((branch, scope))
    if not found:
        for branch, scope in unphysical:
            member = _physical_member(model, branch, env, scope, names, guesses)
            if member is not None:
                found.append((member[0], branch.labels))
                flat.update(member[1])
                break
    distinct = []
    for solution, labels in found:
        if not any(all(abs(solution[n] - s[n]) <= 1e-7 * abs(s[n]) for n in names)
                   for s, _ in distinct):
            distinct.append((solution, labels))
    if flat:  # points of one flat family are not different answers
        distinct = distinct[:1]
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
        options = [", ".join(f"{n} = {show(model, n, s[n])}" for n in names)
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
    if flat:
        note += (f"; the relations leave {', '.join(sorted(flat))} free along one direction "
                 "here, so one point of that family was kept")
    if labels:
        note += "; regime: " + ", ".join(labels)
    method = MULTI_START if multistart else "numeric block"
    return StepRecord(cstep.step.relations, tuple(names), None, method,
                      inputs_of(cstep.relations, names, model), ", ".join(labels) or None, note)


def _admissible(model: Model, branch, names, scope) -> bool:
    """Every quantity of the block physical and the branch's regime inequalities held."""
    return (all(physical(model, n, scope[n]) for n in names)
            and guards_hold(branch.guards, scope))


def _labels_known(cstep, regime) -> bool:
    return any(regime == label for r in cstep.relations for label, _ in r.regimes)


def _physical_member(model: Model, branch, env, scope, names, guesses):
    """A physical solution in the flat family of a non-physical one, with the flat
    quantities; ``None`` if there is none.

    Multi-start on a block the pins fix only up to a combination can wander along the
    flat direction to a non-physical end (1e59 FLOP/token, say). The flat tears are put
    back at their typical values and the others re-solved.
    """
    flat = degenerate_directions(branch, env, scope, names)
    held = {t: guesses[t] for t in branch.tears if t in flat}
    if not held:
        return None
    free = [t for t in branch.tears if t not in held]
    if free:
        trials = numeric.solve_tears(
            lambda values: branch.residual(env, {**held, **values}), free, guesses)
    else:
        trials = [{}] if all(abs(r) < 1e-10 for r in branch.residual(env, held)) else []
    for values in trials:
        complete = branch.complete(env, {**held, **values})
        if _admissible(model, branch, names, complete):
            return {n: complete[n] for n in names}, flat
    return None
