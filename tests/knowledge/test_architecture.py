"""Parameter counts from a model's architecture, checked by hand against published sizes.

Counting convention (architecture.py): total counts every table; active counts what a
token multiplies by, so the output head is in and a separate input-embedding table is out.
"""

import pytest

from chalk import solve

# conventions pin the embedding table to 0; these questions give the architecture instead
ARCH = ("total_params", "active_params")


def counts(given, presets=()):
    # a layer count of 0 takes its term out (solvers.pinning.zeros): a model with no dense layers
    # needs no dense MLP width
    s = solve(list(ARCH), given=given, presets=presets)
    return s.value("total_params", "param"), s.value("active_params", "param")


def test_deepseek_v3_mla_shared_experts_dense_first_layers():
    # config_671B.json: d 7168, 61 layers (3 dense, F 18432), 128 heads, MLA q_lora 1536,
    # kv_lora 512, nope 128, rope 64, v 128; 256 routed + 1 shared of width 2048, top 8;
    # vocab 129,280, untied.
    d, vocab = 7168, 129280
    attention = (d * 1536 + 1536 * 128 * (128 + 64) + d * (512 + 64)
                 + 512 * 128 * (128 + 128) + 128 * 128 * d)            # 187,105,280
    expert = 3 * d * 2048                                               # 44,040,192
    dense = (61 * attention + 3 * 3 * d * 18432 + 58 * (1 * expert + d * 256)
             + vocab * d)                                               # head, not input table
    experts = 58 * 256 * expert
    total = dense + experts + vocab * d
    active = dense + experts * 8 / 256
    got_total, got_active = counts({
        "n_layers": "61", "d_model": "7168", "n_heads": "128", "q_lora_rank": "1536",
        "kv_lora_rank": "512", "qk_nope_head_dim": "128", "qk_rope_head_dim": "64",
        "v_head_dim": "128", "n_dense_layers": "3", "d_ff": "18432", "moe_d_ff": "2048",
        "n_experts": "256", "n_active_experts": "8", "n_shared_experts": "1",
        "vocab_size": "129280", "untied_embeddings": "1"})
    assert got_total == pytest.approx(total, rel=1e-9)
    assert got_active == pytest.approx(active, rel=1e-9)
    assert total == pytest.approx(671e9, rel=0.02)      # 671.03B
    assert active == pytest.approx(36.7e9, rel=0.02)    # 36.62B vs README_WEIGHTS' 36.7B
    assert active == pytest.approx(37e9, rel=0.02)      # and the 37B headline


def test_llama_3_1_405b_dense_gqa():
    # 126 layers, d 16384, 128 heads / 8 KV of 128, FFN 53,248, vocab 128,256, untied
    d, vocab = 16384, 128256
    layer = 2 * d * 128 * 128 + 2 * d * 8 * 128 + 3 * d * 53248
    total = 126 * layer + 2 * vocab * d                                 # 405.85B
    s = solve("total_params", given={
        "n_layers": "126", "d_model": "16384", "n_heads": "128", "n_kv_heads": "8",
        "d_head": "128", "d_ff": "53248", "n_moe_layers": "0", "expert_params": "0 param",
        "moe_shared_params": "0 param", "vocab_size": "128256", "untied_embeddings": "1"})
    assert s.value("total_params", "param") == pytest.approx(total, rel=1e-9)
    assert total == pytest.approx(405e9, rel=0.02)
    # matmul parameters (the active count by this convention): all but the input table
    assert s.value("dense_params", "param") == pytest.approx(total - vocab * d, rel=1e-9)


def test_llama_3_1_70b_preset_states_and_derives_its_size():
    # 80 layers, d 8192, 64 heads / 8 KV of 128, FFN 28,672, vocab 128,256, untied
    d, vocab = 8192, 128256
    total = 80 * (2 * d * 64 * 128 + 2 * d * 8 * 128 + 3 * d * 28672) + 2 * vocab * d
    s = solve("total_params", presets=["llama_3_1_70b"])
    # the published 70.55B is a rounded headline: the architecture's count answers, and
    # the statement stands beside it as a cross-check
    assert s.value("total_params", "param") == pytest.approx(total, rel=1e-9)
    assert s.stated["total_params"]["answer"] == "derived"
    assert s.stated["total_params"]["stated"] == pytest.approx(70.55e9)
    assert total == pytest.approx(70.55e9, rel=0.02)                    # 70.55B


def test_qwen3_235b_a22b_gqa_moe():
    # 94 layers, d 4096, 64 heads / 4 KV of 128, 128 experts of 1536, top 8, no shared,
    # no dense layers, vocab 151,936, untied
    d, vocab = 4096, 151936
    attention = 2 * d * 64 * 128 + 2 * d * 4 * 128
    expert = 3 * d * 1536
    dense = 94 * attention + 94 * d * 128 + vocab * d                  # router, head
    experts = 94 * 128 * expert
    total, active = dense + experts + vocab * d, dense + experts * 8 / 128
    got_total, got_active = counts({
        "n_layers": "94", "d_model": "4096", "n_heads": "64", "n_kv_heads": "4",
        "d_head": "128", "n_dense_layers": "0", "moe_d_ff": "1536", "n_experts": "128",
        "n_active_experts": "8", "n_shared_experts": "0", "vocab_size": "151936",
        "untied_embeddings": "1"})
    assert got_total == pytest.approx(total, rel=1e-9)
    assert got_active == pytest.approx(active, rel=1e-9)
    assert total == pytest.approx(235e9, rel=0.02)      # 235.49B
    assert active == pytest.approx(22e9, rel=0.02)      # 21.96B


def test_gpt_oss_120b_hybrid_moe():
    # 36 layers, d 2880, 64 heads / 8 KV of 64, 128 experts of 2880, top 4, vocab 201,088
    d, vocab = 2880, 201088
    attention = 2 * d * 64 * 64 + 2 * d * 8 * 64
    dense = 36 * attention + 36 * d * 128 + vocab * d
    experts = 36 * 128 * 3 * d * 2880
    total, active = dense + experts + vocab * d, dense + experts * 4 / 128
    got_total, got_active = counts({
        "n_layers": "36", "d_model": "2880", "n_heads": "64", "n_kv_heads": "8",
        "d_head": "64", "n_dense_layers": "0", "moe_d_ff": "2880", "n_experts": "128",
        "n_active_experts": "4", "n_shared_experts": "0", "vocab_size": "201088",
        "untied_embeddings": "1"})
    assert got_total == pytest.approx(total, rel=1e-9)
    assert got_active == pytest.approx(active, rel=1e-9)
    assert total == pytest.approx(117e9, rel=0.02)      # 116.80B (biases left out)
    assert active == pytest.approx(5.1e9, rel=0.02)     # 5.13B


def test_mixtral_8x22b():
    # 56 layers, d 6144, 48 heads / 8 KV of 128, 8 experts of 16,384, top 2, vocab 32,000
    d, vocab = 6144, 32000
    dense = 56 * (2 * d * 48 * 128 + 2 * d * 8 * 128) + 56 * d * 8 + vocab * d
    experts = 56 * 8 * 3 * d * 16384
    total, active = dense + experts + vocab * d, dense + experts * 2 / 8
    got_total, got_active = counts({
        "n_layers": "56", "d_model": "6144", "n_heads": "48", "n_kv_heads": "8",
        "d_head": "128", "n_dense_layers": "0", "moe_d_ff": "16384", "n_experts": "8",
        "n_active_experts": "2", "n_shared_experts": "0", "vocab_size": "32000",
        "untied_embeddings": "1"})
    assert got_total == pytest.approx(total, rel=1e-9)
    assert got_active == pytest.approx(active, rel=1e-9)
    assert total == pytest.approx(141e9, rel=0.02)      # 140.67B
    assert active == pytest.approx(39e9, rel=0.02)      # 38.95B


def test_gemma_3_27b_tied_hybrid():
    # 62 layers, d 5376, 32 heads / 16 KV of 128, FFN 21,504, vocab 262,144, tied
    d, vocab = 5376, 262144
    total = 62 * (2 * d * 32 * 128 + 2 * d * 16 * 128 + 3 * d * 21504) + vocab * d
    s = solve("total_params", presets=["gemma_3_27b"])
    assert s.stated["total_params"]["derived"] == pytest.approx(total, rel=1e-9)
    assert total == pytest.approx(27e9, rel=0.02)       # 27.01B


def test_n_kv_layers_hybrid_and_dense():
    # Gemma 3 27B: 62 layers, 5 local : 1 global -> 52 local, 62 - 52 = 10 full-context
    s = solve("n_kv_layers", presets=["gemma_3_27b"])
    assert s.value("n_kv_layers", "1") == pytest.approx(62 - 52)
    # Llama 3.1 70B: no sliding-window layers, all 80 keep the whole context
    s = solve("n_kv_layers", presets=["llama_3_1_70b"])
    assert s.value("n_kv_layers", "1") == pytest.approx(80)


def test_n_layers_alone_gives_the_kv_bytes_of_a_dense_model():
    # 80 layers x 2 (K, V) x 8 KV heads x 128 x 2 bytes = 327,680 byte/token
    s = solve("kv_bytes_per_token", given={
        "n_layers": "80", "n_local_layers": "0", "n_kv_heads": "8", "d_head": "128",
        "kv_bytes_per_element": "2 byte"})
    assert s.value("kv_bytes_per_token", "byte/token") == pytest.approx(80 * 2 * 8 * 128 * 2)
