"""Relations seen in log space: exponents of products of powers, and log-gradients.

Every quantity in chalk is positive, so each can be written ``x = exp(y)``. A
relation whose two sides are products of powers (``t = B * F / R``) is then linear
in the ``y``: its row of the log-space Jacobian is the vector of exponents,
the same everywhere and exact. Any other relation (a sum, a ``max``, a power
with a quantity in its exponent) has a row that depends on where it is taken;
:func:`chalk.solvers.analysis.gradient.compile_log_gradient` evaluates value and
gradient for those over the tree :mod:`chalk.symbolic.ir` lowers, and :func:`log_row`
turns two sides' values into the row.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from fractions import Fraction

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
