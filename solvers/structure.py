"""Structural analysis of a system of relations (Dulmage-Mendelsohn).

The system is a bipartite graph: relations on one side, unknown variables on
the other, an edge where a variable appears in a relation. A maximum matching
pairs each relation with the unknown it will solve for. Alternating paths from
unmatched variables find the under-determined part; from unmatched relations,
the over-determined part; the rest is square. Strongly connected components of
the matched dependency graph give the solve order and the blocks that must be
solved simultaneously. All functions take and return plain data.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import networkx as nx
import numpy as np


def rel_node(name: str) -> tuple[str, str]:
    return ("r", name)


def var_node(name: str) -> tuple[str, str]:
    return ("v", name)


def incidence_graph(unknowns_of: Mapping[str, Iterable[str]], unknowns: Iterable[str]) -> nx.Graph:
    """Bipartite graph of relations and the unknowns they involve."""
    # Sorted insertion makes the matching, and so every plan, the same from run to run.
    graph = nx.Graph()
    graph.add_nodes_from((rel_node(r) for r in sorted(unknowns_of)), bipartite=0)
    graph.add_nodes_from((var_node(v) for v in sorted(unknowns)), bipartite=1)
    for relation in sorted(unknowns_of):
        for v in sorted(unknowns_of[relation]):
            graph.add_edge(rel_node(relation), var_node(v))
    return graph


def maximum_matching(graph: nx.Graph) -> dict[tuple[str, str], tuple[str, str]]:
    """A maximum matching as a symmetric node -> node dict.

    The engine's one bipartite matching: Hopcroft-Karp as implemented by
    ``scipy.sparse.csgraph.maximum_bipartite_matching``, run on the incidence matrix
    with rows and columns in sorted order, so the matching (and every plan built on
    it) is the same in every run, whatever the process's hash seed.
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    relations = sorted(n for n in graph if n[0] == "r")
    variables = sorted(n for n in graph if n[0] == "v")
    if not relations or not variables:
        return {}
    column = {v: j for j, v in enumerate(variables)}
    rows, cols = [], []
    for i, r in enumerate(relations):
        for v in graph[r]:
            rows.append(i)
            cols.append(column[v])
    incidence = csr_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)),
                           shape=(len(relations), len(variables)))
    incidence.sort_indices()
    matched = maximum_bipartite_matching(incidence, perm_type="column")
    matching = {}
    for i, j in enumerate(matched):
        if j >= 0:
            matching[relations[i]] = variables[j]
            matching[variables[j]] = relations[i]
    return matching


@dataclass(frozen=True)
class Partition:
    """The coarse Dulmage-Mendelsohn partition, by name."""

    under_variables: frozenset[str]
    under_relations: frozenset[str]
    over_variables: frozenset[str]
    over_relations: frozenset[str]
    square_variables: frozenset[str]
    square_relations: frozenset[str]
    unmatched_relations: frozenset[str]
    matched: Mapping[str, str]  # relation -> the variable it solves for

    @property
    def determined(self) -> frozenset[str]:
        return self.over_variables | self.square_variables


def dulmage_mendelsohn(graph: nx.Graph, matching=None) -> Partition:
    """Split ``graph`` into under-, over- and well-determined parts."""
    if matching is None:
        matching = maximum_matching(graph)
    variables = [n for n in graph if n[0] == "v"]
    relations = [n for n in graph if n[0] == "r"]
    free_vars = [v for v in variables if v not in matching]
    free_rels = [r for r in relations if r not in matching]

    under = _alternating_reach(graph, matching, free_vars)
    over = _alternating_reach(graph, matching, free_rels)
    under_v = {n[1] for n in under if n[0] == "v"}
    under_r = {n[1] for n in under if n[0] == "r"}
    over_v = {n[1] for n in over if n[0] == "v"}
    over_r = {n[1] for n in over if n[0] == "r"}
    all_v = {n[1] for n in variables}
    all_r = {n[1] for n in relations}
    matched = {r[1]: matching[r][1] for r in relations if r in matching}
    return Partition(
        under_variables=frozenset(under_v),
        under_relations=frozenset(under_r),
        over_variables=frozenset(over_v),
        over_relations=frozenset(over_r),
        square_variables=frozenset(all_v - under_v - over_v),
        square_relations=frozenset(all_r - under_r - over_r),
        unmatched_relations=frozenset(r[1] for r in free_rels),
        matched=matched,
    )


def _alternating_reach(graph, matching, starts):
    """Nodes reachable from ``starts`` leaving each node by an unmatched edge and
    arriving at the next by a matched one."""
    seen = set(starts)
    queue = deque(starts)
    while queue:
        node = queue.popleft()
        for neighbour in graph[node]:
            if matching.get(node) == neighbour:
                continue
            mate = matching.get(neighbour)
            if neighbour not in seen:
                seen.add(neighbour)
                if mate is not None and mate not in seen:
                    seen.add(mate)
                    queue.append(mate)
    return seen


def solve_order(partition: Partition, unknowns_of: Mapping[str, Iterable[str]]):
    """Blocks of the determined part in an order that solves them one by one.

    Returns
    -------
    list of (tuple of relation names, tuple of variable names)
        Each block's relations solve for its variables, given every earlier
        block. Unmatched relations are not included (they are checks).
    """
    determined = partition.determined
    solver_of = {v: r for r, v in partition.matched.items() if v in determined}
    graph = nx.DiGraph()
    graph.add_nodes_from(solver_of.values())
    for relation in graph.nodes:
        for v in unknowns_of[relation]:
            if v in solver_of and solver_of[v] != relation:
                graph.add_edge(solver_of[v], relation)
    condensed = nx.condensation(graph)
    blocks = []
    for component in nx.lexicographical_topological_sort(
        condensed, key=lambda c: min(condensed.nodes[c]["members"])
    ):
        members = tuple(sorted(condensed.nodes[component]["members"]))
        blocks.append((members, tuple(partition.matched[r] for r in members)))
    return blocks
