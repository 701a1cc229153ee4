"""Balance points, optima and sweeps, against closed forms derived here."""

import math

import pytest
from chalk.symbolic.errors import NoSolution

from chalk.applications.chinchilla import compute_optimal, lifetime_optimum
from chalk.applications.optimize import cheapest_batch, crossover, fast_mode
from chalk.applications.sweep import sweep
from chalk.applications.tiers import tier_costs

H100x8 = {"n_chips": "8 chip", "chip_flops": "989e12 FLOP/s", "hbm_bandwidth": "3.35 TB/s",
          "total_params": "671e9 param", "active_params": "37e9 param",
          "bytes_per_param": "1 byte/param", "kv_bytes_per_token": "70272 byte/token",
          "chip_price": "2 USD/hour"}
T_WEIGHT = 671e9 / (3.35e12 * 8)  # s
T_COMPUTE_PER_SEQ = 37e9 * 2 / (989e12 * 8)  # s per sequence


def t_kv_per_seq(context):
    return context * 70272 / (3.35e12 * 8)


def test_crossover_context_with_weight_fetch_matches_closed_form():
    # t_weight + B L kv/(n bw) = B t_cps  ->  L = (B t_cps - t_weight) n bw / (B kv)
    batch = 4000
    expected = (batch * T_COMPUTE_PER_SEQ - T_WEIGHT) * 8 * 3.35e12 / (batch * 70272)
    found = crossover("t_memory", "t_compute", "context_length", "100 token", "10M token",
                      given={**H100x8, "batch_size": f"{batch} sequence"})
    assert len(found.roots) == 1
    assert found.roots[0] == pytest.approx(expected, rel=1e-9)


def test_crossover_batch_at_a_given_context():
    # B t_cps = t_weight + B t_kvps  ->  B = t_weight / (t_cps - t_kvps)
    context = 500
    expected = T_WEIGHT / (T_COMPUTE_PER_SEQ - t_kv_per_seq(context))
    found = crossover("t_compute", "t_memory", "batch_size", "1 sequence", "1e6 sequence",
                      given={**H100x8, "context_length": f"{context} token"})
    assert found.roots[0] == pytest.approx(expected, rel=1e-9)


def test_no_crossing_is_said_plainly():
    # at 100k context KV reads always outweigh the matmuls per sequence
    found = crossover("t_compute", "t_memory", "batch_size", "1 sequence", "1e6 sequence",
                      given={**H100x8, "context_length": "100k token"})
    assert found.roots == [] and "do not cross" in found.text()


def test_cheapest_batch_under_a_latency_budget():
    # memory-bound: step = t_weight + B t_kvps = budget  ->  B = (budget - t_weight)/t_kvps
    context, budget = 4000, 0.030
    expected = (budget - T_WEIGHT) / t_kv_per_seq(context)
    found = cheapest_batch("30 ms", given={**H100x8, "context_length": f"{context} token"})
    assert found.active == "latency budget"
    assert found.batch == pytest.approx(expected, rel=1e-6)
    assert found.step_time == pytest.approx(budget, rel=1e-6)
    # cost per token falls all the way to the budget: the whole batch below the edge
    assert found.whole == math.floor(expected)


def test_latency_floor_above_budget_has_no_batch():
    with pytest.raises(NoSolution, match="latency floor"):
        cheapest_batch("10 ms", given={**H100x8, "context_length": "4000 token"})


def test_fast_mode_batches_fit_price_and_speed():
    found = fast_mode(6, 2.5, given={**H100x8, "context_length": "4000 token"})
    assert found.feasible
    b, f = found.batch, found.batch_fast
    assert b / f == pytest.approx(6 * 2.5)

    def step(batch):
        return max(batch * T_COMPUTE_PER_SEQ, T_WEIGHT + batch * t_kv_per_seq(4000))

    assert step(b) / step(f) == pytest.approx(2.5, rel=1e-6)


def test_fast_mode_beyond_the_latency_floor():
    # 100x faster cannot come from batching alone: the floor is t_weight
    found = fast_mode(1.5, 100, given={**H100x8, "context_length": "4000 token"})
    assert not found.feasible
    assert any("speculative decoding" in line for line in found.lines)


def test_tier_crossover_matches_hand_calculation():
    # cost_i(t) = kv p_i t / c_i + kv p_i / b_i, p_i = c_i x price per byte / 4 years
    year4 = 4 * 365.25 * 86400
    dram = dict(c=2e12, b=614.4e9, p=2e12 * 13.6e-9 / year4)  # USD/s
    nvme = dict(c=30.72e12, b=14e9, p=30.72e12 * 0.195e-9 / year4)
    expected = (nvme["p"] / nvme["b"] - dram["p"] / dram["b"]) / (
        dram["p"] / dram["c"] - nvme["p"] / nvme["c"])
    found = tier_costs("2000 byte/token", tiers=["tier_ddr5_x86_server",
                                                "tier_nvme_gen5_drive"])
    assert len(found.crossovers) == 1
    t, before, after = found.crossovers[0]
    assert (before, after) == ("tier_ddr5_x86_server", "tier_nvme_gen5_drive")
    assert t == pytest.approx(expected, rel=1e-6)


def chinchilla_closed_form(compute, e, a, b, alpha, beta):
    g = (alpha * a / (beta * b)) ** (1 / (alpha + beta))
    n = g * (compute / 6) ** (beta / (alpha + beta))
    return n, compute / (6 * n)


@pytest.mark.parametrize(
    ("fit", "constants", "ratio"),
    [("besiroglu2024", (1.8172, 482.01, 2085.43, 0.3478, 0.3658), 18),
     ("hoffmann2022", (1.69, 406.4, 410.7, 0.34, 0.28), 93)],
)
def test_compute_optimal_tokens_per_param(fit, constants, ratio):
    n, d = chinchilla_closed_form(5.76e23, *constants)
    found = compute_optimal(5.76e23, fit)
    assert found.params == pytest.approx(n, rel=1e-5)
    assert found.tokens == pytest.approx(d, rel=1e-5)
    assert found.tokens_per_param == pytest.approx(ratio, abs=1)


@pytest.mark.slow
def test_lifetime_optimum_beats_the_heuristic_and_keeps_the_loss():
    result = lifetime_optimum(2.0, 2e13, "besiroglu2024")
    e, a, b, alpha, beta = 1.8172, 482.01, 2085.43, 0.3478, 0.3658
    for point in (result.optimum, result.heuristic):
        loss = e + a / point.params**alpha + b / point.tokens**beta
        assert loss == pytest.approx(2.0, rel=1e-9)
    assert result.optimum.compute <= result.heuristic.compute
    # the heuristic's serving compute equals its training compute: 2 N D_inf = 6 N D
    assert result.heuristic.tokens == pytest.approx(2 * 2e13 / 6)
    # more serving demand pushes the optimum to smaller, longer-trained models
    heavier = lifetime_optimum(2.0, 2e14, "besiroglu2024")
    assert heavier.optimum.tokens_per_param > result.optimum.tokens_per_param


def test_sweep_marks_the_regime_change_at_the_crossover():
    table = sweep("step_time", "batch_size", "100 sequence", "10000 sequence", steps=200,
                  log=True, given={**H100x8, "context_length": "1000 token"})
    expected = T_WEIGHT / (T_COMPUTE_PER_SEQ - t_kv_per_seq(1000))
    [(index, quantity, before, after)] = table.changes
    assert (quantity, before, after) == ("step_time", "memory-bound", "compute-bound")
    assert table.x_values[index - 1] < expected <= table.x_values[index]
    assert all(math.isfinite(y) for y in table.y_values["step_time"])
    csv_text = table.to_csv()
    assert csv_text.splitlines()[0] == "batch_size,step_time,regime:step_time"


def test_cheapest_batch_takes_the_smallest_batch_on_the_flat_floor():
    # Regression: once compute-bound, cost is flat; the slowest equally cheap batch was
    # returned. With 2k context on a GB200 rack (fp8) the floor starts where
    # B t_cps = t_weight + B t_kvps.
    given = {"chip_flops": "5 PFLOP/s", "hbm_bandwidth": "8 TB/s", "n_chips": "72 chip",
             "chip_price": "4.54 USD/hour", "total_params": "671e9 param",
             "active_params": "37e9 param", "bytes_per_param": "1 byte/param",
             "kv_bytes_per_token": "35136 byte/token", "context_length": "2k token"}
    t_cps = 2 * 37e9 / (72 * 5e15)
    t_kvps = 2000 * 35136 / (72 * 8e12)
    t_weight = 671e9 / (72 * 8e12)
    found = cheapest_batch("20 ms", given=given)
    assert found.active.startswith("none")
    assert found.batch == pytest.approx(t_weight / (t_cps - t_kvps), rel=1e-6)
    assert found.cost == pytest.approx(37e9 * 2 * (4.54 / 3600) / 5e15, rel=1e-6)
    # below that batch the step is memory-bound and a token dearer; above it, on the
    # floor: the whole batch above the edge
    assert found.whole == math.ceil(t_weight / (t_cps - t_kvps))


def test_plotting_leaves_the_matplotlib_backend_alone():
    # Regression: every plot forced the Agg backend, breaking a notebook's inline figures.
    import matplotlib

    from chalk.applications.plots import plot, render

    matplotlib.use("svg")
    render(plot("pipeline_schedule", {"pipeline_stages": "2", "n_micro_batches": "2"}))
    assert matplotlib.get_backend() == "svg"


# DeepSeek-V3 in bf16 on 32 H800s (80 GB, 3.35 TB/s) at 4,000 tokens of context, laid out
# as DeepSeek serves it (the layout preset dp_attention: every GPU an attention group of its
# own, holding the whole attention weights and its own sequences' latent once). These tests
# are about the optimisers' mechanics on that real serving; the conventions' Megatron layout,
# which holds MLA's latent on every chip, is tests/knowledge/test_kv_sharding.py's and the
# README's. The expert-parallel all-to-all is stated hidden (exposed fraction 0): these tests
# check the optimisers against the roofline (tests/knowledge/test_moe_as_it_runs.py adds it).
DSV3_H800 = (["deepseek_v3", "h800", "bf16", "dp_attention"],
             {"n_chips": "32 chip", "context_length": "4000 token",
              "total_params": "671e9 param", "active_params": "36.7e9 param",
              "alltoall_exposed_fraction": 0})
DSV3_KV = 4000 * (512 + 64) * 61 * 2  # byte per sequence, held once: 2.81088e8
DSV3_WEIGHTS = 671e9 * 2  # byte
# a step reads every weight but the 129,280 x 7,168 input-embedding table: 1.340e12 byte
DSV3_WEIGHTS_READ = (671e9 - 129_280 * 7_168) * 2
# one MLA layer's attention weights, from DeepSeek-V3's config (as tests/cli/test_cli.py's
# test_readme_fit_examples counts them): 7,168 x 1,536 + 7,168 x 576 + 7,168 x 128 x 128
# + 512 x 128 x 256 + 128 x 1,536 x 192 = 187,105,280 param, over 61 layers 11.413e9 param
DSV3_ATTENTION = 61 * (7168 * 1536 + 7168 * 576 + 7168 * 128 * 128 + 512 * 128 * 256
                       + 128 * 1536 * 192)


def dsv3_attention_copies(chips):
    """Bytes of the attention copies ``chips`` one-chip groups hold beyond one (bf16)."""
    return (chips - 1) * DSV3_ATTENTION * 2


# on 32 chips: 31 copies x 11.413e9 param x 2 byte = 707.6e9 byte, held and read every step
DSV3_COPIES = dsv3_attention_copies(32)


def test_largest_batch_that_fits_by_hand():
    from chalk.applications.optimize import largest_batch

    presets, pins = DSV3_H800
    # B kv + W + copies = 32 x 80 GB  ->  B = (2.56e12 - 1.342e12 - 707.6e9) / 2.81088e8
    # = 1,815.7
    batch = (32 * 80e9 - DSV3_WEIGHTS - DSV3_COPIES) / DSV3_KV
    assert batch == pytest.approx(1815.7, abs=0.05)
    found = largest_batch(pins, presets)
    assert found.batch == pytest.approx(batch, rel=1e-9)
    assert found.active == "memory capacity"
    # full HBM read once per step but the embedding table, every chip reading its own
    # attention copy (memory-bound: B x 2 x 36.7e9 / (32 x 989e12) = 4.2 ms; every expert
    # is read, the share no token picks being (248/256)^1,816 ~ 1e-25):
    # (2.56e12 - 2 x 926,679,040) / (32 x 3.35e12) = 23.86 ms, just under the drain time
    # 80 GB / 3.35 TB/s = 23.88 ms
    step = (32 * 80e9 - (DSV3_WEIGHTS - DSV3_WEIGHTS_READ)) / (32 * 3.35e12)
    assert found.step_time == pytest.approx(step, rel=1e-9)
    assert found.step_time == pytest.approx(23.86e-3, abs=1e-5)
    assert found.shown["memory_fill"] == "1"
    # a batch is a count of sequences: 1,815 whole ones fit, the 1,816th does not
    assert found.whole == 1815
    assert ("largest whole batch: 1,815 sequences (the edge, 1,815.7, rounded down)"
            in found.text().splitlines())


def test_largest_batch_within_a_latency_budget_by_hand():
    from chalk.applications.optimize import largest_batch

    presets, pins = DSV3_H800
    # 22 ms x 32 x 3.35 TB/s = W read + copies + B kv  ->  B = (2.3584e12 - 1.3402e12
    # - 707.6e9) / 2.81088e8 = 1,105.1, below the 1,815.7 that fit (the experts no token
    # picks, (248/256)^1,105 ~ 6e-16 of them, are all read)
    batch = (0.022 * 32 * 3.35e12 - DSV3_WEIGHTS_READ - DSV3_COPIES) / DSV3_KV
    assert batch == pytest.approx(1105.1, abs=0.05)
    found = largest_batch(pins, presets, "22 ms")
    assert found.batch == pytest.approx(batch, rel=1e-9)
    assert found.active == "latency budget"
    # (1.342e12 + 707.6e9 + 1,105.1 x 2.81088e8) / 2.56e12 = 0.9220
    fill = (DSV3_WEIGHTS + DSV3_COPIES + batch * DSV3_KV) / (32 * 80e9)
    assert found.shown["memory_fill"] == f"{fill:.4g}" == "0.922"
    assert found.whole == 1105  # within the budget, not the 1,815 that fit


def test_largest_batch_when_the_weights_alone_do_not_fit():
    from chalk.applications.optimize import largest_batch

    presets, pins = DSV3_H800
    with pytest.raises(NoSolution, match="even one sequence does not fit"):
        # 1,342 GB and 7 attention copies (159.8 GB) on 640 GB
        largest_batch({**pins, "n_chips": "8 chip"}, presets)


@pytest.mark.slow  # seconds of searching: the slow tier
def test_cheapest_batch_stops_where_memory_runs_out():
    presets, pins = DSV3_H800
    # memory-bound up to the memory limit, so cost per token falls all the way to it
    found = cheapest_batch("50 ms", {**pins, "chip_price": "2 USD/hour"}, presets)
    # the largest batch that fits, as in test_largest_batch_that_fits_by_hand: 1,815.7
    assert found.batch == pytest.approx((32 * 80e9 - DSV3_WEIGHTS - DSV3_COPIES) / DSV3_KV,
                                        rel=1e-6)
    assert found.active == "memory capacity"
    assert "memory_fill" in found.shown and found.flags == ()


def test_sweep_flags_the_batches_that_do_not_fit():
    presets, pins = DSV3_H800
    found = sweep("step_time", "batch_size", "1000 sequence", "8000 sequence", steps=8,
                  given=pins, presets=presets)
    assert found.targets == ("step_time", "memory_fill", "weight_fill")
    fills = (DSV3_WEIGHTS + DSV3_COPIES + found.x_values * DSV3_KV) / 32 / 80e9
    assert found.y_values["memory_fill"] == pytest.approx(fills, rel=1e-9)
    # 2,000 .. 8,000 sequences are above the 1,815.7 that fit (1,000 fills 0.91)
    (flag,) = found.flags
    assert flag.startswith("memory_fill is above 1 at 7 of 8 points (batch_size 2,000 "
                           "sequence to 8,000 sequence)")
    assert found.to_dict()["flags"] == [flag]


def test_sweep_flag_shows_the_bound_with_its_unit():
    # Regression: the flag line took the bound as the inequality's last word, "sequence",
    # for batch_size >= 1 sequence. batch = tokens_per_second x 20 ms / (1 token/sequence):
    # at 10 token/s it is 0.2 sequence, at 177.8 token/s already 3.6
    found = sweep("batch_size", "tokens_per_second", "10 token/s", "1e6 token/s", steps=5,
                  log=True, given={"step_time": "20 ms"})
    assert found.y_values["batch_size"][0] == pytest.approx(10 * 0.020)
    (flag,) = found.flags
    assert flag.startswith("batch_size is below 1 sequence at 1 of 5 points "
                           "(tokens_per_second 10 token/s): a batch holds whole sequences")


# --- search bounds are never answers (issue 26) -------------------------------------------

def test_compute_optimal_beyond_the_largest_model_searched():
    from chalk.symbolic.errors import BeyondSearch

    n, _ = chinchilla_closed_form(1e33, 1.8172, 482.01, 2085.43, 0.3478, 0.3658)
    assert n > 1e15  # about 3.9e15 param: past the 1e15 the search stops at
    with pytest.raises(BeyondSearch, match=r"above 1e\+15 param") as caught:
        compute_optimal(1e33, "besiroglu2024")
    assert caught.value.side == "above"


def test_compute_optimal_below_the_smallest_model_searched():
    from chalk.symbolic.errors import BeyondSearch

    n, _ = chinchilla_closed_form(1e13, 1.8172, 482.01, 2085.43, 0.3478, 0.3658)
    assert n < 1e6  # about 2.2e5 param
    with pytest.raises(BeyondSearch, match=r"below 1e\+06 param"):
        compute_optimal(1e13, "besiroglu2024")


def test_compute_optimal_inside_the_range_near_its_top():
    """1e31 FLOP puts the optimum at about 3.7e14 param, inside the range: answered."""
    n, _ = chinchilla_closed_form(1e31, 1.8172, 482.01, 2085.43, 0.3478, 0.3658)
    assert compute_optimal(1e31, "besiroglu2024").params == pytest.approx(n, rel=1e-5)


def test_compute_optimal_with_a_budget_too_small_for_a_finite_loss():
    # D = 1e-300 / (6 N) is below the smallest double for every N searched: no loss
    with pytest.raises(NoSolution, match="the loss is not a finite number"):
        compute_optimal(1e-300, "besiroglu2024")


def test_lifetime_optimum_needs_a_model_beyond_the_range():
    from chalk.symbolic.errors import BeyondSearch

    # the smallest model reaching loss 1.82: A / N^alpha = 1.82 - E, so
    # N = (482.01 / 0.0028) ** (1 / 0.3478) = 1.13e15 param, above the 1e15 searched
    assert (482.01 / (1.82 - 1.8172)) ** (1 / 0.3478) > 1e15
    with pytest.raises(BeyondSearch, match="reaching the loss needs at least 1.13"):
        lifetime_optimum(1.82, 1e12, "besiroglu2024")


def test_largest_batch_beyond_the_largest_batch_searched():
    from chalk.symbolic.errors import BeyondSearch

    from chalk.applications.optimize import largest_batch

    presets, pins = DSV3_H800
    # 6e6 chips x 80 GB, less the weights and 6e6 - 1 attention copies (1.3696e17 byte),
    # hold (4.8e17 - 1.342e12 - 1.3696e17) / 2.81088e8 = 1.22e9 sequences, past 1e9
    assert (6e6 * 80e9 - DSV3_WEIGHTS - dsv3_attention_copies(6e6)) / DSV3_KV > 1e9
    with pytest.raises(BeyondSearch, match=r"above 1e\+09 sequence"):
        largest_batch({**pins, "n_chips": "6e6 chip"}, presets)


@pytest.mark.slow  # seconds of searching: the slow tier
def test_cheapest_batch_still_falling_at_the_largest_batch_searched():
    from chalk.symbolic.errors import BeyondSearch

    presets, pins = DSV3_H800
    # compute is free (1e21 FLOP/s) and 4e6 chips hold (3.2e17 - 1.342e12 - 9.13e16) /
    # 2.81088e8 = 8.1e8 sequences: the step is the weight read (with 4e6 - 1 attention
    # copies) plus B KV reads, so cost per token ~ t_kv + t_weights / B keeps falling (by
    # R / B relative, R = (1.340e12 + 9.13e16) / 2.81088e8 = 3.2e8: still 325 at the 1e6
    # searched), and no constraint stops it
    assert (4e6 * 80e9 - DSV3_WEIGHTS - dsv3_attention_copies(4e6)) / DSV3_KV > 1e6
    assert (DSV3_WEIGHTS_READ + dsv3_attention_copies(4e6)) / DSV3_KV / 1e6 > 300
    given = {**pins, "n_chips": "4e6 chip", "chip_flops": "1e21 FLOP/s",
             "chip_price": "2 USD/hour"}
    with pytest.raises(BeyondSearch, match=r"above 1e\+06 sequence"):
        cheapest_batch("1 s", given, presets)


def test_crossover_refuses_a_quantity_against_itself_and_different_dimensions():
    from chalk.symbolic.errors import UsageError

    with pytest.raises(UsageError, match="compares step_time with itself"):
        crossover("step_time", "step_time", "batch_size", "1 sequence", "100 sequence",
                  H100x8)
    with pytest.raises(UsageError, match=r"step_time \(time\) and sparsity_factor "
                                         r"\(dimensionless\) have different dimensions"):
        crossover("step_time", "sparsity_factor", "batch_size", "1 sequence",
                  "100 sequence", H100x8)


@pytest.mark.slow  # seconds of searching: the slow tier
def test_fast_mode_speedup_still_growing_at_the_largest_batch_searched():
    from chalk.symbolic.errors import BeyondSearch

    presets, pins = DSV3_H800
    # free compute, 0.4-token context: step(B) = t_w + B t_kv with t_w / t_kv = (1.340e12
    # + 9.13e16 of 4e6 - 1 attention copies) / (0.4 x 70272) = 3.2e12 = R, so the speed-up
    # (R + B) / (R + B / 15) is 1.0000 at the 1e6 searched and reaches 2.5 only at
    # B = 1.8 R = 5.8e12 (which 4e6 chips would hold: 2.3e17 byte / 28,109 = 8.1e12):
    # beyond the range
    # every expert read whatever the batch (pinned), so the weights cost the same per step
    given = {**pins, "n_chips": "4e6 chip", "context_length": "0.4 token",
             "chip_flops": "1e21 FLOP/s", "unread_expert_fraction": 0}
    with pytest.raises(BeyondSearch, match=r"above 1e\+06 sequence"):
        fast_mode(6, 2.5, given, presets)
