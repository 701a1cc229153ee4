"""The ``chalk`` console script's entry point.

A one-shot process spends a large share of its start-up in cyclic garbage
collection passes over the hundreds of thousands of objects sympy, pint and
networkx create on import. Collection is paused while the modules load and the
knowledge base is built, and everything created by then is frozen out of later
passes (``gc.freeze``); the collector then runs normally for the question.
"""

from __future__ import annotations

import gc
import sys


def main() -> int:
    gc.disable()
    try:
        from knowledge import load_model
        from solvers.cli import main as run

        load_model()
        gc.freeze()
    finally:
        gc.enable()
    return run()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
