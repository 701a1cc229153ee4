"""The strict file reader: YAML as plain data, TOML within bounds, only regular UTF-8 files.

Each test pins down one thing issue 26 found (or one thing the fix must keep working), with
the value worked out by hand from what the file says.
"""

from __future__ import annotations

import os
import threading
import time

import pytest
import yaml
from chalk.knowledge import fields, files
from chalk.knowledge.data import DATA_DIR
from chalk.knowledge.price_sheets import price_sheet
from chalk.symbolic.errors import DataError

SHEET = """\
id: example_sheet
provider: Example
model: Example Model
prices:
  input: "1.25 USD/Mtoken"
  output: "10 USD/Mtoken"
"""


def yaml_data(text: str):
    return files.parse_yaml(text, "t.yaml")


def bomb_levels() -> list[str]:
    """The nine flow lists of an alias bomb: nine strings, then nine aliases of the list
    above, so that level k (from 1) holds 9^k strings once expanded."""
    levels = ['&a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    return levels + [f"&{c} [{', '.join([f'*{p}'] * 9)}]"
                     for p, c in zip("abcdefgh", "bcdefghi", strict=True)]


def refusal(call, *args) -> str:
    with pytest.raises(DataError) as caught:
        call(*args)
    return caught.value.message


# YAML scalars: decimal numbers as written, everything else YAML 1.1 would convert stays text


@pytest.mark.parametrize(("written", "read"), [
    ("010", 10),  # YAML 1.1: octal 8
    ("0x10", "0x10"),  # YAML 1.1: 16
    ("0b11", "0b11"),  # YAML 1.1: 3
    ("1:30", "1:30"),  # YAML 1.1: sexagesimal 90
    ("2026-13-45", "2026-13-45"),  # YAML 1.1: a timestamp (and a ValueError for this one)
    ("2026-01-01", "2026-01-01"),  # YAML 1.1: datetime.date
    ("yes", "yes"), ("on", "on"), ("no", "no"),  # YAML 1.1: booleans
    ("1_000", "1_000"),  # YAML 1.1: 1000
    (".nan", ".nan"), (".inf", ".inf"),  # YAML 1.1: floats
    ("1e3", 1000.0), ("2.5", 2.5), ("-7", -7), ("+3", 3),
    ("1e400", "1e400"),  # past a float: left for the value parser to name the exponent
    ("9" * 400, "9" * 400),  # past the digits an int may have: text (refused by length)
    ("true", True), ("false", False), ("~", None), ("null", None), ("", None),
    ("'010'", "010"), ('"1:30"', "1:30"),  # quoted: always the text
])
def test_plain_scalars_are_decimal_numbers_or_the_text_written(written, read):
    assert yaml_data(f"x: {written}\n") == {"x": read}


def test_keys_are_text_as_written():
    # YAML 1.1 would make these keys the int 1, True and None
    assert yaml_data("1: a\ntrue: b\nnull: c\n") == {"1": "a", "true": "b", "null": "c"}


def test_a_price_ratio_written_010_is_ten_not_octal_eight(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SHEET + "fast_mode:\n  price_ratio: 010\n", encoding="utf-8")
    assert price_sheet(str(path)).fast_mode["price_ratio"].value == 10


def test_the_shipped_data_files_read_as_pyyaml_reads_them():
    """The shipped files use no YAML 1.1 conversion: both readers give the same data."""
    for path in sorted(DATA_DIR.glob("*.yaml")):
        with open(path, encoding="utf-8") as handle:
            expected = yaml.load(handle, Loader=yaml.SafeLoader)
        assert files.load_yaml(path) == expected, path.name


# YAML structure: duplicate keys, anchors and aliases, tags, keys, documents, depth


def test_a_duplicate_key_is_refused_with_both_lines():
    message = refusal(yaml_data, "prices:\n  output: 15\n  output: 1500\n")
    assert message == ("t.yaml: line 3: key 'output' appears twice (first on line 2); "
                       "keep one")


def test_an_alias_is_the_anchored_object_itself():
    data = yaml_data("a: &s {value: 1}\nb: *s\nc: &t text\nd: *t\n")
    assert data["b"] is data["a"] and data["d"] == "text"


def test_an_alias_bomb_is_refused_at_once():
    # past 200,000 values at level 6 (9^6 = 531,441 strings), the sixth line
    lines = [f"k{n}: {level}" for n, level in enumerate(bomb_levels())]
    started = time.perf_counter()
    message = refusal(yaml_data, "\n".join(lines) + "\n")
    assert time.perf_counter() - started < 1
    assert message.startswith("t.yaml: line 6: more than 200000 values once aliases")


def test_an_alias_inside_its_own_anchor_is_refused():
    assert "names no finished anchor" in refusal(yaml_data, "a: &a [1, *a]\n")


def test_an_alias_or_a_list_as_a_key_is_refused():
    assert "a key must be plain text" in refusal(yaml_data, "a: &k x\n*k : 1\n")
    assert "a key must be plain text" in refusal(yaml_data, "? [a, b]\n: 1\n")


@pytest.mark.parametrize("text", ["x: !!python/object/apply:os.system ['true']\n",
                                  "x: !!str 1\n", "x: !custom {a: 1}\n"])
def test_tags_are_refused(text):
    assert "YAML tags" in refusal(yaml_data, text)


def test_a_second_document_is_refused():
    assert "a second YAML document" in refusal(yaml_data, "a: 1\n---\nb: 2\n")


def nested_yaml(levels: int) -> str:
    """``levels`` mappings, one inside the other, in block style."""
    return "".join(f"{'  ' * i}k{i}:\n" for i in range(levels - 1)) + \
        f"{'  ' * (levels - 1)}k: 1\n"


def test_nesting_is_bounded():
    assert yaml_data(nested_yaml(files.MAX_DEPTH))  # 24 mappings deep: read
    message = refusal(yaml_data, nested_yaml(files.MAX_DEPTH + 1))
    assert message == f"t.yaml: line {files.MAX_DEPTH + 1}: nested more than 24 levels deep"


def test_an_alias_cannot_nest_past_the_bound():
    # an anchored value 20 lists deep, aliased 10 lists down: 30 levels
    deep = "[" * 20 + "]" * 20
    assert "nested more than 24" in refusal(yaml_data, f"a: &d {deep}\nb: {'[' * 9}*d{']' * 9}\n")


# Which files are read: regular ones, of bounded size, in UTF-8


def test_a_folder_device_or_missing_file_is_refused(tmp_path):
    assert refusal(files.read_text, tmp_path) == f"{tmp_path.name}: is a folder; give a file"
    assert refusal(files.read_text, "/dev/null") == "null: is a device; give a file"
    assert refusal(files.read_text, tmp_path / "none.yaml", "no such sheet") == \
        "none.yaml: no such sheet"


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "sheet.yaml"
    os.mkfifo(fifo)
    outcome = []
    reader = threading.Thread(target=lambda: outcome.append(refusal(files.read_text, fifo)),
                              daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert outcome == ["sheet.yaml: is a FIFO (named pipe); give a file"]


def test_a_symlink_to_a_file_is_read(tmp_path):
    (tmp_path / "real.yaml").write_text("a: 1\n", encoding="utf-8")
    (tmp_path / "link.yaml").symlink_to(tmp_path / "real.yaml")
    assert files.load_yaml(tmp_path / "link.yaml") == {"a": 1}


def test_a_very_long_name_is_one_short_line():
    message = refusal(files.read_text, "a" * 5000 + ".yaml")
    assert message == "a" * 57 + "...: cannot be read (file name too long)"


def test_size_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "MAX_BYTES", 2_000_000)
    path = tmp_path / "big.yaml"
    path.write_text("a: " + "x" * 2_000_000 + "\n", encoding="utf-8")
    assert refusal(files.read_text, path) == "big.yaml: larger than 2 MB"


def test_encodings(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_bytes("\ufeffa: é\n".encode())  # UTF-8 with a byte-order mark
    assert files.load_yaml(path) == {"a": "é"}
    path.write_bytes("a: 1\nb: caf\xe9\n".encode("latin-1"))
    assert refusal(files.read_text, path) == ("s.yaml: is not UTF-8 text (byte 0xe9 on line "
                                              "2); save it as UTF-8")
    path.write_bytes("a: 1\n".encode("utf-16"))
    assert refusal(files.read_text, path) == "s.yaml: is UTF-16 text; save it as UTF-8"


# TOML


def toml_file(tmp_path, text: str):
    path = tmp_path / "f.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_deep_toml_arrays_are_refused_before_tomllib_recurses(tmp_path):
    path = toml_file(tmp_path, "a = 1\nx = " + "[" * 5000 + "]" * 5000 + "\n")
    assert refusal(files.load_toml, path) == "f.toml: line 2: nested more than 24 levels deep"


def test_brackets_in_toml_strings_and_comments_are_not_nesting(tmp_path):
    many = "[" * 100
    path = toml_file(tmp_path, f'a = "{many}"\nb = \'{many}\'\nc = """\n{many}"""\n# {many}\n'
                               f"d = [[1], {{e = [2]}}]\n")
    assert files.load_toml(path) == {"a": many, "b": many, "c": many, "d": [[1], {"e": [2]}]}


def test_deep_dotted_toml_keys_are_refused(tmp_path):
    path = toml_file(tmp_path, ".".join(["k"] * 100) + " = 1\n")
    assert refusal(files.load_toml, path) == "f.toml: nested more than 24 levels deep"


def test_a_toml_integer_past_pythons_digit_limit_is_refused(tmp_path):
    path = toml_file(tmp_path, "x = " + "9" * 5000 + "\n")
    assert refusal(files.load_toml, path) == "f.toml: not valid TOML (a number with too many " \
                                             "digits)"


# Field checks


@pytest.mark.parametrize(("text", "ok"), [
    ("2026-02-28", True), ("GA 2025-06-17; checked 2026-09-23", True), ("2025-06..2026-09", True),
    ("2024-02-29", True),  # a leap day
    ("2026-13-45", False), ("2025-02-29", False), ("checked 2026-04-31", False),
])
def test_every_iso_day_in_a_date_is_on_the_calendar(text, ok):
    if ok:
        assert fields.date(text, "f", "e", "date") == text
    else:
        assert "is not a date" in refusal(fields.date, text, "f", "e", "date")


def test_a_reports_plot_sheet_is_read_by_the_same_reader(tmp_path, run_cli, monkeypatch):
    """``[[plots]] sheet = ...`` names a sheet file: an alias bomb in it is refused at once."""
    (tmp_path / "bomb.yaml").write_text(SHEET + "source: [" + ", ".join(bomb_levels()) + "]\n",
                                        encoding="utf-8")
    (tmp_path / "r.toml").write_text(
        'title = "Costs"\n\n[[plots]]\ntitle = "Cost against context"\n'
        'name = "cost_vs_context"\nsheet = "bomb.yaml"\npresets = ["gb200_nvl72"]\n'
        # the lecture's plot of the same name (knowledge/deductions/lecture.toml)
        'pins = { n_chips = "72 chip", total_params = "1e12 param", active_params = '
        '"100e9 param", bytes_per_param = "1 byte/param", kv_bytes_per_token = '
        '"3333 byte/token", batch_size = "256 sequence" }\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    started = time.perf_counter()
    status, out, err = run_cli("report", "r.toml", "--md", str(tmp_path / "out.md"))
    assert time.perf_counter() - started < 30
    assert status == 2 and out == ""
    assert "bomb.yaml: line 7: more than 200000 values once aliases are expanded" in err
    assert err.count("\n") == 1 and not (tmp_path / "out.md").exists()
