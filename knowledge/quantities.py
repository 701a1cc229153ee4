"""Every quantity chalk knows, declared once with its public name and unit.

Names and units follow the project vocabulary (docs/VOCABULARY.md); they are a
public interface and do not change once shipped.
"""

from __future__ import annotations

from chalk.symbolic.variables import Variable


def _v(name, unit, description, topic, **options) -> Variable:
    return Variable(name=name, unit=unit, description=description, topic=topic,
                    derived=name in DERIVED, structural=name in STRUCTURAL, **options)


# Quantities relations normally compute; the rest are inputs a user or preset pins.
DERIVED = frozenset("""
flops_per_token weight_bytes replica_flops replica_hbm_bandwidth
prefill_attention_flops_per_token attention_surplus_time_per_flop
hbm_drain_time hardware_intensity sparsity_factor t_compute_per_sequence t_kv_per_sequence
t_compute t_weight_fetch t_kv_fetch t_memory step_time critical_batch_size latency_floor
tokens_per_second tokens_per_second_per_user cost_per_token cost_per_token_floor
context_crossover worst_case_latency
output_input_price_ratio long_context_price_ratio decode_mfu_ratio tier_drain_time
cache_read_price_ratio
chinchilla_tokens overtrain_factor train_flops training_time memory_per_chip
scale_up_out_time_ratio pipeline_latency_added global_batch_size memory_demand memory_fill
weight_fill chips_per_stage micro_batch_size
experts_per_chip alltoall_bytes_per_token t_alltoall tokens_per_step tokens_run_per_step
experts_touched
params_read t_weight_fetch_touched unread_expert_fraction t_ep_comm rl_compute
inference_compute rl_cost_ratio
inference_cost_ratio kv_elements_per_layer kv_window_bytes_per_sequence
kv_bytes_per_sequence kv_tokens_read sparse_context_crossover remat_cost_per_token
hold_cost_per_token retrieve_cost_per_token tier_cost_per_token tier_cost_per_byte_hour
cache_storage_price cache_price_per_byte_hour step_time_fast t_compute_fast t_memory_fast
cost_per_token_fast fast_batch_ratio pipeline_bubble_fraction loss inference_tokens
tp_allreduce_bytes t_allreduce t_tp_comm step_time_with_comm
attention_width attention_intensity attention_flops_per_token prefill_flops_per_token
time_to_first_token prefill_tokens_per_second prefill_cost_per_token
train_tokens_per_chip t_train_compute t_train_dp_comm t_train_fsdp_comm t_train_tp_comm
t_train_ep_comm train_dp_comm_ratio train_fsdp_comm_ratio train_tp_comm_ratio
train_ep_comm_ratio train_dp_critical_tokens_per_chip train_fsdp_critical_tokens_per_chip
attention_layer_params dense_mlp_params expert_mlp_params input_embedding_params
moe_shared_params
decoded_tokens t_prefill_compute t_prefill_memory time_per_output_token request_latency
t_request_decode replica_time_per_request requests_per_second output_tokens_per_second
output_tokens_per_second_per_chip request_cost_per_token prefill_requests_per_second
decode_requests_per_second disaggregated_requests_per_second
disaggregated_tokens_per_second_per_chip
decode_tokens_per_step verify_tokens_per_step t_draft_step t_draft
replicas fleet_chips fleet_tokens_per_second replicas_needed chips_needed fleet_chips_needed
replicated_attention_params attention_tensor_parallelism
kv_heads_per_chip kv_elements_per_chip kv_cache_copies kv_extra_copies
max_batch_size max_whole_batch_size
t_chunk_compute t_chunk_memory mixed_step_time prefill_chunks chunked_time_to_first_token
chunked_time_per_output_token
""".split())

# Whole-number counts of a model's config (config.json): a model preset states them, and
# no serving figure (a KV size, a step time) may re-derive them.
STRUCTURAL = frozenset("""
n_layers n_kv_layers n_local_layers n_global_layers n_dense_layers n_moe_layers
n_heads n_kv_heads d_head d_model d_ff moe_d_ff vocab_size untied_embeddings
n_experts n_active_experts n_shared_experts
kv_lora_rank q_lora_rank qk_rope_head_dim qk_nope_head_dim v_head_dim
""".split())


HARDWARE = "hardware"
MODEL = "model"
SERVING = "serving"
PRICES = "prices"
TIERS = "memory tiers"
TRAINING = "training"
PARALLELISM = "parallelism"
MOE = "mixture of experts"
ARCHITECTURE = "architecture"
REQUESTS = "whole requests"
SPECULATIVE = "speculative decoding"
FLEET = "fleets"

VARIABLES: tuple[Variable, ...] = (
    # Hardware
    _v("chip_flops", "FLOP/s", "peak dense throughput of one chip for the weight matmuls, at "
       "their format (the precision preset's)",
       HARDWARE, typical=1e15),
    # A chip's datasheet peaks per number format: a chip preset states each one it has,
    # and chip_flops is the one the weight matmuls run at: the format a precision preset
    # states (knowledge/precision.py), else the chip preset's own.
    _v("chip_flops_bf16", "FLOP/s", "dense BF16 matmul peak of one chip (datasheet)", HARDWARE,
       typical=1e15),
    _v("chip_flops_fp8", "FLOP/s", "dense FP8 matmul peak of one chip (datasheet)", HARDWARE,
       typical=2e15),
    _v("chip_flops_fp4", "FLOP/s", "dense FP4 matmul peak of one chip (datasheet)", HARDWARE,
       typical=9e15),
    # Precision per part: the weight matmuls run at chip_flops, attention at its own peak;
    # each is the share-weighted harmonic mean of the format peaks (knowledge/precision.py).
    _v("attention_chip_flops", "FLOP/s", "peak dense throughput of one chip for attention's "
       "products, at the format(s) they run in (chip_flops unless stated)", HARDWARE,
       typical=1e15),
    # typical shares put the weight matmuls mostly in FP4 and attention in BF16/FP8, so that
    # at the typical values attention is the slower part (attention_surplus_time_per_flop
    # positive), as the relations need
    *(_v(f"matmul_{fmt}_share", "1", f"share of the weight-matmul FLOPs run in {fmt.upper()} "
         "(a precision preset states them)", HARDWARE, allow_zero=True, upper=1,
         typical=typical, scale_like=False)
      for fmt, typical in (("bf16", 0.2), ("fp8", 0.2), ("fp4", 0.6))),
    *(_v(f"attention_{fmt}_share", "1", f"share of the attention FLOPs run in {fmt.upper()}",
         HARDWARE, allow_zero=True, upper=1, typical=0.5, scale_like=False)
      for fmt in ("bf16", "fp8")),
    _v("attention_surplus_time_per_flop", "s/FLOP", "time one chip takes per attention FLOP "
       "beyond the weight matmuls' peak: 1/attention_chip_flops - 1/chip_flops (0: attention "
       "at chip_flops)", HARDWARE, allow_zero=True, typical=5e-16),
    _v("hbm_bandwidth", "byte/s", "HBM bandwidth of one chip", HARDWARE,
       aliases=("mem_bw", "memory_bandwidth"), typical=4e12),
    _v("hbm_capacity", "byte", "HBM capacity of one chip", HARDWARE, typical=1e11),
    # What a serving engine achieves of the datasheet figures: 1 (the conventions) keeps
    # every answer a bound; a fit to measurements (issue 24) states them per chip and engine.
    _v("flops_efficiency", "1", "achieved FLOP/s of a serving step over the peak at its "
       "format (1: the roofline bound; training's counterpart is mfu)", SERVING, upper=1,
       typical=0.5),
    _v("hbm_bandwidth_efficiency", "1", "achieved HBM bandwidth of a serving step over the "
       "datasheet peak (1: the roofline bound)", SERVING, upper=1, typical=0.8),
    _v("scale_up_bandwidth_efficiency", "1", "achieved scale-up bandwidth of a serving step's "
       "collectives (all-to-all, all-reduce) over the datasheet peak (1: the bound)", SERVING,
       upper=1, typical=0.7),
    _v("usable_hbm_fraction", "1", "share of each chip's HBM the engine may fill with weights "
       "and KV cache (the rest: runtime, activations, fragmentation)", SERVING, upper=1,
       typical=0.9),
    _v("hbm_drain_time", "s", "time to read all of one chip's HBM once (capacity/bandwidth)",
       HARDWARE, typical=0.02),
    _v("hardware_intensity", "FLOP/byte", "chip_flops / hbm_bandwidth (about 300 in the lecture)",
       HARDWARE, aliases=("flops_per_byte",), typical=300),
    _v("scale_up_size", "chip", "chips in one scale-up domain (NVLink / ICI)", HARDWARE,
       typical=72),
    _v("scale_up_bandwidth", "byte/s", "scale-up bandwidth of one chip, one direction", HARDWARE,
       typical=9e11),
    _v("scale_out_bandwidth", "byte/s", "scale-out (NIC) bandwidth of one chip, one direction",
       HARDWARE, typical=5e10),
    _v("chip_price", "USD/hour", "rental price of one chip", HARDWARE, typical=3),
    _v("n_chips", "chip", "chips that hold one serving replica of the model and share each "
       "step (every pipeline stage included; the training cluster is training_chips)",
       HARDWARE, typical=72),
    # Model
    _v("total_params", "param", "all parameters, every expert included", MODEL,
       aliases=("n_total",), typical=1e12),
    _v("active_params", "param", "parameters used per token", MODEL, aliases=("n_active",),
       typical=1e11),
    _v("sparsity_factor", "1", "total_params / active_params", MODEL, lower=1,
       aliases=("sparsity",), typical=8),
    _v("bytes_per_param", "byte/param", "weight storage precision", MODEL, typical=1),
    _v("flops_per_param", "FLOP/param/token",
       "forward-pass work per parameter per token: 2 (multiply and add); the lecture counts 1",
       MODEL, typical=2),
    _v("flops_per_token", "FLOP/token", "forward-pass FLOPs per token: active_params x "
       "flops_per_param", MODEL, typical=2e11),
    _v("weight_bytes", "byte", "bytes of all weights: total_params x bytes_per_param", MODEL,
       typical=1e12),
    _v("replica_flops", "FLOP/s", "FLOP/s the n_chips serving one replica achieve (their "
       "peak times flops_efficiency)", HARDWARE,
       typical=7e16),
    _v("replica_hbm_bandwidth", "byte/s", "HBM bandwidth the n_chips serving one replica "
       "achieve (their peak times hbm_bandwidth_efficiency)",
       HARDWARE, typical=3e14),
    _v("kv_bytes_per_token", "byte/token", "KV-cache bytes one token of context occupies, "
       "all layers", MODEL, aliases=("kv_bytes",), typical=1e5),
    _v("n_layers", "1", "transformer layers", MODEL, typical=60),
    _v("n_heads", "1", "query heads per attention layer", MODEL, typical=64),
    _v("n_kv_heads", "1", "KV heads per attention layer", MODEL, typical=8),
    _v("d_head", "1", "head dimension", MODEL, typical=128),
    _v("kv_bytes_per_element", "byte", "storage size of one K or V element (2 for bf16)", MODEL,
       typical=2),
    _v("n_experts", "1", "routed experts per MoE layer", MODEL, typical=256),
    _v("n_active_experts", "1", "routed experts each token goes to", MODEL, typical=8),
    # Serving: one decode step
    _v("batch_size", "sequence", "sequences that each get new tokens in one step", SERVING,
       aliases=("batch",), typical=64),
    _v("context_length", "token", "tokens of context each sequence attends to", SERVING,
       aliases=("context",), typical=1e5),
    _v("decode_tokens_per_step", "token/sequence",
       "tokens each sequence gains per decode step: 1, more with multi-token prediction or "
       "speculative decoding", SERVING, lower=1, typical=1),
    _v("t_compute_per_sequence", "s/sequence", "matmul time each sequence adds to a step",
       SERVING, typical=1e-5),
    _v("t_kv_per_sequence", "s/sequence", "time to read one sequence's KV cache once", SERVING,
       typical=1e-5),
    _v("t_compute", "s", "time for the weight matmuls of a step", SERVING, typical=0.02),
    _v("t_weight_fetch", "s", "time to read the weights from HBM: all of them, every expert "
       "included (the step reads t_weight_fetch_touched)", SERVING, typical=0.02),
    _v("t_kv_fetch", "s", "time to read the batch's KV cache from HBM", SERVING, typical=0.02),
    _v("t_memory", "s", "HBM traffic of a step: the weights it reads (t_weight_fetch_touched) "
       "plus t_kv_fetch", SERVING, typical=0.02),
    _v("step_time", "s", "time of one decode step: max(t_compute, t_memory) plus the "
       "expert-parallel all-to-all left exposed (t_ep_comm)", SERVING, typical=0.02),
    _v("critical_batch_size", "sequence", "batch at which t_compute = t_weight_fetch", SERVING,
       typical=2000),
    _v("latency_floor", "s", "step time as the batch goes to zero: the weights read once over "
       "the whole scale-up domain", SERVING, typical=0.005),
    _v("tokens_per_second", "token/s", "throughput of one deployment", SERVING, typical=1e5),
    _v("tokens_per_second_per_user", "token/s", "decode speed one sequence (one user's "
       "stream) sees: its tokens per step over the step time", SERVING, typical=50),
    _v("cost_per_token", "USD/token", "chip time per step times price, per token produced",
       SERVING, typical=1e-7),
    _v("cost_per_token_floor", "USD/token", "cost per token when compute-bound, the lowest any "
       "batch can reach", SERVING, typical=1e-7),
    _v("context_crossover", "token", "context length at which t_kv_fetch = t_compute", SERVING,
       typical=2e5),
    _v("worst_case_latency", "s", "wait for the next step to start plus the step itself",
       SERVING, typical=0.04),
    # Prices
    _v("price_input", "USD/token", "price of an input (prefill) token", PRICES, typical=2e-6),
    _v("price_output", "USD/token", "price of an output (decode) token", PRICES, typical=1e-5),
    _v("output_input_price_ratio", "1", "price_output / price_input", PRICES, typical=5),
    _v("long_context_threshold", "token", "context length where a higher price tier starts",
       PRICES, typical=2e5),
    _v("long_context_price_ratio", "1", "price above the threshold / price below", PRICES,
       lower=1, typical=1.5),
    _v("price_cache_read", "USD/token", "price of a cached input token", PRICES, typical=2e-7),
    # typical: most price sheets (knowledge/data/price_sheets.yaml) charge a cache hit a
    # tenth of a fresh input token, as the typical prices above do (2e-7 / 2e-6)
    _v("cache_read_price_ratio", "1", "price_cache_read / price_input: what a cache hit "
       "costs against a fresh input token", PRICES, typical=0.1),
    # typical: a one-hour write, twice the typical input price (Anthropic's multiplier,
    # shared/reference). Near 1x the write premium, and the storage price it pays, almost
    # vanish, and the model's reference point would sit on that edge (it did, at 1x).
    _v("price_cache_write", "USD/token", "price of writing a token to the prompt cache", PRICES,
       typical=4e-6),
    _v("cache_hold_time", "s", "how long a cache write is kept (5 min, 1 h)", PRICES,
       typical=300),
    _v("decode_mfu_ratio", "1", "decode FLOP utilisation relative to prefill", PRICES, upper=1,
       typical=0.2),
    # Memory tiers
    # typical: the tier the typical prices point to through cache_read_price_is_cost_ratio
    # (knowledge/pricing.py), so that the typical values can all hold at once. A hit at a
    # tenth of the input price, against a recompute of about 2e-7 USD/token (the typical
    # model and chip), reads a token's 1e5 bytes back for about 2e-8 USD, that is
    # 1e5 / 2e-8 = 5e12 bytes per USD; at 1 USD/hour (1e-12 USD/byte/hour over 1e12 bytes,
    # tier_cost_per_byte_hour's typical) that is 5e12 bytes an hour, 1.4e9 byte/s, so 1e9.
    # The tiers in knowledge/data/memory_tiers.yaml read 1e14-1e16 bytes per USD: at one
    # margin a tenth is far above their cost, which is what the relation lets a user see.
    _v("tier_capacity", "byte", "capacity of one unit of a memory tier", TIERS, typical=1e12),
    _v("tier_bandwidth", "byte/s", "read bandwidth of that unit", TIERS, typical=1e9),
    _v("tier_drain_time", "s", "tier_capacity / tier_bandwidth", TIERS, typical=1000),
    _v("tier_price", "USD/hour", "rental price of that unit", TIERS, typical=1),
    _v("hold_time", "s", "how long a KV-cache entry is kept", TIERS, typical=300),
    # Training and the model's lifetime
    _v("pretrain_tokens", "token", "pre-training data", TRAINING, typical=1e13),
    _v("rl_tokens", "token", "RL rollout tokens", TRAINING, typical=1e13),
    _v("inference_tokens", "token", "tokens served over the deployment", TRAINING, typical=1e14),
    _v("serving_rate", "token/s", "one model's global traffic", TRAINING, typical=5e7),
    _v("deployment_time", "s", "how long the model is served", TRAINING, typical=5e6),
    _v("chinchilla_tokens_per_param", "token/param", "compute-optimal tokens per parameter (20)",
       TRAINING, typical=20),
    _v("chinchilla_tokens", "token", "compute-optimal pre-training data for active_params",
       TRAINING, typical=2e12),
    _v("overtrain_factor", "1", "pretrain_tokens / chinchilla_tokens", TRAINING, typical=10),
    _v("rl_flops_per_param", "FLOP/param/token",
       "RL work per parameter per token: 2 (no training on rollouts) to 6", TRAINING, typical=4),
    _v("decode_inefficiency", "1", "training MFU / decode MFU", TRAINING, typical=3),
    _v("train_flops", "FLOP", "pre-training compute (6 per active parameter per token)",
       TRAINING, typical=1e25),
    _v("mfu", "1", "achieved FLOP/s over peak FLOP/s", TRAINING, upper=1, typical=0.4),
    _v("training_time", "s", "train_flops / (training_chips x chip_flops x mfu)", TRAINING,
       typical=5e6),
    # Parallelism
    _v("expert_parallelism", "chip", "chips one MoE layer's experts are spread over",
       PARALLELISM, typical=64),
    _v("pipeline_stages", "1", "pipeline depth (racks)", PARALLELISM, lower=1, typical=4),
    _v("micro_batch_size", "sequence", "sequences per micro-batch: the batch one decode step "
       "carries through a pipeline stage (batch_size)", PARALLELISM, typical=2000),
    _v("chips_per_stage", "chip", "chips of one pipeline stage (all n_chips without "
       "pipelining)", PARALLELISM, lower=1, typical=64),
    _v("layers_per_stage", "1", "layers between two pipeline cuts", PARALLELISM, typical=15),
    _v("memory_per_chip", "byte", "weights plus KV cache held by one chip", PARALLELISM,
       typical=1e11),
    _v("scale_up_out_time_ratio", "1", "time on scale-up / time on scale-out at a pipeline cut",
       PARALLELISM, typical=2),
    _v("pipeline_hop_latency", "s", "latency of one rack-to-rack hop", PARALLELISM,
       typical=1e-3),
    _v("pipeline_latency_added", "s", "latency the rack-to-rack hops add to each decode step",
       PARALLELISM, typical=1e-2),
    _v("n_micro_batches", "1", "micro-batches per training batch in a pipelined step",
       PARALLELISM, typical=8),
    _v("pipeline_bubble_fraction", "1", "share of a pipelined training step a rack sits idle",
       PARALLELISM, allow_zero=True, upper=1, typical=0.3, scale_like=False),
    _v("global_batch_size", "sequence", "sequences in flight over all pipeline stages",
       PARALLELISM, typical=8000),
    _v("max_batch_size", "sequence", "the largest batch the replica's usable HBM holds: the "
       "room the weights leave over each sequence's KV cache (a continuous count)",
       PARALLELISM, typical=200),
    _v("max_whole_batch_size", "sequence", "the largest whole batch that fits: "
       "max_batch_size rounded down", PARALLELISM, lower=1, typical=200),
    _v("memory_demand", "byte", "weights plus KV cache of every sequence in flight",
       PARALLELISM, typical=1e13),
    _v("memory_fill", "1", "memory_per_chip over the usable HBM of a chip (usable_hbm_fraction "
       "x hbm_capacity): above 1 it does not fit",
       PARALLELISM, typical=0.5),
    _v("weight_fill", "1", "share of the chips' usable HBM the weights alone take: above 1 "
       "they do not fit", PARALLELISM, typical=0.3),
    # Mixture of experts on a rack
    _v("experts_per_chip", "1", "routed experts each chip holds under expert parallelism",
       MOE, typical=4),
    _v("d_model", "1", "model (residual stream) width", MODEL, typical=7168),
    _v("activation_bytes", "byte", "storage size of one activation element sent between chips",
       MOE, typical=2),
    _v("alltoall_bytes_per_token", "byte/token",
       "bytes one token sends and receives in the MoE all-to-alls of a forward pass", MOE,
       typical=1e6),
    _v("t_alltoall", "s", "time of a step's MoE all-to-all traffic on the scale-up network "
       "(0 when the experts are not spread over chips)", MOE, allow_zero=True, typical=1e-3),
    _v("alltoall_exposed_fraction", "1", "share of the all-to-all time not hidden under the "
       "step's compute or HBM traffic: 1 not overlapped, 0 fully overlapped", MOE,
       allow_zero=True, upper=1, typical=1, scale_like=False),
    _v("expert_load_imbalance", "1", "tokens the busiest expert-parallel chip sends and "
       "receives over the mean: 1 when routing spreads evenly", MOE, lower=1, typical=1.2,
       scale_like=False),
    _v("t_ep_comm", "s", "expert-parallel all-to-all time on a decode step's critical path",
       MOE, allow_zero=True, typical=1e-3),
    _v("attention_tensor_parallelism", "chip", "chips one attention layer's weights are "
       "split over (Megatron-style); each such group serves its own sequences",
       PARALLELISM, lower=1, typical=8),
    _v("attention_data_parallelism", "1", "groups of attention_tensor_parallelism chips in a "
       "pipeline stage (the replica without pipelining), each holding the stage's whole "
       "attention weights and serving its share of the batch (1: attention split over every "
       "chip of the stage)", PARALLELISM, lower=1, typical=1),
    _v("replicated_attention_params", "param", "attention weights held and read beyond one "
       "copy: one more copy per extra data-parallel attention group", PARALLELISM,
       allow_zero=True, typical=1e10),
    _v("kv_heads_per_chip", "1", "KV heads of one attention layer a chip of an attention "
       "group holds: the group's share of n_kv_heads, but at least one whole head",
       PARALLELISM, lower=1, typical=1),
    _v("kv_elements_per_chip", "1", "KV-cache elements of one layer a chip of an attention "
       "group holds per token: its KV heads' K and V, or the whole latent (MLA)",
       PARALLELISM, typical=256),
    _v("kv_extra_copies", "1", "copies of each sequence's KV cache a replica holds beyond "
       "the first: 0 while an attention group has no more chips than KV heads",
       PARALLELISM, allow_zero=True, typical=1, scale_like=False),
    _v("kv_cache_copies", "1", "copies of each sequence's KV cache a replica holds and each "
       "step reads: 1 while an attention group has no more chips than KV heads, more when "
       "its chips share heads", PARALLELISM, lower=1, typical=1, scale_like=False),
    _v("allreduces_per_layer", "1", "tensor-parallel all-reduces of the activations in one "
       "layer's forward pass (Megatron: 2, after attention and after the MLP)", PARALLELISM,
       allow_zero=True, typical=2),
    _v("moe_tensor_parallelism", "1", "ways each expert's matmuls are split over chips inside "
       "a stage (TensorRT-LLM's moe_tp_size): 1 when every chip holds whole experts",
       PARALLELISM, lower=1, typical=1),
    _v("tokens_per_step", "token", "tokens a step produces: batch times tokens per sequence",
       SERVING, typical=64),
    _v("tokens_run_per_step", "token", "tokens a step runs through the model: batch times "
       "the k + 1 verified per sequence (the tokens it produces without speculation)", MOE,
       typical=64),
    _v("experts_touched", "1", "expected distinct routed experts a step's tokens reach, per "
       "layer", MOE, typical=200),
    _v("unread_expert_fraction", "1", "expected share of a layer's routed experts no token of "
       "the step picks, whose weights the step does not read (0: every expert read)", MOE,
       allow_zero=True, upper=1, typical=0.1),
    _v("expert_params", "param", "parameters in routed experts (0 in a dense model)", MOE,
       allow_zero=True, typical=6e11),
    _v("dense_params", "param", "parameters every token multiplies by: attention, dense MLPs, "
       "shared experts, routers, the output head", MOE, typical=2e10),
    _v("params_read", "param", "parameters a step actually reads: dense ones plus the experts "
       "it touches", MOE, typical=6e11),
    _v("t_weight_fetch_touched", "s", "time to read only the weights a step touches", MOE,
       typical=0.02),
    # Training and the model's lifetime (beyond the vocabulary's names)
    _v("train_flops_per_param", "FLOP/param/token",
       "pre-training work per parameter per token: 6 (forward 2, backward 4)", TRAINING,
       typical=6),
    _v("rl_compute", "FLOP", "RL cost in training-equivalent FLOPs (decode inefficiency "
       "included)", TRAINING, typical=1e25),
    _v("inference_compute", "FLOP", "serving cost in training-equivalent FLOPs (decode "
       "inefficiency included)", TRAINING, typical=1e25),
    _v("rl_cost_ratio", "1", "rl_compute / train_flops (1 in the lecture's equal split)",
       TRAINING, typical=1),
    _v("inference_cost_ratio", "1", "inference_compute / train_flops (1 in the lecture's "
       "equal split)", TRAINING, typical=1),
    _v("training_chips", "chip", "chips in the pre-training cluster (not the serving n_chips "
       "of one replica)", TRAINING, typical=1e4),
    _v("loss", "1", "pre-training loss predicted by a scaling-law fit", TRAINING, typical=2.0),
    _v("fit_e", "1", "irreducible loss E of a Chinchilla-form fit", TRAINING, typical=1.7),
    _v("fit_a", "1", "parameter coefficient A of a Chinchilla-form fit", TRAINING,
       typical=400),
    _v("fit_b", "1", "data coefficient B of a Chinchilla-form fit", TRAINING, typical=400),
    _v("fit_alpha", "1", "parameter exponent alpha of a Chinchilla-form fit", TRAINING,
       typical=0.34, scale_like=False),
    _v("fit_beta", "1", "data exponent beta of a Chinchilla-form fit", TRAINING, typical=0.3,
       scale_like=False),
    # KV cache from architecture
    _v("n_kv_layers", "1", "layers that keep a KV cache over the whole context", MODEL,
       typical=60),
    _v("kv_elements_per_layer", "1", "K and V elements cached per token per such layer",
       MODEL, typical=2048),
    _v("kv_lora_rank", "1", "MLA latent width cached per token per layer", MODEL, typical=512),
    _v("qk_rope_head_dim", "1", "MLA decoupled RoPE key width cached per token per layer",
       MODEL, typical=64),
    _v("sliding_window", "token", "window of a local (sliding-window) attention layer", MODEL,
       typical=1024),
    _v("n_local_layers", "1", "sliding-window attention layers", MODEL, allow_zero=True,
       typical=30),
    _v("n_global_layers", "1", "full-context attention layers in a hybrid model", MODEL,
       typical=10),
    _v("kv_window_bytes_per_sequence", "byte/sequence",
       "KV bytes the sliding-window layers keep per sequence (fixed once context > window)",
       MODEL, typical=1e8, allow_zero=True),
    _v("kv_bytes_per_sequence", "byte/sequence", "KV-cache bytes one sequence holds", MODEL,
       typical=1e10),
    _v("kv_tokens_read", "token", "context tokens a sparse-attention step reads per sequence",
       MODEL, typical=1e4),
    _v("sparse_attention_scale", "token", "length s at which sparse attention reads "
       "sqrt(context x s) tokens", MODEL, typical=2048),
    _v("sparse_context_crossover", "token", "context at which sparse KV reads take as long as "
       "the matmuls", SERVING, typical=1e7),
    # Prices and what they imply
    _v("price_input_long", "USD/token", "input price above the long-context threshold", PRICES,
       typical=4e-6),
    _v("remat_cost_per_token", "USD/token", "cost to recompute one token's KV cache (a "
       "prefill forward pass)", TIERS, typical=1e-7),
    _v("hold_cost_per_token", "USD/token", "cost to keep one token's KV in a tier for the "
       "hold time", TIERS, typical=1e-7),
    _v("retrieve_cost_per_token", "USD/token", "cost to read one token's KV back out of the "
       "tier", TIERS, typical=1e-8),
    _v("tier_cost_per_token", "USD/token", "hold plus retrieve cost of one token's KV in a "
       "tier", TIERS, typical=1e-7),
    # typical: the typical tier's 1 USD/hour over amortisation_time's 4 years is 35,000 USD
    # for its 1e12 bytes, 3.5e-8 USD/byte
    _v("tier_price_per_byte", "USD/byte", "purchase price of the tier per byte", TIERS,
       typical=3e-8),
    _v("amortisation_time", "s", "service life over which a tier's purchase price is spread",
       TIERS, typical=1.26e8),
    _v("tier_cost_per_byte_hour", "USD/byte/hour", "what holding one byte in the tier costs "
       "per hour", TIERS, typical=1e-12),
    _v("cache_storage_price", "USD/token/hour", "price of keeping one token in the prompt "
       "cache per hour", PRICES, typical=4.5e-6),
    _v("cache_price_per_byte_hour", "USD/byte/hour", "cache storage price per byte of KV per "
       "hour", PRICES, typical=1e-12),
    # Fast mode
    _v("fast_price_ratio", "1", "price of the fast tier / price of the normal tier", PRICES,
       lower=1, typical=6),
    _v("fast_speedup", "1", "output speed of the fast tier / normal tier", PRICES, typical=2.5),
    _v("batch_size_fast", "sequence", "batch of the fast tier", SERVING, typical=8),
    _v("fast_batch_ratio", "1", "batch_size_fast / batch_size", SERVING, typical=0.1),
    _v("step_time_fast", "s", "step time of the fast tier", SERVING, typical=0.01),
    _v("t_compute_fast", "s", "matmul time of a fast-tier step", SERVING, typical=0.001),
    _v("t_memory_fast", "s", "HBM traffic time of a fast-tier step", SERVING, typical=0.01),
    _v("cost_per_token_fast", "USD/token", "cost per token of the fast tier", SERVING,
       typical=1e-6),
    # Tensor-parallel communication
    _v("allreduce_latency", "s", "fixed time of one all-reduce over the n_chips, whatever "
       "its size (the small-message time; 0 on one chip)", PARALLELISM, allow_zero=True,
       typical=1e-5),
    _v("tp_allreduce_bytes", "byte", "bytes each chip sends in one ring all-reduce of a "
       "step's activations (0 on one chip)", PARALLELISM, allow_zero=True, typical=1e6),
    _v("t_allreduce", "s", "time of one all-reduce of a step's activations over an attention "
       "tensor-parallel group",
       PARALLELISM, allow_zero=True, typical=1e-5),
    _v("t_tp_comm", "s", "time of a decode step's tensor-parallel all-reduces",
       PARALLELISM, allow_zero=True, typical=1e-3),
    # Parameter counts from the architecture
    _v("vocab_size", "1", "tokens in the vocabulary (rows of the embedding table)",
       ARCHITECTURE, typical=1.5e5),
    _v("untied_embeddings", "1", "1 when the input embedding and the output head are separate "
       "tables, 0 when they are one tied table", ARCHITECTURE, allow_zero=True, upper=1,
       typical=1, scale_like=False),
    _v("input_embedding_params", "param", "parameters of a separate input-embedding table: a "
       "token only looks up its row, so they count in total_params but not in active_params",
       ARCHITECTURE, allow_zero=True, typical=1e9),
    _v("attention_layer_params", "param", "weight matrices of one attention layer (Q, K, V, "
       "output projections)", ARCHITECTURE, typical=2e8),
    _v("d_ff", "1", "hidden width of the gated MLP of a dense layer", ARCHITECTURE,
       typical=2e4),
    _v("dense_mlp_params", "param", "parameters of one dense layer's gated MLP", ARCHITECTURE,
       typical=4e8),
    _v("moe_d_ff", "1", "hidden width of one expert's gated MLP (routed and shared experts)",
       ARCHITECTURE, typical=2048),
    _v("expert_mlp_params", "param", "parameters of one expert's gated MLP", ARCHITECTURE,
       typical=4e7),
    _v("moe_shared_params", "param", "shared-expert and router parameters of all MoE layers "
       "(0 in a dense model)", ARCHITECTURE, allow_zero=True, typical=3e9),
    _v("n_shared_experts", "1", "experts every token goes to in an MoE layer, beside the "
       "routed ones", ARCHITECTURE, allow_zero=True, typical=1),
    _v("n_dense_layers", "1", "layers with a dense MLP (all of them in a dense model)",
       ARCHITECTURE, allow_zero=True, typical=3),
    _v("n_moe_layers", "1", "layers with a mixture-of-experts MLP (0 in a dense model)",
       ARCHITECTURE, allow_zero=True, typical=58),
    _v("q_lora_rank", "1", "MLA compressed query width", ARCHITECTURE, typical=1536),
    _v("qk_nope_head_dim", "1", "MLA query/key head width without RoPE", ARCHITECTURE,
       typical=128),
    _v("v_head_dim", "1", "MLA value head width", ARCHITECTURE, typical=128),
    _v("step_time_with_comm", "s", "step_time plus the tensor-parallel all-reduces on the "
       "critical path", SERVING, typical=0.02),
    # Attention FLOPs and prefill
    _v("attention_width", "1", "multiply-adds a new token does per cached token per layer "
       "(2 n_heads d_head; MLA absorbed: n_heads (2 kv_lora_rank + qk_rope_head_dim))", MODEL,
       typical=16384),
    _v("attention_intensity", "FLOP/byte", "attention FLOPs per byte of KV cache read (compare "
       "hardware_intensity)", MODEL, typical=8),
    _v("attention_flops_per_token", "FLOP/token", "attention work of one new token against its "
       "sequence's KV cache (0 where the conventions leave attention out)", SERVING,
       allow_zero=True, typical=2e10),
    _v("prompt_tokens", "token", "tokens of one request's prompt, run through in prefill",
       SERVING, typical=4000),
    _v("prefill_attention_flops_per_token", "FLOP/token", "attention FLOPs of one prompt "
       "token over the prompt before it (MLA: not absorbed)", SERVING, typical=1e10),
    _v("prefill_flops_per_token", "FLOP/token", "forward FLOPs per prompt token: weights plus "
       "causal attention over half the prompt", SERVING, typical=2e11),
    _v("time_to_first_token", "s", "prefill time of one prompt: the slower of its FLOPs at "
       "the replica's FLOP/s and its HBM traffic (t_prefill_compute, t_prefill_memory)",
       SERVING, aliases=("ttft",), typical=0.5),
    _v("prefill_tokens_per_second", "token/s", "prompt tokens one replica takes in per second "
       "(compute-bound)", SERVING, typical=1e5),
    _v("prefill_cost_per_token", "USD/token", "chip rental per prompt token at the prefill rate",
       SERVING, typical=1e-8),
    # Communication in training at scale. Every name carries "train": these describe the
    # pre-training cluster of training_chips, never the n_chips of one serving replica.
    _v("train_data_parallelism", "chip", "chips of the training cluster in one data-parallel "
       "group: replicas of the model that all-reduce their gradients each step", PARALLELISM,
       lower=1, typical=1024),
    _v("train_fsdp_parallelism", "chip", "chips of the training cluster that shard weights, "
       "gradients and optimizer state between them (FSDP / ZeRO-3)", PARALLELISM, lower=1,
       typical=64),
    _v("train_tensor_parallelism", "chip", "chips of the training cluster that split each "
       "layer's matmuls (Megatron tensor parallelism; not the serving n_chips)", PARALLELISM,
       lower=1, typical=8),
    _v("train_expert_parallelism", "chip", "chips of the training cluster one MoE layer's "
       "experts are spread over (not the serving expert_parallelism)", PARALLELISM, lower=1,
       typical=8),
    _v("train_batch_tokens", "token", "tokens of one optimizer step over the whole training "
       "cluster (the global batch)", TRAINING, typical=4e6),
    _v("train_tokens_per_chip", "token", "batch per chip: train_batch_tokens / "
       "training_chips, each chip's share of a step's work counted in tokens", TRAINING,
       typical=4096),
    _v("train_gradient_bytes_per_param", "byte/param", "bytes of one gradient element as "
       "training communicates it (2 for bf16, 4 for fp32)", TRAINING, typical=2),
    _v("train_hop_latency", "s", "fixed time of one step of a ring or pairwise exchange in a "
       "training collective (alpha of the alpha-beta model); 0 leaves latency out",
       PARALLELISM, allow_zero=True, typical=1e-5),
    _v("t_train_compute", "s", "matmul time of one training step on one chip of the "
       "training cluster, at peak FLOP/s", TRAINING, typical=1),
    _v("t_train_dp_comm", "s", "time of a training step's data-parallel gradient all-reduce "
       "(0 with one replica)", PARALLELISM, allow_zero=True, typical=1),
    _v("t_train_fsdp_comm", "s", "time of a training step's FSDP all-gathers and "
       "reduce-scatters (0 on one chip)", PARALLELISM, allow_zero=True, typical=1),
    _v("t_train_tp_comm", "s", "time of a training step's tensor-parallel activation "
       "all-reduces (0 on one chip)", PARALLELISM, allow_zero=True, typical=0.3),
    _v("t_train_ep_comm", "s", "time of a training step's expert-parallel all-to-alls "
       "(0 on one chip)", PARALLELISM, allow_zero=True, typical=0.3),
    _v("train_dp_comm_ratio", "1", "t_train_dp_comm / t_train_compute: above 1 the gradient "
       "all-reduce outlasts the step's compute", PARALLELISM, allow_zero=True, typical=0.5),
    _v("train_fsdp_comm_ratio", "1", "t_train_fsdp_comm / t_train_compute: above 1 FSDP's "
       "gathers and scatters outlast the step's compute", PARALLELISM, allow_zero=True,
       typical=0.5),
    _v("train_tp_comm_ratio", "1", "t_train_tp_comm / t_train_compute: the share the blocking "
       "tensor-parallel all-reduces add to a step", PARALLELISM, allow_zero=True,
       typical=0.3),
    _v("train_ep_comm_ratio", "1", "t_train_ep_comm / t_train_compute: above 1 the MoE "
       "all-to-alls outlast the step's compute", PARALLELISM, allow_zero=True, typical=0.3),
    _v("train_dp_critical_tokens_per_chip", "token", "batch per chip whose compute takes as "
       "long as the data-parallel gradient all-reduce", PARALLELISM, allow_zero=True,
       typical=3000),
    _v("train_fsdp_critical_tokens_per_chip", "token", "batch per chip whose compute takes as "
       "long as FSDP's gathers and scatters", PARALLELISM, allow_zero=True, typical=3000),
)

VARIABLES += (
    # Whole requests: a prompt in, a generation out
    _v("output_tokens", "token", "tokens one request generates (its first from prefill, the "
       "rest from decode steps)", REQUESTS, typical=500),
    _v("prefill_chunk_tokens", "token", "prompt tokens a chunked-prefill step carries beside "
       "its decodes (vLLM's max_num_batched_tokens less the batch's decodes)", REQUESTS,
       aliases=("chunk_size",), typical=512),
    _v("prefill_chunks", "1", "steps a chunked prompt takes: prompt_tokens over "
       "prefill_chunk_tokens, rounded up", REQUESTS, lower=1, typical=4),
    _v("t_chunk_compute", "s", "compute a prefill chunk adds to a step: its share of the "
       "prompt's prefill FLOPs", REQUESTS, typical=0.01),
    _v("t_chunk_memory", "s", "HBM traffic a prefill chunk adds to a step: its own KV written "
       "and the KV of the prompt's earlier chunks read", REQUESTS, typical=0.001),
    _v("mixed_step_time", "s", "a decode step that also carries a prefill chunk (chunked "
       "prefill, stall-free batching)", REQUESTS, typical=0.03),
    _v("chunked_time_to_first_token", "s", "time to first token when the prompt rides "
       "prefill_chunks mixed steps", REQUESTS, aliases=("chunked_ttft",), typical=0.5),
    _v("chunked_time_per_output_token", "s/token", "time between a stream's tokens when "
       "every decode step carries a prefill chunk", REQUESTS, aliases=("chunked_tpot",),
       typical=0.03),
    _v("decoded_tokens", "token", "tokens a request gets from decode steps: all its output "
       "but the first, which prefill emits", REQUESTS, typical=500),
    _v("t_prefill_compute", "s", "prefill FLOPs of one prompt over the replica's peak FLOP/s",
       REQUESTS, typical=0.5),
    _v("t_prefill_memory", "s", "HBM traffic of one prefill over the replica's bandwidth: the "
       "weights read once and the prompt's KV cache written", REQUESTS, typical=0.01),
    _v("time_per_output_token", "s/token", "time between a request's decoded tokens (TPOT): "
       "a decode step at the generation's average context over the tokens it gives",
       REQUESTS, aliases=("tpot",), typical=0.02),
    _v("request_latency", "s", "time from a request's arrival to its last token: TTFT plus "
       "its decoded tokens at TPOT (no queueing)", REQUESTS, typical=10),
    _v("t_request_decode", "s", "replica time one request's decode takes up: its decode steps, "
       "each shared with the batch", REQUESTS, typical=0.05),
    _v("replica_time_per_request", "s", "replica time one request takes up when prefill and "
       "decode take turns on the same chips", REQUESTS, typical=0.1),
    _v("requests_per_second", "1/s", "requests one replica completes per second, prefill and "
       "decode sharing its chips", REQUESTS, typical=10),
    _v("output_tokens_per_second", "token/s", "output tokens one replica delivers per second "
       "for the request mix, prefill included", REQUESTS, typical=1e4),
    _v("output_tokens_per_second_per_chip", "token/s/chip", "output_tokens_per_second over "
       "the replica's n_chips", REQUESTS, typical=1e3),
    _v("request_cost_per_token", "USD/token", "chip rental per output token of the request "
       "mix, the replica's prefill time included", REQUESTS, typical=1e-6),
    _v("prefill_chips", "chip", "chips of the prefill instance paired with one decode replica "
       "(n_chips) in a disaggregated layout", REQUESTS, typical=8),
    _v("prefill_requests_per_second", "1/s", "prompts the disaggregated prefill chips take in "
       "per second (compute-bound)", REQUESTS, typical=10),
    _v("decode_requests_per_second", "1/s", "requests the decode replica finishes per second "
       "at its decode throughput", REQUESTS, typical=10),
    _v("disaggregated_requests_per_second", "1/s", "requests a disaggregated pair (prefill "
       "chips and one decode replica) completes per second: the slower pool's rate",
       REQUESTS, typical=10),
    _v("disaggregated_tokens_per_second_per_chip", "token/s/chip", "output tokens per second "
       "of a disaggregated pair over all its chips, prefill and decode", REQUESTS,
       typical=1e3),
    # Speculative and multi-token decoding
    _v("draft_tokens", "token/sequence", "tokens a draft model (or multi-token-prediction "
       "heads) proposes per sequence per step, k (0 without speculation)", SPECULATIVE,
       allow_zero=True, typical=3, scale_like=False),
    _v("acceptance_rate", "1", "chance the target model accepts a drafted token, alpha "
       "(Leviathan et al. 2023)", SPECULATIVE, allow_zero=True, upper=1, typical=0.7,
       scale_like=False),
    _v("accepted_tokens_per_step", "token/sequence", "drafted tokens a step keeps per "
       "sequence on average, beside the target's own one (0 without speculation)",
       SPECULATIVE, allow_zero=True, typical=1),
    _v("rejected_tokens_per_step", "token/sequence", "drafted tokens a step verifies and "
       "throws away per sequence on average (0 without speculation)", SPECULATIVE,
       allow_zero=True, typical=1),
    _v("verify_tokens_per_step", "token/sequence", "tokens the target model runs per sequence "
       "per step: the k drafted ones and one more (k + 1)", SPECULATIVE, lower=1, typical=1),
    _v("draft_params", "param", "parameters of the draft model (or the MTP module) run once "
       "per drafted token", SPECULATIVE, typical=1e9),
    _v("t_draft_step", "s", "time of one draft step for the whole batch: the slower of reading "
       "the draft's weights and its matmuls", SPECULATIVE, typical=1e-4),
    _v("t_draft", "s", "drafting time of one decode step: k draft steps, one after the other "
       "(0 without a draft model)", SPECULATIVE, allow_zero=True, typical=1e-3),
    # Fleets
    _v("concurrent_users", "sequence", "streams generating at once over the whole fleet",
       FLEET, typical=1e4),
    _v("replicas", "1", "identical serving replicas in the fleet", FLEET, typical=10),
    _v("fleet_chips", "chip", "chips of every replica in the fleet", FLEET, typical=1000),
    _v("fleet_tokens_per_second", "token/s", "decode throughput of the whole fleet", FLEET,
       typical=1e6),
    _v("replicas_needed", "1", "whole replicas a deployment runs: replicas rounded up",
       FLEET, lower=1, typical=10),
    _v("chips_needed", "chip", "whole chips of one replica: n_chips rounded up", FLEET,
       lower=1, typical=72),
    _v("fleet_chips_needed", "chip", "chips of a fleet of whole replicas, each on whole "
       "chips", FLEET, lower=1, typical=1000),
)

BY_NAME = {v.name: v for v in VARIABLES}

# ``q.chip_flops`` etc.: the sympy symbols, for writing relations.
q = type("Symbols", (), {v.name: v.symbol for v in VARIABLES})()
