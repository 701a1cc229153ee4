"""The opening question (1:08-2:34) answered with the batch section: fast mode.

A provider can sell faster output by running a smaller batch: the step gets
shorter (less KV to read, fewer matmuls) but no shorter than reading the
weights once, and each token carries a larger share of the weight reads, so it
costs more. Paying k times the price for s times the speed pins where on the
latency curve the two tiers run. The fast tier's cost per token is written out
as the normal tier's is, so fast_batch_from_prices is a consequence of the
others: it holds whenever they do.
"""

from __future__ import annotations

from chalk.knowledge.quantities import BY_NAME, q
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.relations import lecture
from chalk.symbolic.variables import count
from sympy import Max

TOPIC = "fast mode"

chips = count(BY_NAME["n_chips"])

RELATIONS = (
    R("t_compute_fast",
      q.t_compute_fast, q.batch_size_fast * q.t_compute_per_sequence,
      "matmul time of a fast-tier step", lecture("8:36", "8:53"), topic=TOPIC),
    R("t_memory_fast",
      q.t_memory_fast, q.t_weight_fetch + q.batch_size_fast * q.t_kv_per_sequence,
      "HBM traffic of a fast-tier step: all weights plus its sequences' KV",
      lecture("8:53", "9:44"), topic=TOPIC),
    R("step_time_fast",
      q.step_time_fast, Max(q.t_compute_fast, q.t_memory_fast),
      "a fast-tier step is bounded by the slower of compute and memory traffic",
      lecture("9:54", "10:44"),
      regimes=(("compute-bound", q.t_compute_fast), ("memory-bound", q.t_memory_fast)),
      topic=TOPIC),
    R("fast_speedup",
      q.fast_speedup * q.step_time_fast, q.step_time,
      "output speed scales with 1/step time",
      lecture("1:08", "2:34"),
      ("same hardware and model for both tiers",),
      topic=TOPIC),
    R("cost_per_token_fast",
      q.cost_per_token_fast,
      q.step_time_fast * chips * q.chip_price / (q.batch_size_fast * q.decode_tokens_per_step),
      "cost per token of the fast tier: chip rental for one of its steps over the tokens the "
      "step produces",
      lecture("12:58", "13:37"),
      ("the chips are rented for the whole step",),
      topic=TOPIC),
    R("fast_batch_ratio",
      q.fast_batch_ratio * q.batch_size, q.batch_size_fast,
      "the fast tier's batch as a share of the normal tier's", lecture("1:49", "2:34"),
      topic=TOPIC),
    R("fast_batch_from_prices",
      q.fast_batch_ratio * q.fast_price_ratio * q.fast_speedup, 1,
      "k times the price for s times the speed on the same chips means a batch k x s times "
      "smaller: cost per token is step time x chips x price over the batch's tokens",
      lecture("13:13", "15:01"),
      ("same chips, same price per chip-hour, same margin for both tiers",),
      topic=TOPIC),
    R("fast_price_ratio",
      q.fast_price_ratio * q.cost_per_token, q.cost_per_token_fast,
      "the fast tier's price premium equals its cost premium",
      lecture("1:49", "2:34"),
      ("both tiers priced at the same margin over cost",),
      topic=TOPIC),
)
