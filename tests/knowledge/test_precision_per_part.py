"""Precision per part (issue 23, item 4): the weight matmuls run at the chip's peak for the
format a precision preset names, attention at the peak of its own format, and latent
attention is counted absorbed in decode and expanded in prefill. Every number below is
worked by hand in the comments (chip peaks: the datasheet figures the chip presets state).
"""

import pytest

from chalk import solve

# 100 sequences of one token each through 1e10 active parameters on one chip:
# 100 x 2 FLOP x 1e10 = 2e12 FLOP of weight matmuls
STEP = {"n_chips": "1 chip", "batch_size": "100 sequence", "active_params": "1e10 param"}

H100_BF16, H100_FP8 = 989e12, 1979e12          # NVIDIA H100 SXM datasheet, dense
B200_BF16, B200_FP8, B200_FP4 = 2.25e15, 4.5e15, 9e15   # HGX B200 datasheet, dense


def t_compute(presets, **pins):
    s = solve("t_compute", {**STEP, **pins}, presets)
    return s.value("t_compute", "s")


@pytest.mark.parametrize("presets", [["h100", "fp8"], ["fp8", "h100"]])
def test_a_precision_preset_picks_the_chips_peak_for_its_format(presets):
    # Regression: h100 with fp8 computed at the BF16 peak (2e12 / 989e12 = 2.022 ms).
    # At the FP8 peak: 2e12 / 1.979e15 = 1.0106 ms, whichever preset comes first.
    assert t_compute(presets) == pytest.approx(2e12 / H100_FP8, rel=1e-12)


def test_the_precision_preset_outranks_the_format_a_chip_preset_names():
    # b200_fp4 names the FP4 peak, the bf16 preset says the matmuls run in BF16:
    # 2e12 / 2.25e15 = 0.8889 ms; with no precision preset the chip's own format stands
    assert t_compute(["b200_fp4", "bf16"]) == pytest.approx(2e12 / B200_BF16, rel=1e-12)
    assert t_compute(["b200_fp4"]) == pytest.approx(2e12 / B200_FP4, rel=1e-12)


def test_a_mix_of_formats_takes_the_harmonic_mean_of_their_peaks():
    # half the matmul FLOPs in BF16, half in FP8 on a B200: 1 / (0.5 / 2.25e15 + 0.5 /
    # 4.5e15) = 1 / (2.222e-16 + 1.111e-16) = 3e15 FLOP/s
    mix = {"matmul_bf16_share": 0.5, "matmul_fp8_share": 0.5, "matmul_fp4_share": 0}
    s = solve("chip_flops", mix, ["b200"])
    assert s.value("chip_flops", "FLOP/s") == pytest.approx(3e15, rel=1e-12)
    # backwards: a 3e15 FLOP/s matmul peak with half in BF16 and none in FP4 leaves
    # (1 / 3e15 - 0.5 / 2.25e15) x 4.5e15 = 0.5 of the FLOPs in FP8
    back = solve("matmul_fp8_share", {"chip_flops": "3e15 FLOP/s", "matmul_bf16_share": 0.5,
                                       "matmul_fp4_share": 0}, ["b200"])
    assert back.value("matmul_fp8_share") == pytest.approx(0.5, rel=1e-9)


# attention FLOPs of 1e10 per new token beside the 2e10 of the weight matmuls
ATTENTION = {"attention_flops_per_token": "1e10 FLOP/token"}


def test_attention_runs_at_its_own_formats_peak_under_fp4():
    # fp4 on a B200: weights at 9e15, attention in FP8 at 4.5e15:
    # 100 x (2e10 / 9e15 + 1e10 / 4.5e15) = 100 x (2.222e-6 + 2.222e-6) s = 0.4444 ms,
    # not the 100 x 3e10 / 9e15 = 0.3333 ms of attention at the FP4 peak
    assert t_compute(["b200", "fp4"], **ATTENTION) == pytest.approx(
        100 * (2e10 / B200_FP4 + 1e10 / B200_FP8), rel=1e-12)


def test_attention_stays_at_chip_flops_when_no_format_is_named():
    # only chip_flops known: attention at it, 100 x 3e10 / 1e15 = 3 ms, with no other pin
    s = solve("t_compute", {**STEP, **ATTENTION, "chip_flops": "1e15 FLOP/s"})
    assert s.value("t_compute", "ms") == pytest.approx(3, rel=1e-12)
    assert s.derivation.pins["attention_surplus_time_per_flop"].value == 0


# Regression (issue 22): asked for, attention's peak was refused ("the pins fix only a
# combination of attention_bf16_share, attention_chip_flops and attention_fp8_share"):
# the conventions' zero surplus took the relation 1/attention_chip_flops - 1/chip_flops
# = attention_surplus_time_per_flop out of the question instead of reading it as
# 1/attention_chip_flops = 1/chip_flops
def test_asked_for_attentions_peak_is_the_matmuls_under_the_zero_surplus():
    # chip_flops pinned alone: 1/attention_chip_flops = 1/1e15, so 1e15 FLOP/s
    s = solve("attention_chip_flops", {"chip_flops": "1e15 FLOP/s"})
    assert s.value("attention_chip_flops", "FLOP/s") == pytest.approx(1e15, rel=1e-12)
    # full presets: bf16 puts every matmul FLOP in BF16, so chip_flops = 1 / (1 / 989e12)
    # = 989e12 FLOP/s (the H100 SXM datasheet's dense BF16 peak), and attention runs at it
    pins = {"n_chips": "8 chip", "batch_size": "32 sequence", "context_length": "8k token"}
    s = solve("attention_chip_flops", pins, ["h100", "bf16", "llama_3_1_70b"])
    assert s.value("attention_chip_flops", "FLOP/s") == pytest.approx(H100_BF16, rel=1e-12)
    assert s.derivation.pins["attention_surplus_time_per_flop"].value == 0


def test_a_pinned_attention_peak_is_used_and_found_backwards():
    # attention at 2.5e14 beside matmuls at 1e15: 100 x (2e10 / 1e15 + 1e10 / 2.5e14)
    # = 100 x (2e-5 + 4e-5) s = 6 ms
    pins = {**STEP, **ATTENTION, "chip_flops": "1e15 FLOP/s"}
    s = solve("t_compute", {**pins, "attention_chip_flops": "2.5e14 FLOP/s"})
    assert s.value("t_compute", "ms") == pytest.approx(6, rel=1e-12)
    # backwards: a 5 ms step leaves 5e-5 - 2e-5 = 3e-5 s per sequence for 1e10 attention
    # FLOPs: 1e10 / 3e-5 = 3.333e14 FLOP/s
    back = solve("attention_chip_flops", {**pins, "t_compute": "5 ms"})
    assert back.value("attention_chip_flops", "FLOP/s") == pytest.approx(1e10 / 3e-5, rel=1e-9)


def test_prefill_attention_runs_at_its_own_formats_peak():
    # 1000 prompt tokens of 2e10 weight FLOPs and 1e10 attention FLOPs on a B200 at fp4:
    # 1000 x (2e10 / 9e15 + 1e10 / 4.5e15) = 1000 x 4.444e-6 s = 4.444 ms
    pins = {"n_chips": "1 chip", "active_params": "1e10 param", "prompt_tokens": "1000 token",
            "prefill_attention_flops_per_token": "1e10 FLOP/token"}
    # (the compute side of the prefill: time_to_first_token is its max with the memory side)
    s = solve("t_prefill_compute", pins, ["b200", "fp4"])
    assert s.value("t_prefill_compute", "s") == pytest.approx(
        1000 * (2e10 / B200_FP4 + 1e10 / B200_FP8), rel=1e-12)


# DeepSeek-V3 (config.json): 61 layers, 128 heads, kv_lora_rank 512, qk_nope 128,
# qk_rope 64, v_head 128
LAYERS, HEADS, LATENT, NOPE, ROPE, V = 61, 128, 512, 128, 64, 128


def test_mla_prefill_is_counted_expanded_and_decode_absorbed():
    # prefill, not absorbed: per prompt token, half of 4000 earlier tokens, per layer and
    # head a (128 + 64)-wide score and a 128-wide sum of 2 FLOP each:
    # 61 x 128 x 2 x (128 + 64 + 128) x 4000 / 2 = 9.994e9 FLOP/token
    prefill = LAYERS * HEADS * 2 * (NOPE + ROPE + V) * 4000 / 2
    # decode, absorbed: per cached token, per layer and head, a (2 x 512 + 64)-wide pass:
    # 61 x 128 x 2 x 1088 x 4000 = 6.795e10 FLOP/token
    decode = LAYERS * HEADS * 2 * (2 * LATENT + ROPE) * 4000
    s = solve(["prefill_attention_flops_per_token", "attention_flops_per_token"],
              {"prompt_tokens": "4000 token", "context_length": "4000 token"},
              ["deepseek_v3", "bf16"])
    assert s.value("prefill_attention_flops_per_token", "FLOP/token") == pytest.approx(
        prefill, rel=1e-12)
    assert s.value("attention_flops_per_token", "FLOP/token") == pytest.approx(
        decode, rel=1e-12)
    # per pair of tokens the absorbed form does 1088 / 320 = 3.4 times the work
    assert decode / (2 * prefill) == pytest.approx(3.4, rel=1e-12)
    # backwards: 9.994e9 FLOP/token of prefill attention is a 4000-token prompt
    back = solve("prompt_tokens", {"prefill_attention_flops_per_token":
                                   f"{prefill} FLOP/token"}, ["deepseek_v3", "bf16"])
    assert back.value("prompt_tokens", "token") == pytest.approx(4000, rel=1e-9)


def test_gqa_prefill_keeps_the_decode_width():
    # Llama 3.1 8B: 32 layers, 32 heads of 128: per prompt token half of 1000 earlier
    # tokens x 32 layers x 2 x (2 x 32 x 128) FLOP = 262,144,000 FLOP/token
    s = solve("prefill_attention_flops_per_token", {"prompt_tokens": "1000 token"},
              ["llama_3_1_8b", "bf16"])
    assert s.value("prefill_attention_flops_per_token", "FLOP/token") == pytest.approx(
        1000 / 2 * 32 * 2 * (2 * 32 * 128), rel=1e-12)
