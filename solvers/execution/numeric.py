"""Numeric root-finding for what has no closed form.

Every quantity is positive, so unknowns are searched in log space, which makes
the search scale-free (a byte count of 1e11 and a time of 1e-3 s are equally
easy) and keeps iterates positive. Residuals are relative, ``(l - r)/(|l|+|r|)``.
A search that does not converge raises; it never returns its last iterate.
SciPy is imported here only, when a block actually needs it. Every tolerance and
grid size is declared in solvers.tolerances (SCAN for the scan, NEWTON for the
multi-start search).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from chalk.solvers.tolerances import CONTINUATION, NEWTON, SCAN, STEPS

Side = Callable[[Mapping[str, float]], float]


def relative_residual(lhs: float, rhs: float) -> float:
    scale = abs(lhs) + abs(rhs)
    return 0.0 if scale == 0 else (lhs - rhs) / scale


def polish_root(lhs: Side, rhs: Side, scope: Mapping[str, float], name: str,
                value: float) -> float:
    """``value`` moved by a few Newton steps on ln x towards a root of ``lhs = rhs``.

    A closed form can be exact algebra and still lose digits in floating point (the
    quadratic formula when its discriminant nearly cancels); the relation itself,
    evaluated as written, does not. Each step is kept only if it lowers the relative
    residual, so a value already at the last bits stays as it is.
    """
    def residual(x):
        trial = dict(scope)
        trial[name] = x
        return residual_at(lhs, rhs, trial)

    x, rx = value, residual(value)
    if not math.isfinite(rx) or rx == 0 or value <= 0:
        return value
    h = STEPS.polish_log_step
    for _ in range(STEPS.polish_steps):
        slope = (residual(x * math.exp(h)) - rx) / h
        if not math.isfinite(slope) or slope == 0:
            break
        moved = x * math.exp(-rx / slope)
        r_moved = residual(moved)
        if not math.isfinite(r_moved) or abs(r_moved) >= abs(rx):
            break
        x, rx = moved, r_moved
    return x


def residual_at(lhs: Side, rhs: Side, scope: Mapping[str, float]) -> float:
    """The relative residual of ``lhs = rhs`` at ``scope``; NaN where a side is undefined."""
    try:
        with np.errstate(all="ignore"):
            value = relative_residual(float(lhs(scope)), float(rhs(scope)))
    except (ArithmeticError, ValueError, TypeError):
        return math.nan
    return value if math.isfinite(value) else math.nan


def roots_scalar(f: Callable[[float], float], low: float, high: float,
                 points: int = SCAN.points, why_undefined: Callable[[float], object] | None = None,
                 accept: float = SCAN.root_accept) -> list[float]:
    """Every root of ``f(ln x)`` for x in ``[low, high]``: sign changes on a grid, refined by
    brentq and then to (nearly) the best double of x; a sign change across a pole is not a
    root.

    ``accept`` is the largest ``|f|`` left at a refined sign change that counts as a root.
    ``why_undefined(ln x)`` names what puts ``f`` off its domain (NaN) at a point. Where two
    neighbouring grid points are undefined for different reasons, the domain may have an
    island between them narrower than the grid step; it is searched for by bisection.
    """
    grid = list(np.linspace(math.log(low), math.log(high), points))
    grid, values, edges = _refined(f, grid, [f(g) for g in grid], why_undefined)
    # the residual can vanish at a domain edge itself (a quantity diverging there, say)
    roots = [math.exp(x) for x, fx in edges if math.isfinite(fx) and abs(fx) < SCAN.edge_accept]
    for a, b, fa, fb in zip(grid[:-1], grid[1:], values[:-1], values[1:], strict=True):
        if math.isnan(fa) or math.isnan(fb):
            continue
        if fa == 0:
            roots.append(math.exp(a))
        elif fa * fb < 0:
            refined = _bracketed_root(f, a, b, fa, fb)
            # A sign change across a pole leaves |f| near 1 (relative residuals are bounded
            # by 1); a real root leaves only rounding, amplified by a steep residual.
            if refined is not None and abs(refined[1]) < accept:
                roots.append(math.exp(refined[0]))
    if values and values[-1] == 0:
        roots.append(math.exp(grid[-1]))
    # A residual can reach zero without crossing it: it touches zero (a saturating
    # relation flattens it) or meets it at a kink where a closed form leaves its domain.
    # Each local minimum of |f| on the grid is polished, so such solutions are found too
    # and several solutions are never silently cut to the one that happens to cross.
    from scipy.optimize import minimize_scalar

    magnitude = [abs(v) if math.isfinite(v) else math.inf for v in values]
    touching = []
    for i in range(1, len(grid) - 1):
        if not (magnitude[i] <= magnitude[i - 1] and magnitude[i] <= magnitude[i + 1]
                and magnitude[i] < SCAN.touch_floor):
            continue
        if values[i - 1] * values[i] < 0 or values[i] * values[i + 1] < 0:
            # A crossing next to this point is bracketed above; polishing |f| instead
            # would stop wherever a flat residual first dips below the threshold.
            continue
        if magnitude[i] < SCAN.touch_grid:
            touching.append(math.exp(grid[i]))
            continue
        # Polish towards zero on the signed residual, not |f|: if it passes zero, the
        # residual crosses and crosses back between grid points (two roots, batch round
        # trip seed 840), and each side of the point it reached brackets one.
        sign = 1.0 if values[i] > 0 else -1.0
        best = minimize_scalar(_signed, bounds=(grid[i - 1], grid[i + 1]), args=(f, sign),
                               method="bounded", options={"xatol": SCAN.touch_xatol})
        at_best = f(best.x)
        if math.isfinite(at_best) and at_best * values[i] < 0:
            for a, b, fa, fb in ((grid[i - 1], best.x, values[i - 1], at_best),
                                 (best.x, grid[i + 1], at_best, values[i + 1])):
                refined = _bracketed_root(f, a, b, fa, fb) if math.isfinite(fa + fb) else None
                if refined is not None and abs(refined[1]) < accept:
                    roots.append(math.exp(refined[0]))
        elif abs(at_best) < SCAN.touch_accept:
            touching.append(math.exp(best.x))
    crossing = _distinct(roots, rtol=SCAN.distinct_rtol)
    # A bracketed root is exact to the last bits; a polished minimum is not, so it is
    # kept only where no bracketed root lies.
    extra = [t for t in _distinct(touching, rtol=SCAN.distinct_rtol)
             if not any(_close(t, r, SCAN.distinct_rtol) for r in crossing)]
    return sorted(crossing + extra)


def _signed(x: float, f, sign: float) -> float:
    """``sign * f(x)``, infinite where ``f`` is undefined (a minimiser steps back)."""
    value = f(x)
    return sign * value if math.isfinite(value) else math.inf


def _bracketed_root(f, a: float, b: float, fa: float, fb: float
                    ) -> tuple[float, float] | None:
    """The root of ``f`` (on ln x) bracketed by ``[a, b]`` and ``f`` there, refined to
    neighbouring doubles of x; ``None`` if brentq fails (NaN inside the bracket, or no
    convergence).

    brentq stops within ``xtol`` of ln x, which can be several doubles of x from the root;
    next to a domain edge a steep residual is still large there (1e-6 where the best
    double leaves 1e-8), so its answer is bisected further before it is judged.
    """
    from scipy.optimize import brentq

    def value(log_x):
        try:
            return f(log_x)
        except ArithmeticError:  # exactly on a pole, which brentq's tolerance stepped past
            return math.nan

    try:
        root = brentq(f, a, b, xtol=SCAN.xtol, rtol=SCAN.rtol, maxiter=SCAN.maxiter)
    except (ValueError, RuntimeError):
        return None
    candidates = [(root, value(root))]
    # brentq's answer is within its tolerance of the root: bracket it tightly if that
    # holds, else bisect the whole grid interval (a few dozen more evaluations).
    width = 2 * (SCAN.xtol + SCAN.rtol * abs(root))
    low, high = max(a, root - width), min(b, root + width)
    f_low, f_high = value(low), value(high)
    if not (math.isfinite(f_low) and math.isfinite(f_high) and f_low * f_high <= 0):
        low, high, f_low, f_high = a, b, fa, fb
    # Halve until no double of x lies strictly between the ends (bounded, in case ln x
    # keeps resolving points that exp maps to the same x).
    for _ in range(SCAN.refine_halvings):
        middle = 0.5 * (low + high)
        if (f_low == 0 or f_high == 0 or not low < middle < high
                or math.exp(middle) in (math.exp(low), math.exp(high))):
            break
        f_middle = value(middle)
        if not math.isfinite(f_middle):
            break
        if (f_middle < 0) == (f_low < 0):
            low, f_low = middle, f_middle
        else:
            high, f_high = middle, f_middle
    candidates += [(low, f_low), (high, f_high)]
    candidates = [(x, fx) for x, fx in candidates if math.isfinite(fx)]
    return min(candidates, key=lambda pair: abs(pair[1])) if candidates else None


def _refined(f, grid: list, values: list, why_undefined=None,
             halvings: int = SCAN.edge_halvings, samples: int = SCAN.island_samples
             ) -> tuple[list, list, list]:
    """The grid with points added where the domain of ``f`` ends between grid points.

    A saturating relation crowds its features against the edge of the domain (a root
    1e-5 inside it, say), far below the grid step, so each edge is located by bisection
    and approached at halving distances. Between two undefined grid points a domain
    island is looked for when ``why_undefined`` is given, and sampled if found. Returns
    the new grid, its values and the edges as (ln x, f) pairs.
    """
    new_grid, new_values, edges = [grid[0]], [values[0]], []
    for a, b, fa, fb in zip(grid[:-1], grid[1:], values[:-1], values[1:], strict=True):
        added: list[float] = []
        if math.isnan(fa) != math.isnan(fb):
            inside, outside = (b, a) if math.isnan(fa) else (a, b)
            edge = _domain_edge(f, inside, outside)
            added = [edge, *_approach(edge, inside, halvings)]
            edges.append(edge)
        elif math.isnan(fa) and why_undefined is not None:
            inside = _find_island(f, why_undefined, a, b, depth=SCAN.island_depth)
            if inside is not None:
                left, right = _domain_edge(f, inside, a), _domain_edge(f, inside, b)
                middle = 0.5 * (left + right)
                added = [*_approach(left, middle, halvings), *_approach(right, middle, halvings),
                         *np.linspace(left, right, samples)]
                edges.extend((left, right))
        for x in sorted(float(x) for x in added):
            new_grid.append(x)
            new_values.append(f(x))
        new_grid.append(b)
        new_values.append(fb)
    return new_grid, new_values, [(x, f(x)) for x in edges]


def _approach(edge: float, towards: float, halvings: int) -> list[float]:
    """Points from ``edge`` towards ``towards`` at halving distances (closest first)."""
    return [edge + (towards - edge) * 0.5 ** k for k in range(halvings, 0, -1)]


def _find_island(f, why_undefined, a: float, b: float, depth: int) -> float | None:
    """A point of ``(a, b)`` where ``f`` is defined, if bisecting between the reasons the
    ends are undefined finds one; ``None`` when the reasons agree or no point turns up."""
    reason_a, reason_b = why_undefined(a), why_undefined(b)
    if reason_a == reason_b or depth == 0:
        return None
    middle = 0.5 * (a + b)
    if not math.isnan(f(middle)):
        return middle
    reason = why_undefined(middle)
    found = None
    if reason != reason_a:
        found = _find_island(f, why_undefined, a, middle, depth - 1)
    if found is None and reason != reason_b:
        found = _find_island(f, why_undefined, middle, b, depth - 1)
    return found


def _domain_edge(f, inside: float, outside: float, steps: int = SCAN.edge_bisections
                 ) -> float:
    """The last point from ``inside`` (defined) towards ``outside`` (undefined) where ``f``
    is still defined, by bisection."""
    for _ in range(steps):
        middle = 0.5 * (inside + outside)
        if math.isnan(f(middle)):
            outside = middle
        else:
            inside = middle
    return inside


def _in_logs(residuals: Callable[..., list[float]], names: Sequence[str]):
    """``residuals`` as a function of ``y = ln x`` over ``names`` (and any further
    arguments, passed on after the values), returning an array. Off the domain a
    relative residual is as large as it can be (1), not NaN, so an iteration can still
    step back; ``y`` is capped at ``NEWTON.max_log`` so ``exp`` cannot overflow."""
    def wrapped(y, *more):
        values = {n: math.exp(min(v, NEWTON.max_log)) for n, v in zip(names, y, strict=True)}
        return np.array([v if math.isfinite(v) else 1.0 for v in residuals(values, *more)])

    return wrapped


def _from_logs(names: Sequence[str], y) -> dict[str, float]:
    return {n: math.exp(v) for n, v in zip(names, y, strict=True)}


def solve_tears(residuals: Callable[[dict], list[float]], names: Sequence[str],
                guesses: Mapping[str, float], starts: int = NEWTON.starts,
                seed: int = NEWTON.seed) -> list[dict[str, float]]:
    """Distinct solutions of ``residuals(values) = 0`` over positive ``names``, multi-start."""
    from scipy.optimize import root

    wrapped = _in_logs(residuals, names)
    centre = np.array([math.log(guesses.get(n, 1.0)) for n in names])
    rng = np.random.default_rng(seed)
    points = [centre] + [centre + rng.normal(0.0, NEWTON.spread, size=len(names))
                         for _ in range(starts)]
    # more equations than unknowns (a degenerate block with a tear held): least squares
    square = len(wrapped(centre)) == len(names)
    method = "hybr" if square else "lm"
    found = []
    for start in points:
        result = root(wrapped, start, method=method, options={"xtol": NEWTON.xtol})
        if np.any(np.abs(result.x) > NEWTON.max_log):
            continue  # ran off to 0 or infinity
        if max(abs(v) for v in wrapped(result.x)) < NEWTON.accept:
            values = _from_logs(names, result.x)
            if not any(all(_close(values[n], other[n]) for n in names) for other in found):
                found.append(values)
    return found


def follow_path(residuals: Callable[[dict, dict], list[float]], names: Sequence[str],
                env: Mapping[str, float], start_env: Mapping[str, float],
                start: Mapping[str, float]) -> dict[str, float] | None:
    """A solution of ``residuals(env, values) = 0`` over positive ``names``, followed from
    ``start`` at ``start_env`` (a homotopy; ``None`` if the path is lost).

    Every positive entry of ``env`` that ``start_env`` also holds moves from its start
    value to its value in ``env`` along a straight line in ln x as t goes from 0 to 1;
    at each t the equations minus (1 - t) times their residual at the start are solved
    by Newton (scipy.optimize.root) from the previous point, so the start need not be a
    solution itself (its regime may differ). Steps in t follow ``CONTINUATION``.
    """
    from scipy.optimize import root

    moving = [k for k, v in env.items() if k not in names and isinstance(v, float)
              and v > 0 and start_env.get(k, 0) > 0]
    low = np.array([math.log(start_env[k]) for k in moving])
    high = np.array([math.log(env[k]) for k in moving])

    def at(t):
        here = dict(env)
        here.update(zip(moving, np.exp(low + t * (high - low)), strict=True))
        return here

    equations = _in_logs(lambda values, t: residuals(at(t), values), names)

    y = np.array([math.log(start[n]) for n in names])
    offset = equations(y, 0.0)
    if offset.shape != y.shape:
        return None  # not square: the path is not defined
    t, step = 0.0, CONTINUATION.first_step
    while t < 1.0:
        goal = min(1.0, t + step)
        result = root(lambda z, goal=goal: equations(z, goal) - (1.0 - goal) * offset, y,
                      method="hybr", options={"xtol": NEWTON.xtol})
        moved = float(np.max(np.abs(result.x - y))) if result.x.size else 0.0
        held = np.max(np.abs(equations(result.x, goal) - (1.0 - goal) * offset))
        if held < NEWTON.accept and moved <= CONTINUATION.max_jump:
            y, t = result.x, goal
            step = min(2.0 * step, CONTINUATION.max_step)
        else:
            step /= 2.0
            if step < CONTINUATION.min_step:
                return None
    if np.any(np.abs(y) > NEWTON.max_log) or np.max(np.abs(equations(y, 1.0))) >= NEWTON.accept:
        return None
    return _from_logs(names, y)


def solve_underdetermined(residuals: Callable[[dict], list[float]], names: Sequence[str],
                          starts: Sequence[Mapping[str, float]]) -> dict[str, float] | None:
    """A point where ``residuals(values) = 0`` over positive ``names`` that may outnumber
    the equations (trust-region least squares in ln x, from each start in turn; the
    first that reaches one within ``NEWTON.accept``)."""
    from scipy.optimize import least_squares

    wrapped = _in_logs(residuals, names)
    for start in starts:
        y0 = np.array([math.log(start[n]) for n in names])
        result = least_squares(wrapped, y0, method="trf", xtol=NEWTON.xtol, ftol=NEWTON.xtol,
                               gtol=NEWTON.xtol,
                               max_nfev=CONTINUATION.least_squares_evaluations)
        if np.all(np.abs(result.x) <= NEWTON.max_log) and np.max(
                np.abs(wrapped(result.x))) < NEWTON.accept:
            return _from_logs(names, result.x)
    return None


def roots_1d(equation: tuple[Side, Side], name: str, env: Mapping[str, float],
             low: float, high: float, points: int = SCAN.points) -> list[float]:
    """Every root of the relative residual for ``name`` in ``[low, high]`` (base units, the
    quantity's plausible range): sign changes refined by brentq, and touching zeros."""
    lhs, rhs = equation
    scope = dict(env)

    def f(log_x):
        scope[name] = math.exp(log_x)
        return residual_at(lhs, rhs, scope)

    return roots_scalar(f, low, high, points)


def _close(a: float, b: float, rtol: float = NEWTON.distinct_rtol) -> bool:
    return abs(a - b) <= rtol * max(abs(a), abs(b))


def _distinct(values: list[float], rtol: float = NEWTON.distinct_rtol) -> list[float]:
    out: list[float] = []
    for v in sorted(values):
        if not out or not _close(v, out[-1], rtol):
            out.append(v)
    return out
