"""Planning: which relation solves which unknown, in order, and what is missing.

``plan`` (:func:`make_plan`), the smallest ``completions`` of an under-determined
question, whether choosing max() ``regimes`` could fix what their mixture leaves
open, and which way the relations run (``forward``: what a quantity feeds, what
computes it).
"""

from chalk.solvers.lazy import exports

__getattr__, __dir__ = exports(__name__, {
    'make_plan': 'plan',
    'Plan': 'plan',
})
