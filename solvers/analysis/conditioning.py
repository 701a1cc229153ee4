"""How much a closed-form answer can be trusted in floating point.

A closed form can be exact and still useless: solving a saturated relation for
the quantity it has stopped depending on (the experts a large batch touches,
say) amplifies the last bits of the inputs into the whole answer. The
elasticity of the answer to each input (d ln out / d ln in) measures that: a
value above 1e9 means no digit of the answer survives, and the step is refused
with an explanation; above 1e5 it is kept with a warning in the derivation (both
declared in solvers.tolerances.CONDITIONING).

Every path measures the same way and applies the same thresholds: a closed form by
a one-sided difference (:func:`elasticities`), a scalar solve step (:func:`check`)
through :func:`verdict` and the vectorised run through :func:`refused`, per element;
a simultaneous block from its log-space Jacobian (:func:`block_elasticities`, one
point or a stack of them), in solve (solvers.execution.blocks) through :func:`verdict`
and in the vectorised run (solvers.bulk.vectorised_blocks) through
:func:`block_verdicts`. So a sweep point or a Monte Carlo sample that ``solve`` would
refuse is not taken from the run (chalk.compiled then asks ``solve``).

The same measure says when relations leave a direction open at a solution
(solvers.analysis.at_solution): one along which rounding moves the quantities
``CONDITIONING.refuse`` times as much is not fixed by them, whether the singular value
is exactly 0 or merely that small. Ill-conditioning and flatness are one rule.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from chalk.solvers.tolerances import CONDITIONING
from chalk.symbolic.errors import IllConditioned


def elasticities(evaluator, env: dict, inputs, value) -> dict[str, np.ndarray]:
    """d ln(answer) / d ln(input) for each positive input, by a one-sided difference.

    Works elementwise: ``env`` may hold arrays (one element per point) and ``value``
    is then the answer per point. An input that is not positive (or not a float)
    measures 0.

    The step starts at ``CONDITIONING.step`` and shrinks (by ``CONDITIONING.shrink``,
    down to ``CONDITIONING.smallest_step``) wherever it moves ln(answer) by more than
    ``CONDITIONING.secant`` or out of the closed form's domain: a step that large
    measures a secant, not the slope, and near a saturation it crosses the edge (seed
    588 of tests/test_one_answer.py: 4e-9 below saturation, an elasticity of 2e6, was
    read as infinite by a step of 1e-7 that crossed it, and solve refused an answer of
    which about ten digits survive). Where even the smallest step leaves the domain, the
    answer sits closer to an edge than that step, and the elasticity is infinite.
    """
    value = np.asarray(value, dtype=float)
    steps = _steps()
    out = {}
    for name in inputs:
        x = env.get(name)
        if not isinstance(x, (float, np.ndarray)):
            continue
        x = np.asarray(x, dtype=float)
        usable = np.isfinite(x) & (x > 0)
        if not usable.any():
            continue
        found = np.full(np.broadcast(x, value).shape, np.inf)
        pending = np.broadcast_to(usable, found.shape).copy()
        evaluated = False
        for i, step in enumerate(steps):
            if not pending.any():
                break
            measured = _secant(evaluator, env, name, x, step, value)
            if measured is not None:
                evaluated = True
                ratio, change = measured
                last = i == len(steps) - 1
                settled = pending & (last | (np.abs(change) <= CONDITIONING.secant))
                found = np.where(settled, ratio, found)
                pending &= ~settled
        if evaluated:  # (an evaluator that fails at every step gives no measure)
            out[name] = np.where(usable, found, 0.0)
    return out


@lru_cache(maxsize=1)
def _steps() -> tuple[float, ...]:
    """step, step * shrink, ... down to smallest_step (counted, not compared: 1e-10 * 1e-3
    need not round to 1e-13)."""
    count = round(math.log(CONDITIONING.step / CONDITIONING.smallest_step)
                  / -math.log(CONDITIONING.shrink))
    return tuple(CONDITIONING.step * CONDITIONING.shrink ** i for i in range(count + 1))


def _elasticities_at(evaluator, env: dict, inputs, value: float) -> dict[str, float]:
    """:func:`elasticities` at one point (``env`` of floats, ``value`` a float): the same
    steps and the same arithmetic (numpy's logarithm on float64 scalars), without the
    arrays that hold many points, which cost more than the measure at one."""
    with np.errstate(all="ignore"):
        return _measured_at(evaluator, env, inputs, value)


def _measured_at(evaluator, env: dict, inputs, value: float) -> dict[str, float]:
    """The body of :func:`_elasticities_at`, with floating-point warnings silenced."""
    steps = _steps()
    last = len(steps) - 1
    out = {}
    log_value = np.log(np.float64(value))
    trial = dict(env)  # one input moved at a time, put back after
    for name in inputs:
        x = env.get(name)
        if not isinstance(x, float) or not (math.isfinite(x) and x > 0):
            continue  # not a float, or nothing to measure: as elasticities skips it
        found, evaluated = math.inf, False
        for i, step in enumerate(steps):
            moved_x = x * (1 + step)
            trial[name] = moved_x
            try:
                moved = evaluator(trial)
            except (ArithmeticError, ValueError, TypeError):
                continue
            evaluated = True
            if type(moved) is not float and (isinstance(moved, complex)
                                             or np.iscomplexobj(moved)):
                moved = moved.real if moved.imag == 0 else math.nan
            moved = np.float64(moved)
            if not (math.isfinite(moved) and moved > 0):
                change = math.inf  # off the domain: not a slope (shrunk, or infinite)
                ratio = math.inf
            else:
                change = np.log(moved) - log_value
                ratio = change / np.log(np.float64(moved_x) / x)
            if i == last or abs(change) <= CONDITIONING.secant:
                found = float(ratio)
                break
        trial[name] = x
        if evaluated:
            out[name] = found
    return out


def _secant(evaluator, env, name, x, step, value):
    """(elasticity, change in ln(answer)) from moving ``name`` up by ``step`` (relative),
    inf where the moved answer is not a positive finite number; None if the evaluator
    fails outright."""
    trial = dict(env)
    moved_x = x * (1 + step)
    trial[name] = float(moved_x) if moved_x.ndim == 0 else moved_x
    try:
        with np.errstate(all="ignore"):
            moved = np.asarray(evaluator(trial))
    except (ArithmeticError, ValueError, TypeError):
        return None
    if np.iscomplexobj(moved):
        moved = np.where(moved.imag == 0, moved.real, np.nan)
    moved = moved.astype(float)
    with np.errstate(all="ignore"):
        change = np.log(moved) - np.log(value)
        # over the step actually taken (x * (1 + step) is rounded: 1e-3 of a 1e-13 step)
        ratio = change / np.log(moved_x / x)
    defined = np.isfinite(moved) & (moved > 0)
    return np.where(defined, ratio, np.inf), np.where(defined, change, np.inf)


def _measured(evaluator, env: dict, inputs, value) -> tuple[list[str], np.ndarray]:
    """The inputs measured and their |elasticity|, stacked (one row per input); every
    row 0 where the answer is not positive (nothing to lose digits of)."""
    value = np.asarray(value, dtype=float)
    found = elasticities(evaluator, env, inputs, value)
    if not found:
        return [], np.zeros((0, *value.shape))
    stacked = np.abs(np.stack(np.broadcast_arrays(value, *found.values())[1:]))
    positive = np.isfinite(value) & (value > 0)
    return list(found), np.where(positive, stacked, 0.0)


def verdict(name: str, elasticity: float, worst_input: str, relations) -> str:
    """The conditioning rule for one answer, on every path: raises IllConditioned when
    no digit of it survives (an elasticity at or above ``CONDITIONING.refuse``); a
    warning note above ``CONDITIONING.warn``; else "". ``relations`` are the names of
    what was solved (one relation, or a block of simultaneous ones)."""
    if elasticity >= CONDITIONING.refuse:
        what = (f"relation {relations[0]} barely depends" if len(relations) == 1 else
                f"the simultaneous relations {', '.join(relations)} barely depend")
        raise IllConditioned(name, f"{what} on it here, so rounding in {worst_input} swamps "
                             f"it (elasticity {elasticity:.2g}); pin {name} or use values "
                             "further from saturation")
    if elasticity >= CONDITIONING.warn:
        return (f"ill-conditioned: a relative change in {worst_input} moves {name} "
                f"{elasticity:.2g} times as much, so trailing digits are not meaningful")
    return ""


def check(name: str, relation: str, evaluator, env: dict, inputs, value: float) -> str:
    """A warning note, or "" ; raises IllConditioned when no digit of the answer survives."""
    if not value > 0:
        return ""
    if isinstance(value, float) and all(isinstance(env.get(n), float | None) for n in inputs):
        found = _elasticities_at(evaluator, env, inputs, value)
        names = list(found)
        # every row 0 where the answer is not finite, as _measured has it
        stacked = [abs(e) if math.isfinite(value) else 0.0 for e in found.values()]
    else:
        names, stacked = _measured(evaluator, env, inputs, value)
    if not names:
        return ""
    i = int(np.argmax(stacked))
    return verdict(name, float(stacked[i]), names[i], (relation,))


def refused(evaluator, env: dict, inputs, value) -> np.ndarray:
    """Per element of ``value`` (the answers over arrays in ``env``), whether
    :func:`check` would refuse it."""
    names, stacked = _measured(evaluator, env, inputs, value)
    if not names:
        return np.zeros(np.shape(value), dtype=bool)
    return stacked.max(axis=0) >= CONDITIONING.refuse


def block_elasticities(own: np.ndarray, given: np.ndarray):
    """Elasticities of a block's quantities, and how far rounding reaches along each of
    its directions, from log-space Jacobian rows (solvers.analysis.jacobian).

    Parameters
    ----------
    own : array (..., r, k)
        Rows of the r relations over the k quantities solved for (one point, or a stack).
    given : array (..., r, m)
        The same rows over the m inputs.

    Returns
    -------
    elasticity : array (..., k, m)
        d ln(quantity) / d ln(input), ``-own⁺ given``; not finite where ``own`` is
        singular.
    reach : array (..., k)
        Per right singular direction of ``own`` (the rows of ``directions``), how many
        times a relative rounding moves the quantities along it: the largest of the
        inputs' pull on it and a relation's own rounding, over its singular value. A
        relation's row is ``d(lhs - rhs) / (|lhs| + |rhs|)``, so rounding one side by
        ρ moves it by ρ/2 at a solution: each relation counts as an input of weight
        1/2. Infinite along a direction ``own`` has no singular value for (fewer
        relations than quantities) or a zero one.
    directions : array (..., k, k)
        The right singular vectors, one per row.
    """
    u, singular, directions = np.linalg.svd(own)
    count = singular.shape[-1]
    u = u[..., :count]  # (..., r, p): the left vectors of the singular values
    with np.errstate(all="ignore"):
        pull = np.abs(np.swapaxes(u, -1, -2) @ given)  # (..., p, m)
        push = np.maximum(pull.max(axis=-1, initial=0.0), np.abs(u).max(axis=-2) / 2)
        reach = np.where(singular > 0, push / singular, np.inf)
        # -V Σ⁻¹ Uᵀ given, over the directions that have a singular value
        scaled = (np.swapaxes(u, -1, -2) @ given) / singular[..., None]
        elasticity = -np.swapaxes(directions[..., :count, :], -1, -2) @ scaled
    missing = directions.shape[-2] - count
    if missing:
        reach = np.concatenate([reach, np.full((*reach.shape[:-1], missing), np.inf)],
                               axis=-1)
    return elasticity, reach, directions


def block_verdicts(own: np.ndarray, given: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per point, what ``solve`` makes of a block's solution there, as two masks:
    ``refused`` where an elasticity is at or above ``CONDITIONING.refuse``
    (:func:`verdict` raises IllConditioned), and ``flat`` elsewhere where a direction is
    left open (solve keeps one point of the family and decides over the whole question
    whether a target moves along it); see :func:`block_elasticities`.

    Parameters
    ----------
    own, given : arrays (r, k, n) and (r, m, n)
        The block's log-space Jacobian rows over its k quantities and its m inputs at
        each of n points (the points last, as solvers.analysis.jacobian.log_jacobians
        gives them).

    Most points are far from either line, and a bound settles them without a singular
    value decomposition: every elasticity and every direction's reach is at most
    ``max(|given|, 1/2) / σ_min``, and ``1/σ_min <= |own|^(k-1) / |det own|`` (Frobenius
    norms; the other k - 1 singular values are at most ``|own|``), so where that bound
    is below the line nothing is refused or flat. The rest are measured in full.
    """
    r, k, n = own.shape
    refused = np.zeros(n, dtype=bool)
    flat = np.zeros(n, dtype=bool)
    if r == k:
        with np.errstate(all="ignore"):
            bound = (np.maximum(_frobenius(given), 0.5) * _frobenius(own) ** (k - 1)
                     / np.abs(_determinant(own)))
        doubtful = ~(bound < CONDITIONING.refuse)  # nan is doubtful too
    else:
        doubtful = np.ones(n, dtype=bool)
    if not doubtful.any():
        return refused, flat
    refused[doubtful], flat[doubtful] = measured_verdicts(own[..., doubtful],
                                                         given[..., doubtful])
    return refused, flat


def measured_verdicts(own: np.ndarray, given: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`block_verdicts` measured in full at every point (no bound first)."""
    elasticity, reach, _ = block_elasticities(np.moveaxis(own, -1, 0),
                                              np.moveaxis(given, -1, 0))
    size = elasticity.shape[-2] * elasticity.shape[-1]
    largest = (np.abs(elasticity).reshape(-1, size).max(axis=-1) if size
               else np.zeros(reach.shape[0]))
    finite = np.isfinite(largest)
    refused = finite & (largest >= CONDITIONING.refuse)
    return refused, ~refused & (~finite | (reach >= CONDITIONING.refuse).any(axis=-1))


def _frobenius(rows: np.ndarray) -> np.ndarray:
    """The Frobenius norm of each matrix ``rows[:, :, i]``."""
    return np.sqrt(np.einsum("ijk,ijk->k", rows, rows))


def _determinant(rows: np.ndarray) -> np.ndarray:
    """The determinant of each square matrix ``rows[:, :, i]``: written out up to 3 by 3
    (a LAPACK call per matrix costs more than the arithmetic at that size)."""
    k = rows.shape[0]
    if k == 1:
        return rows[0, 0]
    if k == 2:
        return rows[0, 0] * rows[1, 1] - rows[0, 1] * rows[1, 0]
    if k == 3:
        (a, b, c), (d, e, f), (g, h, i) = rows
        return a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
    return np.linalg.det(np.moveaxis(rows, -1, 0))


def cannot_amplify(expr) -> bool:
    """Whether the sympy form ``expr`` is built from quantities and positive numbers by
    products, numeric powers, sums and max/min only. Every quantity is positive, so a
    term's elasticity to an input is its exponent, a sum's is its terms' averaged by
    their shares, and a max's or min's is its chosen argument's: bounded by the
    exponents whatever the values, so :func:`check` has nothing to find. A difference,
    a quantity in an exponent or a transcendental function can amplify rounding."""
    from sympy import Max, Min

    if expr.is_Symbol:
        return True
    if expr.is_Number:
        return bool(expr > 0)
    if expr.is_Pow:
        return bool(expr.exp.is_Number) and cannot_amplify(expr.base)
    if expr.is_Mul or expr.is_Add or isinstance(expr, (Max, Min)):
        return all(cannot_amplify(arg) for arg in expr.args)
    return False


def measured_inputs(expr, inputs) -> tuple[str, ...]:
    """The ``inputs`` whose elasticity :func:`check` must measure for the closed form
    ``expr`` (a product of factors): those in a factor that could amplify rounding. In the
    factors that cannot (:func:`cannot_amplify`) an input's elasticity is at most the sum
    of its exponents there (:func:`_exponent_bound`), so one found only in such factors
    is measured only if that bound reaches ``CONDITIONING.warn``, where the measure could
    change what :func:`check` says; an input not in ``expr`` measures 0."""
    factors = expr.args if expr.is_Mul else (expr,)
    amplifying: set[str] = set()
    bound: dict[str, float] = {}
    for factor in factors:
        if cannot_amplify(factor):
            for s in factor.free_symbols:
                bound[s.name] = bound.get(s.name, 0.0) + _exponent_bound(factor, s)
        else:
            amplifying |= {s.name for s in factor.free_symbols}
    return tuple(n for n in inputs
                 if n in amplifying or bound.get(n, 0.0) >= CONDITIONING.warn)


def _exponent_bound(expr, symbol) -> float:
    """The largest elasticity to ``symbol`` a form :func:`cannot_amplify` accepts can
    have: its exponent in a power, summed over a product's factors, the largest of a
    sum's terms (their shares average them) or of a max's or min's arguments."""
    if expr.is_Symbol:
        return 1.0 if expr == symbol else 0.0
    if expr.is_Number:
        return 0.0
    if expr.is_Pow:
        return abs(float(expr.exp)) * _exponent_bound(expr.base, symbol)
    parts = [_exponent_bound(arg, symbol) for arg in expr.args]
    return sum(parts) if expr.is_Mul else max(parts)
