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
