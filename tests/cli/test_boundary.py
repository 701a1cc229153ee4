"""No traceback anywhere (issue 26): Ctrl-C from the first line, a closed pipe, an error chalk
did not foresee, and a cache that cannot be written after the answer is computed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _chalk(*argv, **kwargs):
    """A fresh ``python -m chalk`` process (the console script's path through chalk.cli)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), **kwargs.pop("env", {})}
    return subprocess.Popen([sys.executable, "-m", "chalk", *argv], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def test_ctrl_c_while_loading_is_one_line_and_status_130():
    """Signalled while it still imports sympy, pint and builds the model (over 0.4 s even on
    a quiet machine), which used to print a traceback."""
    process = _chalk("solve", "critical_batch_size", "--preset", "lecture", "--given",
                     "sparsity_factor=8", env={"CHALK_NO_CACHE": "1"})
    time.sleep(0.3)  # past Python's own start-up, well inside chalk's
    if process.poll() is not None:
        pytest.skip("chalk finished loading before the signal could be sent")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert out == ""
    assert err == "chalk: interrupted\n"


def test_ctrl_c_in_the_cache_lookup_is_caught():
    """The first thing chalk does, before any other import, is inside the handler. (In a
    process of its own: once chalk.cli.main is imported, its module hides the function.)"""
    code = ("import sys\nimport chalk.cli, chalk.cli.fast\n"
            "def interrupt(argv):\n    raise KeyboardInterrupt\n"
            "chalk.cli.fast.answer = interrupt\nsys.exit(chalk.cli.main())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "chalk: interrupted\n")


def test_ctrl_c_while_building_the_parser_is_caught(monkeypatch, run_cli):
    import chalk.cli.main

    def interrupt():
        raise KeyboardInterrupt

    monkeypatch.setattr(chalk.cli.main, "build_parser", interrupt)
    assert run_cli("list") == (130, "", "chalk: interrupted\n")


def test_an_unforeseen_error_is_one_line_with_status_1(monkeypatch, run_cli):
    import chalk.cli.main

    def broken(args):
        raise RuntimeError("something chalk did not expect\nsecond line")

    monkeypatch.setattr(chalk.cli.main, "_run", broken)
    monkeypatch.delenv("CHALK_TRACEBACK", raising=False)
    status, out, err = run_cli("list")
    assert (status, out) == (1, "")
    assert err == ("chalk: internal error: RuntimeError: something chalk did not expect; this "
                   "is a bug in chalk, please report it (CHALK_TRACEBACK=1 shows where)\n")
    monkeypatch.setenv("CHALK_TRACEBACK", "1")
    with pytest.raises(RuntimeError):
        run_cli("list")


def test_a_closed_pipe_on_stdout_ends_quietly():
    process = _chalk("list", "variables")
    process.stdout.close()  # the reader has gone before chalk writes a byte
    err = process.stderr.read()
    process.wait(timeout=120)
    assert "Traceback" not in err
    assert err == ""
    assert process.returncode == 141


def test_a_cache_folder_too_deep_to_create_costs_only_the_entry(run_cli, monkeypatch, tmp_path):
    """2,000 nested folders: pathlib's mkdir recurses past Python's limit after the answer is
    computed; the answer must still be printed."""
    deep = tmp_path.joinpath(*["a"] * 2000)
    monkeypatch.setenv("CHALK_CACHE_DIR", str(deep))
    status, out, err = run_cli("solve", "critical_batch_size", "--preset", "lecture",
                               "--given", "sparsity_factor=8")
    assert (status, err) == (0, "")
    assert "2,400 sequence" in out  # 300 x sparsity 8 (the lecture's convention)


def test_store_reports_a_cache_it_cannot_write(monkeypatch, tmp_path):
    from chalk.cli import cache

    monkeypatch.setenv("CHALK_CACHE_DIR", str(tmp_path.joinpath(*["a"] * 2000)))
    assert cache.store("entry", {"x": 1}) is False
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("CHALK_CACHE_DIR", str(blocker / "under_a_file"))
    assert cache.store("entry", {"x": 1}) is False


def test_negative_seed_is_refused(run_cli):
    status, out, err = run_cli("solve", "critical_batch_size", "--preset", "lecture", "--given",
                               "sparsity_factor=4..8", "--seed", "-1")
    assert (status, out) == (2, "")
    assert err == "chalk: error: --seed must be a whole number, 0 or more, not -1\n"
