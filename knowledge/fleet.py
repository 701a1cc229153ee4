"""Fleets: how many replicas, and chips, a number of users or a total token rate needs.

A fleet is identical replicas, each running its own batch; load is spread evenly, so
the fleet's users are its replicas' batches and its throughput their throughputs. The
count of replicas is a real number; a deployment runs whole replicas on whole chips, and
asks for them by name (``replicas_needed``, ``chips_needed``, ``fleet_chips_needed``): the
continuous count rounded up, which the derivation shows beside it. Rounding up answers
forwards only: a whole count gives back no one value of what it rounds
(solvers.execution.rounding refuses, naming the interval).
"""

from __future__ import annotations

from chalk.knowledge.quantities import BY_NAME, q
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.relations import Source, definition
from chalk.symbolic.variables import count, unit_constant
from sympy import ceiling

TOPIC = "fleets"

EVEN_LOAD = ("every replica serves the same batch (load spread evenly)",
             "the replica count is continuous: round it up for whole replicas")

one_chip = unit_constant("chip").symbol

# ceil(x) is the least whole number at or above x; rounding the count of servers up is
# what keeps each one's load within its capacity.
ROUNDED_UP = Source(
    "Graham, Knuth and Patashnik, 'Concrete Mathematics', 2nd ed. 1994, sec. 3.1 (the "
    "ceiling: the least integer >= x); a replica's load stays within what its batch "
    "serves only if the count is rounded up, never down", "book")
WHOLE = ("a replica, and a chip, is deployed whole",
         "the whole count is at or above the continuous one, so every replica carries at "
         "most the batch its speed allows")

RELATIONS = (
    R("concurrent_users",
      q.concurrent_users, q.replicas * q.batch_size,
      "the fleet's concurrent streams are its replicas' batches",
      definition("a fleet of identical replicas, each stream one sequence of a batch"),
      EVEN_LOAD, topic=TOPIC),
    R("fleet_chips",
      q.fleet_chips, q.replicas * q.n_chips,
      "the fleet's chips are its replicas' chips",
      definition("a fleet of identical replicas"),
      EVEN_LOAD, topic=TOPIC),
    R("fleet_tokens_per_second",
      q.fleet_tokens_per_second, q.replicas * q.tokens_per_second,
      "the fleet's decode throughput is its replicas' throughputs",
      definition("a fleet of identical replicas"),
      EVEN_LOAD, topic=TOPIC),
    R("replicas_needed",
      q.replicas_needed, ceiling(q.replicas),
      "whole replicas the load needs: the continuous count rounded up",
      ROUNDED_UP, WHOLE, topic=TOPIC),
    R("chips_needed",
      q.chips_needed, ceiling(count(BY_NAME["n_chips"])) * one_chip,
      "whole chips a replica needs: the continuous count rounded up",
      ROUNDED_UP, WHOLE, topic=TOPIC),
    R("fleet_chips_needed",
      q.fleet_chips_needed, q.replicas_needed * q.chips_needed,
      "chips of a fleet of whole replicas, each on whole chips",
      definition("a fleet of identical replicas"),
      WHOLE, topic=TOPIC),
)

__all__ = ["RELATIONS", "TOPIC"]
