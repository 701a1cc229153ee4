"""Rank in log space: what pins determine, what cancels, what a degenerate set fixes.

Small synthetic models show each mechanism on its own; the knowledge-base questions
from issue 10's "Why" check that they reach users. Every expected number is worked out
by hand in the test.
"""

from fractions import Fraction

import pytest
from chalk.knowledge import load_model
from chalk.solvers.analysis.jacobian import log_rows
from chalk.solvers.analysis.rank import analyse
from chalk.solvers.planning.plan import identities, make_plan
from chalk.symbolic.errors import DegenerateError, UnderdeterminedError
from synthetic_models import synthetic_model

from chalk import explain, solve

# --- the mechanism, on synthetic models ----------------------------------------------------

def _shares():
    # u = n x and v = n y: the ratio v/u = y/x whatever n is
    return synthetic_model(["n", "x", "y", "u", "v", "r"], [
        ("make_u", lambda s: s["u"], lambda s: s["n"] * s["x"]),
        ("make_v", lambda s: s["v"], lambda s: s["n"] * s["y"]),
        ("ratio", lambda s: s["r"], lambda s: s["v"] / s["u"]),
    ])


def test_products_of_powers_have_exact_rows():
    model = synthetic_model(["a", "b", "c"],
                            [("root", lambda s: s["a"] ** 2, lambda s: s["b"] * s["c"])])
    row = log_rows(model)["root"]
    assert row.exact
    assert row.entries == {"a": Fraction(2), "b": Fraction(-1), "c": Fraction(-1)}


def test_a_quantity_that_cancels_is_not_asked_for():
    model = _shares()
    plan = make_plan(model, frozenset({"x", "r"}), ("y",))
    assert plan.determined  # structurally n, u, v are all open; y = r x is not
    s = solve("y", {"x": 3, "r": 5}, ["none"], model=model)
    assert s.value("y") == pytest.approx(15, rel=1e-12)  # y = r x = 5 x 3
    assert s.derivation.placeholders
    assert "cancel" in s.derivation.text()


def test_quantities_that_depend_on_a_placeholder_are_not_answers():
    model = _shares()
    s = solve("y", {"x": 3, "r": 5}, ["none"], model=model)
    for name in s.derivation.placeholders + tuple(s.derivation.provisional):
        with pytest.raises(KeyError, match="not fixed by the pins"):
            s[name]


def _singular():
    # a = n b, c = n d, h = b/d: pinning a, c and h fixes n b and n d, so h is implied
    # (h = a/c) and one combination is left open
    return synthetic_model(["a", "b", "c", "d", "n", "h"], [
        ("make_a", lambda s: s["a"], lambda s: s["n"] * s["b"]),
        ("make_c", lambda s: s["c"], lambda s: s["n"] * s["d"]),
        ("ratio", lambda s: s["h"], lambda s: s["b"] / s["d"]),
    ])


def test_a_group_square_by_count_but_singular_is_degenerate_before_any_number():
    model = _singular()
    plan = make_plan(model, frozenset({"a", "c", "h"}), ("n",))
    assert not plan.determined
    assert plan.checks  # h = a/c ties the three pins together
    with pytest.raises(DegenerateError) as info:
        solve("n", {"a": 6, "c": 15, "h": 0.4}, ["none"], model=model)
    assert "fix only" in info.value.message
    assert ("b" in info.value.message or "d" in info.value.message)
    assert set(map(tuple, info.value.completions)) <= {("b",), ("d",)}


def test_the_implied_pin_is_a_cross_check():
    model = _singular()
    # with b pinned as well, n = a/b = 3 and the surplus h = a/c = 6/15 = 0.4 is checked
    s = solve("n", {"a": 6, "c": 15, "h": 0.4, "b": 2}, ["none"], model=model)
    assert s.value("n") == pytest.approx(3, rel=1e-12)
    assert [c.relation for c in s.derivation.checks]
    with pytest.raises(Exception, match="disagree"):
        solve("n", {"a": 6, "c": 15, "h": 0.5, "b": 2}, ["none"], model=model)


def test_completions_come_from_the_null_space():
    model = _shares()
    # nothing pinned but r: y is fixed by r and x together, n is free on its own
    plan = make_plan(model, frozenset({"r"}), ("y",))
    assert not plan.determined
    assert ("x",) in plan.completions  # y = r x
    assert all(len(c) == 1 for c in plan.completions)


def test_an_identity_is_neither_solved_with_nor_checked():
    model = load_model()
    # fast_batch_ratio x fast_price_ratio x fast_speedup = 1 follows from the two tiers'
    # cost relations: cost = t n p / (B d) and cost_fast = t_f n p / (B_f d) give
    # k = cost_fast / cost = (t_f / t)(B / B_f) = 1 / (s r)
    assert "fast_batch_from_prices" in identities(model)


def test_rows_of_a_regime_are_the_regime_s_argument():
    model = load_model()
    analysis = analyse(model, (), ())
    assert analysis.free  # the whole knowledge base leaves inputs open


def test_a_small_coefficient_beside_a_nearly_balanced_sum_is_kept():
    # x h = w - i linearised where w and i nearly balance: d ln x + d ln h =
    # (w/(w-i)) d ln w - (i/(w-i)) d ln i, with w/(w-i) ~ 1e10. Pivoting on i, x's
    # coefficient becomes ~1e-10 of the row: small, but no cancellation made it, and it
    # carries x's link to the pins (i = p/r, r = u/v). Regression: the 1,000-probe
    # benchmark's seed 1778 (cache_storage_price through the write premium) was refused.
    from chalk.solvers.analysis.jacobian import LogRow

    model = synthetic_model(["x", "h", "w", "i", "p", "r", "u", "v", "y", "z"], [
        ("premium", lambda s: s["x"] * s["h"], lambda s: s["w"] - s["i"]),
        ("input", lambda s: s["i"] * s["r"], lambda s: s["p"]),
        ("ratio", lambda s: s["r"], lambda s: s["u"] / s["v"]),
        ("split", lambda s: s["x"], lambda s: s["y"] * s["z"]),
    ])
    balanced = {"premium": LogRow("premium", {"x": 1.0, "h": 1.0, "w": -(1e10 + 1.0),
                                              "i": 1e10}, False)}
    pins = {"h", "w", "p", "u", "v"}
    analysis = analyse(model, pins, order=["premium", "input", "ratio", "split"],
                       preferred={"premium": "i", "input": "r", "ratio": "u"},
                       regime=balanced)
    assert analysis.is_determined("x")
    assert analysis.is_determined("i") and analysis.is_determined("r")
    assert not analysis.is_determined("y")  # only y z is fixed


@pytest.mark.parametrize("chosen", [(), ("n_kv_heads",), ("kv_lora_rank",)],
                         ids=["none", "gqa", "mla"])
def test_the_knowledge_base_has_a_consistent_reference_point(chosen):
    # Rows of sums are taken there; with the cache write typically priced like an input,
    # the search ended on the edge where the write premium vanishes (residual 8e-7).
    # Taken on the model a question is planned on (solvers.pinning.variants.for_pins):
    # with no attention kind chosen it leaves out the relations that hold only once one
    # is (Relation.only_when_chosen), and every relation of the full list holds nowhere
    # (a chip's KV as grouped-query heads and as MLA's latent at once: residual 0.52)
    from chalk.solvers.analysis.reference import reference_point
    from chalk.solvers.pinning.variants import for_pins
    from chalk.solvers.tolerances import REFERENCE

    model, _ = for_pins(load_model(), chosen)
    point = reference_point(model)
    assert point.converged
    # every relation within REFERENCE.atol, or within the rounding of its own sides: with
    # no kind chosen the point has n_chips - t at 0.02% of n_chips in
    # replicated_attention_params, whose residual of about 2e-12 is the machine epsilon
    # times its condition number of about 2 x 36.18 / 0.006 = 12,000 (about 2.7e-12)
    assert point.residual <= REFERENCE.atol or chosen == ()
    assert point.residual <= 4 * 2.2e-16 * 12_000


@pytest.mark.parametrize("chosen", [(), ("n_kv_heads",), ("kv_lora_rank",)],
                         ids=["none", "gqa", "mla"])
def test_the_cache_read_relation_leaves_the_write_premium_standing(chosen):
    # Regression (issue 23, prefill <-> pricing): with cache_read_price_is_cost_ratio in
    # the model and the tier typicals of before (1e10 byte/s at 0.1 USD/hour), the typical
    # values put retrieve / remat near 0.019 against the prices' 0.1, and the search closed
    # the gap by raising price_input to 3.8e-6, 0.95 of price_cache_write: the write premium
    # in cache_storage_price (typically 4e-6 - 2e-6) all but vanished. With the typicals
    # consistent, the point stays near them: the write at about twice the input price
    # (within a factor 1.5 of the typical 4e-6 / 2e-6 = 2) and the read near a tenth
    # (within a factor 1.5 of 2e-7 / 2e-6 = 0.1)
    from chalk.solvers.analysis.reference import reference_point
    from chalk.solvers.pinning.variants import for_pins

    model, _ = for_pins(load_model(), chosen)
    values = reference_point(model).values
    write_over_input = values["price_cache_write"] / values["price_input"]
    assert 2 / 1.5 <= write_over_input <= 2 * 1.5
    assert 0.1 / 1.5 <= values["cache_read_price_ratio"] <= 0.1 * 1.5


def test_cache_storage_price_through_the_price_ratio_the_speeds_imply():
    # prefill 10,000 tokens in 0.5 s = 20,000 token/s against 4,000 token/s of decode:
    # output/input = 5, so input = 15/5 = 3 USD/Mtoken, and the hour's hold costs the write
    # premium 6 - 3 = 3 USD/Mtoken. Regression: refused at 1x the typical write price.
    s = solve("cache_storage_price",
              {"cache_hold_time": "1 h", "price_cache_write": "6 USD/Mtoken",
               "price_output": "15 USD/Mtoken", "prompt_tokens": "10000 token",
               "time_to_first_token": "0.5 s", "tokens_per_second": "4000 token/s"},
              ["none"])
    assert s.value("cache_storage_price", "USD/Mtoken/hour") == pytest.approx(3, rel=1e-9)


# --- issue 10's examples, on the knowledge base ----------------------------------------------

def test_weight_read_needs_no_flops():
    s = solve("t_weight_fetch", {"total_params": "70e9 param", "bytes_per_param": "2 byte/param",
                                 "n_chips": "8 chip", "hbm_bandwidth": "3.35 TB/s"})
    # 70e9 x 2 bytes over 8 x 3.35e12 byte/s = 140e9 / 26.8e12 s
    assert s.value("t_weight_fetch", "s") == pytest.approx(140e9 / 26.8e12, rel=1e-12)


def test_kv_read_and_replica_bandwidth_from_bandwidth_alone():
    s = solve(["t_kv_fetch", "replica_hbm_bandwidth"],
              {"n_chips": "8 chip", "hbm_bandwidth": "3.35 TB/s", "batch_size": "16 sequence",
               "kv_bytes_per_token": "327680 byte/token", "context_length": "8192 token"})
    assert s.value("replica_hbm_bandwidth", "byte/s") == pytest.approx(8 * 3.35e12, rel=1e-12)
    # 16 sequences x 8,192 tokens x 327,680 bytes over 26.8e12 byte/s
    assert s.value("t_kv_fetch", "s") == pytest.approx(16 * 8192 * 327680 / 26.8e12, rel=1e-12)


def test_a_preset_s_own_numbers_can_be_asked_for():
    chip = solve("chip_flops", presets="h100")
    assert chip.value("chip_flops", "FLOP/s") == pytest.approx(989e12)  # H100 SXM datasheet
    assert chip.stated["chip_flops"]["origin"] == "preset h100"
    model = solve("total_params", presets="deepseek_v3")
    # DeepSeek-V3 report: 671B parameters, a rounded headline; the preset's architecture
    # (config_671B.json) counts 671.03B, which answers, with the statement beside it
    assert model.stated["total_params"]["stated"] == pytest.approx(671e9)
    assert model.value("total_params", "param") == pytest.approx(671e9, rel=1e-4)


def test_a_stated_value_the_other_pins_also_give_is_cross_checked():
    given = {"hardware_intensity": "300 FLOP/byte"}
    s = solve("hbm_bandwidth", presets="h100", given=given)
    assert s.value("hbm_bandwidth", "byte/s") == pytest.approx(3.35e12)  # the statement leads
    # the other pins give 989e12 FLOP/s / 300 FLOP/byte = 3.297e12 byte/s, 1.6% apart
    entry = s.stated["hbm_bandwidth"]
    assert entry["derived"] == pytest.approx(989e12 / 300)
    assert entry["relative_difference"] == pytest.approx(1 - 989e12 / 300 / 3.35e12, rel=1e-9)
    assert "differ" in s.derivation.text()
    derived = solve("hbm_bandwidth", presets="h100", given=given, prefer="derived")
    assert derived.value("hbm_bandwidth", "byte/s") == pytest.approx(989e12 / 300)
    # a chip preset's chip_flops is the peak of the format it names and gives way to what
    # determines it (a precision preset's format; here 300 FLOP/byte x 3.35 TB/s), still
    # cross-checked against it
    s = solve("chip_flops", presets="h100", given=given)
    assert s.value("chip_flops", "FLOP/s") == pytest.approx(1.005e15)
    assert s.stated["chip_flops"]["stated"] == pytest.approx(989e12)


def test_rl_and_inference_tokens_under_an_equal_split_need_no_parameter_count():
    given = {"pretrain_tokens": "15e12 token", "rl_flops_per_param": "6 FLOP/param/token",
             "decode_inefficiency": "3"}
    s = solve(["rl_tokens", "inference_tokens"], given, ["equal_split"])
    # equal split: 6 N D = 6 x 3 x N R (RL) and 6 N D = 3 x 2 N T (serving, 2 FLOP/param)
    assert s.value("rl_tokens", "token") == pytest.approx(6 * 15e12 / (6 * 3), rel=1e-12)
    assert s.value("inference_tokens", "token") == pytest.approx(6 * 15e12 / (3 * 2), rel=1e-12)
    assert s.derivation.placeholders == ("active_params",)
    assert "active_params cancels" in s.derivation.text()
    with pytest.raises(KeyError):
        s["active_params"]


# Regression (issue 22): with nothing pinned, the refusal said "the pins fix only a
# combination of decode_requests_per_second, output_tokens and tokens_per_second", which
# decode_requests_per_second x decoded_tokens = tokens_per_second (decoded_tokens read
# off output_tokens) fixes whatever the pins are
def test_a_product_the_relations_fix_alone_is_not_what_the_pins_fix():
    with pytest.raises(UnderdeterminedError) as info:
        solve("tokens_per_second", {})
    assert not info.value.fixed
    assert "fix only" not in info.value.message
    assert ("decode_requests_per_second", "output_tokens") in set(
        map(tuple, info.value.completions))


def test_explain_names_the_combination_a_degenerate_set_fixes():
    pins = {"replica_flops": "8e15 FLOP/s", "replica_hbm_bandwidth": "26.8 TB/s",
            "hardware_intensity": "298.5 FLOP/byte"}
    with pytest.raises(UnderdeterminedError) as info:
        solve("chip_flops", pins)
    # replica_flops = n chip_flops and replica bandwidth = n hbm_bandwidth: with their ratio
    # pinned too, the pins fix chip_flops only together with hbm_bandwidth (or n_chips, or
    # chips_per_stage, which is n_chips in the conventions' single pipeline stage, or
    # expert_parallelism, which is chips_per_stage with whole experts on each chip, or
    # attention_tensor_parallelism, which is n_chips in the conventions' one attention group,
    # or attention_chip_flops, which is chip_flops itself while attention runs at the matmuls'
    # peak, the conventions' zero attention_surplus_time_per_flop). That last one is the first
    # completion, but chip_flops/attention_chip_flops is fixed at 1 by the relation alone,
    # whatever the pins: the message names the next one's product instead
    assert "fix only chip_flops·expert_parallelism" in info.value.message
    assert set(map(tuple, info.value.completions)) == {("hbm_bandwidth",), ("n_chips",),
                                                       ("chips_per_stage",),
                                                       ("expert_parallelism",),
                                                       ("attention_tensor_parallelism",),
                                                       ("attention_chip_flops",)}
    text = explain("chip_flops", pins).text()
    assert "n_chips" in text


# Regression (found while timing issue 22): a linearised row listed its entries in the
# order of a set of names, and elimination adds entries up in that order, so the last
# bits of a rank analysis (and of what it decides at its tolerance) depended on the
# process's hash seed: 8 of 77 analyses of three preset questions differed.
_SEEDED = """
import functools, hashlib
from chalk import solve
import chalk.solvers.planning.plan as plan
seen = []
inner = plan._analysis.__wrapped__
def recorded(*args):
    out = inner(*args)
    rows = sorted((p, sorted((c, repr(float(v))) for c, v in row.items()))
                  for p, row in out[0].rows.items())
    seen.append(repr((sorted(args[1]), args[2], rows, out[0].checks)))
    return out
plan._analysis = functools.lru_cache(maxsize=512)(recorded)
for targets, presets, given in [
        (["step_time_with_comm", "t_tp_comm"], ["h100", "llama_3_1_70b", "bf16"],
         {"n_chips": "8 chip", "batch_size": "16 sequence", "context_length": "8k token",
          "allreduce_latency": "10 us"}),
        (["step_time"], ["h100", "deepseek_v3", "fp8"],
         {"n_chips": "8 chip", "batch_size": "16 sequence", "context_length": "8k token"}),
        (["tokens_per_second"], ["h200", "qwen3_235b_a22b", "fp8"],
         {"n_chips": "8 chip", "batch_size": "64 sequence", "context_length": "4k token"})]:
    s = solve(targets, presets=presets, given=given)
    seen.append(repr(float(s.value(targets[0], "s" if "time" in targets[0] else "token/s"))))
print(len(seen), hashlib.sha256("\\n".join(seen).encode()).hexdigest())
"""


@pytest.mark.slow
def test_a_rank_analysis_is_the_same_whatever_the_hash_seed():
    import os
    import subprocess
    import sys

    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", _SEEDED], env=env, check=True,
                              capture_output=True, text=True)
        outputs.append(done.stdout.strip())
    assert outputs[0] == outputs[1]
    assert int(outputs[0].split()[0]) > 10  # the analyses were recorded


@pytest.mark.slow
def test_a_row_the_exact_rows_imply_never_keeps_an_uncancelled_entry(monkeypatch):
    # The exact test of a product-of-powers row that met linearised rows is skipped where
    # an entry of the reduced row is at least RANK.pivot_threshold of what went into it:
    # a row the exact rows imply reduces to rounding in every entry. Forced to run every
    # time over real questions, the exact test must never find such a row implied (it
    # found none implied at all in these, of 1,426 tests, when this was written).
    from chalk.solvers.analysis import rank
    from chalk.solvers.planning import plan as planning

    from chalk.preparation import prepare

    seen = []
    implies, uncancelled = rank._ExactSpan.implies, rank._uncancelled

    def recording_uncancelled(row, candidates):
        seen.append([uncancelled(row, candidates), None])
        return False  # always test exactly

    def recording_implies(self, source):
        found = implies(self, source)
        seen[-1][1] = found is not None
        return found

    monkeypatch.setattr(rank, "_uncancelled", recording_uncancelled)
    monkeypatch.setattr(rank._ExactSpan, "implies", recording_implies)
    planning.clear_caches()
    given = {"n_chips": "8 chip", "batch_size": "32 sequence", "context_length": "8k token"}
    for presets in (["h100", "bf16", "llama_3_1_70b"], ["h100", "fp8", "deepseek_v3"]):
        for target in ("step_time", "critical_batch_size", "cost_per_token"):
            prepare(target, given, presets)  # prepared afresh: every analysis is made
    # the whole model with nothing pinned, at each reference draw (where the exact test
    # was first needed: fast_batch_from_prices, left 2.2e-9 of its size by rounding)
    import dataclasses

    from chalk.solvers.analysis import reference

    for draw in (reference.REFERENCE, dataclasses.replace(reference.REFERENCE, seed=1),
                 dataclasses.replace(reference.REFERENCE, seed=1, draw="per_name")):
        monkeypatch.setattr(reference, "REFERENCE", draw)
        identities(load_model.__wrapped__())
    planning.clear_caches()
    assert len(seen) > 100
    assert not any(clear and implied for clear, implied in seen)
    assert any(clear for clear, _ in seen)
