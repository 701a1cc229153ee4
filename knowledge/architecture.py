"""Parameter counts from a model's architecture, and which layers keep a full KV cache.

A decoder-only transformer is a stack of layers, each an attention block and an
MLP block, between an input-embedding table and an output head. Counting the
weight matrices of each block from the model's config gives the dense and
routed-expert parameters that the mixture-of-experts split relations turn into
``total_params`` and ``active_params``.

Counting convention (as Kaplan et al. 2020 sec. 2.1 count matmul parameters):
``active_params`` are the parameters a token's forward pass multiplies by, so
the output head counts and the input-embedding table does not (a token only
looks up its row); ``total_params`` counts every table. The published active
counts of Qwen3, gpt-oss and DeepSeek-V3 follow the same convention. Norm
weights, biases, attention sinks and position tables are left out: each is a
vector per layer, well under 0.1% of the count.
"""

from __future__ import annotations

from chalk.knowledge.quantities import q
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.relations import paper
from chalk.symbolic.variables import unit_constant
from sympy import Integer

TOPIC = "parameter counts from the architecture"

one_param = unit_constant("param").symbol

VASWANI = paper("Vaswani et al. 2017, 'Attention Is All You Need', arXiv:1706.03762, "
                "sec. 3.2.2 (multi-head attention projections)",
                "https://arxiv.org/abs/1706.03762")
GQA = paper("Shazeer 2019, 'Fast Transformer Decoding: One Write-Head is All You Need', "
            "arXiv:1911.02150 (MQA); Ainslie et al. 2023, 'GQA', arXiv:2305.13245, sec. 2 "
            "(K and V projections shared by groups of query heads)",
            "https://arxiv.org/abs/2305.13245")
MLA = paper("DeepSeek-V2, arXiv:2405.04434, sec. 2.1.2-2.1.3 (low-rank joint KV and query "
            "compression, decoupled RoPE key)", "https://arxiv.org/abs/2405.04434")
GLU = paper("Shazeer 2020, 'GLU Variants Improve Transformer', arXiv:2002.05202, sec. 2 "
            "(FFN_SwiGLU: three weight matrices W, V, W2)", "https://arxiv.org/abs/2002.05202")
DEEPSEEK_MOE = paper("DeepSeekMoE, arXiv:2401.06066, sec. 3 (shared experts beside fine-"
                     "grained routed experts); DeepSeek-V3, arXiv:2412.19437, sec. 2.1.2 and "
                     "4.2 (first layers dense, sigmoid router of one vector per expert)",
                     "https://arxiv.org/abs/2412.19437")
KAPLAN = paper("Kaplan et al. 2020, 'Scaling Laws for Neural Language Models', "
               "arXiv:2001.08361, sec. 2.1 (parameter count per layer; the embedding "
               "lookup does no matmul)", "https://arxiv.org/abs/2001.08361")
GEMMA3 = paper("Gemma 3 Technical Report, arXiv:2503.19786, sec. 2 (5 local sliding-window "
               "layers per global layer; only global layers keep the whole context)",
               "https://arxiv.org/abs/2503.19786")

RELATIONS = (
    R("attention_params_gqa",
      q.attention_layer_params / one_param,
      Integer(2) * q.d_model * q.n_heads * q.d_head
      + Integer(2) * q.d_model * q.n_kv_heads * q.d_head,
      "one attention layer: query and output projections of n_heads heads, key and value "
      "projections of n_kv_heads heads (n_kv_heads = n_heads is MHA, 1 is MQA)",
      GQA,
      ("no biases (gpt-oss and GLM-4.5 have them: under 0.01% of the count)",
       "query and key norms left out"),
      topic=TOPIC, variant="gqa"),
    R("attention_params_mla",
      q.attention_layer_params / one_param,
      q.d_model * q.q_lora_rank
      + q.q_lora_rank * q.n_heads * (q.qk_nope_head_dim + q.qk_rope_head_dim)
      + q.d_model * (q.kv_lora_rank + q.qk_rope_head_dim)
      + q.kv_lora_rank * q.n_heads * (q.qk_nope_head_dim + q.v_head_dim)
      + q.n_heads * q.v_head_dim * q.d_model,
      "one multi-head latent attention layer: query down- and up-projection, the joint KV "
      "down-projection with the decoupled RoPE key, the KV up-projection to per-head keys "
      "and values, and the output projection",
      MLA,
      ("queries are compressed (q_lora_rank > 0, as in DeepSeek-V3 and Kimi K2)",
       "the norms of the two latents left out"),
      topic=TOPIC, variant="mla"),
    R("dense_mlp_params",
      q.dense_mlp_params / one_param, Integer(3) * q.d_model * q.d_ff,
      "a gated MLP (SwiGLU, GeGLU) has three matrices: gate and up projections to d_ff and "
      "a down projection back",
      GLU,
      ("no biases",),
      topic=TOPIC),
    R("expert_mlp_params",
      q.expert_mlp_params / one_param, Integer(3) * q.d_model * q.moe_d_ff,
      "one expert is a gated MLP of hidden width moe_d_ff",
      GLU,
      ("shared experts have the routed experts' width (n_shared_experts x moe_d_ff in the "
       "DeepSeek-V3 config)", "no biases (gpt-oss experts have them: about 0.1% of the count)"),
      topic=TOPIC),
    R("dense_and_moe_layers",
      q.n_layers, q.n_dense_layers + q.n_moe_layers,
      "each layer's MLP is either dense or a mixture of experts",
      DEEPSEEK_MOE,
      topic=TOPIC),
    R("expert_params_from_layers",
      q.expert_params, q.n_moe_layers * q.n_experts * q.expert_mlp_params,
      "routed-expert parameters: every MoE layer holds n_experts experts",
      DEEPSEEK_MOE,
      ("every MoE layer has the same experts' shape",),
      topic=TOPIC),
    R("dense_params_from_layers",
      q.dense_params,
      q.n_layers * q.attention_layer_params + q.n_dense_layers * q.dense_mlp_params
      + q.moe_shared_params + q.vocab_size * q.d_model * one_param,
      "parameters every token multiplies by: attention in every layer, the dense MLPs, the "
      "shared experts and routers of the MoE layers, and the output head",
      KAPLAN,
      ("norm weights left out (a few d_model vectors per layer)",
       "MTP modules and vision encoders not counted"),
      topic=TOPIC),
    R("moe_shared_params",
      q.moe_shared_params,
      q.n_moe_layers * (q.n_shared_experts * q.expert_mlp_params
                        + q.d_model * q.n_experts * one_param),
      "each MoE layer's parameters every token uses: its shared experts and its router",
      DEEPSEEK_MOE,
      ("router: one d_model vector per routed expert (its bias left out)",),
      topic=TOPIC),
    R("input_embedding_params",
      q.input_embedding_params / one_param, q.untied_embeddings * q.vocab_size * q.d_model,
      "a separate input-embedding table of vocab_size rows of d_model; none when tied to "
      "the output head",
      KAPLAN,
      topic=TOPIC),
    R("full_and_local_layers",
      q.n_layers, q.n_kv_layers + q.n_local_layers,
      "each attention layer either keeps a KV cache over the whole context or attends "
      "within a sliding window",
      GEMMA3,
      ("no KV shared across layers",),
      topic=TOPIC),
    R("global_layers_keep_the_context",
      q.n_kv_layers, q.n_global_layers,
      "the global (full-attention) layers of a hybrid model are the layers whose KV cache "
      "spans the whole context",
      GEMMA3,
      ("no KV shared across layers",),
      topic=TOPIC),
)
