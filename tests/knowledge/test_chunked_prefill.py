"""Chunked prefill (issue 23 item 3; Sarathi-Serve, arXiv:2403.02310): every number
derived by hand here."""

import pytest
from chalk.symbolic.errors import RoundedUp

from chalk import solve

# A 70e9-parameter dense model in bf16 on 8 chips of 1e15 FLOP/s and 4e12 byte/s:
# 8e15 FLOP/s and 32e12 byte/s a replica. A prompt token costs 150e9 FLOP: 140e9 of weight
# matmuls (2 x 70e9) and 10e9 of attention over half the 8,192-token prompt; a decode token
# at 4,096 tokens of context attends to as many tokens, so it costs 150e9 FLOP too.
PINS = {"n_chips": "8 chip", "chip_flops": "1000e12 FLOP/s", "hbm_bandwidth": "4e12 byte/s",
        "total_params": "70e9 param", "active_params": "70e9 param",
        "bytes_per_param": "2 byte/param", "kv_bytes_per_token": "327680 byte/token",
        "batch_size": "64 sequence", "context_length": "4096 token",
        "prompt_tokens": "8192 token", "prefill_flops_per_token": "150e9 FLOP/token"}
REPLICA_FLOPS, REPLICA_BANDWIDTH = 8e15, 32e12
# decode step: compute 64 x 150e9 / 8e15 = 1.2 ms; memory (140e9 weights + 64 x 4,096 x
# 327,680 = 85,899,345,920 KV) / 32e12 = 7.0594 ms: memory-bound
DECODE_COMPUTE = 64 * 150e9 / REPLICA_FLOPS
DECODE_MEMORY = (140e9 + 64 * 4096 * 327_680) / REPLICA_BANDWIDTH
# the whole prompt's prefill compute: 8,192 x 150e9 / 8e15 = 153.6 ms
PREFILL_COMPUTE = 8192 * 150e9 / REPLICA_FLOPS


def _chunk_memory(chunk):
    # the chunk writes its own KV and reads the earlier chunks' ((8,192 - C) / 2 on average)
    return 327_680 * (8192 + chunk) / 2 / REPLICA_BANDWIDTH


def test_a_chunk_in_every_step_raises_tpot_by_its_compute():
    s = solve(["chunked_time_per_output_token", "step_time", "t_chunk_compute",
               "t_chunk_memory"], {**PINS, "prefill_chunk_tokens": "512 token"})
    # a 512-token chunk is 512 / 8,192 of the prefill: 9.6 ms; its KV traffic
    # 327,680 x 4,352 / 32e12 = 44.6 us
    assert s.value("t_chunk_compute", "ms") == pytest.approx(9.6, rel=1e-9)
    assert s.value("t_chunk_memory", "s") == pytest.approx(_chunk_memory(512), rel=1e-9)
    assert s.value("step_time", "ms") == pytest.approx(DECODE_MEMORY * 1e3, rel=1e-9)
    # mixed step: max(1.2 + 9.6, 7.0594 + 0.0446) = 10.8 ms, now compute-bound
    assert s.value("chunked_time_per_output_token", "ms/token") == pytest.approx(10.8,
                                                                                 rel=1e-9)


def test_the_first_token_waits_one_mixed_step_per_chunk():
    # 8,192 / 600 = 13.65 chunks: 14 steps; each max(1.2 + 600/8,192 x 153.6 = 12.45 ms,
    # memory 7.06 ms) = 12.45 ms: TTFT 14 x 12.45 = 174.3 ms, against 153.6 ms for the
    # prompt prefilled alone (the decodes' own 1.2 ms rides along every step)
    s = solve(["chunked_time_to_first_token", "prefill_chunks", "time_to_first_token"],
              {**PINS, "prefill_chunk_tokens": "600 token"})
    step = DECODE_COMPUTE + 600 / 8192 * PREFILL_COMPUTE
    assert s.value("prefill_chunks") == 14
    assert s.value("chunked_time_to_first_token", "s") == pytest.approx(14 * step, rel=1e-9)
    assert s.value("time_to_first_token", "s") == pytest.approx(PREFILL_COMPUTE, rel=1e-9)
    assert "prefill_chunks = 14 (whole:" in s.headline()


def test_the_chunk_that_keeps_tpot_under_a_target():
    # TPOT <= 8 ms: compute-bound 1.2 ms + C x 150e9 / 8e15 = 8 ms gives
    # C = 6.8e-3 / 1.875e-5 = 362.67 tokens (memory 7.0594 + 0.0437 ms stays under 8)
    s = solve("prefill_chunk_tokens", {**PINS, "chunked_time_per_output_token": "8 ms/token"})
    chunk = (8e-3 - DECODE_COMPUTE) / (150e9 / REPLICA_FLOPS)
    assert s.value("prefill_chunk_tokens", "token") == pytest.approx(chunk, rel=1e-9)
    assert chunk == pytest.approx(362.67, rel=1e-4)
    assert DECODE_MEMORY + _chunk_memory(chunk) < 8e-3


def test_a_tpot_under_the_decode_step_alone_takes_no_chunk():
    # 7 ms is under the 7.0594 ms decode step before any chunk rides along: no chunk size
    # reaches it
    from chalk.symbolic.errors import NoSolution

    with pytest.raises(NoSolution):
        solve("prefill_chunk_tokens", {**PINS, "chunked_time_per_output_token": "7 ms/token"})


def test_the_chunk_count_answers_forwards_only():
    # 14 chunks of an 8,192-token prompt hold for every chunk from 8,192/14 = 585.1 to
    # below 8,192/13 = 630.2 tokens: no one chunk size
    with pytest.raises(RoundedUp) as caught:
        solve("prefill_chunk_tokens", {**PINS, "prefill_chunks": "14"})
    # 13 < 8,192 / C <= 14: the chunk count falls as the chunk grows, so the interval is
    # closed at its lower end
    assert ("at or above 585.1 token and below 630.2 token" in caught.value.message)
