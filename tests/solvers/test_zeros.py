"""Pinned zeros put into the relations (solvers.pinning.zeros): what each kind of
relation says once a quantity in it is absent."""

from __future__ import annotations

import sympy
from chalk.knowledge import load_model
from chalk.solvers.pinning.zeros import put_zeros


def _sides(model, relation):
    r = model.relations[relation]
    return sympy.simplify(r.lhs - r.rhs)


# Regression (issue 22): a difference that vanishes was set aside like a product that
# cannot, so no relation tied attention's peak to the matmuls' under the zero surplus
def test_a_vanishing_difference_is_an_equality():
    model = load_model()
    absent = put_zeros(model, frozenset({"attention_surplus_time_per_flop"}))
    # 0 = 1/attention_chip_flops - 1/chip_flops: both reciprocals equal
    assert "attention_surplus_time_per_flop" in absent.model.relations
    assert "attention_surplus_time_per_flop" not in absent.set_aside
    v = model.variables
    kept = absent.model.relations["attention_surplus_time_per_flop"]
    assert kept.lhs == 1 / v["attention_chip_flops"].symbol
    assert kept.rhs == 1 / v["chip_flops"].symbol
    # no bubble: 0 x (micro batches + stages - 1) = stages - 1, one stage
    bubble = put_zeros(model, frozenset({"pipeline_bubble_fraction"}))
    assert sympy.simplify(_sides(bubble.model, "pipeline_bubble_fraction")
                          - (v["pipeline_stages"].symbol - 1)) == 0


def test_a_side_that_cannot_vanish_only_defined_the_absent_quantity():
    model = load_model()
    # t_alltoall x bandwidth x ... = bytes x tokens: a product of positive quantities
    absent = put_zeros(model, frozenset({"t_alltoall"}))
    assert "t_alltoall" in absent.set_aside
    # t_allreduce = latency + bytes / bandwidth: a sum of positive terms
    absent = put_zeros(model, frozenset({"t_allreduce"}))
    assert "t_allreduce" in absent.set_aside
