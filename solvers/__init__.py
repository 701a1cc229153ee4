"""The engine, generic and lecture-free: structure and rank of a model, plans, closed
forms, blocks and their strategies, execution with checks, uncertainty and derivations.
It knows nothing of prices or tiers; the knowledge base and the applications sit on it."""
