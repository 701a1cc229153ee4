"""The progress line: drawn on a terminal only, never when piped or with --quiet."""

import io
import os
import pty
import time

import pytest
from chalk.solvers import progress

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


def _terminal_output(monkeypatch) -> str:
    leader, follower = pty.openpty()
    with os.fdopen(follower, "w") as terminal:
        _run_on(terminal, monkeypatch)
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


def test_quiet_is_accepted_by_every_long_command(capsys):
    from chalk.cli.main import build_parser

    parser = build_parser()
    for argv in (["solve", "x", "--quiet"], ["sweep", "x", "--over", "a=1..2", "-q"],
                 ["imply", "--all", "--quiet"], ["atlas", "--quiet"],
                 ["fit", "f.toml", "--quiet"], ["report", "lecture", "--quiet"]):
        assert parser.parse_args(argv).quiet
