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


# Regression (kv23): the conventions' kv_extra_copies = 0 was balanced into
# attention_tensor_parallelism x kv_elements_per_chip / kv_elements_per_layer = 1, so with
# DeepSeek-V3 (one latent, held whole on each chip) and no n_chips it made an attention
# group of one chip, a stage of one chip, and flagged weight_fill = 1.342e12 byte / 80 GB
# = 16.78 on an H100 for a question that pins no chips at all
def test_an_absence_is_no_ground_for_what_computes_it():
    model = load_model()
    absent = put_zeros(model, frozenset({"kv_extra_copies"}))
    # the group's chips and the per-chip KV have relations of their own (attention_groups,
    # kv_elements_per_chip_*): the zero only defined the absent quantity
    assert "kv_extra_copies" in absent.set_aside
    assert "kv_extra_copies" not in absent.model.relations


def test_deepseek_without_chips_reports_no_fill():
    from chalk import solve

    s = solve("critical_batch_size", presets=["h100", "bf16", "deepseek_v3"])
    assert s.derivation.flags == ()
    assert s.base_value("weight_fill") is None
    assert s.base_value("attention_tensor_parallelism") is None
