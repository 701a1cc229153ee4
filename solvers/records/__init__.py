"""Records: how every answer was obtained, and what it breaks.

``derivation`` (the record for people and scripts), ``flags`` (bounds a condition
declares) and ``counts`` (a model's counts are whole numbers).
"""

from chalk.solvers.lazy import exports

__getattr__, __dir__ = exports(__name__, {
    'Derivation': 'derivation',
    'flags': 'flags',
    'reported': 'flags',
    'fractional_counts': 'counts',
})
