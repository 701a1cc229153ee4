"""Compiled evaluators agree with sympy's own evaluation, on scalars and arrays."""

import math

import numpy as np
import sympy
from chalk.symbolic.evaluate import compile_expr

a, b, c = sympy.symbols("a b c", positive=True)


def test_scalar_and_array_evaluation():
    expr = a * b**2 / c + sympy.Max(a, c) - sympy.sqrt(b)
    f = compile_expr(expr)
    env = {"a": 2.0, "b": 3.0, "c": 5.0}
    expected = 2 * 9 / 5 + 5 - math.sqrt(3)
    assert math.isclose(f(env), expected, rel_tol=1e-14)
    arrays = {"a": np.array([2.0, 7.0]), "b": np.array([3.0, 3.0]), "c": np.array([5.0, 5.0])}
    out = f(arrays)
    assert np.allclose(out, [expected, 7 * 9 / 5 + 7 - math.sqrt(3)])


def test_constants_are_substituted():
    f = compile_expr(a / c, {"c": 4.0})
    assert f({"a": 2.0}) == 0.5


def test_piecewise_selects_branch():
    f = compile_expr(sympy.Piecewise((a, a > b), (b, True)))
    assert f({"a": 1.0, "b": 2.0}) == 2.0
    assert list(f({"a": np.array([3.0, 1.0]), "b": np.array([2.0, 2.0])})) == [3.0, 2.0]


def test_a_zero_divisor_gives_inf_or_nan_not_an_exception():
    # regression (1,000-probe benchmark): a closed form evaluated on plain floats where a
    # divisor vanished raised ZeroDivisionError out of chalk.solve instead of being
    # rejected as non-physical, as numpy arrays already were
    x, y = sympy.symbols("x y", positive=True)
    ratio = compile_expr(x / y)
    assert ratio({"x": 2.0, "y": 0.0}) == math.inf
    assert math.isnan(ratio({"x": 0.0, "y": 0.0}))
    assert compile_expr(1 / y)({"y": 0.0}) == math.inf
    assert ratio({"x": 3.0, "y": 2.0}) == 1.5
