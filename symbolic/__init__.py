"""The algebra with units: variables, relations, dimension checks and safe parsing.

This package knows nothing about LLMs; ``knowledge`` declares the quantities and
relations with it, and ``solvers`` solves them.
"""

from chalk.symbolic.errors import ChalkError
from chalk.symbolic.relations import Relation, Source
from chalk.symbolic.units import Q_, ureg
from chalk.symbolic.variables import Constant, Variable

__all__ = ["ChalkError", "Constant", "Q_", "Relation", "Source", "Variable", "ureg"]
