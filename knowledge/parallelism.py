"""Sections 3-4 of the lecture (47:12-1:18:37): pipelines across racks and memory capacity.

Cutting the model between layers and putting each stage on its own rack sends
one activation per token across the slow scale-out network, while the MoE
layers inside a stage send many over the fast scale-up network; the cut is
cheap when the scale-up traffic dominates. Pipelining divides the weights over
the racks, but keeping P stages busy needs P micro-batches in flight, so the KV
cache per chip does not shrink.
"""

from __future__ import annotations

from chalk.knowledge.quantities import BY_NAME, q
from chalk.symbolic.relations import Condition, Source, lecture
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.variables import count, unit_constant
from sympy import Integer, floor

TOPIC = "pipelining and memory capacity"

one_sequence = unit_constant("sequence").symbol
chips = count(BY_NAME["n_chips"])
stage_chips = count(BY_NAME["chips_per_stage"])
# The weights a replica holds: one copy of every weight, plus each data-parallel attention
# group's own copy of the attention weights (knowledge/tensor_parallel.py). Memory demand,
# the largest batch and the weights' share of HBM all count the same bytes.
held_weights = q.weight_bytes + q.replicated_attention_params * q.bytes_per_param

# An engine keeps part of HBM for itself (CUDA context, activations, fragmentation): vLLM
# fills gpu_memory_utilization of it (default 0.9) with weights and the KV cache.
USABLE_HBM = Source(
    "lecture 1:04:22-1:05:13 (weights and KV must fit in HBM); vLLM engine arguments, "
    "--gpu-memory-utilization ('the fraction of GPU memory to be used for the model "
    "executor', default 0.9), docs.vllm.ai/en/latest/configuration/engine_args.html",
    "paper")

# floor(x) is the greatest whole number at or below x: a batch that must fit rounds down.
ROUNDED_DOWN = Source(
    "Graham, Knuth and Patashnik, 'Concrete Mathematics', 2nd ed. 1994, sec. 3.1 (the "
    "floor: the greatest integer <= x); a batch stays within the HBM that holds it only if "
    "its count is rounded down, never up", "book")

RELATIONS = (
    R("scale_up_out_time_ratio",
      q.scale_up_out_time_ratio,
      Integer(2) * q.scale_out_bandwidth / q.scale_up_bandwidth * q.n_active_experts
      * q.layers_per_stage,
      "time on scale-up over time on scale-out at a pipeline cut; the cut is cheap when it "
      "is at least 1",
      lecture("50:44", "53:09"),
      ("one activation crosses the cut per token; each MoE layer sends it to n_active "
       "experts and back",),
      topic=TOPIC),
    R("pipeline_latency_added",
      q.pipeline_latency_added, q.pipeline_stages * q.pipeline_hop_latency,
      "each decode step crosses every rack boundary once, wrap-around included",
      lecture("1:15:16", "1:16:32"),
      ("hops are sequential within a step",),
      topic=TOPIC),
    R("pipeline_bubble_fraction",
      q.pipeline_bubble_fraction * (q.n_micro_batches + q.pipeline_stages - 1),
      q.pipeline_stages - 1,
      "in training, each stage idles while the first micro-batch fills the pipeline and the "
      "last one drains it: (P - 1) of (M + P - 1) slots",
      Source("Huang et al. 2019, 'GPipe', arXiv:1811.06965, sec. 2.3; lecture 58:55-1:00:48",
             "paper"),
      ("forward then backward for the whole batch (no interleaving)",),
      topic=TOPIC),
    R("micro_batch_is_step_batch",
      q.micro_batch_size, q.batch_size,
      "each decode step a stage works on one micro-batch: the batch of the step-time and "
      "cost relations is the micro-batch (and, without pipelining, the whole batch)",
      lecture("1:08:45", "1:10:14"),
      ("stages are balanced, so every stage's step takes the same time",),
      topic=TOPIC),
    R("global_batch_size",
      q.global_batch_size, q.pipeline_stages * q.micro_batch_size,
      "P stages stay busy only with P micro-batches in flight",
      lecture("1:08:45", "1:10:14"),
      topic=TOPIC),
    R("replica_chips",
      chips, q.pipeline_stages * stage_chips,
      "a replica is its pipeline stages side by side, each on its own chips (one rack each "
      "in the lecture)",
      lecture("1:05:37", "1:06:57"),
      ("every stage has the same number of chips",),
      topic=TOPIC),
    R("memory_demand",
      q.memory_demand,
      held_weights + q.global_batch_size * q.kv_bytes_per_sequence * q.kv_cache_copies,
      "memory the whole system needs: all weights (with each data-parallel attention "
      "group's own copy of the attention weights) plus every sequence's KV cache, as many "
      "times as the attention groups hold it",
      lecture("1:04:32", "1:05:13"),
      ("replicated_attention_params 0 (the conventions) unless attention is data-parallel "
       "(knowledge/tensor_parallel.py)",
       "kv_cache_copies 1 (the conventions' kv_extra_copies 0) unless a group has more "
       "chips than KV heads (knowledge/kv_sharding.py)"),
      topic=TOPIC),
    R("memory_per_chip",
      q.memory_per_chip * q.pipeline_stages * stage_chips, q.memory_demand,
      "weights and KV shard evenly over the replica's P stages of C chips; with P "
      "micro-batches in flight, the KV share per chip is B x KV / C, whatever P",
      lecture("1:05:37", "1:11:58"),
      ("perfect sharding of weights and contexts",),
      topic=TOPIC),
    R("max_batch_size",
      q.max_batch_size * q.pipeline_stages * q.kv_bytes_per_sequence * q.kv_cache_copies,
      q.pipeline_stages * stage_chips * q.usable_hbm_fraction * q.hbm_capacity
      - held_weights,
      "the largest batch that fits: the usable HBM of the P stages of C chips the weights "
      "(and any extra attention copies) leave, over the KV cache of each sequence in flight "
      "(with its copies), P micro-batches of it (memory_fill = 1 in memory_demand)",
      USABLE_HBM,
      ("every sequence holds the whole context's KV cache",
       "kv_cache_copies 1 (the conventions' kv_extra_copies 0) unless a group has more "
       "chips than KV heads",
       "usable_hbm_fraction 1 (the conventions): all of HBM holds weights and KV"),
      topic=TOPIC),
    R("max_whole_batch_size",
      q.max_whole_batch_size, floor(q.max_batch_size / one_sequence) * one_sequence,
      "the largest whole batch that fits: the continuous count rounded down",
      ROUNDED_DOWN,
      ("a sequence's KV cache is held whole",
       "rounding down keeps the batch within the HBM; rounding up would overfill it"),
      topic=TOPIC),
    R("weight_fill",
      q.weight_fill * q.pipeline_stages * stage_chips * q.usable_hbm_fraction
      * q.hbm_capacity, held_weights,
      "share of the usable HBM of the replica's P stages of C chips the weights alone take, "
      "before any KV cache: all weights, with each data-parallel attention group's own copy "
      "of the attention weights",
      USABLE_HBM,
      ("weights shard evenly over the chips",
       "replicated_attention_params 0 (the conventions) unless attention is data-parallel "
       "(knowledge/tensor_parallel.py)",
       "usable_hbm_fraction 1 (the conventions): all of HBM holds weights and KV"),
      topic=TOPIC),
    R("memory_fill",
      q.memory_fill, q.memory_per_chip / (q.usable_hbm_fraction * q.hbm_capacity),
      "fraction of a chip's usable HBM the deployment needs; above 1 it does not fit",
      USABLE_HBM,
      ("usable_hbm_fraction 1 (the conventions): all of HBM holds weights and KV",),
      topic=TOPIC),
)

# Bounds no relation forces, flagged when an answer breaks them (solvers.records.flags); memory
# is reported beside every serving or parallelism answer whose pins determine it.
SHOWN_WITH = ("serving", "parallelism")
CONDITIONS = (
    Condition("fits_in_memory", "memory_fill", "<=", Integer(1),
              "the weights and KV cache this needs do not fit in the chips' HBM",
              lecture("1:04:22", "1:04:32"), topic=TOPIC, reported_with=SHOWN_WITH),
    Condition("weights_fit", "weight_fill", "<=", Integer(1),
              "the weights alone do not fit in the chips' HBM, before any KV cache",
              lecture("1:04:22", "1:05:13"), topic=TOPIC, reported_with=SHOWN_WITH),
)
