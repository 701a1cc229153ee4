"""The IR is the one lowering from sympy: compile_expr runs it, the cache stores it.

compile_expr is compile_ir(to_ir(...)), so the engine and a cached replay run the same
closures. What could still differ is the numpy-free arithmetic on plain floats (sums,
products, quotients, square roots, max, min, comparisons) against numpy's, which every
array (and every scalar before this lowering) went through: these tests hold the two to
the same bits, check the lowering against sympy's own evaluation, and check that a tree
survives the JSON of a cache entry.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from functools import lru_cache

import numpy as np
import pytest
import sympy
from chalk.knowledge import load_model
from chalk.solvers.analysis.conditioning import cannot_amplify
from chalk.symbolic.evaluate import compile_expr
from chalk.symbolic.ir import compile_ir, evaluate_ir, to_ir
from hypothesis import given, settings
from hypothesis import strategies as st

a, b, c, d = sympy.symbols("a b c d", positive=True)
x = sympy.Symbol("x", real=True)

FORMS = [
    a * b / (c * d),
    2 * a * b ** 2 / c,
    sympy.sqrt(a / b) * c,
    (a * b + c) / d,
    sympy.Max(a * b, c + d),
    sympy.Min(a, b / c) + 3 * d,
    1 / (a + b),
    a * sympy.Symbol("one_chip", positive=True),
    a ** sympy.Rational(1, 3),
    a ** sympy.Rational(-3, 2) * b,
    a ** 1.5,
    sympy.exp(-a / b),
    sympy.log(a * b) - sympy.log(c),
    a ** b,
    sympy.Abs(a - b),
    sympy.Piecewise((a, a < b), (b, True)),
    sympy.Piecewise((a * c, (a <= b) & (c > d)), (b, (a >= b) | (c < d))),
    sympy.pi * a + sympy.E,
    a - b - c - d,  # signed results: cancellation, negative values
]


def _same(left, right) -> bool:
    """Equal to the bit: nan matches nan, and the sign of a zero counts."""
    if left != left or right != right:
        return left != left and right != right
    return left == right and math.copysign(1.0, left) == math.copysign(1.0, right)


def _scalar_and_array_agree(evaluator, env) -> None:
    """One point as plain floats (Python arithmetic) and as a one-element array (numpy)."""
    with np.errstate(all="ignore"):
        scalar = evaluator(env)
        array = evaluator({k: np.array([v]) for k, v in env.items()})
    assert _same(float(scalar), float(np.broadcast_to(array, (1,))[0])), (env, scalar, array)


@pytest.mark.parametrize("expr", FORMS, ids=str)
def test_floats_and_arrays_give_the_same_bits(expr):
    evaluator = compile_expr(expr, {"one_chip": 1.0})
    rng = random.Random(0)
    names = sorted(s.name for s in expr.free_symbols if s.name != "one_chip")
    for _ in range(200):
        _scalar_and_array_agree(evaluator, {n: 10 ** rng.uniform(-12, 12) for n in names})


EDGES = [0.0, -0.0, 1.0, -1.0, 2.0, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("expr", [sympy.Max(x, a), sympy.Min(x, a), sympy.sqrt(x),
                                  x / a, 1 / x, x * x, sympy.Max(a, x, b), a / (x * b),
                                  sympy.Piecewise((x, x > a), (a, True))], ids=str)
def test_floats_mean_what_numpy_means_at_the_edges(expr):
    # ties of signed zeros (numpy returns the second argument), nan in max/min, square
    # roots of negatives and zero divisors are where Python's float arithmetic and
    # numpy's part ways unless the float path copies numpy's rules
    evaluator = compile_expr(expr)
    for u in EDGES:
        for v in EDGES:
            _scalar_and_array_agree(evaluator, {"x": u, "a": v, "b": 1.0})


def test_hand_worked_values():
    # 2·a·b²/c at a=3, b=5, c=10: 2·3·25/10 = 15
    assert evaluate_ir(to_ir(2 * a * b ** 2 / c), {"a": 3.0, "b": 5.0, "c": 10.0}) == 15.0
    # a**1.5 at a=4: 4·sqrt(4) = 8, exactly representable so exactly rounded
    assert evaluate_ir(to_ir(a ** 1.5), {"a": 4.0}) == 8.0
    # a piecewise picks its first true branch: a=1 < b=2 gives a, a=3 gives b
    step = to_ir(sympy.Piecewise((a, a < b), (b, True)))
    assert evaluate_ir(step, {"a": 1.0, "b": 2.0}) == 1.0
    assert evaluate_ir(step, {"a": 3.0, "b": 2.0}) == 2.0
    # no branch holding gives nan, not a made-up value
    assert math.isnan(evaluate_ir(to_ir(sympy.Piecewise((a, a < b))), {"a": 3.0, "b": 2.0}))
    # Max(a·b, c + d) at 2, 3, 1, 4: max(6, 5) = 6
    assert evaluate_ir(to_ir(sympy.Max(a * b, c + d)),
                       {"a": 2.0, "b": 3.0, "c": 1.0, "d": 4.0}) == 6.0


def test_the_lowering_is_plain_data():
    # x/y is one division (numerator and denominator), the powers 2 and 1/2 exact ops
    assert to_ir(a * b / (c * d)) == ["mul", [["sym", "a"], ["sym", "b"]],
                                      [["sym", "c"], ["sym", "d"]]]
    assert to_ir(sympy.sqrt(a) + b ** 2) in (
        ["add", [["sqrt", ["sym", "a"]], ["sq", ["sym", "b"]]]],
        ["add", [["sq", ["sym", "b"]], ["sqrt", ["sym", "a"]]]])
    kind, top, bottom = to_ir(a * sympy.Symbol("one_chip"), {"one_chip": 1.0})
    assert (kind, sorted(top), bottom) == ("mul", [["num", 1.0], ["sym", "a"]], [])


def test_what_has_no_evaluator_is_refused_by_name():
    with pytest.raises(TypeError, match="gamma"):
        to_ir(sympy.gamma(a))
    with pytest.raises(ValueError, match="unknown IR node"):
        compile_ir(["cube", ["sym", "a"]])


@lru_cache(maxsize=1)
def _model_forms() -> tuple:
    """Each relation's two sides and its max()/min() arguments, with the relation's name."""
    return tuple((relation.name, side) for relation in load_model().relations.values()
                 for side in (relation.lhs, relation.rhs, *(e for _, e in relation.regimes)))


def _check_form(expr, constants, env) -> None:
    ir = to_ir(expr, constants)
    replayed = compile_ir(json.loads(json.dumps(ir)))  # what a cache entry gives back
    engine = compile_expr(expr, constants)
    # random values leave some forms' domains (a difference under a root or a log goes
    # negative or to zero): both sides must then agree on nan or inf, and numpy's warning
    # about it is expected here, not a finding
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        assert _same(float(replayed(env)), float(engine(env)))
        _scalar_and_array_agree(engine, env)


def test_every_relation_of_the_knowledge_base_lowers_and_survives_json():
    model = load_model()
    constants = model.constant_values()
    rng = random.Random(7)
    forms = _model_forms()
    kinds = {type(node).__name__ for _, expr in forms for node in sympy.preorder_traversal(expr)}
    assert {"Max", "Half"} <= kinds  # the relations' forms beyond +, ·, / (max, sqrt)
    for _, expr in forms:
        names = sorted(s.name for s in expr.free_symbols if s.name not in constants)
        for _ in range(20):
            _check_form(expr, constants, {n: 10 ** rng.uniform(-3, 9) for n in names})


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_property_the_model_lowered_matches_sympy(data):
    """Any relation side at any positive values lowers to a tree that survives JSON and
    gives the engine's bits; one without subtraction gives sympy's own value (which
    shares no code with the lowering) to rounding: its every operation is a sum or
    product of positive numbers, each within half an ulp."""
    model = load_model()
    constants = model.constant_values()
    _, expr = data.draw(st.sampled_from(_model_forms()))
    names = sorted(s.name for s in expr.free_symbols if s.name not in constants)
    env = {n: data.draw(st.floats(1e-3, 1e6), label=n) for n in names}
    _check_form(expr, constants, env)
    if cannot_amplify(expr):
        values = {**constants, **env}
        reference = float(expr.subs({s: values[s.name] for s in expr.free_symbols}).evalf(30))
        got = float(compile_expr(expr, constants)(env))
        assert abs(got - reference) <= 1e-12 * abs(reference)


@pytest.mark.slow
def test_every_closed_form_of_every_relation_lowers_exactly():
    # every candidate closed form the engine can compile (each relation solved for each
    # of its quantities), its guards included: the tree from JSON gives the engine's bits
    from chalk.solvers.execution.symbolic_solve import DEFAULT_TIMEOUT, solve_relation

    model = load_model()
    constants = model.constant_values()
    rng = random.Random(11)
    kinds = set()
    for relation in model.relations.values():
        for symbol in relation.symbols:
            if symbol.name not in model.variables:
                continue
            for candidate in solve_relation(relation, symbol.name, DEFAULT_TIMEOUT).candidates:
                forms = [candidate.expr] if candidate.expr is not None else list(candidate.free)
                forms += [side for guard in candidate.guards for side in guard]
                for expr in forms:
                    kinds |= {type(node).__name__ for node in sympy.preorder_traversal(expr)}
                    names = sorted(s.name for s in expr.free_symbols
                                   if s.name not in constants)
                    for _ in range(5):
                        _check_form(expr, constants,
                                    {n: 10 ** rng.uniform(-3, 9) for n in names})
    # solving brings in what the relations do not show: logs and other powers
    assert {"Max", "log", "Rational"} <= kinds


def test_a_sum_of_products_replays_without_numpy():
    # the cached CLI answers without importing numpy (about a third of a second): a tree
    # of sums, products, quotients, square roots and max() must not pull it in
    program = (
        "import sys\n"
        "from chalk.symbolic.ir import evaluate_ir\n"
        "tree = ['max', [['mul', [['sym', 'a'], ['sqrt', ['sym', 'b']]], [['sym', 'c']]],"
        " ['add', [['sym', 'a'], ['inv', ['sym', 'c']]]]]]\n"
        "value = evaluate_ir(tree, {'a': 2.0, 'b': 9.0, 'c': 4.0})\n"
        "print(value, 'numpy' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         check=True).stdout.split()
    # max(2·sqrt(9)/4, 2 + 1/4) = max(1.5, 2.25) = 2.25
    assert out == ["2.25", "False"]
