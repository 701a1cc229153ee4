"""Small synthetic models for the solver tests: dimensionless quantities, each relation a
definition, built from ``(name, lhs, rhs)`` with ``lhs``/``rhs`` functions of the
symbols by name."""

from __future__ import annotations

from chalk.symbolic.model import build_model
from chalk.symbolic.relations import Relation, definition
from chalk.symbolic.variables import Variable


def synthetic_model(names, relations):
    """A model of dimensionless quantities ``names`` (typical value 1) and ``relations``."""
    variables = [Variable(n, "1", "synthetic", typical=1.0) for n in names]
    s = {v.name: v.symbol for v in variables}
    return build_model(variables, [Relation(r, lhs(s), rhs(s), "synthetic", definition())
                                   for r, lhs, rhs in relations])
