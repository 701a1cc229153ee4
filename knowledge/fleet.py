"""Fleets: how many replicas, and chips, a number of users or a total token rate needs.

A fleet is identical replicas, each running its own batch; load is spread evenly, so
the fleet's users are its replicas' batches and its throughput their throughputs. The
count of replicas is a real number: a deployment rounds it up.
"""

from __future__ import annotations

from chalk.knowledge.quantities import q
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.relations import definition

TOPIC = "fleets"

EVEN_LOAD = ("every replica serves the same batch (load spread evenly)",
             "the replica count is continuous: round it up for whole replicas")

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
)

__all__ = ["RELATIONS", "TOPIC"]
