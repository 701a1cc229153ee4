"""The ``chalk`` command line: the console script's entry point.

The commands themselves are in :mod:`chalk.cli.main`; this module stays light.

A one-shot process spends a large share of its start-up in cyclic garbage
collection passes over the hundreds of thousands of objects sympy and pint create
on import. Collection is paused while the modules load and the
knowledge base is built, and everything created by then is frozen out of later
passes (``gc.freeze``); the collector then runs normally for the question.

Before any of that, a question of a shape solved before is answered from the cache of
compiled questions (:mod:`chalk.cli.fast`), which needs none of those libraries.

The command also asks for a single-threaded BLAS unless the environment says otherwise:
chalk's matrices have hundreds of rows, too few for threads to pay for waking up, and on
a busy machine the threads fight for the cores (a 330 x 420 least-squares solve measured
0.6 s threaded and 0.06 s single-threaded with other work running on two cores).

Everything :func:`main` does, from its first line, is inside one boundary
(:mod:`chalk.cli.boundary`): Ctrl-C exits with status 130, a closed pipe on stdout ends
quietly, and an error chalk did not foresee is one line, never a traceback.
"""

from __future__ import annotations

import gc
import os
import sys

from chalk.cli.boundary import closed_pipe, internal_error, interrupted

SINGLE_THREADED = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def main() -> int:
    """Entry point of the ``chalk`` console script (it ends the process on Ctrl-C)."""
    try:
        status = _main()
    except KeyboardInterrupt:
        status = interrupted()
    except BrokenPipeError:
        return closed_pipe()
    except Exception as exc:  # the last boundary: one line, never a traceback
        return internal_error(exc)
    if status == 130:
        # CPython remembers a Ctrl-C that passed through exec() or eval() (dataclasses and
        # namedtuples use them while modules load) even after it was caught, and would end
        # the process by SIGINT instead of with this status: leave now.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    return status


def _main() -> int:
    from chalk.cli.fast import answer

    cached = answer(sys.argv[1:])  # a question solved before: no sympy, pint or numpy
    if cached is not None:
        sys.stdout.write(cached if cached.endswith("\n") else cached + "\n")
        return 0
    for variable in SINGLE_THREADED:  # before numpy loads its BLAS
        os.environ.setdefault(variable, "1")
    gc.disable()
    try:
        from chalk.cli.main import main as run
        from chalk.knowledge import load_model

        load_model()
        gc.freeze()
    finally:
        gc.enable()
    return run()

