"""Tensor-parallel communication in a decode step (beyond the lecture's roofline).

When a dense model's matmuls are split over the n_chips of a replica in the
Megatron-LM way, every layer ends its attention block and its MLP block with
an all-reduce of the activations of the step's tokens. Those all-reduces sit
on the critical path: the next block needs their result. The lecture's step
time leaves them out; these relations add them so that forward models such as
llm-analysis can be compared on the same footing, and so a user can see when
communication, not HBM, is what a small batch waits on.

Each all-reduce costs a fixed latency plus the bytes one chip sends around a
ring over the scale-up bandwidth (the alpha-beta cost model).

Which layout a replica runs is stated, not guessed: the conventions take Megatron's
(attention_data_parallelism = 1, two all-reduces a layer over every chip); the layout
preset ``dp_attention`` takes attention data-parallel with the experts expert-parallel
(each chip a group of its own, holding the whole attention weights and serving its own
sequences; no all-reduce, the MoE layers' dispatch and combine being the all-to-all that
``step_time`` already waits for). DeepSeek's TP4 x DP80 is pinned as
``attention_tensor_parallelism = 4 chip`` with ``allreduces_per_layer = 1``.
"""

from __future__ import annotations

from chalk.knowledge.quantities import BY_NAME, q
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.relations import Source, paper
from chalk.symbolic.variables import count
from sympy import Integer

TOPIC = "tensor-parallel communication"

stage_chips = count(BY_NAME["chips_per_stage"])
group_chips = count(BY_NAME["attention_tensor_parallelism"])
run_tokens = count(BY_NAME["tokens_run_per_step"])

MEGATRON = paper("Shoeybi et al. 2019, 'Megatron-LM', arXiv:1909.08053, sec. 3 and fig. 3",
                 "https://arxiv.org/abs/1909.08053")
RING = paper("Thakur, Rabenseifner & Gropp 2005, 'Optimization of Collective Communication "
             "Operations in MPICH', IJHPCA 19(1), sec. 4 (ring all-gather and "
             "reduce-scatter); Patarasuk & Yuan 2009, JPDC 69(2)",
             "https://doi.org/10.1177/1094342005051521")
DP_ATTENTION = paper(
    "DeepSeek-V3, arXiv:2412.19437, sec. 3.4.2 (decoding: the attention part TP4 with SP "
    "combined with DP80, the MoE part EP320); SGLang, 'DP, DPA and SGLang DP Router', "
    "docs.sglang.io/advanced_features/dp_dpa_smg_guide.html (data-parallel attention: each "
    "rank holds the attention weights and its own requests' KV cache); Ray Serve LLM, "
    "'Data parallel attention', docs.ray.io/en/latest/serve/llm/user-guides/"
    "data-parallel-attention.html (attention layers replicated, experts sharded)",
    "https://arxiv.org/abs/2412.19437")
ALPHA_BETA = paper("Hockney 1994, 'The communication challenge for MPP', Parallel "
                   "Computing 20(3): time = latency + bytes / bandwidth",
                   "https://doi.org/10.1016/0167-8191(94)90032-9")

RELATIONS = (
    # attention_tensor_parallelism alone on the left: the groups' count feeds forward into
    # their chips, and through them into the weights a step reads, so a measured step is
    # never a ground for the count (solvers.planning.forward)
    R("attention_groups",
      q.attention_tensor_parallelism, q.chips_per_stage / q.attention_data_parallelism,
      "a pipeline stage's chips (all the replica's without pipelining) are its data-parallel "
      "attention groups, each splitting the stage's attention weights over its own chips",
      DP_ATTENTION,
      ("every group has the same number of chips",
       "attention_data_parallelism 1 (the conventions): Megatron's layout, attention split "
       "over every chip"),
      topic=TOPIC),
    # Written with the chips of a group, not the count of groups: the count reaches the
    # answer only through attention_groups, so every path holds a group to at least one
    # chip (16 groups on 8 chips is no layout).
    R("replicated_attention_params",
      q.replicated_attention_params * group_chips,
      (stage_chips - group_chips) * q.n_layers * q.attention_layer_params,
      "every data-parallel attention group holds, and each step reads, its own copy of its "
      "stage's attention weights: one copy more per group beyond the first, chips_per_stage "
      "/ attention_tensor_parallelism groups in each stage, n_layers over all stages",
      DP_ATTENTION,
      ("every layer has an attention block of attention_layer_params",
       "the other weights (experts, dense MLPs, embeddings) are held once, split over the "
       "chips"),
      topic=TOPIC),
    R("tp_allreduce_bytes",
      q.tp_allreduce_bytes * group_chips * q.attention_data_parallelism,
      # (chips - 1) multiplied in first: sympy would spread a bare 2 over the difference
      run_tokens * (group_chips - 1) * Integer(2) * q.d_model * q.activation_bytes,
      "bytes each chip sends in a ring all-reduce of its group's share of the step's "
      "activations: a reduce-scatter and an all-gather, each passing (n-1)/n of the message",
      RING,
      ("the tensor-parallel group is one attention group (a stage's chips in Megatron's layout)",
       "the groups share the step's tokens evenly",
       "one activation vector of d_model elements per token the step runs (drafted ones "
       "included)"),
      topic=TOPIC),
    R("t_allreduce",
      q.t_allreduce, q.allreduce_latency + q.tp_allreduce_bytes
      / (q.scale_up_bandwidth * q.scale_up_bandwidth_efficiency),
      "one all-reduce: a fixed latency plus the bytes one chip sends at the fraction of its "
      "one-direction scale-up bandwidth the collective achieves",
      ALPHA_BETA,
      ("a ring sends and receives at the same time on every link",
       "scale_up_bandwidth_efficiency 1 (the conventions): the link's peak (nccl-tests' bus "
       "bandwidth is the measured counterpart)"),
      topic=TOPIC),
    R("t_tp_comm",
      q.t_tp_comm, q.allreduces_per_layer * q.n_layers * q.t_allreduce,
      "a step waits for each layer's tensor-parallel all-reduces: two in Megatron's layout "
      "(after attention and after the MLP), none with attention data-parallel and the "
      "experts expert-parallel",
      Source("Shoeybi et al. 2019, 'Megatron-LM', arXiv:1909.08053, sec. 3 and fig. 3 (two "
             "all-reduces a layer in the forward pass); DeepSeek-V3, arXiv:2412.19437, sec. "
             "3.4.2 (data-parallel attention, expert-parallel MoE: all-to-all dispatch and "
             "combine instead)", "paper"),
      ("allreduces_per_layer 2 (the conventions: Megatron's layout)",
       "the all-reduces do not overlap with compute or HBM traffic"),
      topic=TOPIC),
    R("step_time_with_comm",
      q.step_time_with_comm, q.step_time + q.t_tp_comm,
      "a decode step with its tensor-parallel all-reduces on the critical path after the "
      "roofline part",
      MEGATRON,
      ("communication and the roofline part run one after the other",),
      topic=TOPIC),
)
