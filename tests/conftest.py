"""Shared helpers for the test suite."""

from __future__ import annotations

import gc
import io
import os
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest

# As the chalk command does (chalk.cli): a single-threaded BLAS, set before numpy loads
# (nothing above imports it; chalk is imported inside the fixtures).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")


# The self-check harness (round trips, probes) lives beside the benchmarks, outside the
# installed package: both the tests and the benchmarks import it from there.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "benchmarks"))


def pytest_collection_finish(session):
    """Tune the cyclic garbage collector for a run of thousands of questions.

    What collection loaded (the libraries, chalk, its knowledge base: about 130,000
    objects that live as long as the process) is frozen out of the collector, so the five
    full collections pytest runs as a worker ends (to surface unraisable exceptions) no
    longer walk it. The tests themselves keep filling and evicting chalk's bounded memo
    caches (plans, analyses, compiled steps), so with the default thresholds a full
    collection ran every few dozen tests: measured over the fast loop, 4.7 and 6.9 s of the
    two workers' time in the collector, 2.8 and 3.7 s with the youngest generation
    collected every 10,000 allocations instead of 700. Every object the tests make is still
    collected (the largest worker's peak memory measured the same, 440-490 MB).
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


def pytest_unconfigure(config):
    """Collect once, then freeze what the run built, before pytest's own end-of-run
    collections: those walk every object still alive (the caches the tests filled), five
    times over, only to surface unraisable exceptions, which this one collection already
    brings out (a finaliser of cyclic garbage runs in it and is reported)."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Every test, and every process a test starts, uses a cache of compiled questions of
    its own: nothing is read from or written to the user's."""
    folder = tmp_path_factory.mktemp("chalk-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CHALK_CACHE_DIR", str(folder))
        yield folder


@pytest.fixture
def run_cli():
    """Run the CLI in-process; return (status, stdout, stderr)."""

    def runner(*argv: str):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            from chalk.cli.main import main

            status = main(list(argv))
        return status, out.getvalue(), err.getvalue()

    return runner


def snapshot_tree(folder) -> dict[str, object]:
    """Every entry under ``folder`` (links not followed): its kind and bytes or target."""
    import stat
    from pathlib import Path

    seen = {}
    for path in sorted(Path(folder).rglob("*")):
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            seen[str(path)] = ("link", os.readlink(path))
        elif stat.S_ISREG(mode):
            seen[str(path)] = ("file", path.read_bytes())
        else:
            seen[str(path)] = ("other", stat.S_IFMT(mode))
    return seen

