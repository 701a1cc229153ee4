"""The memory-tier verdict of a prompt cache's prices, on tiers made up for the test."""

import pytest

from chalk.applications.cache_verdict import kind_spans, tier_verdict
from chalk.applications.tiers import TierRow

# Two made-up tiers: "hbm" 100 GB at 1 TB/s costing 0.05 USD/GB/h (drain 0.1 s);
# "flash" 10 TB at 10 GB/s costing 1e-5 USD/GB/h (drain 1,000 s).
TIERS = (TierRow("fast", "hbm", 0.1, 0.05, 100e9, 1e12),
         TierRow("slow", "flash", 1000.0, 1e-5, 10e12, 10e9))
KV = 100_000.0  # byte/token


def test_spans_and_read_cost_by_hand():
    spans = kind_spans(TIERS, KV)
    # hbm: tier price 0.05 x 100 GB = 5 USD/h; reading 1e6 tokens x 1e5 byte = 1e11 byte at
    # 1e12 byte/s takes 0.1 s: 5 / 3600 x 0.1 = 1.389e-4 USD per Mtoken
    assert spans["hbm"].read_cost_per_mtoken[0] == pytest.approx(5 / 3600 * 0.1)
    # flash: 1e-5 x 1e4 GB = 0.1 USD/h; 1e11 byte / 1e10 byte/s = 10 s: 0.1/3600 x 10
    assert spans["flash"].read_cost_per_mtoken[0] == pytest.approx(0.1 / 3600 * 10)


def test_hold_time_picks_among_the_tiers_the_prices_pay_for():
    spans = kind_spans(TIERS, KV)
    verdict = tier_verdict(spans, storage_per_gb_hour=1.0, hold_time_s=600.0,
                           read_price_per_mtoken=1.0)
    assert verdict.kinds == ("hbm", "flash")
    assert verdict.favoured == "flash"  # 600 s is nearer flash's 1,000 s than hbm's 0.1 s


def test_a_storage_price_below_a_tiers_cost_rules_it_out():
    spans = kind_spans(TIERS, KV)
    verdict = tier_verdict(spans, storage_per_gb_hour=0.01)  # under hbm's 0.05
    assert verdict.kinds == ("flash",) and verdict.favoured == "flash"


def test_a_read_price_below_a_tiers_read_cost_rules_it_out():
    spans = kind_spans(TIERS, KV)
    verdict = tier_verdict(spans, storage_per_gb_hour=1.0, read_price_per_mtoken=2e-4)
    # flash's read-back costs 2.78e-4 USD/Mtoken (its slow bandwidth), hbm's 1.39e-4
    assert verdict.kinds == ("hbm",)


def test_without_a_hold_time_several_tiers_stay_open_and_the_margin_is_named():
    spans = kind_spans(TIERS, KV)
    verdict = tier_verdict(spans, storage_per_gb_hour=1.0)
    assert verdict.favoured is None
    assert "20 times even hbm's holding cost" in verdict.lines[-1]  # 1.0 / 0.05


def test_nothing_fits_says_so():
    spans = kind_spans(TIERS, KV)
    verdict = tier_verdict(spans, storage_per_gb_hour=1e-6)
    assert verdict.kinds == () and "no tier" in verdict.lines[-1]
