"""Every quantity chalk knows, declared once with its public name and unit.

Names and units follow the project vocabulary (docs/VOCABULARY.md); they are a
public interface and do not change once shipped.
"""

from __future__ import annotations

from symbolic.variables import Variable


def _v(name, unit, description, topic, **options) -> Variable:
    return Variable(name=name, unit=unit, description=description, topic=topic, **options)


HARDWARE = "hardware"
MODEL = "model"
SERVING = "serving"
PRICES = "prices"
TIERS = "memory tiers"
TRAINING = "training"
PARALLELISM = "parallelism"

VARIABLES: tuple[Variable, ...] = (
    # Hardware
    _v("chip_flops", "FLOP/s", "peak dense throughput of one chip at the compute precision",
       HARDWARE, typical=1e15),
    _v("hbm_bandwidth", "byte/s", "HBM bandwidth of one chip", HARDWARE,
       aliases=("mem_bw", "memory_bandwidth"), typical=4e12),
    _v("hbm_capacity", "byte", "HBM capacity of one chip", HARDWARE, typical=1e11),
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
    _v("n_chips", "chip", "chips that hold one replica of the model and share each step",
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
    _v("kv_bytes_per_token", "byte/token", "KV-cache bytes one token of context occupies, "
       "all layers", MODEL, aliases=("kv_bytes",), typical=1e5),
    _v("n_layers", "1", "transformer layers", MODEL, typical=60),
    _v("n_kv_heads", "1", "KV heads per attention layer", MODEL, typical=8),
    _v("d_head", "1", "head dimension", MODEL, typical=128),
    _v("kv_bytes_per_element", "byte", "storage size of one K or V element (2 for bf16)", MODEL,
       typical=2),
    _v("n_experts", "1", "routed experts per MoE layer", MODEL, typical=256),
    _v("n_active_experts", "1", "routed experts each token goes to", MODEL, typical=8),
    # Serving: one decode step
    _v("batch_size", "sequence", "sequences that each get new tokens in one step", SERVING,
       aliases=("batch",), typical=2000),
    _v("context_length", "token", "tokens of context each sequence attends to", SERVING,
       aliases=("context",), typical=1e5),
    _v("decode_tokens_per_step", "token/sequence",
       "tokens each sequence gains per decode step: 1, more with multi-token prediction or "
       "speculative decoding", SERVING, lower=1, typical=1),
    _v("t_compute", "s", "time for the weight matmuls of a step", SERVING, typical=0.02),
    _v("t_weight_fetch", "s", "time to read the weights from HBM", SERVING, typical=0.02),
    _v("t_kv_fetch", "s", "time to read the batch's KV cache from HBM", SERVING, typical=0.02),
    _v("t_memory", "s", "t_weight_fetch + t_kv_fetch", SERVING, typical=0.02),
    _v("step_time", "s", "time of one decode step: max(t_compute, t_memory)", SERVING,
       typical=0.02),
    _v("critical_batch_size", "sequence", "batch at which t_compute = t_weight_fetch", SERVING,
       typical=2000),
    _v("latency_floor", "s", "step time as the batch goes to zero: the weights read once over "
       "the whole scale-up domain", SERVING, typical=0.005),
    _v("tokens_per_second", "token/s", "throughput of one deployment", SERVING, typical=1e5),
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
    _v("price_cache_write", "USD/token", "price of writing a token to the prompt cache", PRICES,
       typical=2e-6),
    _v("cache_hold_time", "s", "how long a cache write is kept (5 min, 1 h)", PRICES,
       typical=300),
    _v("decode_mfu_ratio", "1", "decode FLOP utilisation relative to prefill", PRICES, upper=1,
       typical=0.2),
    # Memory tiers
    _v("tier_capacity", "byte", "capacity of one unit of a memory tier", TIERS, typical=1e12),
    _v("tier_bandwidth", "byte/s", "read bandwidth of that unit", TIERS, typical=1e10),
    _v("tier_drain_time", "s", "tier_capacity / tier_bandwidth", TIERS, typical=100),
    _v("tier_price", "USD/hour", "rental price of that unit", TIERS, typical=0.1),
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
    _v("training_time", "s", "train_flops / (n_chips x chip_flops x mfu)", TRAINING,
       typical=5e6),
    # Parallelism
    _v("expert_parallelism", "chip", "chips one MoE layer's experts are spread over",
       PARALLELISM, typical=64),
    _v("pipeline_stages", "1", "pipeline depth (racks)", PARALLELISM, lower=1, typical=4),
    _v("micro_batch_size", "sequence", "sequences per micro-batch", PARALLELISM, typical=2000),
    _v("layers_per_stage", "1", "layers between two pipeline cuts", PARALLELISM, typical=15),
    _v("memory_per_chip", "byte", "weights plus KV cache held by one chip", PARALLELISM,
       typical=1e11),
    _v("scale_up_out_time_ratio", "1", "time on scale-up / time on scale-out at a pipeline cut",
       PARALLELISM, typical=2),
    _v("pipeline_hop_latency", "s", "latency of one rack-to-rack hop", PARALLELISM,
       typical=1e-3),
)

BY_NAME = {v.name: v for v in VARIABLES}

# ``q.chip_flops`` etc.: the sympy symbols, for writing relations.
q = type("Symbols", (), {v.name: v.symbol for v in VARIABLES})()
