"""Attention work and prefill: the FLOPs the weight-only count leaves out.

The lecture counts one multiply-add per active weight per token. Attention adds
work that grows with the context: a new token's query meets every cached key and
the attention weights meet every cached value. That work reads the KV cache the
memory relations already count, so it is written per byte of KV read: an
*attention intensity*, which set beside the chip's FLOPs per HBM byte says
whether attention itself is compute- or memory-bound. Grouped-query attention
shares each cached element among a few query heads (a few FLOPs per byte);
multi-head latent attention with its up-projections absorbed shares one latent
among every head (hundreds of FLOPs per byte), so at a few thousand tokens of
context its attention FLOPs rival its weight matmuls.

Prefill runs the prompt's tokens through together: it reads the weights once for
many tokens, so it is bounded by compute, and each prompt token attends on
average to half the prompt (causal masking). Latent attention is counted in the
form each phase runs: decode absorbed (heads read the shared latent), prefill
not absorbed (the latent expanded to per-head keys and values), about 3.4 times
fewer attention FLOPs per pair of tokens for DeepSeek-V3.
"""

from __future__ import annotations

from chalk.knowledge.quantities import BY_NAME, q
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.relations import Source, lecture, paper
from chalk.symbolic.variables import count, unit_constant
from sympy import Integer, Rational

TOPIC = "attention FLOPs and prefill"

one_token = unit_constant("token").symbol
one_sequence = unit_constant("sequence").symbol
one_flop = unit_constant("flop").symbol
chips = count(BY_NAME["n_chips"])

VASWANI = Source("Vaswani et al. 2017, 'Attention Is All You Need', arXiv:1706.03762, sec. "
                 "3.2 (QK^T then softmax times V, per head)", "paper")

# Decode reads the cached latent once per head (absorbed: memory-friendly); prefill, with
# as many queries as keys, expands it to per-head keys and values (compute-friendly).
MLA_PREFILL = Source(
    "DeepSeek-V2, arXiv:2405.04434, sec. 2.1.2-2.1.3 (keys and values up-projected from "
    "the latent; absorbing W_UK and W_UV is for inference-time decode); vLLM "
    "vllm/v1/attention/backends/mla/common.py (module docstring: the compute-friendly, "
    "not absorbed path for prefill, the data-movement-friendly absorbed path for decode); "
    "FlashMLA (github.com/deepseek-ai/FlashMLA) is a decode kernel", "paper")

RELATIONS = (
    R("attention_width_gqa",
      q.attention_width, Integer(2) * q.n_heads * q.d_head,
      "multi-head, grouped-query and multi-query attention: each query head takes a d_head "
      "dot product with every cached key and a d_head weighted sum of every cached value",
      Source("Vaswani et al. 2017, arXiv:1706.03762, sec. 3.2.2; Ainslie et al. 2023, "
             "'GQA', arXiv:2305.13245, sec. 2 (query heads share KV heads: the arithmetic "
             "per query head is unchanged)", "paper"),
      ("keys and values have the same head dimension",),
      topic=TOPIC, variant="gqa"),
    R("attention_width_mla",
      q.attention_width, q.n_heads * (Integer(2) * q.kv_lora_rank + q.qk_rope_head_dim),
      "multi-head latent attention with the key and value up-projections absorbed: every "
      "head scores against the cached latent plus RoPE key and sums the cached latents",
      paper("DeepSeek-V2, arXiv:2405.04434, sec. 2.1.2-2.1.3 (absorbing W_UK into the query "
            "and W_UV into the output); FlashMLA decode kernel, github.com/deepseek-ai/"
            "FlashMLA"),
      ("decode runs in the absorbed form, so heads read the shared latent directly",),
      topic=TOPIC, variant="mla"),
    R("attention_intensity",
      q.attention_intensity * q.kv_elements_per_layer * q.kv_bytes_per_element,
      Integer(2) * one_flop * q.attention_width,
      "FLOPs per byte of KV cache read: a multiply and an add per unit of attention width, "
      "per cached token per layer, over the bytes that token occupies in that layer",
      VASWANI,
      ("a multiply-add counts 2 FLOP",),
      topic=TOPIC),
    R("attention_flops_per_token",
      q.attention_flops_per_token * one_token,
      q.attention_intensity * q.kv_bytes_per_sequence * one_sequence,
      "a new token attends once to its sequence's whole KV cache, at the attention "
      "intensity",
      lecture("5:30", "5:56"),
      ("the softmax and scaling are small next to the two products",
       "local (sliding-window) layers share the global layers' width"),
      topic=TOPIC),
    R("prefill_flops_per_token",
      q.prefill_flops_per_token, q.flops_per_token + q.prefill_attention_flops_per_token,
      "a prompt token does the weight matmuls and its attention over the prompt before it",
      Source("Kaplan et al. 2020, arXiv:2001.08361, sec. 2.1 (context-dependent term of the "
             "forward FLOPs per token); lecture 1:41:50-1:43:20", "paper"),
      topic=TOPIC),
    R("prefill_attention_gqa",
      q.prefill_attention_flops_per_token * one_token,
      Rational(1, 2) * q.attention_intensity * q.kv_bytes_per_token * q.prompt_tokens,
      "under a causal mask a prompt token attends on average to half the prompt, at the "
      "attention intensity decode has",
      Source("Kaplan et al. 2020, arXiv:2001.08361, sec. 2.1; lecture 1:41:50-1:43:20",
             "paper"),
      ("full-context layers only: a sliding-window layer's share is left out",),
      topic=TOPIC, variant="gqa"),
    R("prefill_attention_mla",
      q.prefill_attention_flops_per_token * one_token,
      one_flop * q.n_kv_layers * q.n_heads
      * (q.qk_nope_head_dim + q.qk_rope_head_dim + q.v_head_dim) * q.prompt_tokens
      / one_token,
      "latent attention in prefill runs not absorbed: the latents are expanded to per-head "
      "keys and values, and each head scores qk_nope + qk_rope dimensions and sums v_head "
      "dimensions, for half the prompt on average (2 FLOP x 1/2)",
      MLA_PREFILL,
      ("causal mask: half the prompt on average",
       "the up-projections of the latents are weight matmuls, counted in active_params"),
      topic=TOPIC, variant="mla"),
    R("time_to_first_token",
      q.time_to_first_token,
      q.prompt_tokens * q.prefill_flops_per_token / q.replica_flops
      + q.prompt_tokens * q.prefill_attention_flops_per_token
      * q.attention_surplus_time_per_flop / (chips * q.flops_efficiency),
      "prefill of one prompt is bounded by compute: its FLOPs over the replica's FLOP/s, "
      "its attention in attention's own format",
      lecture("1:41:50", "1:43:20"),
      ("one prompt at a time; no queueing, no chunking, weights read once",
       "attention at chip_flops unless its format is slower (attention_surplus_time_per_flop "
       "= 0 in the conventions)"),
      topic=TOPIC),
    R("prefill_tokens_per_second",
      1 / q.prefill_tokens_per_second,
      q.prefill_flops_per_token / q.replica_flops
      + q.prefill_attention_flops_per_token * q.attention_surplus_time_per_flop
      / (chips * q.flops_efficiency),
      "prompt tokens a replica can take in per second when prefill is compute-bound",
      lecture("1:41:50", "1:43:20"),
      ("attention at chip_flops unless its format is slower",),
      topic=TOPIC),
    R("prefill_cost_per_token",
      q.prefill_cost_per_token * q.prefill_tokens_per_second, chips * q.chip_price,
      "chip rental per prompt token at the prefill rate",
      lecture("1:47:43", "1:48:59"),
      ("the chips are rented for the whole prefill",),
      topic=TOPIC),
    R("price_ratio_is_cost_ratio",
      q.cost_per_token, q.output_input_price_ratio * q.prefill_cost_per_token,
      "with the same margin on both, output over input price is decode over prefill cost "
      "per token",
      lecture("1:41:33", "1:48:59"),
      ("prices proportional to cost, with one margin for input and output",),
      topic=TOPIC),
)

__all__ = ["RELATIONS", "TOPIC"]
