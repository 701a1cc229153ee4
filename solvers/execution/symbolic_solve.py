"""Solving one relation for one unknown, symbolically, once.

Most relations are products of powers or are linear in the unknown; those are
solved by exact algebra on the expression tree in microseconds. Anything else
goes to ``sympy.solve`` in a forked worker with a time limit, because
``sympy.solve`` can run for minutes and cannot be interrupted in-process. A
relation with ``max``/``min`` around the unknown is split into one equation per
regime, each with the inequalities under which it holds. Results are cached.
"""

from __future__ import annotations

import multiprocessing
from dataclasses import dataclass
from functools import lru_cache

import sympy
from chalk.symbolic.relations import Relation

DEFAULT_TIMEOUT = 10.0


@dataclass(frozen=True)
class Candidate:
    """One closed form ``variable = expr``, valid where every guard ``a >= b`` holds."""

    expr: sympy.Expr | None
    guards: tuple[tuple[sympy.Expr, sympy.Expr], ...] = ()
    regime: str | None = None
    method: str = "closed form"
    # For a regime whose equation does not involve the unknown: (lhs, rhs) of
    # that equation. If it holds, the unknown is only bounded, not determined.
    free: tuple[sympy.Expr, sympy.Expr] | None = None


@dataclass(frozen=True)
class Solved:
    """How to get ``variable`` from ``relation``.

    ``candidates`` is empty when no closed form was found; ``note`` then says
    why and the value is found numerically.
    """

    relation: str
    variable: str
    candidates: tuple[Candidate, ...]
    note: str = ""

    @property
    def numeric(self) -> bool:
        return not self.candidates


@dataclass(frozen=True)
class Branch:
    """The relation with each max/min around the unknown replaced by one argument."""

    lhs: sympy.Expr
    rhs: sympy.Expr
    guards: tuple[tuple[sympy.Expr, sympy.Expr], ...]
    regime: str | None


def branches(relation: Relation, unknowns) -> list[Branch]:
    """Split ``relation`` into smooth branches with respect to the ``unknowns``.

    ``unknowns`` is a Symbol or a set of Symbols; only a max/min that contains
    one of them is split.
    """
    labels = {expr: label for label, expr in relation.regimes}
    unknowns = {unknowns} if isinstance(unknowns, sympy.Symbol) else set(unknowns)
    return _split(relation.lhs, relation.rhs, unknowns, (), None, labels)


def _split(lhs, rhs, x, guards, regime, labels) -> list[Branch]:
    nodes = [n for n in (lhs.atoms(sympy.Max, sympy.Min) | rhs.atoms(sympy.Max, sympy.Min))
             if x & n.free_symbols]
    if not nodes:
        return [Branch(lhs, rhs, guards, regime)]
    node = min(nodes, key=lambda n: sympy.count_ops(n))  # innermost first
    out = []
    for arg in node.args:
        others = [a for a in node.args if a is not arg]
        if isinstance(node, sympy.Max):
            new_guards = tuple((arg, o) for o in others)
        else:
            new_guards = tuple((o, arg) for o in others)
        label = labels.get(arg, regime)
        out.extend(_split(lhs.xreplace({node: arg}), rhs.xreplace({node: arg}), x,
                          guards + new_guards, label, labels))
    return out


def clear_cache() -> None:
    """Forget every closed form found (for benchmarks of cold solves)."""
    _solve_cached.cache_clear()


def solve_relation(relation: Relation, variable: str,
                   timeout: float = DEFAULT_TIMEOUT) -> Solved:
    """Closed forms of ``relation`` for ``variable`` (cached per relation and variable)."""
    return _solve_cached(relation, variable, timeout)


@lru_cache(maxsize=4096)
def _solve_cached(relation: Relation, variable: str, timeout: float) -> Solved:
    x = next(s for s in relation.symbols if s.name == variable)
    if relation.rounds(variable):  # no closed form, and no search either (execute refuses)
        return Solved(relation.name, variable, (),
                      f"{variable} is rounded {relation.rounding(variable)} to a whole count: "
                      "not invertible")
    candidates = []
    notes = []
    for branch in branches(relation, x):
        if x not in (branch.lhs - branch.rhs).free_symbols:
            candidates.append(Candidate(None, branch.guards, branch.regime, "free",
                                        (branch.lhs, branch.rhs)))
            continue
        try:
            forms, method = solve_equation(branch.lhs, branch.rhs, x, timeout)
        except NoClosedForm as exc:
            notes.append(str(exc))
            continue
        for form in forms:
            candidates.append(Candidate(form, branch.guards, branch.regime, method))
    if notes and not any(c.expr is not None for c in candidates):
        return Solved(relation.name, variable, (), "; ".join(notes))
    return Solved(relation.name, variable, tuple(candidates), "; ".join(notes))


class NoClosedForm(Exception):
    """sympy found no usable closed form (or ran out of time): solve numerically."""


def solve_equation(lhs: sympy.Expr, rhs: sympy.Expr, x: sympy.Symbol,
                   timeout: float = DEFAULT_TIMEOUT) -> tuple[list[sympy.Expr], str]:
    """All closed-form solutions of ``lhs = rhs`` for ``x`` and how they were found."""
    residual = lhs - rhs
    slope = residual.diff(x)
    if slope != 0 and x not in slope.free_symbols:
        offset = residual.xreplace({x: sympy.Integer(0)})
        return [sympy.powsimp(-offset / slope)], "closed form (linear)"
    monomial = _solve_monomial(lhs, rhs, x)
    if monomial is not None:
        return [monomial], "closed form (power law)"
    return _sympy_solve(sympy.Eq(lhs, rhs), x, timeout), "sympy.solve"


def _solve_monomial(lhs, rhs, x):
    """Solve ``lhs = rhs`` when both sides are products of powers."""
    ratio = lhs / rhs
    powers = ratio.as_powers_dict()
    exponent = powers.get(x)
    if exponent is None or not exponent.is_Number or exponent == 0:
        return None
    others = [(base, e) for base, e in powers.items() if base != x]
    if any(x in base.free_symbols or x in getattr(e, "free_symbols", ()) for base, e in others):
        return None
    return sympy.Mul(*[base ** (-e / exponent) for base, e in others])


def _sympy_solve(equation, x, timeout):
    # Solve over plain symbols so sympy returns every root, not only those it can prove
    # positive; the physical one is then chosen numerically and the choice reported.
    # The plain symbols never leave this function.
    plain = {s: sympy.Symbol(s.name) for s in equation.free_symbols}
    back = {p: s for s, p in plain.items()}
    roots = _sympy_solve_plain(equation.xreplace(plain), plain[x], timeout)
    return [r.xreplace(back) for r in roots]


def _sympy_solve_plain(equation, x, timeout):
    try:
        context = multiprocessing.get_context("fork")
    except ValueError:  # no fork on this platform: solve in-process, unbounded
        return _filter(sympy.solve(equation, x, dict=False))
    receiver, sender = context.Pipe(duplex=False)
    worker = context.Process(target=_worker, args=(equation, x, sender), daemon=True)
    worker.start()
    sender.close()
    try:
        if not receiver.poll(timeout):
            raise NoClosedForm(f"sympy.solve did not finish within {timeout:g} s")
        status, payload = receiver.recv()
    except EOFError:
        raise NoClosedForm("sympy.solve worker died") from None
    finally:
        if worker.is_alive():
            worker.kill()
        worker.join()
        receiver.close()
    if status != "ok":
        raise NoClosedForm(f"sympy.solve found no closed form ({payload})")
    solutions = _filter(payload)
    if not solutions:
        raise NoClosedForm("sympy.solve found no closed form")
    return solutions


def _worker(equation, x, sender):  # pragma: no cover - runs in the forked child
    try:
        sender.send(("ok", sympy.solve(equation, x, dict=False)))
    except Exception as exc:  # report any failure to the parent as data
        sender.send(("error", type(exc).__name__))
    finally:
        sender.close()


def _filter(solutions):
    return [s for s in solutions if not s.has(sympy.I)]
