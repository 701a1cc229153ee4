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
