"""Planning on the real knowledge base: what is determined, what is missing."""

import pytest
from chalk.knowledge import load_model
from chalk.solvers.planning.plan import make_plan


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
    # B* d fpp = HI bpp S: with d and fpp pinned, the three of HI (chip_flops, with the
    # bandwidth pinned), bpp and S fix it; inputs are named before derived quantities.
    # bpp S = bpp N / Na = weight_bytes / active_params gives a second three.
    # (sets with as many derived quantities are ordered by how few relations they touch,
    # so other sets of three may come first as relations are added)
    assert ("bytes_per_param", "chip_flops", "sparsity_factor") in p.completions
    assert ("active_params", "chip_flops", "weight_bytes") in p.completions
    # the lecture's context crossover gives a third: HI = d fpp Na / (LCT kv), so
    # B* = bpp S HI / (d fpp) = W / (LCT kv), the bandwidth cancelling
    assert ("kv_bytes_per_token", "long_context_threshold", "weight_bytes") in p.completions
    assert all(len(c) == 3 for c in p.completions)
    # what the pins do fix, in the first completion's terms
    fixed = dict(dict(p.fixed)["critical_batch_size"])
    assert fixed in ({"critical_batch_size": 1, "bytes_per_param": -1, "chip_flops": -1,
                      "sparsity_factor": -1},  # B* d fpp = (CF / BW) bpp S
                     {"critical_batch_size": 1, "kv_bytes_per_token": 1,
                      "long_context_threshold": 1, "weight_bytes": -1})
    assert p.from_inputs == ("active_params", "bytes_per_param", "chip_flops", "total_params")


def test_the_inputs_completion_leaves_out_what_the_pins_already_fix():
    # Regression: with h100 and bf16 the presets fix chip_flops (989e12 FLOP/s x the
    # bf16 matmul share 1) and hbm_bandwidth, so B* = bpp HI S / (d fpp) waits only on the
    # sparsity N / Na; "from inputs" named {active_params, chip_flops, total_params},
    # pinning chip_flops a second time. Two pins complete it, as solving shows.
    from chalk import explain, solve

    planned = explain("critical_batch_size", presets=["h100", "bf16"]).plan
    assert planned.from_inputs == ("active_params", "total_params")
    solved = solve("critical_batch_size", {"active_params": "37e9 param",
                                           "total_params": "671e9 param"}, ["h100", "bf16"])
    # 2 byte/param x (989e12 / 3.35e12) FLOP/byte x 671/37 / (1 token x 2 FLOP/param/token)
    assert solved.value("critical_batch_size", "sequence") == pytest.approx(
        2 * 989e12 / 3.35e12 * 671 / 37 / 2, rel=1e-9)


def test_larger_completions_grow_from_quantities_along_the_target():
    # Regression: once t_compute_per_sequence gained its attention term, no pair of pins
    # fixed critical_batch_size, and the sets of three were grown from the first 30
    # candidates of a component coupled through sums, all unrelated inputs (loss-fit
    # coefficients, tier prices): none was found. Candidates that move along the target
    # now come first.
    p = plan({"flops_per_param", "decode_tokens_per_step", "hbm_bandwidth"},
             ["critical_batch_size"])
    assert p.completions


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


@pytest.mark.parametrize("pinned,target", [
    ({"flops_per_param", "decode_tokens_per_step", "hbm_bandwidth"}, "critical_batch_size"),
    ({"flops_per_param", "decode_tokens_per_step", "context_length", "pipeline_stages",
      "attention_flops_per_token", "kv_window_bytes_per_sequence",
      "chinchilla_tokens_per_param", "train_flops_per_param"}, "cost_per_token"),
    ({"decode_tokens_per_step", "attention_flops_per_token", "pipeline_stages"}, "step_time"),
])
def test_every_completion_named_does_determine_the_target(pinned, target):
    # Regression: pairs whose directions differed by 1e-5 rad (a saturated expert-coverage
    # curve's tiny sensitivities) passed a test on 1 - |cos| (quadratic in the angle) and
    # were offered as completions, though pinning them left the target open.
    p = plan(pinned, [target])
    assert p.completions
    for extra in p.completions:
        assert plan(pinned | set(extra), [target]).determined, extra


def test_rounding_left_in_a_normalised_row_does_not_hide_a_determined_target():
    # Regression (probe seed 315): price_input pivoted on the cache-storage relation (a
    # linearised sum) kept exponents of 4.6e-11 on two free quantities and was called
    # undetermined. It is fixed: equal margins make output/input price the decode/prefill
    # cost ratio, and chip_price and the tokens per step cancel, so
    # price_input = price_output x batch x per-user speed x prefill FLOPs / replica FLOPs
    #             = 10e-6 x 100 x 50 x 2e11 / (8 x 1e15) = 1.25e-6 USD/token
    from chalk import solve

    # (with no conventions, peak FLOP/s and attention at it are pinned as the careful
    # conventions state them)
    s = solve("price_input", {"flops_efficiency": 1, "attention_surplus_time_per_flop":
                              "0 s/FLOP", "batch_size": "100 sequence", "chip_flops": "1e15 FLOP/s",
                              "n_chips": "8 chip", "prefill_flops_per_token": "2e11 FLOP/token",
                              "price_output": "10 USD/Mtoken",
                              "tokens_per_second_per_user": "50 token/s"}, ["none"])
    assert s.value("price_input", "USD/token") == pytest.approx(1.25e-6, rel=1e-9)
