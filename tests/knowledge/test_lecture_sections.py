"""The lecture's deductions after the batch section, each number derived by hand here."""

import pytest
from chalk.knowledge import data

from chalk import solve


def test_experts_per_chip_and_back():
    # 256 experts over 64 chips (the lecture leaves 8 of 72 idle): 256 / 64 = 4
    s = solve("experts_per_chip", given={"n_experts": 256, "expert_parallelism": "64 chip"})
    assert s.value("experts_per_chip") == pytest.approx(4)
    back = solve("n_experts", given={"experts_per_chip": 4, "expert_parallelism": "64 chip"})
    assert back.value("n_experts") == pytest.approx(256)


def test_scale_up_out_ratio_and_the_layers_a_cut_needs():
    # (1/8 bandwidth) x 8 active experts x 1 layer per stage x 2 (there and back) = 2
    pins = {"scale_out_bandwidth": "50 GB/s", "scale_up_bandwidth": "400 GB/s",
            "n_active_experts": 8}
    s = solve("scale_up_out_time_ratio", given={**pins, "layers_per_stage": 1})
    assert s.value("scale_up_out_time_ratio") == pytest.approx(1 / 8 * 8 * 1 * 2)
    # backwards: the ratio reaches 1 at half a layer per stage
    back = solve("layers_per_stage", given={**pins, "scale_up_out_time_ratio": 1})
    assert back.value("layers_per_stage") == pytest.approx(1 / (1 / 8 * 8 * 2))


def test_memory_per_chip_with_pipelining():
    # the lecture's stage is one rack of E = 64 expert-parallel chips: weights 671e9 x 1 byte
    # over 64 x P=4 chips; KV of P x 2400 sequences x 10,000 tokens x 70,272 byte/token over
    # the same 256 chips
    weights = 671e9 * 1 / (64 * 4)
    kv = 4 * 2400 * 10_000 * 70_272 / (64 * 4)
    pins = {"total_params": "671e9 param", "bytes_per_param": "1 byte/param",
            "chips_per_stage": "64 chip", "pipeline_stages": 4,
            "micro_batch_size": "2400 sequence", "context_length": "10000 token",
            "kv_bytes_per_token": "70272 byte/token"}
    s = solve("memory_per_chip", given=pins)
    assert s.value("memory_per_chip", "byte") == pytest.approx(weights + kv, rel=1e-12)
    assert s.value("memory_per_chip", "byte") == pytest.approx(2.90e10, rel=2e-3)


def test_pipelining_shrinks_weights_not_kv():
    pins = {"total_params": "671e9 param", "bytes_per_param": "1 byte/param",
            "chips_per_stage": "64 chip", "micro_batch_size": "2400 sequence",
            "context_length": "10000 token", "kv_bytes_per_token": "70272 byte/token"}
    kv_share = 2400 * 10_000 * 70_272 / 64  # per chip, whatever P is
    for stages in (1, 2, 8):
        s = solve("memory_per_chip", given={**pins, "pipeline_stages": stages})
        weights = 671e9 / (64 * stages)
        assert s.value("memory_per_chip", "byte") == pytest.approx(weights + kv_share)


def test_longest_context_that_fits_backwards():
    # memory_fill = 1 on an 80 GB chip with E=64, P=1: solve the context that fits
    pins = {"total_params": "671e9 param", "bytes_per_param": "1 byte/param",
            "chips_per_stage": "64 chip", "pipeline_stages": 1,
            "micro_batch_size": "100 sequence", "kv_bytes_per_token": "70272 byte/token",
            "hbm_capacity": "80 GB", "memory_fill": 1}
    s = solve("context_length", given=pins)
    expected = (80e9 * 64 - 671e9) / (100 * 70_272)
    assert s.value("context_length", "token") == pytest.approx(expected)


def test_inference_tokens_over_a_deployment():
    s = solve("inference_tokens", given={"serving_rate": "50e6 token/s",
                                          "deployment_time": "60 day"})
    assert s.value("inference_tokens", "token") == pytest.approx(50e6 * 60 * 86400)
    assert s.value("inference_tokens", "token") == pytest.approx(2.592e14)
    back = solve("deployment_time", given={"serving_rate": "50e6 token/s",
                                            "inference_tokens": "2.592e14 token"})
    assert back.value("deployment_time", "day") == pytest.approx(60)


def test_overtraining_factor_and_back():
    s = solve("overtrain_factor", given={"pretrain_tokens": "200e12 token",
                                          "active_params": "100e9 param"})
    assert s.value("overtrain_factor") == pytest.approx(200e12 / (20 * 100e9))
    assert s.value("overtrain_factor") == pytest.approx(100)
    back = solve("pretrain_tokens", given={"overtrain_factor": 100,
                                            "active_params": "100e9 param"})
    assert back.value("pretrain_tokens", "token") == pytest.approx(2e14)


def test_equal_split_of_pretraining_rl_and_serving():
    # 6 N D_pre = 3 x 3 N D_rl = 2 x 3 N D_inf  ->  D_pre = 1.5 D_rl = D_inf
    d_pre = 15e12
    s = solve(["rl_tokens", "inference_tokens"], presets="equal_split",
              given={"pretrain_tokens": f"{d_pre} token", "active_params": "100e9 param",
                     "decode_inefficiency": 3, "rl_flops_per_param": "3 FLOP/param/token"})
    assert s.value("rl_tokens", "token") == pytest.approx(d_pre / 1.5)
    assert s.value("inference_tokens", "token") == pytest.approx(d_pre)


def test_train_flops_six_n_d():
    # Llama 3 405B: 6 x 405e9 x 15.6e12 = 3.79e25 (the paper reports 3.8e25)
    s = solve("train_flops", given={"active_params": "405e9 param",
                                     "pretrain_tokens": "15.6e12 token"})
    assert s.value("train_flops", "FLOP") == pytest.approx(6 * 405e9 * 15.6e12)


def test_deepseek_v3_mla_kv_bytes():
    # 61 layers x (512 latent + 64 rope) x 2 bytes
    s = solve("kv_bytes_per_token", presets=["deepseek_v3", "bf16"])
    assert s.value("kv_bytes_per_token", "byte/token") == pytest.approx(61 * (512 + 64) * 2)
    assert s.value("kv_bytes_per_token", "byte/token") == pytest.approx(70_272)


def test_llama_3_1_70b_gqa_kv_bytes():
    # 80 layers x 2 (K and V) x 8 KV heads x 128 dims x 2 bytes
    s = solve("kv_bytes_per_token", presets=["llama_3_1_70b", "bf16"])
    assert s.value("kv_bytes_per_token", "byte/token") == pytest.approx(80 * 2 * 8 * 128 * 2)
    assert s.value("kv_bytes_per_token", "byte/token") == pytest.approx(327_680)


@pytest.mark.parametrize("model", sorted(data.models()))
def test_every_model_preset_matches_its_reported_kv_bytes(model):
    reported = data.models()[model].facts["kv_bytes_per_token_reported"]
    s = solve("kv_bytes_per_token", presets=[model, "bf16"])
    assert s.value("kv_bytes_per_token", "byte/token") == pytest.approx(reported.value)


def test_hybrid_model_window_term():
    # Gemma 3 27B: local layers keep a 1024-token window of 2 x 16 heads x 128 dims x 2 bytes
    record = data.models()["gemma_3_27b"].facts
    local = record["n_local_layers"].value
    window = record["sliding_window"].value
    s = solve("kv_window_bytes_per_sequence", presets=["gemma_3_27b", "bf16"])
    expected = local * window * 2 * 16 * 128 * 2
    assert s.value("kv_window_bytes_per_sequence", "byte/sequence") == pytest.approx(expected)


def test_sparse_attention_reads_square_root():
    # reads sqrt(1e6 x 4096) = 64,000 tokens of a million-token context
    s = solve("kv_tokens_read", given={"context_length": "1e6 token",
                                        "sparse_attention_scale": "4096 token"})
    assert s.value("kv_tokens_read", "token") == pytest.approx((1e6 * 4096) ** 0.5)


def test_output_price_five_times_input_means_one_fifth_utilisation():
    s = solve("decode_mfu_ratio", given={"price_input": "5 USD/Mtoken",
                                          "price_output": "25 USD/Mtoken"})
    assert s.value("decode_mfu_ratio") == pytest.approx(1 / 5)
    back = solve("output_input_price_ratio", given={"decode_mfu_ratio": 0.125})
    assert back.value("output_input_price_ratio") == pytest.approx(8)


def test_hold_and_retrieve_costs_balance_at_the_drain_time():
    # hold = kv/cap x price x t ; retrieve = kv/bw x price ; equal when t = cap/bw
    pins = {"kv_bytes_per_token": "2000 byte/token", "tier_capacity": "2 TB",
            "tier_bandwidth": "600 GB/s", "tier_price": "1 USD/hour"}
    drain = 2e12 / 600e9
    s = solve(["hold_cost_per_token", "retrieve_cost_per_token"],
              given={**pins, "hold_time": f"{drain} s"})
    assert s.value("hold_cost_per_token") == pytest.approx(s.value("retrieve_cost_per_token"))
    assert s.value("retrieve_cost_per_token", "USD/token") == pytest.approx(
        2000 / 600e9 * (1 / 3600))


def test_cache_write_premium_is_a_storage_price():
    # Claude: 5-minute write 6.25 vs input 5 USD/Mtoken -> 1.25 USD/Mtoken per 5 min
    s = solve("cache_storage_price", given={"price_cache_write": "6.25 USD/Mtoken",
                                             "price_input": "5 USD/Mtoken",
                                             "cache_hold_time": "5 min"})
    assert s.value("cache_storage_price", "USD/Mtoken/hour") == pytest.approx(1.25 * 12)


def test_fast_mode_batch():
    # 6x price for 2.5x speed on the same chips: the batch is 6 x 2.5 = 15 times smaller
    s = solve("fast_batch_ratio", given={"fast_price_ratio": 6, "fast_speedup": 2.5})
    assert s.value("fast_batch_ratio") == pytest.approx(1 / 15)


def test_a_deployment_that_does_not_fit_is_flagged():
    # DeepSeek-V3 in bf16 on 8 H100s (80 GB each), one stage, 64 sequences of 4k (4,000)
    # tokens: weights 671e9 param × 2 byte = 1,342 GB; MLA keeps (512 + 64) elements per
    # layer per token over 61 layers at 2 bytes = 70,272 byte/token, so the KV cache is
    # 64 × 4,000 × 70,272 byte. The weights shard over the 8 chips; the latent is one head
    # that Megatron's layout (attention split over all 8) holds whole on each chip, so the
    # KV cache is there 8 times (knowledge/kv_sharding.py).
    weights = 671e9 * 2
    kv = 64 * 4000 * (512 + 64) * 61 * 2
    fill = (weights + 8 * kv) / 8 / 80e9
    s = solve("memory_fill", {"batch_size": "64 sequence", "n_chips": "8 chip",
                              "context_length": "4k token", "total_params": "671e9 param"},
              ["h100", "deepseek_v3", "bf16"])
    assert s.value("memory_fill") == pytest.approx(fill, rel=1e-9)
    # the weights alone take 1,342 GB of the 8 x 80 GB
    weight_fill = weights / 8 / 80e9
    assert s.value("weight_fill") == pytest.approx(weight_fill, rel=1e-9)
    assert s.derivation.flags == (
        f"memory_fill = {fill:.4g} is above 1: the weights and KV cache this needs do not "
        "fit in the chips' HBM",
        f"weight_fill = {weight_fill:.4g} is above 1: the weights alone do not fit in the "
        "chips' HBM, before any KV cache")
