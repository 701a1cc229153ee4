"""Section 1 of the lecture (0:00-32:09): how batch size sets cost and speed.

A decode step reads every weight once and each sequence's KV cache once, and
multiplies every active weight by every token in the batch. Time is bounded
below by the slower of compute and memory traffic (a roofline), so the batch
size trades latency against cost.
"""

from __future__ import annotations

from chalk.knowledge.quantities import BY_NAME, q
from chalk.symbolic.relations import Condition, Relation, Source, definition, lecture
from chalk.symbolic.variables import count, unit_constant
from sympy import Integer, Max

TOPIC = "batch size, cost and latency"

chips = count(BY_NAME["n_chips"])
domain = count(BY_NAME["scale_up_size"])
one_sequence = unit_constant("sequence").symbol

# Achieved over peak: the roofline bounds attainable FLOP/s by the peak (Williams et al.
# 2009); what an engine reaches of it is a measured fraction, for serving as MFU is for
# training (Chowdhery et al. 2022, PaLM, appendix B).
ROOFLINE_ACHIEVED = Source(
    "lecture 1:49-2:34 (the chips share the matmuls); Williams, Waterman and Patterson "
    "2009, 'Roofline', CACM 52(4) (attainable FLOP/s at most the peak); Chowdhery et al. "
    "2022, PaLM, arXiv:2204.02311, appendix B (model FLOPs utilisation: achieved over "
    "peak)", "paper")
BANDWIDTH_ACHIEVED = Source(
    "lecture 1:17:28-1:18:14 (the chips read in parallel); Databricks, 'LLM Inference "
    "Performance Engineering: Best Practices' (2023-10-12), 'model bandwidth utilization' "
    "(achieved over peak memory bandwidth)", "paper")

RELATIONS = (
    Relation(
        "flops_per_token",
        q.flops_per_token, q.active_params * q.flops_per_param,
        "forward-pass work per token: every active parameter, times the FLOPs counted for it",
        lecture("3:19", "4:04"),
        topic=TOPIC,
    ),
    Relation(
        "weight_bytes",
        q.weight_bytes, q.total_params * q.bytes_per_param,
        "bytes of weights to read: all parameters at the storage precision",
        lecture("5:16", "5:30"),
        topic=TOPIC,
    ),
    Relation(
        "replica_flops",
        q.replica_flops, chips * q.chip_flops * q.flops_efficiency,
        "the chips of one replica share each step's matmuls, each at the fraction of its "
        "peak the engine achieves",
        ROOFLINE_ACHIEVED,
        ("work spreads evenly over the chips",
         "flops_efficiency 1 (the conventions): peak FLOP/s, so times are lower bounds"),
        topic=TOPIC,
    ),
    Relation(
        "replica_hbm_bandwidth",
        q.replica_hbm_bandwidth, chips * q.hbm_bandwidth * q.hbm_bandwidth_efficiency,
        "the chips of one replica read their shares of weights and KV in parallel, each at "
        "the fraction of its peak bandwidth the engine achieves",
        BANDWIDTH_ACHIEVED,
        ("weights and KV spread evenly over the chips",
         "hbm_bandwidth_efficiency 1 (the conventions): peak bandwidth, so times are lower "
         "bounds"),
        topic=TOPIC,
    ),
    Relation(
        "hardware_intensity",
        q.hardware_intensity, q.chip_flops / q.hbm_bandwidth,
        "FLOPs a chip can do per byte it reads from HBM",
        lecture("17:50", "18:45"),
        ("peak dense FLOP/s at the compute precision", "peak HBM bandwidth"),
        topic=TOPIC,
    ),
    Relation(
        "sparsity_factor",
        q.sparsity_factor, q.total_params / q.active_params,
        "how many parameters exist per parameter a token uses",
        lecture("19:25", "19:35"),
        topic=TOPIC,
    ),
    Relation(
        "t_compute_per_sequence",
        q.t_compute_per_sequence,
        q.verify_tokens_per_step * (q.flops_per_token + q.attention_flops_per_token)
        / q.replica_flops
        + q.verify_tokens_per_step * q.attention_flops_per_token
        * q.attention_surplus_time_per_flop / (chips * q.flops_efficiency),
        "compute time one sequence adds to a step: the tokens it runs through the model "
        "(its new one, and any drafted ones to verify) times every active weight, plus their "
        "attention over the sequence's context, attention in its own format",
        lecture("3:19", "4:04"),
        ("attention FLOPs count where the model's attention shape is known; the conventions "
         "leave them out otherwise (attention_flops_per_token = 0)",
         "the n_chips share the work evenly at the replica's achieved FLOP/s",
         "attention runs at chip_flops unless its format is slower: each attention FLOP "
         "then takes attention_surplus_time_per_flop more (0 in the conventions; "
         "knowledge/precision.py)"),
        topic=TOPIC,
    ),
    Relation(
        "t_compute",
        q.t_compute, q.batch_size * q.t_compute_per_sequence,
        "matmul time of one step grows linearly with the batch",
        lecture("8:36", "8:53"),
        topic=TOPIC,
    ),
    Relation(
        "t_weight_fetch",
        q.t_weight_fetch, q.weight_bytes / q.replica_hbm_bandwidth,
        "time to read every weight (all experts) from HBM once: the lecture's weight term, "
        "which a step reaches once its tokens touch every expert",
        lecture("5:16", "5:30"),
        ("every weight is read, every expert and the input-embedding table included",
         "the weights are spread evenly over n_chips"),
        topic=TOPIC,
    ),
    Relation(
        "t_kv_per_sequence",
        q.t_kv_per_sequence,
        q.kv_bytes_per_sequence * q.kv_cache_copies / q.replica_hbm_bandwidth,
        "time to read one sequence's whole KV cache once, each chip reading its own copy "
        "where the attention group holds several",
        lecture("5:30", "5:56"),
        ("dense attention: KV traffic grows linearly with context (kv_bytes_per_sequence)",
         "kv_cache_copies 1 (the conventions' kv_extra_copies 0) unless an attention "
         "group has more chips than KV heads (knowledge/kv_sharding.py)"),
        topic=TOPIC,
    ),
    Relation(
        "t_kv_fetch",
        q.t_kv_fetch, q.batch_size * q.t_kv_per_sequence,
        "every sequence in the batch reads its own KV cache each step",
        lecture("9:09", "9:23"),
        topic=TOPIC,
    ),
    Relation(
        "t_memory",
        q.t_memory, q.t_weight_fetch_touched + q.t_kv_fetch,
        "HBM traffic time: the weights the step reads plus the KV cache",
        lecture("7:54", "9:44"),
        ("a mixture-of-experts step reads only the experts its tokens pick "
         "(t_weight_fetch_touched); with every expert read it is t_weight_fetch without the "
         "input-embedding table",),
        topic=TOPIC,
    ),
    Relation(
        "step_time",
        q.step_time, Max(q.t_compute, q.t_memory) + q.t_ep_comm + q.t_draft,
        "a step takes as long as the slower of compute and memory traffic (roofline), then "
        "waits for the expert-parallel all-to-all it does not hide; with speculative "
        "decoding the draft runs first",
        Source("lecture 2:34-3:19 (the roofline); the all-to-all on the critical path: "
               "lecture 34:48-36:50 and DeepSeek-V3, arXiv:2412.19437, sec. 3.4.2; the draft "
               "before the verifying step: Leviathan et al. 2023, arXiv:2211.17192, sec. 3.4",
               "paper"),
        ("compute and memory traffic overlap perfectly",
         "the exposed all-to-all runs after them (t_ep_comm; 0 without expert "
         "parallelism)",
         "the draft's steps run before the target's and do not overlap it (t_draft; 0 "
         "without a draft model)"),
        regimes=(("compute-bound", q.t_compute), ("memory-bound", q.t_memory)),
        topic=TOPIC,
    ),
    Relation(
        "critical_batch_size",
        q.critical_batch_size * q.decode_tokens_per_step * q.flops_per_param,
        q.hardware_intensity * q.bytes_per_param * q.sparsity_factor,
        "batch at which weight matmuls take as long as reading the weights",
        lecture("16:17", "19:25"),
        ("KV-cache traffic is left out of the balance",),
        topic=TOPIC,
    ),
    Relation(
        "latency_floor",
        q.latency_floor, q.weight_bytes / (domain * q.hbm_bandwidth),
        "no step is faster than reading all weights once with the whole scale-up domain",
        lecture("10:02", "10:44"),
        ("weights sharded over every chip of the scale-up domain (1:17:00-1:18:26)",),
        topic=TOPIC,
    ),
    Relation(
        "cost_per_token",
        q.cost_per_token,
        q.step_time * chips * q.chip_price / (q.batch_size * q.decode_tokens_per_step),
        "chip rental for one step divided by the tokens the step produces",
        lecture("12:58", "13:37"),
        ("the chips are rented for the whole step",),
        topic=TOPIC,
    ),
    Relation(
        "cost_per_token_floor",
        q.cost_per_token_floor * q.chip_flops, q.flops_per_token * q.chip_price,
        "cost per token once weight reads are amortised away: the compute cost alone",
        lecture("15:01", "15:38"),
        ("compute-bound at peak FLOP/s",),
        topic=TOPIC,
    ),
    Relation(
        "hbm_drain_time",
        q.hbm_drain_time, q.hbm_capacity / q.hbm_bandwidth,
        "time to read the whole of HBM once; sets the ~20 ms step the lecture calls the train",
        lecture("23:46", "24:42"),
        topic=TOPIC,
    ),
    Relation(
        "worst_case_latency",
        q.worst_case_latency, Integer(2) * q.step_time,
        "a request that just missed a step waits one step, then rides the next",
        lecture("22:21", "23:46"),
        ("steps start on a fixed schedule whether or not the batch is full",),
        topic=TOPIC,
    ),
    Relation(
        "tokens_per_second",
        q.tokens_per_second, q.batch_size * q.decode_tokens_per_step / q.step_time,
        "a deployment emits one batch of tokens per step",
        lecture("26:24", "27:29"),
        topic=TOPIC,
    ),
    Relation(
        "tokens_per_second_per_user",
        q.tokens_per_second_per_user * q.step_time, q.decode_tokens_per_step * one_sequence,
        "each sequence in the batch gets its tokens once per step, whatever the batch",
        lecture("26:24", "27:29"),
        topic=TOPIC,
    ),
    Relation(
        "context_crossover",
        q.context_crossover * q.kv_bytes_per_token * q.hardware_intensity,
        one_sequence * q.decode_tokens_per_step * q.flops_per_token,
        "context length at which reading a sequence's KV cache takes as long as its matmuls",
        lecture("11:11", "11:47"),
        ("weight reads are amortised by a large batch and left out (1:36:03-1:38:33)",),
        topic=TOPIC,
    ),
)

# Bounds no relation forces, flagged when an answer breaks them (solvers.records.flags).
CONDITIONS = (
    Condition(
        "whole_sequences",
        "batch_size", ">=", one_sequence,
        "a batch holds whole sequences; check that tokens_per_second is the deployment's "
        "throughput, not one user's speed (tokens_per_second_per_user)",
        definition("a batch is a count of sequences"),
        topic=TOPIC,
    ),
)

__all__ = ["CONDITIONS", "RELATIONS", "TOPIC", "definition"]
