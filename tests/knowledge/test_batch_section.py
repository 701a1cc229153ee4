"""The lecture's first section (0:00-32:09), each number derived by hand here."""

import math

import pytest
from chalk.symbolic.errors import AmbiguousSolution, InconsistentPins

from chalk import solve

H100_DEEPSEEK = {
    "chip_flops": "989e12 FLOP/s",
    "hbm_bandwidth": "3.35 TB/s",
    "bytes_per_param": "2 byte/param",
    "flops_per_param": "2 FLOP/param/token",
    "total_params": "671e9 param",
    "active_params": "37e9 param",
}


def test_critical_batch_lecture_conventions():
    # 300 FLOP/byte x 1 byte/param x sparsity 8 / (1 FLOP/param/token x 1 token/seq) = 2400
    s = solve("critical_batch_size", presets="lecture", given={"sparsity_factor": 8})
    assert s.value("critical_batch_size", "sequence") == pytest.approx(2400, rel=1e-12)


def test_critical_batch_careful_h100():
    intensity = 989e12 / 3.35e12  # FLOP/byte
    expected = intensity * 2 * (671 / 37) / 2  # bytes/param x sparsity / FLOP/param
    assert expected == pytest.approx(5354, rel=1e-3)
    s = solve("critical_batch_size", given=H100_DEEPSEEK)
    assert s.value("critical_batch_size", "sequence") == pytest.approx(expected, rel=1e-9)
    assert str(s["critical_batch_size"].units) == "sequence"


def test_sparsity_backwards_from_critical_batch():
    s = solve("sparsity_factor", presets="lecture",
              given={"critical_batch_size": "2400 sequence"})
    assert s.value("sparsity_factor") == pytest.approx(2400 / 300, rel=1e-12)


def test_hbm_drain_time():
    s = solve("hbm_drain_time", given={"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"})
    assert s.value("hbm_drain_time", "ms") == pytest.approx(288e9 / 20e12 * 1e3, rel=1e-12)
    assert s.value("hbm_drain_time", "ms") == pytest.approx(14.4)


def test_tokens_per_second_and_back():
    s = solve("tokens_per_second", given={"batch_size": "2000 sequence",
                                           "step_time": "15.625 ms"})
    assert s.value("tokens_per_second", "token/s") == pytest.approx(2000 / 0.015625)
    assert s.value("tokens_per_second", "token/s") == pytest.approx(128_000)
    back = solve("batch_size", given={"tokens_per_second": "128000 token/s",
                                       "step_time": "15.625 ms"})
    assert back.value("batch_size", "sequence") == pytest.approx(2000)


def test_latency_floor_over_a_rack():
    s = solve("latency_floor", given={"total_params": "671e9 param",
                                       "bytes_per_param": "1 byte/param",
                                       "scale_up_size": "72 chip", "hbm_bandwidth": "8e12 B/s"})
    expected_ms = 671e9 * 1 / (72 * 8e12) * 1e3
    assert expected_ms == pytest.approx(1.165, abs=5e-4)
    assert s.value("latency_floor", "ms") == pytest.approx(expected_ms, rel=1e-12)


def test_kv_bytes_per_token_from_a_200k_crossover():
    # L x kv x 300 = 1 token x 100e9 param x 1 FLOP/param/token  ->  kv = 1e11/(300 x 2e5)
    lecture = solve("kv_bytes_per_token", presets="lecture",
                    given={"context_crossover": "200k token", "active_params": "100e9 param"})
    assert lecture.value("kv_bytes_per_token", "byte/token") == pytest.approx(1e11 / 6e7)
    assert lecture.value("kv_bytes_per_token", "byte/token") == pytest.approx(1667, abs=0.5)
    careful = solve("kv_bytes_per_token",
                    given={"context_crossover": "200k token", "active_params": "100e9 param",
                           "hardware_intensity": "300 FLOP/byte"})
    assert careful.value("kv_bytes_per_token", "byte/token") == pytest.approx(2e11 / 6e7)
    assert careful.value("kv_bytes_per_token", "byte/token") == pytest.approx(3333, abs=0.5)


def test_cost_per_token():
    s = solve("cost_per_token", given={"step_time": "20 ms", "n_chips": "8 chip",
                                        "chip_price": "2 USD/hour", "batch_size": "2000 sequence"})
    expected = 0.020 * 8 * (2 / 3600) / 2000  # seconds x chips x USD/s per chip / tokens
    assert expected == pytest.approx(4.44e-8, abs=5e-11)
    assert s.value("cost_per_token", "USD/token") == pytest.approx(expected, rel=1e-12)


def test_worst_case_latency_is_two_steps():
    s = solve("worst_case_latency", given={"step_time": "20 ms"})
    assert s.value("worst_case_latency", "ms") == pytest.approx(40)


def test_conventions_are_visible_in_the_derivation():
    lecture = solve("critical_batch_size", presets="lecture", given={"sparsity_factor": 8})
    careful = solve("critical_batch_size", given={"sparsity_factor": 8,
                                                   "hardware_intensity": "300 FLOP/byte",
                                                   "bytes_per_param": "1 byte/param"})
    assert lecture.derivation.conventions == "lecture"
    assert careful.derivation.conventions == "careful"
    assert "1 FLOP/(param·token)" in str(lecture)
    assert "2 FLOP/(param·token)" in str(careful)
    # the factor of two FLOP per parameter halves the careful batch
    assert careful.value("critical_batch_size") == pytest.approx(1200)


STEP_PINS = {
    "n_chips": "8 chip", "chip_flops": "989e12 FLOP/s", "hbm_bandwidth": "3.35 TB/s",
    "total_params": "671e9 param", "active_params": "37e9 param",
    "bytes_per_param": "1 byte/param", "kv_bytes_per_token": "70272 byte/token",
    "context_length": "10k token",
}


def test_step_time_forward_reports_its_regime():
    s = solve("step_time", given={**STEP_PINS, "batch_size": "100 sequence"})
    t_weight = 671e9 / (3.35e12 * 8)
    t_kv = 100 * 1e4 * 70272 / (3.35e12 * 8)
    t_compute = 100 * 37e9 * 2 / (989e12 * 8)
    assert t_compute < t_weight + t_kv
    assert s.value("step_time", "s") == pytest.approx(t_weight + t_kv, rel=1e-12)
    step = [r for r in s.derivation.steps if r.variables == ("step_time",)][0]
    assert step.regime == "memory-bound"


def test_batch_backwards_through_the_max():
    # memory-bound branch: 30 ms = t_weight + B x (context x kv / (8 x bw))
    s = solve("batch_size", given={**STEP_PINS, "step_time": "30 ms"})
    t_weight = 671e9 / (3.35e12 * 8)
    per_sequence = 1e4 * 70272 / (3.35e12 * 8)
    expected = (0.030 - t_weight) / per_sequence
    assert s.value("batch_size", "sequence") == pytest.approx(expected, rel=1e-8)
    assert any(r.regime == "memory-bound" for r in s.derivation.steps)


def test_compute_branch_rejected_when_its_inequality_fails():
    # Pin step_time and t_memory: the compute-bound branch needs t_compute = step_time >= t_memory
    s = solve("t_compute", given={"step_time": "20 ms", "t_memory": "15 ms"})
    assert s.value("t_compute", "ms") == pytest.approx(20)
    with pytest.raises(Exception) as info:
        solve("t_compute", given={"step_time": "10 ms", "t_memory": "15 ms"})
    assert "no physical value of t_compute" in str(info.value)


def test_both_regimes_possible_is_an_error_until_one_is_chosen():
    # step_time = max(t_compute, t_memory) with t_compute = t_memory unknown twice: ambiguous
    pins = {"step_time": "20 ms", "t_compute": "20 ms"}
    with pytest.raises(AmbiguousSolution) as info:
        solve("t_memory", given=pins)
    assert "--regime" in info.value.message
    chosen = solve("t_memory", given=pins, regime="memory-bound")
    assert chosen.value("t_memory", "ms") == pytest.approx(20)


def test_inconsistent_drain_time_names_relation_and_both_sides():
    with pytest.raises(InconsistentPins) as info:
        solve("hardware_intensity", given={"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s",
                                            "hbm_drain_time": "20 ms",
                                            "chip_flops": "5e15 FLOP/s"})
    error = info.value
    assert error.relation == "hbm_drain_time"
    assert error.lhs == "20 ms" and error.rhs == "14.4 ms"


def test_consistent_surplus_pins_are_cross_checks():
    s = solve("hardware_intensity", given={"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s",
                                            "hbm_drain_time": "14.4 ms",
                                            "chip_flops": "5e15 FLOP/s"})
    assert [c.relation for c in s.derivation.checks] == ["hbm_drain_time"]
    assert math.isclose(s.value("hardware_intensity"), 5e15 / 20e12)


def test_speed_per_user_and_throughput_give_step_time_and_batch():
    # one token per sequence per step at 50 token/s per user: a step every 1/50 s = 20 ms;
    # 128,000 token/s over the deployment at one token per sequence per step is
    # 128,000 × 0.02 = 2,560 sequences in the batch
    s = solve(["step_time", "batch_size"], {"tokens_per_second_per_user": "50 token/s",
                                            "tokens_per_second": "128k token/s"})
    assert s.value("step_time", "ms") == pytest.approx(20.0, rel=1e-12)
    assert s.value("batch_size", "sequence") == pytest.approx(2560.0, rel=1e-12)
    assert s.derivation.flags == ()


def test_a_batch_under_one_sequence_is_flagged_not_hidden():
    # 30 token/s is one user's speed; read as the deployment's throughput at 20 ms a step
    # it leaves 30 × 0.02 = 0.6 sequence in the batch
    s = solve("batch_size", {"tokens_per_second": "30 token/s", "step_time": "20 ms"})
    assert s.value("batch_size") == pytest.approx(0.6, rel=1e-12)
    (flag,) = s.derivation.flags
    assert flag.startswith("batch_size = 0.6 sequence is below 1 sequence: ")
    assert "tokens_per_second_per_user" in flag
    assert str(s).splitlines()[1] == f"flag: {flag}"  # on its own line, under the answer
    assert s.to_dict()["flags"] == [flag]
