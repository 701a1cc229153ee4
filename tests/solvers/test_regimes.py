"""Regimes of max/min: which one a forward step reports (scalar derivation and vectorised),
and blocks through a max solved regime by regime."""

import numpy as np
import pytest
import sympy
from chalk.solvers.execute import compile_plan
from chalk.solvers.plan import make_plan
from chalk.solvers.vectorised import evaluate
from chalk.symbolic.model import build_model
from chalk.symbolic.relations import Relation, definition
from chalk.symbolic.variables import Variable

from chalk import Q_, solve

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


def _roofline():
    """A decode step with its weight read tied to the per-sequence matmul time by the
    critical batch (B* = t_weight / t_seq, the lecture's balance with matmuls of weights
    only): the shape in which a block through max() needs solving regime by regime."""
    def v(name, unit):
        return Variable(f"test_{name}", unit, name)

    step, batch, bstar = v("step", "s"), v("batch", "1"), v("bstar", "1")
    t_seq, t_kv, t_weight = v("t_seq", "s"), v("t_kv", "s"), v("t_weight", "s")
    t_compute, t_memory = v("t_compute", "s"), v("t_memory", "s")
    relations = [
        Relation("test_t_compute", t_compute.symbol, batch.symbol * t_seq.symbol, "m",
                 definition()),
        Relation("test_t_memory", t_memory.symbol,
                 t_weight.symbol + batch.symbol * t_kv.symbol, "m", definition()),
        Relation("test_balance", t_weight.symbol, bstar.symbol * t_seq.symbol, "m",
                 definition()),
        Relation("test_step", step.symbol, sympy.Max(t_compute.symbol, t_memory.symbol), "m",
                 definition(), regimes=(("compute-bound", t_compute.symbol),
                                        ("memory-bound", t_memory.symbol))),
    ]
    variables = [step, batch, bstar, t_seq, t_kv, t_weight, t_compute, t_memory]
    return build_model(variables, relations)


def test_a_block_through_max_is_solved_regime_by_regime():
    # step 10 ms, batch 50 sequences, 0.1 ms of KV per sequence.
    # Memory-bound: t_weight = 10 - 50 x 0.1 = 5 ms; with B* = 40, t_seq = 5/40 = 0.125 ms,
    # t_compute = 6.25 ms <= 10 ms: consistent. Compute-bound: t_seq = 10/50 = 0.2 ms,
    # t_weight = 40 x 0.2 = 8 ms, t_memory = 8 + 5 = 13 ms > 10 ms: not. So 5 ms.
    model = _roofline()
    given = {"test_step": Q_(10, "ms"), "test_batch": 50, "test_t_kv": Q_(0.1, "ms")}
    s = solve("test_t_weight", {**given, "test_bstar": 40}, ["none"], model=model)
    assert s.value("test_t_weight", "ms") == pytest.approx(5, rel=1e-9)
    # With B* = 20 it turns: memory-bound gives t_compute = 50 x 5/20 = 12.5 ms > 10 ms,
    # compute-bound gives t_weight = 20 x 0.2 = 4 ms and t_memory = 9 ms <= 10 ms.
    s = solve("test_t_weight", {**given, "test_bstar": 20}, ["none"], model=model)
    assert s.value("test_t_weight", "ms") == pytest.approx(4, rel=1e-9)


def test_a_target_one_regime_fixes_is_planned_in_that_regime():
    # first = max(fast, slow) with only first pinned: mixed, the two times move together,
    # but where the fast path is the later one, first = fast fixes it outright.
    model = _model(sympy.Max)
    plan = make_plan(model, frozenset({"test_first_arrival"}), ("test_fast_path",))
    assert plan.determined
    assert plan.regime == ("test_first_arrival: fast-path",)


def test_a_target_no_regime_fixes_is_left_open_without_trying_each():
    # With only the slow path pinned, first = fast leaves both unknown and first = slow
    # says nothing of the fast path: no regime fixes it; pinning first (with the regime
    # the numbers then show) would.
    model = _model(sympy.Max)
    plan = make_plan(model, frozenset({"test_slow_path"}), ("test_fast_path",))
    assert not plan.determined and plan.regime == ()
    assert plan.undetermined == ("test_fast_path",)
    assert ("test_first_arrival",) in plan.completions
