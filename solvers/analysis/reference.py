"""A consistent reference point of a model, where non-monomial relations are linearised.

Products of powers have the same log-space Jacobian row everywhere; a sum, a
``max`` or a saturating curve does not, and its row must be taken at a point
where every relation holds: two sums that agree only on the solution set (the
same weights-to-KV split reached two ways, say) look independent anywhere else.
The point is found by Gauss-Newton in log space from each quantity's typical
value, nudged at random so that it is generic (nothing balanced exactly), and
computed once per model. Each step is the smallest weighted move that satisfies
the linearised relations, with inputs far stiffer than derived quantities: the
result is close to evaluating the derived quantities forwards from typical
inputs (so a saturating curve is met where its inputs put it, not pushed to its
plateau by the cheapest move). Where such a step overshoots (the linearisation of a
difference of nearly equal terms), it is damped (Levenberg-Marquardt) rather than
halved along its own direction.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from chalk.solvers.analysis.gradient import compile_log_gradient
from chalk.solvers.tolerances import REFERENCE
from chalk.symbolic.logspace import log_row
from chalk.symbolic.model import MODELS_KEPT, Model
from chalk.symbolic.relations import continuous


@dataclass(frozen=True)
class ReferencePoint:
    """Base-unit values of every quantity at which every relation holds.

    ``residual`` is the largest ``|ln lhs - ln rhs|`` left; ``converged`` says
    whether every relation holds: below ``REFERENCE.atol``, within the rounding of its
    own sides, or at a floor below ``REFERENCE.rounding_atol`` no step could lower.
    """

    values: Mapping[str, float]
    residual: float
    converged: bool


@lru_cache(maxsize=MODELS_KEPT)
def reference_point(model: Model) -> ReferencePoint:
    """The model's reference point (cached per model). A model derived from another
    starts its search at its parent's point: a subset of the relations (solvers.pinning.variants)
    holds there already, and one with zeros put in (solvers.pinning.zeros) is near it once
    what the zeros changed is carried forwards through the definitions. Where
    that search stops short, the model's own search from its typical values is tried too
    and the closer point kept: rows taken off the solution set can make relations that
    agree only on it look independent."""
    if model.parent is not None:
        parent = reference_point(model.parent)
        found = consistent_point(model, REFERENCE.seed, 0.0,
                                 start=_carried_forward(model, parent.values))
        if found.converged:
            return found
        fresh = consistent_point(model, REFERENCE.seed, REFERENCE.spread)
        return min(found, fresh, key=lambda point: point.residual)
    return consistent_point(model, REFERENCE.seed, REFERENCE.spread)


def _carried_forward(model: Model, values: Mapping[str, float]) -> dict[str, float]:
    """``values`` with every derived quantity a relation defines outright (``x = ...``;
    the first such relation where several do) evaluated again from its definition,
    definitions that feed others first.

    A narrowed model's relations differ from its parent's where zeros took terms out
    (a dense model's expert parameters); what those terms fed (total parameters, the
    bytes a step reads, its time) moves to where the relations now put it. That is the
    move the search itself prefers, derived quantities being the cheap ones, but made
    in one sweep rather than by Gauss-Newton steps held back by damping: measured over
    the test suite's narrowed models, 824 linearisations instead of 1,340. A value its
    definition already gives (within ``REFERENCE.atol``) is left as it was, to the bit.
    """
    env = dict(values)
    sides = _sides(model)
    definitions = {}
    for (_, rhs), relation in zip(sides, model.relations.values(), strict=True):
        if relation.lhs.is_Symbol:
            name = relation.lhs.name
            variable = model.variables.get(name)
            if variable is not None and variable.derived and name in env:
                definitions.setdefault(name, (rhs, relation.name))
    for name in _feeding_order(model, definitions):
        try:
            value = definitions[name][0](env)[0]
        except (ArithmeticError, ValueError, KeyError):
            continue
        if math.isfinite(value) and value > 0 and abs(math.log(value / env[name])) > REFERENCE.atol:
            env[name] = value
    return env


def _feeding_order(model: Model, definitions: Mapping[str, tuple]) -> list[str]:
    """The defined quantities, each after the defined quantities its definition reads
    (depth first, in name order; a definition on a cycle is taken where it is met)."""
    order: list[str] = []
    seen: set[str] = set()
    for root in sorted(definitions):
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(sorted(model.variables_in(definitions[root][1]) - {root})))]
        while stack:
            name, reads = stack[-1]
            for read in reads:
                if read in definitions and read not in seen:
                    seen.add(read)
                    stack.append((read, iter(sorted(model.variables_in(definitions[read][1])
                                                    - {read}))))
                    break
            else:
                stack.pop()
                order.append(name)
    return order


def consistent_point(model: Model, seed: int, spread: float,
                     atol: float = REFERENCE.atol,
                     start: Mapping[str, float] | None = None) -> ReferencePoint:
    """A point where every relation holds to ``atol`` (in ``ln lhs - ln rhs``), found
    from typical values nudged by ``exp(N(0, spread))`` drawn with ``seed`` (or from
    ``start``, base-unit values), starting inside the declared bounds (which the search
    itself does not impose)."""
    names = sorted(v for v in model.variables if model.relations_of(v))
    index = {n: i for i, n in enumerate(names)}
    sides = _sides(model)
    y = np.array([math.log(start[n]) if start is not None and n in start
                  else math.log((model.variables[n].typical or 1.0)
                                * model.variables[n].to_base)
                  for n in names]) + _nudges(names, seed, spread)
    for i, n in enumerate(names):
        y[i] = _inside(model.variables[n], y[i])

    def evaluate(point):
        if np.any(np.abs(point) > REFERENCE.max_log):
            return None, None, None  # left the range of floating point: step back
        env = {n: math.exp(v) for n, v in zip(names, point, strict=True)}
        residuals, rows, logarithmic = [], [], []
        for lhs, rhs in sides:
            found = _row(lhs, rhs, env)
            if found is None:
                return None, None, None
            residuals.append(found[0])
            rows.append(found[1])
            logarithmic.append(found[2])
        return np.array(residuals), rows, np.array(logarithmic, dtype=bool)

    # derived quantities are cheap to move, inputs expensive (weights on squared moves)
    weights = np.array([REFERENCE.derived_weight if model.variables[n].derived else 1.0
                        for n in names])
    residual, rows, logarithmic = evaluate(y)
    if residual is None:  # a side is not positive at the typical values: no reference
        return ReferencePoint(_values(names, y), math.inf, False)
    iterations = (REFERENCE.max_iterations if len(names) <= REFERENCE.dense_limit
                  else REFERENCE.sparse_max_iterations)
    worst = float(np.max(np.abs(residual))) if residual.size else 0.0
    at_floor, steps, damping, growth = False, None, 0.0, 2.0
    history = [worst]  # the worst residual after each trial point
    for trial_count in range(iterations):
        if at_floor or _holds(residual, rows, atol):
            break
        # A search that has not halved its residual in a window of trials is at a
        # least-squares minimum that is not a solution (or crawling towards one): stop
        if (trial_count >= REFERENCE.stall_window
                and worst > REFERENCE.stall_ratio * history[-REFERENCE.stall_window]):
            break
        if steps is None:
            steps = _Steps(rows, index, weights)
        step, predicted = steps.step(residual, damping)
        trial = y + step
        new_residual, new_rows, new_logarithmic = evaluate(trial)
        gain = _gain(residual, new_residual, predicted)
        # A relation whose sides were both positive must stay so: past a sign change
        # its relative residual is flat at 1 and no later step can bring it back
        if gain > 0 and not np.any(logarithmic & ~new_logarithmic):
            y, residual, rows, logarithmic = trial, new_residual, new_rows, new_logarithmic
            previous, worst = worst, float(np.max(np.abs(residual))) if residual.size else 0.0
            # Below the rounding floor a step no longer shrinks the residual: what is
            # left is the rounding of sums and steep powers, not a relation that fails
            at_floor = worst <= REFERENCE.rounding_atol and worst > REFERENCE.stall_ratio * previous
            # Nielsen's rule: the better the linear model predicted, the less damping;
            # once it is negligible the steps are plain minimum-norm Gauss-Newton again
            damping *= max(1 / 3, 1 - (2 * gain - 1) ** 3)
            if damping < REFERENCE.damping_floor * steps.largest_curvature:
                damping = 0.0
            steps, growth = None, 2.0
        else:
            at_floor = worst <= REFERENCE.rounding_atol
            damping = max(damping * growth, REFERENCE.damping_start * steps.largest_curvature)
            growth *= 2
        history.append(worst)
    return ReferencePoint(_values(names, y), worst, at_floor or _holds(residual, rows, atol))


def _holds(residual: np.ndarray, rows, atol: float) -> bool:
    """Whether every relation holds to ``atol``, or to the rounding of its own sides.

    A side that is a difference of nearly equal terms ((n_chips - t) x ... with t
    within 0.02% of n_chips) cannot be evaluated closer than the rounding of those terms:
    about the machine epsilon times the sum of the absolute log-derivatives of the
    relation's row (its condition number). ``REFERENCE.rounding_factor`` times that is
    accepted where it is above ``atol``: no step of the search could do better.
    """
    eps = np.finfo(float).eps
    for value, row in zip(residual, rows, strict=True):
        floor = REFERENCE.rounding_factor * eps * sum(abs(d) for d in row.values())
        if abs(value) > max(atol, floor):
            return False
    return True


def _inside(variable, y: float) -> float:
    """A start ``y`` (log of a base-unit value) moved inside the quantity's declared
    bounds: a nudge past a bound is reflected off it rather than stopped on it, so that
    the start stays generic (``attention_data_parallelism - 1`` is not zero because the
    typical value 1 is also the lower bound)."""
    low = (math.log(variable.lower * variable.to_base)
           if variable.lower is not None and variable.lower > 0 else -math.inf)
    high = math.log(variable.upper * variable.to_base) if variable.upper is not None else math.inf
    if y < low:
        y = 2 * low - y
    elif y > high:
        y = 2 * high - y
    return min(max(y, low), high)


def _nudges(names: list[str], seed: int, spread: float) -> np.ndarray:
    """Log-nudges ``N(0, spread)`` of the sorted ``names``: one generator drawn in turn,
    or with ``REFERENCE.draw == "per_name"`` one per name (seeded by ``seed`` and the
    name), so that a quantity added to the model moves no other quantity's start."""
    if REFERENCE.draw == "per_name":
        return np.array([np.random.default_rng([seed, zlib.crc32(n.encode())]).normal(
            0.0, spread) for n in names])
    return np.random.default_rng(seed).normal(0.0, spread, len(names))


@lru_cache(maxsize=MODELS_KEPT)
def _sides(model: Model) -> tuple:
    """Value-and-gradient evaluators of both sides of every relation (cached per model:
    a probe draws hundreds of points of one model)."""
    constants = model.constant_values()
    parent = model.parent
    # a narrowed model shares its parent's evaluators of the relations it keeps as they were
    inherited = dict(zip(parent.relations, _sides(parent), strict=True)) if parent else {}
    # whole counts relaxed to the counts they round: the point is one of smooth relations
    return tuple(inherited[r.name] if parent and parent.relations.get(r.name) is r
                 else (compile_log_gradient(continuous(r.lhs), constants),
                       compile_log_gradient(continuous(r.rhs), constants))
                 for r in model.relations.values())


def _values(names, y) -> dict[str, float]:
    return {n: math.exp(v) for n, v in zip(names, y, strict=True)}


def _row(lhs, rhs, env):
    """Residual, log-space row and whether both sides are positive, for one relation;
    ``None`` where it is undefined.

    ``ln lhs - ln rhs`` where both sides are positive (exactly linear for products of
    powers); elsewhere (a difference that is negative at the start) the relative
    residual ``(lhs - rhs) / (|lhs| + |rhs|)``, which has the same zeros and, while the
    sides share a sign, a slope that leads the search back to where the relation makes
    sense. With the sides of opposite signs it is 1 whatever the values: the search
    keeps a relation from reaching there once both its sides are positive.
    """
    try:
        found = log_row(lhs, rhs, env)
        if found is not None:
            return (*found, True) if math.isfinite(found[0]) else None
        (a, ga), (b, gb) = lhs(env), rhs(env)
    except (ArithmeticError, ValueError):
        return None
    scale = abs(a) + abs(b)
    if not (math.isfinite(a) and math.isfinite(b)) or scale == 0:
        return None
    row = {k: d / scale for k, d in ga.items()}
    for k, d in gb.items():
        row[k] = row.get(k, 0.0) - d / scale
    return (a - b) / scale, row, False


def _gain(residual, new_residual, predicted: float) -> float:
    """How much of the squared-residual decrease the linear model predicted was realised
    (Nielsen's gain ratio; -inf where the trial point is undefined or nothing was
    predicted and nothing gained)."""
    if new_residual is None:
        return -math.inf
    before = float(residual @ residual)
    actual = before - float(new_residual @ new_residual)
    expected = before - predicted
    if expected <= 0:
        return 1.0 if actual > 0 else -math.inf
    return actual / expected


class _Steps:
    """Damped Gauss-Newton steps from one linearisation, for any damping.

    Each step is the smallest move, in the ``weights`` norm, that minimises the
    linearised residuals plus ``damping`` times its squared length (Levenberg-Marquardt
    in the scaled variables ``z = sqrt(w) * step``); with no damping it is the
    minimum-norm Gauss-Newton step. Dense systems are factorised once (an SVD), so a
    rejected trial costs one evaluation and no new factorisation; above
    ``REFERENCE.dense_limit`` quantities the step is an iterative damped least squares.
    """

    def __init__(self, rows, index, weights):
        size = len(weights)
        self.scale = 1.0 / np.sqrt(weights)  # z = sqrt(w) * step: min-norm in z
        entries = [(i, index[name], value * self.scale[index[name]])
                   for i, row in enumerate(rows) for name, value in row.items()
                   if name in index]
        shape = (len(rows), size)
        self.dense = size <= REFERENCE.dense_limit
        if self.dense:
            self.jacobian = np.zeros(shape)
            for i, j, value in entries:
                self.jacobian[i, j] = value
            u, s, vt = np.linalg.svd(self.jacobian, full_matrices=False)
            # the cutoff numpy's lstsq applies: directions below it are rounding
            kept = s > np.finfo(float).eps * max(shape) * (s[0] if s.size else 0.0)
            self.u, self.s, self.vt = u[:, kept], s[kept], vt[kept]
            self.largest_curvature = float(self.s[0] ** 2) if self.s.size else 0.0
        else:
            from scipy.sparse import csr_matrix
            from scipy.sparse.linalg import norm

            rows_i, cols, data = zip(*entries, strict=True) if entries else ((), (), ())
            self.jacobian = csr_matrix((data, (rows_i, cols)), shape=shape)
            self.largest_curvature = float(norm(self.jacobian) ** 2)  # an upper bound

    def step(self, residual, damping: float) -> tuple[np.ndarray, float]:
        """The step for ``damping`` and the squared residual the linear model predicts
        after it."""
        if self.dense:
            z = self.vt.T @ (self.s / (self.s ** 2 + damping) * (self.u.T @ -residual))
        else:
            from scipy.sparse.linalg import lsqr

            # a bounded number of iterations: on a large model the point may stay
            # approximate (the result says so), but it costs little
            z = lsqr(self.jacobian, -residual, damp=math.sqrt(damping), atol=1e-14,
                     btol=1e-14, iter_lim=REFERENCE.sparse_iterations)[0]
        predicted = residual + self.jacobian @ z
        return z * self.scale, float(predicted @ predicted)
