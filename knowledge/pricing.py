"""Section 6b of the lecture (1:41:27-2:04:00): input vs output prices and prompt caching.

Prefill multiplies many tokens by each weight it reads, so it is compute-bound;
decode reads every weight for one token per sequence, so it is memory-bound.
An output price k times the input price says decode runs at about 1/k of
prefill's utilisation. A cached token's KV can be recomputed (a forward pass)
or kept in HBM, host DRAM, flash or disk; keeping costs a share of the tier's
price for the hold time, reading back costs the tier's time per byte. The two
are equal when the hold time equals the tier's drain time, which is how a
cache duration points at a tier. A cache hit's price over a fresh input token's
is, at one margin, the read-back cost over the recompute cost, which is how a
read discount points at a tier's bandwidth per dollar.
"""

from __future__ import annotations

from chalk.knowledge.quantities import q
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.relations import lecture

TOPIC = "prices, prompt caching and memory tiers"

RELATIONS = (
    R("output_input_price_ratio",
      q.output_input_price_ratio, q.price_output / q.price_input,
      "how much more an output token costs than an input token",
      lecture("1:41:33", "1:41:50"),
      topic=TOPIC),
    R("decode_mfu_ratio",
      q.decode_mfu_ratio * q.output_input_price_ratio, 1,
      "with prices proportional to chip time and prefill compute-bound, an output/input "
      "price ratio k means decode runs at 1/k of prefill's FLOP utilisation",
      lecture("1:47:43", "1:48:59"),
      ("prices proportional to cost", "prefill at full compute utilisation"),
      topic=TOPIC),
    R("long_context_price_ratio",
      q.long_context_price_ratio, q.price_input_long / q.price_input,
      "input price above the long-context threshold over the price below it",
      lecture("1:33:17", "1:33:34"),
      topic=TOPIC),
    R("remat_cost_per_token",
      q.remat_cost_per_token, q.cost_per_token_floor,
      "recomputing a token's KV costs a forward pass at full compute utilisation: the "
      "compute floor of a token's cost",
      lecture("1:50:51", "1:51:28"),
      ("prefill is compute-bound; the quadratic attention term is left out (1:51:44)",),
      topic=TOPIC),
    R("tier_drain_time",
      q.tier_drain_time, q.tier_capacity / q.tier_bandwidth,
      "time to read a whole memory tier once",
      lecture("2:00:46", "2:01:25"),
      topic=TOPIC),
    R("hold_cost_per_token",
      q.hold_cost_per_token * q.tier_capacity, q.kv_bytes_per_token * q.tier_price * q.hold_time,
      "holding a token's KV takes its share of the tier's capacity, at the tier's price, "
      "for the hold time",
      lecture("1:55:42", "1:57:57"),
      ("the tier's price is spread evenly over its capacity",),
      topic=TOPIC),
    R("retrieve_cost_per_token",
      q.retrieve_cost_per_token * q.tier_bandwidth, q.kv_bytes_per_token * q.tier_price,
      "reading a token's KV back into HBM occupies the tier's bandwidth for bytes / "
      "bandwidth, at the tier's price",
      lecture("1:57:33", "1:58:24"),
      topic=TOPIC),
    R("tier_cost_per_token",
      q.tier_cost_per_token, q.hold_cost_per_token + q.retrieve_cost_per_token,
      "total cost of serving a cached token from a tier: hold plus retrieve",
      lecture("1:56:23", "1:56:58"),
      topic=TOPIC),
    R("tier_price",
      q.tier_price * q.amortisation_time, q.tier_capacity * q.tier_price_per_byte,
      "rental-equivalent price of a unit of the tier: its purchase price spread over its "
      "service life",
      lecture("1:56:00", "1:56:23"),
      ("straight-line amortisation; power, space and the host are left out",),
      topic=TOPIC),
    R("tier_cost_per_byte_hour",
      q.tier_cost_per_byte_hour * q.tier_capacity, q.tier_price,
      "what one byte held in the tier costs per unit time",
      lecture("1:56:00", "1:56:23"),
      topic=TOPIC),
    R("cache_storage_price",
      q.cache_storage_price * q.cache_hold_time, q.price_cache_write - q.price_input,
      "a cache write's premium over a plain input token pays for holding it for the hold "
      "time",
      lecture("1:59:38", "2:00:35"),
      ("the write premium is all storage; recomputing is paid by the base input price",),
      topic=TOPIC),
    R("cache_read_price_ratio",
      q.cache_read_price_ratio, q.price_cache_read / q.price_input,
      "what a cache hit is charged against a fresh input token",
      lecture("1:49:06", "1:49:25"),
      topic=TOPIC),
    # A provider has two ways to produce a prompt token's KV: compute it again from the
    # token ids (remat) or read it back from the tier it was kept in (retrieve). With one
    # margin on both, the hit's discount is the ratio of those two costs. Holding is left
    # off the read side on purpose: cache_storage_price charges the hold to the write
    # premium (or to a storage price), so a read that paid for it too would count it twice.
    R("cache_read_price_is_cost_ratio",
      q.cache_read_price_ratio * q.remat_cost_per_token, q.retrieve_cost_per_token,
      "with one margin on cache hits and fresh input tokens, the hit's price over the input "
      "price is the cost of reading the token's KV back from its tier over recomputing it",
      lecture("1:49:34", "1:50:29"),
      ("one margin on cache hits and on fresh input tokens",
       "the read price pays the read-back only: holding is paid by the write premium or the "
       "storage price (cache_storage_price), so hold_cost_per_token is not on the read side",
       "the recompute is a compute-bound prefill at the cost floor (remat_cost_per_token)",
       "the recompute's quadratic attention term is left out (1:51:44)"),
      topic=TOPIC),
    R("cache_price_per_byte_hour",
      q.cache_price_per_byte_hour * q.kv_bytes_per_token, q.cache_storage_price,
      "the cache storage price per byte of KV held",
      lecture("2:00:35", "2:00:46"),
      topic=TOPIC),
)
