"""Serving efficiency (issue 23, item 5): the fractions of peak FLOP/s and HBM bandwidth an
engine achieves, and the share of HBM it may fill. Each defaults to 1 in the conventions,
so every answer stays a bound at peak unless a fraction is stated; stated, it is named in
the derivation, and a measured rate solves back for it (what issue 24's fit relies on).
Every number below is worked by hand in the comments.
"""

import pytest
from chalk.symbolic.errors import InconsistentPins

from chalk import solve

# A dense 10e9-parameter model at 1 byte per parameter on one chip of 1e15 FLOP/s and
# 1 TB/s; attention FLOPs, unread experts and the all-to-all stay the conventions' zeros.
CHIP = {"total_params": "10e9 param", "active_params": "10e9 param",
        "bytes_per_param": "1 byte/param", "n_chips": "1 chip", "chip_flops": "1e15 FLOP/s",
        "hbm_bandwidth": "1 TB/s"}
# 10 sequences of 1e8 byte of KV each: memory-bound
MEMORY_BOUND = {**CHIP, "batch_size": "10 sequence", "kv_bytes_per_sequence":
                "1e8 byte/sequence"}
# 1000 sequences of 1e6 byte of KV each: compute-bound
COMPUTE_BOUND = {**CHIP, "batch_size": "1000 sequence", "kv_bytes_per_sequence":
                 "1e6 byte/sequence"}


def test_the_default_is_the_bound_at_peak_and_says_so():
    # t_memory = (10e9 + 10 x 1e8) byte / 1e12 byte/s = 11 ms; t_compute = 10 x 2 x 10e9
    # FLOP / 1e15 FLOP/s = 0.2 ms; 10 tokens per 11 ms = 909.09 token/s
    s = solve("tokens_per_second", MEMORY_BOUND)
    assert s.value("tokens_per_second", "token/s") == pytest.approx(10 / 11e-3, rel=1e-12)
    for name in ("flops_efficiency", "hbm_bandwidth_efficiency"):
        pin = s.derivation.pins[name]
        assert (pin.value, pin.preset) == (1, "careful")
        assert "bound" in pin.source and "bound at peak" in pin.note


def test_an_achieved_bandwidth_slows_the_memory_bound_step_and_is_named():
    # 11 ms at 0.8 of peak bandwidth: 11 / 0.8 = 13.75 ms, 10 / 13.75e-3 = 727.27 token/s
    s = solve("tokens_per_second", {**MEMORY_BOUND, "hbm_bandwidth_efficiency": 0.8})
    assert s.value("tokens_per_second", "token/s") == pytest.approx(10 / 13.75e-3, rel=1e-12)
    assert "replica_hbm_bandwidth = hbm_bandwidth·hbm_bandwidth_efficiency·n_chips/chip\n" \
           "       = (1 TB/s)·(0.8)·(1 chip)/chip" in str(s)


def test_a_measured_rate_solves_back_for_the_bandwidth_efficiency():
    # 500 token/s from 10 sequences: a 20 ms step; the 11 ms of traffic at peak took 20 ms,
    # so the engine reached 11 / 20 = 0.55 of peak bandwidth
    pins = {**MEMORY_BOUND, "tokens_per_second": "500 token/s"}
    s = solve("hbm_bandwidth_efficiency", pins, prefer="derived")
    assert s.value("hbm_bandwidth_efficiency") == pytest.approx(0.55, rel=1e-9)
    # asked plainly, too (issue 22): the user asks for a quantity the conventions only
    # default, with a measurement that fixes it, so the answer is what it gives, and the
    # conventions' statement (1, peak) is named beside it as the cross-check
    plain = solve("hbm_bandwidth_efficiency", pins)
    assert plain.value("hbm_bandwidth_efficiency") == pytest.approx(0.55, rel=1e-9)
    assert plain.stated["hbm_bandwidth_efficiency"]["answer"] == "derived"
    assert any(n.startswith("hbm_bandwidth_efficiency: the pins give 0.55; conventions "
                            "careful states 1, set aside") and n.endswith("45% apart")
               for n in plain.derivation.notes)


def test_an_achieved_flop_rate_slows_the_compute_bound_step():
    # t_compute = 1000 x 2e10 FLOP / 1e15 FLOP/s = 20 ms against t_memory = (1e10 + 1e9)
    # byte / 1e12 byte/s = 11 ms: compute-bound, 1000 / 20 ms = 50,000 token/s at peak;
    # at half the peak 40 ms, 25,000 token/s
    peak = solve("tokens_per_second", COMPUTE_BOUND)
    assert peak.value("tokens_per_second", "token/s") == pytest.approx(5e4, rel=1e-12)
    half = solve("tokens_per_second", {**COMPUTE_BOUND, "flops_efficiency": 0.5})
    assert half.value("tokens_per_second", "token/s") == pytest.approx(2.5e4, rel=1e-12)
    assert ("replica_flops = chip_flops·flops_efficiency·n_chips/chip\n"
            "       = (1 PFLOP/s)·(0.5)·(1 chip)/chip") in str(half)


def test_a_measured_rate_solves_back_for_the_flops_efficiency():
    # 40,000 token/s from 1000 sequences: a 25 ms step, still above the 11 ms of traffic,
    # so compute-bound: the 20 ms of matmuls at peak took 25 ms, 20 / 25 = 0.8 of peak
    s = solve("flops_efficiency", {**COMPUTE_BOUND, "tokens_per_second": "40000 token/s"},
              prefer="derived")
    assert s.value("flops_efficiency") == pytest.approx(0.8, rel=1e-9)


def test_prefill_runs_at_the_achieved_flop_rate():
    # 1000 prompt tokens of 2e10 FLOP each (attention left out) = 2e13 FLOP over 1e15 FLOP/s
    # x 0.4 = 50 ms; at peak 20 ms
    pins = {**CHIP, "prompt_tokens": "1000 token", "prefill_flops_per_token": "2e10 FLOP/token"}
    s = solve("time_to_first_token", {**pins, "flops_efficiency": 0.4})
    assert s.value("time_to_first_token", "ms") == pytest.approx(50, rel=1e-12)
    back = solve("flops_efficiency", {**pins, "time_to_first_token": "25 ms"},
                 prefer="derived")
    assert back.value("flops_efficiency") == pytest.approx(20 / 25, rel=1e-9)


# 60e9 byte of weights and 1e9 byte of KV per sequence on one chip of 80 GB
MEMORY = {"weight_bytes": "60e9 byte", "kv_bytes_per_sequence": "1e9 byte/sequence",
          "n_chips": "1 chip", "hbm_capacity": "80 GB"}


def test_usable_hbm_shrinks_the_batch_that_fits():
    # all of HBM: (80e9 - 60e9) / 1e9 = 20 sequences fill it; 0.9 of it: 72e9 - 60e9 = 12e9
    # byte of KV, 12 sequences
    full = solve("batch_size", {**MEMORY, "memory_fill": 1})
    assert full.value("batch_size", "sequence") == pytest.approx(20, rel=1e-9)
    usable = solve("batch_size", {**MEMORY, "memory_fill": 1, "usable_hbm_fraction": 0.9})
    assert usable.value("batch_size", "sequence") == pytest.approx(12, rel=1e-9)
    # the weights alone take 60 / 72 = 0.8333 of the usable HBM
    weights = solve("weight_fill", {**MEMORY, "usable_hbm_fraction": 0.9})
    assert weights.value("weight_fill") == pytest.approx(60 / 72, rel=1e-12)


def test_a_batch_that_fills_hbm_solves_back_for_the_usable_share():
    # 16 sequences fill it: 60e9 + 16e9 = 76e9 byte of 80e9, 0.95 usable
    s = solve("usable_hbm_fraction", {**MEMORY, "memory_fill": 1, "batch_size": "16 sequence"},
              prefer="derived")
    assert s.value("usable_hbm_fraction") == pytest.approx(0.95, rel=1e-9)


def test_a_measurement_above_the_peak_bound_is_not_an_efficiency():
    # 1000 token/s from 10 sequences is a 10 ms step, under the 11 ms the traffic takes at
    # peak: an efficiency of 11 / 10 = 1.1, above 1, so no physical value; the refusal
    # names the bound at peak, 10 / 11 ms = 909.1 token/s
    with pytest.raises(InconsistentPins) as info:
        solve("hbm_bandwidth_efficiency", {**MEMORY_BOUND, "tokens_per_second": "1000 token/s"},
              prefer="derived")
    assert "left side 1,000 token/s, right side 909.1 token/s" in info.value.message
