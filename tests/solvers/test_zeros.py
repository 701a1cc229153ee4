"""Pinned zeros put into the relations (solvers.pinning.zeros): what each kind of
relation says once a quantity in it is absent."""

from __future__ import annotations

import pytest
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


# A zero the user states is a fact, not a default that gives way (issue 23): the relation
# that defines it stays, balanced, so it grounds what it can and disagrees where the
# other pins say otherwise.

def test_a_stated_zero_keeps_its_relation_as_a_ground():
    model = load_model()
    stated = put_zeros(model, frozenset({"kv_extra_copies"}), frozenset({"kv_extra_copies"}))
    assert "kv_extra_copies" not in stated.set_aside
    assert "kv_extra_copies" in stated.model.relations  # balanced: copies x ... = 1
    assert "kv_extra_copies" not in stated.model.variables_in("kv_extra_copies")


def test_no_extra_kv_copies_of_a_latent_means_one_chip_a_group():
    from chalk import solve

    # MLA keeps one latent that every query head reads, so each chip of an attention group
    # holds it whole: kv_extra_copies = t - 1 (t chips a group). Stated 0, t = 1 chip;
    # as a default the zero grounded nothing and the group's chips were left open
    s = solve("attention_tensor_parallelism", {"kv_extra_copies": "0"},
              ["deepseek_v3", "bf16"])
    assert s.value("attention_tensor_parallelism", "chip") == pytest.approx(1.0, rel=1e-12)


def test_a_stated_zero_that_the_layout_denies_is_a_conflict_naming_it():
    from chalk.symbolic.errors import InconsistentPins

    from chalk import solve

    # Llama 3.1 70B's 8 KV heads over a 16-chip tensor-parallel group: max(1, 8/16) = 1
    # head a chip, 16 heads held for 8, one extra copy; a stated 0 denies it, and the
    # conflict names the stated zero beside the chips
    given = {"n_chips": "16 chip", "context_length": "8192 token", "kv_extra_copies": "0"}
    with pytest.raises(InconsistentPins) as caught:
        solve("max_batch_size", given, ["h100", "bf16", "llama_3_1_70b"])
    assert {"kv_extra_copies", "n_chips"} <= set(caught.value.pins)
    # two groups of 8 chips hold each head once: the zero agrees, and each group keeps its
    # own attention weights, 80 layers x (2 x 8192 x 64 x 128 + 2 x 8192 x 8 x 128) =
    # 12.08e9 params, 2 bytes each; weights 2 x 70,552,387,584 byte; KV 8192 x 327,680
    # byte a sequence: (16 x 80e9 - 141.105e9 - 24.159e9) / 2.684e9 = 415.3 sequences
    replicated = 80 * (2 * 8192 * 64 * 128 + 2 * 8192 * 8 * 128) * 2
    expected = (16 * 80e9 - 2 * 70_552_387_584 - replicated) / (8192 * 327_680)
    s = solve("max_batch_size", {**given, "attention_data_parallelism": "2"},
              ["h100", "bf16", "llama_3_1_70b"])
    assert s.value("max_batch_size", "sequence") == pytest.approx(expected, rel=1e-9)
