"""Section 2 of the lecture (32:09-47:11): mixture-of-experts layers on a rack.

Experts are spread over the chips of one scale-up domain (expert parallelism);
every token is sent to the chips holding its chosen experts and the results come
back, an all-to-all pattern that needs the full connectivity of one rack. At
small batch a step touches only some experts, so fewer weights are read than
the lecture's "read them all" assumes; that assumption is the large-batch limit
(and the conventions' default where a model's experts are not known). The
all-to-all sits on the step's critical path unless it is stated to overlap, and
the busiest chip, not the average one, sets its time.
"""

from __future__ import annotations

from chalk.knowledge.quantities import BY_NAME, q
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.relations import Source, lecture, paper
from chalk.symbolic.variables import count, unit_constant
from sympy import Integer

TOPIC = "mixture of experts on a rack"

one_token = unit_constant("token").symbol
expert_chips = count(BY_NAME["expert_parallelism"])
run_tokens = count(BY_NAME["tokens_run_per_step"])
stage_chips = count(BY_NAME["chips_per_stage"])

# The expectation below is exact for top-k routing that picks k distinct experts uniformly
# and independently per token; real routers are neither (load-balancing losses push
# towards uniform, correlated tokens share experts), so it is an estimate.
UNIFORM_ROUTING = Source(
    "expected coverage (occupancy) under uniform, independent top-k routing: one token "
    "leaves a given expert unpicked with probability 1 - k/E, T independent tokens with "
    "(1 - k/E)^T; applied to the router of lecture 32:43-33:04, whose 'fetch all of the "
    "weights' (5:16-5:30) is the limit of many tokens", "derivation")
DEEPEP = paper("DeepSeek-V3, arXiv:2412.19437, sec. 3.4 and 3.4.2 (decode: all-to-all "
               "dispatch and combine between attention and the experts; a second "
               "micro-batch's work overlaps them; redundant experts balance the load); "
               "DeepSeek, 'Inference system overview' (2025, github.com/deepseek-ai/"
               "open-infra-index)", "https://arxiv.org/abs/2412.19437")

# What the collectives achieve of the links' peak, as replica_hbm_bandwidth states for HBM.
ACHIEVED_LINK = Source(
    "lecture 35:42-36:50 (the all-to-all over the rack's scale-up links); DeepEP, "
    "github.com/deepseek-ai/DeepEP, README 'Performance' (2025-02: intranode dispatch and "
    "combine reach 153 and 158 GB/s of H800's about 160 GB/s NVLink); NVIDIA nccl-tests, "
    "doc/PERFORMANCE.md (bus bandwidth: achieved, compared with the hardware peak)", "paper")

RELATIONS = (
    R("experts_per_chip",
      q.experts_per_chip, q.n_experts / expert_chips,
      "routed experts each chip holds when one layer's experts are split over the chips",
      lecture("33:53", "34:33"),
      ("experts divide evenly (the lecture uses 64 of 72 chips for 256 experts)",),
      topic=TOPIC),
    R("alltoall_bytes_per_token",
      q.alltoall_bytes_per_token * one_token,
      Integer(2) * q.n_layers * q.n_active_experts * q.d_model * q.activation_bytes,
      "each MoE layer sends a token's activation to each chosen expert and brings the result "
      "back",
      lecture("34:48", "35:23"),
      ("every layer is an MoE layer", "no de-duplication of a token sent to two experts on "
       "one chip"),
      topic=TOPIC),
    R("tokens_per_step",
      q.tokens_per_step, q.batch_size * q.decode_tokens_per_step,
      "tokens a decode step produces",
      lecture("4:12", "4:45"),
      topic=TOPIC),
    R("tokens_run_per_step",
      q.tokens_run_per_step, q.batch_size * q.verify_tokens_per_step,
      "tokens a step runs through every layer: each sequence's own next token and every "
      "drafted one, kept or not; each is routed to its experts",
      paper("Leviathan, Kalman and Matias 2023, arXiv:2211.17192, sec. 3.5 (the target "
            "runs gamma + 1 tokens in parallel); DeepSeek-V3, arXiv:2412.19437, sec. 2.1.2 "
            "(every token a MoE layer sees is routed to its top-k experts)",
            "https://arxiv.org/abs/2211.17192"),
      ("without speculation it is the batch (one token a sequence)",),
      topic=TOPIC),
    R("t_alltoall",
      q.t_alltoall * expert_chips * q.scale_up_bandwidth * q.scale_up_bandwidth_efficiency,
      q.tokens_run_per_step * q.alltoall_bytes_per_token,
      "all-to-all time when the expert-parallel chips share the traffic over the scale-up "
      "network, each at the fraction of its link's peak the dispatch and combine achieve",
      ACHIEVED_LINK,
      ("traffic spreads evenly over the chips' scale-up links",
       "scale_up_bandwidth_efficiency 1 (the conventions): the links' peak, so the time is a "
       "lower bound",
       "the expert-parallel chips share one scale-up domain: past it the traffic crosses the "
       "slower scale-out network (lecture 36:27-36:50), which this leaves out, so the time "
       "is optimistic there",
       "every routed copy is counted as sent, also to an expert on the sender's own chip"),
      topic=TOPIC),
    R("unread_expert_fraction",
      q.unread_expert_fraction,
      (1 - q.n_active_experts / q.n_experts) ** run_tokens,
      "share of a layer's routed experts that none of the step's tokens picks, so the step "
      "reads none of their weights",
      UNIFORM_ROUTING,
      ("routing is uniform and independent across the step's tokens (an estimate: real "
       "routers are neither)", "every MoE layer routes alike"),
      topic=TOPIC),
    R("experts_touched",
      q.experts_touched + q.n_experts * q.unread_expert_fraction, q.n_experts,
      "expected distinct experts a step reaches per layer: those left unpicked subtracted "
      "from all",
      UNIFORM_ROUTING,
      ("routing is uniform and independent across tokens",),
      topic=TOPIC),
    R("total_params_split",
      q.total_params, q.dense_params + q.expert_params + q.input_embedding_params,
      "all parameters: those every token multiplies by, the routed experts, and a separate "
      "input-embedding table (looked up, not multiplied)",
      lecture("4:45", "5:16"),
      ("the lecture leaves the embedding table out; the conventions set it to zero unless a "
       "model's architecture gives it (Kaplan et al. 2020, arXiv:2001.08361, sec. 2.1)",),
      topic=TOPIC),
    R("active_params_split",
      q.active_params, q.dense_params + q.expert_params * q.n_active_experts / q.n_experts,
      "a token uses the dense parameters and n_active of the n_experts routed experts",
      lecture("32:17", "33:04"),
      ("experts are equal in size",),
      topic=TOPIC),
    R("params_read",
      q.params_read + q.input_embedding_params + q.expert_params * q.unread_expert_fraction,
      q.total_params + q.replicated_attention_params,
      "a step reads every parameter but the input-embedding table (a token looks up one "
      "row) and the routed experts none of its tokens picks: the dense part plus the "
      "experts it touches, and each data-parallel attention group its own attention copy",
      UNIFORM_ROUTING,
      ("experts are equal in size", "with every expert read (unread_expert_fraction = 0, "
       "the lecture's assumption and the large-batch limit) it is all the weights",
       "replicated_attention_params 0 (the conventions) unless attention is data-parallel "
       "(knowledge/tensor_parallel.py)"),
      topic=TOPIC),
    R("t_weight_fetch_touched",
      q.t_weight_fetch_touched, q.params_read * q.bytes_per_param / q.replica_hbm_bandwidth,
      "weight read time of a step: only the parameters it reads",
      lecture("5:16", "5:30"),
      ("the weights read are spread evenly over n_chips",),
      topic=TOPIC),
    R("stage_chips_from_parallelism",
      stage_chips, expert_chips * q.moe_tensor_parallelism,
      "the chips of a pipeline stage are its expert-parallel chips, each group of them "
      "splitting its experts' matmuls moe_tensor_parallelism ways",
      Source("lecture 1:05:37-1:07:33 (E = 64 expert-parallel chips in each rack, one "
             "pipeline stage a rack, memory divided by E x P); TensorRT-LLM, 'Expert "
             "Parallelism in TensorRT-LLM', "
             "nvidia.github.io/TensorRT-LLM/advanced/expert-parallelism.html (moe_tp_size "
             "x moe_ep_size = tp_size)", "paper"),
      ("attention and the dense layers run on the same chips (data- or tensor-parallel)",),
      topic=TOPIC),
    R("t_ep_comm",
      q.t_ep_comm,
      # (chips - 1) multiplied in first: sympy would spread the product over the difference
      (expert_chips - 1) * q.alltoall_exposed_fraction * q.expert_load_imbalance
      * q.t_alltoall / expert_chips,
      "the all-to-all time a step waits for: the busiest chip's traffic to experts on other "
      "chips, less what is hidden under compute or HBM traffic",
      DEEPEP,
      ("routing is uniform, so (E - 1)/E of the copies t_alltoall counts leave their chip "
       "(none on one chip)",
       "the busiest chip sends and receives expert_load_imbalance times the mean",
       "the exposed share is stated (default 1: not overlapped), not derived from a "
       "schedule"),
      topic=TOPIC),
)
