"""Log-space gradients are taken over the trees evaluation runs, and are the derivatives.

The reference is sympy's own ``diff``, which shares no code with the tree or its forward
differentiation.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pytest
import sympy
from chalk.knowledge import load_model
from chalk.solvers.analysis.gradient import compile_log_gradient
from chalk.solvers.execution.symbolic_solve import branches
from hypothesis import assume, given, settings
from hypothesis import strategies as st

a, b, c = sympy.symbols("a b c", positive=True)


def test_hand_worked_gradients():
    # a·b/c at 2, 3, 4: value 1.5; x·∂f/∂x is +f for a and b, -f for c
    value, grad = compile_log_gradient(a * b / c)({"a": 2.0, "b": 3.0, "c": 4.0})
    assert value == 1.5 and grad == {"a": 1.5, "b": 1.5, "c": -1.5}
    # sqrt(a) + b² at a=4, b=3: value 2 + 9 = 11; a·(1/(2·sqrt a)) = sqrt(a)/2 = 1,
    # b·2b = 2b² = 18
    value, grad = compile_log_gradient(sympy.sqrt(a) + b ** 2)({"a": 4.0, "b": 3.0})
    assert value == 11.0 and grad == {"a": 1.0, "b": 18.0}
    # a**b at a=2, b=3: value 8; a·b·a**(b-1) = b·8 = 24; b·ln(a)·a**b = 3·ln2·8
    value, grad = compile_log_gradient(a ** b)({"a": 2.0, "b": 3.0})
    assert value == 8.0 and grad["a"] == 24.0
    assert math.isclose(grad["b"], 24 * math.log(2), rel_tol=1e-15)
    # a unit constant is a number, not a direction: a·one_chip has no one_chip entry
    value, grad = compile_log_gradient(a * sympy.Symbol("one_chip"), {"one_chip": 1.0})(
        {"a": 5.0})
    assert value == 5.0 and grad == {"a": 5.0}


def test_a_max_takes_its_active_argument_or_a_mixture():
    form = sympy.Max(a, 3 * b)
    env = {"a": 1.0, "b": 1.0}  # max(1, 3) = 3: the b regime
    assert compile_log_gradient(form)(env) == (3.0, {"b": 3.0})
    # the surrogate mixes the regimes by weight: d ln m = (1·d ln a + 3·d ln b)/(1 + 3),
    # so x·∂m/∂x = 3·(1/4) for a and 3·(3/4) for b
    assert compile_log_gradient(form, surrogate=True)(env) == (3.0, {"a": 0.75, "b": 2.25})


def test_a_whole_count_follows_what_it_rounds():
    # floor(a) at 150.6 is 150 and ceiling(a) at 16.67 is 17; the slope of each is taken
    # as its argument's (a·1), so structure sees the count follow a
    assert compile_log_gradient(sympy.floor(a))({"a": 150.6}) == (150.0, {"a": 150.6})
    assert compile_log_gradient(sympy.ceiling(a))({"a": 16.67}) == (17.0, {"a": 16.67})
    # float noise next to a whole number is no step: 150 - 3e-14 sequences fit as 150,
    # 17 + 4e-15 replicas need 17; elementwise on arrays alike
    assert compile_log_gradient(sympy.floor(a))({"a": 150 - 3e-14})[0] == 150.0
    assert compile_log_gradient(sympy.ceiling(a))({"a": 17 + 4e-15})[0] == 17.0
    value, grad = compile_log_gradient(sympy.floor(a))({"a": np.array([150.6, 150 - 3e-14])})
    assert value.tolist() == [150.0, 150.0] and grad["a"].tolist() == [150.6, 150 - 3e-14]


def test_a_piecewise_form_has_no_gradient():
    with pytest.raises(TypeError, match="piecewise"):
        compile_log_gradient(sympy.Piecewise((a, a < b), (b, True)))


@lru_cache(maxsize=1)
def _model_forms() -> tuple:
    """Each relation's sides and those of each of its max()/min() branches."""
    out = []
    for relation in load_model().relations.values():
        out += [relation.lhs, relation.rhs]
        for branch in branches(relation, set(relation.symbols)):
            out += [branch.lhs, branch.rhs]
    return tuple(out)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_property_the_model_gradients_are_sympys_derivatives(data):
    constants = load_model().constant_values()
    expr = data.draw(st.sampled_from(_model_forms()))
    names = sorted(s.name for s in expr.free_symbols if s.name not in constants)
    env = {n: data.draw(st.floats(1e-3, 1e6), label=n) for n in names}
    values = {**constants, **env}
    at = {s: values[s.name] for s in expr.free_symbols}
    # a derivative has no meaning on a tie of a max(): draw again elsewhere
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, (sympy.Max, sympy.Min)):
            sides = sorted(float(arg.subs(at)) for arg in node.args)
            assume(not math.isclose(sides[-1], sides[-2], rel_tol=1e-9))
        # nor where a power's base is a sum cancelled to its rounding (1 - 1.9/1.9 is 0
        # in floats and 1.1e-16 in sympy's): both slopes are then rounding, told apart
        # only by the order of operations (the exact zero is test_a_general_power_...)
        if isinstance(node, sympy.Pow) and isinstance(node.base, sympy.Add):
            terms = [abs(float(term.subs(at))) for term in node.base.args]
            assume(abs(float(node.base.subs(at))) > 1e-9 * max(terms))
    try:
        reference = float(expr.subs(at).evalf(30))
        expected = {s.name: float((s * sympy.diff(expr, s)).subs(at).evalf(30))
                    for s in expr.free_symbols if s.name not in constants}
    except TypeError:  # complex: a difference gone negative under a fractional power
        reference = math.nan
    # off the form's domain (a base of 0 under ln, say) there is nothing to compare
    assume(math.isfinite(reference) and all(map(math.isfinite, expected.values())))
    value, grad = compile_log_gradient(expr, constants)(env)
    # rounding in a sum of terms of mixed sign is relative to the largest quantity in play
    scale = max([abs(reference), *map(abs, expected.values())])
    assert abs(value - reference) <= 1e-12 * scale
    assert set(grad) <= set(expected)
    for n, d in expected.items():
        assert abs(grad.get(n, 0.0) - d) <= 1e-9 * scale, (expr, n)


def test_on_arrays_each_element_is_its_own_point():
    # max(a, 3b) + ln(c): at (a, b, c) = (5, 1, e) the a regime wins, value 5 + 1 = 6,
    # a·∂/∂a = 5, c·(1/c) = 1; at (1, 1, e) the b regime, value 3 + 1 = 4, b·3 = 3
    form = sympy.Max(a, 3 * b) + sympy.log(c)
    value, grad = compile_log_gradient(form)(
        {"a": np.array([5.0, 1.0]), "b": np.array([1.0, 1.0]), "c": np.full(2, math.e)})
    assert value.tolist() == [6.0, 4.0]
    assert grad["a"].tolist() == [5.0, 0.0] and grad["b"].tolist() == [0.0, 3.0]
    assert grad["c"].tolist() == [1.0, 1.0]
    # sqrt(a) with a = 0 at one element: the slope there is infinite, as on a float
    value, grad = compile_log_gradient(sympy.sqrt(a) * b)({"a": np.array([0.0, 4.0]),
                                                           "b": np.array([1.0, 1.0])})
    assert value.tolist() == [0.0, 2.0] and grad["b"].tolist() == [0.0, 2.0]
    assert math.isnan(grad["a"][0]) or math.isinf(grad["a"][0])
    assert grad["a"][1] == 1.0  # a·(1/(2 sqrt a)) = sqrt(4)/2


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_property_arrays_give_each_element_the_float_answer(data):
    constants = load_model().constant_values()
    expr = data.draw(st.sampled_from(_model_forms()))
    names = sorted(s.name for s in expr.free_symbols if s.name not in constants)
    points = [{n: data.draw(st.floats(1e-3, 1e6), label=f"{n}[{i}]") for n in names}
              for i in range(3)]
    evaluator = compile_log_gradient(expr, constants)
    try:
        with np.errstate(all="ignore"):
            scalar = [evaluator(p) for p in points]
    except (ArithmeticError, ValueError):
        assume(False)  # off the form's domain on floats: nothing to compare
    value, grad = evaluator({n: np.array([p[n] for p in points]) for n in names})
    for i, (v, g) in enumerate(scalar):
        # numpy's vectorised pow may round differently from libm's by an ulp (AVX-512:
        # 167018.875**0.001 is ...565 against ...568), and a sum that cancels amplifies
        # that by the sum of its terms over its value: the two answers agree to a few
        # ulps times that amplification, not to a few ulps
        rel = 1e-15 * _cancellation(expr, {**constants, **points[i]})
        assert np.broadcast_to(value, (3,))[i] == pytest.approx(v, rel=rel, abs=0)
        for n, d in g.items():
            assert np.broadcast_to(grad[n], (3,))[i] == pytest.approx(d, rel=rel, abs=1e-300)


def _cancellation(expr, at) -> float:
    """How much the sums in ``expr`` amplify the rounding of their terms at ``at``: the
    product, over its sums, of the sum of the terms' magnitudes over the sum's own."""
    values = {s: at[s.name] for s in expr.free_symbols}
    factor = 1.0
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Add):
            total = abs(float(node.subs(values)))
            terms = sum(abs(float(term.subs(values))) for term in node.args)
            factor *= terms / total if total else math.inf
    assume(math.isfinite(factor))
    return factor


def test_a_general_power_of_a_base_at_zero_has_its_limiting_slopes():
    # Regression (hypothesis draw): the expert-coverage form (1 - k/E)**t with k = E and
    # t = 1 divided by the base. By hand, with u = 1 - k/E = 0 and t = 1: the value is 0;
    # k·d/dk = k·t·u**(t-1)·(-1/E) = -k/E = -1, E·d/dE = E·t·u**(t-1)·(k/E²) = k/E = 1;
    # t·d/dt = t·u**t·ln u -> 0 as u -> 0.
    k, e, t = sympy.symbols("k e t", positive=True)
    form = (1 - k / e) ** t
    value, grad = compile_log_gradient(form)({"k": 124.5, "e": 124.5, "t": 1.0})
    assert value == 0.0
    assert grad["k"] == pytest.approx(-1.0, rel=1e-12)
    assert grad["e"] == pytest.approx(1.0, rel=1e-12)
    assert grad["t"] == 0.0
    # on arrays, the same element by element beside an ordinary point (u = 1/2, t = 2:
    # value 1/4, k·d/dk = -k·2·u/E = -1/2, t·d/dt = 2·(1/4)·ln(1/2))
    value, grad = compile_log_gradient(form)({"k": np.array([124.5, 1.0]),
                                              "e": np.array([124.5, 2.0]),
                                              "t": np.array([1.0, 2.0])})
    assert value.tolist() == [0.0, 0.25]
    assert grad["k"].tolist() == pytest.approx([-1.0, -0.5], rel=1e-12)
    assert grad["t"].tolist() == pytest.approx([0.0, 0.5 * math.log(0.5)], rel=1e-12)
