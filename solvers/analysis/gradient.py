"""Value and log-space gradient of a closed form, read from its plain tree.

Every quantity is positive, so a derivative is taken along ``ln x``: ``gradient[name]``
is ``x * d(value)/dx``. The form is lowered once by :func:`chalk.symbolic.ir.to_ir`, the
tree evaluation runs (and the cache stores), and differentiated forward over that tree:
there is no second lowering from sympy. The arithmetic is Python's on floats, so a value
off its domain raises (ZeroDivisionError, OverflowError, ValueError) where numpy would
give inf or nan; callers treat either as "no row here". Given arrays (one element per
point, as the vectorised run holds them) the same tree runs elementwise in numpy, each
max() or min() taking its active argument per element, and a value off its domain is
nan or inf there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from chalk.symbolic.ir import to_ir, whole_down, whole_up
from chalk.symbolic.logspace import Evaluator, Gradient

# the exponent of each power node (the others name it in the node)
_EXPONENTS = {"inv": -1.0, "sq": 2.0, "sqrt": 0.5}


def compile_log_gradient(expr, constants: Mapping[str, float] | None = None,
                         surrogate: bool = False) -> Evaluator:
    """Compile the sympy form ``expr`` to ``f(values) -> (value, gradient)``.

    With ``surrogate`` a ``max``/``min`` contributes ``d ln m = (a d ln a + b d ln b) /
    (a + b)``, the log-gradient of a sum of its arguments: a generic mixture of every
    regime, used to decide what a relation can determine in some regime. Without it
    the active argument's gradient is taken (what Newton's method needs).

    Raises
    ------
    TypeError
        A piecewise form (it has no derivative across its branches), or a part with
        no evaluator.
    """
    return _compile(to_ir(expr, constants), surrogate)


def _compile(node: list, surrogate: bool) -> Evaluator:
    kind = node[0]
    if kind == "num":
        value = float(node[1])
        return lambda env: (value, {})
    if kind == "sym":
        name = node[1]
        return lambda env: (env[name], {name: env[name]})
    if kind == "add":
        return _sum([_compile(part, surrogate) for part in node[1]])
    if kind == "mul":
        return _quotient([_compile(part, surrogate) for part in node[1]],
                         [_compile(part, surrogate) for part in node[2]])
    if kind in _EXPONENTS or kind == "pow":
        exponent = _EXPONENTS[kind] if kind in _EXPONENTS else float(node[2])
        return _power(_compile(node[1], surrogate), exponent)
    if kind == "powx":
        return _general_power(_compile(node[1], surrogate), _compile(node[2], surrogate))
    if kind in ("max", "min"):
        return _extreme([_compile(part, surrogate) for part in node[1]],
                        max if kind == "max" else min, surrogate)
    if kind in _UNARY:
        return _unary(_compile(node[1], surrogate), *_UNARY[kind])
    raise TypeError(f"cannot differentiate a {kind} node")


def _sum(parts) -> Evaluator:
    def add(env):
        total, grad = 0.0, {}
        for part in parts:
            v, g = part(env)
            total += v
            for k, d in g.items():
                grad[k] = grad.get(k, 0.0) + d
        return total, grad

    return add


def _product(parts, env) -> tuple[float, Gradient]:
    """A product's value and gradient, each factor's gradient times the other factors
    (no division by a factor, which may be zero)."""
    values, grads = zip(*(part(env) for part in parts), strict=True)
    total = math.prod(values)
    grad: Gradient = {}
    for i, g in enumerate(grads):
        if not g:
            continue
        others = math.prod(v for j, v in enumerate(values) if j != i)
        for k, d in g.items():
            grad[k] = grad.get(k, 0.0) + d * others
    return total, grad


def _quotient(top, bottom) -> Evaluator:
    def quotient(env):
        t, gt = _product(top, env) if top else (1.0, {})
        if not bottom:
            return t, gt
        b, gb = _product(bottom, env)
        value = t / b
        # d(t/b) = dt/b - (t/b)·db/b
        grad = {k: (gt.get(k, 0.0) - value * gb.get(k, 0.0)) / b for k in gt.keys() | gb}
        return value, grad

    return quotient


def _power(base: Evaluator, e: float) -> Evaluator:
    def power(env):
        b, g = base(env)
        value = b ** e
        if isinstance(b, np.ndarray):
            if e >= 1:  # b**(e-1) neither overflows where b**e does not nor divides by 0
                slope = e * b ** (e - 1) if e != 2 else 2 * b
                return value, {k: slope * d for k, d in g.items()}
            at_zero = math.inf
            with np.errstate(all="ignore"):  # the elements at 0 take ``at_zero`` instead
                return value, {k: np.where(b == 0, d * at_zero, e * value * (d / b))
                               for k, d in g.items()}
        if b == 0:
            slope = 0.0 if e > 1 else math.inf
            return value, {k: d * slope for k, d in g.items()}
        # e * b**(e-1) * d as e * value * (d / b): b**(e-1) alone overflows for a tiny b
        # (1e-187 squared) where the product itself is an ordinary number
        return value, {k: e * value * (d / b) for k, d in g.items()}

    return power


def _general_power(base: Evaluator, exponent: Evaluator) -> Evaluator:
    def general_power(env):
        (b, gb), (e, ge) = base(env), exponent(env)
        value = b ** e
        if isinstance(b, np.ndarray) or isinstance(e, np.ndarray):
            with np.errstate(all="ignore"):  # a base of 0 takes the limits below instead
                slope = np.where(b == 0, _slope_at_zero(e), e * value / b)
                log_b = np.log(b)
                by_exponent = np.where(b == 0, 0.0, value * log_b)
        elif b == 0:
            slope, by_exponent = _slope_at_zero(e), 0.0
        else:
            # e * b**(e-1) as e * value / b: b**(e-1) alone overflows for a tiny b
            slope, by_exponent = e * value / b, value * math.log(b)
        grad = {k: slope * d for k, d in gb.items()}
        for k, d in ge.items():
            grad[k] = grad.get(k, 0.0) + by_exponent * d
        return value, grad

    return general_power


def _slope_at_zero(e):
    """``d(b**e)/db`` at ``b = 0`` for an exponent ``e > 0``: 0 above 1, 1 at 1, infinite
    below (``b**e * ln b``, the slope in the exponent, tends to 0 there)."""
    return np.where(e > 1, 0.0, np.where(e == 1, 1.0, math.inf)) if isinstance(
        e, np.ndarray) else (0.0 if e > 1 else 1.0 if e == 1 else math.inf)


def _extreme(parts, pick, surrogate: bool) -> Evaluator:
    def extreme(env):
        evaluated = [part(env) for part in parts]
        if any(isinstance(v, np.ndarray) for v, _ in evaluated):
            return _elementwise_extreme(evaluated, pick, surrogate)
        value = pick(v for v, _ in evaluated)
        if not surrogate:
            return next((v, g) for v, g in evaluated if v == value)
        total = sum(v for v, _ in evaluated)
        grad: Gradient = {}
        for _, g in evaluated:
            for k, d in g.items():
                grad[k] = grad.get(k, 0.0) + d * value / total
        return value, grad

    return extreme


def _elementwise_extreme(evaluated, pick, surrogate: bool) -> tuple:
    """:func:`_extreme` on arrays: per element, the active argument's gradient (the
    first argument that attains the extreme, as on floats), or the surrogate mixture."""
    values = np.broadcast_arrays(*(v for v, _ in evaluated))
    value = (np.maximum if pick is max else np.minimum).reduce(values)
    names = {k for _, g in evaluated for k in g}
    if surrogate:
        total = sum(values)
        return value, {k: sum(g.get(k, 0.0) for _, g in evaluated) * value / total
                       for k in names}
    grad = dict.fromkeys(names, 0.0)
    # the last argument first, so that where several attain it the first one's stays
    for v, (_, g) in zip(reversed(values), reversed(evaluated), strict=True):
        active = v == value
        grad = {k: np.where(active, g.get(k, 0.0), grad[k]) for k in names}
    return value, grad


def _unary(inner: Evaluator, function, slope) -> Evaluator:
    def unary(env):
        v, g = inner(env)
        if isinstance(v, np.ndarray):
            value, s = _ARRAY_UNARY[function](v)
        else:
            value, s = function(v), slope(v)
        return value, {k: d * s for k, d in g.items()}

    return unary


# each function and its derivative; a whole count's slope is taken as its argument's
# (ceil and floor follow x on average): structure then sees the count follow what it rounds,
# and
# no step solves through it (solvers.execution.rounding refuses, naming the interval)
_UNARY = {
    "ceil": (whole_up, lambda v: 1.0),
    "floor": (whole_down, lambda v: 1.0),
    "exp": (math.exp, math.exp),
    "log": (math.log, lambda v: 1.0 / v),
    "abs": (abs, lambda v: float(np.sign(v))),
}
# the same on arrays: each function's value and slope per element
_ARRAY_UNARY = {
    whole_up: lambda v: (whole_up(v), np.ones_like(v)),
    whole_down: lambda v: (whole_down(v), np.ones_like(v)),
    math.exp: lambda v: (np.exp(v), np.exp(v)),
    math.log: lambda v: (np.log(v), 1.0 / v),
    abs: lambda v: (np.abs(v), np.sign(v)),
}
