"""The ``chalk`` command line: the console script's entry point.

The commands themselves are in :mod:`chalk.cli.main`; this module stays light.

A one-shot process spends a large share of its start-up in cyclic garbage
collection passes over the hundreds of thousands of objects sympy, pint and
networkx create on import. Collection is paused while the modules load and the
knowledge base is built, and everything created by then is frozen out of later
passes (``gc.freeze``); the collector then runs normally for the question.
"""

from __future__ import annotations

import gc


def main() -> int:
    gc.disable()
    try:
        from chalk.cli.main import main as run
        from chalk.knowledge import load_model

        load_model()
        gc.freeze()
    finally:
        gc.enable()
    return run()

