"""Counting conventions: the careful default and the lecture's round numbers.

The lecture counts one FLOP and one byte per parameter and takes FLOPs per byte
of HBM bandwidth as 300, so that its deductions fit on a blackboard. The
careful convention counts the multiply and the add (2 FLOP per parameter per
token) and leaves bytes per parameter and the chip to the user, so the answer
depends on the precision actually served. Derivations say which is in force.
"""

from __future__ import annotations

from chalk.symbolic.presets import Preset, PresetValue

LECTURE_DATE = "2026"  # the episode's publication year

# Facts both conventions share: the training FLOP count and Chinchilla's ratio; no
# sliding-window KV unless a model preset says otherwise; and the lecture's MoE layout
# (every expert read, experts over the chips of a stage, the all-to-all left out until the
# layout and the model's widths give it), each yielding to what determines it.
_SHARED = {
    "kv_window_bytes_per_sequence": PresetValue(
        "0 byte/sequence", "dense attention in every layer, as the lecture assumes (5:30-5:56)",
        LECTURE_DATE, "a hybrid model preset (local + global layers) replaces it"),
    "n_local_layers": PresetValue(
        "0", "no sliding-window layers: every layer keeps a KV cache over the whole context, "
        "as the lecture assumes (5:30-5:56)", LECTURE_DATE,
        "a model preset that states its local/global pattern (n_kv_layers, n_local_layers) "
        "replaces it"),
    "unread_expert_fraction": PresetValue(
        "0", "every expert is read each step, as the lecture assumes (5:16-5:30): the "
        "large-batch limit", LECTURE_DATE,
        "gives way where n_experts, n_active_experts and the step's tokens determine it"),
    "t_alltoall": PresetValue(
        "0 s", "no expert-parallel all-to-all: the lecture's roofline (2:34-3:19) leaves it "
        "out", LECTURE_DATE,
        "gives way where the expert parallelism, the model's widths and the scale-up "
        "bandwidth determine it"),
    "alltoall_exposed_fraction": PresetValue(
        "1", "not overlapped: the whole all-to-all is on the step's critical path (lecture "
        "35:42-36:50 asks only that it not dominate)", LECTURE_DATE,
        "pin less than 1 for a schedule that hides it (DeepSeek's two micro-batches)"),
    "expert_load_imbalance": PresetValue(
        "1", "routing spreads tokens evenly over the expert-parallel chips, as the lecture "
        "assumes (35:42-36:50)", LECTURE_DATE,
        "pin the busiest chip's load over the mean (above 1) for real routing"),
    "moe_tensor_parallelism": PresetValue(
        "1", "every chip of a stage holds whole experts, as in the lecture's layout "
        "(33:53-34:33)", LECTURE_DATE,
        "pin it where each expert is also split over chips (TensorRT-LLM's moe_tp_size)"),
    "attention_data_parallelism": PresetValue(
        "1", "Megatron-LM's layout: attention split over every chip of the replica "
        "(Shoeybi et al. 2019, arXiv:1909.08053, sec. 3), as the lecture's evenly spread "
        "weights assume (1:17:00-1:18:26)", LECTURE_DATE,
        "the layout preset dp_attention (or a pinned attention_tensor_parallelism) "
        "replaces it",
        # a layout stated by a preset or the user determines it outright (as a headline
        # yields), whatever it implies: 8 groups of one chip are no disagreement with 1;
        # the chips of a group are computed from the groups, but stated they are the
        # layout said the other way, not a measurement
        headline=True, gives_way_to=("attention_tensor_parallelism",)),
    "allreduces_per_layer": PresetValue(
        "2", "Megatron-LM's layout: an all-reduce after attention and after the MLP "
        "(Shoeybi et al. 2019, arXiv:1909.08053, sec. 3 and fig. 3)", "2019-09-17",
        "the layout preset dp_attention sets 0; DeepSeek's TP4 attention groups 1"),
    "replicated_attention_params": PresetValue(
        "0 param", "one copy of the attention weights, split over the chips (Megatron-LM's "
        "layout)", LECTURE_DATE,
        "gives way where n_chips, the layout (attention_data_parallelism or "
        "attention_tensor_parallelism) and the model's attention widths determine it"),
    "kv_extra_copies": PresetValue(
        "0", "one copy of each sequence's KV cache, split evenly over the chips, as the "
        "lecture's memory check assumes (1:05:37-1:11:58)", LECTURE_DATE,
        "gives way where the attention layout and the model's KV heads (or its latent) "
        "determine it"),
    "attention_flops_per_token": PresetValue(
        "0 FLOP/token", "attention FLOPs left out, as on the lecture's blackboard (3:19-4:04), "
        "until the attention shape is known", LECTURE_DATE,
        "a model preset (or n_heads with d_head, or the MLA widths) counts them instead"),
    "pipeline_stages": PresetValue(
        "1", "one replica is one pipeline stage unless pinned: the lecture's serving "
        "deductions (0:00-47:12) use no pipelining", LECTURE_DATE,
        "pin pipeline_stages (or chips_per_stage) for a pipelined deployment"),
    "accepted_tokens_per_step": PresetValue(
        "0 token/sequence", "no speculation: a decode step gives each sequence one token, "
        "the model's own next one (lecture 6:01-7:10)", LECTURE_DATE,
        "gives way where draft_tokens and acceptance_rate, or a pinned "
        "decode_tokens_per_step, determine it"),
    "rejected_tokens_per_step": PresetValue(
        "0 token/sequence", "no speculation: a step runs no drafted token it then throws "
        "away (lecture 6:01-7:10)", LECTURE_DATE,
        "gives way where draft_tokens and acceptance_rate (or the tokens a step gives) "
        "determine it"),
    "t_draft": PresetValue(
        "0 s", "no draft model runs before the step (lecture 2:34-3:19 has none)",
        LECTURE_DATE, "gives way where draft_tokens and draft_params determine it"),
    "input_embedding_params": PresetValue(
        "0 param", "the lecture's parameter counts leave the embedding lookup out (4:45-5:16)",
        LECTURE_DATE, "a model preset with its vocabulary and embeddings replaces it"),
    # Serving at the datasheet figures: answers stay bounds until achieved fractions are
    # stated (a fit to measurements, issue 24, states them per chip and engine).
    "flops_efficiency": PresetValue(
        "1", "peak FLOP/s: compute times are lower bounds and rates upper bounds (the "
        "roofline, lecture 2:34-3:19; Williams et al. 2009, CACM 52(4))", LECTURE_DATE,
        "a bound at peak; pin the fraction an engine achieves (or solve for it from a "
        "measured tokens_per_second) to predict instead"),
    "hbm_bandwidth_efficiency": PresetValue(
        "1", "peak HBM bandwidth: memory times are lower bounds and rates upper bounds (the "
        "roofline, lecture 2:34-3:19)", LECTURE_DATE,
        "a bound at peak; pin the fraction an engine achieves (or solve for it from a "
        "measured tokens_per_second) to predict instead"),
    "scale_up_bandwidth_efficiency": PresetValue(
        "1", "peak scale-up bandwidth in the step's collectives: communication times are "
        "lower bounds (the alpha-beta model at the link's peak, Hockney 1994)", LECTURE_DATE,
        "a bound at peak; pin the fraction the collectives achieve (DeepEP's dispatch and "
        "combine reach about 153-158 of H800's 160 GB/s NVLink) or fit it (chalk calibrate)"),
    "attention_surplus_time_per_flop": PresetValue(
        "0 s/FLOP", "attention multiplies at the weight matmuls' peak (chip_flops), as the "
        "lecture's single FLOP rate does (3:19-4:04)", LECTURE_DATE,
        "gives way to an attention format a precision preset states (fp4: attention in "
        "FP8) or to a pinned attention_chip_flops",
        # given way only to what determines it outright (as a headline yields), never to a
        # step time through another default: a question that names no attention format
        # keeps attention at chip_flops
        headline=True),
    "usable_hbm_fraction": PresetValue(
        "1", "all of HBM holds weights and KV cache, as the lecture's memory check assumes "
        "(1:04:22-1:05:13)", LECTURE_DATE,
        "a bound: engines keep some for themselves (vLLM fills 0.9 by default); pin it"),
    "train_flops_per_param": PresetValue(
        "6 FLOP/param/token",
        "Kaplan et al. 2020, arXiv:2001.08361, sec. 2.1 (C = 6ND); lecture 1:22:17-1:22:29",
        "2020-01-23"),
    "chinchilla_tokens_per_param": PresetValue(
        "20 token/param",
        "Hoffmann et al. 2022, 'Training Compute-Optimal Large Language Models', "
        "arXiv:2203.15556 (Chinchilla 70B on 1.4T tokens)",
        "2022-03-29"),
}

CAREFUL = Preset(
    "careful",
    "conventions",
    "2 FLOP per parameter per token (multiply and add); precision and chip left to the user",
    {
        "flops_per_param": PresetValue(
            "2 FLOP/param/token",
            "Kaplan et al. 2020, 'Scaling Laws for Neural Language Models', arXiv:2001.08361, "
            "sec. 2.1 (forward pass 2N FLOPs per token)",
            "2020-01-23",
        ),
        **_SHARED,
    },
)

LECTURE = Preset(
    "lecture",
    "conventions",
    "the lecture's blackboard numbers: 1 FLOP and 1 byte per parameter, 300 FLOP per byte",
    {
        "flops_per_param": PresetValue(
            "1 FLOP/param/token", "lecture 3:19-4:04 (counts one operation per parameter)",
            LECTURE_DATE, "the careful count is 2"),
        "bytes_per_param": PresetValue(
            "1 byte/param", "lecture 17:06-18:45 (8-bit weights)", LECTURE_DATE),
        "hardware_intensity": PresetValue(
            "300 FLOP/byte", "lecture 18:05-18:46 ('on most GPUs around 300')", LECTURE_DATE,
            "H100 bf16 gives 295; B200 fp8 gives 584"),
        **_SHARED,
    },
)

NONE = Preset("none", "conventions",
              "no default pins at all: every quantity is pinned by you or solved for", {})

CONVENTIONS = {p.name: p for p in (CAREFUL, LECTURE, NONE)}
DEFAULT_CONVENTIONS = "careful"


WIDTHS = ("number widths: bf16 16 bits, fp8 (E4M3/E5M2) 8 bits, fp4 (E2M1) 4 bits; OCP "
          "Microscaling Formats (MX) Specification v1.0")
FORMATS = ("bf16", "fp8", "fp4")


def _precision(name: str, weight: str, kv: str, note: str, attention: str = "") -> Preset:
    """Weights and their matmuls in ``name``'s format; the KV cache at ``kv``; activations
    sent between chips in bf16; attention in ``attention``'s format where it differs from
    the matmuls' (the conventions keep it at chip_flops otherwise)."""
    values = {
        "bytes_per_param": PresetValue(weight, WIDTHS, "2023", note),
        "kv_bytes_per_element": PresetValue(kv, WIDTHS, "2023"),
        "activation_bytes": PresetValue("2 byte", WIDTHS, "2023",
                                        "activations sent between chips stay in bf16"),
        # the chip's peak for this format: a chip preset's chip_flops gives way to it
        **{f"matmul_{fmt}_share": PresetValue(
            "1" if fmt == name else "0", f"the weight matmuls run in {name} ({WIDTHS})",
            "2023") for fmt in FORMATS},
    }
    if attention:
        values.update({f"attention_{fmt}_share": PresetValue(
            "1" if fmt == attention else "0", ATTENTION_FORMAT, "2025-02") for fmt in
            FORMATS[:2]})
    described = f"weights at {weight}, KV cache at {kv}"
    if attention:
        described += f", attention in {attention}"
    return Preset(name, "precision", described, values)


# FP4 checkpoints quantize the linear layers only; attention multiplies the FP8 KV cache
# in FP8, the fastest format attention kernels offer.
ATTENTION_FORMAT = (
    "NVIDIA's NVFP4 checkpoints quantize the linear operators of the transformer blocks "
    "(huggingface.co/nvidia/DeepSeek-R1-FP4, model card, 2025-02), not attention; "
    "attention kernels multiply in FP8 at most (FlashAttention-3, arXiv:2407.08608, sec. "
    "3.3)")

PRECISIONS = {
    p.name: p for p in (
        _precision("bf16", "2 byte/param", "2 byte", ""),
        _precision("fp8", "1 byte/param", "1 byte", ""),
        _precision("fp4", "0.5 byte/param", "1 byte", "4-bit weights with an 8-bit KV cache",
                   attention="fp8"),
    )
}

EQUAL_SPLIT = Preset(
    "equal_split", "assumption",
    "the lecture's heuristic: equal spend on pre-training, RL and serving",
    {
        "rl_cost_ratio": PresetValue(
            "1", "lecture 1:20:29-1:24:52 (costs of a sum are minimised near equality)",
            LECTURE_DATE, "a heuristic, not a derivation"),
        "inference_cost_ratio": PresetValue(
            "1", "lecture 1:20:29-1:24:52 (costs of a sum are minimised near equality)",
            LECTURE_DATE, "a heuristic, not a derivation"),
    },
)


# How a replica lays attention and experts over its chips, beside the conventions'
# Megatron layout.
DP_ATTENTION = Preset(
    "dp_attention", "layout",
    "attention data-parallel over every chip, experts expert-parallel: no all-reduce, the "
    "MoE all-to-all instead",
    {
        "attention_tensor_parallelism": PresetValue(
            "1 chip", "DeepSeek-V3, arXiv:2412.19437, sec. 3.4.2 (DP attention beside EP "
            "MoE); SGLang, 'DP, DPA and SGLang DP Router' (--enable-dp-attention with "
            "--dp-size equal to --tp-size: one attention rank a GPU)", "2024-12-27"),
        "allreduces_per_layer": PresetValue(
            "0", "no tensor-parallel group to all-reduce over: each chip's attention is its "
            "own, and the MoE layers dispatch and combine by all-to-all (DeepSeek-V3, "
            "arXiv:2412.19437, sec. 3.4.2)", "2024-12-27"),
    },
)
LAYOUTS = {DP_ATTENTION.name: DP_ATTENTION}


def _fit(name: str, citation: str, date: str, values: dict, note: str) -> Preset:
    return Preset(name, "fit", f"Chinchilla-form loss fit: {citation}", {
        k: PresetValue(v, citation, date, note) for k, v in values.items()})


FITS = {
    p.name: p for p in (
        _fit("hoffmann2022", "Hoffmann et al. 2022, arXiv:2203.15556, approach 3", "2022-03-29",
             {"fit_e": "1.69", "fit_a": "406.4", "fit_b": "410.7", "fit_alpha": "0.34",
              "fit_beta": "0.28"},
             "puts the compute-optimal ratio near 90 tokens per parameter"),
        _fit("besiroglu2024", "Besiroglu et al. 2024, 'Chinchilla Scaling: A replication "
             "attempt', arXiv:2404.10102", "2024-04-15",
             {"fit_e": "1.8172", "fit_a": "482.01", "fit_b": "2085.43", "fit_alpha": "0.3478",
              "fit_beta": "0.3658"},
             "agrees with the paper's other two approaches: about 20 tokens per parameter"),
    )
}
