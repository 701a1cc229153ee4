"""Whole counts: a relation that rounds a quantity up or down answers forwards only.

``replicas_needed = ceiling(replicas)`` gives 17 for every value of replicas above 16 and
at most 17 (``floor`` gives 150 for every value from 150 to below 151), so a step asked to
solve it for the quantity inside the rounding has no one answer. It refuses, and says which
interval the known count leaves, rather than let a root scan stop at a jump of the step
function.
"""

from __future__ import annotations

from collections.abc import Mapping

import sympy
from chalk.solvers.execution.steps import show
from chalk.solvers.execution.symbolic_solve import NoClosedForm, solve_equation
from chalk.symbolic.errors import RoundedUp
from chalk.symbolic.evaluate import compile_expr
from chalk.symbolic.model import Model
from chalk.symbolic.relations import ROUNDINGS, Relation


def refusal(model: Model, relation: Relation, name: str, env: Mapping[str, float]
            ) -> RoundedUp:
    """The error for solving ``relation`` for ``name``, which it rounds, at ``env``
    (base units of everything else the relation holds)."""
    node = next(n for n in relation.lhs.atoms(*ROUNDINGS) | relation.rhs.atoms(*ROUNDINGS)
                if name in {s.name for s in n.free_symbols})
    x = next(s for s in node.free_symbols if s.name == name)
    whole = sorted(s.name for s in relation.symbols
                   if s.name in model.variables and not relation.rounds(s.name))
    given = " and ".join(f"{w} = {show(model, w, env[w])}" for w in whole if w in env)
    advice = (f"pin {name} itself, or ask for {', '.join(whole) or 'the count'} from what "
              f"determines {name}")
    try:
        low, high, closed_high = _interval(relation, node, x, env)
    except (NoClosedForm, ArithmeticError, ValueError, KeyError, IndexError):
        return RoundedUp(name, f"{given or 'the whole count'} holds for a range of {name}; "
                         f"{advice}")
    shown_low = show(model, name, low) if low > 0 else "0"
    above, below = ("above", "at most") if closed_high else ("at or above", "below")
    return RoundedUp(name, f"{given or 'the whole count'} holds for every value of {name} "
                     f"{above} {shown_low} and {below} {show(model, name, high)}; {advice}")


def _interval(relation: Relation, node: sympy.Expr, x: sympy.Symbol,
              env: Mapping[str, float]) -> tuple[float, float, bool]:
    """The values of ``x`` (base units) whose rounding gives the count ``env`` implies:
    ``count - 1 < argument <= count`` for a ceiling, ``count <= argument < count + 1`` for
    a floor. Returns the interval's ends and whether its upper end is in it: the end where
    the argument is the count itself (``prompt / chunk`` falls as the chunk grows, so
    there it is the lower end)."""
    k = sympy.Dummy("count", positive=True)
    forms, _ = solve_equation(relation.lhs.xreplace({node: k}),
                              relation.rhs.xreplace({node: k}), k)
    count = round(float(compile_expr(forms[0])(env)))
    at_edge = {}
    other = count - 1 if isinstance(node, sympy.ceiling) else count + 1
    for edge in (other, count):
        if edge <= 0:
            at_edge[edge] = 0.0
            continue
        at, _ = solve_equation(node.args[0], sympy.Integer(edge), x)
        at_edge[edge] = float(compile_expr(at[0])(env))
    low, high = sorted(at_edge.values())
    return low, high, at_edge[count] == high
