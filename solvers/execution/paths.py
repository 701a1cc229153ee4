"""Paths through a plan whose steps may have several solutions.

A step with several discrete solutions (two roots, a block's two solutions) raises
:class:`~chalk.symbolic.errors.AmbiguousSolution` with its index and their count. Each
solution is a fork: the plan is run again once per solution, naming it in ``choices``
(step index to solution index), and so on for forks further down. :func:`explore` walks
these paths breadth first and reports each one's outcome; what to make of them (set a
path aside, call the targets ambiguous) is the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from chalk.solvers.tolerances import STEPS
from chalk.symbolic.errors import AmbiguousSolution, ChalkError

T = TypeVar("T")


@dataclass(frozen=True)
class Path(Generic[T]):
    """One path's outcome: its ``result``, or the ``error`` it ended in; ``forked`` when
    the error is a step with several solutions whose paths are followed in turn."""

    choices: dict[int, int]
    result: T | None = None
    error: ChalkError | None = None
    forked: bool = False


def explore(attempt: Callable[[dict[int, int]], T],
            limit: int = STEPS.max_branches) -> Iterator[Path[T]]:
    """Run ``attempt(choices)`` along every path, breadth first, up to ``limit`` paths.

    A step with several solutions forks into one path per solution when it is not yet
    chosen on this path and the paths would stay within ``limit``; otherwise its
    ambiguity is the path's error, like any other :class:`ChalkError`.
    """
    pending: list[dict[int, int]] = [{}]
    tried = 0
    while pending and tried < limit:
        choices = pending.pop(0)
        tried += 1
        try:
            yield Path(choices, result=attempt(choices))
        except AmbiguousSolution as exc:
            forks = (exc.step is not None and exc.count and exc.step not in choices
                     and tried + len(pending) + exc.count <= limit)
            if forks:
                pending.extend({**choices, exc.step: k} for k in range(exc.count))
            yield Path(choices, error=exc, forked=bool(forks))
        except ChalkError as exc:
            yield Path(choices, error=exc)
