"""chalk.tier_table as a table a reader can print (issue 25: "tier_table() returns a raw
tuple with no printed form")."""

from __future__ import annotations

import pytest

from chalk import Q_, tier_table


def _h100(table):
    return next(row for row in table if row.name == "tier_hbm_h100")


def test_rows_carry_quantities_beside_their_plain_numbers():
    row = _h100(tier_table())
    # H100 SXM: 80 GB of HBM3 at 3.35 TB/s (NVIDIA datasheet): 80e9 / 3.35e12 = 23.88 ms
    assert row.capacity == Q_(80e9, "byte")
    assert row.bandwidth == Q_(3.35e12, "byte/s")
    assert row.drain_time.m_as("ms") == pytest.approx(80e9 / 3.35e12 * 1e3, rel=1e-12)
    assert row.price.m_as("USD/GB/hour") == pytest.approx(row.cost_per_gb_hour, rel=1e-12)


def test_the_table_prints_one_line_per_tier_fastest_first():
    table = tier_table()
    lines = table.text().splitlines()
    assert lines[0].split() == ["tier", "kind", "capacity", "bandwidth", "drain", "time",
                                "price"]
    assert len(lines) == len(table) + 1
    h100 = next(line for line in lines if line.startswith("tier_hbm_h100 "))
    assert h100.split()[1:8] == ["hbm", "80", "GB", "3.35", "TB/s", "23.88", "ms"]
    drains = [row.drain_time_s for row in table]
    assert drains == sorted(drains)
    assert str(table) == table.text()
    assert repr(table).startswith(f"<TierTable: {len(table)} tiers, tier_hbm_tpu_v5e (drains "
                                  "in 19.54 ms)")


def test_the_markdown_form_is_a_table_with_a_row_per_tier():
    table = tier_table()
    markdown = table._repr_markdown_().splitlines()
    assert markdown[0] == "| tier | kind | capacity | bandwidth | drain time | price |"
    assert len(markdown) == len(table) + 2
    # a tier with no price in the data says so instead of printing NaN
    assert not any("nan" in line.lower() for line in markdown)
