"""How an attention group's chips share the KV cache (beyond the lecture's even split).

Tensor parallelism splits attention by heads: each chip of a group computes some
query heads and keeps the K and V of the KV heads they read. A group with more
chips than the layer has KV heads cannot split a head further, so every chip still
holds at least one whole head and the cache is copied, not divided: Llama 3.1 70B
(8 KV heads) on a group of 16 chips holds each head twice. Latent attention (MLA)
caches one latent that every query head reads, a single head in this sense, so a
tensor-parallel group holds it whole on each chip; data-parallel attention (groups
of one chip) is how engines avoid that.

Which kind of attention a model has is known only from its pins (a model preset's
widths): until they say, the per-chip relations are left out, and until the layout and
the widths compute the extra copies the conventions' zero keeps one copy, split evenly,
as the lecture does.

Every chip reads its own copy in a decode step, so the copies count in the HBM a
replica needs, in the largest batch that fits, in the KV read time of a step and in
the KV a prefill writes.
"""

from __future__ import annotations

from chalk.knowledge.quantities import BY_NAME, q
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.relations import Source
from chalk.symbolic.variables import count
from sympy import Integer, Max

TOPIC = "KV cache over an attention group"

group_chips = count(BY_NAME["attention_tensor_parallelism"])

GQA_HEADS = Source(
    "vLLM, vllm/model_executor/models/llama.py, LlamaAttention.__init__ (v0.15.0, "
    "docs.vllm.ai/en/v0.15.0/api/vllm/model_executor/models/llama/): num_kv_heads = "
    "max(1, total_num_kv_heads // tp_size), 'Number of KV heads is less than TP size, so we "
    "replicate the KV heads across multiple tensor parallel GPUs'; the KV-cache spec sizes "
    "each rank's cache from that count (ModelConfig.get_num_kv_heads)", "paper")
MLA_ONE_HEAD = Source(
    "Ray Serve LLM, 'Data parallel attention', docs.ray.io/en/latest/serve/llm/user-guides/"
    "data-parallel-attention.html (MLA: 'KV cache can't be sharded along the head "
    "dimension'); Modular MAX, max.nn.attention.TensorParallelLatentAttentionWithRope "
    "('using tensor parallelism for MLA will cause the KV-cache to be duplicated across all "
    "devices'); DeepSeek-V2, arXiv:2405.04434, sec. 2.1.2 (one compressed latent a token, "
    "shared by every head)", "paper")

RELATIONS = (
    R("kv_heads_per_chip",
      q.kv_heads_per_chip, Max(Integer(1), q.n_kv_heads / group_chips),
      "each chip of an attention group holds its share of a layer's KV heads, but never less "
      "than one whole head",
      GQA_HEADS,
      ("a group's chips divide its KV heads evenly, or the heads divide its chips (vLLM "
       "asserts one or the other)",),
      regimes=(("KV heads split", q.n_kv_heads / group_chips),
               ("KV heads replicated", Integer(1))),
      topic=TOPIC, variant="gqa", only_when_chosen=True),
    R("kv_elements_per_chip_gqa",
      q.kv_elements_per_chip, Integer(2) * q.kv_heads_per_chip * q.d_head,
      "a chip caches a K and a V vector per token for each KV head it holds",
      GQA_HEADS,
      topic=TOPIC, variant="gqa", only_when_chosen=True),
    R("kv_elements_per_chip_mla",
      q.kv_elements_per_chip, q.kv_lora_rank + q.qk_rope_head_dim,
      "latent attention caches one latent and one RoPE key that every query head reads: "
      "each chip of a tensor-parallel group holds them whole",
      MLA_ONE_HEAD,
      ("the group splits the query heads, not the latent",),
      topic=TOPIC, variant="mla", only_when_chosen=True),
    # Alone on its left, and a zero by default: without a layout that computes it the
    # relation is absent, so the conventions' single copy never sizes a group backwards
    # (one copy of a latent is no ground for one chip a group).
    R("kv_extra_copies",
      q.kv_extra_copies, group_chips * q.kv_elements_per_chip / q.kv_elements_per_layer - 1,
      "the t chips of an attention group together hold t x kv_elements_per_chip of a layer's "
      "kv_elements_per_layer for each token of their sequences: each element that many times "
      "over, all but one of them extra",
      GQA_HEADS,
      ("every full-context layer has the same KV width, sliding-window layers too",),
      topic=TOPIC),
    R("kv_cache_copies",
      q.kv_cache_copies, 1 + q.kv_extra_copies,
      "the replica holds each sequence's KV cache once, and again for every extra copy",
      GQA_HEADS,
      ("kv_extra_copies 0 (the conventions) until the layout and the model's attention "
       "give it",),
      topic=TOPIC),
)
