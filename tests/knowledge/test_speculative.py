"""Speculative and multi-token decoding (issue 23 item 2), worked by hand.

A step drafts k tokens, verifies k + 1 with the target model, and keeps on average
(1 - alpha^(k+1)) / (1 - alpha) tokens (Leviathan et al. 2023, arXiv:2211.17192, eq. 1).
"""

import pytest

from chalk import solve

# The small dense model of tests/knowledge/test_requests.py: 100e9 one-byte parameters on
# 8 chips of 1 PFLOP/s and 1 TB/s, 1e8 bytes of KV a sequence, a batch of 10.
SMALL = {"total_params": "100e9 param", "active_params": "100e9 param",
         "bytes_per_param": "1 byte/param", "n_chips": "8 chip", "chip_flops": "1e15 FLOP/s",
         "hbm_bandwidth": "1 TB/s", "kv_bytes_per_sequence": "1e8 byte/sequence",
         "batch_size": "10 sequence"}


def test_tokens_per_step_from_draft_length_and_acceptance():
    # k = 3, alpha = 0.8: (1 - 0.8^4) / 0.2 = 0.5904 / 0.2 = 2.952 tokens, 1.952 of them
    # drafted; the target verifies 4 tokens a sequence
    s = solve(["decode_tokens_per_step", "accepted_tokens_per_step", "verify_tokens_per_step"],
              {"draft_tokens": "3 token/sequence", "acceptance_rate": 0.8})
    assert s.value("decode_tokens_per_step", "token/sequence") == pytest.approx(2.952, rel=1e-12)
    assert s.value("accepted_tokens_per_step", "token/sequence") == pytest.approx(1.952,
                                                                                 rel=1e-12)
    assert s.value("verify_tokens_per_step", "token/sequence") == pytest.approx(4, rel=1e-12)


def test_deepseek_mtp_acceptance_backwards():
    # DeepSeek-V3 (arXiv:2412.19437, sec. 5.4.3): one MTP token accepted 85-90% of the
    # time. With k = 1, tokens a step = 1 + alpha, so 1.85 tokens a step is alpha = 0.85.
    s = solve("acceptance_rate", {"draft_tokens": "1 token/sequence",
                                  "decode_tokens_per_step": "1.85 token/sequence"})
    assert s.value("acceptance_rate") == pytest.approx(0.85, rel=1e-9)


def test_a_speculative_step_pays_for_verification_and_the_draft():
    # k = 3, alpha = 0.8, a 1e9-parameter draft. Draft step: max(1e9 byte / 8e12 = 0.125
    # ms, 10 x 2e9 FLOP / 8e15 = 2.5 us) = 0.125 ms, three of them: 0.375 ms.
    # Target: compute 10 sequences x 4 tokens x 2e11 / 8e15 = 1 ms; memory 1e11 / 8e12 +
    # 10 x 1e8 / 8e12 = 12.625 ms. Step 12.625 + 0.375 = 13 ms; 2.952 tokens a step is
    # 227.08 token/s for each user.
    s = solve(["t_draft", "t_compute", "step_time", "tokens_per_second_per_user"],
              {**SMALL, "draft_tokens": "3 token/sequence", "acceptance_rate": 0.8,
               "draft_params": "1e9 param"})
    assert s.value("t_draft", "ms") == pytest.approx(0.375, rel=1e-12)
    assert s.value("t_compute", "ms") == pytest.approx(1, rel=1e-12)
    assert s.value("step_time", "ms") == pytest.approx(13, rel=1e-12)
    assert s.value("tokens_per_second_per_user", "token/s") == pytest.approx(2.952 / 13e-3,
                                                                             rel=1e-12)


def test_the_acceptance_a_speed_needs_backwards():
    # the case above backwards: 227.0769 token/s at a 13 ms step is 2.952 tokens a step,
    # alpha = 0.8 (the only root in (0, 1): tokens a step rise with alpha)
    s = solve("acceptance_rate", {**SMALL, "draft_tokens": "3 token/sequence",
                                  "draft_params": "1e9 param",
                                  "tokens_per_second_per_user": f"{2.952 / 13e-3!r} token/s"})
    assert s.value("acceptance_rate") == pytest.approx(0.8, rel=1e-9)


def test_without_speculation_a_step_gives_and_runs_one_token():
    # the conventions: no drafted tokens, nothing accepted, no draft model; said by name
    s = solve(["decode_tokens_per_step", "verify_tokens_per_step", "step_time"], SMALL)
    assert s.value("decode_tokens_per_step", "token/sequence") == 1
    assert s.value("verify_tokens_per_step", "token/sequence") == 1
    assert s.value("step_time", "ms") == pytest.approx(12.625, rel=1e-12)
    for name in ("accepted_tokens_per_step", "draft_tokens"):
        pin = s.derivation.pins[name]
        assert pin.value == 0 and pin.origin == "conventions careful"
    assert "no speculation" in str(s)


def test_a_pinned_tokens_per_step_still_stands():
    # 2 tokens a step pinned outright (no draft described): the step gives 2 tokens, so
    # 2 / 12.625 ms = 158.4 token/s for each user
    s = solve("tokens_per_second_per_user",
              {**SMALL, "decode_tokens_per_step": "2 token/sequence"})
    assert s.value("tokens_per_second_per_user", "token/s") == pytest.approx(2 / 12.625e-3,
                                                                             rel=1e-12)


def test_no_speculation_stands_beside_an_moe_models_expert_coverage():
    # Two absences meet: "nothing accepted" (a step gives 1 token) and "every expert read".
    # The model's experts determine the coverage, which gives way; the decoding scheme,
    # stated by no one, stays: 100e9 params, 80e9 in 4 experts of which a token picks 2;
    # 2 sequences of 1 token leave an expert unpicked with (1/2)^2 = 0.25, so the step
    # reads 100e9 - 0.25 x 80e9 = 80e9 one-byte params over 8 TB/s: 10 ms.
    s = solve(["decode_tokens_per_step", "t_weight_fetch_touched"],
              {"total_params": "100e9 param", "expert_params": "80e9 param", "n_experts": 4,
               "n_active_experts": 2, "bytes_per_param": "1 byte/param", "n_chips": "8 chip",
               "hbm_bandwidth": "1 TB/s", "batch_size": "2 sequence"})
    assert s.value("decode_tokens_per_step", "token/sequence") == 1
    assert s.value("t_weight_fetch_touched", "ms") == pytest.approx(10, rel=1e-12)


def test_an_moe_step_routes_every_verified_token():
    # Issue 23: speculation's experts and all-to-all follow the tokens a step runs, not
    # those it keeps. 100e9 params, 80e9 in 4 experts of which a token picks 2; one
    # sequence drafting k = 3 with alpha = 0.5 keeps (1 - 0.5^4) / 0.5 = 1.875 tokens but
    # runs 4: an expert is left unpicked with (1/2)^4 = 1/16 (not (1/2)^1.875 = 0.2726), so
    # the step reads 100e9 - 80e9 / 16 = 95e9 one-byte params over 8 TB/s: 11.875 ms.
    # The all-to-all sends 4 tokens x 2 x 10 layers x 2 experts x 4096 x 2 bytes over
    # 4 chips x 450 GB/s: 1,310,720 / 1.8e12 = 0.7282 us
    s = solve(["decode_tokens_per_step", "tokens_run_per_step", "unread_expert_fraction",
               "t_weight_fetch_touched", "t_alltoall"],
              {"total_params": "100e9 param", "expert_params": "80e9 param", "n_experts": 4,
               "n_active_experts": 2, "bytes_per_param": "1 byte/param", "n_chips": "8 chip",
               "hbm_bandwidth": "1 TB/s", "batch_size": "1 sequence",
               "draft_tokens": "3 token/sequence", "acceptance_rate": "0.5",
               "n_layers": 10, "d_model": 4096, "activation_bytes": "2 byte",
               "expert_parallelism": "4 chip", "scale_up_bandwidth": "450 GB/s",
               "moe_tensor_parallelism": 2})
    assert s.value("decode_tokens_per_step", "token/sequence") == pytest.approx(1.875)
    assert s.value("tokens_run_per_step", "token") == pytest.approx(4)
    assert s.value("unread_expert_fraction") == pytest.approx(1 / 16, rel=1e-12)
    assert s.value("t_weight_fetch_touched", "ms") == pytest.approx(11.875, rel=1e-12)
    assert s.value("t_alltoall", "s") == pytest.approx(4 * 2 * 10 * 2 * 4096 * 2 / 1.8e12,
                                                       rel=1e-12)


def test_the_acceptance_rate_alone_asks_for_the_pins_that_replace_no_speculation():
    # Regression: the conventions' no speculation (nothing accepted) takes out the only
    # relation naming acceptance_rate, and the completion search, which offered only
    # quantities not yet pinned, said no small set of extra pins would determine it
    from chalk.symbolic.errors import UnderdeterminedError

    with pytest.raises(UnderdeterminedError) as caught:
        solve("acceptance_rate", {}, ["lecture"])
    assert ("accepted_tokens_per_step", "draft_tokens") in caught.value.completions
    # and those pins do: 2 drafted tokens, 0.75 kept a step, is alpha + alpha^2 = 0.75,
    # alpha = 0.5
    s = solve("acceptance_rate", {"draft_tokens": "2 token/sequence",
                                  "accepted_tokens_per_step": "0.75 token/sequence"},
              ["lecture"])
    assert s.value("acceptance_rate") == pytest.approx(0.5, rel=1e-9)
