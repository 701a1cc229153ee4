"""The engine, generic and lecture-free. It knows nothing of prices or tiers; the knowledge
base and the applications sit on it.

Its rooms, each with a small public face in its ``__init__``:

- :mod:`~chalk.solvers.analysis`: structure and rank of a model, in log space;
- :mod:`~chalk.solvers.planning`: plans, completions, regimes;
- :mod:`~chalk.solvers.execution`: closed forms, blocks and their strategies, execution
  with every check;
- :mod:`~chalk.solvers.bulk`: many points at once, uncertainty, limits on long work;
- :mod:`~chalk.solvers.pinning`: pins, layers, what gives way, absent terms, variants;
- :mod:`~chalk.solvers.records`: derivations, flags, counts;

and :mod:`~chalk.solvers.tolerances`, every numerical setting, declared once.
"""
