"""Fleets (issue 23 item 6): replicas and chips for a number of users or a token rate."""

import pytest
from chalk.symbolic.errors import InconsistentPins, NoSolution, RoundedUp, UnderdeterminedError

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


def test_an_impossible_throughput_is_refused_with_the_most_the_hbm_allows():
    # Issue 23 item 6, the other edge: a replica's throughput grows with its batch, so the
    # most it reaches is at the largest batch its HBM holds. 8 chips of 20 GB hold 1e11
    # weight bytes and (160e9 - 1e11) / 1e8 = 600 sequences (memory_fill = 1); their step
    # reads 1e11 + 600 x 1e8 bytes over 8e12 byte/s, 20 ms (compute 600 x 2e11 / 8e15 =
    # 15 ms hides), so 600 / 20 ms = 30,000 token/s. It used to end at "no physical
    # solution with step_time in its plausible range"
    pins = {k: v for k, v in SMALL.items() if k != "tokens_per_second_per_user"}
    pins.update(hbm_capacity="20 GB", tokens_per_second="1e9 token/s")
    with pytest.raises(NoSolution) as refused:
        solve("batch_size", pins)
    assert (f"the most these pins reach is tokens_per_second = {600 / 20e-3:,.0f} token/s, "
            "at memory_fill = 1") in str(refused.value)


# Whole counts (issue 23 item 6): a deployment runs whole replicas on whole chips.

def test_whole_replicas_and_chips_beside_the_continuous_counts():
    # 10,000 users over batches of 600 (above): 16.67 replicas, so 17 whole replicas of
    # 8 chips, 17 x 8 = 136 chips (not 133.3 rounded up to 134: a replica is whole)
    s = solve(["replicas", "replicas_needed", "fleet_chips_needed"],
              {**SMALL, "concurrent_users": "10000 sequence"})
    assert s.value("replicas") == pytest.approx(10000 / 600, rel=1e-9)
    assert s.value("replicas_needed") == 17
    assert s.value("fleet_chips_needed", "chip") == 17 * 8
    assert "replicas_needed = 17 (whole: replicas = 16.67 rounded up to 17)" in s.headline()
    rounded = s.to_dict()["results"]["fleet_chips_needed"]["rounded_up_from"]
    assert rounded["replicas"] == pytest.approx(10000 / 600, rel=1e-9)
    assert rounded["n_chips"] == 8


def test_whole_chips_of_a_replica():
    # Batch 500 at 50 token/s each is a 20 ms step; memory-bound: (1e11 weight bytes +
    # 500 x 1e8 KV bytes) / (n x 1e12 byte/s) = 0.15 s / n = 20 ms gives n = 7.5 chips
    # (compute 500 x 2e11 / 7.5e15 = 13.3 ms, under 20), so 8 whole chips
    pins = {k: v for k, v in SMALL.items() if k != "n_chips"}
    s = solve(["n_chips", "chips_needed"], {**pins, "batch_size": "500 sequence"})
    assert s.value("n_chips", "chip") == pytest.approx(7.5, rel=1e-9)
    assert s.value("chips_needed", "chip") == 8
    assert "n_chips = 7.5 chip rounded up to 8 chip" in s.headline()


def test_an_exact_count_is_not_rounded_past_itself():
    # 12,000 users over batches of 600 is 20 replicas exactly; float noise in the
    # quotient must not make it 21
    s = solve("replicas_needed", {**SMALL, "concurrent_users": "12000 sequence"})
    assert s.value("replicas_needed") == 20


def test_a_whole_count_does_not_solve_backwards_and_names_the_interval():
    # replicas_needed = 17 holds for every replicas in (16, 17]: no one number of users
    with pytest.raises(RoundedUp) as refused:
        solve("concurrent_users", {**SMALL, "replicas_needed": "17"})
    assert "every value of replicas above 16 and at most 17" in str(refused.value)
    # chips: 8 whole chips hold for n_chips in (7, 8] chip
    with pytest.raises(RoundedUp) as refused:
        solve("n_chips", {"chips_needed": "8 chip"})
    assert "every value of n_chips above 7 chip and at most 8 chip" in str(refused.value)


def test_a_pinned_whole_count_is_checked_against_the_load():
    # 10,000 users need 16.67 replicas, which 16 whole replicas do not carry
    asked = ["replicas", "fleet_chips_needed"]
    with pytest.raises(InconsistentPins):
        solve(asked, {**SMALL, "concurrent_users": "10000 sequence", "replicas_needed": "16"})
    s = solve(asked, {**SMALL, "concurrent_users": "10000 sequence", "replicas_needed": "17"})
    assert s.value("fleet_chips_needed", "chip") == 136
    assert "ill-conditioned" not in str(s)  # 8 whole chips are exact, not lost digits


def test_whole_counts_are_offered_only_forwards():
    # a whole count completes a question about what it feeds, never what it rounds
    with pytest.raises(UnderdeterminedError) as backwards:
        solve("n_chips", {"replicas_needed": "17", "replicas": "3"})
    assert all("chips_needed" not in c and "fleet_chips_needed" not in c
               for c in backwards.value.completions)
    with pytest.raises(UnderdeterminedError) as forwards:
        solve("fleet_chips_needed", {"n_chips": "8 chip"})
    assert ("replicas_needed",) in [tuple(c) for c in forwards.value.completions]


def test_the_refusal_is_one_line_with_status_2(run_cli):
    # the command's refusal, asked in this process (that the console script turns a
    # status of 2 into the process's own is tests/test_bad_inputs.py's to check)
    status, out, err = run_cli("solve", "replicas", "-g", "replicas_needed=17")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "above 16 and at most 17" in err
