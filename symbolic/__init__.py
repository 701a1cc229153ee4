"""The algebra with units: variables, relations, dimension checks and safe parsing.

This package knows nothing about LLMs; ``knowledge`` declares the quantities and
relations with it, and ``solvers`` solves them.
"""

from symbolic.errors import ChalkError
from symbolic.relations import Relation, Source
from symbolic.units import Q_, ureg
from symbolic.variables import Constant, Variable

__all__ = ["ChalkError", "Constant", "Q_", "Relation", "Source", "Variable", "ureg"]
