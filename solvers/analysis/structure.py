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
    """A maximum matching as a symmetric node -> node dict (Hopcroft-Karp).

    The engine's one bipartite matching. It runs over ordered adjacency lists rather
    than networkx's set-based version, so the matching (and every plan built on it) is
    the same in every run, whatever the process's hash seed; and it is plain Python, so
    a cold ``chalk solve`` does not pay for importing scipy.sparse (about half a second).
    """
    relations = [n for n in graph if n[0] == "r"]
    adjacency = {r: list(graph[r]) for r in relations}
    mate_r: dict = {}
    mate_v: dict = {}
    infinity = float("inf")
    while True:
        # breadth-first layering from free relations
        distance = {}
        queue = deque()
        for r in relations:
            if r not in mate_r:
                distance[r] = 0
                queue.append(r)
        found = infinity
        while queue:
            r = queue.popleft()
            if distance[r] >= found:
                continue
            for v in adjacency[r]:
                nxt = mate_v.get(v)
                if nxt is None:
                    found = min(found, distance[r] + 1)
                elif nxt not in distance:
                    distance[nxt] = distance[r] + 1
                    queue.append(nxt)
        if found == infinity:
            break
        # depth-first augmentation along the layers (iterative, no recursion limit)
        for root in relations:
            if root in mate_r:
                continue
            stack = [(root, iter(adjacency[root]))]
            path = []
            while stack:
                r, edges = stack[-1]
                advanced = False
                for v in edges:
                    nxt = mate_v.get(v)
                    if nxt is None and distance[r] + 1 == found:
                        path.append((r, v))
                        for pr, pv in path:
                            mate_r[pr], mate_v[pv] = pv, pr
                        stack = []
                        advanced = True
                        break
                    if nxt is not None and distance.get(nxt) == distance[r] + 1:
                        path.append((r, v))
                        stack.append((nxt, iter(adjacency[nxt])))
                        advanced = True
                        break
                if not advanced and stack:
                    stack.pop()
                    distance[r] = infinity  # dead end for this phase
                    if path:
                        path.pop()
    matching = {}
    for r, v in mate_r.items():
        matching[r] = v
        matching[v] = r
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
