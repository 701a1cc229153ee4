"""Issue 23, the seam between prefill and pricing: what a cache-hit price says about the
memory tier the provider reads the KV back from (lecture 1:49:06-1:50:29).

cache_read_price_ratio = price_cache_read / price_input, and with one margin on both it
equals retrieve_cost_per_token / remat_cost_per_token: reading a token's KV back from a
tier against recomputing it with a prefill pass. Every number below is worked by hand in
the comments; 4 year of straight-line amortisation is 4 x 365.25 x 24 = 35,064 hours.
"""

import pytest
from chalk.knowledge import load_model
from chalk.knowledge.price_sheets import price_sheet

from chalk import solve

# DeepSeek-V3's cached latent per token (config_671B.json: 61 layers, kv_lora_rank 512 plus
# qk_rope_head_dim 64) in bf16: 61 x 576 x 2 = 70,272 bytes
DEEPSEEK_KV = "70272 byte/token"
# and its active parameters (DeepSeek-V3 README: 37B; the preset's 36.7e9)
DEEPSEEK_ACTIVE = "36.7e9 param"


def test_a_tenth_of_the_input_price():
    # Gemini 2.5 Pro (knowledge/data/price_sheets.yaml): 0.125 / 1.25 = 0.1
    s = solve("cache_read_price_ratio", given={"price_input": "1.25 USD/Mtoken",
                                                "price_cache_read": "0.125 USD/Mtoken"})
    assert s.value("cache_read_price_ratio") == pytest.approx(0.1, rel=1e-12)


def test_the_ratio_read_from_a_shipped_price_sheet():
    # the same sheet through its data file, not retyped: 0.125 / 1.25 = 0.1; and DeepSeek's
    # V3 chat sheet: 0.07 / 0.27 = 0.259259...
    for sheet, expected in (("gemini_2_5_pro", 0.1), ("deepseek_v3_chat", 0.07 / 0.27)):
        prices = price_sheet(sheet).prices
        s = solve("cache_read_price_ratio",
                  given={"price_input": prices["input"].text,
                         "price_cache_read": prices["cache_read"].text})
        assert s.value("cache_read_price_ratio") == pytest.approx(expected, rel=1e-12)


def test_backwards_the_tier_bandwidth_a_cache_price_points_to():
    # ratio 0.1; a recompute stated at 0.1 USD/Mtoken = 1e-7 USD/token, so at one margin the
    # read-back costs 0.1 x 1e-7 = 1e-8 USD/token. 100 kB/token read at a tier rented for
    # 1 USD/hour = 1/3600 USD/s: retrieve = kv x price / bandwidth, so
    # bandwidth = 1e5 byte x (1/3600) USD/s / 1e-8 USD = 2.778e9 byte/s = 2.78 GB/s
    s = solve("tier_bandwidth", given={"price_input": "1.25 USD/Mtoken",
                                        "price_cache_read": "0.125 USD/Mtoken",
                                        "remat_cost_per_token": "0.1 USD/Mtoken",
                                        "kv_bytes_per_token": "100 kB/token",
                                        "tier_price": "1 USD/hour"})
    assert s.value("retrieve_cost_per_token", "USD/token") == pytest.approx(1e-8, rel=1e-9)
    assert s.value("tier_bandwidth", "GB/s") == pytest.approx(1e5 / 3600 / 1e-8 / 1e9,
                                                              rel=1e-9)
    assert s.value("tier_bandwidth", "GB/s") == pytest.approx(2.778, rel=1e-3)
    # the read-back side is retrieve alone: the hold is not on the path
    used = {r for step in s.derivation.steps for r in step.relations}
    assert "cache_read_price_is_cost_ratio" in used
    assert "tier_cost_per_token" not in used and "hold_cost_per_token" not in used


def test_backwards_from_deepseek_s_sheet_with_a_model_and_a_chip():
    # deepseek_v3_chat: hit 0.07, miss 0.27 USD/Mtoken: ratio 0.259259.
    # Recompute at the floor on an H800 (preset: 989 TFLOP/s bf16 dense, 2 USD/hour, the
    # rent DeepSeek's day-6 write-up assumes): 36.7e9 param x 2 FLOP = 7.34e10 FLOP/token,
    # 7.34e10 / 989e12 = 7.4216e-5 s x 2/3600 USD/s = 4.1231e-8 USD/token.
    # Read-back at one margin: 0.259259 x 4.1231e-8 = 1.06896e-8 USD/token.
    # At a tier rented for 1 USD/hour: 70,272 byte x (1/3600) USD/s / 1.06896e-8 USD
    # = 19.52 / 1.06896e-8 = 1.8261e9 byte/s
    s = solve("tier_bandwidth", given={"price_input": "0.27 USD/Mtoken",
                                        "price_cache_read": "0.07 USD/Mtoken",
                                        "kv_bytes_per_token": DEEPSEEK_KV,
                                        "active_params": DEEPSEEK_ACTIVE,
                                        "tier_price": "1 USD/hour"},
              presets=["h800"])
    remat = 36.7e9 * 2 / 989e12 * 2 / 3600
    assert remat == pytest.approx(4.1231e-8, rel=1e-4)  # the hand figure above
    assert s.value("remat_cost_per_token", "USD/token") == pytest.approx(remat, rel=1e-9)
    assert s.value("retrieve_cost_per_token", "USD/token") == pytest.approx(
        0.07 / 0.27 * remat, rel=1e-9)
    assert s.value("tier_bandwidth", "byte/s") == pytest.approx(1.8261e9, rel=1e-4)


def test_forwards_the_discount_a_host_dram_tier_supports():
    # tier_ddr5_x86_server: 2 TB at 614.4 GB/s, bought at 13.6 USD/GB over 4 years:
    # tier_price = 2e12 byte x 13.6e-9 USD/byte / 35,064 h = 27,200 / 35,064 = 0.77572 USD/h.
    # 100 kB/token read back: 1e5 / 614.4e9 = 1.6276e-7 s x 0.77572/3600 USD/s
    # = 3.5071e-11 USD/token; against a recompute of 1e-7 USD/token: 3.5071e-4
    s = solve("cache_read_price_ratio", given={"kv_bytes_per_token": "100 kB/token",
                                                "remat_cost_per_token": "0.1 USD/Mtoken"},
              presets=["tier_ddr5_x86_server"])
    tier_price = 2e12 * 13.6e-9 / 35_064  # USD/hour
    assert tier_price == pytest.approx(0.77572, rel=1e-5)
    expected = 1e5 / 614.4e9 * tier_price / 3600 / 1e-7
    assert expected == pytest.approx(3.5071e-4, rel=1e-4)
    assert s.value("cache_read_price_ratio") == pytest.approx(expected, rel=1e-9)
    # and with an input price of 1.25 USD/Mtoken, the cache price that tier pays for:
    # 1.25 x 3.5071e-4 = 4.3839e-4 USD/Mtoken
    s = solve("price_cache_read", given={"kv_bytes_per_token": "100 kB/token",
                                          "remat_cost_per_token": "0.1 USD/Mtoken",
                                          "price_input": "1.25 USD/Mtoken"},
              presets=["tier_ddr5_x86_server"])
    assert s.value("price_cache_read", "USD/Mtoken") == pytest.approx(1.25 * expected,
                                                                       rel=1e-9)


def test_forwards_hbm_on_the_chip_that_recomputes_prices_cancel():
    # HBM as the tier, priced at the same chip's rent (tier_hbm_h100: 2.35 USD/hour, as
    # the h100 preset): the ratio is the time to read the KV over the time to recompute it,
    # (70,272 / 3.35e12) / (7.34e10 / 989e12) = 2.09767e-8 s / 7.42164e-5 s = 2.8264e-4
    s = solve("cache_read_price_ratio", given={"kv_bytes_per_token": DEEPSEEK_KV,
                                                "active_params": DEEPSEEK_ACTIVE},
              presets=["h100", "tier_hbm_h100"])
    expected = (70_272 / 3.35e12) / (36.7e9 * 2 / 989e12)
    assert expected == pytest.approx(2.8264e-4, rel=1e-4)
    assert s.value("cache_read_price_ratio") == pytest.approx(expected, rel=1e-9)


def test_the_relation_states_its_assumptions():
    relation = load_model().relations["cache_read_price_is_cost_ratio"]
    said = " ".join(relation.assumptions)
    assert "one margin" in said
    assert "cache_storage_price" in said  # why the hold is not on the read side
    assert "floor" in said and "quadratic" in said
    assert relation.source.citation.startswith("lecture")
