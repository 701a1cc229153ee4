"""Memory joined to serving: the fill beside every serving answer, worked by hand."""

import json

import pytest
from chalk.symbolic.errors import InconsistentPins

from chalk import solve

# DeepSeek-V3 (671e9 params, 36.7e9 active, MLA: (512 + 64) elements x 61 layers) in bf16 on H800s
# (80 GB, 3.35 TB/s, 989 TFLOP/s bf16 dense), 4,000 tokens of context, one stage
WEIGHTS = 671e9 * 2  # byte
KV_PER_SEQUENCE = 4000 * (512 + 64) * 61 * 2  # byte per sequence = 281,088,000
PRESETS = ["deepseek_v3", "h800", "bf16"]
# the published counts, pinned so the hand arithmetic below can use them (the preset alone
# counts 671.03e9 and 36.62e9 from the architecture: tests/knowledge/test_architecture.py)
COUNTS = {"total_params": "671e9 param", "active_params": "36.7e9 param"}


def test_per_user_speed_on_32_h800s_gives_a_batch_that_does_not_fit():
    # 30 token/s for one user: a step of 1/30 s. Megatron's layout splits attention over
    # all 32 chips, and MLA's latent is one head each of them holds whole: every sequence's
    # KV cache is there 32 times, and each chip reads its own copy (knowledge/kv_sharding.py).
    step = 1 / 30
    bandwidth = 32 * 3.35e12
    # memory-bound: the step reads the weights but the input-embedding table (129,280 x
    # 7,168) and the routed experts (58 x 256 x 3 x 7,168 x 2,048) none of the B tokens
    # picks, (248/256)^B of them, and 32 copies of B sequences' KV. The batch and the unread
    # share depend on each other: iterate B = (step x bandwidth - read(B)) / (32 kv) from the
    # read of every weight.
    table, routed = 129_280 * 7168, 58 * 256 * 3 * 7168 * 2048

    def weights_read(b):
        return 2 * (671e9 - table - routed * (248 / 256) ** b)

    batch = (step * bandwidth - WEIGHTS) / (32 * KV_PER_SEQUENCE)  # 248.07
    for _ in range(20):
        batch = (step * bandwidth - weights_read(batch)) / (32 * KV_PER_SEQUENCE)
    assert batch == pytest.approx(248.33, abs=0.01)
    # its matmuls and MLA attention, B x (2 x 36.7e9 + 2 x 128 x (2 x 512 + 64) x 61 x
    # 4,000) FLOP over 32 x 989 TFLOP/s = 1.1 ms, hide under the reads: consistent
    attention = 2 * 128 * (2 * 512 + 64) * 61 * 4000
    assert batch * (2 * 36.7e9 + attention) / (32 * 989e12) < step
    fill = (WEIGHTS + batch * 32 * KV_PER_SEQUENCE) / 32 / 80e9  # 1.397
    # the expert-parallel all-to-all is stated hidden (exposed fraction 0), so the step is the
    # roofline alone; tests/knowledge/test_moe_as_it_runs.py puts it on the step
    s = solve("batch_size", {"tokens_per_second_per_user": "30 token/s", "n_chips": "32 chip",
                             "context_length": "4000 token", "alltoall_exposed_fraction": 0,
                             **COUNTS}, PRESETS)
    assert s.value("batch_size", "sequence") == pytest.approx(batch, rel=1e-9)
    assert s.value("memory_fill") == pytest.approx(fill, rel=1e-9)
    assert s.value("weight_fill") == pytest.approx(WEIGHTS / 32 / 80e9, rel=1e-9)  # 0.524
    assert [n for n, _ in s.derivation.reported] == ["memory_fill", "weight_fill"]
    (flag,) = s.derivation.flags
    assert flag.startswith(f"memory_fill = {fill:.4g} is above 1")
    lines = str(s).splitlines()
    # the failed condition is said once, as failed: no "(checked ...)" line beside the flag
    assert lines[1] == "weight_fill = 0.5242 (checked: weight_fill <= 1)"
    assert lines[2] == f"flag: {flag}"
    assert not any(line.startswith("memory_fill = ") for line in lines)
    reported = s.to_dict()["reported"]
    assert reported["memory_fill"]["value"] == pytest.approx(fill, rel=1e-6)
    assert reported["memory_fill"]["condition"] == "memory_fill <= 1"
    assert reported["memory_fill"]["holds"] is False
    assert reported["weight_fill"]["holds"] is True
    assert json.loads(s.to_json())["flags"] == [flag]


# One MLA attention layer of DeepSeek-V3 (d_model 7,168, q_lora_rank 1,536, 128 heads, nope
# 128 and rope 64 query/key widths, kv_lora_rank 512, value width 128):
#   query down 7,168 x 1,536                       =  11,010,048
#   query up 1,536 x 128 x (128 + 64)              =  37,748,736
#   joint KV down with the RoPE key 7,168 x 576    =   4,128,768
#   KV up to keys and values 512 x 128 x (128 + 128) = 16,777,216
#   output 128 x 128 x 7,168                       = 117,440,512
#                                                  = 187,105,280 param a layer
ATTENTION_LAYER = 11_010_048 + 37_748_736 + 4_128_768 + 16_777_216 + 117_440_512
assert ATTENTION_LAYER == 187_105_280


@pytest.mark.parametrize(("precision", "bytes_per_param"), [("bf16", 2), ("fp8", 1)])
def test_weight_fill_counts_each_attention_groups_own_copy(precision, bytes_per_param):
    # Regression: weight_fill counted weight_bytes alone, so under dp_attention (32 groups of
    # one chip, each holding the whole attention weights) it said 0.524 in bf16 while
    # memory_demand counted the 31 copies beyond the first. By hand: 31 x 61 x 187,105,280 =
    # 353,816,084,480 param of copies; in bf16 (671e9 + 353.816e9) x 2 byte / (32 x 80e9
    # byte) = 2,049.632e9 / 2,560e9 = 0.8006; in fp8 half the bytes, 0.4003
    copies = 31 * 61 * ATTENTION_LAYER
    assert copies == 353_816_084_480
    fill = (671e9 + copies) * bytes_per_param / (32 * 80e9)
    assert fill == pytest.approx(0.8006 / (2 / bytes_per_param), abs=1e-4)
    s = solve(["weight_fill", "replicated_attention_params"],
              {"n_chips": "32 chip", **COUNTS}, ["deepseek_v3", "h800", precision,
                                                 "dp_attention"])
    assert s.value("replicated_attention_params", "param") == pytest.approx(copies, rel=1e-12)
    assert s.value("weight_fill") == pytest.approx(fill, rel=1e-9)
    # Megatron's layout (the conventions) keeps one copy split over the chips: no copies,
    # 671e9 x bytes / (32 x 80e9), unchanged by the fix
    s = solve(["weight_fill", "replicated_attention_params"],
              {"n_chips": "32 chip", **COUNTS}, ["deepseek_v3", "h800", precision])
    assert s.value("replicated_attention_params", "param") == 0
    assert s.value("weight_fill") == pytest.approx(671e9 * bytes_per_param / (32 * 80e9),
                                                   rel=1e-9)


def test_a_serving_answer_that_fits_reports_its_fill_without_a_flag():
    # 64 sequences on 32 chips, each holding the whole latent (32 copies):
    # (1,342e9 + 64 x 32 kv) / 32 / 80e9 = 0.7491
    s = solve("step_time", {"batch_size": "64 sequence", "n_chips": "32 chip",
                            "context_length": "4000 token", **COUNTS}, PRESETS)
    fill = (WEIGHTS + 64 * 32 * KV_PER_SEQUENCE) / 32 / 80e9
    assert s.value("memory_fill") == pytest.approx(fill, rel=1e-9)
    assert s.derivation.flags == ()
    assert s.targets == ("step_time",)  # reported, not asked for
    assert s.results.keys() == {"step_time"}


def test_no_fill_is_reported_when_the_pins_do_not_fix_it():
    # without a chip capacity nothing says how full the chips are
    s = solve("step_time", {"batch_size": "64 sequence", "n_chips": "32 chip",
                            "context_length": "4000 token", "chip_flops": "989e12 FLOP/s",
                            "hbm_bandwidth": "3.35 TB/s"}, ["deepseek_v3", "bf16"])
    assert s.derivation.reported == ()
    assert "reported" not in s.to_dict()


def test_micro_batch_is_the_step_batch():
    pins = {"n_chips": "32 chip", "context_length": "4000 token", "batch_size": "100 sequence",
            **COUNTS}
    s = solve("micro_batch_size", pins, PRESETS)
    assert s.value("micro_batch_size", "sequence") == pytest.approx(100)
    with pytest.raises(InconsistentPins):
        solve("memory_fill", {**pins, "micro_batch_size": "200 sequence"}, PRESETS)


def test_pipelined_replica_spreads_weights_but_not_kv():
    # 4 stages of 8 chips: weights over 32 chips, 4 micro-batches of 100 in flight, so the
    # KV per chip is 100 kv x copies / 8 whatever the number of stages; attention is split
    # over a stage's 8 chips, each holding MLA's whole latent: 8 copies, 100 kv a chip
    pins = {"chips_per_stage": "8 chip", "pipeline_stages": 4, "batch_size": "100 sequence",
            "context_length": "4000 token", **COUNTS}
    s = solve(["memory_per_chip", "n_chips"], pins, PRESETS)
    assert s.value("n_chips", "chip") == 32
    assert s.value("memory_per_chip", "byte") == pytest.approx(
        WEIGHTS / 32 + 100 * KV_PER_SEQUENCE * 8 / 8, rel=1e-12)


def test_the_fill_is_reported_with_no_zero_pinned():
    # Regression: with no conventions (preset none) nothing is pinned at zero, and adding
    # the reported memory_fill to the plan failed on the zero bookkeeping. By hand:
    # (1e12 byte + 10 x 1e9 byte) / (8 x 80e9 byte) = 1.578. With no conventions the step's
    # weights read, its exposed all-to-all and its draft time are pinned too (none at zero),
    # and so are the achieved bandwidth and usable HBM (the conventions' 1: peak, all of it)
    # and the layout (one attention group: no attention copy beyond the first, which the
    # relations compute as (1 - 1) x 80 x 1e9 = 0; one copy of the KV cache).
    s = solve("step_time", {"hbm_bandwidth_efficiency": 1, "usable_hbm_fraction": 1,
                            "attention_data_parallelism": 1, "n_layers": 80,
                            "attention_layer_params": "1e9 param",
                            "total_params": "1e12 param", "bytes_per_param": "1 byte/param",
                            "batch_size": "10 sequence", "kv_bytes_per_sequence":
                            "1e9 byte/sequence", "n_chips": "8 chip", "hbm_capacity": "80 GB",
                            "hbm_bandwidth": "3 TB/s", "pipeline_stages": 1,
                            "t_compute": "1 ms", "params_read": "1e12 param",
                            "t_ep_comm": "0.1 ms", "t_draft": "0.2 ms",
                            "kv_cache_copies": 1}, ["none"])
    assert s.value("memory_fill") == pytest.approx((1e12 + 10 * 1e9) / (8 * 80e9), rel=1e-12)


# Issue 22: Llama 3.1 70B in bf16 on 8 H100s (80 GB, 3.35 TB/s), 8,000 tokens of context.
# KV per token: 80 layers x 8 KV heads x 128 x 2 (K and V) x 2 byte = 327,680 byte, so
# 2,621,440,000 byte per sequence; the weights are pinned at the published 70.55e9 params,
# 141.1e9 byte, so the arithmetic below does not hang on the architecture's own count.
LLAMA = ["h100", "bf16", "llama_3_1_70b"]
LLAMA_PINS = {"n_chips": "8 chip", "context_length": "8000 token",
              "total_params": "70.55e9 param"}
LLAMA_WEIGHTS = 70.55e9 * 2  # byte
# a decode step reads every weight but the input-embedding table (128,256 x 8,192 rows it
# only looks up): (70.55e9 - 1,050,673,152) x 2 = 138,998,653,696 byte
LLAMA_WEIGHTS_READ = (70.55e9 - 128_256 * 8_192) * 2  # byte
LLAMA_KV = 8000 * 80 * 8 * 128 * 2 * 2  # byte per sequence
HBM = 8 * 80e9  # byte


def _lines(s) -> list[str]:
    return s.summary().splitlines()


def test_a_failed_fill_reads_as_failed_and_a_fill_on_the_bound_is_not_called_above_it():
    # batch 1000: (141.1e9 + 1000 x 2.62144e9) / 640e9 = 4.316, past 1
    fill = (LLAMA_WEIGHTS + 1000 * LLAMA_KV) / HBM
    assert f"{fill:.4g}" == "4.316"
    s = solve("tokens_per_second", {**LLAMA_PINS, "batch_size": "1000 sequence"}, LLAMA)
    assert s.value("memory_fill") == pytest.approx(fill, rel=1e-9)
    lines = _lines(s)
    assert ("flag: memory_fill = 4.316 is above 1: the weights and KV cache this needs do "
            "not fit in the chips' HBM") in lines
    assert not any("(checked: memory_fill" in line for line in lines)
    # batch 191: (141.1e9 + 191 x 2.62144e9) / 640e9 = 1.0028, shown 1.003: above 1
    s = solve("tokens_per_second", {**LLAMA_PINS, "batch_size": "191 sequence"}, LLAMA)
    assert s.value("memory_fill") == pytest.approx((LLAMA_WEIGHTS + 191 * LLAMA_KV) / HBM)
    assert [f.quantity for f in s.derivation.flags] == ["memory_fill"]
    assert s.derivation.flags[0].startswith("memory_fill = 1.003 is above 1")
    # batch 190.32: (141.1e9 + 190.32 x 2.62144e9) / 640e9 = 1.0000195, shown 1: on the
    # bound, so it holds (was "memory_fill = 1 (checked ...)" and "flag: memory_fill = 1 is
    # above 1")
    on_bound = (LLAMA_WEIGHTS + 190.32 * LLAMA_KV) / HBM
    assert 1 < on_bound < 1.00005
    s = solve("tokens_per_second", {**LLAMA_PINS, "batch_size": "190.32 sequence"}, LLAMA)
    assert s.value("memory_fill") == pytest.approx(on_bound, rel=1e-9)
    assert s.derivation.flags == ()
    assert "memory_fill = 1 (checked: memory_fill <= 1)" in _lines(s)


def test_the_fill_is_reported_whatever_else_is_asked():
    # Regression: asking for chip_flops too (which the h100 preset states) dropped the
    # memory line and its flag. Memory-bound at batch 1000: a step reads the weights (all but
    # the embedding table) and every sequence's KV once, (138.999e9 + 1000 x 2.62144e9) byte
    # / (8 x 3.35e12 byte/s) = 0.10300 s, so 1000 / 0.10300 = 9,709 token/s
    step = (LLAMA_WEIGHTS_READ + 1000 * LLAMA_KV) / (8 * 3.35e12)
    assert 1000 / step == pytest.approx(9708.6, abs=0.1)
    fill = (LLAMA_WEIGHTS + 1000 * LLAMA_KV) / HBM  # 4.316
    pins = {**LLAMA_PINS, "batch_size": "1000 sequence"}
    alone = solve("tokens_per_second", pins, LLAMA)
    stated = solve(["tokens_per_second", "chip_flops"], pins, LLAMA)
    derived = solve(["tokens_per_second", "chip_flops"], pins, LLAMA, prefer="derived")
    for s in (alone, stated, derived):
        assert s.value("tokens_per_second", "token/s") == pytest.approx(1000 / step, rel=1e-9)
        assert s.value("memory_fill") == pytest.approx(fill, rel=1e-9)
        assert [n for n, _ in s.derivation.reported] == ["memory_fill", "weight_fill"]
        assert [f.quantity for f in s.derivation.flags] == ["memory_fill"]
        assert s.to_dict()["reported"]["memory_fill"]["holds"] is False
    assert stated.value("chip_flops", "TFLOP/s") == 989  # stated by h100
    assert _lines(alone)[1:] == _lines(stated)[2:]  # the same lines after the answers


def test_a_pipeline_stage_has_at_least_one_chip():
    # 16 stages on 8 chips would give each stage 8 / 16 = 0.5 chip: no deployment
    from chalk.symbolic.errors import ChalkError

    with pytest.raises(ChalkError, match=r"gives 0.5 chip \(not physical"):
        solve("chips_per_stage", {"n_chips": "8 chip", "pipeline_stages": 16})
    s = solve("chips_per_stage", {"n_chips": "8 chip", "pipeline_stages": 8})
    assert s.value("chips_per_stage", "chip") == pytest.approx(1, rel=1e-12)
