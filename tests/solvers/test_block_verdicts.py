"""A simultaneous block's solution is vouched for point by point in the vectorised run as
``solve`` vouches for it (issue 22): the same conditioning rule, the same refusal.

The model is test_blocks' nearly parallel pair, a = x + y and b = x + (1 + eps)·y, with
t = x·y². By hand: b - a = eps·y, so y = (b - a)/eps, x = a - y, and the elasticity of y
to b is b/(b - a) = b/(eps·y). With eps = 1e-8, a = 2:

- b = 2 + 1e-8 gives y = 1, x = 1, t = 1 and an elasticity of 2/1e-8 = 2e8: below the
  refusal line of 1e9 (solvers.tolerances.CONDITIONING), so about eight digits survive
  and every path answers, with the conditioning's warning;
- b = 2 + 1e-9 gives y = 0.1, x = 1.9, t = 0.019 and an elasticity of 2/1e-9 = 2e9:
  above the line, refused as ill-conditioned on every path.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy
from chalk.symbolic.errors import IllConditioned
from synthetic_models import synthetic_model
from test_blocks import _nearly_parallel_model

from chalk import Question, solve
from chalk.applications.sweep import sweep
from chalk.compiled import compile_question

EPS = sympy.Rational(1, 10**8)
ANSWERED, REFUSED = 2 + 1e-8, 2 + 1e-9


def _exact_t(b: float) -> float:
    """t for the double ``b`` (and a = 2), in exact fractions: y = (b - 2)/eps, x = 2 - y."""
    y = (Fraction(b) - 2) / Fraction(1, 10**8)
    return float((2 - y) * y * y)


# The answer itself is fixed only to the elasticity times rounding: 2e8 × 2.2e-16 (a
# double's relative spacing) is 4.4e-8 per rounding in the solver's arithmetic, so
# paths that round differently agree to about 1e-7, not to 1e-9.
TO_CONDITIONING = 1e-7


def test_the_nearly_parallel_block_is_answered_with_a_warning_not_called_flat():
    # Regression: solve called this block a family (singular values at 1e-9 of the
    # largest over the whole question, which the t row inflates) and refused t as "any
    # value the relations allow", while evaluate answered 1.00000003. By the conditioning
    # rule both paths follow, an elasticity of 2e8 is answered.
    model = _nearly_parallel_model(EPS)
    s = solve("t", {"a": 2, "b": ANSWERED}, ["none"], model=model)
    assert s.value("t") == pytest.approx(_exact_t(ANSWERED), rel=TO_CONDITIONING)
    assert "ill-conditioned" in s.derivation.steps[0].note
    assert _exact_t(ANSWERED) == pytest.approx(1.0, rel=1e-7)  # the hand value, t = 1


def test_every_path_answers_or_refuses_the_block_as_solve_does():
    model = _nearly_parallel_model(EPS)
    pins = {"a": 2, "b": ANSWERED}
    exact = _exact_t(ANSWERED)
    with pytest.raises(IllConditioned):
        solve("t", {"a": 2, "b": REFUSED}, ["none"], model=model)
    # evaluate: the refused point is NaN with solve's refusal, the other answered
    run = compile_question("t", pins, ["none"], model=model).evaluate(
        {"b": np.array([ANSWERED, REFUSED])})
    assert run.values["t"][0] == pytest.approx(exact, rel=TO_CONDITIONING)
    assert np.isnan(run.values["t"][1]) and set(run.refusals) == {1}
    assert isinstance(run.refusals[1], IllConditioned)
    # Question, at one point and over an array
    question = Question("t", pins, ["none"], model=model)
    assert question.magnitudes()["t"] == pytest.approx(exact, rel=TO_CONDITIONING)
    with pytest.raises(IllConditioned):
        question.magnitudes(b=REFUSED)
    out = question.magnitudes(b=np.array([REFUSED, ANSWERED]))["t"]
    assert np.isnan(out[0]) and out[1] == pytest.approx(exact, rel=TO_CONDITIONING)
    assert isinstance(question.refusals()[0], IllConditioned)
    # sweep: b from 2 + 1e-9 to 2 + 1e-8 in two steps; its ends as above
    table = sweep("t", "b", REFUSED, ANSWERED, 2, given={"a": 2}, presets=["none"],
                  model=model)
    assert np.isnan(table.y_values["t"][0]) and isinstance(table.refusals[0], IllConditioned)
    assert table.y_values["t"][1] == pytest.approx(exact, rel=TO_CONDITIONING)


def test_the_vectorised_run_itself_refuses_the_ill_conditioned_points():
    # Regression: the run answered every point of a block, leaving nothing for solve to
    # refuse. Over b = 2 + 1e-8, 2 + 1e-9, 2 + 1e-8: the middle one (elasticity 2e9) is
    # NaN and counted, before any point is handed to solve (settle=0).
    model = _nearly_parallel_model(EPS)
    question = compile_question("t", {"a": 2, "b": ANSWERED}, ["none"], model=model)
    run = question.evaluate({"b": np.array([ANSWERED, REFUSED, ANSWERED])}, settle=0)
    assert run.unsettled.tolist() == [False, True, False]
    assert run.values["t"][[0, 2]] == pytest.approx([_exact_t(ANSWERED)] * 2,
                                                   rel=TO_CONDITIONING)


def test_a_well_conditioned_block_answers_alike_on_every_path():
    # a = x + y, b = x + 2y (eps = 1): at a = 3, b = 5 by hand y = b - a = 2, x = 1,
    # t = x·y² = 4; at b = 4, y = 1, x = 2, t = 2. The elasticity of y to b is
    # b/(b - a) = 2.5 or 4: nothing to refuse, and the paths agree to rounding.
    model = _nearly_parallel_model(1)
    pins = {"a": 3, "b": 5}
    assert solve("t", pins, ["none"], model=model).value("t") == pytest.approx(4.0, rel=1e-12)
    run = compile_question("t", pins, ["none"], model=model).evaluate(
        {"b": np.array([5.0, 4.0])}, settle=0)
    assert not run.unsettled.any()
    assert run.values["t"] == pytest.approx([4.0, 2.0], rel=1e-9)
    assert Question("t", pins, ["none"], model=model).magnitudes(b=4.0)["t"] == pytest.approx(
        2.0, rel=1e-9)


def test_a_block_of_products_of_powers_is_judged_once_for_all_its_points():
    # x·y = a and x·y^(1 + 1e-10) = b: in log space the rows are (1, 1) and (1, 1 + 1e-10)
    # at every solution, so ln y = (ln b - ln a)/1e-10 and its elasticity to b is 1e10
    # wherever the block is solved: refused at each point, by one measurement. With
    # a = b, y^(1e-10) = 1 gives y = 1 and x = a: a solution at every point.
    exponent = 1 + sympy.Rational(1, 10**10)
    model = synthetic_model(["a", "b", "x", "y", "t"], [
        ("product_a", lambda s: s["a"], lambda s: s["x"] * s["y"]),
        ("product_b", lambda s: s["b"], lambda s: s["x"] * s["y"] ** exponent),
        ("t", lambda s: s["t"], lambda s: s["x"] + s["y"]),
    ])
    with pytest.raises(IllConditioned):
        solve("t", {"a": 2, "b": 2}, ["none"], model=model)
    run = compile_question("t", {"a": 2, "b": 2}, ["none"], model=model).evaluate(
        {"a": np.array([2.0, 3.0, 4.0]), "b": np.array([2.0, 3.0, 4.0])}, settle=0)
    assert run.unsettled.all()
    run = compile_question("t", {"a": 2, "b": 2}, ["none"], model=model).evaluate(
        {"a": np.array([2.0, 3.0]), "b": np.array([2.0, 3.0])}, settle=2)
    assert all(isinstance(e, IllConditioned) for e in run.refusals.values())
    assert set(run.refusals) == {0, 1}
