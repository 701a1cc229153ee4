"""Section 6a of the lecture (1:33:02-1:41:27): what a long-context price step implies.

A provider that charges more above some context length is telling us where its
cost per token starts to rise: where reading each sequence's KV cache takes as
long as the matmuls. With an assumed active-parameter count that pins the KV
bytes per token, which architecture then has to explain: many KV heads, a
shared latent (MLA), few layers with a global KV, or sparse attention.
"""

from __future__ import annotations

from chalk.knowledge.quantities import BY_NAME, q
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.relations import Source, Variant, lecture, paper
from chalk.symbolic.variables import count, unit_constant
from sympy import Integer

TOPIC = "long context and KV-cache size"

one_token = unit_constant("token").symbol
one_sequence = unit_constant("sequence").symbol
window = count(BY_NAME["sliding_window"])

# Grouped-query and latent attention size the cache (and, in attention.py and
# architecture.py, the FLOPs and weights) by different formulas; the pins say which.
GQA = Variant("gqa", "attention", ("n_kv_heads",),
              "multi-head, grouped-query or multi-query attention: K and V per KV head")
MLA = Variant("mla", "attention", ("kv_lora_rank",),
              "multi-head latent attention: one shared latent and a RoPE key per layer")
VARIANTS = (GQA, MLA)

RELATIONS = (
    R("kv_bytes_per_token",
      q.kv_bytes_per_token * one_token,
      q.n_kv_layers * q.kv_elements_per_layer * q.kv_bytes_per_element,
      "KV bytes per token: layers with their own full-context KV, times elements cached "
      "per layer, times bytes per element",
      lecture("1:39:24", "1:40:08"),
      ("a sliding-window layer adds a fixed per-sequence term instead "
       "(kv_window_bytes_per_sequence)",),
      topic=TOPIC),
    R("kv_width_gqa",
      q.kv_elements_per_layer, Integer(2) * q.n_kv_heads * q.d_head,
      "multi-head, grouped-query and multi-query attention cache a K and a V vector per KV "
      "head",
      lecture("1:39:24", "1:40:51"),
      topic=TOPIC, variant="gqa"),
    R("kv_width_mla",
      q.kv_elements_per_layer, q.kv_lora_rank + q.qk_rope_head_dim,
      "multi-head latent attention caches one shared latent plus a decoupled RoPE key",
      paper("DeepSeek-V2, arXiv:2405.04434, sec. 2.1.2-2.1.3; DeepSeek-V3, arXiv:2412.19437"),
      topic=TOPIC, variant="mla"),
    R("kv_window_bytes_per_sequence",
      q.kv_window_bytes_per_sequence * one_sequence,
      q.n_local_layers * window * q.kv_elements_per_layer * q.kv_bytes_per_element,
      "sliding-window layers keep a fixed window of KV per sequence once the context is "
      "longer than the window",
      Source("Character.AI, 'Optimizing AI Inference' (2024), and Gemma 3 tech report "
             "arXiv:2503.19786 sec. 2; lecture 1:38:41-1:39:24", "paper"),
      ("local and global layers use the same KV width",),
      topic=TOPIC),
    R("kv_bytes_per_sequence",
      q.kv_bytes_per_sequence * one_sequence,
      q.context_length * q.kv_bytes_per_token + q.kv_window_bytes_per_sequence * one_sequence,
      "KV one sequence holds (and a step reads): the per-token part over its context plus "
      "the sliding-window part (zero for models without local layers)",
      lecture("5:30", "5:56"),
      ("context longer than the sliding window",),
      topic=TOPIC),
    R("kv_tokens_read",
      q.kv_tokens_read ** 2, q.context_length * q.sparse_attention_scale,
      "sparse attention reads about sqrt(context) tokens: sqrt(context x s) for a scale s",
      lecture("12:35", "12:58"),
      ("s = context recovers dense attention",),
      topic=TOPIC),
    R("sparse_context_crossover",
      q.sparse_context_crossover * q.sparse_attention_scale, q.context_crossover ** 2,
      "context at which sparse attention's KV reads match the matmuls: sqrt(L s) tokens read "
      "equal the dense crossover, so L = crossover^2 / s",
      lecture("1:53:45", "1:55:15"),
      ("weight reads amortised by a large batch",),
      topic=TOPIC),
    R("price_tier_at_crossover",
      q.context_crossover, q.long_context_threshold,
      "a provider puts its long-context price step where KV reads start to dominate cost",
      lecture("1:35:18", "1:36:03"),
      ("prices track costs closely enough that the step sits at the crossover",),
      topic=TOPIC),
)
