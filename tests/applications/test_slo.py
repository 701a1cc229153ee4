"""The best batch and chip count under service-level limits (issue 23 item 3).

The small dense model of tests/knowledge/test_requests.py: 100e9 one-byte parameters,
chips of 1 PFLOP/s and 1 TB/s, 1e5 bytes of KV a token, attention at 2 FLOP a byte; a
request of 1000 tokens in and 201 out, decoded at the mean context 1100.5 tokens
(1.1005e8 KV bytes a sequence).
"""

import pytest
from chalk.symbolic.errors import NoSolution

from chalk.applications.optimize import best_under_slo

SMALL = {"total_params": "100e9 param", "active_params": "100e9 param",
         "bytes_per_param": "1 byte/param", "chip_flops": "1e15 FLOP/s",
         "hbm_bandwidth": "1 TB/s", "kv_bytes_per_token": "1e5 byte/token",
         "attention_intensity": "2 FLOP/byte", "prompt_tokens": "1000 token",
         "output_tokens": "201 token", "chip_price": "2 USD/hour"}
KV = 1.1005e8  # byte a sequence at the mean context
PREFILL = 1000 * 2.001e11  # FLOP of one prompt (2e11 a token + 1/2 x 2 x 1e5 x 1000)


def per_chip(chips, batch, step):
    """Output tokens a second a chip: a request takes its prefill and 200 steps / batch."""
    per_request = PREFILL / (chips * 1e15) + 200 * step / batch
    return 201 / per_request / chips


def test_the_most_output_per_chip_within_a_tpot():
    # 8 chips, 13 ms a token, memory-bound: 12.5 ms + B x 1.1005e8 / 8e12 = 13 ms, so
    # B = 36.35 (its compute, 0.91 ms, is far under); TTFT 25.01 ms is within 100 ms
    batch = 0.5e-3 * 8e12 / KV
    found = best_under_slo("throughput", "13 ms/token", "100 ms", {**SMALL, "n_chips": "8 chip"})
    assert found.batch == pytest.approx(batch, rel=1e-9)
    assert found.active == "TPOT limit"
    assert found.value == pytest.approx(per_chip(8, batch, 13e-3), rel=1e-9)  # 260 token/s
    # whole sequences: 36, whose step is 12.5 ms + 36 x 1.1005e8 / 8e12 = 12.995 ms
    assert found.whole_batch == 36
    step = 12.5e-3 + 36 * KV / 8e12
    assert found.shown["output_tokens_per_second_per_chip at the whole batch"] == (
        f"{per_chip(8, 36, step):.4g} token/(s·chip)")  # 4 digits, as shown


def test_the_cheapest_token_over_chip_counts():
    # 4 chips read the weights in 25 ms: no batch meets 13 ms a token. 16 chips: 6.25 ms
    # of weights, B = 6.75e-3 x 16e12 / 1.1005e8 = 981.4 (compute 12.28 ms, still under),
    # 829 token/s a chip against 8 chips' 260: 16 chips are cheapest, at 16 x 2 USD/hour
    # over 16 x 829 token/s
    batch = 6.75e-3 * 16e12 / KV
    found = best_under_slo("cost", "13 ms/token", None, SMALL, chips=(4, 8, 16))
    assert found.chips == 16
    assert found.batch == pytest.approx(batch, rel=1e-9)
    assert found.value == pytest.approx(2 / 3600 / per_chip(16, batch, 13e-3), rel=1e-9)


def test_an_impossible_ttft_names_the_best_reachable():
    # 8 chips prefill the prompt in 2.001e14 / 8e15 = 25.01 ms at best: 20 ms is refused
    # with that bound in the message
    with pytest.raises(NoSolution, match=r"time_to_first_token is at least 25\.01 ms"):
        best_under_slo("throughput", None, "20 ms", {**SMALL, "n_chips": "8 chip"})


# Regression (2026-12-01 merge): a reference point drawn per quantity name made the
# planner judge the fast-mode block determined here, so the chip price and fast mode's
# relations joined a rate's plan as a cross-check through a stand-in (21 s a solve, and
# the searches above ran for many minutes). A rate a chip produces never rests on its price.
def test_the_rates_of_a_request_rest_on_no_price():
    from chalk import solve

    s = solve(["output_tokens_per_second_per_chip", "time_per_output_token"],
              {**SMALL, "n_chips": "8 chip", "batch_size": "30 sequence"})
    assert "chip_price" in s.derivation.unused_pins
    assert not any("fast" in name for step in s.derivation.steps for name in step.variables)
    # 8 chips read 1e11 byte in 12.5 ms; 30 sequences of 1.1005e8 byte add 0.4127 ms
    assert s.value("time_per_output_token", "s/token") == pytest.approx(
        12.5e-3 + 30 * KV / 8e12, rel=1e-9)
