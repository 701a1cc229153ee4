"""Monte Carlo through a block torn at several quantities: batched Newton, its fallback to
the block's own search, and the limits on long runs."""

import dataclasses
import re

import numpy as np
import pytest
from chalk.solvers.bulk import batched_newton, limits, uncertainty, vectorised_blocks
from chalk.solvers.bulk.prediction import Prediction
from chalk.solvers.bulk.vectorised import evaluate
from chalk.solvers.execution.execute import compile_plan, run_steps
from chalk.solvers.execution.strategies import NEWTON_MULTI_START
from chalk.solvers.planning.plan import make_plan
from chalk.solvers.tolerances import BATCH_NEWTON, LONG_WORK
from chalk.symbolic.errors import UsageError
from chalk.symbolic.model import build_model
from chalk.symbolic.relations import Relation, definition
from chalk.symbolic.uncertain import Spread
from chalk.symbolic.variables import Variable
from synthetic import squares_model

from chalk import solve
from chalk.cli.main import main

MODEL = squares_model()  # x^2 = (p - q + r) / 2 by hand (benchmarks/synthetic.py)


def _compiled():
    plan = make_plan(MODEL, frozenset("pqr"), ("x", "y", "z"))
    compiled = compile_plan(MODEL, plan)
    (block,) = [s for s in compiled.steps if s.kind == "block"]
    assert all(b.strategy == NEWTON_MULTI_START for b in block.block_branches)
    return compiled


def _by_hand(p, q, r):
    x2 = (p - q + r) / 2
    y2 = p - x2
    return np.sqrt(x2), np.sqrt(y2), np.sqrt(q - y2)


@pytest.mark.slow  # forked sympy solves of the synthetic block, then a dozen scalar searches
def test_batched_newton_gives_the_scalar_search_s_samples():
    compiled = _compiled()
    p = np.linspace(4.5, 5.5, 12)
    batched = evaluate(compiled, {"p": p, "q": 13.0, "r": 10.0}, size=p.size)
    assert not batched.scalar_steps and not batched.failed and not batched.one_at_a_time
    for i, value in enumerate(p):
        scalar, _, _ = run_steps(compiled, {"p": float(value), "q": 13.0, "r": 10.0})
        for name in "xyz":
            assert batched.values[name][i] == pytest.approx(scalar[name], rel=1e-12)
    # and both are the hand solution: p = 5 gives x^2 = (5 - 13 + 10)/2 = 1, y^2 = 4, z^2 = 9
    x, y, z = _by_hand(p, 13.0, 10.0)
    assert np.allclose(batched.values["x"], x, rtol=1e-12)
    assert np.allclose(batched.values["y"], y, rtol=1e-12)
    assert np.allclose(batched.values["z"], z, rtol=1e-12)


@pytest.mark.slow  # forked sympy solves of the synthetic block
def test_many_samples_match_the_hand_solution():
    p = np.random.default_rng(1).uniform(4.5, 5.5, 5000)
    q = np.random.default_rng(2).uniform(12.0, 14.0, 5000)
    result = evaluate(_compiled(), {"p": p, "q": q, "r": 10.0}, size=p.size)
    # x^2 = (p - q + 10)/2 stays between (4.5 - 14 + 10)/2 = 0.25 and 1.75: all physical
    assert not result.failed and not result.ambiguous
    for name, want in zip("xyz", _by_hand(p, q, 10.0), strict=True):
        assert np.allclose(result.values[name], want, rtol=1e-10)


@pytest.mark.slow  # forked sympy solves of the synthetic block, then 20 scalar searches
def test_samples_newton_does_not_reach_are_solved_alone_and_counted(monkeypatch):
    # With no Newton step allowed, only the pilots (BATCH_NEWTON.pilots = 3 samples, solved
    # by the block's own search first) start on their solution; the other 17 must go to
    # that search, be counted, and still get the hand solution.
    monkeypatch.setattr(batched_newton, "BATCH_NEWTON",
                        dataclasses.replace(BATCH_NEWTON, iterations=0))
    p = np.linspace(4.6, 5.4, 20)
    result = evaluate(_compiled(), {"p": p, "q": 13.0, "r": 10.0}, size=p.size)
    assert BATCH_NEWTON.pilots == 3
    assert result.one_at_a_time == {"x, y, z": 17}
    assert np.allclose(result.values["x"], _by_hand(p, 13.0, 10.0)[0], rtol=1e-9)


@pytest.mark.slow  # forked sympy solves of the synthetic block
def test_a_range_through_the_block_has_the_hand_interval():
    s = solve("x", {"p": "4.5..5.5", "q": 13, "r": 10}, ["none"], model=MODEL, samples=20_000)
    assert not s.uncertainty.notes
    # p log-uniform on 4.5..5.5: its 5th and 95th percentiles are 4.5 * (5.5/4.5)^0.05 and
    # 4.5 * (5.5/4.5)^0.95, and x = sqrt((p - 3)/2) rises with p
    low, high = (4.5 * (5.5 / 4.5) ** f for f in (0.05, 0.95))
    got_low, got_high = (q.magnitude for q in s.interval("x"))
    assert got_low == pytest.approx(np.sqrt((low - 3) / 2), rel=2e-3)
    assert got_high == pytest.approx(np.sqrt((high - 3) / 2), rel=2e-3)


def _limits(monkeypatch, **changes):
    """LONG_WORK with ``changes``, where Monte Carlo and the limit check read it."""
    changed = dataclasses.replace(LONG_WORK, **changes)
    monkeypatch.setattr(uncertainty, "LONG_WORK", changed)
    monkeypatch.setattr(limits, "LONG_WORK", changed)


def test_a_long_run_is_refused_with_its_estimate(monkeypatch):
    # the 200K-crossover deduction, closed form: kv = active / (300 * 200e3) (lecture)
    given = {"context_crossover": "200k token", "active_params": "100e9..300e9 param"}
    _limits(monkeypatch, pilot_above=1000, max_seconds=1e-9)
    with pytest.raises(UsageError) as info:
        solve("kv_bytes_per_token", given, "lecture", samples=300_000)
    message = info.value.message
    assert message.startswith("300,000 samples through this plan would take about ")
    fits = int(re.fullmatch(r".*; use --samples (\d+) or fewer", message).group(1))
    assert fits < 300_000


def test_the_command_refuses_a_long_run_in_one_line(monkeypatch, capsys):
    _limits(monkeypatch, pilot_above=1000, max_seconds=1e-9)
    status = main(["solve", "kv_bytes_per_token", "--preset", "lecture",
                   "--given", "context_crossover=200k token",
                   "--given", "active_params=100e9..300e9 param", "--samples", "300000"])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err.startswith("chalk: error: 300,000 samples through this plan would take about")
    assert err.count("\n") == 1


def test_a_run_too_large_for_memory_is_refused_with_what_it_would_hold(monkeypatch):
    # Held throughout: active_params drawn, kv_bytes_per_token kept, and the finite copy
    # sorted for percentiles, 8 bytes each per sample: 300,000 x 8 x 3 = 7.2 MB. With a
    # 1 MB limit, 300,000 x 1/7.2 = 41,666 samples fit: 41,000 to two figures.
    given = {"context_crossover": "200k token", "active_params": "100e9..300e9 param"}
    _limits(monkeypatch, pilot_above=1000, max_bytes=1e6)
    with pytest.raises(UsageError) as info:
        solve("kv_bytes_per_token", given, "lecture", samples=300_000)
    assert " and 7.2 MB (limits " in info.value.message
    assert info.value.message.endswith("use --samples 41000 or fewer")


def test_samples_within_the_limits_are_evaluated_in_chunks(monkeypatch):
    # chunks of 1,000 over 2,500 samples: the answer is the same as in one piece
    given = {"context_crossover": "200k token", "active_params": "100e9..300e9 param"}
    whole = solve("kv_bytes_per_token", given, "lecture", samples=2500)
    _limits(monkeypatch, chunk=1000)
    chunked = solve("kv_bytes_per_token", given, "lecture", samples=2500)
    assert chunked.interval("kv_bytes_per_token") == whole.interval("kv_bytes_per_token")
    # and it is the hand interval: log-uniform active params over 100e9..300e9, divided by
    # 300 FLOP/byte x 200e3 token: 5th percentile 100e9 * 3^0.05 / 6e7
    low = chunked.interval("kv_bytes_per_token", "byte/token")[0].magnitude
    assert low == pytest.approx(100e9 * 3 ** 0.05 / 6e7, rel=1e-2)


@pytest.mark.slow  # a forked sympy solve that finds no closed form
def test_a_relation_with_no_closed_form_is_scanned_over_every_sample_at_once():
    # y = x^5 + x has no solution in radicals, so the step is numeric. It rises with x, so
    # each y has one root: y = 2 gives x = 1 (1 + 1), y = 34 gives x = 2 (32 + 2).
    variables = [Variable(n, "1", "synthetic", typical=1.0) for n in "xy"]
    x, y = (v.symbol for v in variables)
    model = build_model(variables, [Relation("quintic", y, x ** 5 + x, "synthetic",
                                             definition())])
    compiled = compile_plan(model, make_plan(model, frozenset("y"), ("x",)))
    assert [s.kind for s in compiled.steps] == ["numeric"]
    ys = np.array([2.0, 34.0, 1.5, 2.5, 10.0])
    result = evaluate(compiled, {"y": ys}, size=ys.size)
    assert not result.scalar_steps and not result.one_at_a_time
    assert result.values["x"][:2] == pytest.approx([1.0, 2.0], rel=1e-14)
    for i, value in enumerate(ys):
        scalar, _, _ = run_steps(compiled, {"y": float(value)})
        assert result.values["x"][i] == pytest.approx(scalar["x"], rel=1e-14)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_each_sample_s_newton_step_solves_its_own_system(k):
    # Cramer's rule (k <= 3) and the batched inverse (k = 4) against numpy's solve of
    # each sample's system alone; the differences are J times the difference step h
    rng = np.random.default_rng(k)
    jacobians = rng.uniform(-2, 2, (k, k, 5)) + 3 * np.eye(k)[:, :, None]
    f = rng.uniform(-1, 1, (k, 5))
    newton, regular = batched_newton._factor(jacobians * BATCH_NEWTON.difference_step)
    step = newton(f)
    assert regular.all()
    for m in range(5):
        assert step[:, m] == pytest.approx(-np.linalg.solve(jacobians[:, :, m], f[:, m]),
                                           rel=1e-6)


def test_a_singular_jacobian_is_named_and_not_stepped_on():
    # rows (1, 2) and (2, 4): determinant 1*4 - 2*2 = 0
    jacobian = np.array([[[1.0], [2.0]], [[2.0], [4.0]]])
    _, regular = batched_newton._factor(jacobian)
    assert not regular[0]


def test_batched_newton_solves_a_hand_made_system_in_log_space():
    # x y = a and x / y = b: x = sqrt(a b), y = sqrt(a / b). In ln x, ln y the relative
    # residuals (lhs - rhs)/(|lhs| + |rhs|) vanish there. Samples start together at
    # x = y = 1, as they do from a pilot's solution; a NaN start is not attempted.
    a = np.array([2.0, 6.0, 0.5, 9.0, 3.0])
    b = np.array([8.0, 1.5, 2.0, 4.0, 3.0])
    start = np.zeros((2, 5))
    start[:, 4] = np.nan
    log_x, solved = batched_newton.solve(_products(a, b), start, 1e-10, 1e-13)
    assert solved.tolist() == [True, True, True, True, False]
    # a = 2, b = 8: x = 4, y = 1/2; a = 6, b = 1.5: x = 3, y = 2; a = 0.5, b = 2: x = 1,
    # y = 1/2; a = 9, b = 4: x = 6, y = 3/2
    assert np.exp(log_x[:, :4]) == pytest.approx(
        np.array([[4.0, 3.0, 1.0, 6.0], [0.5, 2.0, 0.5, 1.5]]), rel=1e-12)


@pytest.mark.slow  # forked sympy solves of the synthetic block, then a dozen scalar searches
def test_samples_in_several_batches_are_the_scalar_search_s(monkeypatch):
    # 12 samples in batches of 5 (5, 5, 2): each batch starts from the pilot's solution
    # and takes its own first step, and still lands where the scalar search does
    _in_batches(monkeypatch, 5)
    compiled = _compiled()
    p = np.linspace(4.5, 5.5, 12)
    batched = evaluate(compiled, {"p": p, "q": 13.0, "r": 10.0}, size=p.size)
    assert not batched.failed and not batched.one_at_a_time
    for i, value in enumerate(p):
        scalar, _, _ = run_steps(compiled, {"p": float(value), "q": 13.0, "r": 10.0})
        for name in "xyz":
            assert batched.values[name][i] == pytest.approx(scalar[name], rel=1e-12)
    assert np.allclose(batched.values["x"], _by_hand(p, 13.0, 10.0)[0], rtol=1e-12)


def test_a_prediction_reproduces_a_polynomial_in_the_logs_of_its_inputs():
    # ln x = 1 + 2 u - u^2 / 2 with u = ln p: a fit of degree 6 (one input) has it
    # exactly; x = p elsewhere is a second unknown, ln x = u
    assert BATCH_NEWTON.fit_degrees[0] == 6 and BATCH_NEWTON.fit_samples_per_term == 8
    p = np.exp(np.linspace(-1.0, 1.0, 80))
    u = np.log(p)
    log_x = np.array([1 + 2 * u - u ** 2 / 2, u])
    fitted = Prediction.fit({"p": p}, log_x)
    at = np.array([0.5, 2.0])
    assert fitted({"p": at}, 2) == pytest.approx(
        np.array([1 + 2 * np.log(at) - np.log(at) ** 2 / 2, np.log(at)]), abs=1e-12)
    # ln p fitted from -1 to 1: within 1.5 half-ranges (ln p up to 1.5) a prediction,
    # beyond (ln p = 1.6 or -1.6) none
    assert BATCH_NEWTON.fit_reach == 1.5
    assert np.isfinite(fitted({"p": np.exp([1.4, -1.4])}, 2)).all()
    assert np.isnan(fitted({"p": np.exp([1.6, -1.6])}, 2)).all()
    # seven terms (1, u, ..., u^6) need 7 x 8 = 56 solved samples: 55 are too few
    log_x[:, 55:] = np.nan
    assert Prediction.fit({"p": p}, log_x) is None
    # five varying inputs are more than a fit is made for
    assert Prediction.fit({n: p for n in "abcde"}, np.array([u])) is None


def _in_batches(monkeypatch, size):
    monkeypatch.setattr(vectorised_blocks, "BATCH_NEWTON",
                        dataclasses.replace(BATCH_NEWTON, batch=size))


@pytest.mark.slow  # forked sympy solves of the synthetic block, then five scalar searches
def test_later_batches_start_from_a_fit_of_the_first_and_land_on_the_same_solutions(
        monkeypatch):
    # 100 samples in batches of 60: the first 60 from the pilot's solution fit the
    # polynomial of degree 6 in one input (7 terms x 8 = 56 samples needed), the other
    # 40 start from it
    _in_batches(monkeypatch, 60)
    compiled = _compiled()
    p = np.linspace(4.5, 5.5, 100)
    seeds = {}
    batched = evaluate(compiled, {"p": p, "q": 13.0, "r": 10.0}, size=p.size, seeds=seeds)
    assert any(fits for key, fits in seeds.items() if isinstance(key, tuple))
    assert not batched.failed and not batched.one_at_a_time
    for name, want in zip("xyz", _by_hand(p, 13.0, 10.0), strict=True):
        assert np.allclose(batched.values[name], want, rtol=1e-12)
    for i in (45, 60, 75, 90, 99):
        scalar, _, _ = run_steps(compiled, {"p": float(p[i]), "q": 13.0, "r": 10.0})
        for name in "xyz":
            assert batched.values[name][i] == pytest.approx(scalar[name], rel=1e-12)


@pytest.mark.slow  # forked sympy solves of the synthetic block
def test_a_sample_its_prediction_misleads_starts_again_from_the_shared_start(monkeypatch):
    # every predicted start e^30 times too large: Newton does not come back from there
    # within its steps, so each such sample is started again from the one start given
    # (the hand solution at p = 4.5), and every sample is solved from it
    _in_batches(monkeypatch, 60)
    real = Prediction.__call__
    monkeypatch.setattr(Prediction, "__call__",
                        lambda self, inputs, count: real(self, inputs, count) + 30.0)
    (block,) = [s for s in _compiled().steps if s.kind == "block"]
    p = np.linspace(4.5, 5.5, 100)
    start = dict(zip("xyz", (float(v) for v in _by_hand(4.5, 13.0, 10.0)), strict=True))
    for branch in block.block_branches:
        (scope,) = vectorised_blocks._newton_solutions(
            branch, {"p": p, "q": 13.0, "r": 10.0}, p.size, [start], inputs=("p",), fits={})
        assert np.allclose(scope["x"], _by_hand(p, 13.0, 10.0)[0], rtol=1e-12)


def _products(a, b):
    """x y = a and x / y = b in ln x, ln y, as relative residuals."""
    def residual(log_x, index):
        x, y = np.exp(log_x)
        rows = [(x * y, a[index]), (x / y, b[index])]
        return np.array([(left - right) / (np.abs(left) + np.abs(right))
                         for left, right in rows])
    return residual


def test_the_inverse_jacobian_at_a_solution_and_a_step_with_it():
    # at a solution of x y = a, x / y = b, d[(xy - a)/(xy + a)]/d ln x = 2 a xy / (xy + a)^2
    # = 1/2 (xy = a), and likewise 1/2 in ln y; the second relation gives 1/2 and -1/2:
    # J = [[1/2, 1/2], [1/2, -1/2]], J^-1 = [[1, 1], [1, -1]]
    a, b = np.array([2.0, 6.0]), np.array([8.0, 1.5])
    residual = _products(a, b)
    solution = np.log(np.array([[4.0, 3.0], [0.5, 2.0]]))  # see the hand-made system above
    inverse = batched_newton.inverse_jacobians(residual, solution)
    for m in range(2):
        assert inverse[:, :, m] == pytest.approx(np.array([[1.0, 1.0], [1.0, -1.0]]),
                                                 rel=1e-6)
    # one step from 1e-4 off (in ln x and ln y) with it: the error is second order
    stepped, size = batched_newton.step_with(residual, solution + 1e-4, inverse, 1e-13)
    assert (size < 1e-7).all()
    assert stepped == pytest.approx(solution, abs=1e-7)


@pytest.mark.slow  # forked sympy solves of the synthetic block
def test_two_varying_inputs_are_predicted_together(monkeypatch):
    # p and q both vary: the later batches of 1,000 start from a fit of degree 3 in
    # (ln p, ln q), 10 terms x 8 = 80 samples needed, made on the first batch
    _in_batches(monkeypatch, 1000)
    assert BATCH_NEWTON.fit_degrees[1] == 3
    p = np.random.default_rng(1).uniform(4.5, 5.5, 5000)
    q = np.random.default_rng(2).uniform(12.0, 14.0, 5000)
    seeds = {}
    result = evaluate(_compiled(), {"p": p, "q": q, "r": 10.0}, size=p.size, seeds=seeds)
    assert any(fits for key, fits in seeds.items() if isinstance(key, tuple))
    assert not result.failed and not result.ambiguous and not result.one_at_a_time
    for name, want in zip("xyz", _by_hand(p, q, 10.0), strict=True):
        assert np.allclose(result.values[name], want, rtol=1e-12)


@pytest.mark.slow  # forked sympy solves of the synthetic block
def test_a_large_run_is_timed_with_the_fits_its_pilot_made(monkeypatch):
    # the first LONG_WORK.pilot samples solve from the pilot's solution and fit the rest;
    # the run goes on with the fit, so the estimate times another LONG_WORK.pilot with it
    sizes = []
    real = uncertainty.evaluate

    def counting(compiled, pins, regime, size, **options):
        sizes.append(size)
        return real(compiled, pins, regime, size, **options)

    monkeypatch.setattr(uncertainty, "evaluate", counting)
    nominal = {"p": 5.0, "q": 13.0, "r": 10.0}
    uncertainty._cost_per_sample(_compiled(), nominal, {"p": Spread("uniform", 4.5, 5.5)},
                                 None, 0, {})
    assert sizes == [uncertainty.PILOT_SAMPLES, LONG_WORK.pilot, LONG_WORK.pilot]
