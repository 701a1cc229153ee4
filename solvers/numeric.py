"""Numeric root-finding for what has no closed form.

Every quantity is positive, so unknowns are searched in log space, which makes
the search scale-free (a byte count of 1e11 and a time of 1e-3 s are equally
easy) and keeps iterates positive. Residuals are relative, ``(l - r)/(|l|+|r|)``.
A search that does not converge raises; it never returns its last iterate.
SciPy is imported here only, when a block actually needs it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

Side = Callable[[Mapping[str, float]], float]

TOLERANCE = 1e-12


def relative_residual(lhs: float, rhs: float) -> float:
    scale = abs(lhs) + abs(rhs)
    return 0.0 if scale == 0 else (lhs - rhs) / scale


def residual_at(lhs: Side, rhs: Side, scope: Mapping[str, float]) -> float:
    """The relative residual of ``lhs = rhs`` at ``scope``; NaN where a side is undefined."""
    try:
        with np.errstate(all="ignore"):
            value = relative_residual(float(lhs(scope)), float(rhs(scope)))
    except (ArithmeticError, ValueError, TypeError):
        return math.nan
    return value if math.isfinite(value) else math.nan


ROOT_ACCEPT = 1e-6  # |relative residual| at a refined sign change that counts as a root


def roots_scalar(f: Callable[[float], float], low: float = 1e-30, high: float = 1e30,
                 points: int = 481, why_undefined: Callable[[float], object] | None = None
                 ) -> list[float]:
    """Every root of ``f(ln x)`` for x in ``[low, high]``: sign changes on a grid, refined by
    brentq; a sign change across a pole is not a root.

    ``why_undefined(ln x)`` names what puts ``f`` off its domain (NaN) at a point. Where two
    neighbouring grid points are undefined for different reasons, the domain may have an
    island between them narrower than the grid step; it is searched for by bisection.
    """
    from scipy.optimize import brentq

    grid = list(np.linspace(math.log(low), math.log(high), points))
    grid, values, edges = _refined(f, grid, [f(g) for g in grid], why_undefined)
    # the residual can vanish at a domain edge itself (a quantity diverging there, say)
    roots = [math.exp(x) for x, fx in edges if math.isfinite(fx) and abs(fx) < 1e-8]
    for a, b, fa, fb in zip(grid[:-1], grid[1:], values[:-1], values[1:], strict=True):
        if math.isnan(fa) or math.isnan(fb):
            continue
        if fa == 0:
            roots.append(math.exp(a))
        elif fa * fb < 0:
            try:
                root = brentq(f, a, b, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=200)
            except (ValueError, RuntimeError):  # NaN inside the bracket, or no convergence
                continue
            # A sign change across a pole leaves |f| near 1 (relative residuals are bounded
            # by 1); a real root leaves only rounding, which a steep residual (a root just
            # inside a domain edge) amplifies well past 1e-9, so the test is loose.
            if abs(f(root)) < ROOT_ACCEPT:
                roots.append(math.exp(root))
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
                and magnitude[i] < 0.999):
            continue
        if values[i - 1] * values[i] < 0 or values[i] * values[i + 1] < 0:
            # A crossing next to this point is bracketed above; polishing |f| instead
            # would stop wherever a flat residual first dips below the threshold.
            continue
        if magnitude[i] < 1e-12:
            touching.append(math.exp(grid[i]))
            continue
        best = minimize_scalar(lambda x: abs(f(x)) if math.isfinite(f(x)) else math.inf,
                               bounds=(grid[i - 1], grid[i + 1]), method="bounded",
                               options={"xatol": 1e-14})
        if best.fun < 1e-10:
            touching.append(math.exp(best.x))
    crossing = _distinct(roots, rtol=1e-6)
    # A bracketed root is exact to the last bits; a polished minimum is not, so it is
    # kept only where no bracketed root lies.
    extra = [t for t in _distinct(touching, rtol=1e-6)
             if not any(_close(t, r, 1e-6) for r in crossing)]
    return sorted(crossing + extra)


def _refined(f, grid: list, values: list, why_undefined=None, halvings: int = 44,
             samples: int = 33) -> tuple[list, list, list]:
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
            inside = _find_island(f, why_undefined, a, b, depth=48)
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


def _domain_edge(f, inside: float, outside: float, steps: int = 60) -> float:
    """The last point from ``inside`` (defined) towards ``outside`` (undefined) where ``f``
    is still defined, by bisection."""
    for _ in range(steps):
        middle = 0.5 * (inside + outside)
        if math.isnan(f(middle)):
            outside = middle
        else:
            inside = middle
    return inside


def solve_tears(residuals: Callable[[dict], list[float]], names: Sequence[str],
                guesses: Mapping[str, float], starts: int = 32, seed: int = 0
                ) -> list[dict[str, float]]:
    """Distinct solutions of ``residuals(values) = 0`` over positive ``names``, multi-start."""
    from scipy.optimize import root

    def wrapped(y):
        values = {n: math.exp(min(v, 700.0)) for n, v in zip(names, y, strict=True)}
        out = residuals(values)
        return [v if math.isfinite(v) else 1.0 for v in out]

    centre = np.array([math.log(guesses.get(n, 1.0)) for n in names])
    rng = np.random.default_rng(seed)
    points = [centre] + [centre + rng.normal(0.0, 3.0, size=len(names)) for _ in range(starts)]
    # more equations than unknowns (a degenerate block with a tear held): least squares
    square = len(wrapped(centre)) == len(names)
    method, options = ("hybr", {"xtol": 1e-14}) if square else ("lm", {"xtol": 1e-14})
    found = []
    for start in points:
        result = root(wrapped, start, method=method, options=options)
        if np.any(np.abs(result.x) > 700):
            continue  # ran off to 0 or infinity
        if max(abs(v) for v in wrapped(result.x)) < 1e-10:
            values = {n: math.exp(v) for n, v in zip(names, result.x, strict=True)}
            if not any(all(_close(values[n], other[n]) for n in names) for other in found):
                found.append(values)
    return found


def roots_1d(equation: tuple[Side, Side], name: str, env: Mapping[str, float],
             low: float = 1e-30, high: float = 1e30, points: int = 241) -> list[float]:
    """Every sign change of the relative residual in ``[low, high]``, refined by brentq."""
    lhs, rhs = equation
    scope = dict(env)

    def f(log_x):
        scope[name] = math.exp(log_x)
        return residual_at(lhs, rhs, scope)

    return roots_scalar(f, low, high, points)


def _close(a: float, b: float, rtol: float = 1e-7) -> bool:
    return abs(a - b) <= rtol * max(abs(a), abs(b))


def _distinct(values: list[float], rtol: float = 1e-7) -> list[float]:
    out: list[float] = []
    for v in sorted(values):
        if not out or not _close(v, out[-1], rtol):
            out.append(v)
    return out
