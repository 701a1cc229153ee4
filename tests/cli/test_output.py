"""Where commands write (issue 26): never onto an input, a link, a device or a folder, every
output or none, and every refusal one line with status 2."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from chalk.symbolic.errors import OutputError
from conftest import snapshot_tree

from chalk.cli.output import HTML_FORMATS, PLOT_FORMATS, Outputs

REPO = Path(__file__).resolve().parents[2]
FIT_EXAMPLE = REPO / "docs" / "examples" / "fit_chips.toml"
SHEET = ("id: my_model\nprovider: Me\nmodel: M1\nsource: my notes\ndate: 2026-11-01\n"
         "prices: {input: 1 USD/Mtoken, output: 4 USD/Mtoken}\n")
QUESTION = ('title = "t"\n[[questions]]\ntitle = "Critical batch"\n'
            'targets = ["critical_batch_size"]\npresets = ["lecture"]\n'
            'pins = { sparsity_factor = "8" }\n')
SCHEDULE_PLOT = ('[[plots]]\ntitle = "Schedule"\nname = "pipeline_schedule"\n'
                 'presets = ["lecture"]\npins = { pipeline_stages = "4", n_micro_batches = "8" }\n')
SCHEDULE = ["plot", "pipeline_schedule", "--preset", "lecture", "--given", "pipeline_stages=4",
            "--given", "n_micro_batches=8"]


def _one_line_refusal(status, out, err, *parts):
    assert status == 2, err
    assert out == ""
    assert err.startswith("chalk: error: cannot write ") and err.count("\n") == 1, err
    for part in parts:
        assert part in err, err


# --- inputs are never outputs ---------------------------------------------------------------

def test_imply_refuses_to_plot_onto_its_sheet(run_cli, tmp_path):
    sheet = tmp_path / "mine.yaml"
    sheet.write_text(SHEET)
    (tmp_path / "sub").mkdir()
    for spelling in (sheet, tmp_path / "sub" / ".." / "mine.yaml"):
        status, out, err = run_cli("imply", str(sheet), "--plot", str(spelling))
        _one_line_refusal(status, out, err, "it is an input of this command")
    assert sheet.read_text() == SHEET


def test_fit_refuses_to_plot_onto_its_file_or_a_hard_link_to_it(run_cli, tmp_path):
    fit = tmp_path / "fit.toml"
    shutil.copy(FIT_EXAMPLE, fit)
    os.link(fit, tmp_path / "other_name.png")
    before = fit.read_bytes()
    for target in (fit, tmp_path / "other_name.png"):
        status, out, err = run_cli("fit", str(fit), "--plot", str(target))
        _one_line_refusal(status, out, err, "it is an input of this command")
    assert fit.read_bytes() == before


def test_report_refuses_markdown_onto_its_deduction_file(run_cli, tmp_path):
    deduction = tmp_path / "r.toml"
    deduction.write_text(QUESTION)
    status, out, err = run_cli("report", str(deduction), "--md", str(deduction))
    _one_line_refusal(status, out, err, "it is an input of this command")
    assert deduction.read_text() == QUESTION


def test_report_refuses_one_file_for_html_and_markdown(run_cli, tmp_path):
    deduction = tmp_path / "r.toml"
    deduction.write_text(QUESTION)
    same = tmp_path / "out.html"
    status, out, err = run_cli("report", str(deduction), "--html", str(same), "--md", str(same))
    _one_line_refusal(status, out, err, "--html already writes it")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.toml"]


# --- only regular files are written ---------------------------------------------------------

def test_a_symlink_at_the_destination_is_refused_and_its_target_kept(run_cli, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "out.png"
    link.symlink_to(victim)
    status, out, err = run_cli(*SCHEDULE, "--out", str(link))
    _one_line_refusal(status, out, err, "symbolic link")
    assert link.is_symlink() and victim.read_text() == "keep me"


def test_a_fifo_at_the_destination_is_refused(run_cli, tmp_path):
    fifo = tmp_path / "out.png"
    os.mkfifo(fifo)
    status, out, err = run_cli(*SCHEDULE, "--out", str(fifo))
    _one_line_refusal(status, out, err, "FIFO")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_an_existing_regular_file_is_replaced(run_cli, tmp_path):
    deduction = tmp_path / "r.toml"
    deduction.write_text(QUESTION)
    old = tmp_path / "out.md"
    old.write_text("old")
    status, out, err = run_cli("report", str(deduction), "--md", str(old))
    assert status == 0, err
    assert "critical_batch_size" in old.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.md", "r.toml"]


# --- all or none ----------------------------------------------------------------------------

def test_report_writes_no_html_when_the_markdown_cannot_be_written(run_cli, tmp_path):
    deduction = tmp_path / "r.toml"
    deduction.write_text(QUESTION)
    status, out, err = run_cli("report", str(deduction), "--html", str(tmp_path / "ok.html"),
                               "--md", "/sys/x.md")
    _one_line_refusal(status, out, err, "/sys/x.md")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.toml"]


def test_a_failure_while_staging_writes_none_of_the_outputs(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    outputs = Outputs()
    outputs.declare("--html", str(first / "x.html"), HTML_FORMATS)
    outputs.declare("--plot", str(second / "y.png"), PLOT_FORMATS)
    second.rmdir()  # the folder goes away between the checks and the writing
    with pytest.raises(OutputError) as caught:
        outputs.write({str(first / "x.html"): b"html", str(second / "y.png"): b"png"})
    assert caught.value.path == str(second / "y.png")
    assert list(first.iterdir()) == []  # no x.html, no temporary file left behind


@pytest.mark.slow  # renders the plots twice (about a second of CPU): the slow tier
def test_markdown_plots_beside_the_report_get_the_same_checks(run_cli, tmp_path):
    """The PNGs written next to the Markdown are outputs too: a symlink where one would go
    stops the whole report, HTML included."""
    deduction = tmp_path / "r.toml"
    deduction.write_text(QUESTION + SCHEDULE_PLOT)
    status, _, err = run_cli("report", str(deduction), "--md", str(tmp_path / "first.md"))
    assert status == 0, err
    (asset,) = [p.name.removeprefix("first-") for p in tmp_path.glob("first-*.png")]
    victim = tmp_path / "victim.png"
    victim.write_bytes(b"keep")
    (tmp_path / f"out-{asset}").symlink_to(victim)
    before = snapshot_tree(tmp_path)
    status, out, err = run_cli("report", str(deduction), "--html", str(tmp_path / "out.html"),
                               "--md", str(tmp_path / "out.md"))
    _one_line_refusal(status, out, err, f"out-{asset}", "symbolic link")
    assert snapshot_tree(tmp_path) == before


# --- one line for every OS error ------------------------------------------------------------

@pytest.mark.parametrize(("destination", "reason"), [
    ("", "needs a file name"),
    (".", "not a folder"),
    ("/dev/null", "device"),
    ("a" * 300 + ".png", "too long"),
    ("no/such/folder.png", "does not exist"),
    ("x.pdf", "end the name in .png or .svg"),
])
def test_refusals_come_before_the_work(run_cli, tmp_path, monkeypatch, destination, reason):
    """Checked before drawing: the plot function is never called."""
    import chalk.applications.plots as plots

    def never(*args, **kwargs):
        raise AssertionError("drew a figure for a destination that cannot be written")

    monkeypatch.setattr(plots, "plot", never)
    monkeypatch.chdir(tmp_path)
    status, out, err = run_cli(*SCHEDULE, "--out", destination)
    _one_line_refusal(status, out, err, reason)
    assert list(tmp_path.iterdir()) == []


def test_outputs_error_is_picklable_and_names_the_path():
    import pickle

    error = pickle.loads(pickle.dumps(OutputError("x.png", "it is a folder")))
    assert error.message == "cannot write x.png: it is a folder"
