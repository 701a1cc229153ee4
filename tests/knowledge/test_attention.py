"""Attention FLOPs and prefill, worked by hand from the models' published shapes."""

import pytest

from chalk import solve

# Llama 3.1 70B: 64 query heads, 8 KV heads of 128, 80 layers (GQA), 70.55e9 params.
# DeepSeek-V3: 128 heads on a 512-wide latent plus a 64-wide RoPE key, 61 layers (MLA).


@pytest.mark.parametrize("context", [8192, 131072])
def test_gqa_attention_flops_by_hand(context):
    # per layer a new token takes 64 dot products of 128 with each cached key and 64
    # weighted sums of 128 over each cached value: 2 x 64 x 128 multiply-adds per token
    flops = 2 * (2 * 64 * 128) * 80 * context  # 2.62e6 FLOP per token of context
    s = solve(["attention_flops_per_token", "attention_intensity"],
              {"context_length": f"{context} token"}, ["llama_3_1_70b", "bf16"])
    assert s.value("attention_flops_per_token", "FLOP/token") == pytest.approx(flops, rel=1e-12)
    # each cached element (2 bytes) serves 64 / 8 = 8 query heads: 2 x 8 / 2 FLOP per byte
    assert s.value("attention_intensity", "FLOP/byte") == pytest.approx(8)
    expected = {8192: 21.47e9, 131072: 343.6e9}[context]
    assert s.value("attention_flops_per_token", "FLOP/token") == pytest.approx(expected,
                                                                               rel=1e-3)


@pytest.mark.parametrize("context", [5000, 32768])
def test_mla_attention_flops_by_hand(context):
    # absorbed MLA: each head scores against the 512 + 64 cached widths and sums the 512
    # latent: 128 x (2 x 512 + 64) = 139,264 multiply-adds per cached token per layer
    flops = 2 * 128 * (2 * 512 + 64) * 61 * context
    s = solve(["attention_flops_per_token", "attention_intensity"],
              {"context_length": f"{context} token"}, ["deepseek_v3", "bf16"])
    assert s.value("attention_flops_per_token", "FLOP/token") == pytest.approx(flops, rel=1e-12)
    # one 576-element latent (1,152 bytes) serves all 128 heads
    assert s.value("attention_intensity", "FLOP/byte") == pytest.approx(
        2 * 139_264 / (576 * 2))  # 241.8
    if context == 5000:
        # about 85 GFLOP of attention against 74 GFLOP of weight matmuls per token
        assert s.value("attention_flops_per_token", "FLOP/token") == pytest.approx(84.95e9,
                                                                                   rel=1e-3)


def test_attention_counts_in_the_step_when_the_shape_is_known():
    # DeepSeek-V3 in bf16 on 32 H100s, 256 sequences at 5,000 tokens of context:
    # compute per sequence (2 x 36.7e9 + 84.95e9) / (32 x 989e12)
    attention = 2 * 128 * 1088 * 61 * 5000
    per_sequence = (2 * 36.7e9 + attention) / (32 * 989e12)
    s = solve("t_compute", {"n_chips": "32 chip", "batch_size": "256 sequence",
                            "context_length": "5000 token", "active_params": "36.7e9 param"},
              ["deepseek_v3", "h100", "bf16"])
    assert s.value("t_compute", "s") == pytest.approx(256 * per_sequence, rel=1e-12)
    assert any(n.startswith("attention_flops_per_token is computed from")
               for n in s.derivation.notes)


def test_without_an_attention_shape_the_conventions_leave_attention_out():
    pins = {"n_chips": "8 chip", "batch_size": "64 sequence", "chip_flops": "989e12 FLOP/s",
            "active_params": "70e9 param"}
    for conventions in ("careful", "lecture"):
        s = solve("t_compute", pins, [conventions])
        flops_per_param = {"careful": 2, "lecture": 1}[conventions]
        assert s.value("t_compute", "s") == pytest.approx(
            64 * flops_per_param * 70e9 / (8 * 989e12), rel=1e-12)
        pin = s.derivation.pins["attention_flops_per_token"]
        assert pin.value == 0 and pin.origin == f"conventions {conventions}"


def test_prefill_of_a_long_prompt_by_hand():
    # Llama 3.1 70B on 8 H100s, an 8,192-token prompt: each prompt token multiplies the
    # 70.55e9 parameters less the 128,256 x 8,192 input-embedding table it only looks up,
    # 2 FLOP each, and, causally, attends to half the prompt on average:
    # 2 x (2 x 64 x 128) x 80 x 4,096 = 10.74e9 FLOP
    d, vocab = 8192, 128256
    total = 80 * (2 * d * 64 * 128 + 2 * d * 8 * 128 + 3 * d * 28672) + 2 * vocab * d
    per_token = 2 * (total - vocab * d) + 2 * (2 * 64 * 128) * 80 * 8192 / 2
    replica = 8 * 989e12
    s = solve(["time_to_first_token", "prefill_tokens_per_second", "prefill_cost_per_token"],
              {"n_chips": "8 chip", "prompt_tokens": "8192 token", "chip_price": "2 USD/hour"},
              ["llama_3_1_70b", "h100", "bf16"])
    assert s.value("time_to_first_token", "s") == pytest.approx(8192 * per_token / replica,
                                                                rel=1e-12)  # 157.3 ms
    assert s.value("prefill_tokens_per_second", "token/s") == pytest.approx(
        replica / per_token, rel=1e-12)  # 52,080 token/s
    assert s.value("prefill_cost_per_token", "USD/token") == pytest.approx(
        8 * 2 / 3600 / (replica / per_token), rel=1e-12)


def test_output_over_input_price_is_decode_over_prefill_cost():
    # a 5x output/input price with prefill costing 0.1 USD per million tokens says a
    # decoded token costs 0.5 USD per million to serve
    s = solve("cost_per_token", {"price_input": "1 USD/Mtoken", "price_output": "5 USD/Mtoken",
                                 "prefill_cost_per_token": "0.1 USD/Mtoken"})
    assert s.value("cost_per_token", "USD/token") == pytest.approx(0.5e-6, rel=1e-12)
