"""How far a closed-form answer can be trusted (solvers.analysis.conditioning), on every
path: the measurement near a saturation, solve's answer or refusal, and the vectorised
run refusing the same points."""

from __future__ import annotations

import math

import numpy as np
import pytest
from chalk.solvers.analysis.conditioning import cannot_amplify, check, elasticities, refused
from chalk.symbolic.errors import IllConditioned

from chalk import solve
from chalk.compiled import compile_question


def _minus_log_gap(env):
    """-ln(1 - x): positive on (0, 1), saturating as x nears 1, undefined past it."""
    return -np.log(1 - env["x"])


def test_a_step_across_a_saturation_is_not_read_as_an_infinite_elasticity():
    # Regression: a single step of 1e-7 upwards took x = 1 - 5e-8 past 1, where the
    # answer is undefined, and the elasticity was called infinite (so solve refused).
    # By hand: f = -ln(1 - x), d ln f / d ln x = x / ((1 - x) · (-ln(1 - x)));
    # at 1 - x = 5e-8, -ln(5e-8) = 16.811, so (1 - 5e-8) / (5e-8 · 16.811) = 1.1897e6.
    x = 1 - 5e-8
    env = {"x": x}
    found = elasticities(_minus_log_gap, env, ["x"], -math.log(1 - x))
    assert float(found["x"]) == pytest.approx(1.1897e6, rel=1e-3)
    # between warn (1e5) and refuse (1e9): kept, with a warning
    note = check("f", "r", _minus_log_gap, env, ["x"], -math.log(1 - x))
    assert note.startswith("ill-conditioned: a relative change in x moves f 1.2e+06 times")


def test_a_saturating_answer_is_measured_as_a_slope_not_a_secant():
    # A step may stay in the domain and still read a secant: near saturation ln f bends.
    # At 1 - x = 1e-6 the slope is (1 - 1e-6) / (1e-6 · 13.816) = 7.238e4 (-ln 1e-6 =
    # 13.816); a step of 1e-7 moves 1 - x to 9e-7, ln f by ln(13.921 / 13.816) = 7.6e-3,
    # a secant of 7.6e4, 5% high. A step that moves ln f by more than 1e-3 is taken again
    # smaller, which reads the slope.
    x = 1 - 1e-6
    found = elasticities(_minus_log_gap, {"x": x}, ["x"], -math.log(1 - x))
    assert float(found["x"]) == pytest.approx(7.238e4, rel=2e-3)


def test_refused_is_the_scalar_check_per_element():
    # 1 - x = 0.5: slope 0.5 / (0.5 · 0.6931) = 1.44; 1 - x = 5e-8: 1.19e6 (above);
    # 1 - x = 2**-44 = 5.68e-14: (1 / (5.68e-14 · 30.50)) = 5.8e11, past 1e9: refused.
    x = np.array([0.5, 1 - 5e-8, 1 - 2.0 ** -44])
    value = -np.log(1 - x)
    assert refused(_minus_log_gap, {"x": x}, ["x"], value).tolist() == [False, False, True]
    for one, expected in zip(x, (False, False, True), strict=True):
        env, answer = {"x": float(one)}, -math.log(1 - float(one))
        if expected:
            with pytest.raises(IllConditioned):
                check("f", "r", _minus_log_gap, env, ["x"], answer)
        else:
            check("f", "r", _minus_log_gap, env, ["x"], answer)


# Speculative decoding (knowledge/speculative.py): accepted = a (1 - a^k) / (1 - a), so
# k = ln(1 - accepted (1 - a) / a) / ln a, which saturates at accepted = a / (1 - a).

def test_draft_tokens_near_saturation_are_answered_with_a_warning():
    # Regression, seed 588 of tests/test_one_answer.py: solve refused as IllConditioned
    # while Question, evaluate and sweep answered 8.228. By hand, with a = 0.12107297008
    # and decode_tokens_per_step 1.13775087408 (accepted = 0.13775087408, 3.93e-9 below
    # a / (1 - a) = 0.13775087801): 1 - accepted (1 - a) / a = 2.8522e-8, ln of it
    # -17.3725, ln a = -2.11135, so k = 8.228144 (8.2281439778 in 50-digit arithmetic
    # from these two doubles). Its elasticity to a is accepted / (a r ln r) - 1 / ln a
    # = 0.137751 / (0.121073 · 2.8522e-8 · -17.3725) + 0.47 = -2.296e6 (r the 2.8522e-8),
    # and to accepted -accepted (1 - a) / (a r ln r) = -1.0000 / (2.8522e-8 · -17.3725)
    # = 2.018e6. So rounding of 1e-16 costs about 2e-10 of k, and the rule (refuse from
    # 1e9, warn from 1e5) answers it with a warning. A step of 1e-7 in accepted crossed
    # the saturation (1.4e-8 > 3.9e-9) and was read as an infinite elasticity.
    given = {"acceptance_rate": 0.1210729700802734,
             "decode_tokens_per_step": "1.1377508740834665 token/sequence"}
    solution = solve("draft_tokens", given, ["none"])
    assert solution.value("draft_tokens") == pytest.approx(8.2281439778, rel=1e-9)
    note = solution.derivation.steps[-1].note
    assert "ill-conditioned: a relative change in acceptance_rate moves draft_tokens " \
        "2.3e+06 times as much" in note
    compiled = compile_question("draft_tokens", given, ["none"])
    result = compiled.evaluate({"acceptance_rate": np.array([0.1210729700802734])})
    assert not result.refusals
    assert result.values["draft_tokens"][0] == solution.value("draft_tokens")


def test_the_vectorised_run_refuses_where_solve_does():
    # Regression: the vectorised run had no conditioning test, so a sweep answered
    # points solve refuses. With a = 1/2, accepted = 1 - d and k = log2(1 / d), exact in
    # floating point for d a power of two. d = 2**-20: k = 20, elasticity to a about
    # 2 / (d ln(1/d)) = 2 / (9.54e-7 · 13.86) = 1.5e5: answered. d = 2**-40: k = 40,
    # elasticity 2 / (9.09e-13 · 27.73) = 7.9e10, past 1e9: refused, as solve refuses.
    compiled = compile_question("draft_tokens", {"acceptance_rate": 0.5,
                                                 "decode_tokens_per_step": "1.5 token/sequence"},
                                ["none"])
    result = compiled.evaluate({"decode_tokens_per_step": np.array([2 - 2.0 ** -20,
                                                                    2 - 2.0 ** -40])})
    assert result.values["draft_tokens"][0] == pytest.approx(20, rel=1e-12)
    assert list(result.refusals) == [1]
    assert isinstance(result.refusals[1], IllConditioned)
    with pytest.raises(IllConditioned):
        compiled.solve({"decode_tokens_per_step": 2 - 2.0 ** -40})


def test_a_scalar_verdict_is_remembered_by_the_values_it_was_measured_at(monkeypatch):
    # The same two points as above, each pinned as a scalar and asked twice: the second
    # round gives the same answer and the same refusal without measuring again (a fit or
    # a sweep asks every step its varied pins do not reach at each call)
    import chalk.solvers.bulk.vectorised as vectorised

    compiled = compile_question("draft_tokens", {"acceptance_rate": 0.5,
                                                 "decode_tokens_per_step": "1.5 token/sequence"},
                                ["none"])
    measured = []
    original = vectorised.refused
    monkeypatch.setattr(vectorised, "refused",
                        lambda *args: measured.append(1) or original(*args))
    for round_ in range(2):
        for gap, power in ((2.0 ** -40, None), (2.0 ** -20, 20)):
            result = compiled.evaluate({"decode_tokens_per_step": 2 - gap})
            if power is None:
                assert isinstance(result.refusals[0], IllConditioned)
            else:
                assert not result.refusals
                assert result.values["draft_tokens"][0] == pytest.approx(power, rel=1e-12)
        if round_ == 0:
            first = len(measured)  # each point's measured forms (its steps with a
            assert first >= 2      # difference or a logarithm in them)
    assert len(measured) == first


def test_only_differences_and_transcendental_forms_are_measured():
    # Which closed forms skip the measurement: with every quantity positive, a sum's
    # elasticity to x is x's share of it (a / (a + b) here, at most 1) and a max's is its
    # chosen argument's, so neither can reach 1e5; a difference (a - b at a = b (1 +
    # 1e-12) moves 1e12 times its inputs' rounding), a power with a quantity in the
    # exponent (the speculative relation's a^k) and a logarithm can. The CLI cache
    # replays only forms this rule passes (chalk/cli/fast.py); its own copy of the rule
    # let log(a) through, whose elasticity 1 / ln a is unbounded near a = 1.
    from sympy import Max, Rational, log, symbols

    a, b, c = symbols("a b c", positive=True)
    assert cannot_amplify(a * b ** 2 / c)
    assert cannot_amplify((a + b) / (c + Rational(1, 2)))
    assert cannot_amplify(Max(a, b ** 3) * c)
    assert not cannot_amplify(a - b)
    assert not cannot_amplify(a ** c)
    assert not cannot_amplify(log(a) / log(b))
    assert not cannot_amplify(log(a))
    assert not cannot_amplify(a * (1 - b))


def test_a_block_verdict_by_its_bound_is_the_verdict_measured_in_full():
    # The bound screens points out without a singular value decomposition; it must never
    # change a verdict. Rows (1, 1) and (1, 1 + e) over two quantities: the smaller
    # singular value is about e/2, along u = (1, -1)/sqrt(2). An input column (1/2, 1/2)
    # pulls nothing along u, so the relations' own rounding decides: it reaches
    # (|u|max / 2) / (e/2) = 0.71/e, which crosses the line of 1e9 between e = 1e-9 and
    # 1e-10 (e = 0 is flat). Then random 2x2 and 3x3 blocks, 50 of them nearly singular.
    from chalk.solvers.analysis.conditioning import block_verdicts, measured_verdicts

    rng = np.random.default_rng(0)
    e = np.concatenate([10.0 ** -np.arange(2, 13), [0.0]])
    own = np.array([[np.ones_like(e), np.ones_like(e)], [np.ones_like(e), 1 + e]])
    given = np.full((2, 1, e.size), 0.5)
    refused, flat = block_verdicts(own, given)
    expected = measured_verdicts(own, given)
    assert np.array_equal(refused, expected[0]) and np.array_equal(flat, expected[1])
    # the elasticity itself is 1/2 (the input moves both quantities alike): nothing is
    # refused as ill-conditioned, and the direction is open from e = 1e-10 on
    assert not refused.any()
    assert not flat[e >= 1e-9].any() and flat[e <= 1e-10].all()
    for k in (2, 3):
        own = rng.normal(size=(k, k, 500))
        given = rng.normal(size=(k, 2, 500))
        own[:, :, :50] = own[:1, :, :50] * (1 + 1e-12 * rng.normal(size=(k, k, 50)))
        expected = measured_verdicts(own, given)
        assert all(np.array_equal(a, b) for a, b in zip(block_verdicts(own, given), expected,
                                                        strict=True))
        assert expected[0][:50].any() or expected[1][:50].any()


@pytest.mark.parametrize("gap", [5e-8, 1e-6, 0.25, 1e-12, 2.0])
def test_the_measure_at_one_point_is_the_measure_on_arrays_to_the_bit(gap):
    # check() measures one point on floats (solve's path); refused() and elasticities()
    # on arrays: the same steps and arithmetic, so the same numbers. gap = 2 puts x past
    # the saturation (f undefined), 1e-12 nearer to it than the smallest step.
    from chalk.solvers.analysis.conditioning import _elasticities_at

    x = 1 - gap
    env = {"x": x, "y": 3.0}
    value = -math.log(gap) if gap < 1 else 1.0  # x = -1 for gap 2: not measured
    one = _elasticities_at(_minus_log_gap, env, ["x", "y"], value)
    many = elasticities(_minus_log_gap, env, ["x", "y"], value)
    assert one.keys() == many.keys()
    for name, measured in many.items():
        assert one[name] == float(measured) or (math.isnan(one[name])
                                                and math.isnan(float(measured)))
