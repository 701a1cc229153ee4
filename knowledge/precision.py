"""Precision per part: each part of a step runs in its own number format, at its own peak.

A chip's datasheet gives one dense peak per number format (BF16, FP8, FP4), and a step is
not one format: weights may be stored and multiplied in FP4 while attention multiplies
queries by an FP8 or BF16 KV cache. Work split over formats takes the sum of each share's
time, so a part's peak is the harmonic mean of the format peaks, weighted by the share of
its FLOPs in each format. A precision preset states the shares (all in one format); a
chip preset states the peaks. Attention runs at ``chip_flops`` unless a preset or the
user says otherwise: the time an attention FLOP takes beyond a matmul FLOP is zero in the
conventions, so a question that names no attention format needs no attention peak.
"""

from __future__ import annotations

from chalk.knowledge.quantities import q
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.relations import Source

TOPIC = "precision per part"

# Time of work split over formats: sum over formats of (FLOPs in the format / its peak).
FORMAT_PEAKS = Source(
    "the roofline per number format (Williams et al. 2009, CACM 52(4): attainable FLOP/s "
    "of a kernel is its format's peak), summed over the formats a part's FLOPs run in; "
    "per-format peaks from the chip datasheets (knowledge/data/accelerators.yaml)", "paper")

RELATIONS = (
    R("matmul_peak_by_format",
      1 / q.chip_flops,
      q.matmul_bf16_share / q.chip_flops_bf16 + q.matmul_fp8_share / q.chip_flops_fp8
      + q.matmul_fp4_share / q.chip_flops_fp4,
      "the weight matmuls' peak: each share of their FLOPs takes its format's peak time, "
      "so the peak is the share-weighted harmonic mean of the chip's format peaks",
      FORMAT_PEAKS,
      ("the shares sum to 1", "a format the chip has no peak for takes no share"),
      topic=TOPIC),
    R("attention_peak_by_format",
      1 / q.attention_chip_flops,
      q.attention_bf16_share / q.chip_flops_bf16 + q.attention_fp8_share / q.chip_flops_fp8,
      "attention's peak: each share of its FLOPs takes the BF16 or FP8 peak's time",
      Source("as matmul_peak_by_format; attention kernels multiply in BF16 or FP8 "
             "(FlashAttention-3, Shah et al. 2024, arXiv:2407.08608, sec. 3.3: FP8 "
             "attention on Hopper), not FP4", "paper"),
      ("the shares sum to 1",),
      topic=TOPIC),
    R("attention_surplus_time_per_flop",
      q.attention_surplus_time_per_flop, 1 / q.attention_chip_flops - 1 / q.chip_flops,
      "what an attention FLOP costs beyond a weight-matmul FLOP on one chip: zero when "
      "attention runs at chip_flops (the conventions), more in a slower format",
      FORMAT_PEAKS,
      ("attention runs no faster than the weight matmuls (a faster format is not "
       "counted: its time stays at chip_flops)",),
      topic=TOPIC),
)

__all__ = ["RELATIONS", "TOPIC"]
