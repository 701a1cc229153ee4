"""Many points at once: vectorised plans and uncertainty.

``vectorised`` (a compiled plan on arrays) with its ``elementwise`` pieces,
``vectorised_blocks`` and ``batched_newton``; ``uncertainty`` (Monte Carlo and
elasticities), ``ranged_pins`` judged by overlap, ``limits`` on long work and its
``progress`` line.
"""

from chalk.solvers.lazy import exports

__getattr__, __dir__ = exports(__name__, {
    'evaluate': 'vectorised',
    'propagate': 'uncertainty',
    'elasticities': 'uncertainty',
    'Propagation': 'uncertainty',
})
