"""Tearing: solving a simultaneous block through a few guessed quantities.

A block of n relations that must be solved together usually needs only one or
two of its quantities guessed: with those "tears" known, the other relations
can be solved one after another by their closed forms, and only the torn
relations are left as residuals. Root-finding then runs in one or two
dimensions instead of n. How a torn combination is solved (closed forms, a scan
of one tear, or Newton from several starts) is a named strategy
(solvers.execution.strategies); with one tear every root in range is bracketed on a grid,
so several solutions are found (and reported), not just the nearest one.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import sympy
from chalk.solvers.analysis.structure import (
    incidence_graph,
    maximum_matching,
    strongly_connected,
    topological_by_least_member,
)
from chalk.solvers.execution import strategies
from chalk.solvers.execution.numeric import residual_at, solve_tears
from chalk.solvers.execution.steps import GUARD_RTOL
from chalk.solvers.execution.strategies import Search
from chalk.solvers.execution.symbolic_solve import Branch, NoClosedForm, solve_equation
from chalk.solvers.tolerances import BLOCK
from chalk.symbolic.evaluate import compile_expr


@dataclass
class TornBranch:
    """One regime combination of a block, torn."""

    tears: list[str]
    sequence: list  # (variable, evaluator) in solve order
    residuals: list  # (lhs evaluator, rhs evaluator) of the torn relations
    guards: list  # (a, b) evaluators: a >= b must hold
    labels: tuple[str, ...]
    all_equations: list  # (lhs, rhs) evaluators of every relation of the block
    variables: list  # every quantity of the block, in matched order
    regimes: dict = field(default_factory=dict)  # relation -> the regime it is in here
    guard_names: list = field(default_factory=list)  # (a, b) as text, beside ``guards``
    zero_ok: frozenset = frozenset()  # quantities of the block that may be exactly zero

    def complete(self, env: dict, tear_values: dict) -> dict:
        """All block values from the tear values (may contain NaN off the domain)."""
        scope = dict(env)
        scope.update(tear_values)
        with np.errstate(all="ignore"):
            for name, fn in self.sequence:
                try:
                    value = float(fn(scope))
                except (ArithmeticError, ValueError, TypeError):
                    value = math.nan
                # Every quantity is positive (or zero, where it may be: no copy beyond the
                # first): a guess that drives one below is off the physical domain, and
                # its root-finding edge is found as such.
                admitted = value > 0 or (value == 0 and name in self.zero_ok)
                scope[name] = value if admitted else math.nan
        return scope

    def first_undefined(self, env: dict, tear_values: dict) -> str:
        """The first quantity the closed forms take off its domain ("" if none does)."""
        scope = self.complete(env, tear_values)
        for name, _ in self.sequence:
            if math.isnan(scope[name]):
                return name
        return ""

    def why_not(self, env: dict, admits, show) -> str:
        """Why this untorn combination has no physical solution, in words ("" if it has
        one, or if it is torn: a torn one has no single point to speak of).

        The closed forms are evaluated without the positivity cut of :meth:`complete`:
        the first quantity that comes out non-physical is named with its value, else the
        first regime inequality that fails. ``admits(name, value)`` says whether a value
        is physical; ``show(name, value)`` formats one.
        """
        if self.tears:
            return ""
        scope = dict(env)
        with np.errstate(all="ignore"):
            for name, fn in self.sequence:
                try:
                    scope[name] = float(fn(scope))
                except (ArithmeticError, ValueError, TypeError):
                    return f"{name} has no value"
                if not admits(name, scope[name]):
                    return f"{name} would be {show(name, scope[name])}"
            for (a, b), (a_text, b_text) in zip(self.guards, self.guard_names, strict=True):
                left, right = float(a(scope)), float(b(scope))
                if left < right - GUARD_RTOL * max(abs(left), abs(right)):
                    if a_text in scope and b_text in scope:
                        return (f"{b_text} ({show(b_text, right)}) would exceed {a_text} "
                                f"({show(a_text, left)})")
                    return f"{a_text} >= {b_text} would fail"
        return ""

    def residual(self, env: dict, tear_values: dict) -> list[float]:
        """Relative residuals of the torn relations, the rest solved from the tears."""
        scope = self.complete(env, tear_values)
        return [residual_at(lhs, rhs, scope) for lhs, rhs in self.residuals]

    @property
    def strategy(self) -> str:
        """The named strategy that solves this combination (solvers.execution.strategies)."""
        return strategies.strategy_for(self.tears)

    def solve(self, env: dict, guesses: Mapping[str, float],
              ranges: Mapping[str, tuple[float, float]],
              reference: Mapping[str, float] | None = None) -> Search:
        """Every solution the combination's strategy finds.

        ``guesses`` are starting values (base units) of the block's quantities, and
        ``ranges`` the span a scan covers for each (base units, from
        solvers.execution.strategies.search_range); ``reference`` is a point where the model's
        relations hold, from which a multi-start search that fails follows a path.
        """
        return strategies.solve_branch(self, env, guesses, ranges, reference)

    def polish(self, env: dict, scope: dict) -> dict:
        """Refine a solution on every relation of the block at once.

        The closed forms behind a tear can pass through a cancellation (a saturated
        relation inverted, say) that leaves the block's values noisier than the problem
        itself; a Newton step on all relations together, started at the solution, removes
        that noise. The unpolished solution is kept if the step does not converge.
        """
        names = self.variables
        values = {n: scope[n] for n in names}
        residuals = self.all_residuals(env, values)
        if all(math.isfinite(r) and abs(r) <= BLOCK.polish_above for r in residuals):
            return scope
        if not all(math.isfinite(v) and v > 0 for v in values.values()):
            return scope  # off the domain: nothing to start from
        polished = solve_tears(lambda trial: self.all_residuals(env, trial), names, values,
                               starts=0)
        return {**env, **polished[0]} if polished else scope

    def all_residuals(self, env: dict, values: dict) -> list[float]:
        """Relative residuals of every relation of the block at ``values``."""
        scope = {**env, **values}
        return [residual_at(lhs, rhs, scope) for lhs, rhs in self.all_equations]


def tear(relations, variables, branches: list[Branch], constants: dict,
         timeout: float, zero_ok: frozenset = frozenset()) -> TornBranch:
    """Tear one regime combination of a block (``branches[i]`` is relation i's equation).

    ``zero_ok`` names the block's quantities that may be exactly zero: the closed forms
    may give them zero, and the search for fewer tears passes over sets that would tear
    one (a search in log space never reaches zero).
    """
    names = [r.name for r in relations]
    matched = _branch_matching(names, variables, branches)
    symbols = {s.name: s for r in relations for s in r.symbols}
    forms = {}
    for name, branch in zip(names, branches, strict=True):
        x = symbols[matched[name]]
        exprs = []
        if x in (branch.lhs - branch.rhs).free_symbols:  # in this regime it may not be
            try:
                exprs, _ = solve_equation(branch.lhs, branch.rhs, x, timeout)
            except NoClosedForm:
                pass
        forms[name] = exprs[0] if len(exprs) == 1 else None
    needs = {name: {s.name for s in (b.lhs - b.rhs).free_symbols} - {matched[name]}
             for name, b in zip(names, branches, strict=True)}
    producer = {v: n for n, v in matched.items()}
    forced = {n for n in names if forms[n] is None}  # no closed form: torn whatever else

    def graph_without(torn):
        """Which relations left untorn each relation's solution feeds."""
        successors = {n: set() for n in names if n not in torn}
        for n in successors:
            for v in needs[n]:
                source = producer.get(v)
                if source in successors and source != n:
                    successors[source].add(n)
        return successors

    torn = set(forced)
    while True:  # sorted everywhere, so the same block always tears the same way
        graph = graph_without(torn)
        cyclic = sorted((sorted(c) for c in strongly_connected(graph) if len(c) > 1),
                        key=lambda c: (-len(c), c))
        if not cyclic:
            break
        # break the cycle at the relation with the most connections inside it
        component = cyclic[0]
        inside = {n: graph[n] & set(component) for n in component}
        into = {n: sum(n in inside[m] for m in component) for n in component}
        torn.add(max(component, key=lambda n: into[n] * len(inside[n]) + len(inside[n])))
    torn = _fewest_tears(names, forced, torn, graph_without,
                         lambda n: matched[n] in zero_ok)
    graph = graph_without(torn)
    # no cycle is left: each component is one relation, in dependency order (by name
    # among those ready)
    order = [n for (n,) in topological_by_least_member(strongly_connected(graph), graph)]
    # A quantity whose closed form, with those before it put in, keeps none of the
    # block's quantities is fixed by this regime alone (t x (n_kv_heads / t) x ... - 1 is
    # n_kv_heads x ... - 1 whatever t): it is evaluated in that form, so an exact value
    # (no copy beyond the first: zero) comes out exact, not as the rounding of a
    # cancellation a log-space search could never meet.
    unknown = {symbols[v] for v in variables if v in symbols}
    composed = {}
    sequence = []
    for n in order:
        form = forms[n]
        whole = form.xreplace(composed)
        if not whole.free_symbols & unknown:
            form = whole
        # a long chain is composed no further than BLOCK.compose_limit nodes: past that
        # the quantity stands for itself in the forms after it
        if sum(1 for _ in sympy.preorder_traversal(whole)) <= BLOCK.compose_limit:
            composed[symbols[matched[n]]] = whole
        sequence.append((matched[n], compile_expr(form, constants)))
    everything = [(compile_expr(b.lhs, constants), compile_expr(b.rhs, constants))
                  for b in branches]
    residuals = [sides for n, sides in zip(names, everything, strict=True) if n in torn]
    guards = [(compile_expr(a, constants), compile_expr(c, constants))
              for b in branches for a, c in b.guards]
    guard_names = [(str(a), str(c)) for b in branches for a, c in b.guards]
    labels = tuple(b.regime for b in branches if b.regime)
    regimes = {n: b.regime for n, b in zip(names, branches, strict=True) if b.regime}
    return TornBranch([matched[n] for n in names if n in torn], sequence, residuals, guards,
                      labels, everything, list(variables), regimes, guard_names,
                      frozenset(zero_ok))


def _fewest_tears(names, forced: set, greedy: set, graph_without, may_be_zero) -> set:
    """The smallest set of relations to tear, if smaller than the greedy ``greedy``.

    Breaking cycles at the best-connected relation first can take two tears where one
    would do, and two tears are searched by Newton from several starts (incomplete)
    where one is scanned over its whole range (complete). Sets of up to
    ``BLOCK.max_tear_search`` relations beyond the ``forced`` ones (no closed form) are
    tried, fewest first, the first in name order among sets of one size; a set that would
    tear a quantity that may be zero is passed over (log space never reaches zero). The
    greedy set stands where no smaller set is found.
    """
    extra = len(greedy) - len(forced)
    if extra <= 1:
        return greedy
    free = sorted(n for n in names if n not in forced)
    for size in range(1, min(extra, BLOCK.max_tear_search + 1)):
        for chosen in itertools.combinations(free, size):
            if any(map(may_be_zero, chosen)):
                continue
            cycles = strongly_connected(graph_without(forced | set(chosen)))
            if not any(len(c) > 1 for c in cycles):
                return forced | set(chosen)
    return greedy


def _branch_matching(names, variables, branches) -> dict[str, str]:
    """Which quantity each relation of one regime combination solves for.

    A regime drops the losing arguments of a max/min, so the block's own matching may
    pair a relation with a quantity its branch no longer contains; matching again on
    the branch's equations lets it solve by closed forms where it can (no tear at all
    when the regime makes the block triangular). Falls back to the block's matching if
    the branch has no complete one.
    """
    wanted = set(variables)
    incidence = {n: {s.name for s in (b.lhs - b.rhs).free_symbols} & wanted
                 for n, b in zip(names, branches, strict=True)}
    matching = maximum_matching(incidence_graph(incidence, wanted))
    found = {r[1]: v[1] for r, v in matching.items() if r[0] == "r"}
    if len(found) == len(names):
        return found
    return dict(zip(names, variables, strict=True))
