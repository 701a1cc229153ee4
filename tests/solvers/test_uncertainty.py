"""Ranges and distributions: intervals, the linear estimate, sensitivity, bad ranges."""

import json
import math

import numpy as np
import pytest
from chalk.symbolic.errors import BoundsError, ParseError

from chalk import solve

KV = {"context_crossover": "200k token"}


def kv_of(active):  # the lecture's closed form: active x 1 FLOP/param/token / (300 x 200k)
    return active / (300 * 2e5)


def test_range_maps_through_the_closed_form_monotone_case():
    s = solve("kv_bytes_per_token", presets="lecture",
              given={**KV, "active_params": "100e9..300e9 param"}, samples=200_000)
    low, high = (q.to("byte/token").magnitude for q in s.interval("kv_bytes_per_token"))
    # log-uniform on [a, b]: the p-quantile is a (b/a)^p; kv is proportional to active
    a, b = 100e9, 300e9
    assert low == pytest.approx(kv_of(a * (b / a) ** 0.05), rel=5e-3)
    assert high == pytest.approx(kv_of(a * (b / a) ** 0.95), rel=5e-3)
    median = s.median("kv_bytes_per_token", "byte/token").magnitude
    assert median == pytest.approx(kv_of(math.sqrt(a * b)), rel=5e-3)
    # the derivation itself is at the nominal (geometric mid-point) value
    assert s.value("kv_bytes_per_token") == pytest.approx(kv_of(math.sqrt(a * b)))


def test_linear_estimate_and_sensitivity():
    s = solve("kv_bytes_per_token", presets="lecture",
              given={"context_crossover": "150k..250k token", "active_params": "100e9 param ±50%"})
    summary = s.uncertainty.summaries["kv_bytes_per_token"]
    assert summary.linear is not None
    ranking = dict(summary.sensitivity)
    assert set(ranking) == {"context_crossover", "active_params"}
    # +-50% uniform (ln spread ~1.1) outweighs 150k..250k log-uniform (ln spread 0.51)
    assert ranking["active_params"] > ranking["context_crossover"]
    assert sum(ranking.values()) == pytest.approx(1)


def test_json_adds_interval_and_sensitivity(run_cli):
    status, out, _ = run_cli("solve", "kv_bytes_per_token", "--preset", "lecture",
                             "--given", "context_crossover=200k token",
                             "--given", "active_params=100e9..300e9 param", "--json",
                             "--samples", "20000")
    assert status == 0
    result = json.loads(out)["results"]["kv_bytes_per_token"]
    assert {"low", "median", "high", "sensitivity", "value", "unit"} <= set(result)
    assert result["low"] < result["median"] < result["high"]
    assert result["sensitivity"] == {"active_params": pytest.approx(1.0)}


def test_regime_boundary_inside_a_range_is_reported():
    pins = {"n_chips": "8 chip", "chip_flops": "989e12 FLOP/s", "hbm_bandwidth": "3.35 TB/s",
            "total_params": "671e9 param", "active_params": "37e9 param",
            "bytes_per_param": "1 byte/param", "kv_bytes_per_token": "70272 byte/token",
            "context_length": "1k token", "batch_size": "100..20000 sequence"}
    s = solve("step_time", given=pins, samples=5000)
    assert "step_time" in s.uncertainty.mixed_regimes
    assert s.uncertainty.summaries["step_time"].linear is None
    assert "regime changes inside the ranges" in s.uncertainty.method()


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [("300e9..100e9 param", ParseError, "empty range"),
     ("100e9 param ±150%", ParseError, "between 0% and 100%"),
     ("normal(100e9 param, 60e9 param)", BoundsError, "must be positive"),
     ("nan..3 param", ParseError, "expected a number"),
     ("1e400..2e400 param", ParseError, "out of range")],
)
def test_bad_ranges(text, error, message):
    with pytest.raises(error, match=message):
        solve("kv_bytes_per_token", presets="lecture", given={**KV, "active_params": text})


def test_seed_makes_runs_repeatable():
    given = {**KV, "active_params": "lognormal(150e9 param, 0.4)"}
    a = solve("kv_bytes_per_token", presets="lecture", given=given, samples=1000, seed=7)
    b = solve("kv_bytes_per_token", presets="lecture", given=given, samples=1000, seed=7)
    assert a.uncertainty.summaries == b.uncertainty.summaries
    # lognormal: median of kv is kv(median of active)
    c = solve("kv_bytes_per_token", presets="lecture", given=given, samples=200_000)
    assert c.median("kv_bytes_per_token").magnitude == pytest.approx(kv_of(150e9), rel=1e-2)
    assert np.isfinite(c.uncertainty.summaries["kv_bytes_per_token"].low)


@pytest.mark.slow
def test_a_range_through_a_step_with_no_closed_form_lowers_the_sample_count(monkeypatch):
    # x^2 + y^2 = p, y^2 + z^2 = q, z^2 + x^2 = r has no closed form for any one quantity,
    # so every sample is solved on its own; with a tiny time budget the default sample
    # count must be lowered, and the result must say so.
    import chalk.solvers.bulk.uncertainty as uncertainty
    from chalk.symbolic.model import build_model
    from chalk.symbolic.relations import Relation, definition
    from chalk.symbolic.variables import Variable

    variables = [Variable(n, "1", "synthetic", typical=1.0) for n in "xyzpqr"]
    x, y, z, p, q, r = (v.symbol for v in variables)
    model = build_model(variables, [
        Relation("sum_xy", p, x ** 2 + y ** 2, "synthetic", definition()),
        Relation("sum_yz", q, y ** 2 + z ** 2, "synthetic", definition()),
        Relation("sum_zx", r, z ** 2 + x ** 2, "synthetic", definition())])
    # a budget no machine meets (the block is fast since its Newton steps are batched:
    # 0.2 s was met on a quiet machine, so the test turned on the load)
    monkeypatch.setattr(uncertainty, "UNCERTAINTY_BUDGET", 1e-6)
    monkeypatch.setattr(uncertainty, "MIN_SAMPLES", 100)
    s = solve("x", {"p": "4.5..5.5", "q": 13, "r": 10}, ["none"], model=model)
    assert s.uncertainty.samples < 100_000
    assert any("lowered the sample count" in note for note in s.uncertainty.notes)
    # x^2 = (p - q + r) / 2: over p in 4.5..5.5, x lies between 0.866 and 1.118
    low, high = (q.magnitude for q in s.interval("x"))
    assert 0.866 <= low <= high <= 1.119


def test_a_range_the_answer_does_not_use_adds_no_spread():
    # the output/input ratio uses only the two prices: a range on active_params (used by
    # nothing in this plan) must not turn the answer into a distribution
    s = solve("output_input_price_ratio", given={"price_input": "1 USD/Mtoken",
                                                 "price_output": "5 USD/Mtoken",
                                                 "active_params": "50e9..200e9 param"})
    assert s.uncertainty is None
    assert s.value("output_input_price_ratio") == pytest.approx(5)
