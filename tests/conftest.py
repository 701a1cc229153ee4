"""Shared helpers for the test suite."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

from chalk.cli.main import main


@pytest.fixture
def run_cli():
    """Run the CLI in-process; return (status, stdout, stderr)."""

    def runner(*argv: str):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            status = main(list(argv))
        return status, out.getvalue(), err.getvalue()

    return runner
