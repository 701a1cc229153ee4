"""Communication in a training step, one question per parallelism kind, each worked by hand.

The running example is a 70B dense model (80 layers, d_model 8192) trained in bf16
on H100s: 989e12 FLOP/s dense bf16, NVLink 450 GB/s per direction (scale-up),
one 400 Gb/s NIC = 50 GB/s per direction per GPU (scale-out). Gradients, gathered
weights and activations all travel in bf16 (2 bytes).
"""

import pytest

from chalk import solve

C = 989e12  # FLOP/s
W_UP = 450e9  # byte/s, one direction
W_OUT = 50e9  # byte/s, one direction
P = 70e9  # param, dense: total = active
LAYERS, D_MODEL = 80, 8192

DENSE_70B_ON_H100 = {
    "chip_flops": "989e12 FLOP/s", "scale_up_bandwidth": "450 GB/s",
    "scale_out_bandwidth": "50 GB/s", "total_params": "70e9 param",
    "active_params": "70e9 param", "train_flops_per_param": "6 FLOP/param/token",
    "train_gradient_bytes_per_param": "2 byte/param", "bytes_per_param": "2 byte/param",
    "activation_bytes": "2 byte", "n_layers": LAYERS, "d_model": D_MODEL,
    "train_hop_latency": "0 s",
}


def _compute(tokens_per_chip, active=P):
    # 6 FLOP per active parameter per token of the chip's share, at peak
    return 6 * active * tokens_per_chip / C


# --- data parallelism --------------------------------------------------------------


def test_data_parallel_step_on_1024_chips_is_communication_bound():
    # A 4,194,304-token batch (2^22) on a 1,024-chip cluster that is all data parallel:
    # 4,096 tokens per chip. 10 us per ring hop.
    s = solve(["train_dp_comm_ratio", "train_dp_critical_tokens_per_chip"],
              given={**DENSE_70B_ON_H100, "training_chips": "1024 chip",
                     "train_batch_tokens": "4194304 token",
                     "train_data_parallelism": "1024 chip", "train_hop_latency": "10 us"})
    assert s.value("train_tokens_per_chip", "token") == pytest.approx(4096)
    # ring all-reduce: 2(N-1) hops of (10 us + 1/N of 140 GB at 50 GB/s)
    #   = 2046 x (10e-6 + 140e9 / (1024 x 50e9)) = 2046 x 2.744375e-3 s = 5.61499 s
    comm = 2 * 1023 * (10e-6 + P * 2 / (1024 * W_OUT))
    assert comm == pytest.approx(5.61499, rel=1e-5)
    assert s.value("t_train_dp_comm", "s") == pytest.approx(comm, rel=1e-12)
    # compute: 6 x 70e9 x 4096 / 989e12 = 1.73945 s
    assert s.value("t_train_compute", "s") == pytest.approx(1.73945, rel=1e-5)
    # 5.61499 / 1.73945 = 3.228: the all-reduce takes three times the step's matmuls
    assert s.value("train_dp_comm_ratio") == pytest.approx(comm / _compute(4096), rel=1e-12)
    assert s.value("train_dp_comm_ratio") == pytest.approx(3.228, abs=5e-4)
    # the batch per chip whose compute lasts as long: 5.61499 s x 989e12 / (6 x 70e9)
    assert s.value("train_dp_critical_tokens_per_chip", "token") == pytest.approx(
        comm * C / (6 * P), rel=1e-12)
    assert s.value("train_dp_critical_tokens_per_chip", "token") == pytest.approx(
        13_222, abs=1)


def test_global_batch_at_which_data_parallelism_stops_being_communication_bound():
    # Backwards: pin the ratio to 1 and ask for the batch on the 1,024-chip cluster.
    # Without latency the all-reduce is 2 x 1023/1024 x 140e9 / 50e9 = 5.594531 s, so
    # tokens per chip = 5.594531 x 989e12 / 420e9 = 13,174 = (2/3)(1023/1024) C/W_out
    # (gradients of 2 bytes against 6 FLOP per parameter per token), and the global
    # batch is 1,024 times that: 13.49M tokens.
    s = solve("train_batch_tokens",
              given={**DENSE_70B_ON_H100, "training_chips": "1024 chip",
                     "train_data_parallelism": "1024 chip", "train_dp_comm_ratio": 1})
    per_chip = 2 * 1023 / 1024 * 2 * P / W_OUT * C / (6 * P)
    assert per_chip == pytest.approx(2 / 3 * 1023 / 1024 * C / W_OUT)
    assert s.value("train_tokens_per_chip", "token") == pytest.approx(per_chip, rel=1e-12)
    assert s.value("train_batch_tokens", "token") == pytest.approx(1024 * per_chip,
                                                                  rel=1e-12)
    assert s.value("train_batch_tokens", "token") == pytest.approx(13.49e6, rel=1e-3)


# --- FSDP (ZeRO-3) -----------------------------------------------------------------


def test_fsdp_moves_one_and_a_half_times_the_bytes_of_data_parallelism():
    # 256 chips, 4,096 tokens each, no latency. FSDP: all-gather the bf16 weights
    # forward and backward, reduce-scatter the bf16 gradients: 3 x 255/256 x 140 GB
    #   = 255 x 420e9 / (256 x 50e9) = 255 x 0.0328125 s = 8.3671875 s.
    # A plain data-parallel all-reduce of the gradients: 2 x 255/256 x 140 GB / 50 GB/s
    #   = 5.578125 s. ZeRO's 3 Psi against 2 Psi.
    s = solve(["train_fsdp_comm_ratio", "t_train_dp_comm"],
              given={**DENSE_70B_ON_H100, "train_tokens_per_chip": "4096 token",
                     "train_fsdp_parallelism": "256 chip",
                     "train_data_parallelism": "256 chip"})
    assert s.value("t_train_fsdp_comm", "s") == pytest.approx(8.3671875, rel=1e-12)
    assert s.value("t_train_dp_comm", "s") == pytest.approx(5.578125, rel=1e-12)
    assert s.value("t_train_fsdp_comm", "s") / s.value("t_train_dp_comm", "s") == (
        pytest.approx(1.5))
    # 8.3671875 / 1.73945 = 4.810
    assert s.value("train_fsdp_comm_ratio") == pytest.approx(8.3671875 / _compute(4096),
                                                             rel=1e-12)
    assert s.value("train_fsdp_comm_ratio") == pytest.approx(4.810, abs=5e-4)


def test_fsdp_crossover_is_the_scaling_books_c_over_w():
    # Weights and gradients both 2 bytes: 3 x 2 bytes moved per parameter against 6 FLOP
    # per parameter per token, so the crossover is (N-1)/N x C / W_out, the scaling book's
    # B/X > C/W with W the one-direction bandwidth of a one-way ring:
    # 255/256 x 989e12 / 50e9 = 255/256 x 19,780 = 19,702.7 tokens per chip.
    s = solve("train_fsdp_critical_tokens_per_chip",
              given={**DENSE_70B_ON_H100, "train_fsdp_parallelism": "256 chip"})
    expected = 255 / 256 * C / W_OUT
    assert s.value("train_fsdp_critical_tokens_per_chip", "token") == pytest.approx(
        expected, rel=1e-12)
    assert expected == pytest.approx(19_702.7, abs=0.1)
    # Backwards: pinning the ratio to 1 gives the same batch per chip.
    back = solve("train_tokens_per_chip",
                 given={**DENSE_70B_ON_H100, "train_fsdp_parallelism": "256 chip",
                        "train_fsdp_comm_ratio": 1})
    assert back.value("train_tokens_per_chip", "token") == pytest.approx(expected,
                                                                        rel=1e-12)


def test_fsdp_group_size_at_which_communication_equals_compute():
    # Backwards through the (N-1)/N of the rings: at 16,384 tokens per chip the matmuls
    # take 6 x 70e9 x 16384 / 989e12 = 6.9578 s, and FSDP over N chips moves
    # (N-1)/N x 70e9 x 6 bytes / 50e9 = (N-1)/N x 8.4 s. Equal when
    # N = 1 / (1 - 6.9578 / 8.4) = 5.8245 chips: over NICs, FSDP groups larger than
    # about six chips leave this batch communication-bound.
    s = solve("train_fsdp_parallelism",
              given={**DENSE_70B_ON_H100, "train_tokens_per_chip": "16384 token",
                     "train_fsdp_comm_ratio": 1})
    expected = 1 / (1 - _compute(16384) / (P * 6 / W_OUT))
    assert s.value("train_fsdp_parallelism", "chip") == pytest.approx(expected, rel=1e-9)
    assert expected == pytest.approx(5.8245, abs=1e-4)


def test_fsdp_latency_counts_three_collectives_per_layer():
    # 8 chips, 5 us per hop: 3 collectives x 80 layers x 7 hops x 5 us = 8.4 ms of latency
    # on top of 7/8 x 70e9 x 6 bytes / 50e9 = 7.35 s.
    s = solve("t_train_fsdp_comm",
              given={**DENSE_70B_ON_H100, "train_fsdp_parallelism": "8 chip",
                     "train_hop_latency": "5 us"})
    assert s.value("t_train_fsdp_comm", "s") == pytest.approx(3 * 80 * 7 * 5e-6
                                                              + 7 / 8 * P * 6 / W_OUT)
    assert s.value("t_train_fsdp_comm", "s") == pytest.approx(7.3584, rel=1e-12)


# --- tensor parallelism --------------------------------------------------------------


def test_tensor_parallel_all_reduces_on_nvlink():
    # TP 8 inside a node, 4,096 tokens per chip, so the group's all-reduces carry
    # 8 x 4096 tokens x 8192 x 2 bytes = 536,870,912 bytes each. A ring passes 2 x 7/8 of
    # that: 2 x 7 x 4096 x 8192 x 2 bytes = 939,524,096 bytes at 450 GB/s = 2.08783 ms.
    # Four per layer (two forward, two backward), 80 layers: 320 x 2.08783 ms = 0.66811 s.
    s = solve("train_tp_comm_ratio",
              given={**DENSE_70B_ON_H100, "train_tensor_parallelism": "8 chip",
                     "train_tokens_per_chip": "4096 token"})
    per_allreduce = 2 * 7 / 8 * (8 * 4096 * D_MODEL * 2) / W_UP
    assert per_allreduce == pytest.approx(2.08783e-3, rel=1e-5)
    assert s.value("t_train_tp_comm", "s") == pytest.approx(4 * 80 * per_allreduce,
                                                            rel=1e-12)
    # 0.66811 / 1.73945 = 0.3841: TP 8 adds 38% to a step whose all-reduces block
    assert s.value("train_tp_comm_ratio") == pytest.approx(
        4 * 80 * per_allreduce / _compute(4096), rel=1e-12)
    assert s.value("train_tp_comm_ratio") == pytest.approx(0.3841, abs=5e-5)


def test_tensor_parallel_ratio_does_not_depend_on_the_batch():
    # Both the all-reduces and the matmuls grow with the tokens: the ratio is
    # 8 L (Y-1) d b C / (6 P W_up) whatever the batch.
    ratios = [solve("train_tp_comm_ratio",
                    given={**DENSE_70B_ON_H100, "train_tensor_parallelism": "8 chip",
                           "train_tokens_per_chip": f"{t} token"}).value("train_tp_comm_ratio")
              for t in (512, 16384)]
    expected = 8 * 80 * 7 * D_MODEL * 2 * C / (6 * P * W_UP)
    assert ratios == [pytest.approx(expected, rel=1e-12)] * 2


def test_tensor_parallel_degree_at_which_communication_equals_compute():
    # Backwards: ratio 1 gives Y - 1 = 6 P W_up / (8 L d b C)
    #   = 6 x 70e9 x 450e9 / (8 x 80 x 8192 x 2 x 989e12) = 1.89e23 / 1.03704e22 = 18.225,
    # so TP 8 is comfortable and about 19 chips is where the all-reduces match the matmuls
    # (the scaling book's F > Y C / W rule of the same shape).
    s = solve("train_tensor_parallelism",
              given={**DENSE_70B_ON_H100, "train_tokens_per_chip": "4096 token",
                     "train_tp_comm_ratio": 1})
    expected = 1 + 6 * P * W_UP / (8 * 80 * D_MODEL * 2 * C)
    assert s.value("train_tensor_parallelism", "chip") == pytest.approx(expected, rel=1e-12)
    assert s.value("train_tensor_parallelism", "chip") == pytest.approx(19.225, abs=1e-3)


# --- expert parallelism ---------------------------------------------------------------

# A DeepSeek-V3-sized MoE: 671e9 total, 37e9 active, 61 layers (all taken as MoE),
# d_model 7168, 8 routed experts per token; experts spread over the 8 GPUs of a node.
MOE = {**DENSE_70B_ON_H100, "total_params": "671e9 param", "active_params": "37e9 param",
       "n_layers": 61, "d_model": 7168, "n_active_experts": 8,
       "train_expert_parallelism": "8 chip", "train_tokens_per_chip": "4096 token"}


def test_expert_parallel_all_to_alls_inside_a_node():
    # Each chip sends 4096 tokens x 8 experts x 7168 x 2 bytes = 469,762,048 bytes per
    # all-to-all, 7/8 of it off the chip: 7 x 469,762,048 / (8 x 450e9) = 0.913426 ms.
    # Dispatch and combine, forward and backward, 61 layers: 244 x 0.913426 ms = 0.222876 s.
    # Compute: 6 x 37e9 x 4096 / 989e12 = 0.919426 s.
    s = solve("train_ep_comm_ratio", given=MOE)
    per_alltoall = 7 * (4096 * 8 * 7168 * 2) / (8 * W_UP)
    assert per_alltoall == pytest.approx(0.913426e-3, rel=1e-5)
    assert s.value("t_train_ep_comm", "s") == pytest.approx(4 * 61 * per_alltoall,
                                                            rel=1e-12)
    assert s.value("t_train_compute", "s") == pytest.approx(_compute(4096, 37e9), rel=1e-12)
    # 0.222876 / 0.919426 = 0.2424: compute-bound inside a node
    assert s.value("train_ep_comm_ratio") == pytest.approx(0.2424, abs=5e-5)


def test_link_bandwidth_below_which_expert_parallelism_is_communication_bound():
    # Backwards: at ratio 1 the link must carry the all-to-alls in 0.919426 s:
    # W = 244 x 7 x 469,762,048 bytes / (8 x 0.919426 s) = 109.09 GB/s. An expert group
    # spread over nodes on one 50 GB/s NIC per GPU would be communication-bound.
    s = solve("scale_up_bandwidth", given={
        **{k: v for k, v in MOE.items() if k != "scale_up_bandwidth"},
        "train_ep_comm_ratio": 1})
    expected = 4 * 61 * 7 * (4096 * 8 * 7168 * 2) / (8 * _compute(4096, 37e9))
    assert s.value("scale_up_bandwidth", "byte/s") == pytest.approx(expected, rel=1e-12)
    assert s.value("scale_up_bandwidth", "GB/s") == pytest.approx(109.09, abs=0.01)


# --- one chip, and the serving n_chips -------------------------------------------------


def test_one_chip_in_a_group_communicates_nothing():
    # Degree 1: the (N-1) in front of every collective, latency included, is zero.
    s = solve(["t_train_dp_comm", "t_train_fsdp_comm", "t_train_tp_comm", "t_train_ep_comm"],
              given={**MOE, "train_hop_latency": "10 us", "train_data_parallelism": "1 chip",
                     "train_fsdp_parallelism": "1 chip", "train_tensor_parallelism": "1 chip",
                     "train_expert_parallelism": "1 chip"})
    for name in ("t_train_dp_comm", "t_train_fsdp_comm", "t_train_tp_comm", "t_train_ep_comm"):
        assert s.value(name, "s") == 0


def test_training_questions_never_use_the_serving_n_chips():
    # A serving replica of 72 chips pinned beside a 1,024-chip training cluster: the
    # training answer is the same as without it, and n_chips is reported unused.
    given = {**DENSE_70B_ON_H100, "training_chips": "1024 chip",
             "train_batch_tokens": "4194304 token", "train_data_parallelism": "1024 chip",
             "train_tensor_parallelism": "8 chip", "train_fsdp_parallelism": "64 chip"}
    targets = ["train_dp_comm_ratio", "train_tp_comm_ratio", "train_fsdp_comm_ratio"]
    with_serving = solve(targets, given={**given, "n_chips": "72 chip"})
    alone = solve(targets, given=given)
    assert "n_chips" in with_serving.derivation.unused_pins
    for step in with_serving.derivation.steps:
        assert "n_chips" not in (*step.inputs, *step.variables)
    assert "n_chips" not in alone.derivation.values
    for name in targets:
        assert with_serving.value(name) == alone.value(name)
    # and the batch per chip is the global batch over the training cluster: 2^22 / 2^10
    assert alone.value("train_tokens_per_chip", "token") == 4096


def test_readme_example_llama_3_1_70b_on_2048_h100s():
    # README: h100 + llama_3_1_70b + bf16 presets, a 16M-token batch on 2,048 chips, all
    # data parallel (or all FSDP), bf16 gradients, no latency. Config: 70.55e9 params, of
    # which a token multiplies 69.50e9 (the 1.05e9 input-embedding table is looked up).
    s = solve(["train_dp_comm_ratio", "train_fsdp_critical_tokens_per_chip"],
              presets=["h100", "llama_3_1_70b", "bf16"],
              given={"training_chips": "2048 chip", "train_batch_tokens": "16e6 token",
                     "train_data_parallelism": "2048 chip",
                     "train_fsdp_parallelism": "2048 chip",
                     "train_gradient_bytes_per_param": "2 byte/param",
                     "train_hop_latency": "0 s"})
    d, vocab = 8192, 128256
    params = 80 * (2 * d * 64 * 128 + 2 * d * 8 * 128 + 3 * d * 28672) + 2 * vocab * d
    active = params - vocab * d
    assert s.value("total_params", "param") == pytest.approx(params, rel=1e-9)
    # 16e6 / 2048 = 7,812.5 tokens per chip; all-reduce 2 x 2047/2048 x 141.1 GB / 50 GB/s
    # = 5.641 s against 6 x 69.50e9 x 7812.5 / 989e12 = 3.294 s of matmuls
    comm = 2 * 2047 / 2048 * params * 2 / W_OUT
    compute = 6 * active * 7812.5 / C
    assert s.value("train_dp_comm_ratio") == pytest.approx(comm / compute, rel=1e-9)
    assert s.value("train_dp_comm_ratio") == pytest.approx(1.7126, abs=5e-4)
    # FSDP with 2-byte weights and gradients: 2047/2048 x 989e12 / 50e9 = 19,770 tokens
    # (every parameter is gathered, only the active ones multiply: x total / active)
    assert s.value("train_fsdp_critical_tokens_per_chip", "token") == pytest.approx(
        2047 / 2048 * C / W_OUT * params / active, rel=1e-9)
