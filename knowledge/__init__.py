"""What chalk knows: the lecture's relations by topic, conventions and sourced data."""

from __future__ import annotations

from functools import lru_cache

from chalk.symbolic.model import Model, build_model

TOPIC_MODULES = ("batch", "moe", "parallelism", "training", "long_context", "pricing",
                 "fast_mode", "tensor_parallel", "attention",
                 "training_parallelism", "architecture", "precision", "requests",
                 "speculative", "fleet", "kv_sharding")


@lru_cache(maxsize=1)
def load_model() -> Model:
    """The full knowledge base, unit-checked (cached after the first call)."""
    from importlib import import_module

    from chalk.knowledge.quantities import VARIABLES

    relations, conditions, variants = [], [], []
    for name in TOPIC_MODULES:
        topic = import_module(f"{__name__}.{name}")
        relations.extend(topic.RELATIONS)
        conditions.extend(getattr(topic, "CONDITIONS", ()))
        variants.extend(getattr(topic, "VARIANTS", ()))
    return build_model(VARIABLES, relations, conditions, variants)
