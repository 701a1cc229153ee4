"""A compiled plan as a vectorised function: arrays of pin values in, arrays out.

This is what Monte Carlo, sweeps and optimisation call: the closed forms are
evaluated elementwise with numpy, each element keeps its own physical root and
regime, and elements where no root (or more than one) qualifies become NaN and
are counted. Steps without a closed form fall back to one scalar solve per
element, which is correct but slower; the result says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from chalk.solvers.blocks import run_block, set_aside
from chalk.solvers.execute import CompiledPlan, run_numeric
from chalk.solvers.placeholders import placeholder_values
from chalk.solvers.steps import physical, regime_for
from chalk.solvers.strategies import NEWTON_MULTI_START, search_range
from chalk.solvers.tolerances import BLOCK, SCAN, STEPS
from chalk.symbolic.errors import ChalkError
from chalk.symbolic.model import Model


@dataclass
class VectorResult:
    """Values of every quantity, per element, and what happened along the way."""

    values: dict[str, np.ndarray]
    regimes: dict[str, np.ndarray] = field(default_factory=dict)  # step variable -> labels
    failed: dict[str, int] = field(default_factory=dict)  # variable -> elements with no value
    ambiguous: dict[str, int] = field(default_factory=dict)
    scalar_steps: list[str] = field(default_factory=list)
    raw: dict = field(default_factory=dict)  # every value as computed (scalars stay scalars)


def _admits(model: Model, name: str, values: np.ndarray, provisional=False) -> np.ndarray:
    """Elementwise :func:`solvers.steps.physical`: a provisional value (one that cancels)
    need only be finite and non-negative, or positive unless zero is allowed."""
    v = model.variables[name]
    if not provisional:
        return v.admits_each(values)
    declared = values / v.to_base
    ok = np.isfinite(declared) & (declared >= 0)
    if not v.allow_zero:
        ok &= declared > 0
    return ok


def _holds(guards, env, size) -> np.ndarray:
    ok = np.ones(size, dtype=bool)
    for a, b in guards:
        left = np.broadcast_to(np.asarray(a(env), dtype=float), size)
        right = np.broadcast_to(np.asarray(b(env), dtype=float), size)
        ok &= left >= right - STEPS.guard_rtol * np.maximum(np.abs(left), np.abs(right))
    return ok


def evaluate(compiled: CompiledPlan, pins: Mapping[str, object], regime: str | None = None,
             size: int | None = None, keep=None) -> VectorResult:
    """Run ``compiled`` on arrays (or scalars) of base-unit pin values.

    ``keep`` limits the returned values to those names (default: every quantity).
    """
    model = compiled.model
    env: dict[str, object] = dict(compiled.constants)
    env.update(placeholder_values(compiled))
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
    result = VectorResult({})
    with np.errstate(all="ignore"):
        for cstep in compiled.steps:
            if cstep.kind == "explicit":
                _explicit(model, cstep, env, regime, size, result)
            elif cstep.kind == "block" and all(b.strategy != NEWTON_MULTI_START
                                               for b in cstep.block_branches):
                _block(model, cstep, env, regime, size, result)
            else:
                _scalar_fallback(model, cstep, env, regime, size, result)
    names = model.variables if keep is None else keep
    result.raw = env
    result.values = {k: np.broadcast_to(np.asarray(env[k], dtype=float), (size,))
                     for k in names if k in env}
    return result


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
            env[name] = value
            _regime_labels(cstep, env, size, result, name)
            return
        value = np.asarray(value, dtype=float)
        ok = _admits(model, name, value, name in cstep.provisional)
        if not ok.all():
            if np.ndim(value) == 0:
                value = np.full(size, float(value))
            value = np.where(ok, value, np.nan)
            result.failed[name] = int(size - np.count_nonzero(ok)) if np.ndim(ok) else size
        env[name] = value
        _regime_labels(cstep, env, size, result, name)
        return
    chosen = np.full(size, np.nan)
    count = np.zeros(size, dtype=int)
    label_of = np.full(size, "", dtype=object)
    free = np.zeros(size, dtype=bool)
    for cc in cstep.candidates:
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
        ok = _admits(model, name, value, name in cstep.provisional) & _holds(cc.guards, trial,
                                                                         size)
        same = ok & (count > 0) & np.isclose(value, chosen, rtol=STEPS.distinct_rtol, atol=0)
        new = ok & ~same
        count += new
        chosen = np.where(new & (count == 1), value, chosen)
        if candidate.regime:
            label_of = np.where(new & (count == 1), candidate.regime, label_of)
    ambiguous = (count > 1) | (free & (count >= 1)) | (free & (count == 0))
    chosen = np.where(ambiguous | (count == 0), np.nan, chosen)
    failed = int(np.sum((count == 0) & ~free))
    if failed:
        result.failed[name] = failed
    if int(np.sum(ambiguous)):
        result.ambiguous[name] = int(np.sum(ambiguous))
    env[name] = chosen
    if any(cc.candidate.regime for cc in cstep.candidates):
        result.regimes[name] = label_of
    _regime_labels(cstep, env, size, result, name)


def _regime_labels(cstep, env, size, result, name):
    """For a forward max/min, which argument won, per element."""
    if not cstep.regime_args:
        return
    stacked = np.vstack([np.broadcast_to(np.asarray(fn(env), dtype=float), (size,))
                         for _, fn in cstep.regime_args])
    labels = np.array([label for label, _ in cstep.regime_args], dtype=object)
    winner = np.argmin if cstep.regime_low_wins else np.argmax
    result.regimes[name] = labels[winner(stacked, axis=0)]


def _block(model, cstep, env, regime, size, result):
    """A simultaneous block over every element at once.

    Each regime combination is evaluated for all elements together: with no torn
    quantity by its closed forms in sequence, with one by a scan of the torn quantity
    over its plausible range (solvers.tolerances.SCAN) and bisection of each sign change.
    An element keeps the solution of the regime whose inequalities hold there; none is a
    failure, several distinct ones an ambiguity.
    """
    names = list(cstep.step.variables)
    chosen = {n: np.full(size, np.nan) for n in names}
    count = np.zeros(size, dtype=int)
    labels = np.full(size, "", dtype=object)
    for branch in cstep.block_branches:
        if set_aside(cstep, branch, regime):
            continue
        for scope in _branch_solutions(model, branch, env, size):
            ok = np.ones(size, dtype=bool)
            for n in names:
                ok &= _admits(model, n, np.broadcast_to(scope[n], (size,)),
                              n in cstep.provisional)
            ok &= _holds(branch.guards, scope, size)
            for lhs, rhs in branch.all_equations:
                left = np.broadcast_to(np.asarray(lhs(scope), dtype=float), (size,))
                right = np.broadcast_to(np.asarray(rhs(scope), dtype=float), (size,))
                scale = np.maximum(np.abs(left), np.abs(right))
                ok &= np.abs(left - right) <= SCAN.accept * np.where(scale == 0, 1, scale)
            values = {n: np.broadcast_to(np.asarray(scope[n], dtype=float), (size,))
                      for n in names}
            same = ok & (count > 0)
            for n in names:
                same &= np.isclose(values[n], chosen[n], rtol=BLOCK.distinct_rtol, atol=0)
            new = ok & ~same
            first = new & (count == 0)
            count += new
            for n in names:
                chosen[n] = np.where(first, values[n], chosen[n])
            if branch.labels:
                labels = np.where(first, ", ".join(branch.labels), labels)
    ambiguous = count > 1
    failed = count == 0
    for n in names:
        env[n] = np.where(ambiguous | failed, np.nan, chosen[n])
        if failed.any():
            result.failed[n] = int(failed.sum())
        if ambiguous.any():
            result.ambiguous[n] = int(ambiguous.sum())
    if any(branch.labels for branch in cstep.block_branches):
        result.regimes[names[0]] = labels


def _branch_solutions(model, branch, env, size):
    """Every solution of one regime combination, as scopes of arrays (NaN where an
    element has no such solution)."""
    if not branch.tears:
        scope = dict(env)
        for name, fn in branch.sequence:
            scope[name] = np.asarray(fn(scope), dtype=float)
        return [scope]
    tear = branch.tears[0]
    low, high = search_range(model.variables[tear])
    grid = np.linspace(np.log(low), np.log(high), SCAN.points)

    def residual(log_x):
        scope = dict(env)
        scope[tear] = np.exp(log_x)
        for name, fn in branch.sequence:
            value = np.asarray(fn(scope), dtype=float)
            scope[name] = np.where(value > 0, value, np.nan)
        lhs, rhs = branch.residuals[0]
        left = np.asarray(lhs(scope), dtype=float)
        right = np.asarray(rhs(scope), dtype=float)
        total = np.abs(left) + np.abs(right)
        return np.broadcast_to((left - right) / np.where(total == 0, 1, total), (size,))

    values = [residual(np.full(size, g)) for g in grid]
    scopes = []
    for a, b, fa, fb in zip(grid[:-1], grid[1:], values[:-1], values[1:], strict=True):
        crossing = np.isfinite(fa) & np.isfinite(fb) & (np.sign(fa) != np.sign(fb))
        if not crossing.any():
            continue
        lo, hi, flo = np.full(size, a), np.full(size, b), fa.copy()
        for _ in range(SCAN.bisections):
            middle = 0.5 * (lo + hi)
            fm = residual(middle)
            left = np.sign(fm) == np.sign(flo)
            lo = np.where(left, middle, lo)
            flo = np.where(left, fm, flo)
            hi = np.where(left, hi, middle)
        root = np.where(crossing, 0.5 * (lo + hi), np.nan)
        scope = dict(env)
        scope[tear] = np.exp(root)
        for name, fn in branch.sequence:
            scope[name] = np.asarray(fn(scope), dtype=float)
        scopes.append(scope)
    return scopes


def _scalar_fallback(model, cstep, env, regime, size, result):
    """One scalar solve per element, for steps without a closed form."""
    names = cstep.step.variables
    out = {n: np.full(size, np.nan) for n in names}
    result.scalar_steps.append(", ".join(names))
    for i in range(size):
        scalar = {k: (float(v[i]) if isinstance(v, np.ndarray) else v) for k, v in env.items()}
        try:
            if cstep.kind == "numeric":
                run_numeric(model, cstep, scalar)
            else:
                run_block(model, cstep, scalar, regime)
        except ChalkError:
            for n in names:
                result.failed[n] = result.failed.get(n, 0) + 1
            continue
        for n in names:
            out[n][i] = scalar[n]
    env.update(out)
