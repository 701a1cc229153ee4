"""Dulmage-Mendelsohn partition and block order on small systems worked by hand."""

from chalk.solvers.analysis.structure import dulmage_mendelsohn, incidence_graph, solve_order


def partition(system, unknowns):
    return dulmage_mendelsohn(incidence_graph(system, unknowns))


def test_chain_is_square_and_ordered():
    # r1: x ; r2: x, y ; r3: y, z  ->  solve x, then y, then z
    system = {"r1": {"x"}, "r2": {"x", "y"}, "r3": {"y", "z"}}
    p = partition(system, {"x", "y", "z"})
    assert p.square_variables == {"x", "y", "z"}
    assert not p.under_variables and not p.over_variables
    order = solve_order(p, system)
    assert order == [(("r1",), ("x",)), (("r2",), ("y",)), (("r3",), ("z",))]


def test_cycle_becomes_one_block():
    # r1: x, y ; r2: x, y  ->  one simultaneous block; r3: y, z after it
    system = {"r1": {"x", "y"}, "r2": {"x", "y"}, "r3": {"y", "z"}}
    p = partition(system, {"x", "y", "z"})
    order = solve_order(p, system)
    assert order[0][0] == ("r1", "r2") and set(order[0][1]) == {"x", "y"}
    assert order[1] == (("r3",), ("z",))


def test_under_and_over_determined_parts():
    # r1: a, b (one equation, two unknowns: under); r2, r3 both only c (over)
    system = {"r1": {"a", "b"}, "r2": {"c"}, "r3": {"c"}}
    p = partition(system, {"a", "b", "c"})
    assert p.under_variables == {"a", "b"} and p.under_relations == {"r1"}
    assert p.over_variables == {"c"} and p.over_relations == {"r2", "r3"}
    assert len(p.unmatched_relations) == 1


def test_relation_with_no_unknowns_is_a_check():
    system = {"r1": set(), "r2": {"x"}}
    p = partition(system, {"x"})
    assert "r1" in p.unmatched_relations
    assert p.determined == {"x"}


def _networkx_order(partition, system):
    """The block order as networkx computes it (condensation, then the lexicographic
    topological sort keyed by each component's smallest member): the reference the
    plain-data version must reproduce block for block."""
    import networkx as nx

    solver_of = {v: r for r, v in partition.matched.items() if v in partition.determined}
    graph = nx.DiGraph()
    graph.add_nodes_from(solver_of.values())
    for relation in list(graph.nodes):
        for v in system[relation]:
            if v in solver_of and solver_of[v] != relation:
                graph.add_edge(solver_of[v], relation)
    condensed = nx.condensation(graph)
    out = []
    for c in nx.lexicographical_topological_sort(
            condensed, key=lambda c: min(condensed.nodes[c]["members"])):
        members = tuple(sorted(condensed.nodes[c]["members"]))
        out.append((members, tuple(partition.matched[r] for r in members)))
    return out


def test_the_order_of_the_knowledge_base_is_networkxs_for_many_pin_sets():
    import random

    from chalk.knowledge import load_model

    model = load_model()
    names = sorted(v for v in model.variables if model.relations_of(v))
    draw = random.Random(22)
    for size in (0, 5, 20, 40, 60, 80, 100) * 3:
        pinned = set(draw.sample(names, size))
        system = {r: model.variables_in(r) - pinned for r in model.relations}
        unknowns = {v for v in names if v not in pinned}
        p = partition(system, unknowns)
        # every unknown is matched to at most one relation and vice versa
        assert len(set(p.matched.values())) == len(p.matched)
        assert solve_order(p, system) == _networkx_order(p, system)


def test_a_cycle_through_three_relations_and_a_tail_by_hand():
    # r1: a, c ; r2: a, b ; r3: b, c form one cycle; r4: c, d follows it; r0: e alone
    system = {"r1": {"a", "c"}, "r2": {"a", "b"}, "r3": {"b", "c"}, "r4": {"c", "d"},
              "r0": {"e"}}
    p = partition(system, {"a", "b", "c", "d", "e"})
    order = solve_order(p, system)
    assert [members for members, _ in order] == [("r0",), ("r1", "r2", "r3"), ("r4",)]
