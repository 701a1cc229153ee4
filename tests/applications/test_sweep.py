"""Sweeps: tables in the units people write, and points without a solution explained."""

import pytest

from chalk import sweep

# A 100B dense model at 1 byte/param on 8 H100s (3.35 TB/s each), 8k tokens of context at
# 100,000 byte/token: the weights alone take 100e9 / (8 x 3.35e12) = 3.731 ms to read, and
# one sequence's KV ("8k" is 8,000) 8000 x 1e5 / 26.8e12 = 29.85 us.
PINS = {"active_params": "100e9 param", "total_params": "100e9 param",
        "context_length": "8k token", "kv_bytes_per_token": "100000 byte/token",
        "n_chips": "8 chip"}
WEIGHTS_S = 100e9 / (8 * 3.35e12)
KV_S = 8000 * 1e5 / (8 * 3.35e12)


def table():
    return sweep("batch_size", "step_time", "1 ms", "50 ms", 6, given=PINS,
                 presets=["lecture", "h100"])


def test_a_point_without_a_solution_says_why():
    t = table()
    assert t.y_values["batch_size"][0] != t.y_values["batch_size"][0]  # NaN at 1 ms
    assert len(t.gaps) == 1
    gap = t.gaps[0]
    assert gap.startswith("step_time = 1 ms (1 of 6 points)")
    # memory-bound: the KV read would have to take 1 ms - 3.731 ms = -2.731 ms
    assert f"t_kv_fetch would be {1e3 * (1e-3 - WEIGHTS_S):.4g} ms" in gap
    assert "no solution: step_time = 1 ms" in t.text()


def test_the_table_shows_times_in_ms_and_blanks_as_dashes():
    t = table()
    lines = t.text().splitlines()
    assert lines[0].split()[:2] == ["step_time", "[ms]"]
    first, second = lines[1].split(), lines[2].split()
    assert first[:2] == ["1", "-"]
    # memory-bound at 10.8 ms (a sequence's matmuls, 100e9 FLOP / 7.912e15 FLOP/s = 12.6 us,
    # take less than its KV read): batch = (10.8 ms - 3.731 ms) / 29.85 us = 236.8
    batch = (10.8e-3 - WEIGHTS_S) / KV_S
    assert float(second[0]) == pytest.approx(10.8)
    assert float(second[1].replace(",", "")) == pytest.approx(batch, rel=1e-4)


def test_column_scale_picks_one_rung_for_the_column():
    from chalk.symbolic.printing.numbers import UnitDisplay, column_scale

    seconds = UnitDisplay("s", 1.0, "time")
    # the largest value, 0.05 s, reads best in ms: every cell is multiplied by 1000
    assert column_scale([0.001, 0.05, float("nan")], seconds) == ("ms", pytest.approx(1e3))
    per_token = UnitDisplay("USD/token", 1.0, "token price")
    assert column_scale([132e-9], per_token) == ("USD/Mtoken", pytest.approx(1e6))
    plain = UnitDisplay("sequence", 1.0, "")
    assert column_scale([5354.0], plain) == ("sequence", 1.0)


@pytest.mark.parametrize(("over", "parts"), [
    ("batch_size=1..4096 sequence", ("batch_size", "1 sequence", "4096 sequence")),
    ("hbm_capacity=1..1e300 GB", ("hbm_capacity", "1 GB", "1e300 GB")),
    ("hbm_capacity = 80 GB .. 2 TB", ("hbm_capacity", "80 GB", "2 TB")),
    ("sparsity_factor=1..32", ("sparsity_factor", "1", "32")),
])
def test_parse_over_keeps_the_ends_as_written(over, parts):
    from chalk.applications.sweep import parse_over

    assert parse_over(over) == parts

