"""A compiled plan as a vectorised function: arrays of pin values in, arrays out.

This is what Monte Carlo, sweeps and optimisation call: the closed forms are
evaluated elementwise with numpy, each element keeps its own physical root and
regime, and elements where no root (or more than one) qualifies, or where the root is
one solve refuses as ill-conditioned (solvers.analysis.conditioning), become NaN and
are counted. A block torn at several quantities is solved by Newton on every element
at once (solvers.bulk.batched_newton), seeded by the block's own search on a few pilot
elements; an element that Newton does not bring onto every relation of the block is
solved alone. A relation with no closed form is scanned over its unknown's plausible
range for every element at once; an element where no root crosses zero is solved alone.
Both are counted, and the result says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from chalk.solvers.analysis.conditioning import refused
from chalk.solvers.bulk.elementwise import admits, holds, one_by_one, sign_changes, subset
from chalk.solvers.bulk.vectorised_blocks import solve_block
from chalk.solvers.execution.execute import CompiledPlan
from chalk.solvers.execution.placeholders import placeholder_values
from chalk.solvers.execution.steps import physical, regime_for
from chalk.solvers.execution.strategies import search_range
from chalk.solvers.tolerances import CONDITIONING, SCAN, STEPS


@dataclass
class VectorResult:
    """Values of every quantity, per element, and what happened along the way."""

    values: dict[str, np.ndarray]
    regimes: dict[str, np.ndarray] = field(default_factory=dict)  # step variable -> labels
    failed: dict[str, int] = field(default_factory=dict)  # variable -> elements with no value
    ambiguous: dict[str, int] = field(default_factory=dict)
    # variable -> elements whose answer no digit of survives (solve refuses them)
    ill_conditioned: dict[str, int] = field(default_factory=dict)
    scalar_steps: list[str] = field(default_factory=list)
    # a block's quantities -> elements Newton did not solve, solved one at a time instead
    one_at_a_time: dict[str, int] = field(default_factory=dict)
    raw: dict = field(default_factory=dict)  # every value as computed (scalars stay scalars)


def evaluate(compiled: CompiledPlan, pins: Mapping[str, object], regime: str | None = None,
             size: int | None = None, keep=None, seeds: dict | None = None) -> VectorResult:
    """Run ``compiled`` on arrays (or scalars) of base-unit pin values.

    ``keep`` limits the returned values to those names (default: every quantity).
    ``seeds`` (step index to a list of solutions) holds what the pilot elements of a
    block torn at several quantities found, and the fits that predict each element's
    start from the first solutions (solvers.bulk.prediction); pass the same dict to later
    calls on the same plan (chunks of one Monte Carlo run) so they start from them
    instead of solving pilots again.
    """
    env = scalar_env(compiled)
    sizes = [1]
    for k, v in pins.items():
        # Fixed pins stay scalars (numpy broadcasts them); only varied pins are arrays.
        if isinstance(v, float):
            env[k] = v
        else:
            a = np.asarray(v, dtype=float)
            env[k] = a if a.ndim else float(a)
            sizes.append(a.size)
    if size is None:
        size = max(sizes)
    return run_env(compiled, env, regime, size, keep, seeds)


def scalar_env(compiled: CompiledPlan) -> dict[str, object]:
    """What a run starts from before the pins: the plan's constants and the values of
    its placeholders (a new dict, which the run fills in)."""
    env: dict[str, object] = dict(compiled.constants)
    env.update(placeholder_values(compiled))
    return env


def run_env(compiled: CompiledPlan, env: dict, regime: str | None = None, size: int = 1,
            keep=None, seeds: dict | None = None) -> VectorResult:
    """:func:`evaluate` from an environment already holding the constants, placeholders
    and pins (floats, or arrays of ``size``): the point path of a compiled question keeps
    that environment and changes only the pins asked again."""
    model = compiled.model
    result = VectorResult({})
    seeds = {} if seeds is None else seeds
    with np.errstate(all="ignore"):
        for index, cstep in enumerate(compiled.steps):
            # one point: a step with nothing to decide is its value (an array run would
            # evaluate the form twice, so it takes the general path)
            if size == 1 and cstep.direct is not None and _direct_value(model, cstep, env):
                continue
            if cstep.kind == "explicit":
                _explicit(model, cstep, env, regime, size, result)
            elif cstep.kind == "block":
                solve_block(model, cstep, env, regime, size, result, seeds, index)
            elif cstep.kind == "numeric" and size > 1:
                _numeric(model, cstep, env, regime, size, result)
            else:
                one_by_one(model, cstep, env, regime, size, result)
    names = model.variables if keep is None else keep
    result.raw = env
    result.values = {k: np.broadcast_to(np.asarray(env[k], dtype=float), (size,))
                     for k in names if k in env}
    return result


def _direct_value(model, cstep, env) -> bool:
    """A step with nothing to decide (solvers.execution.execute._direct: one closed form
    that cannot amplify rounding, no regime, guard or polish) whose value is a physical
    scalar: put into ``env``, as :func:`_explicit` would; False (nothing done) for an
    array or a value :func:`_explicit` must judge and count."""
    name = cstep.step.variables[0]
    value = cstep.direct.value(env)
    if not isinstance(value, float) or not physical(model, name, value,
                                                    name in cstep.provisional):
        return False  # (numpy's float64 is a float; an array or a complex is not)
    env[name] = float(value)
    return True


def _explicit(model, cstep, env, regime, size, result):
    name = cstep.step.variables[0]
    only = cstep.candidates[0] if len(cstep.candidates) == 1 else None
    if only is not None and only.candidate.expr is not None and not only.guards:
        # One closed form, no regimes to choose between: evaluate and keep the physical.
        value = only.value(env)
        if isinstance(value, float) or np.ndim(value) == 0:  # a scalar: plain checks
            value = float(value)
            if not physical(model, name, value, name in cstep.provisional):
                result.failed[name] = size
                value = math.nan
            elif not only.bounded and scalar_refused(only, env, value):
                result.ill_conditioned[name] = size
                value = math.nan
            env[name] = value
            _regime_labels(cstep, env, size, result, name)
            return
        value = np.asarray(value, dtype=float)
        ok = admits(model, name, value, name in cstep.provisional)
        if not ok.all():
            result.failed[name] = int(size - np.count_nonzero(ok)) if np.ndim(ok) else size
        if not only.bounded:
            ok = ok & ~_ill_conditioned(model, cstep, only, env, value, ok, size, result)
        if not ok.all():
            if np.ndim(value) == 0:
                value = np.full(size, float(value))
            value = np.where(ok, value, np.nan)
        env[name] = value
        _regime_labels(cstep, env, size, result, name)
        return
    chosen = np.full(size, np.nan)
    count = np.zeros(size, dtype=int)
    label_of = np.full(size, "", dtype=object)
    free = np.zeros(size, dtype=bool)
    source = np.full(size, -1)  # which candidate gave each element's first value
    for index, cc in enumerate(cstep.candidates):
        candidate = cc.candidate
        wanted = regime_for(regime, cstep.relations[0].name)
        if wanted and candidate.regime and candidate.regime != wanted:
            continue
        if candidate.expr is None:
            left, right = (np.broadcast_to(np.asarray(side(env), dtype=float), (size,))
                           for side in cc.value)
            scale = np.maximum(np.abs(left), np.abs(right))
            free |= np.abs(left - right) <= STEPS.guard_rtol * np.where(scale == 0, 1, scale)
            continue
        value = np.broadcast_to(np.asarray(cc.value(env), dtype=float), (size,))
        trial = dict(env)
        trial[name] = value
        ok = admits(model, name, value, name in cstep.provisional) & holds(cc.guards, trial,
                                                                         size)
        same = ok & (count > 0) & np.isclose(value, chosen, rtol=STEPS.distinct_rtol, atol=0)
        new = ok & ~same
        count += new
        chosen = np.where(new & (count == 1), value, chosen)
        source = np.where(new & (count == 1), index, source)
        if candidate.regime:
            label_of = np.where(new & (count == 1), candidate.regime, label_of)
    ambiguous = (count > 1) | (free & (count >= 1)) | (free & (count == 0))
    ill = np.zeros(size, dtype=bool)
    for index, cc in enumerate(cstep.candidates):
        if not cc.bounded:  # as the scalar step: only the one value an element kept
            kept = (source == index) & (count == 1) & ~ambiguous
            ill |= _ill_conditioned(model, cstep, cc, env, chosen, kept, size, result)
    chosen = np.where(ambiguous | (count == 0) | ill, np.nan, chosen)
    failed = int(np.sum((count == 0) & ~free))
    if failed:
        result.failed[name] = failed
    if int(np.sum(ambiguous)):
        result.ambiguous[name] = int(np.sum(ambiguous))
    env[name] = chosen
    if any(cc.candidate.regime for cc in cstep.candidates):
        result.regimes[name] = label_of
    _regime_labels(cstep, env, size, result, name)


def scalar_refused(cc, env: dict, value: float) -> bool:
    """Whether the scalar step refuses the closed form ``cc``'s answer ``value`` as
    ill-conditioned, remembered by the values of the quantities in the form: the measure
    is a pure function of them, and a sweep, a fit or a Monte Carlo run asks it again at
    every call for each step that none of its varied pins reaches (a replica's batch from
    its memory while the efficiencies vary)."""
    names = cc.verdicts.get(None)
    if names is None:
        names = cc.verdicts[None] = tuple(sorted(s.name for s in cc.candidate.expr.free_symbols))
    key = tuple(env.get(n) for n in names)
    if any(isinstance(v, np.ndarray) for v in key):  # not a scalar point: measured afresh
        return bool(refused(cc.value, env, cc.measured, value))
    found = cc.verdicts.get(key)
    if found is None:
        found = bool(refused(cc.value, env, cc.measured, value))
        if len(cc.verdicts) > CONDITIONING.remembered:
            cc.verdicts.clear()
            cc.verdicts[None] = names
        cc.verdicts[key] = found
    return found


def _ill_conditioned(model, cstep, cc, env, value, where, size, result) -> np.ndarray:
    """Among the elements ``where``, those whose answer ``value`` (from candidate ``cc``)
    the scalar step refuses as ill-conditioned (solvers.analysis.conditioning), counted
    in ``result``. Only those elements are evaluated again."""
    out = np.zeros(size, dtype=bool)
    where = np.broadcast_to(where, (size,))
    if not where.any():
        return out
    index = np.flatnonzero(where)
    value = np.broadcast_to(value, (size,))[index]
    local = subset({k: (np.broadcast_to(v, (size,)) if isinstance(v, np.ndarray) and v.ndim
                        else v) for k, v in env.items()}, index, size)
    out[index] = refused(cc.value, local, cc.measured, value)
    if out.any():
        name = cstep.step.variables[0]
        result.ill_conditioned[name] = result.ill_conditioned.get(name, 0) + int(out.sum())
    return out


def _regime_labels(cstep, env, size, result, name):
    """For a forward max/min, which argument won, per element."""
    if not cstep.regime_args:
        return
    stacked = np.vstack([np.broadcast_to(np.asarray(fn(env), dtype=float), (size,))
                         for _, fn in cstep.regime_args])
    labels = np.array([label for label, _ in cstep.regime_args], dtype=object)
    winner = np.argmin if cstep.regime_low_wins else np.argmax
    result.regimes[name] = labels[winner(stacked, axis=0)]


def _numeric(model, cstep, env, regime, size, result):
    """One relation with no closed form, over every element at once: its unknown scanned
    over the plausible range (as the scalar step does) and each sign change bisected. An
    element with one physical root keeps it, with several is an ambiguity; one with none
    is solved alone (the scalar scan also finds roots that touch zero without crossing it
    and roots against a domain edge), and counted."""
    name = cstep.step.variables[0]
    lhs, rhs = cstep.equation

    def residual(log_x):
        scope = dict(env)
        scope[name] = np.exp(log_x)
        left = np.asarray(lhs(scope), dtype=float)
        right = np.asarray(rhs(scope), dtype=float)
        total = np.abs(left) + np.abs(right)
        return np.broadcast_to((left - right) / np.where(total == 0, 1, total), (size,))

    chosen = np.full(size, np.nan)
    count = np.zeros(size, dtype=int)
    for root in sign_changes(residual, search_range(model.variables[name]), size):
        value = np.exp(root)
        ok = admits(model, name, value, name in cstep.provisional) & (
            np.abs(residual(root)) < SCAN.root_accept)
        same = ok & (count > 0) & np.isclose(value, chosen, rtol=SCAN.distinct_rtol, atol=0)
        new = ok & ~same
        chosen = np.where(new & (count == 0), value, chosen)
        count += new
    ambiguous = count > 1
    env[name] = np.where(ambiguous, np.nan, chosen)
    if ambiguous.any():
        result.ambiguous[name] = int(ambiguous.sum())
    none = count == 0
    if none.any():
        result.one_at_a_time[name] = int(none.sum())
        one_by_one(model, cstep, env, regime, size, result, np.flatnonzero(none))
