"""Section 2 of the lecture (32:09-47:11): mixture-of-experts layers on a rack.

Experts are spread over the chips of one scale-up domain (expert parallelism);
every token is sent to the chips holding its chosen experts and the results come
back, an all-to-all pattern that needs the full connectivity of one rack. At
small batch a step touches only some experts, so fewer weights are read than
the lecture's "read them all" assumes.
"""

from __future__ import annotations

from chalk.knowledge.quantities import BY_NAME, q
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.relations import Source, lecture
from chalk.symbolic.variables import count, unit_constant
from sympy import Integer

TOPIC = "mixture of experts on a rack"

one_token = unit_constant("token").symbol
expert_chips = count(BY_NAME["expert_parallelism"])
step_tokens = count(BY_NAME["tokens_per_step"])
chips = count(BY_NAME["n_chips"])

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
    R("t_alltoall",
      q.t_alltoall * expert_chips * q.scale_up_bandwidth,
      q.tokens_per_step * q.alltoall_bytes_per_token,
      "all-to-all time when the expert-parallel chips share the traffic over the scale-up "
      "network",
      lecture("35:42", "36:50"),
      ("traffic spreads evenly over the chips' scale-up links",),
      topic=TOPIC),
    R("experts_touched",
      q.experts_touched,
      q.n_experts * (1 - (1 - q.n_active_experts / q.n_experts) ** step_tokens),
      "expected distinct experts a step reaches: each token picks n_active of n_experts",
      Source("expected coverage under independent uniform top-k routing, applied to the "
             "router of lecture 32:43-33:04", "derivation"),
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
      q.params_read, q.dense_params + q.expert_params * q.experts_touched / q.n_experts,
      "a step reads the dense parameters and only the experts its tokens reach",
      lecture("5:16", "5:30"),
      ("refines the lecture's assumption that every expert is read each step",),
      topic=TOPIC),
    R("t_weight_fetch_touched",
      q.t_weight_fetch_touched, q.params_read * q.bytes_per_param / q.replica_hbm_bandwidth,
      "weight read time counting only the experts a step touches",
      lecture("5:16", "5:30"),
      topic=TOPIC),
)
