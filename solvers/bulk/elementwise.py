"""Elementwise pieces shared by the vectorised evaluation of a plan (solvers.bulk.vectorised)
and of its blocks (solvers.bulk.vectorised_blocks): physical values and regime inequalities
over arrays, one element taken out as a scalar environment, a scan for sign changes
over every element at once, and the scalar solve of chosen elements.
"""

from __future__ import annotations

import numpy as np
from chalk.solvers.execution.blocks import run_block
from chalk.solvers.execution.execute import run_numeric
from chalk.solvers.tolerances import SCAN, STEPS
from chalk.symbolic.errors import ChalkError
from chalk.symbolic.model import Model


def admits(model: Model, name: str, values: np.ndarray, provisional=False) -> np.ndarray:
    """Elementwise :func:`solvers.execution.steps.physical`: a provisional value (one that cancels)
    need only be finite and non-negative, or positive unless zero is allowed."""
    v = model.variables[name]
    if not provisional:
        return v.admits_each(values)
    declared = values / v.to_base
    ok = np.isfinite(declared) & (declared >= 0)
    if not v.allow_zero:
        ok &= declared > 0
    return ok


def holds(guards, env, size) -> np.ndarray:
    """Elementwise: every regime inequality ``a >= b`` of ``guards`` held (within
    ``STEPS.guard_rtol``)."""
    ok = np.ones(size, dtype=bool)
    for a, b in guards:
        left = np.broadcast_to(np.asarray(a(env), dtype=float), size)
        right = np.broadcast_to(np.asarray(b(env), dtype=float), size)
        ok &= left >= right - STEPS.guard_rtol * np.maximum(np.abs(left), np.abs(right))
    return ok


def element(env, i: int) -> dict:
    """Element ``i`` of every array in ``env``, as a scalar environment."""
    return {k: (float(v[i]) if isinstance(v, np.ndarray) and v.ndim else v)
            for k, v in env.items()}


def subset(env, index: np.ndarray | slice, size: int) -> dict:
    """The elements ``index`` (positions in increasing order, or a slice: views) of every
    per-element array in ``env`` (scalars as they are)."""
    if isinstance(index, np.ndarray) and index.size == size:  # every element, in order
        return dict(env)
    return {k: (v[index] if isinstance(v, np.ndarray) and v.shape == (size,) else v)
            for k, v in env.items()}


def sign_changes(residual, span, size) -> list[np.ndarray]:
    """Every sign change of ``residual(ln x)`` (arrays of ``size``) with x in ``span``:
    a grid of ``SCAN.points``, each bracketed change bisected ``SCAN.bisections`` times.
    One array of ln x per grid interval where some element changes sign (NaN elsewhere)."""
    low, high = span
    grid = np.linspace(np.log(low), np.log(high), SCAN.points)
    values = [residual(np.full(size, g)) for g in grid]
    roots = []
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
        roots.append(np.where(crossing, 0.5 * (lo + hi), np.nan))
    return roots


def one_by_one(model, cstep, env, regime, size, result, elements=None):
    """One scalar solve per element (``elements``, default all), for steps without a
    closed form or elements the batched search did not solve."""
    names = cstep.step.variables
    if elements is None:
        elements = range(size)
        out = {n: np.full(size, np.nan) for n in names}
        result.scalar_steps.append(", ".join(names))
    else:
        out = {n: np.array(np.broadcast_to(env[n], (size,)), dtype=float) for n in names}
    for i in elements:
        scalar = element(env, i)
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
