"""Whole requests (issue 23 item 3): TTFT, TPOT, request latency and request throughput.

A small dense model worked on paper: 100e9 parameters at 1 byte on 8 chips of 1 PFLOP/s
and 1 TB/s (8 PFLOP/s and 8 TB/s a replica), 1e5 bytes of KV per token, attention at 2
FLOP per byte of KV read, 2 FLOP per parameter per token (the careful convention).
Every number below is worked by hand in the comments.
"""

import math

import pytest

from chalk import explain, solve

SMALL = {"total_params": "100e9 param", "active_params": "100e9 param",
         "bytes_per_param": "1 byte/param", "n_chips": "8 chip", "chip_flops": "1e15 FLOP/s",
         "hbm_bandwidth": "1 TB/s", "kv_bytes_per_token": "1e5 byte/token",
         "attention_intensity": "2 FLOP/byte"}


def test_a_long_prompt_is_prefilled_at_the_compute_bound():
    # prefill FLOPs per token 2e11 + 1/2 x 2 x 1e5 x 1000 = 2.001e11; x 1000 tokens over
    # 8e15 = 25.0125 ms. Memory: 1e11 weight bytes + 1000 x 1e5 KV bytes written, over
    # 8e12 = 12.5125 ms. The slower is compute.
    s = solve(["time_to_first_token", "t_prefill_compute", "t_prefill_memory"],
              {**SMALL, "prompt_tokens": "1000 token"})
    assert s.value("t_prefill_compute", "ms") == pytest.approx(25.0125, rel=1e-12)
    assert s.value("t_prefill_memory", "ms") == pytest.approx(12.5125, rel=1e-12)
    assert s.value("time_to_first_token", "ms") == pytest.approx(25.0125, rel=1e-12)


def test_a_short_prompt_waits_for_the_weights():
    # 10 tokens: compute 10 x (2e11 + 1e5 x 10) / 8e15 = 0.25000125 ms, but the prefill
    # still reads every weight once: (1e11 + 10 x 1e5) / 8e12 = 12.500125 ms. The first
    # token cannot come before the weights are read (it came at 0.25 ms before).
    s = solve("time_to_first_token", {**SMALL, "prompt_tokens": "10 token"})
    assert s.value("time_to_first_token", "ms") == pytest.approx(12.500125, rel=1e-12)
    assert "prefill memory-bound" in s.derivation.text()


def test_the_prompt_a_ttft_allows_backwards():
    # 50 ms compute-bound: P (2e11 + 1e5 P) / 8e15 = 0.05, i.e. 1e5 P^2 + 2e11 P - 4e14
    # = 0, P = (-2e11 + sqrt(4e22 + 1.6e20)) / 2e5 = 1998.0 tokens (memory then 12.52 ms,
    # so compute-bound it is; memory-bound would need 3e6 tokens, whose compute is 187 s)
    prompt = (-2e11 + math.sqrt(4e22 + 1.6e20)) / 2e5
    s = solve("prompt_tokens", {**SMALL, "time_to_first_token": "50 ms"})
    assert s.value("prompt_tokens", "token") == pytest.approx(prompt, rel=1e-9)


# 1000 tokens in, 201 out, a batch of 10. Decode gives 200 tokens (prefill the first), at
# the generation's mean context 1000 + 201/2 = 1100.5 tokens: 1.1005e8 KV bytes a sequence.
# Step: weights 1e11 / 8e12 = 12.5 ms plus KV 10 x 1.1005e8 / 8e12 = 0.1375625 ms =
# 12.6375625 ms; compute 10 x (2e11 + 2 x 1.1005e8) / 8e15 = 0.250275 ms, so memory-bound.
REQUEST = {**SMALL, "prompt_tokens": "1000 token", "output_tokens": "201 token",
           "batch_size": "10 sequence"}
STEP = 12.6375625e-3
TTFT = 25.0125e-3


def test_tpot_and_request_latency_by_hand():
    s = solve(["time_per_output_token", "request_latency", "context_length"], REQUEST)
    assert s.value("context_length", "token") == pytest.approx(1100.5, rel=1e-12)
    assert s.value("time_per_output_token", "s/token") == pytest.approx(STEP, rel=1e-12)
    # 25.0125 ms + 200 x 12.6375625 ms = 2552.525 ms
    assert s.value("request_latency", "ms") == pytest.approx(2552.525, rel=1e-12)


def test_request_throughput_with_prefill_and_decode_sharing_the_chips():
    # a request costs the replica its prefill, 25.0125 ms, and its share of 200 decode
    # steps of 10 sequences: 200 x 12.6375625 / 10 = 252.75125 ms; 277.76375 ms in all
    per_request = TTFT + 200 * STEP / 10
    s = solve(["requests_per_second", "output_tokens_per_second_per_chip",
               "request_cost_per_token"], {**REQUEST, "chip_price": "2 USD/hour"})
    assert s.value("requests_per_second", "1/s") == pytest.approx(1 / per_request, rel=1e-12)
    assert s.value("output_tokens_per_second_per_chip", "token/s/chip") == pytest.approx(
        201 / per_request / 8, rel=1e-12)  # 90.45 token/s a chip
    # 8 chips at 2 USD/hour = 16/3600 USD/s over 723.6 token/s
    assert s.value("request_cost_per_token", "USD/Mtoken") == pytest.approx(
        16 / 3600 / (201 / per_request) * 1e6, rel=1e-12)


def test_the_batch_a_tpot_allows_backwards():
    # 13 ms a token, memory-bound: 12.5 ms + B x 1.1005e8 / 8e12 = 13 ms, so
    # B = 0.5e-3 x 8e12 / 1.1005e8 = 36.347 sequences (compute 0.91 ms, well under)
    pins = {k: v for k, v in REQUEST.items() if k != "batch_size"}
    s = solve("batch_size", {**pins, "time_per_output_token": "13 ms/token"})
    assert s.value("batch_size", "sequence") == pytest.approx(0.5e-3 * 8e12 / 1.1005e8,
                                                              rel=1e-9)


def test_the_output_length_a_latency_allows_backwards():
    # the forward case above: 2552.525 ms of latency is 201 output tokens
    pins = {k: v for k, v in REQUEST.items() if k != "output_tokens"}
    s = solve("output_tokens", {**pins, "request_latency": "2552.525 ms"})
    assert s.value("output_tokens", "token") == pytest.approx(201, rel=1e-9)


def test_disaggregated_prefill_and_decode():
    # 4 prefill chips take in 4e15 / (1000 x 2.001e11) = 19.99 prompts a second; the decode
    # replica finishes 10 / 12.6375625 ms / 200 = 3.9565 requests a second: decode-bound.
    # Over 12 chips: 3.9565 x 201 / 12 = 66.27 token/s a chip.
    decode = 10 / STEP / 200
    s = solve(["prefill_requests_per_second", "disaggregated_requests_per_second",
               "disaggregated_tokens_per_second_per_chip"], {**REQUEST, "prefill_chips": "4 chip"})
    assert s.value("prefill_requests_per_second", "1/s") == pytest.approx(
        4e15 / (1000 * 2.001e11), rel=1e-12)
    assert s.value("disaggregated_requests_per_second", "1/s") == pytest.approx(decode,
                                                                                rel=1e-12)
    assert s.value("disaggregated_tokens_per_second_per_chip", "token/s/chip") == (
        pytest.approx(decode * 201 / 12, rel=1e-12))


def test_the_prefill_chips_for_a_request_rate_backwards():
    # 2 requests a second, below the decode replica's 3.96: prefill-bound, so the prefill
    # chips do 2 x 1000 x 2.001e11 = 4.002e14 FLOP/s: 0.4002 chips of 1 PFLOP/s
    s = solve("prefill_chips", {**REQUEST, "disaggregated_requests_per_second": "2 1/s"})
    assert s.value("prefill_chips", "chip") == pytest.approx(0.4002, rel=1e-9)


def test_a_request_question_uses_the_prompt_and_output_lengths():
    # before: prompt_tokens was "not needed" for tokens_per_second, output_tokens unknown
    text = explain("tokens_per_second", REQUEST).text()
    needed = [line for line in text.splitlines() if line.startswith("pins not needed")]
    assert not needed or ("prompt_tokens" not in needed[0]
                          and "output_tokens" not in needed[0])
    assert "request_context" in text
