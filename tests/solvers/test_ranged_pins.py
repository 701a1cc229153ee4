"""Ranged pins the other pins determine are judged by overlap (solvers.bulk.ranged_pins)."""

import pytest

from chalk import solve

# Issue 13: a ranged pin that the other pins determine is judged by overlap, not by its
# midpoint. H100: 989e12 FLOP/s / 3.35e12 byte/s = 295.22 FLOP/byte.
H100_INTENSITY = 989e12 / 3.35e12
# The chip's figures given as pins: a chip preset's chip_flops is the peak of the format
# it names and gives way to what determines it (knowledge/presets.py), a range included.
H100 = {"chip_flops": "989 TFLOP/s", "hbm_bandwidth": "3.35 TB/s"}


def test_a_range_containing_the_derived_value_is_no_conflict():
    s = solve("critical_batch_size", presets=["lecture"],
              given={**H100, "hardware_intensity": "200..600 FLOP/byte", "sparsity_factor": 8})
    # the derived intensity is used: 1 byte/param x 295.22 FLOP/byte x 8 / 1 FLOP/param
    assert s.value("critical_batch_size", "sequence") == pytest.approx(8 * H100_INTENSITY,
                                                                        rel=1e-9)
    note = next(n for n in s.derivation.notes if n.startswith("hardware_intensity:"))
    assert "lies inside your range 200 FLOP/byte to 600 FLOP/byte" in note
    assert "295.2 FLOP/byte" in note


def test_a_range_the_derived_value_misses_names_both():
    from chalk.symbolic.errors import RangeDisagrees

    with pytest.raises(RangeDisagrees) as caught:
        solve("critical_batch_size", presets=["lecture"],
              given={**H100, "hardware_intensity": "400..600 FLOP/byte", "sparsity_factor": 8})
    assert caught.value.name == "hardware_intensity"
    assert set(caught.value.pins) == {"chip_flops", "hbm_bandwidth"}
    assert "295.2 FLOP/byte" in caught.value.message


def test_a_distribution_claims_its_central_ninety_percent():
    from chalk.symbolic.errors import RangeDisagrees

    # normal(250, 20): 90% interval 250 +- 1.645 x 20 = 217.1..282.9, which misses 295.2
    with pytest.raises(RangeDisagrees):
        solve("critical_batch_size", presets=["lecture"],
              given={**H100, "hardware_intensity": "normal(250 FLOP/byte, 20 FLOP/byte)",
                     "sparsity_factor": 8})
    # normal(270, 20): 237.1..302.9 contains it
    s = solve("critical_batch_size", presets=["lecture"],
              given={**H100, "hardware_intensity": "normal(270 FLOP/byte, 20 FLOP/byte)",
                     "sparsity_factor": 8})
    assert s.value("critical_batch_size", "sequence") == pytest.approx(8 * H100_INTENSITY)


def test_of_two_ranges_that_fix_each_other_the_wider_is_judged():
    # chip_flops 900..1100 TFLOP/s (ln width 0.20) against intensity 250..300 (ln width 0.18):
    # chip_flops is set aside and derived as intensity x 3.35 TB/s, 837.5..1005 TFLOP/s
    s = solve("critical_batch_size", presets="lecture", samples=20_000,
              given={"chip_flops": "900..1100 TFLOP/s", "hbm_bandwidth": "3.35 TB/s",
                     "hardware_intensity": "250..300 FLOP/byte", "sparsity_factor": 8})
    low, high = (q.to("sequence").magnitude for q in s.interval("critical_batch_size"))
    # critical batch = 8 x intensity; log-uniform 250..300: 5th/95th percentiles
    a, b = 250.0, 300.0
    assert low == pytest.approx(8 * a * (b / a) ** 0.05, rel=5e-3)
    assert high == pytest.approx(8 * a * (b / a) ** 0.95, rel=5e-3)
    assert any(n.startswith("chip_flops:") and "overlaps" in n for n in s.derivation.notes)


def test_a_range_is_judged_the_same_whatever_else_is_asked():
    # Regression (issue 22): asking for chip_flops too, which the h100 preset states, left
    # the range a plain pin checked at its mid-point, 24.49 ms (the geometric mean of 20
    # and 30 ms), against 80e9 / 3.35e12 = 23.88 ms: "pins disagree". Both answers are
    # 989e12 / 3.35e12 = 295.2 FLOP/byte, and the range is judged by overlap in both.
    given = {"hbm_drain_time": "20 ms..30 ms"}
    alone = solve("hardware_intensity", given, ["h100"])
    both = solve(["hardware_intensity", "chip_flops"], given, ["h100"])
    for s in (alone, both):
        assert s.value("hardware_intensity", "FLOP/byte") == pytest.approx(H100_INTENSITY,
                                                                             rel=1e-9)
        note = next(n for n in s.derivation.notes if n.startswith("hbm_drain_time:"))
        assert "23.88 ms, which lies inside your range 20 ms to 30 ms" in note
    assert both.value("chip_flops", "TFLOP/s") == 989
