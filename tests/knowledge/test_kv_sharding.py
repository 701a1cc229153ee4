"""KV heads over an attention group's chips: split while there are heads to split, copied
after (issue 23), worked by hand; and a pipeline stage held to one chip on every path."""

import pytest
from chalk.symbolic.errors import ChalkError, NoSolution

from chalk import solve

# Llama 3.1 70B (80 layers, 8 KV heads of 128, bf16) on H100s (80 GB, 3.35 TB/s), 8,000
# tokens of context. The weights are pinned at the published 70.55e9 params (141.1e9 byte)
# so the arithmetic does not hang on the architecture's own count.
LLAMA = ["h100", "bf16", "llama_3_1_70b"]
PINS = {"context_length": "8000 token", "total_params": "70.55e9 param"}
WEIGHTS = 70.55e9 * 2  # byte
# one token's KV over all layers: 80 layers x 2 (K and V) x 8 heads x 128 x 2 byte
KV_PER_TOKEN = 80 * 2 * 8 * 128 * 2  # 327,680 byte
KV_PER_SEQUENCE = 8000 * KV_PER_TOKEN  # 2,621,440,000 byte


def test_llama_70b_on_16_h100s_at_tp16_holds_every_kv_head_twice():
    # TP 16 over 8 KV heads: each chip keeps max(1, 8 / 16) = 1 whole head, so the 16
    # chips hold 16 heads of 8, each twice. A chip holds per token 80 layers x 2 x 1 head
    # x 128 x 2 byte = 40,960 byte, not the 327,680 / 16 = 20,480 an even split would give.
    per_chip_per_token = 80 * 2 * 1 * 128 * 2
    assert per_chip_per_token == 40_960 == 2 * KV_PER_TOKEN / 16
    # batch 10: weights 141.1e9 / 16 = 8.819e9 byte a chip, KV 10 x 8,000 x 40,960 =
    # 3.277e9 byte a chip: 12.096e9 byte, 0.1512 of 80 GB
    per_chip = WEIGHTS / 16 + 10 * 8000 * per_chip_per_token
    assert per_chip == pytest.approx(12.0955e9, rel=1e-5)
    s = solve(["memory_per_chip", "kv_heads_per_chip", "kv_cache_copies",
               "kv_elements_per_chip"],
              {**PINS, "n_chips": "16 chip", "batch_size": "10 sequence"}, LLAMA)
    assert s.value("kv_heads_per_chip") == pytest.approx(1)
    assert s.value("kv_elements_per_chip") == pytest.approx(2 * 1 * 128)
    assert s.value("kv_cache_copies") == pytest.approx(2)
    assert s.value("memory_per_chip", "byte") == pytest.approx(per_chip, rel=1e-12)
    assert s.value("memory_fill") == pytest.approx(per_chip / 80e9, rel=1e-12)
    # the regime of the max() is shown in its own unit (a count of heads), not in seconds
    (step,) = [r for r in s.derivation.steps if r.variables == ("kv_heads_per_chip",)]
    assert step.note == "KV heads replicated (KV heads split 0.5, KV heads replicated 1)"


def test_the_largest_batch_and_the_kv_read_count_the_copies():
    # the largest batch at TP 16: (16 x 80e9 - 141.1e9) / (2 x 2.62144e9) = 217.23
    # sequences; split evenly it would be twice that
    largest = (16 * 80e9 - WEIGHTS) / (2 * KV_PER_SEQUENCE)
    assert largest == pytest.approx(217.23, abs=0.01)
    s = solve("max_batch_size", {**PINS, "n_chips": "16 chip"}, LLAMA)
    assert s.value("max_batch_size", "sequence") == pytest.approx(largest, rel=1e-12)
    # a step of 10 sequences reads each chip's own copy: 10 x 2.62144e9 x 2 byte over
    # 16 x 3.35 TB/s = 0.9781 ms of KV reads
    kv_read = 10 * KV_PER_SEQUENCE * 2 / (16 * 3.35e12)
    assert kv_read == pytest.approx(0.9781e-3, rel=1e-4)
    s = solve("t_kv_fetch", {**PINS, "n_chips": "16 chip", "batch_size": "10 sequence"},
              LLAMA)
    assert s.value("t_kv_fetch", "s") == pytest.approx(kv_read, rel=1e-12)


def test_backwards_the_batch_that_fills_a_chip_counts_the_copies():
    # 12.0955e9 byte a chip at TP 16 is batch 10 (above); read as if the KV were split
    # evenly it would be batch 20
    per_chip = WEIGHTS / 16 + 10 * 8000 * 40_960
    s = solve("batch_size", {**PINS, "n_chips": "16 chip",
                             "memory_per_chip": f"{per_chip} byte"}, LLAMA)
    assert s.value("batch_size", "sequence") == pytest.approx(10, rel=1e-9)


@pytest.mark.parametrize("chips", [4, 8])
def test_no_copies_while_the_group_has_no_more_chips_than_kv_heads(chips):
    # TP 4 and TP 8 over 8 heads: 2 heads and 1 head a chip, one copy: today's even split,
    # (141.1e9 + 10 x 2.62144e9) / chips
    s = solve(["memory_per_chip", "kv_cache_copies"],
              {**PINS, "n_chips": f"{chips} chip", "batch_size": "10 sequence"}, LLAMA)
    assert s.value("kv_cache_copies") == pytest.approx(1)
    assert s.value("memory_per_chip", "byte") == pytest.approx(
        (WEIGHTS + 10 * KV_PER_SEQUENCE) / chips, rel=1e-12)


def test_tensor_parallel_groups_are_a_stages_chips():
    # 2 pipeline stages of 8 chips: attention is split over a stage's 8 chips, one KV head
    # each, so nothing is copied. With 2 micro-batches of 10 in flight a chip holds
    # 141.1e9 / 16 + 10 x 2.62144e9 / 8 byte (weights over all 16, KV over a stage's 8)
    s = solve(["memory_per_chip", "attention_tensor_parallelism", "kv_cache_copies"],
              {**PINS, "n_chips": "16 chip", "pipeline_stages": 2,
               "batch_size": "10 sequence"}, LLAMA)
    assert s.value("attention_tensor_parallelism", "chip") == pytest.approx(8)
    assert s.value("kv_cache_copies") == pytest.approx(1)
    assert s.value("memory_per_chip", "byte") == pytest.approx(
        WEIGHTS / 16 + 10 * KV_PER_SEQUENCE / 8, rel=1e-12)


# DeepSeek-V3 (MLA: a 512-element latent and a 64-element RoPE key a layer, 61 layers) in
# bf16: 61 x 576 x 2 = 70,272 byte of KV per token
DSV3 = ["deepseek_v3", "h200", "bf16"]
DSV3_PINS = {"n_chips": "8 chip", "context_length": "4000 token", "batch_size": "10 sequence",
             "total_params": "671e9 param"}


def test_latent_attention_is_one_head_every_tensor_parallel_chip_holds():
    # Megatron's layout over 8 H200s (141 GB): every chip holds the whole latent, 8 copies.
    # A chip: 671e9 x 2 / 8 = 167.75e9 byte of weights and 10 x 4,000 x 70,272 = 2.811e9
    # byte of KV (an even split would give 0.351e9)
    kv_per_chip = 10 * 4000 * 61 * (512 + 64) * 2
    assert kv_per_chip == 2_810_880_000
    s = solve(["memory_per_chip", "kv_cache_copies", "kv_elements_per_chip"], DSV3_PINS, DSV3)
    assert s.value("kv_elements_per_chip") == pytest.approx(512 + 64)
    assert s.value("kv_cache_copies") == pytest.approx(8)
    assert s.value("memory_per_chip", "byte") == pytest.approx(
        671e9 * 2 / 8 + kv_per_chip, rel=1e-12)
    # data-parallel attention (groups of one chip) holds each sequence's latent once: the
    # KV of 10 sequences over 8 chips, 2.811e9 / 8 byte a chip, beside the weights and the
    # 7 extra copies of the attention weights the layout keeps
    dp = solve(["kv_cache_copies", "memory_per_chip", "replicated_attention_params"],
               DSV3_PINS, [*DSV3, "dp_attention"])
    assert dp.value("kv_cache_copies") == pytest.approx(1)
    extra = dp.value("replicated_attention_params", "param")
    assert dp.value("memory_per_chip", "byte") == pytest.approx(
        (671e9 * 2 + extra * 2 + 10 * 4000 * 70_272) / 8, rel=1e-12)


def test_a_model_whose_attention_is_not_known_keeps_one_copy():
    # no widths pinned: nothing says what a head is, so the conventions' one copy stands
    # (the lecture's 2.9e10 byte deduction rests on it: tests/knowledge/test_moe_as_it_runs)
    s = solve(["memory_per_chip", "kv_cache_copies"],
              {"n_chips": "16 chip", "total_params": "70e9 param",
               "bytes_per_param": "2 byte/param", "kv_bytes_per_token": "327680 byte/token",
               "context_length": "8000 token", "batch_size": "10 sequence"})
    assert s.value("kv_cache_copies") == pytest.approx(1)
    assert s.value("memory_per_chip", "byte") == pytest.approx(
        (140e9 + 10 * KV_PER_SEQUENCE) / 16, rel=1e-12)


@pytest.mark.parametrize("target", ["memory_per_chip", "max_batch_size", "weight_fill"])
def test_sixteen_stages_on_eight_chips_are_refused_on_the_memory_path(target):
    # Regression: chips_per_stage was held to one chip where it was computed, but the
    # memory relations read n_chips and answered for 8 / 16 = 0.5 chip a stage
    pins = {"n_chips": "8 chip", "pipeline_stages": 16, "batch_size": "10 sequence",
            "context_length": "8000 token", "total_params": "70e9 param",
            "bytes_per_param": "2 byte/param", "kv_bytes_per_token": "327680 byte/token",
            "hbm_capacity": "80 GB"}
    with pytest.raises(ChalkError, match=r"gives 0.5 chip \(not physical"):
        solve(target, pins)


def test_a_kind_alone_in_its_group_is_chosen_by_its_own_markers():
    # Regression: a model holding only the grouped-query relations (no MLA variant to set
    # aside) left the per-chip relations out even with n_kv_heads pinned, since "chosen"
    # was read off the variants set aside. 8 heads over 16 chips: max(1, 8/16) = 1 a chip
    from chalk.knowledge import load_model
    from chalk.solvers.pinning.variants import for_pins
    from chalk.symbolic.model import build_model

    full = load_model()
    relation = full.relations["kv_heads_per_chip"]
    names = sorted(full.variables_in(relation.name))
    alone = build_model([full.variables[n] for n in names], [relation], (),
                        [full.variants["gqa"]])
    assert "kv_heads_per_chip" in for_pins(alone, ("n_kv_heads",))[0].relations
    assert "kv_heads_per_chip" not in for_pins(alone, ())[0].relations
    s = solve("kv_heads_per_chip", {"n_kv_heads": 8, "attention_tensor_parallelism": "16 chip"},
              ["none"], model=alone)
    assert s.value("kv_heads_per_chip") == pytest.approx(1)


# Issue 23: the replica's chips backwards from the largest batch, 64 sequences of 8,192
# tokens: 64 x 8,192 x 327,680 byte = 171,798,691,840 byte of KV in one copy.
LONG = {"context_length": "8192 token", "total_params": "70.55e9 param"}
LONG_PINS = {**LONG, "max_batch_size": "64 sequence"}
KV_OF_64 = 64 * 8192 * KV_PER_TOKEN


def test_chips_backwards_from_the_largest_batch_split_the_kv_heads():
    # Regression: the block that sizes the attention group from the memory has, in the
    # regime where the group splits the 8 KV heads, kv_extra_copies = t x (2 x (8 / t) x
    # 128) / 2,048 - 1 = 0 exactly (and no attention copies in Megatron's layout), which a
    # search in log space never reached: after about three minutes, "no start of the
    # numeric search ... reached one". By hand, with one copy of everything and all of HBM
    # usable (the conventions): N x 80e9 = 141.1e9 + 171.799e9, N = 3.9112 chips, fewer
    # than the 8 KV heads, so each chip holds 8 / 3.9112 = 2.045 of them and the KV is
    # split, not copied.
    assert KV_OF_64 == 171_798_691_840
    chips = (WEIGHTS + KV_OF_64) / 80e9
    assert chips == pytest.approx(3.91123, abs=1e-5)
    s = solve(["n_chips", "kv_extra_copies", "kv_cache_copies", "kv_heads_per_chip",
               "replicated_attention_params"], LONG_PINS, LLAMA)
    assert s.value("n_chips", "chip") == pytest.approx(chips, rel=1e-9)
    assert s.value("kv_extra_copies") == 0
    assert s.value("kv_cache_copies") == 1
    assert s.value("kv_heads_per_chip") == pytest.approx(8 / chips, rel=1e-9)
    assert s.value("replicated_attention_params", "param") == 0
    assert "regime: KV heads split" in str(s)
    # forwards at that chip count, the largest batch is the 64 sequences again
    s = solve("max_batch_size", {**LONG, "n_chips": f"{chips!r} chip"}, LLAMA)
    assert s.value("max_batch_size", "sequence") == pytest.approx(64, rel=1e-9)


def test_chips_backwards_from_the_largest_batch_with_data_parallel_attention():
    # dp_attention: every chip a group of one, holding all 8 KV heads (no KV copies) and
    # the whole attention weights, 2 x 8,192 x 64 x 128 + 2 x 8,192 x 8 x 128 =
    # 150,994,944 param a layer: N - 1 copies beyond the first, each 80 layers of it in
    # 2 byte. N x 80e9 = 141.1e9 + (N - 1) x a + 171.799e9 with a = 2 x 80 x 150,994,944
    # = 24,159,191,040 byte: N = (312.899e9 - a) / (80e9 - a) = 5.1708. Regression: the
    # conventions' one attention group stood beside the preset's one chip a group, so the
    # replica was one chip and the memory gave -116.5e9 param of attention copies.
    layer = 2 * 8192 * 64 * 128 + 2 * 8192 * 8 * 128
    assert layer == 150_994_944
    a = 2 * 80 * layer
    chips = (WEIGHTS + KV_OF_64 - a) / (80e9 - a)
    assert chips == pytest.approx(5.1708, abs=1e-4)
    s = solve(["n_chips", "kv_cache_copies", "replicated_attention_params",
               "attention_data_parallelism"], LONG_PINS, [*LLAMA, "dp_attention"])
    assert s.value("n_chips", "chip") == pytest.approx(chips, rel=1e-9)
    assert s.value("kv_cache_copies") == 1
    assert s.value("replicated_attention_params", "param") == pytest.approx(
        (chips - 1) * 80 * layer, rel=1e-9)
    assert s.value("attention_data_parallelism") == pytest.approx(chips, rel=1e-9)
    s = solve("max_batch_size", {**LONG, "n_chips": f"{chips!r} chip"}, [*LLAMA, "dp_attention"])
    assert s.value("max_batch_size", "sequence") == pytest.approx(64, rel=1e-9)


def test_chips_for_a_batch_no_replica_holds_is_refused_as_proved():
    # 10,000 sequences of 8,192 tokens: with the heads split (at most 8 chips) it needs
    # (141.1e9 + 10,000 x 2.684e9) / 80e9 = 337.3 chips, more than 8; with the heads copied
    # (8 chips or more, C / 8 copies) the KV alone is 10,000 x 2.684e9 x C / 8 = 3.36e12
    # byte x C, more than the 80e9 byte x C the chips hold. No chip count fits, and each
    # regime's block is torn at one quantity and scanned over its range, so the refusal is
    # a proof (NoSolution), not a search that gave up (it was, after about three minutes)
    split = (WEIGHTS + 10_000 * 8192 * KV_PER_TOKEN) / 80e9
    assert split == pytest.approx(337.3, abs=0.1) and split > 8
    assert 10_000 * 8192 * KV_PER_TOKEN / 8 > 80e9
    with pytest.raises(NoSolution, match="no physical solution with chips_per_stage in its "
                                         "plausible range"):
        solve("n_chips", {**LONG, "max_batch_size": "10000 sequence"}, LLAMA)


def test_a_sweep_of_the_largest_batch_gives_the_chips_solve_gives():
    # a sweep gets solve's answer at every point: (141.1e9 + B x 8,192 x 327,680) / 80e9
    # chips at B = 32, 64, 96 sequences: 2.8375, 3.9112, 4.9850
    from chalk import sweep

    found = sweep("n_chips", "max_batch_size", "32 sequence", "96 sequence", 3,
                  given=LONG, presets=LLAMA)
    for batch, chips in zip((32, 64, 96), found.ys["n_chips"].to("chip").magnitude,
                            strict=True):
        assert chips == pytest.approx((WEIGHTS + batch * 8192 * KV_PER_TOKEN) / 80e9,
                                      rel=1e-9)
