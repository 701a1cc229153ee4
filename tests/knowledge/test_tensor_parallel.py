"""Tensor-parallel all-reduces in a decode step, each number derived by hand here."""

import pytest

from chalk import solve

# Llama-2-70B (80 layers, d_model 8192) on 8 A100s: 312 TFLOP/s, 2,039 GB/s HBM,
# NVLink 300 GB/s per direction, bf16 activations; an 8 us latency per all-reduce.
LLAMA_ON_A100 = {
    "n_chips": "8 chip", "chip_flops": "312e12 FLOP/s", "hbm_bandwidth": "2039e9 byte/s",
    "total_params": "69e9 param", "active_params": "69e9 param",
    "bytes_per_param": "2 byte/param", "kv_bytes_per_token": "327680 byte/token",
    "context_length": "2048 token", "n_layers": 80, "d_model": 8192,
    "activation_bytes": "2 byte", "scale_up_bandwidth": "300 GB/s",
    "allreduce_latency": "8 us",
}


def _ring_bytes(batch, chips=8):
    # reduce-scatter + all-gather: each chip sends 2 (p-1)/p of the batch's activations
    return 2 * (chips - 1) / chips * batch * 8192 * 2


def test_tp_comm_of_one_decode_step():
    s = solve("t_tp_comm", given={**LLAMA_ON_A100, "batch_size": "16 sequence"})
    assert s.value("tp_allreduce_bytes", "byte") == pytest.approx(458_752)
    per_allreduce = 8e-6 + _ring_bytes(16) / 300e9
    assert s.value("t_allreduce", "s") == pytest.approx(per_allreduce, rel=1e-12)
    assert s.value("t_tp_comm", "ms") == pytest.approx(2 * 80 * per_allreduce * 1e3)
    assert s.value("t_tp_comm", "ms") == pytest.approx(1.5247, rel=1e-4)


def test_an_all_reduce_at_an_achieved_fraction_of_the_links_peak():
    # the bytes of one all-reduce at 16 sequences take 1/0.8 as long at 0.8 of 300 GB/s;
    # the 8 us latency is not bandwidth and stays
    s = solve("t_allreduce", given={**LLAMA_ON_A100, "batch_size": "16 sequence",
                                    "scale_up_bandwidth_efficiency": 0.8})
    assert s.value("t_allreduce", "s") == pytest.approx(
        8e-6 + _ring_bytes(16) / (0.8 * 300e9), rel=1e-12)


def test_step_time_with_comm_adds_the_allreduces_to_the_roofline():
    s = solve("step_time_with_comm", given={**LLAMA_ON_A100, "batch_size": "32 sequence"})
    weights = 69e9 * 2
    kv = 32 * 2048 * 327_680
    roofline = max(32 * 2 * 69e9 / (8 * 312e12), (weights + kv) / (8 * 2039e9))
    comm = 2 * 80 * (8e-6 + _ring_bytes(32) / 300e9)
    assert s.value("step_time", "s") == pytest.approx(roofline)
    assert s.value("step_time_with_comm", "s") == pytest.approx(roofline + comm)


def test_one_chip_has_nothing_to_all_reduce():
    pins = {**LLAMA_ON_A100, "n_chips": "1 chip", "allreduce_latency": "0 s",
            "batch_size": "4 sequence"}
    s = solve("step_time_with_comm", given=pins)
    assert s.value("tp_allreduce_bytes", "byte") == 0
    assert s.value("step_time_with_comm", "s") == pytest.approx(s.value("step_time", "s"))


def test_latency_implied_by_a_measured_step():
    # A measured 10 ms step at batch 16 leaves (10 ms - roofline) for 160 all-reduces;
    # each spends bytes / 300 GB/s on the wire, the rest is latency.
    pins = {k: v for k, v in LLAMA_ON_A100.items() if k != "allreduce_latency"}
    s = solve("allreduce_latency", given={**pins, "batch_size": "16 sequence",
                                          "step_time_with_comm": "10 ms"})
    roofline = (69e9 * 2 + 16 * 2048 * 327_680) / (8 * 2039e9)
    expected = (10e-3 - roofline) / 160 - _ring_bytes(16) / 300e9
    assert s.value("allreduce_latency", "us") == pytest.approx(expected * 1e6, rel=1e-9)


def test_scale_up_bandwidth_implied_by_the_comm_time():
    pins = {k: v for k, v in LLAMA_ON_A100.items() if k != "scale_up_bandwidth"}
    s = solve("scale_up_bandwidth", given={**pins, "batch_size": "64 sequence",
                                           "t_tp_comm": "2 ms"})
    expected = _ring_bytes(64) / (2e-3 / 160 - 8e-6)
    assert s.value("scale_up_bandwidth", "byte/s") == pytest.approx(expected, rel=1e-9)


def test_readme_example_llama_3_1_70b_on_eight_h100s():
    # README: h100 + llama_3_1_70b + bf16 presets, TP 8, batch 16, 8k context, 10 us.
    # Datasheet and config numbers: 989 TFLOP/s, 3.35 TB/s, NVLink 450 GB/s per direction;
    # 70.55e9 params, 80 layers, 8 KV heads x 128, d_model 8192.
    s = solve(["step_time_with_comm", "t_tp_comm"],
              presets=["h100", "llama_3_1_70b", "bf16"],
              given={"n_chips": "8 chip", "batch_size": "16 sequence",
                     "context_length": "8k token", "allreduce_latency": "10 us"})
    params = s.value("total_params", "param")
    assert params == pytest.approx(70.55e9, rel=1e-3)
    kv = 16 * 8000 * 2 * 80 * 8 * 128 * 2
    # a step reads every weight but the input-embedding table (128,256 x 8,192 rows)
    memory = ((params - 128_256 * 8_192) * 2 + kv) / (8 * 3.35e12)
    compute = 16 * 2 * params / (8 * 989e12)
    comm = 160 * (10e-6 + 2 * 7 / 8 * 16 * 8192 * 2 / 450e9)
    assert s.value("t_tp_comm", "ms") == pytest.approx(comm * 1e3, rel=1e-9)
    assert s.value("step_time_with_comm", "ms") == pytest.approx(
        (max(memory, compute) + comm) * 1e3, rel=1e-9)
    # (138.999e9 + 41.943e9) byte / 26.8e12 byte/s = 6.752 ms, plus 1.763 ms of all-reduces
    assert s.value("step_time_with_comm", "ms") == pytest.approx(8.51, abs=0.005)
    assert s.value("t_tp_comm", "ms") == pytest.approx(1.76, abs=0.005)


# Layouts (issue 23 item 1): Megatron tensor parallel (the conventions) beside attention
# data-parallel with the experts expert-parallel (preset dp_attention). A small MoE: 10
# layers of 1e9 attention parameters, 2e10 dense and 8e10 expert parameters (8 of 64
# experts a token), 1 byte each, on 8 chips of 1 TB/s and 1 PFLOP/s; batch 256 with 1e7
# bytes of KV a sequence; experts over the 8 chips, 450 GB/s scale-up, 10 us latency.
SMALL_MOE = {"dense_params": "2e10 param", "expert_params": "8e10 param", "n_experts": "64",
             "n_active_experts": "8", "n_layers": "10", "attention_layer_params": "1e9 param",
             "d_model": "4096", "activation_bytes": "2 byte",
             "bytes_per_param": "1 byte/param", "n_chips": "8 chip",
             "hbm_bandwidth": "1e12 byte/s", "chip_flops": "1e15 FLOP/s",
             "kv_bytes_per_sequence": "1e7 byte/sequence", "batch_size": "256 sequence",
             "expert_parallelism": "8 chip", "scale_up_bandwidth": "4.5e11 byte/s",
             "allreduce_latency": "10 us"}
# 256 tokens reach all 64 experts but (56/64)^256 = 1.4e-15 of them: every weight read.
# KV: 256 x 1e7 / 8e12 = 0.32 ms. Compute: 256 x 2 x (2e10 + 8e10 x 8/64) / 8e15 =
# 1.92 ms, under the memory time in both layouts.
KV_TIME = 256 * 1e7 / 8e12
# The all-to-all, the same in both: 2 x 10 layers x 8 experts x 4096 x 2 bytes a token,
# 256 tokens over 8 x 450 GB/s, 7/8 of it to other chips
EP_COMM = 256 * (2 * 10 * 8 * 4096 * 2) / (8 * 4.5e11) * 7 / 8


def test_megatron_layout_is_the_named_default():
    # weights 1e11 / 8e12 = 12.5 ms; each chip sends 256 x 7/8 x 2 x 4096 x 2 bytes per
    # all-reduce (3,670,016), two all-reduces a layer
    s = solve(["step_time_with_comm", "t_tp_comm", "memory_demand"], SMALL_MOE)
    allreduce = 10e-6 + 256 * 7 / 8 * 2 * 4096 * 2 / 4.5e11
    assert s.value("t_tp_comm", "s") == pytest.approx(2 * 10 * allreduce, rel=1e-9)
    assert s.value("step_time_with_comm", "s") == pytest.approx(
        1e11 / 8e12 + KV_TIME + EP_COMM + 2 * 10 * allreduce, rel=1e-9)
    assert s.value("memory_demand", "byte") == pytest.approx(1e11 + 256 * 1e7, rel=1e-9)
    layout = [line.split() for line in str(s).splitlines()
              if line.strip().startswith("attention_data_parallelism ")]
    assert layout and layout[0][1:4] == ["1", "conventions", "careful"]


def test_attention_data_parallel_with_expert_parallel():
    # Each of the 8 chips holds all 10 x 1e9 attention weights: 7e10 more held and read,
    # 1.7e11 bytes over 8e12 byte/s = 21.25 ms; no all-reduce, the all-to-all stays
    s = solve(["step_time_with_comm", "t_tp_comm", "memory_demand",
               "attention_data_parallelism"], SMALL_MOE, presets=["dp_attention"])
    assert s.value("attention_data_parallelism") == pytest.approx(8)
    assert s.value("t_tp_comm", "s") == 0
    assert s.value("step_time_with_comm", "s") == pytest.approx(
        1.7e11 / 8e12 + KV_TIME + EP_COMM, rel=1e-9)
    assert s.value("memory_demand", "byte") == pytest.approx(1.7e11 + 256 * 1e7, rel=1e-9)
    assert "preset dp_attention" in str(s)


def test_deepseek_style_attention_groups_of_four_chips():
    # TP4 attention groups on 8 chips: 2 groups, 1e10 attention weights more (13.75 ms of
    # weights); one all-reduce a layer over 4 chips of the group's 128 tokens:
    # 128 x 3/4 x 2 x 4096 x 2 = 1,572,864 bytes
    s = solve(["step_time_with_comm", "t_tp_comm"],
              {**SMALL_MOE, "attention_tensor_parallelism": "4 chip",
               "allreduces_per_layer": "1"})
    allreduce = 10e-6 + 128 * 3 / 4 * 2 * 4096 * 2 / 4.5e11
    assert s.value("t_tp_comm", "s") == pytest.approx(10 * allreduce, rel=1e-9)
    assert s.value("step_time_with_comm", "s") == pytest.approx(
        1.1e11 / 8e12 + KV_TIME + EP_COMM + 10 * allreduce, rel=1e-9)


def test_batch_backwards_from_the_memory_of_a_dp_attention_deployment():
    # 1.7256e11 bytes = 1e11 weights + 7 x 10 x 1e9 attention copies + B x 1e7 gives
    # B = 2.56e9 / 1e7 = 256 sequences (with one copy, Megatron's, it would be 7,256)
    # (the embedding table stated absent: the conventions' zero would otherwise give way
    # to the measured memory, with the batch, as the question's unknowns)
    pins = {**{k: v for k, v in SMALL_MOE.items() if k != "batch_size"},
            "input_embedding_params": "0 param"}
    s = solve("batch_size", {**pins, "memory_demand": "1.7256e11 byte"},
              presets=["dp_attention"])
    assert s.value("batch_size", "sequence") == pytest.approx(256, rel=1e-9)
    megatron = solve("batch_size", {**pins, "memory_demand": "1.7256e11 byte"})
    assert megatron.value("batch_size", "sequence") == pytest.approx(7256, rel=1e-9)


def test_explain_names_the_expert_parallelism_in_the_dp_attention_layout():
    from chalk import explain

    given = {k: v for k, v in SMALL_MOE.items() if k != "batch_size"}
    text = explain("step_time_with_comm", given={**given, "batch_size": "64 sequence"},
                   presets=["dp_attention"]).text()
    needed = [line for line in text.splitlines() if line.startswith("pins not needed")]
    assert not needed or "expert_parallelism" not in needed[0]
    assert "t_ep_comm" in text and "attention_tensor_parallelism" in text


# Regression (issue 23): 16 attention groups on 8 chips answered a step time (31.65 ms,
# 15 attention copies read) and a memory demand, as if a group could hold half a chip,
# when nothing but the all-reduces asked for the chips of a group
@pytest.mark.parametrize("target", ["step_time", "memory_demand", "step_time_with_comm"])
def test_more_attention_groups_than_chips_is_no_layout(target):
    from chalk.symbolic.errors import NoSolution

    with pytest.raises(NoSolution) as caught:
        solve(target, {**SMALL_MOE, "attention_data_parallelism": "16"})
    # 8 chips / 16 groups = 0.5 chip a group, below the one chip a group needs
    assert caught.value.name == "attention_tensor_parallelism"
    assert "0.5 chip" in caught.value.message and "at least 1 chip" in caught.value.message


def test_as_many_attention_groups_as_chips_is_the_dp_attention_layout():
    # 8 groups on 8 chips: one chip a group, 7 extra copies of the 10 x 1e9 attention
    # weights, 1.7e11 bytes held, as the dp_attention preset's layout (above)
    s = solve(["memory_demand", "attention_tensor_parallelism"],
              {**SMALL_MOE, "attention_data_parallelism": "8"})
    assert s.value("attention_tensor_parallelism", "chip") == pytest.approx(1)
    assert s.value("memory_demand", "byte") == pytest.approx(1.7e11 + 256 * 1e7, rel=1e-9)
