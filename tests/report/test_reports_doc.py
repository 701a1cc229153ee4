"""docs/REPORTS.md documents the report file as chalk reads it: every key the reader
accepts is in its tables, its examples load, and the minimal one runs (issue 25: "the
report file format is documented only in a Python docstring")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chalk.report import build, markdown
from chalk.report.deduction import _ENTRY, _TOP, load

DOC = Path(__file__).resolve().parents[2] / "docs" / "REPORTS.md"


def _examples() -> list[str]:
    return re.findall(r"```toml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def _section(heading: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    return text.split(heading, 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]


def test_every_key_is_in_the_tables():
    top = _section("### The top level")
    for key in _TOP:
        assert f"`{key}`" in top, key
    for kind, keys in _ENTRY.items():
        table = _section(f"### `[[{kind}]]`")
        for key in keys:
            assert f"`{key}`" in table, (kind, key)


@pytest.mark.parametrize("which", [0, 1])
def test_the_minimal_and_full_examples_load(tmp_path, which):
    path = tmp_path / "example.toml"
    path.write_text(_examples()[which], encoding="utf-8")
    spec = load(str(path))
    assert spec.title


def test_the_full_example_names_its_comparison_source(tmp_path):
    path = tmp_path / "full.toml"
    path.write_text(_examples()[1], encoding="utf-8")
    spec = load(str(path))
    assert spec.compared_with == "the lecture"
    kinds = {entry.kind for entry in spec.entries}
    assert kinds == {"questions", "sweeps", "plots", "fits"}


def test_the_minimal_example_runs(tmp_path):
    path = tmp_path / "minimal.toml"
    path.write_text(_examples()[0], encoding="utf-8")
    text, _ = markdown(build(str(path)))
    # H200: 141 GB of HBM3e read at 4.8 TB/s (NVIDIA datasheet): 141e9 / 4.8e12 = 29.375
    # ms, printed to four digits (the float quotient falls just below ...375)
    assert "hbm_drain_time = 29.37 ms" in text
    # nothing stated, so no comparison columns
    assert "| § | question | answer |\n" in text
