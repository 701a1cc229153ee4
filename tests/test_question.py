"""chalk.Question as a Python API: the values solve takes in, pint Quantities out.

Issue 25 ("a Python API of Quantities"): ``Question(...)()`` returned bare floats,
``q(batch_size="64 sequence")`` failed with "could not convert string to float".
"""

from __future__ import annotations

import numpy as np
import pytest
from chalk.symbolic.errors import BoundsError, DimensionMismatch, ParseError

from chalk import Q_, Question, solve

DRAIN = {"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"}


def test_answers_are_quantities_in_the_declared_unit():
    q = Question("hbm_drain_time", DRAIN)
    answer = q()["hbm_drain_time"]
    # 288e9 byte / 20e12 byte/s = 14.4 ms
    assert answer.units == Q_(1, "s").units
    assert answer.m_as("ms") == pytest.approx(14.4, rel=1e-12)


def test_values_may_be_text_or_quantities_as_solve_takes_them():
    q = Question("hbm_drain_time", DRAIN)
    # 144 GB / 20 TB/s = 7.2 ms, however the 144 GB is written
    for value in ("144 GB", "144e9 byte", Q_(144, "GB"), Q_(0.144, "TB"), 144e9):
        assert q(hbm_capacity=value)["hbm_drain_time"].m_as("ms") == pytest.approx(7.2)
    assert solve("hbm_drain_time", {**DRAIN, "hbm_capacity": "144 GB"}).value(
        "hbm_drain_time", "ms") == pytest.approx(7.2)


def test_arrays_of_quantities_give_an_array_quantity():
    q = Question("hbm_drain_time", DRAIN)
    out = q(hbm_capacity=Q_(np.array([144.0, 288.0]), "GB"))["hbm_drain_time"]
    np.testing.assert_allclose(out.m_as("ms"), [7.2, 14.4])  # 144 and 288 GB at 20 TB/s


def test_bad_values_raise_what_solve_raises():
    q = Question("hbm_drain_time", DRAIN)
    with pytest.raises(DimensionMismatch):
        q(hbm_capacity="144 s")
    with pytest.raises(DimensionMismatch):
        q(hbm_capacity=Q_(np.array([1.0, 2.0]), "s"))
    with pytest.raises(BoundsError):
        q(hbm_capacity="-5 GB")
    with pytest.raises(BoundsError):
        q(hbm_capacity=-5)
    with pytest.raises(ParseError):
        q(hbm_capacity="lots")
    with pytest.raises(ParseError):
        q(hbm_capacity=[1.0, float("nan")])
    with pytest.raises(ParseError):
        q(hbm_capacity=True)


def test_magnitudes_are_plain_numbers_in_declared_units():
    q = Question("hbm_drain_time", DRAIN)
    found = q.magnitudes(hbm_capacity="144 GB")
    assert isinstance(found["hbm_drain_time"], float)
    assert found["hbm_drain_time"] == pytest.approx(7.2e-3)


def test_question_and_answers_print_readably():
    q = Question("hbm_drain_time", DRAIN)
    assert "hbm_drain_time" in repr(q) and "hbm_capacity" in q._repr_markdown_()
    answers = q(hbm_capacity="144 GB")
    assert repr(answers) == "Answers(hbm_drain_time = 7.2 ms)"
    assert answers._repr_markdown_() == "- **hbm_drain_time** = 7.2 ms"
    # 144 and 288 GB at 20 TB/s; -1 byte is refused
    assert repr(q(hbm_capacity=np.array([144e9, 288e9, -1.0]))) == (
        "Answers(hbm_drain_time = 3 values, 7.2 ms to 14.4 ms, 1 refused)")
