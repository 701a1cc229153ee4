"""The last lines of defence of the ``chalk`` process: what it prints and returns when
interrupted, when its reader has gone, or when chalk itself fails.

Light on purpose (nothing beyond the standard library): :mod:`chalk.cli` reaches for it
before anything else is imported.
"""

from __future__ import annotations

import os
import sys


def interrupted() -> int:
    """Say the command was interrupted; the status of a Ctrl-C."""
    print("chalk: interrupted", file=sys.stderr)
    return 130


def closed_pipe() -> int:
    """End quietly when whatever read stdout has gone (``chalk list | head -1``)."""
    # Python would flush stdout again at exit and fail on the closed pipe: point it at
    # /dev/null first.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141  # 128 + SIGPIPE, as a process killed by the signal would report


def internal_error(exc: Exception) -> int:
    """One line for an error chalk did not foresee (a bug), status 1; with
    ``CHALK_TRACEBACK=1`` in the environment, re-raise it for its traceback."""
    if os.environ.get("CHALK_TRACEBACK") == "1":
        raise exc
    detail = (str(exc).splitlines() or [""])[0][:200]
    print(f"chalk: internal error: {type(exc).__name__}" + (f": {detail}" if detail else "")
          + "; this is a bug in chalk, please report it (CHALK_TRACEBACK=1 shows where)",
          file=sys.stderr)
    return 1
