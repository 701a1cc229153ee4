"""Fit sections in deduction files: a chalk fit file or the shipped atlas, in the report."""

import shutil
from pathlib import Path

import pytest

from chalk.report import build, markdown, render_html

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "fit_chips.toml"


def _files(tmp_path, section: str) -> Path:
    shutil.copy(EXAMPLE, tmp_path / "fit_chips.toml")
    path = tmp_path / "deduce.toml"
    path.write_text('title = "Fits"\n\n[[fits]]\ntitle = "Chip speeds"\n' + section)
    return path


def test_a_fit_file_becomes_a_section_with_its_estimates_and_residual_plot(tmp_path):
    report = build(str(_files(tmp_path, 'file = "fit_chips.toml"\n')))
    text, assets = markdown(report)
    section = report.sections[0]
    # the example's third deployment reports a 240 ms drain against ~24 ms for its chip:
    # it is the one outlier the fit flags
    assert [r.subject for r in section.fit.outliers] == ["gamma"]
    assert "hbm_drain_time@gamma" in text and "OUTLIER" in text
    assert "| [§1](#s1) | Chip speeds | fit |" in text
    (name,) = assets
    assert assets[name][:4] == b"\x89PNG"
    assert "<svg" in render_html(report)


@pytest.mark.parametrize("section, message", [
    ('file = "a.toml"\natlas = true\n', "give either"),
    ("", "give either"),
    ('file = "a.yaml"\n', "expected the path of a fit file"),
    ("atlas = 1\n", "expected true or false"),
])
def test_a_fit_section_names_one_source(run_cli, tmp_path, section, message):
    status, out, err = run_cli("report", str(_files(tmp_path, section)))
    assert status == 2 and out == "" and message in err
    assert len(err.strip().splitlines()) == 1
