"""Structure and rank: what the relations determine, decided in log space.

``structure`` (Dulmage-Mendelsohn), ``rank`` and its row ``reduction``, the log-space
``jacobian`` rows, a consistent ``reference`` point, the rank ``at_solution`` and
``conditioning`` of a closed form, and the ``screen`` that rules out, before any
analysis, a quantity no regime lets the pins determine.
"""

from chalk.solvers.lazy import exports

__getattr__, __dir__ = exports(__name__, {
    'analyse': 'rank',
    'consistent_point': 'reference',
    'open_at': 'at_solution',
    'flat_at': 'at_solution',
    'may_determine': 'screen',
})
