"""The solve plan: which relation determines which unknown, in which order.

Planning is structural and happens before any number is computed: it says
whether the pins determine the targets, which extra pins would, which
relations become consistency checks, and which blocks must be solved together.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

import networkx as nx

from solvers.structure import (
    Partition,
    dulmage_mendelsohn,
    incidence_graph,
    solve_order,
    var_node,
)
from symbolic.errors import UnderdeterminedError
from symbolic.model import Model

MAX_COMPLETION_SIZE = 3
MAX_CANDIDATES = 24
MAX_COMPLETIONS = 6


@dataclass(frozen=True)
class Step:
    """Relations that together determine ``variables`` (one of each: explicit)."""

    relations: tuple[str, ...]
    variables: tuple[str, ...]

    @property
    def simultaneous(self) -> bool:
        return len(self.relations) > 1


@dataclass(frozen=True)
class Plan:
    """What will be solved, in order, and what is missing or surplus."""

    targets: tuple[str, ...]
    pinned: frozenset[str]
    steps: tuple[Step, ...]
    checks: tuple[str, ...]
    undetermined: tuple[str, ...]
    completions: tuple[tuple[str, ...], ...]
    unused_pins: tuple[str, ...]
    partition: Partition
    from_inputs: tuple[str, ...] = ()  # a completion made only of input quantities

    @property
    def determined(self) -> bool:
        return not self.undetermined

    def underdetermined_error(self) -> UnderdeterminedError:
        """The error to raise when the targets are not determined."""
        return UnderdeterminedError(list(self.undetermined), list(self.completions),
                                    self.from_inputs)

    @property
    def computed(self) -> tuple[str, ...]:
        return tuple(v for step in self.steps for v in step.variables)


def make_plan(model: Model, pinned: frozenset[str], targets: tuple[str, ...]) -> Plan:
    """Plan the solution of ``targets`` from the ``pinned`` quantities (cached)."""
    return _plan(model, frozenset(pinned), tuple(targets))


def upstream_pins(model: Model, follow, start, pins) -> list[str]:
    """Pins that reach ``start`` through the relations that solve each unknown.

    Parameters
    ----------
    model : Model
    follow : Callable[[str], Iterable[str]]
        For an unpinned variable, the relations to trace through (those that solve it).
    start : Iterable[str]
        Variables to trace back from.
    pins : Container[str]
        Pinned variable names; the trace stops at them.
    """
    seen, found, frontier = set(), set(), list(start)
    while frontier:
        name = frontier.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in pins:
            found.add(name)
            continue
        for relation in follow(name):
            frontier.extend(model.variables_in(relation))
    return sorted(found)


def _relations_with_unknowns(model: Model, pinned: frozenset[str]):
    return {r: model.variables_in(r) - pinned for r in model.relations}


@lru_cache(maxsize=256)
def _plan(model: Model, pinned: frozenset[str], targets: tuple[str, ...]) -> Plan:
    unknowns_of = _relations_with_unknowns(model, pinned)
    unknowns = set(model.variables) - pinned
    graph = incidence_graph(unknowns_of, unknowns)
    partition = dulmage_mendelsohn(graph)
    blocks = solve_order(partition, unknowns_of)

    undetermined = tuple(t for t in targets if t not in partition.determined)
    checks_all = sorted(partition.unmatched_relations)

    # Keep only the blocks the targets and the checks need.
    solver_block = {}
    for index, (_, variables) in enumerate(blocks):
        for v in variables:
            solver_block[v] = index
    needed: set[int] = set()
    frontier = [solver_block[t] for t in targets if t in solver_block]
    for relation in checks_all:
        frontier += [solver_block[v] for v in unknowns_of[relation] if v in solver_block]
    while frontier:
        index = frontier.pop()
        if index in needed:
            continue
        needed.add(index)
        relations, variables = blocks[index]
        for r in relations:
            for v in unknowns_of[r]:
                if v not in variables and v in solver_block:
                    frontier.append(solver_block[v])
    steps = tuple(Step(*blocks[i]) for i in sorted(needed))

    used = set()
    for step in steps:
        for r in step.relations:
            used |= model.variables_in(r)
    for r in checks_all:
        used |= model.variables_in(r)
    used |= _pins_near(model, pinned, undetermined, partition, blocks, solver_block)
    unused = tuple(sorted(p for p in pinned if p not in used))
    completions = _completions(model, pinned, targets, undetermined, partition, unknowns_of)
    from_inputs = _input_completion(model, pinned, undetermined, unknowns_of)
    if from_inputs in completions:
        from_inputs = ()
    return Plan(targets, pinned, steps, tuple(checks_all), undetermined, completions, unused,
                partition, from_inputs)


def _pins_near(model, pinned, undetermined, partition, blocks, solver_block) -> set[str]:
    """Pins an under-determined target would use: reached through its relations, and
    through the steps of any determined quantity met on the way."""

    def follow(name):
        if name in solver_block:  # determined: its own step's inputs
            return blocks[solver_block[name]][0]
        if name in partition.under_variables:
            return model.relations_of(name)
        return ()

    return set(upstream_pins(model, follow, undetermined, pinned))


def _determines(unknowns_of, variables, extra, targets) -> bool:
    reduced = {r: vs - extra for r, vs in unknowns_of.items()}
    part = dulmage_mendelsohn(incidence_graph(reduced, variables - extra))
    return all(t in part.determined or t in extra for t in targets)


def _defining_relation(model: Model, name: str) -> str | None:
    """The relation that defines a derived quantity: named after it, or with it alone on
    its left side."""
    if name in model.relations and name in model.variables_in(name):
        return name
    for r in model.relations_of(name):
        lhs = model.relations[r].lhs
        if lhs.is_Symbol and lhs.name == name:
            return r
    return None


def _input_completion(model, pinned, undetermined, unknowns_of):
    """Unfold each undetermined target through the relations that define it, down to input
    quantities: the 'from first principles' pins."""
    if not undetermined:
        return ()
    leaves, seen, stack = set(), set(), list(undetermined)
    while stack:
        name = stack.pop()
        if name in seen or name in pinned:
            continue
        seen.add(name)
        relation = _defining_relation(model, name) if model.variables[name].derived else None
        if relation is None:
            leaves.add(name)
        else:
            stack.extend(model.variables_in(relation) - {name})
    leaves -= set(undetermined)
    unknowns = set(model.variables) - set(pinned)
    if not _determines(unknowns_of, unknowns, leaves, undetermined):
        return ()
    return tuple(sorted(leaves))


def _completions(model, pinned, targets, undetermined, partition, unknowns_of):
    """Smallest sets of extra pins that would determine every target."""
    if not undetermined:
        return ()
    # Candidates: under-determined unknowns connected to an undetermined target.
    # Determined quantities in these relations count as known.
    under_rels = {r: unknowns_of[r] & partition.under_variables
                  for r in partition.under_relations}
    sub = incidence_graph(under_rels, partition.under_variables)
    reach = set()
    for t in undetermined:
        if var_node(t) in sub:
            reach |= nx.node_connected_component(sub, var_node(t))
    distance = {}
    for t in undetermined:
        if var_node(t) in sub:
            for node, d in nx.single_source_shortest_path_length(sub, var_node(t)).items():
                distance[node] = min(d, distance.get(node, d))
    candidates = sorted(
        (n[1] for n in reach if n[0] == "v" and n[1] not in targets),
        key=lambda v: (distance.get(var_node(v), 99), len(model.relations_of(v)), v),
    )[:MAX_CANDIDATES]
    relations = {r for r in under_rels if ("r", r) in reach}
    sub_unknowns = {r: under_rels[r] for r in relations}

    found = []
    for size in range(1, MAX_COMPLETION_SIZE + 1):
        for extra in combinations(candidates, size):
            extra_set = set(extra)
            reduced = {r: vs - extra_set for r, vs in sub_unknowns.items()}
            variables = {n[1] for n in reach if n[0] == "v"} - extra_set
            part = dulmage_mendelsohn(incidence_graph(reduced, variables))
            if all(t in part.determined or t not in variables for t in undetermined):
                surplus = len(part.unmatched_relations)
                found.append((surplus, sum(len(model.relations_of(v)) for v in extra), extra))
        if found:
            break
    found.sort()
    return tuple(tuple(sorted(extra)) for _, _, extra in found[:MAX_COMPLETIONS])
