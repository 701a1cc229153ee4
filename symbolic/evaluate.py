"""Fast numeric evaluation of sympy expressions without code generation.

An expression is compiled once into a tree of closures over plain floats (or
numpy arrays, elementwise), so repeated evaluation costs microseconds and no
text is ever executed. Values are looked up by symbol name in a mapping.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
import sympy

Evaluator = Callable[[Mapping[str, object]], object]

_UNARY = {
    sympy.exp: np.exp,
    sympy.log: np.log,
    sympy.sqrt: np.sqrt,
    sympy.Abs: np.abs,
}


def _divide(top, bottom):
    """``top / bottom`` with numpy's meaning for a zero divisor (inf, or nan for 0/0),
    for plain Python floats too: a closed form evaluated where a term vanishes gives a
    non-physical value that the caller rejects, not a ZeroDivisionError."""
    try:
        return top / bottom
    except ZeroDivisionError:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.float64(top) / np.float64(bottom)


def compile_expr(expr: sympy.Expr, constants: Mapping[str, float] | None = None) -> Evaluator:
    """Compile ``expr`` to ``f(values) -> number``.

    Parameters
    ----------
    expr : sympy.Expr
        Built from symbols, numbers, +, *, powers, max/min, exp/log and
        piecewise expressions.
    constants : mapping of str to float, optional
        Values substituted for symbols at compile time (unit constants).
    """
    constants = constants or {}
    return _compile(expr, constants)


def _compile(expr, constants) -> Evaluator:
    if expr.is_Symbol:
        name = expr.name
        if name in constants:
            value = float(constants[name])
            return lambda env: value
        return lambda env: env[name]
    if expr.is_Number:
        value = float(expr)
        return lambda env: value
    if expr is sympy.pi:
        return lambda env: math.pi
    if expr is sympy.E:
        return lambda env: math.e
    if expr.is_Add:
        parts = [_compile(a, constants) for a in expr.args]
        if len(parts) == 2:
            a, b = parts
            return lambda env: a(env) + b(env)

        def add(env):
            total = parts[0](env)
            for p in parts[1:]:
                total = total + p(env)
            return total

        return add
    if expr.is_Mul:
        # Split into numerator and denominator so x/y is one division, not y**-1.
        num, den = [], []
        for arg in expr.args:
            if arg.is_Pow and arg.exp.is_Number and arg.exp < 0:
                den.append(_compile(arg.base ** (-arg.exp), constants))
            else:
                num.append(_compile(arg, constants))
        top = _product(num) if num else (lambda env: 1.0)
        if not den:
            return top
        bottom = _product(den)
        return lambda env: _divide(top(env), bottom(env))
    if expr.is_Pow:
        base = _compile(expr.base, constants)
        exponent = expr.exp
        if exponent.is_Number:
            e = float(exponent)
            if e == 1:
                return base
            if e == -1:
                return lambda env: _divide(1.0, base(env))
            if e == 2:
                return lambda env: base(env) * base(env)
            if e == 0.5:
                return lambda env: np.sqrt(base(env))
            return lambda env: np.power(base(env), e)
        power = _compile(exponent, constants)
        # numpy's power overflows to inf (a float ** would raise OverflowError)
        return lambda env: np.power(np.float64(base(env)), power(env))
    if isinstance(expr, sympy.Max):
        parts = [_compile(a, constants) for a in expr.args]
        return lambda env: _reduce(np.maximum, parts, env)
    if isinstance(expr, sympy.Min):
        parts = [_compile(a, constants) for a in expr.args]
        return lambda env: _reduce(np.minimum, parts, env)
    if isinstance(expr, sympy.Piecewise):
        branches = [(_compile(v, constants), _compile_condition(c, constants))
                    for v, c in expr.args]

        def piecewise(env):
            values = [v(env) for v, _ in branches]
            conditions = [c(env) for _, c in branches]
            if all(np.ndim(c) == 0 for c in conditions):
                for value, condition in zip(values, conditions, strict=True):
                    if condition:
                        return value
                return float("nan")
            return np.select([np.asarray(c, bool) for c in conditions], values, np.nan)

        return piecewise
    if expr.func in _UNARY:
        fn = _UNARY[expr.func]
        arg = _compile(expr.args[0], constants)
        return lambda env: fn(arg(env))
    raise TypeError(f"cannot evaluate {type(expr).__name__} numerically: {expr}")


def _product(parts):
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        a, b = parts
        return lambda env: a(env) * b(env)

    def product(env):
        total = parts[0](env)
        for p in parts[1:]:
            total = total * p(env)
        return total

    return product


def _reduce(op, parts, env):
    result = parts[0](env)
    for p in parts[1:]:
        result = op(result, p(env))
    return result


_COMPARE = {
    sympy.StrictLessThan: np.less,
    sympy.LessThan: np.less_equal,
    sympy.StrictGreaterThan: np.greater,
    sympy.GreaterThan: np.greater_equal,
}


def _compile_condition(condition, constants) -> Evaluator:
    if condition is sympy.true:
        return lambda env: True
    if condition is sympy.false:
        return lambda env: False
    for kind, op in _COMPARE.items():
        if isinstance(condition, kind):
            lhs = _compile(condition.lhs, constants)
            rhs = _compile(condition.rhs, constants)
            return lambda env: op(lhs(env), rhs(env))
    if isinstance(condition, sympy.And):
        parts = [_compile_condition(c, constants) for c in condition.args]
        return lambda env: _reduce(np.logical_and, parts, env)
    if isinstance(condition, sympy.Or):
        parts = [_compile_condition(c, constants) for c in condition.args]
        return lambda env: _reduce(np.logical_or, parts, env)
    raise TypeError(f"cannot evaluate condition {condition}")
