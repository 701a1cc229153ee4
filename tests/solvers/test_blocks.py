"""Simultaneous blocks: the strategy that solved them, and what the derivation says."""


import pytest
from chalk.solvers.blocks import MULTI_START
from chalk.solvers.execute import compile_plan
from chalk.solvers.plan import make_plan
from chalk.solvers.strategies import Search, search_range
from chalk.symbolic.errors import NoSolution, SearchFailed
from chalk.symbolic.model import build_model
from chalk.symbolic.relations import Relation, definition
from chalk.symbolic.variables import Variable

from chalk import solve


def _squares_model():
    """x^2 + y^2 = p, y^2 + z^2 = q, z^2 + x^2 = r.

    Solved for any one of its quantities each relation has two roots (plus and minus a
    square root), so no closed form settles the block: all three relations are torn and
    the block goes to the multi-start search. The squares are linear in each other, so
    the positive solution is known by hand: x^2 = (p - q + r) / 2, y^2 = p - x^2,
    z^2 = q - y^2.
    """
    names = ["x", "y", "z", "p", "q", "r"]
    variables = [Variable(n, "1", "synthetic", typical=1.0) for n in names]
    x, y, z, p, q, r = (v.symbol for v in variables)
    relations = [
        Relation("sum_xy", p, x ** 2 + y ** 2, "synthetic", definition()),
        Relation("sum_yz", q, y ** 2 + z ** 2, "synthetic", definition()),
        Relation("sum_zx", r, z ** 2 + x ** 2, "synthetic", definition()),
    ]
    return build_model(variables, relations)


@pytest.mark.slow  # forked sympy solves of synthetic blocks: seconds
def test_a_multi_start_answer_says_it_may_not_be_unique():
    model = _squares_model()
    s = solve(["x", "y", "z"], {"p": 5, "q": 13, "r": 10}, ["none"], model=model)
    # x^2 = (5 - 13 + 10) / 2 = 1, y^2 = 5 - 1 = 4, z^2 = 13 - 4 = 9
    assert abs(s.value("x") - 1.0) < 1e-9
    assert abs(s.value("y") - 2.0) < 1e-9
    assert abs(s.value("z") - 3.0) < 1e-9
    blocks = [i for i, step in enumerate(s.derivation.steps, 1) if step.method == MULTI_START]
    assert blocks
    notes = [n for n in s.derivation.notes if "multi-start" in n]
    assert len(notes) == len(blocks)
    assert all(note.startswith(f"step {i} (") for i, note in zip(blocks, notes, strict=True))
    assert "others may exist" in s.derivation.text()


def _reciprocal_model():
    """s = 1/x + 1/y and c = x*y: torn at x (y = x/(s*x - 1)), so one tear is scanned.

    x + y = s*x*y = s*c, so x and y are the roots of z^2 - s*c*z + c = 0.
    """
    names = ["x", "y", "s", "c"]
    variables = [Variable(n, "1", "synthetic", typical=1.0) for n in names]
    x, y, s, c = (v.symbol for v in variables)
    relations = [
        Relation("split", s, 1 / x + 1 / y, "synthetic", definition()),
        Relation("product", c, x * y, "synthetic", definition()),
    ]
    return build_model(variables, relations)


def _searches(model, pins, targets) -> list[Search]:
    """What each regime combination of the plan's block finds (dimensionless pins)."""
    plan = make_plan(model, frozenset(pins), tuple(targets))
    compiled = compile_plan(model, plan)
    cstep = next(step for step in compiled.steps if step.kind == "block")
    env = {**compiled.constants, **pins}
    names = cstep.step.variables
    guesses = {n: model.variables[n].typical for n in names}
    ranges = {n: search_range(model.variables[n]) for n in names}
    return [branch.solve(env, guesses, ranges) for branch in cstep.block_branches]


def test_one_tear_is_scanned_completely_and_every_solution_is_found():
    # x = 3/2, y = 3: s = 2/3 + 1/3 = 1, c = 9/2; the swapped pair is the other solution
    (search,) = _searches(_reciprocal_model(), {"s": 1.0, "c": 4.5}, ["x", "y"])
    assert search.strategy == "scan" and search.complete
    found = sorted((round(v["x"], 12), round(v["y"], 12)) for v in search.solutions)
    assert found == [(1.5, 3.0), (3.0, 1.5)]


@pytest.mark.slow  # forked sympy solves of synthetic blocks: seconds
def test_several_tears_use_newton_multi_start_which_is_not_complete():
    (search,) = _searches(_squares_model(), {"p": 5.0, "q": 13.0, "r": 10.0}, ["x", "y", "z"])
    assert search.strategy == "newton multi-start" and not search.complete
    assert any(abs(v["x"] - 1) < 1e-9 and abs(v["y"] - 2) < 1e-9 and abs(v["z"] - 3) < 1e-9
               for v in search.solutions)


def test_a_search_names_one_of_the_strategies():
    with pytest.raises(ValueError, match="unknown strategy"):
        Search((), True, "guess", "")


@pytest.mark.slow  # forked sympy solves of synthetic blocks: seconds
def test_only_a_complete_search_may_claim_there_is_no_solution():
    # s = 1, c = 1: x + y = x*y = 1 has no positive solution (discriminant 1 - 4 < 0). The
    # one tear is scanned over its whole plausible range, so "no solution" is proven there.
    with pytest.raises(NoSolution, match="no physical solution with x in its plausible range"):
        solve(["x", "y"], {"s": 1, "c": 1}, ["none"], model=_reciprocal_model())
    # p = q = 1, r = 10: x^2 = (1 - 1 + 10)/2 = 5 > p, so y^2 < 0: no positive solution
    # either, but multi-start only fails to find one, and says so.
    with pytest.raises(SearchFailed, match="but one may exist"):
        solve(["x", "y", "z"], {"p": 1, "q": 1, "r": 10}, ["none"], model=_squares_model())
