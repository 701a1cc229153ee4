"""Closed forms as plain data give the very numbers compile_expr gives."""

from __future__ import annotations

import random

import pytest
import sympy
from chalk.symbolic.evaluate import compile_expr
from chalk.symbolic.ir import evaluate_ir, to_ir

a, b, c, d = sympy.symbols("a b c d", positive=True)

SUPPORTED = [
    a * b / (c * d),
    2 * a * b ** 2 / c,
    sympy.sqrt(a / b) * c,
    (a * b + c) / d,
    sympy.Max(a * b, c + d),
    sympy.Min(a, b / c) + 3 * d,
    1 / (a + b),
    a * sympy.Symbol("one_chip", positive=True),
]
UNSUPPORTED = [a ** sympy.Rational(1, 3), sympy.exp(a), sympy.log(a * b), a ** b,
               sympy.Piecewise((a, a < b), (b, True))]


@pytest.mark.parametrize("expr", SUPPORTED, ids=str)
def test_the_ir_evaluates_bit_for_bit_as_compile_expr(expr):
    constants = {"one_chip": 1.0}
    compiled = compile_expr(expr, constants)
    ir = to_ir(expr, constants)
    assert ir is not None
    rng = random.Random(0)
    for _ in range(200):
        env = {s: 10 ** rng.uniform(-12, 12) for s in "abcd"}
        assert evaluate_ir(ir, env) == float(compiled(env))


@pytest.mark.parametrize("expr", UNSUPPORTED, ids=str)
def test_forms_without_an_exact_replay_have_no_ir(expr):
    assert to_ir(expr) is None


def test_a_hand_worked_value():
    # 2·a·b²/c at a=3, b=5, c=10 is 15
    assert evaluate_ir(to_ir(2 * a * b ** 2 / c), {"a": 3.0, "b": 5.0, "c": 10.0}) == 15.0
