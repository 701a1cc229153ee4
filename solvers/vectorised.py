"""A compiled plan as a vectorised function: arrays of pin values in, arrays out.

This is what Monte Carlo, sweeps and optimisation call: the closed forms are
evaluated elementwise with numpy, each element keeps its own physical root and
regime, and elements where no root (or more than one) qualifies become NaN and
are counted. A block torn at several quantities is solved by Newton on every element
at once (solvers.batched_newton), seeded by the block's own search on a few pilot
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
from chalk.solvers import batched_newton
from chalk.solvers.blocks import run_block, set_aside
from chalk.solvers.execute import CompiledPlan, run_numeric
from chalk.solvers.placeholders import placeholder_values
from chalk.solvers.steps import physical, regime_for
from chalk.solvers.strategies import NEWTON_MULTI_START, search_range
from chalk.solvers.tolerances import BATCH_NEWTON, BLOCK, NEWTON, SCAN, STEPS
from chalk.symbolic.errors import AmbiguousSolution, ChalkError
from chalk.symbolic.model import Model


@dataclass
class VectorResult:
    """Values of every quantity, per element, and what happened along the way."""

    values: dict[str, np.ndarray]
    regimes: dict[str, np.ndarray] = field(default_factory=dict)  # step variable -> labels
    failed: dict[str, int] = field(default_factory=dict)  # variable -> elements with no value
    ambiguous: dict[str, int] = field(default_factory=dict)
    scalar_steps: list[str] = field(default_factory=list)
    # a block's quantities -> elements Newton did not solve, solved one at a time instead
    one_at_a_time: dict[str, int] = field(default_factory=dict)
    raw: dict = field(default_factory=dict)  # every value as computed (scalars stay scalars)


def _admits(model: Model, name: str, values: np.ndarray, provisional=False) -> np.ndarray:
    """Elementwise :func:`solvers.steps.physical`."""
    v = model.variables[name]
    declared = values / v.to_base
    ok = np.isfinite(declared) & (declared >= 0)
    if not v.allow_zero:
        ok &= declared > 0
    if provisional:
        return ok
    if v.lower is not None:
        ok &= declared >= v.lower * (1 - STEPS.bound_rtol)
    if v.upper is not None:
        ok &= declared <= v.upper * (1 + STEPS.bound_rtol)
    return ok


def _holds(guards, env, size) -> np.ndarray:
    ok = np.ones(size, dtype=bool)
    for a, b in guards:
        left = np.broadcast_to(np.asarray(a(env), dtype=float), size)
        right = np.broadcast_to(np.asarray(b(env), dtype=float), size)
        ok &= left >= right - STEPS.guard_rtol * np.maximum(np.abs(left), np.abs(right))
    return ok


def evaluate(compiled: CompiledPlan, pins: Mapping[str, object], regime: str | None = None,
             size: int | None = None, keep=None, seeds: dict | None = None) -> VectorResult:
    """Run ``compiled`` on arrays (or scalars) of base-unit pin values.

    ``keep`` limits the returned values to those names (default: every quantity).
    ``seeds`` (step index to a list of solutions) holds what the pilot elements of a
    block torn at several quantities found; pass the same dict to later calls on the
    same plan (chunks of one Monte Carlo run) so they start from it instead of solving
    pilots again.
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
    seeds = {} if seeds is None else seeds
    with np.errstate(all="ignore"):
        for index, cstep in enumerate(compiled.steps):
            if cstep.kind == "explicit":
                _explicit(model, cstep, env, regime, size, result)
            elif cstep.kind == "block":
                _block(model, cstep, env, regime, size, result, seeds, index)
            elif cstep.kind == "numeric" and size > 1:
                _numeric(model, cstep, env, regime, size, result)
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


def _block(model, cstep, env, regime, size, result, seeds, index):
    """A simultaneous block over every element at once.

    Each regime combination is evaluated for all elements together: with no torn
    quantity by its closed forms in sequence, with one by a scan of the torn quantity
    over its plausible range (solvers.tolerances.SCAN) and bisection of each sign change,
    with several by batched Newton from the typical values and from pilot solutions:
    the first element solved by the block's own search, then, while some elements are
    unsolved, up to ``BATCH_NEWTON.pilots - 1`` more of them (each seeding Newton on the
    rest). An element keeps the solution of the regime whose inequalities hold there;
    several distinct ones are an ambiguity. An element with none is a failure when
    every search was complete; otherwise the block's own search (multi-start, then a path
    from the reference point) solves it alone, and it is counted.
    """
    names = list(cstep.step.variables)
    live = [b for b in cstep.block_branches if not set_aside(cstep, b, regime)]
    searched = any(b.strategy == NEWTON_MULTI_START for b in live)
    if searched and size == 1 and index not in seeds:  # the pilot would be all of it
        _scalar_fallback(model, cstep, env, regime, size, result)
        return
    if searched and index not in seeds:
        first = _pilot(model, cstep, env, regime, 0)
        # a first pilot with several solutions: Newton would pick one of them silently
        seeds[index] = None if first is None else ([first] if first else [])
    if searched and seeds[index] is None:
        _scalar_fallback(model, cstep, env, regime, size, result)
        return
    found = _Found(names, size)
    starts = [*seeds.get(index, ()), _typical(model, names)]
    for branch in live:
        for scope in _branch_solutions(model, branch, env, size, starts):
            found.add(model, cstep, branch, scope)
    tried = np.zeros(size, dtype=bool)
    for _ in range(BATCH_NEWTON.pilots - 1 if searched else 0):
        waiting = np.flatnonzero((found.count == 0) & ~tried)
        if not waiting.size:
            break
        tried[waiting[0]] = True
        seed = _pilot(model, cstep, env, regime, int(waiting[0]))
        if not seed:
            continue
        seeds[index].append(seed)
        unsolved = found.count == 0
        for branch in live:
            if branch.strategy == NEWTON_MULTI_START:
                for scope in _newton_solutions(branch, env, size, [seed], unsolved):
                    found.add(model, cstep, branch, scope, unsolved)
    ambiguous = found.count > 1
    failed = found.count == 0
    for n in names:
        env[n] = np.where(ambiguous | failed, np.nan, found.chosen[n])
        if ambiguous.any():
            result.ambiguous[n] = int(ambiguous.sum())
    if searched and failed.any():  # Newton proves nothing: the block's own search decides
        result.one_at_a_time[", ".join(names)] = int(failed.sum())
        _scalar_fallback(model, cstep, env, regime, size, result, np.flatnonzero(failed))
    elif failed.any():
        for n in names:
            result.failed[n] = int(failed.sum())
    if any(branch.labels for branch in cstep.block_branches):
        result.regimes[names[0]] = found.labels


class _Found:
    """The distinct verified solutions of a block found so far, per element: the first
    one's values and regime labels, and how many there are."""

    def __init__(self, names, size):
        self.names, self.size = names, size
        self.chosen = {n: np.full(size, np.nan) for n in names}
        self.count = np.zeros(size, dtype=int)
        self.labels = np.full(size, "", dtype=object)

    def add(self, model, cstep, branch, scope, within=None):
        """Count ``scope`` where it is a solution (every quantity physical, the regime's
        inequalities held, every relation within ``SCAN.accept``) and new, among the
        elements ``within`` (default all)."""
        size = self.size
        ok = np.ones(size, dtype=bool) if within is None else within.copy()
        for n in self.names:
            ok &= _admits(model, n, np.broadcast_to(scope[n], (size,)), n in cstep.provisional)
        ok &= _holds(branch.guards, scope, size)
        for lhs, rhs in branch.all_equations:
            left = np.broadcast_to(np.asarray(lhs(scope), dtype=float), (size,))
            right = np.broadcast_to(np.asarray(rhs(scope), dtype=float), (size,))
            scale = np.maximum(np.abs(left), np.abs(right))
            ok &= np.abs(left - right) <= SCAN.accept * np.where(scale == 0, 1, scale)
        values = {n: np.broadcast_to(np.asarray(scope[n], dtype=float), (size,))
                  for n in self.names}
        same = ok & (self.count > 0)
        for n in self.names:
            same &= np.isclose(values[n], self.chosen[n], rtol=BLOCK.distinct_rtol, atol=0)
        new = ok & ~same
        first = new & (self.count == 0)
        self.count += new
        for n in self.names:
            self.chosen[n] = np.where(first, values[n], self.chosen[n])
        if branch.labels:
            self.labels = np.where(first, ", ".join(branch.labels), self.labels)


def _typical(model, names) -> dict[str, float]:
    """The block's typical values in base units (the first start of its own search)."""
    return {n: (model.variables[n].typical or 1.0) * model.variables[n].to_base for n in names}


def _pilot(model, cstep, env, regime, i: int):
    """The block's values at element ``i``, solved by the block's own search: a dict,
    empty if it has none, ``None`` if it has several."""
    scalar = _element(env, i)
    try:
        run_block(model, cstep, scalar, regime)
    except AmbiguousSolution:
        return None
    except ChalkError:
        return {}
    return {n: scalar[n] for n in cstep.step.variables}


def _element(env, i: int) -> dict:
    """Element ``i`` of every array in ``env``, as a scalar environment."""
    return {k: (float(v[i]) if isinstance(v, np.ndarray) and v.ndim else v)
            for k, v in env.items()}


def _subset(env, index: np.ndarray, size: int) -> dict:
    """The elements ``index`` of every per-element array in ``env`` (scalars as they are)."""
    if index.size == size:  # every element, in order (Newton's first steps)
        return dict(env)
    return {k: (v[index] if isinstance(v, np.ndarray) and v.shape == (size,) else v)
            for k, v in env.items()}


def _torn_residuals(branch, scope, size) -> np.ndarray:
    """Relative residuals of ``branch``'s torn relations, shape (torn, size), with the
    tears already in ``scope`` and the rest solved from them by the closed forms."""
    for name, fn in branch.sequence:
        value = np.asarray(fn(scope), dtype=float)
        scope[name] = np.where(value > 0, value, np.nan)
    rows = []
    for lhs, rhs in branch.residuals:
        left = np.asarray(lhs(scope), dtype=float)
        right = np.asarray(rhs(scope), dtype=float)
        total = np.abs(left) + np.abs(right)
        rows.append(np.broadcast_to((left - right) / np.where(total == 0, 1, total), (size,)))
    return np.vstack(rows)


def _branch_solutions(model, branch, env, size, starts=()):
    """Every solution of one regime combination, as scopes of arrays (NaN where an
    element has no such solution); several tears are solved by Newton from ``starts``
    (each a dict of base-unit values of the block's quantities)."""
    if not branch.tears:
        scope = dict(env)
        for name, fn in branch.sequence:
            scope[name] = np.asarray(fn(scope), dtype=float)
        return [scope]
    if len(branch.tears) > 1:
        return _newton_solutions(branch, env, size, starts)
    tear = branch.tears[0]

    def residual(log_x):
        scope = dict(env)
        scope[tear] = np.exp(log_x)
        return _torn_residuals(branch, scope, size)[0]

    scopes = []
    for root in _sign_changes(residual, search_range(model.variables[tear]), size):
        scope = dict(env)
        scope[tear] = np.exp(root)
        for name, fn in branch.sequence:
            scope[name] = np.asarray(fn(scope), dtype=float)
        scopes.append(scope)
    return scopes


def _sign_changes(residual, span, size) -> list[np.ndarray]:
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
    for root in _sign_changes(residual, search_range(model.variables[name]), size):
        value = np.exp(root)
        ok = _admits(model, name, value, name in cstep.provisional) & (
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
        _scalar_fallback(model, cstep, env, regime, size, result, np.flatnonzero(none))


def _newton_solutions(branch, env, size, starts, within=None):
    """The solutions batched Newton reaches from each start, as scopes of arrays (NaN
    where it did not converge), for the elements ``within`` (default all). An element
    solved from one start is not started again from the next: like the block's own
    multi-start search, this proves nothing unique."""
    if len(branch.residuals) != len(branch.tears):
        return []  # a degenerate combination: the block's own search handles it
    tears = branch.tears

    def residual(log_x, index):
        scope = _subset(env, index, size)
        scope.update(zip(tears, np.exp(log_x), strict=True))
        return _torn_residuals(branch, scope, index.size)

    scopes = []
    unsolved = np.ones(size, dtype=bool) if within is None else within.copy()
    for start in starts:
        if not unsolved.any():
            break
        begin = np.log(np.array([[start[t]] for t in tears], dtype=float)).repeat(size, 1)
        begin[:, ~unsolved] = np.nan
        log_x, solved = batched_newton.solve(residual, begin, NEWTON.accept, BLOCK.polish_above)
        unsolved &= ~solved
        scope = dict(env)
        scope.update(zip(tears, np.where(solved, np.exp(log_x), np.nan), strict=True))
        _torn_residuals(branch, scope, size)
        scopes.append(scope)
    return scopes


def _scalar_fallback(model, cstep, env, regime, size, result, elements=None):
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
        scalar = _element(env, i)
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
