"""Which regime a forward max/min step reports (scalar derivation and vectorised)."""

import numpy as np
import sympy

from chalk import Q_, solve
from solvers.execute import compile_plan
from solvers.plan import make_plan
from solvers.vectorised import evaluate
from symbolic.model import build_model
from symbolic.relations import Relation, definition
from symbolic.variables import Variable

FAST = Variable("test_fast_path", "s", "time along one path")
SLOW = Variable("test_slow_path", "s", "time along the other path")
FIRST = Variable("test_first_arrival", "s", "whichever path finishes first")


def _model(node):
    relation = Relation("test_first_arrival", FIRST.symbol, node(FAST.symbol, SLOW.symbol),
                        "the earlier (min) or later (max) of two times", definition(),
                        regimes=(("fast-path", FAST.symbol), ("slow-path", SLOW.symbol)))
    return build_model([FAST, SLOW, FIRST], [relation])


def test_forward_min_reports_the_smaller_argument():
    # Regression: the active regime of a forward step was always the largest argument,
    # which is wrong for min(): with 1 s and 2 s, min picks the 1 s path.
    model = _model(sympy.Min)
    given = {"test_fast_path": Q_(1, "s"), "test_slow_path": Q_(2, "s")}
    s = solve("test_first_arrival", given, ["none"], model=model)
    assert s.value("test_first_arrival") == 1.0
    assert s.derivation.steps[-1].regime == "fast-path"


def test_forward_max_reports_the_larger_argument():
    model = _model(sympy.Max)
    given = {"test_fast_path": Q_(1, "s"), "test_slow_path": Q_(2, "s")}
    s = solve("test_first_arrival", given, ["none"], model=model)
    assert s.value("test_first_arrival") == 2.0
    assert s.derivation.steps[-1].regime == "slow-path"


def test_vectorised_min_labels_each_element_by_its_smaller_argument():
    model = _model(sympy.Min)
    plan = make_plan(model, frozenset({"test_fast_path", "test_slow_path"}),
                     ("test_first_arrival",))
    compiled = compile_plan(model, plan)
    # fast path 1 s or 3 s against a 2 s slow path: the first element is fast-path-bound.
    result = evaluate(compiled, {"test_fast_path": np.array([1.0, 3.0]), "test_slow_path": 2.0})
    assert list(result.regimes["test_first_arrival"]) == ["fast-path", "slow-path"]
    assert list(result.values["test_first_arrival"]) == [1.0, 2.0]
