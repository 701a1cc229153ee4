"""Data files: every number sourced and dated; drain times of the tiers; validation errors."""

import pytest
from chalk.knowledge import data
from chalk.knowledge.data import read_fact
from chalk.knowledge.presets import all_presets
from chalk.knowledge.price_sheets import read_sheets, shipped_sheets
from chalk.symbolic.errors import DataError

from chalk import solve


def drain_seconds(preset):
    return solve("tier_drain_time", presets=[preset]).value("tier_drain_time", "s")


def test_hbm_drains_in_tens_of_ms():
    for chip in ("h100", "h200", "b200", "gb200_nvl72", "mi300x", "tpu_v5p"):
        record = data.accelerators()[chip].facts
        expected = (record["hbm_capacity"].quantity() / record["hbm_bandwidth"].quantity())
        assert drain_seconds(f"tier_hbm_{chip}") == pytest.approx(expected.to("s").magnitude)
        assert 0.01 <= drain_seconds(f"tier_hbm_{chip}") < 0.1


def test_dram_drains_in_seconds_flash_in_minutes_disk_in_hours():
    assert 1 <= drain_seconds("tier_ddr5_x86_server") < 60  # 2 TB / 614.4 GB/s = 3.3 s
    assert drain_seconds("tier_ddr5_x86_server") == pytest.approx(2e12 / 614.4e9)
    for drive in ("tier_nvme_gen5_drive", "tier_nvme_gen6_drive", "tier_nvme_dgx_node"):
        assert 60 <= drain_seconds(drive) < 3600
    assert drain_seconds("tier_nvme_gen5_drive") == pytest.approx(30.72e12 / 14e9)
    assert 3600 <= drain_seconds("tier_hdd_nearline") < 2 * 86400  # 24 TB / 285 MB/s
    assert drain_seconds("tier_hdd_nearline") == pytest.approx(24e12 / 285e6)


def test_data_counts_meet_the_floor():
    assert len(data.accelerators()) >= 12
    assert len(data.models()) >= 9
    assert len(shipped_sheets()) >= 12
    kinds = {r.fields["kind"] for r in data.memory_tiers().values()}
    assert kinds >= {"hbm", "dram", "flash", "disk"}
    vendors = {r.fields["vendor"] for r in data.accelerators().values()}
    assert vendors >= {"NVIDIA", "AMD", "Google"}


def test_every_preset_value_has_source_and_date():
    for preset in all_presets().values():
        for name, value in preset.values.items():
            assert value.source.strip(), (preset.name, name)
            assert value.date.strip(), (preset.name, name)


def test_fact_without_source_names_file_entry_and_field():
    with pytest.raises(DataError) as info:
        read_fact({"value": "3 TB/s", "date": "2024"}, "chips.yaml", "x100", "hbm_bandwidth")
    assert info.value.message == "chips.yaml, entry 'x100', field 'hbm_bandwidth': missing source"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [({"value": "3 TB/s", "source": "s"}, "missing date"),
     ({"value": "-3 TB/s", "source": "s", "date": "d"}, "must be positive"),
     ({"value": "3 parsecs", "source": "s", "date": "d"}, "unknown unit"),
     ({"value": "__import__('os')", "source": "s", "date": "d"}, "expected a number"),
     ({"value": "3 TB/s", "source": "s", "date": "d", "colour": "red"}, "unknown key")],
)
def test_bad_facts_are_rejected(raw, reason):
    with pytest.raises(DataError, match=reason):
        read_fact(raw, "f.yaml", "e", "field")


def test_price_sheet_file_with_unknown_key(tmp_path):
    bad = tmp_path / "sheet.yaml"
    bad.write_text("id: mine\nprovider: P\nmodel: M\nsource: s\ndate: d\n"
                   "prices: {input: 1 USD/Mtoken, output: 2 USD/Mtoken, discount: 3}\n")
    with pytest.raises(DataError) as info:
        read_sheets(bad)
    assert info.value.message == ("sheet.yaml, entry 'mine', field 'prices.discount': "
                                  "unknown key; expected one of cache_read, cache_storage, "
                                  "date, input, note, output, source")


def test_every_preset_source_is_a_public_citation():
    # issue 25: a report printed "../shared/reference ..." as a source; a reader needs
    # the public document (a URL, a paper, a repository file), not this project's notes
    from chalk.knowledge.presets import all_presets

    private = ("../shared", "shared/reference", "reference-data")
    for preset in all_presets().values():
        for name, value in preset.values.items():
            assert not any(p in value.source for p in private), (preset.name, name,
                                                                 value.source)
