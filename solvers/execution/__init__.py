"""Execution and strategies: a plan run to numbers, with every check.

``symbolic_solve`` (one relation for one unknown), ``execute`` (compiled plans),
``steps``, simultaneous ``blocks`` with their ``tearing`` and ``strategies``,
``numeric`` root-finding, ``placeholders`` for what cancels, ``paths`` through steps
with several solutions, ``checked`` runs and ``solving`` regime by regime, and the
``conflicts`` a failed check names.
"""

from chalk.solvers.lazy import exports

__getattr__, __dir__ = exports(__name__, {
    'compile_plan': 'execute',
    'CompiledPlan': 'execute',
    'compute': 'solving',
    'run_checked': 'checked',
    'solve_relation': 'symbolic_solve',
})
