"""The algebra with units: variables, relations, dimension checks and safe parsing.

This package knows nothing about LLMs; ``knowledge`` declares the quantities and
relations with it, and ``solvers`` solves them. The names below load on first use, so
importing one light module (errors, parsing, printing of numbers) does not pull in
sympy or pint.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

_EXPORTS = {
    "ChalkError": "chalk.symbolic.errors",
    "Constant": "chalk.symbolic.variables",
    "Q_": "chalk.symbolic.units",
    "Relation": "chalk.symbolic.relations",
    "Source": "chalk.symbolic.relations",
    "Variable": "chalk.symbolic.variables",
    "ureg": "chalk.symbolic.units",
}

__all__ = ["ChalkError", "Constant", "Q_", "Relation", "Source", "Variable", "ureg"]

if TYPE_CHECKING:  # pragma: no cover
    from chalk.symbolic.errors import ChalkError
    from chalk.symbolic.relations import Relation, Source
    from chalk.symbolic.units import Q_, ureg
    from chalk.symbolic.variables import Constant, Variable


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'chalk.symbolic' has no attribute {name!r}")
    value = getattr(import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
