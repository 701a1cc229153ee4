"""The smallest sets of extra pins, on synthetic models whose null spaces are worked by
hand in each test."""

from __future__ import annotations

from chalk.solvers.planning.plan import identities, make_plan
from synthetic_models import synthetic_model


def test_pairs_whose_parts_off_the_target_point_opposite_ways_complete_it():
    # y = x z and w = x / z, nothing pinned: in log space the free directions are x and z,
    # y moves along (1, 1), w along (1, -1), x along (1, 0), z along (0, 1). No single
    # pin fixes y; any two of x, z, w span (1, 1). Off y's direction x leaves
    # (1/2, -1/2) and z (-1/2, 1/2): parallel with opposite signs.
    model = synthetic_model(["x", "z", "y", "w"], [
        ("product", lambda s: s["y"], lambda s: s["x"] * s["z"]),
        ("quotient", lambda s: s["w"], lambda s: s["x"] / s["z"]),
    ])
    plan = make_plan(model, frozenset(), ("y",))
    assert not plan.determined
    assert set(plan.completions) == {("x", "z"), ("w", "x"), ("w", "z")}


def test_a_pair_that_is_itself_parallel_does_not_complete():
    # y = x z, u = x^2: u and x move along the same direction (2, 0) and (1, 0), so
    # pinning both fixes only x; with z they complete y.
    model = synthetic_model(["x", "z", "y", "u"], [
        ("product", lambda s: s["y"], lambda s: s["x"] * s["z"]),
        ("square", lambda s: s["u"], lambda s: s["x"] ** 2),
    ])
    plan = make_plan(model, frozenset(), ("y",))
    assert set(plan.completions) == {("x", "z"), ("u", "z")}


def test_two_targets_offered_the_union_of_their_own_completions():
    # a = p q and b = r^2 share nothing: a needs p and q, b needs r; no two pins fix both
    # (they would have to span a's (1, 1, 0) and b's (0, 0, 2) over p, q, r).
    model = synthetic_model(["p", "q", "r", "a", "b"], [
        ("left", lambda s: s["a"], lambda s: s["p"] * s["q"]),
        ("right", lambda s: s["b"], lambda s: s["r"] ** 2),
    ])
    assert make_plan(model, frozenset(), ("a",)).completions == (("p", "q"),)
    assert make_plan(model, frozenset(), ("b",)).completions == (("r",),)
    assert make_plan(model, frozenset(), ("a", "b")).completions == (("p", "q", "r"),)


def test_exponents_that_are_tenths_cancel_exactly():
    # x = y^(1/10), z = x^3 and z^10 = y^3: any one of the three follows from the other
    # two exactly (3 x 1/10 = 3/10, where in binary floating point 0.1 * 3 != 0.3).
    # t^3 = v^9 / y^2 with v = y^(1/3) gives t = y^(1/3): a definition, not a consequence.
    from sympy import Rational

    model = synthetic_model(["x", "y", "z", "v", "t"], [
        ("tenth", lambda s: s["x"], lambda s: s["y"] ** Rational(1, 10)),
        ("cube", lambda s: s["z"], lambda s: s["x"] ** 3),
        ("implied", lambda s: s["z"] ** 10, lambda s: s["y"] ** 3),
        ("third", lambda s: s["v"], lambda s: s["y"] ** Rational(1, 3)),
        ("back", lambda s: s["t"] ** 3, lambda s: s["v"] ** 9 / s["y"] ** 2),
    ])
    found = identities(model)
    assert len(found) == 1 and found <= {"tenth", "cube", "implied"}
    # y pinned fixes everything, and t's reduced row is exactly t - y^(1/3)
    plan = make_plan(model, frozenset({"y"}), ("t", "z"))
    assert plan.determined
    assert plan.analysis.is_determined("t") and plan.analysis.is_determined("z")
