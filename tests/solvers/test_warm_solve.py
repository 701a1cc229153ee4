"""What a warm solve reuses from earlier ones, and that nothing reused leaks between them:
user pins read once per quantity and text, step records handed out again, closed forms
that need no polishing, and the inputs conditioning measures."""

from __future__ import annotations

import dataclasses

import pytest
import sympy
from chalk.knowledge import load_model
from chalk.solvers.analysis.conditioning import check, measured_inputs
from chalk.solvers.execution import numeric
from chalk.solvers.execution.execute import _as_written
from chalk.solvers.pinning.pins import resolve_pins
from chalk.symbolic.errors import BoundsError, IllConditioned
from chalk.symbolic.evaluate import compile_expr
from chalk.symbolic.model import build_model
from chalk.symbolic.variables import Variable

from chalk import solve

MODEL = load_model()


def _bandwidth_model(unit: str):
    """One quantity, hbm_bandwidth, declared in ``unit`` and at most 1 of it."""
    return build_model([Variable("hbm_bandwidth", unit, "HBM bandwidth", upper=1.0)], [])


def test_the_same_text_is_read_afresh_for_a_quantity_declared_in_another_unit():
    # 2 GB/s is 0.002 TB/s, inside "at most 1 TB/s", but past "at most 1 GB/s": a pin
    # kept by its text alone would let the second model take the first one's pin.
    in_tb = _bandwidth_model("TB/s")
    in_gb = _bandwidth_model("GB/s")
    for _ in range(2):  # the second round reads from the cache
        pin = resolve_pins(in_tb, {"hbm_bandwidth": "2 GB/s"}).pins["hbm_bandwidth"]
        assert pin.value == 2e9  # 2 x 1e9 byte/s
        with pytest.raises(BoundsError, match="at most 1 GB/s"):
            resolve_pins(in_gb, {"hbm_bandwidth": "2 GB/s"})


def test_a_pin_read_from_the_cache_cannot_be_changed_and_a_changed_result_does_not_leak():
    given = {"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"}
    first = solve("hbm_drain_time", given=given)
    pin = first.derivation.pins["hbm_capacity"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        pin.value = 1.0
    # what a caller does to one answer's values stays in that answer
    first.derivation.values["hbm_capacity"] = 1.0
    first.derivation.values["hbm_drain_time"] = 1.0
    again = solve("hbm_drain_time", given=given)
    # 288e9 byte / 20e12 byte/s = 14.4e-3 s
    assert again.value("hbm_drain_time", "ms") == pytest.approx(14.4, rel=1e-12)
    assert again.derivation.pins["hbm_capacity"].value == 288e9


def test_a_reused_step_record_leaves_an_earlier_derivation_as_it_was():
    # step_time's note shows its two regimes' times, which move with the batch; the
    # other steps' notes do not, and their records are handed out again.
    pins = {"n_chips": "8 chip", "context_length": "2k token", "batch_size": "1 sequence"}
    presets = ("h100", "bf16", "llama_3_1_70b")
    first = solve("step_time", given=pins, presets=presets)
    text = first.derivation.text()
    second = solve("step_time", given={**pins, "batch_size": "64 sequence"}, presets=presets)
    assert first.derivation.text() == text
    assert second.derivation.text() != text
    notes = {r.variables[0]: r.note for r in second.derivation.steps}
    assert notes["step_time"] != {r.variables[0]: r.note
                                  for r in first.derivation.steps}["step_time"]
    third = solve("step_time", given=pins, presets=presets)
    assert third.derivation.text() == text


def test_a_closed_form_that_is_its_relation_as_written_has_nothing_to_polish():
    # t_memory = t_kv_fetch + t_weight_fetch_touched (a sum: polished unless as written)
    relation = MODEL.relations["t_memory"]
    assert relation.lhs.is_Symbol and relation.lhs.name == "t_memory"
    assert _as_written(relation, "t_memory", relation.rhs)
    assert not _as_written(relation, "t_memory", relation.rhs * 2)
    # solved for an input, the closed form is not a side of the relation
    kv_fetch = next(s for s in relation.rhs.free_symbols if s.name == "t_kv_fetch")
    solved_for = sympy.solve(relation.lhs - relation.rhs, kv_fetch)[0]
    assert not _as_written(relation, "t_kv_fetch", solved_for)
    # what polish_root would do: 1 ms + 2 ms = 3 ms, and the relation holds there exactly
    lhs, rhs = compile_expr(relation.lhs), compile_expr(relation.rhs)
    env = {"t_kv_fetch": 1e-3, "t_weight_fetch_touched": 2e-3}
    value = compile_expr(relation.rhs)(env)
    assert numeric.polish_root(lhs, rhs, env, "t_memory", value) == value
    assert value == pytest.approx(3e-3, rel=1e-15)


def test_conditioning_measures_only_inputs_of_factors_that_can_amplify():
    x, y, z, w = sympy.symbols("x y z w", positive=True)
    # x and z sit in a product of powers (elasticities 2 and 1), y in a difference
    assert measured_inputs(x**2 * z * (y - 1), ("x", "y", "z", "w")) == ("y",)
    # a sum of powers: at most the largest exponent (3)
    assert measured_inputs((x + z**3) * (y - 1), ("x", "z", "y")) == ("y",)
    # an exponent of 1e6 could put the elasticity past the warning (1e5): measured
    assert measured_inputs(x**1000000 * (y - 1), ("x", "y")) == ("x", "y")
    # no product: the whole form can amplify
    assert measured_inputs(x - y, ("x", "y", "w")) == ("x", "y")


def test_conditioning_says_the_same_with_the_inputs_it_skips():
    # f = x (1 - y) near y = 1: d ln f / d ln y = -y / (1 - y) = -(1 - 1e-7) / 1e-7,
    # about 1e7, past the warning (1e5), below the refusal (1e9); x's elasticity is 1.
    x, y = sympy.symbols("x y", positive=True)
    expr = x * (1 - y)
    evaluator = compile_expr(expr)
    env = {"x": 3.0, "y": 1 - 1e-7}
    value = evaluator(env)
    every = check("f", "r", evaluator, env, ("x", "y"), value)
    assert every == check("f", "r", evaluator, env, measured_inputs(expr, ("x", "y")), value)
    assert every.startswith("ill-conditioned: a relative change in y moves f 1e+07 times")
    # at 1 - y = 1e-10 the elasticity is 1e10: refused either way, naming y
    env = {"x": 3.0, "y": 1 - 1e-10}
    for inputs in (("x", "y"), measured_inputs(expr, ("x", "y"))):
        with pytest.raises(IllConditioned, match="rounding in y swamps it"):
            check("f", "r", evaluator, env, inputs, evaluator(env))


def test_the_tensor_parallel_all_reduce_measures_only_the_group_size():
    # bytes = 2 x run tokens x (group - 1) x d_model x activation bytes / (group x groups):
    # only (group - 1) is a difference, so only the group size can amplify rounding
    from chalk.compiled import compile_question

    given = {"n_chips": "8 chip", "batch_size": "16 sequence", "context_length": "2k token",
             "allreduce_latency": "10 us"}
    question = compile_question("step_time_with_comm", given,
                                ("h100", "bf16", "llama_3_1_70b"))
    step = next(s for s in question.compiled.steps
                if s.step.variables == ("tp_allreduce_bytes",))
    (only,) = step.candidates
    assert not only.bounded
    assert only.measured == ("attention_tensor_parallelism",)
    assert set(step.conditioning_inputs) > {"attention_tensor_parallelism", "d_model"}
