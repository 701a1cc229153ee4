"""Every error type survives pickling with its fields and message (chalk in a process pool)."""

from __future__ import annotations

import dataclasses
import pickle

import pytest
import sympy
from chalk.symbolic import errors
from chalk.symbolic.dimensions import DimensionConflict
from pint.util import UnitsContainer

# One instance of every error type, with fields as the engine fills them.
EXAMPLES = [
    errors.BeyondSearch("active_params", "above", "1e15 param",
                        "the compute-optimal model at 1e35 FLOP"),
    errors.OutputError("x.pdf", "end the name in .png or .svg"),
    errors.ParseError("3.35 TB/z", "unknown unit 'z'", "write a unit such as TB/s"),
    errors.UnknownNameError("hbm_bandwith", "quantity", ["hbm_bandwidth"]),
    errors.UnitError("furlong", "not a unit chalk knows"),
    errors.UnitError("tokn", "not a unit chalk knows", ["token", "tok"]),
    errors.DimensionMismatch("hbm_bandwidth", "3 TB", "TB/s", "an amount of data",
                             "data per time"),
    errors.DimensionMismatch("active_params", "100 B param", "param", "bytes·params",
                             "params", "write '100B param'"),
    errors.MissingUnit("hbm_bandwidth", "3.35", "TB/s"),
    errors.BoundsError("n_chips", "-1 chip", "positive"),
    errors.UnderdeterminedError(["batch_size"], [("step_time",), ("n_chips", "chip_price")],
                                ("tokens_per_second",), {"batch_size": "batch_size/n_chips"}),
    errors.DegenerateError(["chip_flops", "hbm_bandwidth"]),
    errors.InconsistentPins("hardware_intensity", "I = F/B", "300 FLOP/byte",
                            "295 FLOP/byte", "1.7% apart", ["chip_flops", "hbm_bandwidth"]),
    errors.InconsistentPins("t_compute", "t = N/F", "2 ms", "1 ms", "a factor 2 apart",
                            ["chip_flops"], 0.5, ["flops_per_param"], ["2 FLOP/param/token"]),
    errors.PastDefaultBound("r", "r = 1/t", "0.25 token", "1 token", "a factor 4 apart",
                            ["n_chips", "r"], 0.75, ["e", "f"], ["1", "1"], measured="r",
                            given="30 token/s", bound="120 token/s", side="4x below",
                            bounded=["e", "f"], readers=["e", "f"], within="below 1"),
    errors.PastDefaultBound("r", "r = 1/t", "4 token", "1 token", "a factor 4 apart",
                            ["n_chips", "r"], 0.75, ["e"], ["1"], measured="r",
                            given="480 token/s", bound="120 token/s", side="4x above",
                            bounded=["e"], within="below 1"),
    errors.RangeDisagrees("hardware_intensity", "range 400 FLOP/byte to 600 FLOP/byte",
                          "295.2 FLOP/byte", ["chip_flops", "hbm_bandwidth"]),
    errors.NoSolution("batch_size", "every root is negative"),
    errors.SearchFailed("batch_size", "the scan found no sign change"),
    errors.IllConditioned("batch_size", "rounding leaves no digit"),
    errors.RoundedUp("replicas", "replicas_needed = 17 holds for every value of replicas "
                     "above 16 and at most 17"),
    errors.AmbiguousSolution("batch_size", ["64 sequence", "8 sequence"], "choose a --regime"),
    errors.UsageError("name at least one quantity to solve for"),
    errors.DataError("presets.yaml", "h100", "chip_flops", "needs a unit"),
    errors.KnowledgeError("relation r is declared twice"),
    DimensionConflict(sympy.Symbol("a"), UnitsContainer({"[time]": 1}), sympy.Symbol("b"),
                      UnitsContainer({"[length]": 1}), "terms of a sum differ"),
]


def _all_subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _all_subclasses(sub)


def test_every_error_type_has_an_example():
    declared = {c for c in _all_subclasses(errors.ChalkError)} | {errors.KnowledgeError}
    assert declared <= {type(e) for e in EXAMPLES}


@pytest.mark.parametrize("error", EXAMPLES, ids=lambda e: type(e).__name__)
def test_pickle_round_trip(error):
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error)
    assert str(back) == str(error)
    for f in dataclasses.fields(error):
        assert getattr(back, f.name) == getattr(error, f.name)


@pytest.mark.parametrize("error", [e for e in EXAMPLES if isinstance(e, errors.ChalkError)],
                         ids=lambda e: type(e).__name__)
def test_chalk_errors_are_also_builtin_errors_with_one_line(error):
    assert isinstance(error, (ValueError, KeyError))
    assert "\n" not in error.message and str(error) == error.message
    assert error.exit_status == 2


def test_messages_name_the_offending_fields():
    e = errors.DimensionMismatch("hbm_bandwidth", "3 TB", "TB/s", "an amount of data",
                                 "data per time")
    assert e.message == ("hbm_bandwidth needs a unit like TB/s (data per time), but '3 TB' "
                         "is an amount of data")
    assert str(errors.UnknownNameError("x", "preset")) == \
        "unknown preset 'x'; run 'chalk list' to see every preset"
    assert errors.DegenerateError(["a", "b"]).completions == (("a",), ("b",))


def test_a_conflict_resting_on_defaults_names_them_before_the_pins():
    # defaults that share a value are written together; the list to fix holds the rest
    pins = ("n_chips", "r")
    named = errors.InconsistentPins("t", "t = a/b", "2 s", "1 s", "a factor 2 apart", pins, 0.5,
                                    ("e", "f", "g"), ("1", "1", "2 FLOP"))
    assert named.message == (
        "pins disagree in relation t (t = a/b): left side 2 s, right side 1 s (a factor 2 "
        "apart); it rests on the conventions' defaults e = f = 1, g = 2 FLOP: pin your own "
        "values, or fix or drop one of: n_chips, r")
    below = errors.PastDefaultBound("r", "r = 1/t", "0.25", "1", "a factor 4 apart", pins, 0.75,
                                    ("e", "f"), ("1", "1"), measured="r", given="30 token/s",
                                    bound="120 token/s", side="4x below", bounded=("e", "f"),
                                    readers=("e", "f"), within="below 1")
    assert below.message == (
        "pins disagree in relation r: at the conventions' defaults e = f = 1 the bound is r = "
        "120 token/s; you gave 30 token/s, 4x below it; ask for e (or f), or pin one, to read "
        "the gap as a value below 1")
    beyond = errors.PastDefaultBound("r", "r = 1/t", "4", "1", "a factor 4 apart", pins, 0.75,
                                     ("e", "g"), ("1", "2 FLOP"), measured="r",
                                     given="480 token/s", bound="120 token/s", side="4x above",
                                     bounded=("e",), within="below 1")
    assert beyond.message == (
        "pins disagree in relation r: at the conventions' defaults e = 1, g = 2 FLOP the bound "
        "is r = 120 token/s; you gave 480 token/s, 4x above it, and no e below 1 reaches it: a pin "
        "cannot beat a physical bound; fix or drop one of: n_chips, r")
