"""Fleets (issue 23 item 6): replicas and chips for a number of users or a token rate."""

import pytest
from chalk.symbolic.errors import NoSolution

from chalk import solve

# The small dense model of tests/knowledge/test_requests.py with 1e8 bytes of KV a
# sequence. 50 token/s for each user is a 20 ms step: memory-bound, 12.5 ms of weights +
# B x 1e8 / 8e12 = 20 ms gives B = 7.5e-3 x 8e12 / 1e8 = 600 sequences a replica
# (compute 600 x 2e11 / 8e15 = 15 ms, under 20).
SMALL = {"total_params": "100e9 param", "active_params": "100e9 param",
         "bytes_per_param": "1 byte/param", "n_chips": "8 chip", "chip_flops": "1e15 FLOP/s",
         "hbm_bandwidth": "1 TB/s", "kv_bytes_per_sequence": "1e8 byte/sequence",
         "tokens_per_second_per_user": "50 token/s"}


def test_replicas_and_chips_for_concurrent_users():
    # 10,000 users over batches of 600: 16.67 replicas, 133.3 chips, 500,000 token/s
    s = solve(["batch_size", "replicas", "fleet_chips", "fleet_tokens_per_second"],
              {**SMALL, "concurrent_users": "10000 sequence"})
    assert s.value("batch_size", "sequence") == pytest.approx(600, rel=1e-9)
    assert s.value("replicas") == pytest.approx(10000 / 600, rel=1e-9)
    assert s.value("fleet_chips", "chip") == pytest.approx(8 * 10000 / 600, rel=1e-9)
    assert s.value("fleet_tokens_per_second", "token/s") == pytest.approx(10000 * 50,
                                                                          rel=1e-9)


def test_chips_for_a_total_token_rate_backwards():
    # 1e6 token/s at 50 token/s each is 20,000 streams: 33.3 replicas of 600, 266.7 chips
    s = solve(["replicas", "fleet_chips", "concurrent_users"],
              {**SMALL, "fleet_tokens_per_second": "1e6 token/s"})
    assert s.value("replicas") == pytest.approx(1e6 / (600 * 50), rel=1e-9)
    assert s.value("fleet_chips", "chip") == pytest.approx(8 * 1e6 / (600 * 50), rel=1e-9)
    assert s.value("concurrent_users", "sequence") == pytest.approx(20000, rel=1e-9)


def test_an_impossible_speed_is_refused_with_the_most_the_deployment_reaches():
    # Issue 23: 1,000 token/s for each user was refused naming a negative t_kv_fetch. At
    # a batch of one sequence the step reads 1e11 weight bytes and 1e8 KV bytes over 8e12
    # byte/s: 12.5125 ms (its compute, 25 us, hides), so 1 / 12.5125 ms = 79.92 token/s
    # is the most any batch gets; the refusal says so.
    pins = {**SMALL, "tokens_per_second_per_user": "1000 token/s"}
    with pytest.raises(NoSolution) as refused:
        solve("batch_size", pins)
    assert (f"the most these pins reach is tokens_per_second_per_user = "
            f"{1 / 12.5125e-3:.2f} token/s, at batch_size = 1 sequence") in str(refused.value)
