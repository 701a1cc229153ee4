"""Relations seen in log space: exponents of products of powers, and log-gradients.

Every quantity in chalk is positive, so each can be written ``x = exp(y)``. A
relation whose two sides are products of powers (``t = B * F / R``) is then linear
in the ``y``: its row of the log-space Jacobian is the vector of exponents,
the same everywhere and exact. Any other relation (a sum, a ``max``, a power
with a quantity in its exponent) has a row that depends on where it is taken;
:func:`compile_log_gradient` gives a fast evaluator of value and gradient for
those, by forward differentiation over the expression tree (no generated code).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from fractions import Fraction

import numpy as np
import sympy

Gradient = dict[str, float]  # name -> x * d(value)/dx, the derivative along ln x
Evaluator = Callable[[Mapping[str, float]], tuple[float, Gradient]]


def exponents(expr: sympy.Expr) -> dict[str, Fraction] | None:
    """``{name: exponent}`` if ``expr`` is a positive number times a product of symbols
    raised to rational powers; ``None`` otherwise."""
    coefficient, rest = expr.as_coeff_Mul()
    if not coefficient.is_Number or coefficient <= 0:
        return None
    out: dict[str, Fraction] = {}
    for base, exponent in rest.as_powers_dict().items():
        if base.is_Number:
            if base <= 0:
                return None
            if not exponent.is_Number:
                return None
            continue
        if not base.is_Symbol or not exponent.is_Rational:
            return None
        value = Fraction(int(exponent.p), int(exponent.q))
        out[base.name] = out.get(base.name, Fraction(0)) + value
    return {k: v for k, v in out.items() if v != 0}


def monomial_row(lhs: sympy.Expr, rhs: sympy.Expr) -> dict[str, Fraction] | None:
    """The exact log-space row ``d(ln lhs - ln rhs)/dy`` of a relation between two
    products of powers, over every symbol (constants included); ``None`` if either
    side is not one."""
    left, right = exponents(lhs), exponents(rhs)
    if left is None or right is None:
        return None
    row = dict(left)
    for name, e in right.items():
        row[name] = row.get(name, Fraction(0)) - e
    return {k: v for k, v in row.items() if v != 0}


def compile_log_gradient(expr: sympy.Expr, constants: Mapping[str, float] | None = None,
                         surrogate: bool = False) -> Evaluator:
    """Compile ``expr`` to ``f(values) -> (value, gradient)``.

    ``gradient[name]`` is ``x * d(expr)/dx`` for each non-constant symbol ``x``.
    With ``surrogate`` a ``max``/``min`` contributes ``d ln m = (a d ln a + b d ln b) /
    (a + b)``, the log-gradient of a sum of its arguments: a generic mixture of every
    regime, used to decide what a relation can determine in some regime. Without it
    the active argument's gradient is taken (what Newton's method needs).
    """
    return _compile(expr, dict(constants or {}), surrogate)


def _compile(expr, constants, surrogate) -> Evaluator:
    if expr.is_Symbol:
        name = expr.name
        if name in constants:
            value = float(constants[name])
            return lambda env: (value, {})
        return lambda env: (env[name], {name: env[name]})
    if expr.is_Number or expr in (sympy.pi, sympy.E):
        value = float(expr)
        return lambda env: (value, {})
    if expr.is_Add:
        parts = [_compile(a, constants, surrogate) for a in expr.args]

        def add(env):
            total, grad = 0.0, {}
            for part in parts:
                v, g = part(env)
                total += v
                for k, d in g.items():
                    grad[k] = grad.get(k, 0.0) + d
            return total, grad

        return add
    if expr.is_Mul:
        parts = [_compile(a, constants, surrogate) for a in expr.args]

        def mul(env):
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

        return mul
    if expr.is_Pow:
        base = _compile(expr.base, constants, surrogate)
        if expr.exp.is_Number:
            e = float(expr.exp)

            def power(env):
                b, g = base(env)
                value = b ** e
                if b == 0:
                    slope = 0.0 if e > 1 else math.inf
                    return value, {k: d * slope for k, d in g.items()}
                # e * b**(e-1) * d as e * value * (d / b): b**(e-1) alone overflows for a
                # tiny b (1e-187 squared) where the product itself is an ordinary number
                return value, {k: e * value * (d / b) for k, d in g.items()}

            return power
        exponent = _compile(expr.exp, constants, surrogate)

        def general_power(env):
            (b, gb), (e, ge) = base(env), exponent(env)
            value = b ** e
            grad = {k: value * e * d / b for k, d in gb.items()}
            for k, d in ge.items():
                grad[k] = grad.get(k, 0.0) + value * math.log(b) * d
            return value, grad

        return general_power
    if isinstance(expr, (sympy.Max, sympy.Min)):
        parts = [_compile(a, constants, surrogate) for a in expr.args]
        pick = max if isinstance(expr, sympy.Max) else min

        def extreme(env):
            evaluated = [part(env) for part in parts]
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
    if expr.func in _UNARY:
        inner = _compile(expr.args[0], constants, surrogate)
        fn, slope = _UNARY[expr.func]

        def unary(env):
            v, g = inner(env)
            s = slope(v)
            return fn(v), {k: d * s for k, d in g.items()}

        return unary
    raise TypeError(f"cannot differentiate {type(expr).__name__}: {expr}")


_UNARY = {
    sympy.exp: (math.exp, math.exp),
    sympy.log: (math.log, lambda v: 1.0 / v),
    sympy.Abs: (abs, lambda v: float(np.sign(v))),
}


def log_row(lhs: Evaluator, rhs: Evaluator, env: Mapping[str, float]
            ) -> tuple[float, Gradient] | None:
    """``ln lhs - ln rhs`` and its gradient in log space at ``env``; ``None`` where a
    side is not positive and finite."""
    (a, ga), (b, gb) = lhs(env), rhs(env)
    if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
        return None
    row = {k: d / a for k, d in ga.items()}
    for k, d in gb.items():
        row[k] = row.get(k, 0.0) - d / b
    return math.log(a) - math.log(b), row
