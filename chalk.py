"""chalk: deduce how LLMs are trained and served from public numbers.

The public Python API. Pin what you know, ask for what you don't::

    import chalk
    s = chalk.solve("critical_batch_size", presets="lecture", given={"sparsity_factor": 8})
    s["critical_batch_size"]      # <Quantity(2400.0, 'sequence')>
    print(s.derivation.text())    # every relation used, values substituted

Quantities are pint Quantities from ``chalk.ureg``; errors are ``chalk.ChalkError``.
"""

from knowledge import load_model as model
from solvers.api import Explanation, Solution, explain, solve
from solvers.question import Question
from symbolic.errors import ChalkError
from symbolic.units import Q_, ureg

__version__ = "0.1.0"

__all__ = [
    "ChalkError", "Explanation", "Q_", "Question", "Solution", "explain", "model", "solve", "ureg",
]
