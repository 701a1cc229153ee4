"""Dimension analysis of sympy expressions.

Each relation is checked once, when the knowledge base loads: both sides must
have the same dimensionality, terms of a sum (and arguments of max/min) must
agree, and transcendental functions only take dimensionless arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

import sympy
from chalk.symbolic.printing.quantities import describe_dimension
from pint.util import UnitsContainer

DIMENSIONLESS = UnitsContainer()


@dataclass(eq=False)
class DimensionConflict(Exception):
    """Parts of an expression that cannot be combined; carries both parts."""

    first: sympy.Expr
    first_dim: UnitsContainer
    second: sympy.Expr
    second_dim: UnitsContainer
    how: str

    def __reduce__(self):
        return self.__class__, tuple(getattr(self, f.name) for f in fields(self))

    def __str__(self) -> str:
        return (f"{self.how}: {self.first} is {describe_dimension(self.first_dim)} but "
                f"{self.second} is {describe_dimension(self.second_dim)}")


def dimension_of(expr: sympy.Expr, dims: Mapping[sympy.Symbol, UnitsContainer]):
    """Dimensionality of ``expr`` given the dimensionality of each symbol."""
    if expr.is_Symbol:
        try:
            return dims[expr]
        except KeyError:
            raise DimensionConflict(expr, DIMENSIONLESS, expr, DIMENSIONLESS,
                                    "undeclared symbol") from None
    if expr.is_Number or expr in (sympy.pi, sympy.E):
        return DIMENSIONLESS
    if expr.is_Add or isinstance(expr, (sympy.Max, sympy.Min)):
        args = expr.args
        first = dimension_of(args[0], dims)
        for other in args[1:]:
            d = dimension_of(other, dims)
            if d != first:
                how = "terms of a sum differ" if expr.is_Add else "arguments of max/min differ"
                raise DimensionConflict(args[0], first, other, d, how)
        return first
    if expr.is_Mul:
        result = DIMENSIONLESS
        for arg in expr.args:
            result = result * dimension_of(arg, dims)
        return result
    if expr.is_Pow:
        base, exponent = expr.args
        base_dim = dimension_of(base, dims)
        if exponent.is_Number:
            return base_dim ** float(exponent) if base_dim else DIMENSIONLESS
        exp_dim = dimension_of(exponent, dims)
        if base_dim or exp_dim:
            raise DimensionConflict(base, base_dim, exponent, exp_dim,
                                    "a symbolic power needs dimensionless base and exponent")
        return DIMENSIONLESS
    if isinstance(expr, sympy.Piecewise):
        first = None
        for value, condition in expr.args:
            d = dimension_of(value, dims)
            if first is None:
                first, first_expr = d, value
            elif d != first:
                raise DimensionConflict(first_expr, first, value, d, "branches differ")
            _check_condition(condition, dims)
        return first
    if isinstance(expr, sympy.Function):
        for arg in expr.args:
            d = dimension_of(arg, dims)
            if d:
                raise DimensionConflict(arg, d, arg, DIMENSIONLESS,
                                        f"{expr.func.__name__} needs a dimensionless argument")
        return DIMENSIONLESS
    raise DimensionConflict(expr, DIMENSIONLESS, expr, DIMENSIONLESS,
                            f"cannot analyse {type(expr).__name__}")


def _check_condition(condition, dims) -> None:
    if condition in (sympy.true, sympy.false):
        return
    if isinstance(condition, sympy.core.relational.Relational):
        lhs_dim = dimension_of(condition.lhs, dims)
        rhs_dim = dimension_of(condition.rhs, dims)
        if lhs_dim != rhs_dim:
            raise DimensionConflict(condition.lhs, lhs_dim, condition.rhs, rhs_dim,
                                    "a comparison mixes dimensions")
        return
    for arg in condition.args:
        _check_condition(arg, dims)
