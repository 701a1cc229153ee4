"""Price sheets: a personal sheet may leave out its source and date, shipped ones may not,
every unknown key names the closest known one, and prices may be written as people do."""

import re
from pathlib import Path

import pytest
from chalk.knowledge.price_sheets import (
    UNDATED,
    UNSOURCED,
    price_sheet,
    read_sheets,
    shipped_sheets,
)
from chalk.symbolic.errors import DataError
from chalk.symbolic.parsing import parse_unit, parse_value
from chalk.symbolic.units import Q_

PERSONAL = """\
id: my_model
provider: Me
model: My Model
prices:
  input: "3 USD/Mtok"
  output: "15 USD/1M tokens"
  cache_read: "0.3 USD/M tokens"
long_context:
  threshold: "128k token"
  source: "my notes"
  input: "6 USD/Mtoken"
"""


def _write(tmp_path, text, name="my_sheet.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _base(fact):
    return fact.quantity().to_base_units().magnitude


def test_a_personal_sheet_without_source_or_date_loads_marked_unsourced(tmp_path):
    sheet = price_sheet(str(_write(tmp_path, PERSONAL)))
    assert not sheet.sourced
    assert (sheet.source, sheet.date) == (UNSOURCED, UNDATED)
    assert sheet.prices["input"].source == UNSOURCED
    # a section's own source is kept for its prices; its date still falls back
    assert sheet.long_context["input"].source == "my notes"
    assert sheet.long_context["input"].date == UNDATED
    # prices written as people write them, in USD per token:
    assert _base(sheet.prices["input"]) == pytest.approx(3 / 1e6, rel=1e-12)
    assert _base(sheet.prices["output"]) == pytest.approx(15 / 1e6, rel=1e-12)
    assert _base(sheet.prices["cache_read"]) == pytest.approx(0.3 / 1e6, rel=1e-12)
    assert _base(sheet.long_context["threshold"]) == pytest.approx(128e3, rel=1e-12)


def test_shipped_sheets_all_name_a_source_and_a_date():
    for sheet in shipped_sheets().values():
        assert sheet.sourced and sheet.source.strip() and sheet.date != UNDATED, sheet.id
        facts = [*sheet.prices.values(), *sheet.long_context.values(),
                 *sheet.fast_mode.values(),
                 *(f for w in sheet.cache_writes for f in (w.hold_time, w.price))]
        assert all(f.source not in ("", UNSOURCED) and f.date.strip() for f in facts), sheet.id


def test_the_shipped_rules_still_refuse_a_sheet_without_source(tmp_path):
    with pytest.raises(DataError) as info:
        read_sheets(_write(tmp_path, PERSONAL))  # not personal: as the shipped file is read
    assert info.value.message == "my_sheet.yaml, entry 'my_model', field 'source': missing"


@pytest.mark.parametrize(
    ("replace", "by", "field", "closest"),
    [
        ("provider: Me", "provder: Me", "provder", "provider"),
        ('  output: "15', '  ouput: "15', "prices.ouput", "output"),
        ('  threshold:', '  treshold:', "long_context.treshold", "threshold"),
        ('  source: "my notes"', '  sorce: "my notes"', "long_context.sorce", "source"),
        # names other price lists use, too far in spelling for a close match (issue 25)
        ('  cache_read: "0.3', '  cached_input: "0.3', "prices.cached_input", "cache_read"),
        ('  output: "15', '  completion: "15', "prices.completion", "output"),
    ],
)
def test_unknown_keys_name_the_closest_known_one(tmp_path, replace, by, field, closest):
    path = _write(tmp_path, PERSONAL.replace(replace, by))
    with pytest.raises(DataError) as info:
        price_sheet(str(path))
    assert info.value.field == field
    assert info.value.reason == f"unknown key; did you mean {closest!r}?"


@pytest.mark.parametrize(
    ("section", "field", "message"),
    [
        ('cache_writes:\n  - {hold_time: "5 min", prise: "1 USD/Mtoken"}\n',
         "cache_writes[0].prise", "unknown key; did you mean 'price'?"),
        ('fast_mode:\n  price_ratio: "6"\n  speed_up: "2.5"\n',
         "fast_mode.speed_up", "unknown key; did you mean 'speedup'?"),
        ('fast_mode:\n  price_ratio: {value: "6", sorce: "x"}\n',
         "fast_mode.price_ratio", "unknown key 'sorce'; did you mean 'source'?"),
    ],
)
def test_unknown_keys_in_cache_writes_and_fast_mode(tmp_path, section, field, message):
    with pytest.raises(DataError) as info:
        price_sheet(str(_write(tmp_path, PERSONAL + section)))
    assert (info.value.field, info.value.reason) == (field, message)


def test_imply_header_says_a_personal_sheet_is_unsourced(run_cli, tmp_path):
    status, out, err = run_cli("imply", str(_write(tmp_path, PERSONAL)))
    assert status == 0, err
    assert out.splitlines()[:2] == ["Me My Model (my_model), prices of an unstated date",
                                    "source: unsourced (personal sheet)"]


DOC = Path(__file__).resolve().parents[2] / "docs" / "PRICE_SHEETS.md"


def _doc_blocks():
    return re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_the_documented_sheets_load(tmp_path):
    sheets = [b for b in _doc_blocks() if b.startswith("id:")]
    assert len(sheets) == 2
    minimal = price_sheet(str(_write(tmp_path, sheets[0], "minimal.yaml")))
    assert not minimal.sourced
    full = price_sheet(str(_write(tmp_path, sheets[1], "full.yaml")))
    assert full.sourced and full.prices["cache_storage"].date == "2026-04-15"
    assert full.long_context["input"].source == "https://acme.example/pricing"  # inherited
    # the doc's worked cache write: (2.5 - 2) USD/Mtoken over 5/60 h = 6 USD/Mtoken/hour
    write = full.cache_writes[0]
    premium = _base(write.price) - _base(full.prices["input"])
    hours = _base(write.hold_time) / 3600
    assert premium / hours == pytest.approx(6e-6, rel=1e-12)


def test_the_documented_fact_mapping_loads(tmp_path):
    fragment = next(b for b in _doc_blocks() if b.startswith("prices:"))
    sheet = price_sheet(str(_write(tmp_path, "id: x\nprovider: P\nmodel: M\n" + fragment)))
    assert sheet.prices["cache_storage"].source.startswith("https://ai.google.dev")


# The doc's table of accepted spellings, each with its value in base units by hand.
@pytest.mark.parametrize(
    ("text", "base", "unit"),
    [("3 USD/Mtoken", 3e-6, "USD/token"), ("3 USD/Mtok", 3e-6, "USD/token"),
     ("3 USD/1M tokens", 3e-6, "USD/token"), ("3 USD/M tokens", 3e-6, "USD/token"),
     ("0.003 USD/ktoken", 0.003 / 1e3, "USD/token"),
     ("300 cent/Mtoken", 3 / 1e6, "USD/token"),                   # 300 cent = 3 USD
     ("4.5 USD/Mtoken/hour", 4.5 / 1e6 / 3600, "USD/token/s"),
     ("4.5 USD/(Mtoken·hour)", 4.5 / 1e6 / 3600, "USD/token/s"),
     ("4.5 USD/Mtok/h", 4.5 / 1e6 / 3600, "USD/token/s"),
     ("200k token", 2e5, "token"), ("200000 tokens", 2e5, "token"), ("0.2M token", 2e5, "token"),
     ("5 min", 300, "s"), ("300 s", 300, "s"), ("1 hour", 3600, "s"), ("1 h", 3600, "s")],
)
def test_the_documented_spellings(text, base, unit):
    assert f"`{text}`" in DOC.read_text(encoding="utf-8")
    parsed = parse_value(text)
    quantity = Q_(parsed.magnitude, parsed.unit).to_base_units()
    assert quantity.units == parse_unit(unit)
    assert quantity.magnitude == pytest.approx(base, rel=1e-12)


def test_prices_pasted_with_a_dollar_sign_read_as_written(tmp_path):
    # $15 / 1M tokens = 15e-6 USD/token, as "15 USD/1M tokens" is
    pasted = PERSONAL.replace('output: "15 USD/1M tokens"', 'output: "$15 / 1M tokens"')
    sheet = price_sheet(str(_write(tmp_path, pasted)))
    assert _base(sheet.prices["output"]) == pytest.approx(15e-6, rel=1e-12)
