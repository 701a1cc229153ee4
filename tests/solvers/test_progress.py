"""The progress line: drawn on a terminal only, never when piped or with --quiet."""

import contextlib
import io
import os
import pty
import re
import time

import pytest
from chalk.solvers.bulk import progress

from chalk.cli.main import main


@pytest.fixture
def immediate(monkeypatch):
    """Draw at once and often, so a short task shows (and progress starts switched on)."""
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "REDRAW", 0.01)
    progress.set_quiet(False)
    yield
    progress.set_quiet(False)


def _run_on(stream, monkeypatch):
    monkeypatch.setattr("sys.stderr", stream)
    with progress.task("Monte Carlo", total=10) as current:
        for _ in range(10):
            current.advance()
            time.sleep(0.01)


def test_nothing_is_drawn_when_stderr_is_not_a_terminal(immediate, monkeypatch):
    piped = io.StringIO()
    _run_on(piped, monkeypatch)
    assert piped.getvalue() == ""


def _terminal_output(monkeypatch, work=_run_on) -> str:
    leader, follower = pty.openpty()
    with os.fdopen(follower, "w") as terminal:
        work(terminal, monkeypatch)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # the follower is closed and everything has been read
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return b"".join(chunks).decode()


def test_a_terminal_sees_the_line_and_then_a_clean_line(immediate, monkeypatch):
    drawn = _terminal_output(monkeypatch)
    assert "Monte Carlo [" in drawn
    assert drawn.endswith("\r\x1b[K")  # erased, so the answer starts on a clean line


def test_quiet_draws_nothing_even_on_a_terminal(immediate, monkeypatch):
    progress.set_quiet(True)
    assert _terminal_output(monkeypatch) == ""


def test_a_command_piped_writes_no_progress(immediate, capsys):
    status = main(["solve", "kv_bytes_per_token", "--preset", "lecture",
                   "--given", "context_crossover=200k token",
                   "--given", "active_params=100e9..300e9 param", "--samples", "2000"])
    assert status == 0
    assert capsys.readouterr().err == ""


def _commands(parser, prefix=""):
    """Every command's parser (each kind of optimize alone), by name."""
    import argparse

    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield prefix.strip(), parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from _commands(sub, f"{prefix} {name}")


def test_quiet_is_accepted_by_every_command():
    # found from the parser itself, so a new command without --quiet fails here
    from chalk.cli.main import build_parser

    found = dict(_commands(build_parser()))
    assert "optimize chinchilla" in found and "list" in found and "explain" in found
    for name, parser in found.items():
        options = {o for a in parser._actions for o in a.option_strings}
        assert {"-q", "--quiet"} <= options, name


def _counted_on(stream, monkeypatch):
    monkeypatch.setattr("sys.stderr", stream)
    for _ in progress.counted("price sheets", range(10)):
        time.sleep(0.01)


def test_a_counted_loop_draws_its_count_on_a_terminal(immediate, monkeypatch):
    drawn = _terminal_output(monkeypatch, _counted_on)
    assert re.search(r"price sheets \[[#.]{20}\] \d+/10 ", drawn)
    assert drawn.endswith("\r\x1b[K")


def test_a_counted_loop_piped_or_quiet_draws_nothing(immediate, monkeypatch):
    piped = io.StringIO()
    _counted_on(piped, monkeypatch)
    assert piped.getvalue() == ""
    progress.set_quiet(True)
    assert _terminal_output(monkeypatch, _counted_on) == ""


@pytest.fixture
def counts(monkeypatch):
    """Every task's label, how much of it was done and its total, when it ends."""
    seen = []
    real = progress.task

    @contextlib.contextmanager
    def recording(label, total=None):
        with real(label, total) as current:
            yield current
        seen.append((label, current.done, total))

    monkeypatch.setattr(progress, "task", recording)
    return seen


def test_a_sweep_counts_every_point_also_those_solved_in_full(counts):
    from chalk import sweep

    # the sweep of tests/applications/test_sweep.py: 6 points, the first (1 ms) with no
    # solution, which the vectorised run cannot vouch for and solve refuses in full
    pins = {"active_params": "100e9 param", "total_params": "100e9 param",
            "context_length": "8k token", "kv_bytes_per_token": "100000 byte/token",
            "n_chips": "8 chip"}
    table = sweep("batch_size", "step_time", "1 ms", "50 ms", 6, given=pins,
                  presets=["lecture", "h100"])
    assert len(table.gaps) == 1
    assert ("sweep of step_time", 6, 6) in counts


def test_imply_of_several_sheets_counts_the_sheets(counts, capsys):
    status = main(["imply", "gemini_2_5_pro", "gemini_2_5_flash", "--quiet"])
    assert status == 0
    assert ("price sheets", 2, 2) in counts


def test_a_report_counts_its_sections(counts, tmp_path):
    from chalk.report import build

    path = tmp_path / "two.toml"
    path.write_text('title = "two"\n'
                    '[[questions]]\ntitle = "a"\ntargets = ["hbm_drain_time"]\n'
                    'pins = { hbm_capacity = "288 GB", hbm_bandwidth = "20 TB/s" }\n'
                    '[[questions]]\ntitle = "b"\ntargets = ["hbm_drain_time"]\n'
                    'pins = { hbm_capacity = "96 GB", hbm_bandwidth = "4 TB/s" }\n')
    build(str(path))
    assert ("report sections", 2, 2) in counts


@pytest.mark.slow  # two fits over every shipped sheet
def test_the_atlas_counts_its_fits_and_sheets(counts):
    from chalk.knowledge.price_sheets import shipped_sheets

    from chalk.applications.atlas import atlas

    atlas()
    sheets = len(shipped_sheets())
    assert (f"atlas: 2 fits, {sheets} sheets", sheets + 2, sheets + 2) in counts


def _drain_fit(subjects: int) -> dict:
    """A fit of one shared HBM bandwidth to ``subjects`` chips' drain times: capacities
    40 to 89 GB, each drained in capacity / (2 TB/s), 20 to 44.5 ms."""
    capacity = [40 + i % 50 for i in range(subjects)]
    return {"unknowns": {"hbm_bandwidth": "1e12..1e14 byte/s"},
            "subjects": {f"s{i}": {"pins": {"hbm_capacity": f"{c} GB"}}
                         for i, c in enumerate(capacity)},
            "observations": [{"quantity": "hbm_drain_time", "value": f"lognormal({c / 2} ms, 0.1)",
                              "subject": f"s{i}"} for i, c in enumerate(capacity)]}


def _fit_counted(counts, subjects: int) -> None:
    from chalk import fit

    result = fit(_drain_fit(subjects))
    # every drain time is capacity / 2 TB/s exactly: the estimate is 2 TB/s
    assert result["hbm_bandwidth"].value == pytest.approx(2e12, rel=1e-9)
    assert (f"fit of {subjects:,} observations", 3, 3) in counts
    assert ("fit: setting up subjects", subjects, subjects) in counts
    assert ("fit: checking subjects at the estimate", subjects, subjects) in counts
    assert ("fit: intervals", 1, 1) in counts  # one parameter, shared by all
    searched = [done for label, done, total in counts
                if label == "fit: least-squares evaluations" and total is None]
    assert searched and searched[0] >= 2  # the start and at least one Jacobian


# Issue 26 item 3: a fit of 1,000 subjects took 42 s with nothing on screen
def test_a_fit_counts_its_stages_subjects_evaluations_and_intervals(counts):
    _fit_counted(counts, 5)


@pytest.mark.slow  # a thousand subjects solved in full at the estimate
def test_a_fit_of_a_thousand_subjects_counts_every_subject(counts):
    _fit_counted(counts, 1000)


def _fit_on(stream, monkeypatch):
    from chalk import fit

    monkeypatch.setattr("sys.stderr", stream)
    fit(_drain_fit(5))


def test_a_fit_draws_its_counts_on_a_terminal_only(immediate, monkeypatch):
    drawn = _terminal_output(monkeypatch, _fit_on)
    # the stages at least (a stage of a small fit may end between two redraws)
    assert re.search(r"fit( of 5 observations|: [a-z -]+) \[[#.]{20}\] \d+/\d+ ", drawn)
    assert drawn.endswith("\r\x1b[K")
    piped = io.StringIO()
    _fit_on(piped, monkeypatch)
    assert piped.getvalue() == ""
    progress.set_quiet(True)
    assert _terminal_output(monkeypatch, _fit_on) == ""


def test_an_uncounted_task_shows_how_many_so_far():
    # a search counts its evaluations without knowing how many it will need
    current = progress.Task("fit: least-squares evaluations")
    assert current.text().startswith("fit: least-squares evaluations... 0 s")
    current.advance(12)
    assert current.text().startswith("fit: least-squares evaluations... 12 so far (")
