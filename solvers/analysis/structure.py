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

import heapq
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# A graph here is ``{node: [neighbours]}`` in insertion order (networkx's adjacency
# without its objects): building one costs a dict and lists, and iterating it gives
# the same order every run. A relation's node is ``("r", name)``, a variable's
# ``("v", name)``.
Graph = dict


def incidence_graph(unknowns_of: Mapping[str, Iterable[str]], unknowns: Iterable[str]) -> Graph:
    """Bipartite graph of relations and the unknowns they involve, as adjacency lists:
    relation nodes first, then variable nodes, each sorted by name; a relation's
    neighbours sorted, a variable's in the order of the relations."""
    # Sorted insertion makes the matching, and so every plan, the same from run to run.
    relations = sorted(unknowns_of)
    graph: Graph = {("r", r): [] for r in relations}
    for v in sorted(unknowns):
        graph[("v", v)] = []
    for relation in relations:
        node = ("r", relation)
        neighbours = graph[node]
        for v in sorted(unknowns_of[relation]):
            variable = ("v", v)
            neighbours.append(variable)
            found = graph.get(variable)
            if found is None:
                graph[variable] = [node]
            else:
                found.append(node)
    return graph


def maximum_matching(graph: Graph) -> dict[tuple[str, str], tuple[str, str]]:
    """A maximum matching as a symmetric node -> node dict (Hopcroft-Karp).

    The engine's one bipartite matching. It runs over ordered adjacency lists rather
    than networkx's set-based version, so the matching (and every plan built on it) is
    the same in every run, whatever the process's hash seed; and it is plain Python, so
    a cold ``chalk solve`` does not pay for importing scipy.sparse (about half a second).
    """
    relations = [n for n in graph if n[0] == "r"]
    adjacency = graph
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


def dulmage_mendelsohn(graph: Graph, matching=None) -> Partition:
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
    successors: dict[str, list[str]] = {r: [] for r in solver_of.values()}
    solver = solver_of.get
    for relation in successors:
        for v in unknowns_of[relation]:
            before = solver(v)
            if before is not None and before != relation:
                successors[before].append(relation)
    components = strongly_connected(successors)
    blocks = []
    for members in topological_by_least_member(components, successors):
        members = tuple(sorted(members))
        blocks.append((members, tuple(partition.matched[r] for r in members)))
    return blocks


def strongly_connected(successors: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """The strongly connected components of a directed graph (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[frozenset[str]] = []
    for root in successors:
        if root in index:
            continue
        work = [(root, iter(successors[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for following in edges:
                if following not in index:
                    index[following] = low[following] = len(index)
                    stack.append(following)
                    on_stack.add(following)
                    work.append((following, iter(successors[following])))
                    break
                if following in on_stack:
                    low[node] = min(low[node], index[following])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    members = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        members.add(member)
                        if member == node:
                            break
                    components.append(frozenset(members))
    return components


def topological_by_least_member(components: list[frozenset[str]],
                                successors: Mapping[str, Iterable[str]]
                                ) -> list[frozenset[str]]:
    """The components in dependency order, among those ready the one with the smallest
    member first (so the order is the same in every run)."""
    of = {member: i for i, members in enumerate(components) for member in members}
    after: list[set[int]] = [set() for _ in components]
    waiting = [0] * len(components)
    for node, following in successors.items():
        for other in following:
            i, j = of[node], of[other]
            if i != j and j not in after[i]:
                after[i].add(j)
                waiting[j] += 1
    least = [min(members) for members in components]
    ready = [(least[i], i) for i in range(len(components)) if not waiting[i]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(components[i])
        for j in after[i]:
            waiting[j] -= 1
            if not waiting[j]:
                heapq.heappush(ready, (least[j], j))
    return order
