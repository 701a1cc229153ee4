"""A fast tier's batch from its price premium and speed-up (``chalk optimize
fast-mode``; lecture 1:49-2:34)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from chalk.applications.optimize.curve import GRID, Curve
from chalk.solvers.pinning.pins import read_value
from chalk.symbolic.errors import BeyondSearch, NoSolution, UsageError
from chalk.symbolic.printing.readable import Readable


@dataclass(repr=False)
class FastMode(Readable):
    feasible: bool
    batch: float | None
    batch_fast: float | None
    lines: list[str]

    def text(self) -> str:
        return "\n".join(self.lines)


def fast_mode(price_ratio: float, speedup: float, given=(), presets=(),
              normal_step_limit="100 ms", max_batch: float = 1e6) -> FastMode:
    """Batches of a normal and a fast tier that give ``speedup`` for ``price_ratio``.

    Cost per token is step time over batch, so the fast batch is B / (k s); the
    normal batch B must then satisfy step(B) / step(B / (k s)) = s, with the
    normal tier's step no longer than ``normal_step_limit`` (an interactive
    service: 100 ms is 10 tokens/s per sequence). If no batch does, the latency
    floor is in the way, and the speed-up each remedy would need is reported.
    """
    from scipy.optimize import brentq

    if price_ratio < 1 or speedup <= 1:
        raise UsageError("fast mode needs a price ratio >= 1 and a speed-up > 1")
    curve = Curve(["step_time", "t_weight_fetch"], "batch_size", given, presets)
    limit, _ = read_value(curve.model.variable("step_time"), normal_step_limit)
    shrink = price_ratio * speedup
    grid = np.geomspace(shrink, max_batch, GRID)
    at = curve(grid)
    keep = at["step_time"] <= limit
    fits = "memory_fill" in curve.reported
    if fits:  # the normal tier's batch must fit in HBM too
        keep &= at["memory_fill"] <= 1
    grid = grid[keep]
    if grid.size < 2:
        raise NoSolution("batch_size", f"no normal-tier batch of at least {shrink:g} sequences "
                         f"keeps the step within {normal_step_limit}"
                         + (" and fits in HBM" if fits else ""))

    def achieved(batches):
        normal = curve(batches)["step_time"]
        fast = curve(batches / shrink)["step_time"]
        return normal / fast

    s = achieved(grid)
    f = s - speedup
    lines = [f"{price_ratio:g}x the price for {speedup:g}x the speed: the fast batch is "
             f"{shrink:g} times smaller (cost per token = step time / batch)",
             f"assumed: the normal tier's step is at most {normal_step_limit}"
             + (" and its batch fits in HBM (memory_fill <= 1)" if fits else "")]
    crossings = np.nonzero(np.sign(f[:-1]) * np.sign(f[1:]) < 0)[0]
    if crossings.size:
        i = crossings[0]
        b = math.exp(brentq(lambda lb: achieved(np.array([math.exp(lb)]))[0] - speedup,
                            math.log(grid[i]), math.log(grid[i + 1]), xtol=1e-14))
        v, vf = curve(b), curve(b / shrink)
        lines += [f"normal tier: batch_size = {curve.show('batch_size', b)}, step_time = "
                  f"{curve.show('step_time', v['step_time'][0])}",
                  f"fast tier: batch_size = {curve.show('batch_size', b / shrink)}, step_time = "
                  f"{curve.show('step_time', vf['step_time'][0])}",
                  f"latency floor (weights read once): "
                  f"{curve.show('step_time', v['t_weight_fetch'][0])}"]
        if fits:
            lines.append(f"normal tier memory_fill = {v['memory_fill'][0]:.4g}")
        return FastMode(True, b, b / shrink, lines)
    if keep[-1] and np.nanargmax(s) == s.size - 1:
        # the speed-up still grows at the largest batch searched: more is beyond the range
        raise BeyondSearch("batch_size", "above", f"{max_batch:.4g} sequence",
                           f"the normal-tier batch for {speedup:g}x the speed at "
                           f"{price_ratio:g}x the price")
    best = float(np.nanmax(s))
    floor = curve(grid[-1:])["t_weight_fetch"][0]
    lines += [f"no normal batch with a step within {normal_step_limit} gives {speedup:g}x: at "
              f"most {best:.3g}x, because "
              f"no step is shorter than reading the weights once "
              f"({curve.show('step_time', floor)})",
              f"what else would: multi-token prediction or speculative decoding accepting "
              f"{speedup / best:.3g} tokens per step in the fast tier, or spreading the "
              f"weights over {speedup / best:.3g}x more chips to lower the latency floor"]
    return FastMode(False, None, None, lines)


# What ``best_under_slo`` can optimise: the quantity and whether more of it is better.
