"""When a value is past a condition's bound: beyond rounding, and as printed."""

import numpy as np
from chalk.solvers.records.flags import Flag, flag_text, violated
from chalk.symbolic.printing.numbers import UnitDisplay


def test_a_value_that_prints_as_the_bound_is_on_it():
    # printed with 4 significant digits: 1.0000195 and 1.0004 print as 1, 1.0006 as 1.001
    assert not violated(1.0000195, 1.0, "<=")
    assert not violated(1.0004, 1.0, "<=")
    assert violated(1.0006, 1.0, "<=")
    assert violated(4.316, 1.0, "<=")
    # below a lower bound: 0.99996 prints as 1, 0.9996 as 0.9996
    assert not violated(0.99996, 1.0, ">=")
    assert violated(0.9996, 1.0, ">=")
    assert not violated(0.5, 1.0, "<=") and not violated(2.0, 1.0, ">=")


def test_an_array_is_judged_point_by_point_as_a_number_is():
    values = [0.5, 1.0000195, 1.0004, 1.0006, 4.316]
    assert list(violated(np.array(values), 1.0, "<=")) == [violated(v, 1.0, "<=")
                                                          for v in values]


def test_a_flag_is_its_line_and_knows_its_quantity():
    flag = flag_text("memory_fill", 2.094, 1.0, "<=", "does not fit", UnitDisplay("", 1.0),
                     1.0)
    assert isinstance(flag, Flag) and flag.quantity == "memory_fill"
    assert flag == "memory_fill = 2.094 is above 1: does not fit"
