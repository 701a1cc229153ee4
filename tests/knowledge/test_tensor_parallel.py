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
