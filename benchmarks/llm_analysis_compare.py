"""One decode step of Llama-2-70B on 8 A100s: chalk against llm-analysis (pip package).

Both tools get the same inputs: llm-analysis's own Llama-2-70B and A100 SXM 80GB configs,
bf16 weights, activations and KV cache, tensor parallelism 8, peak FLOP/s and bandwidth.
chalk answers with ``step_time_with_comm``: the lecture's roofline step plus the tensor-parallel
all-reduces, given llm-analysis's own NVLink bandwidth and per-all-reduce latency.
Printed: each tool's step time and their ratio over a range of batches, each tool's
assumptions, the differences item by item at two batches, an aligned comparison (chalk
counting KV load + store as llm-analysis does) and the roofline part alone, and the medians
of repeated computations with the speed ratio from the same run.

llm-analysis is for this benchmark only (``pip install llm-analysis``); it is not a chalk
dependency, and without it the benchmark prints one line and returns.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import statistics
import time

MODEL = "upstage_Llama-2-70b-instruct-v2"  # llm-analysis's Llama-2-70B config
GPU = "a100-sxm-80gb"
DTYPE = "w16a16e16"  # bf16/fp16 weights, activations, embeddings
TP = 8
PROMPT = 2048  # tokens already in the KV cache
NEW_TOKENS = 1  # one decode step
BATCHES = (16, 32)
KV_BYTES = 2  # bf16 KV cache
# Llama-2-70B as released (HF config): SwiGLU MLP 3 x 8192 x 28672, untied lm_head
REAL_PARAMS = 68_976_648_192


def _la_run(la, gpu, batch: int, *, no_comm: bool = False) -> tuple[dict, object]:
    """llm-analysis's inference summary for one decode step, at peak efficiency."""
    if no_comm:  # the roofline part alone: no TP communication
        gpu = dataclasses.replace(gpu, intra_node_min_message_latency=0.0,
                                  intra_node_bandwidth_in_GB_per_sec=float("inf"))
    analysis = la.LLMAnalysis(la.get_model_config_by_name(MODEL), gpu,
                              la.get_dtype_config_by_name(DTYPE),
                              la.ParallelismConfig(tp_size=TP),
                              flops_efficiency=1.0, hbm_memory_efficiency=1.0)
    summary = analysis.inference(batch_size_per_gpu=batch, seq_len=PROMPT,
                                 num_tokens_to_generate=NEW_TOKENS,
                                 kv_cache_dtype_bytes=KV_BYTES)
    return summary, analysis


def _chalk_pins(gpu, model_cfg, params: float, batch: int, kv_factor: int = 1) -> dict:
    head_dim = model_cfg.hidden_dim // model_cfg.n_head
    kv_per_token = 2 * model_cfg.num_layers * model_cfg.num_key_value_heads * head_dim * KV_BYTES
    return {
        "n_chips": f"{TP} chip",
        "chip_flops": f"{gpu.peak_fp16_TFLOPS}e12 FLOP/s",
        "hbm_bandwidth": f"{gpu.hbm_bandwidth_in_GB_per_sec}e9 byte/s",
        "total_params": f"{params:.0f} param",
        "active_params": f"{params:.0f} param",
        "bytes_per_param": "2 byte/param",
        "kv_bytes_per_token": f"{kv_factor * kv_per_token} byte/token",
        # llm-analysis sizes the cache at prompt + generated tokens
        "context_length": f"{PROMPT + NEW_TOKENS} token",
        "batch_size": f"{batch} sequence",
        # tensor-parallel all-reduces: llm-analysis's own NVLink figures for this GPU
        "n_layers": model_cfg.num_layers,
        "d_model": model_cfg.hidden_dim,
        "activation_bytes": "2 byte",
        "scale_up_bandwidth": f"{gpu.intra_node_bandwidth_in_GB_per_sec}e9 byte/s",
        "allreduce_latency": f"{gpu.intra_node_min_message_latency} s",
    }


CHALK_ASSUMPTIONS = (
    "step_time_with_comm = step_time + t_tp_comm: the all-reduces follow the roofline part",
    "step_time = max(t_compute, t_memory): compute and HBM traffic overlap perfectly",
    "t_compute = batch x 2 FLOP x active_params / (8 x peak FLOP/s); attention FLOPs left out",
    "t_memory = (all weights + batch x context x KV bytes/token) / (8 x peak HBM bandwidth)",
    "weights (embedding included) and KV cache spread evenly over the 8 chips; KV read once",
    "writing the step's new KV entries (1/context of the cache read) is left out",
    "t_tp_comm = 2 x n_layers x (latency + 2 (p-1)/p x batch x d_model x 2 B / NVLink B/s):",
    "two all-reduces per layer (Megatron-LM), ring all-reduce, latency + bytes/bandwidth",
    "no activations, layernorms or logits special cases",
)
LA_ASSUMPTIONS = (
    "per layer: attention and MLP each max(compute, weight + activation reads), then summed",
    "decode FLOPs use seq_len=1: attention over the cached context is not counted",
    "+ 2 ring all-reduces per layer: max(bytes / 300 GB/s NVLink, 8 µs minimum latency)",
    "+ 2 layernorms (activation traffic) per layer, + logits matmul (compute only)",
    "+ input embedding table read whole (not sharded) by every GPU",
    "+ KV cache loaded AND stored each step (2 x its size), not overlapped with compute",
    "KV cache sized at prompt + generated tokens; efficiencies 1.0 (0.2.2's default too)",
    "its Llama-2-70B config: 2-matrix MLP of width 32768, tied embedding",
)
SWEEP = (1, 4, 8, 16, 32, 64)


def bench_llm_analysis(repeats: int = 50) -> dict:
    """Decode step time, chalk vs llm-analysis: agreement and speed."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # its "no PyTorch" notice
    try:
        import llm_analysis.analysis as la
        from llm_analysis.logger import logger as la_logger
    except ImportError:
        print("llm-analysis is not installed: pip install llm-analysis")
        return {"installed": False}

    import chalk

    level = la_logger.level
    la_logger.setLevel(logging.ERROR)  # its efficiency and kv-cache advice warnings
    try:
        return _compare(la, chalk, repeats)
    finally:
        la_logger.setLevel(level)


def _within(ratio: float) -> str:
    return "within" if abs(ratio - 1) <= 0.10 else "NOT within"


def _compare(la, chalk, repeats: int) -> dict:
    from importlib.metadata import version

    gpu = la.get_gpu_config_by_name(GPU)
    model_cfg = la.get_model_config_by_name(MODEL)
    _, analysis = _la_run(la, gpu, BATCHES[0])
    params = analysis.total_num_params
    head_dim = model_cfg.hidden_dim // model_cfg.n_head
    print(f"llm-analysis {version('llm-analysis')}: {MODEL}, {GPU}, {DTYPE}, TP={TP}, "
          f"prompt {PROMPT} tokens, {NEW_TOKENS} decode step, bf16 KV")
    print(f"inputs to both: {gpu.peak_fp16_TFLOPS:g} TFLOP/s and "
          f"{gpu.hbm_bandwidth_in_GB_per_sec:g} GB/s per GPU (peak, efficiency 1.0), "
          f"{params:,.0f} params (llm-analysis's count), 2 byte/param,")
    print(f"  KV 2 x {model_cfg.num_layers} layers x {model_cfg.num_key_value_heads} KV heads "
          f"x {head_dim} x {KV_BYTES} B = "
          f"{2 * model_cfg.num_layers * model_cfg.num_key_value_heads * head_dim * KV_BYTES:,} "
          f"byte/token, context {PROMPT + NEW_TOKENS} tokens,")
    print(f"  NVLink {gpu.intra_node_bandwidth_in_GB_per_sec:g} GB/s per direction, "
          f"{gpu.intra_node_min_message_latency * 1e6:g} µs per all-reduce, "
          f"d_model {model_cfg.hidden_dim}, bf16 activations")

    figures: dict = {"params": params, "batches": {}, "sweep": {}}
    print("same inputs, each tool's own assumptions (chalk: step_time_with_comm):")
    print(f"  {'batch':>5}  {'chalk ms':>9}  {'of which comm':>13}  {'llm-analysis ms':>15}  "
          f"{'of which comm':>13}  {'llm-a/chalk':>11}")
    for batch in SWEEP:
        summary, _ = _la_run(la, gpu, batch)
        c = chalk.solve("step_time_with_comm",
                        given=_chalk_pins(gpu, model_cfg, params, batch))
        c_ms, la_ms = c.value("step_time_with_comm", "ms"), summary["decode_latency"] * 1e3
        ratio = la_ms / c_ms
        figures["sweep"][batch] = ratio
        print(f"  {batch:>5}  {c_ms:>9.3f}  {c.value('t_tp_comm', 'ms'):>13.3f}  "
              f"{la_ms:>15.3f}  {summary['decode_latency_fwd_tp_comm'] * 1e3:>13.3f}  "
              f"{ratio:>11.3f}  {_within(ratio)} 10%")
    embed_extra = (model_cfg.vocab_size * model_cfg.hidden_dim * 2 * (1 - 1 / TP)
                   / (gpu.hbm_bandwidth_in_GB_per_sec * 1e9))
    for batch in BATCHES:
        figures["batches"][batch] = _itemise(la, chalk, gpu, model_cfg, params, batch,
                                             embed_extra)
    print("chalk assumes:")
    for line in CHALK_ASSUMPTIONS:
        print(f"  - {line}")
    print("llm-analysis assumes:")
    for line in LA_ASSUMPTIONS:
        print(f"  - {line}")

    figures.update(_speed(la, chalk, gpu, model_cfg, params, repeats))
    return figures


def _itemise(la, chalk, gpu, model_cfg, params, batch: int, embed_extra: float) -> dict:
    """Where the two tools differ at one batch, each difference measured on its own."""
    summary, _ = _la_run(la, gpu, batch)
    no_comm, _ = _la_run(la, gpu, batch, no_comm=True)
    target = "step_time_with_comm"
    c = chalk.solve(target, given=_chalk_pins(gpu, model_cfg, params, batch))
    c2 = chalk.solve(target, given=_chalk_pins(gpu, model_cfg, params, batch, 2))
    real = chalk.solve(target, given=_chalk_pins(gpu, model_cfg, REAL_PARAMS, batch))
    la_ms, c_ms, c2_ms = (summary["decode_latency"] * 1e3, c.value(target, "ms"),
                          c2.value(target, "ms"))
    regime = ("memory-bound" if c.value("t_memory", "s") >= c.value("t_compute", "s")
              else "compute-bound")
    kv_store_ms = summary["kv_cache_latency"] / 2 * 1e3
    comm_gap = c.value("t_tp_comm", "ms") - summary["decode_latency_fwd_tp_comm"] * 1e3
    print(f"batch {batch}: chalk {c_ms:.3f} ms ({regime} + all-reduces), llm-analysis "
          f"{la_ms:.3f} ms, llm-analysis/chalk = {la_ms / c_ms:.3f} "
          f"({_within(la_ms / c_ms)} 10%)")
    print(f"  llm-analysis counts on top: KV store of the whole cache {kv_store_ms:.3f} ms, "
          f"unsharded embedding read {embed_extra * 1e3:.3f} ms; chalk's all-reduces take "
          f"{comm_gap:.3f} ms longer (latency + bytes, not the max of the two)")
    print(f"  aligned (chalk KV bytes doubled for load + store, as llm-analysis counts): "
          f"chalk {c2_ms:.3f} ms, llm-analysis {la_ms:.3f} ms, ratio {la_ms / c2_ms:.3f}")
    print(f"  roofline only (neither counts communication): chalk "
          f"{c2.value('step_time', 'ms'):.3f} ms, llm-analysis "
          f"{no_comm['decode_latency'] * 1e3:.3f} ms, ratio "
          f"{no_comm['decode_latency'] / c2.value('step_time', 's'):.3f}")
    print(f"  aside: the released model has {REAL_PARAMS:,} params (llm-analysis counts "
          f"{1 - params / REAL_PARAMS:.0%} fewer); chalk with them: "
          f"{real.value(target, 'ms'):.3f} ms")
    return {
        "chalk_ms": c_ms, "llm_analysis_ms": la_ms, "ratio": la_ms / c_ms,
        "aligned_chalk_ms": c2_ms, "aligned_ratio": la_ms / c2_ms,
        "roofline_ratio": no_comm["decode_latency"] / c2.value("step_time", "s"),
        "chalk_tp_comm_ms": c.value("t_tp_comm", "ms"),
        "llm_analysis_tp_comm_ms": summary["decode_latency_fwd_tp_comm"] * 1e3,
        "kv_store_ms": kv_store_ms, "real_params_chalk_ms": real.value(target, "ms"),
    }


def _speed(la, chalk, gpu, model_cfg, params, repeats: int) -> dict:
    """Median time to compute one decode step time, new batch each call, interleaved."""
    def with_chalk(i):
        given = _chalk_pins(gpu, model_cfg, params, 16 + i % 17)
        return chalk.solve("step_time_with_comm", given=given).value("step_time_with_comm",
                                                                      "s")

    def with_llm_analysis(i):
        return _la_run(la, la.get_gpu_config_by_name(GPU), 16 + i % 17)[0]["decode_latency"]

    with_chalk(0), with_llm_analysis(0)  # warm: chalk's plan and closed forms are cached
    chalk_t, la_t = [], []
    for i in range(repeats):
        for fn, times in ((with_chalk, chalk_t), (with_llm_analysis, la_t)):
            start = time.perf_counter()
            fn(i)
            times.append(time.perf_counter() - start)
    c, h = statistics.median(chalk_t), statistics.median(la_t)
    print(f"warm chalk.solve('step_time_with_comm') with new text pins: median {c * 1e6:.0f} µs "
          f"over {repeats} runs")
    print(f"llm-analysis LLMAnalysis(...) + inference(): median {h * 1e6:.0f} µs "
          f"(its logging silenced)")
    print(f"  ratio chalk/llm-analysis = {c / h:.2f}")
    return {"chalk_s": c, "llm_analysis_s": h, "speed_ratio": c / h}
