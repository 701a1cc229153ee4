"""Tearing: solving a simultaneous block through a few guessed quantities.

A block of n relations that must be solved together usually needs only one or
two of its quantities guessed: with those "tears" known, the other relations
can be solved one after another by their closed forms, and only the torn
relations are left as residuals. Root-finding then runs in one or two
dimensions instead of n. With one tear every root in range is bracketed on a
grid, so several solutions are found (and reported), not just the nearest one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx
import numpy as np

from solvers.numeric import residual_at, roots_scalar, solve_tears
from solvers.symbolic_solve import Branch, _NoClosedForm, solve_equation
from symbolic.evaluate import compile_expr


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
                # Every quantity is positive: a guess that drives one to zero or below is
                # off the physical domain, and its root-finding edge is found as such.
                scope[name] = value if value > 0 else math.nan
        return scope

    def first_undefined(self, env: dict, tear_values: dict) -> str:
        """The first quantity the closed forms take off its domain ("" if none does)."""
        scope = self.complete(env, tear_values)
        for name, _ in self.sequence:
            if math.isnan(scope[name]):
                return name
        return ""

    def residual(self, env: dict, tear_values: dict) -> list[float]:
        scope = self.complete(env, tear_values)
        return [residual_at(lhs, rhs, scope) for lhs, rhs in self.residuals]

    def solve(self, env: dict, guesses: dict) -> list[dict]:
        """Every solution found: one tear is scanned exhaustively, more use multi-start."""
        if not self.tears:  # in this regime the block is no longer a cycle
            scope = self.complete(env, {})
            return [scope] if all(abs(r) < 1e-9 for r in self.residual(env, {})) else []
        if len(self.tears) == 1:
            name = self.tears[0]

            def f(log_x):
                return self.residual(env, {name: math.exp(log_x)})[0]

            def why_undefined(log_x):
                return self.first_undefined(env, {name: math.exp(log_x)})

            roots = roots_scalar(f, why_undefined=why_undefined)
            if not roots:
                # A residual that is zero wherever it is defined: any value of the tear
                # satisfies the block. Hold the tear at its guess; whether anything asked
                # for depends on it is decided at the solution (solvers.rank.open_at).
                probe = [f(g) for g in np.linspace(math.log(1e-30), math.log(1e30), 61)]
                finite = [abs(v) for v in probe if math.isfinite(v)]
                if finite and max(finite) < 1e-12:
                    return [self.complete(env, {name: guesses[name]})]
            return [self._polish(env, self.complete(env, {name: r})) for r in roots]
        found = solve_tears(lambda values: self.residual(env, values), self.tears, guesses)
        if found:
            return [self._polish(env, self.complete(env, values)) for values in found]
        # Guesses far from the answer can push the closed forms off their domain (a
        # difference going negative); then solve every relation of the block at once.
        names = self.variables
        full = solve_tears(lambda values: self._all_residuals(env, values), names, guesses)
        return [{**env, **values} for values in full]

    def _polish(self, env: dict, scope: dict) -> dict:
        """Refine a solution on every relation of the block at once.

        The closed forms behind a tear can pass through a cancellation (a saturated
        relation inverted, say) that leaves the block's values noisier than the problem
        itself; a Newton step on all relations together, started at the solution, removes
        that noise. The unpolished solution is kept if the step does not converge.
        """
        names = self.variables
        values = {n: scope[n] for n in names}
        residuals = self._all_residuals(env, values)
        if all(math.isfinite(r) and abs(r) <= POLISH_ABOVE for r in residuals):
            return scope
        polished = solve_tears(lambda trial: self._all_residuals(env, trial), names, values,
                               starts=0)
        return {**env, **polished[0]} if polished else scope

    def _all_residuals(self, env: dict, values: dict) -> list[float]:
        scope = {**env, **values}
        return [residual_at(lhs, rhs, scope) for lhs, rhs in self.all_equations]


POLISH_ABOVE = 1e-13  # block residual above which a torn solution is refined on all relations


def tear(relations, variables, branches: list[Branch], constants: dict,
         timeout: float) -> TornBranch:
    """Tear one regime combination of a block (``branches[i]`` is relation i's equation)."""
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
            except _NoClosedForm:
                pass
        forms[name] = exprs[0] if len(exprs) == 1 else None
    needs = {name: {s.name for s in (b.lhs - b.rhs).free_symbols} - {matched[name]}
             for name, b in zip(names, branches, strict=True)}
    producer = {v: n for n, v in matched.items()}
    torn = {n for n in names if forms[n] is None}
    while True:  # sorted everywhere, so the same block always tears the same way
        graph = nx.DiGraph()
        graph.add_nodes_from(n for n in names if n not in torn)
        for n in list(graph.nodes):
            for v in sorted(needs[n]):
                source = producer.get(v)
                if source is not None and source not in torn and source != n:
                    graph.add_edge(source, n)
        cyclic = sorted((sorted(c) for c in nx.strongly_connected_components(graph)
                         if len(c) > 1), key=lambda c: (-len(c), c))
        if not cyclic:
            break
        # break the cycle at the relation with the most connections inside it
        component = cyclic[0]
        sub = graph.subgraph(component)
        torn.add(max(sorted(component), key=lambda n: sub.in_degree(n) * sub.out_degree(n)
                     + sub.out_degree(n)))
    order = list(nx.lexicographical_topological_sort(graph))
    sequence = [(matched[n], compile_expr(forms[n], constants)) for n in order]
    everything = [(compile_expr(b.lhs, constants), compile_expr(b.rhs, constants))
                  for b in branches]
    residuals = [sides for n, sides in zip(names, everything, strict=True) if n in torn]
    guards = [(compile_expr(a, constants), compile_expr(c, constants))
              for b in branches for a, c in b.guards]
    labels = tuple(b.regime for b in branches if b.regime)
    return TornBranch([matched[n] for n in names if n in torn], sequence, residuals, guards,
                      labels, everything, list(variables))


def _branch_matching(names, variables, branches) -> dict[str, str]:
    """Which quantity each relation of one regime combination solves for.

    A regime drops the losing arguments of a max/min, so the block's own matching may
    pair a relation with a quantity its branch no longer contains; matching again on
    the branch's equations lets it solve by closed forms where it can (no tear at all
    when the regime makes the block triangular). Falls back to the block's matching if
    the branch has no complete one.
    """
    from solvers.structure import incidence_graph, maximum_matching

    wanted = set(variables)
    incidence = {n: {s.name for s in (b.lhs - b.rhs).free_symbols} & wanted
                 for n, b in zip(names, branches, strict=True)}
    matching = maximum_matching(incidence_graph(incidence, wanted))
    found = {r[1]: v[1] for r, v in matching.items() if r[0] == "r"}
    if len(found) == len(names):
        return found
    return dict(zip(names, variables, strict=True))


def degenerate_directions(branch: TornBranch, env: dict, scope: dict, names: list[str],
                          step: float = 1e-5, threshold: float = 1e-6) -> list[str]:
    """Quantities along which the block's equations are flat at a solution (a null
    direction of the log-space Jacobian of all its relations, by central differences);
    empty if it is regular."""
    equations = branch.all_equations
    columns = []
    for name in names:
        up, down = dict(scope), dict(scope)
        up[name] = scope[name] * math.exp(step)
        down[name] = scope[name] * math.exp(-step)
        columns.append([(residual_at(lhs, rhs, up) - residual_at(lhs, rhs, down)) / (2 * step)
                        for lhs, rhs in equations])
    jacobian = np.array(columns).T
    if not np.all(np.isfinite(jacobian)):
        return []
    _, singular, vt = np.linalg.svd(jacobian)
    if singular.size < len(names) or singular[-1] <= threshold * max(singular[0], 1e-300):
        null = vt[-1]
        weight = np.abs(null)
        return [n for n, w in zip(names, weight, strict=True) if w > 0.05 * weight.max()]
    return []

