"""The compiled question (chalk.compiled): each path answers as ``chalk.solve`` does.

Regression tests for issue 22's "other paths answer what solve refuses": every number
below is worked by hand in the test.
"""

from __future__ import annotations

import numpy as np
import pytest
from chalk.symbolic.errors import BoundsError, ChalkError, InconsistentPins, UsageError

from chalk import Question, fit, solve
from chalk.applications.sweep import sweep
from chalk.compiled import compile_question

# decode compute time: t_compute = batch * (2 FLOP/param * active + attention FLOPs per
# token) / (n_chips * chip_flops), one token per sequence per step
COMPUTE = {"context_length": "4k token", "active_params": "37e9 param",
           "batch_size": "64 sequence", "chip_flops": "989 TFLOP/s", "n_chips": "8 chip"}
WITH_ATTENTION = 64 * (2 * 37e9 + 5e10) / (8 * 989e12)  # 1.00303 ms
WITHOUT_ATTENTION = 64 * (2 * 37e9) / (8 * 989e12)  # 0.59858 ms


def test_a_zero_that_removed_a_term_is_put_back_when_asked_again_with_a_value():
    # built with attention left out (a zero removes the term), asked again with 5e10
    q = Question("t_compute", {**COMPUTE, "attention_flops_per_token": "0 FLOP/token"})
    assert q.magnitudes()["t_compute"] == pytest.approx(WITHOUT_ATTENTION, rel=1e-9)
    assert q.magnitudes(attention_flops_per_token=5e10)["t_compute"] == pytest.approx(
        WITH_ATTENTION, rel=1e-9)
    direct = solve("t_compute", {**COMPUTE, "attention_flops_per_token": "5e10 FLOP/token"})
    assert direct.value("t_compute", "s") == pytest.approx(WITH_ATTENTION, rel=1e-9)
    # and the other way round: a value that becomes zero takes the term out
    q = Question("t_compute", {**COMPUTE, "attention_flops_per_token": "5e10 FLOP/token"})
    assert q.magnitudes(attention_flops_per_token=0.0)["t_compute"] == pytest.approx(
        WITHOUT_ATTENTION, rel=1e-9)


def test_question_refuses_what_solve_refuses():
    q = Question("hbm_drain_time", {"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"})
    with pytest.raises(BoundsError):
        q(hbm_capacity=-5.0)
    assert q.magnitudes(hbm_capacity=144e9)["hbm_drain_time"] == pytest.approx(144e9 / 20e12)
    # arrays: the refused point is NaN and named
    out = q.magnitudes(hbm_capacity=np.array([144e9, -1.0]))["hbm_drain_time"]
    assert out[0] == pytest.approx(7.2e-3) and np.isnan(out[1])
    assert isinstance(q.refusals()[1], BoundsError)


# 80 GB / 3.35 TB/s = 23.88 ms, not the 1 s pinned: the three pins disagree
DRAIN = {"hbm_capacity": "80 GB", "hbm_bandwidth": "3.35 TB/s", "hbm_drain_time": "1 s"}


def test_a_sweep_refuses_each_point_solve_refuses():
    with pytest.raises(InconsistentPins):
        solve("hardware_intensity", {**DRAIN, "chip_flops": "100 TFLOP/s"})
    table = sweep("hardware_intensity", "chip_flops", "100 TFLOP/s", "1000 TFLOP/s", 4,
                  given=DRAIN)
    assert np.isnan(table.y_values["hardware_intensity"]).all()
    assert set(table.refusals) == {0, 1, 2, 3}
    assert all(isinstance(e, InconsistentPins) for e in table.refusals.values())
    assert "23.88 ms" in table.text() and "1 s" in table.text()


def test_a_sweep_takes_no_range_it_would_replace_by_its_middle():
    with pytest.raises(UsageError, match="hbm_bandwidth is a range"):
        sweep("hbm_drain_time", "hbm_capacity", "10 GB", "100 GB", 3,
              given={"hbm_bandwidth": "1..3 TB/s"})


def test_a_sweep_point_is_solves_answer():
    # hardware_intensity = chip_flops / hbm_bandwidth: 500e12 / 2e12 = 250 FLOP/byte
    table = sweep("hardware_intensity", "chip_flops", "100 TFLOP/s", "500 TFLOP/s", 3,
                  given={"hbm_bandwidth": "2 TB/s"})
    assert table.y_values["hardware_intensity"] == pytest.approx([50.0, 150.0, 250.0],
                                                         rel=1e-12)


def test_evaluate_answers_a_point_the_bulk_run_cannot_vouch_for_in_full():
    question = compile_question("hbm_drain_time",
                                {"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"})
    result = question.evaluate({"hbm_capacity": np.array([144e9, 0.0])})
    assert result.values["hbm_drain_time"][0] == pytest.approx(7.2e-3)
    assert isinstance(result.refusals[1], ChalkError)  # a zero capacity is no capacity
    assert result.settled == 1


def test_evaluate_refuses_every_point_of_an_under_determined_question():
    question = compile_question("hbm_drain_time", {"hbm_capacity": "288 GB"})
    result = question.evaluate({"hbm_capacity": np.array([1e9, 2e9])})
    assert set(result.refusals) == {0, 1}
    assert type(result.refusals[0]).__name__ == "UnderdeterminedError"


def test_an_under_determined_question_refuses_a_value_out_of_bounds_for_that_first():
    # Regression (issue 22, one answer): solve reads a pin before it plans, so a negative
    # capacity is a BoundsError even where the pins determine nothing; evaluate refused
    # every point as under-determined, and chalk.Question raised that when made
    from chalk.symbolic.errors import BoundsError, UnderdeterminedError

    from chalk import Question, solve

    with pytest.raises(BoundsError):
        solve("hbm_drain_time", {"hbm_capacity": "-1 GB"})
    question = compile_question("hbm_drain_time", {"hbm_capacity": "288 GB"})
    result = question.evaluate({"hbm_capacity": np.array([-1e9, 2e9])})
    assert type(result.refusals[0]) is BoundsError
    assert type(result.refusals[1]) is UnderdeterminedError
    asked = Question("hbm_drain_time", {"hbm_capacity": "288 GB"})
    with pytest.raises(BoundsError):
        asked.magnitudes(hbm_capacity=-1.0)
    with pytest.raises(UnderdeterminedError):
        asked.magnitudes(hbm_capacity=2.0)


def test_changing_a_pin_the_question_does_not_have_is_refused():
    question = compile_question("hbm_drain_time",
                                {"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"})
    with pytest.raises(UsageError, match="not pinned in this question"):
        question.solve({"chip_flops": 1e15})


def test_a_fit_file_that_pins_a_quantity_twice_is_refused(tmp_path):
    # mem_bw is an alias of hbm_bandwidth: solve and report refuse "pinned twice"
    with pytest.raises(ChalkError, match="pinned twice"):
        solve("hardware_intensity", {"hbm_bandwidth": "3.35 TB/s", "mem_bw": "1 TB/s",
                                     "chip_flops": "989 TFLOP/s"})
    spec = tmp_path / "twice.toml"
    spec.write_text('title = "twice"\n'
                    'pins = { hbm_bandwidth = "3.35 TB/s", mem_bw = "1 TB/s" }\n'
                    '[unknowns]\nchip_flops = "100e12..10e15 FLOP/s"\n'
                    '[[observations]]\nquantity = "hardware_intensity"\n'
                    'value = "lognormal(295 FLOP/byte, 0.1)"\n')
    with pytest.raises(ChalkError, match="pinned twice"):
        fit(str(spec))


def test_a_fits_predictions_are_solves_answers_at_the_estimate(tmp_path):
    # one chip, one unknown: hardware_intensity = chip_flops / 3.35e12 byte/s observed at
    # 295 FLOP/byte fixes chip_flops = 295 * 3.35e12 = 988.25e12 FLOP/s
    spec = tmp_path / "one.toml"
    spec.write_text('title = "one"\npins = { hbm_bandwidth = "3.35 TB/s" }\n'
                    '[unknowns]\nchip_flops = "100e12..10e15 FLOP/s"\n'
                    '[[observations]]\nquantity = "hardware_intensity"\n'
                    'value = "lognormal(295 FLOP/byte, 0.1)"\n')
    result = fit(str(spec))
    estimate = result.estimates[0]
    assert estimate.value == pytest.approx(295 * 3.35e12, rel=1e-6)
    predicted = result.residuals[0].predicted
    direct = solve("hardware_intensity", {"hbm_bandwidth": "3.35 TB/s",
                                          "chip_flops": f"{estimate.value!r} FLOP/s"})
    assert predicted == pytest.approx(direct.value("hardware_intensity"), rel=1e-9)


def test_an_outcome_is_solves_answer_or_its_refusal_as_data():
    q = compile_question("hbm_drain_time", {"hbm_capacity": "288 GB",
                                            "hbm_bandwidth": "20 TB/s"})
    # 144e9 byte / 20e12 byte/s = 7.2 ms, by a closed form (proven unique)
    done = q.outcome({"hbm_capacity": 144e9})
    assert done.status == "solved" and done.proven and done.error is None
    assert done.values == {"hbm_drain_time": pytest.approx(7.2e-3, rel=1e-12)}
    assert done.result().value("hbm_drain_time", "ms") == pytest.approx(7.2, rel=1e-12)
    # a negative capacity: solve raises, the outcome holds the same error
    refused = q.outcome({"hbm_capacity": -5.0})
    assert refused.status == "refused" and not refused.proven and refused.values == {}
    assert isinstance(refused.error, BoundsError)
    with pytest.raises(BoundsError):
        q.solve({"hbm_capacity": -5.0})
    with pytest.raises(UsageError):  # a pin the question does not have is a misuse
        q.outcome({"chip_flops": 1e15})


def test_an_outcome_carries_its_notes_as_data():
    from chalk.solvers.records.notes import Kind

    done = compile_question("t_compute", {**COMPUTE,
                                          "attention_flops_per_token": "0 FLOP/token"}).outcome()
    # the zero takes the attention term out: 64 x 2 x 37e9 / (8 x 989e12) = 0.5986 ms
    assert done.values["t_compute"] == pytest.approx(WITHOUT_ATTENTION, rel=1e-9)
    assert Kind.ABSENT in {n.kind for n in done.notes}


def test_chalk_solve_answers_through_the_compiled_question_and_raises_its_refusal():
    # chalk.solve is the compiled question's outcome at the pins as given: the solution
    # carries that question (288e9 byte / 20e12 byte/s = 14.4 ms), and a refusal is the
    # Outcome's error raised at the edge, the same type and words
    s = solve("hbm_drain_time", {"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"})
    assert s.value("hbm_drain_time", "ms") == pytest.approx(14.4, rel=1e-12)
    assert s.question is not None and s.question.targets == ("hbm_drain_time",)
    asked = ("hardware_intensity", {**DRAIN, "chip_flops": "100 TFLOP/s"})
    refused = compile_question(*asked).outcome()
    assert refused.status == "refused" and isinstance(refused.error, InconsistentPins)
    with pytest.raises(InconsistentPins) as raised:
        solve(*asked)
    assert raised.value.message == refused.error.message
