"""Regimes of max/min: which one a forward step reports (scalar derivation and vectorised),
and blocks through a max solved regime by regime."""

import numpy as np
import pytest
import sympy
from chalk.solvers.bulk.vectorised import evaluate
from chalk.solvers.execution.execute import compile_plan
from chalk.solvers.planning.plan import make_plan
from chalk.symbolic.errors import InconsistentPins
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


def _two_steps_model():
    """A normal and a fast step, each max(compute, memory) with the same regime labels,
    sharing the compute and KV time per sequence; the price ratio of the two ties their
    step times together (the lecture's fast mode, in miniature)."""
    names = ["st", "stf", "tc", "tm", "tcf", "tmf", "cs", "kv", "tkv", "w", "b", "bf", "r",
             "pr", "cost", "costf", "p"]
    variables = [Variable(n, "1", "synthetic", typical=1.0) for n in names]
    y = {v.name: v.symbol for v in variables}

    def relation(name, lhs, rhs, **more):
        return Relation(name, lhs, rhs, "synthetic", definition(), **more)

    def step(name, total, compute, memory):
        return relation(name, y[total], sympy.Max(y[compute], y[memory]),
                        regimes=(("compute-bound", y[compute]), ("memory-bound", y[memory])))

    return build_model(variables, [
        step("step", "st", "tc", "tm"),
        relation("comp", y["tc"], y["b"] * y["cs"]),
        relation("mem", y["tm"], y["tkv"] + y["w"]),
        relation("kvf", y["tkv"], y["b"] * y["kv"]),
        step("stepf", "stf", "tcf", "tmf"),
        relation("compf", y["tcf"], y["bf"] * y["cs"]),
        relation("memf", y["tmf"], y["w"] + y["bf"] * y["kv"]),
        relation("ratio", y["bf"], y["r"] * y["b"]),
        relation("cost_rel", y["cost"], y["p"] * y["st"] / y["b"]),
        relation("costf_rel", y["costf"], y["p"] * y["stf"] / y["bf"]),
        relation("price", y["cost"] * y["pr"], y["costf"]),
    ])


def test_a_check_failing_at_a_placeholder_value_is_settled_regime_by_regime():
    # Regression (whole-model probe, seed 4314: cost_per_token refused with pins that
    # "disagree" in t_memory_fast). By hand, with b = 10, r = 0.5, w = 2, p = 1,
    # stf = 5.5, pr = 1.1: bf = r b = 5, and the price ratio gives
    # cost = p stf / (bf pr) = 1 and st = cost b / p = 10. The plan holds tcf at a
    # placeholder (it cancels from cost in the mixture of regimes); at tcf = 1 the normal
    # step is memory-bound (tm = 10) and the check stf = max(tcf, tmf) fails, 5.5
    # against 6. In the regime the numbers are in (normal step compute-bound, fast step
    # memory-bound) everything is fixed: tc = st = 10, cs = 1, tcf = 5, tmf = stf = 5.5,
    # kv = (5.5 - 2)/5 = 0.7, tkv = 7, tm = 9 (below 10, as compute-bound requires).
    # Also a regression: the two steps share their labels, and the block's record gave
    # both relations the last label it listed, so tc was judged free at the solution.
    pins = {"stf": 5.5, "w": 2, "r": 0.5, "pr": 1.1, "b": 10, "p": 1}
    s = solve("cost", pins, ["none"], model=_two_steps_model())
    assert s.value("cost") == pytest.approx(1.0, rel=1e-9)
    values = s.derivation.values
    assert values["tm"] == pytest.approx(9.0, rel=1e-9)
    assert values["tcf"] == pytest.approx(5.0, rel=1e-9)
    assert "only step: compute-bound, stepf: memory-bound holds" in s.derivation.text()


def test_pins_that_disagree_in_every_regime_are_still_reported():
    # With pr = 2 instead: cost = 5.5/(5 x 2) = 0.55 and st = 5.5. Compute-bound, cs =
    # 0.55 and tcf = 2.75, so the fast step must be memory-bound (tmf = 5.5, kv = 0.7) and
    # then tm = 9 > st: not compute-bound. Memory-bound, tm = 5.5 gives kv = 0.35 and
    # tmf = 3.75 < 5.5, so the fast step is compute-bound: tcf = 5.5, cs = 1.1 and
    # tc = 11 > st. No regime holds: the disagreement stands.
    pins = {"stf": 5.5, "w": 2, "r": 0.5, "pr": 2, "b": 10, "p": 1}
    with pytest.raises(InconsistentPins):
        solve("cost", pins, ["none"], model=_two_steps_model())


def test_the_screen_keeps_only_the_regime_that_can_fix_the_target():
    # first_arrival = max(fast, slow) with first_arrival and slow pinned: only the
    # fast-path regime (first_arrival = fast) says anything about the fast path; in the
    # slow-path regime (first_arrival = slow) no row holds it
    from chalk.solvers.analysis.jacobian import regime_rows
    from chalk.solvers.planning.regimes import may_fix

    model = _model(sympy.Max)
    pinned = frozenset({"test_first_arrival", "test_slow_path"})
    verdicts = {labels[0].split(": ")[1]: may_fix(model, pinned, ("test_fast_path",), labels)
                for labels, _ in regime_rows(model)}
    assert verdicts == {"fast-path": True, "slow-path": False}
    # a pinned target is fixed in every regime
    assert all(may_fix(model, pinned, ("test_slow_path",), labels)
               for labels, _ in regime_rows(model))


@pytest.mark.parametrize(("targets", "presets", "given", "regime_fixes"), [
    # a serving row: the headline sizes are tested against the architecture in every regime
    (["tokens_per_second", "batch_size"], ["h200", "fp8", "llama_3_1_70b"],
     {"n_chips": "8 chip", "context_length": "1500 token", "memory_fill": "1"}, False),
    (["step_time"], ["h800", "fp8", "deepseek_v3"],
     {"n_chips": "32 chip", "batch_size": "64 sequence", "context_length": "4096 token"},
     False),
    # the batch behind a step time: the mixture leaves it open, one regime fixes it
    (["batch_size"], ["h100", "bf16", "llama_3_1_70b"],
     {"n_chips": "8 chip", "context_length": "4096 token", "step_time": "20 ms"}, True),
])
def test_the_screen_sets_aside_only_combinations_the_analysis_would_refuse(
        monkeypatch, targets, presets, given, regime_fixes):
    # Whatever the planner's regime searches screen out while preparing real questions,
    # the rank analysis of that combination leaves some target open: the screen spares
    # analyses, it never changes a plan.
    from chalk.solvers.planning import plan as planning

    planning.clear_caches()
    screened = planning.may_fix
    asked = []

    def recording(model, pinned, wanted, labels):
        verdict = screened(model, pinned, wanted, labels)
        asked.append((verdict, model, pinned, tuple(wanted), labels))
        return verdict

    monkeypatch.setattr(planning, "may_fix", recording)
    solve(targets, given, presets)

    def fixes(model, pinned, wanted, labels):
        analysis, _ = planning._analysis(model, pinned, wanted, "near", labels)
        return all(analysis.is_determined(t) for t in wanted)

    refused = [a[1:] for a in asked if not a[0]]
    assert refused  # the questions do search regimes
    assert not any(fixes(*a) for a in refused[:40])
    if regime_fixes:
        assert any(fixes(*a[1:]) for a in asked if a[0])
