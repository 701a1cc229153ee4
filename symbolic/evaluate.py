"""Fast numeric evaluation of sympy expressions without code generation.

An expression is lowered once to the plain tree of :mod:`chalk.symbolic.ir` and that
tree compiled into closures over plain floats (or numpy arrays, elementwise), so
repeated evaluation costs microseconds and no text is ever executed. Values are looked
up by symbol name in a mapping. The tree is the only lowering from sympy: the CLI cache
stores it and replays it with the same closures.
"""

from __future__ import annotations

from collections.abc import Mapping

import sympy
from chalk.symbolic.ir import Evaluator, compile_ir, to_ir

__all__ = ["Evaluator", "compile_expr"]


def compile_expr(expr: sympy.Expr, constants: Mapping[str, float] | None = None) -> Evaluator:
    """Compile ``expr`` to ``f(values) -> number``.

    Parameters
    ----------
    expr : sympy.Expr
        Built from symbols, numbers, +, *, powers, max/min, exp/log/abs and
        piecewise expressions.
    constants : mapping of str to float, optional
        Values substituted for symbols at compile time (unit constants).

    Raises
    ------
    TypeError
        A part with no numeric evaluator.
    """
    return compile_ir(to_ir(expr, constants))
