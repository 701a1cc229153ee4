"""Planning on the real knowledge base: what is determined, what is missing."""

from chalk.knowledge import load_model
from chalk.solvers.plan import make_plan


def plan(pinned, targets):
    return make_plan(load_model(), frozenset(pinned), tuple(targets))


def test_critical_batch_plan_uses_three_relations_in_order():
    p = plan({"chip_flops", "hbm_bandwidth", "bytes_per_param", "flops_per_param",
              "decode_tokens_per_step", "total_params", "active_params"},
             ["critical_batch_size"])
    assert p.determined
    solved = [s.variables[0] for s in p.steps]
    assert set(solved) == {"hardware_intensity", "sparsity_factor", "critical_batch_size"}
    assert solved[-1] == "critical_batch_size"
    assert not p.checks


def test_missing_pins_are_named_smallest_first():
    p = plan({"flops_per_param", "decode_tokens_per_step", "hbm_bandwidth"},
             ["critical_batch_size"])
    assert not p.determined
    # B* balances a sequence's matmul time against the weight read:
    # B* = t_weight_fetch / t_compute_per_sequence (W/RB over d F/RF is HI bpp S/(d fpp)),
    # so two pins suffice, fewer than the three inputs bytes_per_param, chip_flops and
    # sparsity_factor the critical-batch relation itself names.
    assert p.completions == (("t_compute_per_sequence", "t_weight_fetch"),)
    assert dict(dict(p.fixed)["critical_batch_size"]) == {
        "critical_batch_size": 1.0, "t_compute_per_sequence": 1.0, "t_weight_fetch": -1.0}
    assert p.from_inputs == ("active_params", "bytes_per_param", "chip_flops", "total_params")


def test_surplus_pins_become_checks():
    p = plan({"hbm_capacity", "hbm_bandwidth", "hbm_drain_time", "chip_flops"},
             ["hardware_intensity"])
    assert p.determined
    assert "hbm_drain_time" in p.checks


def test_unused_pins_are_reported():
    p = plan({"hbm_capacity", "hbm_bandwidth", "chip_price"}, ["hbm_drain_time"])
    assert p.unused_pins == ("chip_price",)


def test_completions_count_determined_quantities_as_known():
    # Regression: weight_bytes (fixed by total_params x bytes_per_param) was suggested as a
    # missing pin because the search looked at every unknown in the under-determined part.
    p = plan({"total_params", "bytes_per_param"}, ["latency_floor"])
    assert p.completions == (("hbm_bandwidth", "scale_up_size"),)
    assert "total_params" not in p.unused_pins
