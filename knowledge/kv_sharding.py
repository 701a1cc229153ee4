"""How an attention group's chips share the KV cache (beyond the lecture's even split).

Tensor parallelism splits attention by heads: each chip of a group computes some
query heads and keeps the K and V of the KV heads they read. A group with more
chips than the layer has KV heads cannot split a head further, so every chip still
holds at least one whole head and the cache is copied, not divided: Llama 3.1 70B
(8 KV heads) on a group of 16 chips holds each head twice. Latent attention (MLA)
caches one latent that every query head reads, a single head in this sense, so a
tensor-parallel group holds it whole on each chip; data-parallel attention (groups
of one chip) is how engines avoid that.

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
      topic=TOPIC, variant="gqa"),
    R("kv_cache_copies_gqa",
      q.kv_cache_copies * q.n_kv_heads, group_chips * q.kv_heads_per_chip,
      "a group's chips together hold t x kv_heads_per_chip heads of the layer's n_kv_heads: "
      "each head that many times over",
      GQA_HEADS,
      ("every layer's attention has the same KV heads",),
      topic=TOPIC, variant="gqa"),
    R("kv_cache_copies_mla",
      q.kv_cache_copies, group_chips,
      "latent attention caches one latent every query head reads: each chip of a "
      "tensor-parallel group holds it whole",
      MLA_ONE_HEAD,
      ("the group splits the query heads, not the latent",),
      topic=TOPIC, variant="mla"),
)
