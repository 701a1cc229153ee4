"""Simultaneous blocks: what the derivation says about the solution it found."""


from chalk import solve
from solvers.blocks import MULTI_START
from symbolic.model import build_model
from symbolic.relations import Relation, definition
from symbolic.variables import Variable


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
