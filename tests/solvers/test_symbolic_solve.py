"""Closed forms, the sympy time limit and the numeric fallback, on small synthetic models."""

import math

import pytest
import sympy
from chalk.solvers.execution.symbolic_solve import solve_equation, solve_relation
from chalk.symbolic.model import build_model
from chalk.symbolic.relations import Relation, definition
from chalk.symbolic.variables import Variable

from chalk import solve

X = Variable("test_x", "1", "unknown", typical=1)
Y = Variable("test_y", "1", "known", typical=3)
x, y = X.symbol, Y.symbol


def test_linear_and_power_law_fast_paths():
    forms, method = solve_equation(x * y, sympy.Integer(6), x)
    assert forms == [6 / y] and "linear" in method
    forms, method = solve_equation(x**2 * y, sympy.Integer(8), x)
    assert method.endswith("(power law)")
    assert forms[0].subs(y, 2) == 2


def test_slow_symbolic_solve_times_out_and_falls_back_to_numeric():
    # x + exp(x) = y has a LambertW closed form; a 1 ms limit cannot reach it
    relation = Relation("test_lambert", x + sympy.exp(x), y, "synthetic", definition())
    model = build_model([X, Y], [relation])
    solution = solve("test_x", given={"test_y": 3.0}, model=model, timeout=0.001)
    root = solution.value("test_x")
    assert root + math.exp(root) == pytest.approx(3.0, rel=1e-12)
    step = solution.derivation.steps[0]
    assert "did not finish within 0.001 s" in step.note
    assert "numeric" in step.method


def test_sympy_closed_form_when_time_allows():
    relation = Relation("test_lambert_slow", x + sympy.exp(x), y, "synthetic", definition())
    solved = solve_relation(relation, "test_x", timeout=60)
    assert solved.candidates and solved.candidates[0].method == "sympy.solve"
    assert solved.candidates[0].expr.has(sympy.LambertW)


def test_physical_root_is_chosen_and_reported():
    # x^2 - x*y + 2 = 0 with y = 3 has roots 1 and 2: both positive -> ambiguous
    relation = Relation("test_quadratic", x**2 + 2, x * y, "synthetic", definition())
    model = build_model([X, Y], [relation])
    with pytest.raises(Exception, match="several physical values"):
        solve("test_x", given={"test_y": 3.0}, model=model)
    # x^2 = y - 4x: with y = 5 the roots are 1 and -5; only 1 is physical
    other = Relation("test_quadratic2", x**2 + 4 * x, y, "synthetic", definition())
    model = build_model([X, Y], [other])
    solution = solve("test_x", given={"test_y": 5.0}, model=model)
    assert solution.value("test_x") == pytest.approx(1.0)
    assert "set aside" in solution.derivation.steps[0].note
