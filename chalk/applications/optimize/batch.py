"""The cheapest batch within a latency budget and the largest one that fits
(``chalk optimize cheapest-batch`` and ``largest-batch``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from chalk.api import prepare
from chalk.applications.optimize.curve import GRID, Curve, flags_at
from chalk.solvers.pinning.pins import parse_given, read_value
from chalk.symbolic.errors import BeyondSearch, ChalkError, NoSolution, UsageError
from chalk.symbolic.printing.readable import Readable

# A batch edge found by a root search within this relative rounding of a whole number
# counts as that number (1,814.9999999999 is 1,815 sequences, not 1,814).
_WHOLE_RTOL = 1e-12


def _sequences(count: int) -> str:
    return f"{count:,} sequence{'' if count == 1 else 's'}"


@dataclass(repr=False)
class CheapestBatch(Readable):
    """The batch with the cheapest tokens within a latency budget (and the HBM).

    Attributes
    ----------
    batch : float
        The cheapest batch, in sequences, as a continuous quantity (the values in
        ``shown`` are there); ``cost`` (USD/token) and ``step_time`` (s) at it.
    active : str
        What stops the batch growing, or that the cost floor is reached.
    shown : dict
        Each quantity's value at ``batch``, as printed.
    flags : tuple of str
        Conditions that fail there.
    whole : int
        The cheapest whole number of sequences within the constraints: ``batch`` rounded
        down or up, whichever costs less per token (the smaller on a tie).
    """

    batch: float
    cost: float
    step_time: float
    active: str
    shown: dict[str, str]
    flags: tuple[str, ...] = ()
    whole: int = 0

    def text(self) -> str:
        lines = [f"{name} = {text}" for name, text in self.shown.items()]
        lines.insert(1, f"cheapest whole batch: {_sequences(self.whole)} (of the batches "
                        f"either side of {self.batch:,.1f})")
        return "\n".join([*lines, f"active constraint: {self.active}",
                          *(f"flag: {f}" for f in self.flags)])


def cheapest_batch(latency_budget, given=(), presets=(), max_batch: float = 1e6) -> CheapestBatch:
    """The batch that minimises cost per token while the step stays within a budget.

    When the pins determine ``memory_fill`` (chip capacity, chips, context and KV size
    known), fitting in HBM (``memory_fill <= 1``) is a second constraint.

    Parameters
    ----------
    latency_budget : str or Quantity
        The longest step time allowed (``"20 ms"``).
    given, presets
        As for :func:`chalk.solve`; they must not pin ``batch_size``.
    max_batch : float
        The largest batch searched, in sequences.

    Returns
    -------
    CheapestBatch
        ``batch`` (sequences), ``cost`` (USD/token) and ``step_time`` (s) at the answer,
        ``active``: the constraint that stops the batch growing (``"latency budget"``,
        the memory, or none when the cost floor is reached), ``flags`` broken there;
        ``text()`` prints it.

    Raises
    ------
    ChalkError
        A budget below the latency floor, or a single sequence that does not fit.
    """
    from scipy.optimize import brentq, minimize_scalar

    curve = Curve(["cost_per_token", "step_time"], "batch_size", given, presets)
    use_memory = "memory_fill" in curve.reported
    try:
        budget, _ = read_value(curve.model.variable("step_time"), latency_budget)
    except ChalkError as exc:
        raise UsageError(f"--latency {latency_budget!r}: {exc.message}") from None
    lo, hi = 1.0, max_batch
    grid = np.geomspace(lo, hi, GRID)
    values = curve(grid)
    feasible = values["step_time"] <= budget
    if use_memory:
        feasible &= values["memory_fill"] <= 1
    if not feasible.any():
        first = curve(lo)
        if use_memory and first["memory_fill"][0] > 1:
            raise NoSolution("batch_size", "even one sequence does not fit: memory_fill = "
                             f"{first['memory_fill'][0]:.4g} at a batch of one sequence")
        floor = first["step_time"][0]
        raise NoSolution("batch_size", f"even one sequence takes {curve.show('step_time', floor)}"
                         f", over the budget: the latency floor is above it")
    top = grid[np.nonzero(feasible)[0].max()]
    active = "none: the compute-bound cost floor is reached"
    limit = hi
    if top < hi:
        nxt = grid[np.nonzero(grid > top)[0][0]]

        def latency(log_b):
            return curve(math.exp(log_b))["step_time"][0] - budget

        def memory(log_b):
            return curve(math.exp(log_b))["memory_fill"][0] - 1

        checks = [("latency budget", latency)]
        if use_memory:
            checks.append(("memory capacity", memory))
        edges = []
        for label, fn in checks:
            if fn(math.log(nxt)) > 0 >= fn(math.log(top)):
                edges.append((math.exp(brentq(fn, math.log(top), math.log(nxt), xtol=1e-14)),
                               label))
        limit, active = min(edges) if edges else (top, "grid edge")

    def cost(log_b):
        return math.log(curve(math.exp(log_b))["cost_per_token"][0])

    best = minimize_scalar(cost, bounds=(math.log(lo), math.log(limit)), method="bounded",
                           options={"xatol": 1e-10})
    batch = math.exp(best.x)
    floor_cost = cost(math.log(limit))
    if floor_cost <= best.fun + 1e-12:
        batch = limit  # cost is non-increasing in batch: the boundary is the optimum
    # Once compute-bound, cost per token is flat: every larger batch costs the same and
    # only waits longer, so take the smallest batch on the floor.
    least = min(floor_cost, best.fun)
    on_floor = (grid <= limit) & (np.log(values["cost_per_token"]) <= least + 1e-9)
    if on_floor.any() and grid[on_floor].min() < batch * (1 - 1e-9):
        first = int(np.nonzero(on_floor)[0].min())
        if first > 0:
            edge = brentq(lambda lb: cost(lb) - least - 1e-9, math.log(grid[first - 1]),
                          math.log(grid[first]), xtol=1e-14)
            batch = math.exp(edge)
        else:
            batch = float(grid[first])
        active = "none: the compute-bound cost floor is reached"
    if limit == hi and batch >= hi * (1 - 1e-9):
        # no constraint stops the batch and the cost still falls at the largest batch
        # searched: that edge is not the cheapest batch
        raise BeyondSearch("batch_size", "above", f"{hi:.4g} sequence",
                           f"the cheapest batch within a step of {latency_budget}")
    v = curve(batch)
    shown = {"batch_size": curve.show("batch_size", batch),
             "cost_per_token": curve.show("cost_per_token", v["cost_per_token"][0]),
             "step_time": curve.show("step_time", v["step_time"][0])}
    for name in curve.reported:
        shown[name] = curve.show(name, v[name][0])
    # the whole batches either side, within the constraints (an edge within the rounding
    # of a whole number counts as that number)
    sides = {math.floor(batch * (1 + _WHOLE_RTOL)), math.ceil(batch * (1 - _WHOLE_RTOL))}
    within = sorted(w for w in sides if 1 <= w <= limit * (1 + _WHOLE_RTOL)) or [1]
    costs = curve(np.array(within, dtype=float))["cost_per_token"]
    whole = within[int(np.argmin(costs))]  # argmin takes the first, the smaller, on a tie
    return CheapestBatch(batch, float(v["cost_per_token"][0]), float(v["step_time"][0]),
                         active, shown, flags_at(curve, v), whole)


@dataclass(repr=False)
class LargestBatch(Readable):
    """The largest batch the chips' HBM holds (and the latency budget allows, if any).

    Attributes
    ----------
    batch : float
        Where the active constraint is met exactly, in sequences (the values in ``shown``
        are there).
    step_time : float
        The step time there, in seconds.
    active : str
        The constraint met there (``memory capacity`` or ``latency budget``).
    shown : dict
        Each quantity's value there, as printed.
    whole : int
        The largest whole number of sequences within the constraints: ``batch`` rounded
        down (a batch is a count of sequences; the edge is rarely one).
    """

    batch: float
    step_time: float
    active: str
    shown: dict[str, str]
    whole: int

    def text(self) -> str:
        lines = [f"{name} = {text}" for name, text in self.shown.items()]
        # the edge to a tenth: at four figures 1,815.7 prints as 1,816, above the whole batch
        lines.insert(1, f"largest whole batch: {_sequences(self.whole)} (the edge, "
                        f"{self.batch:,.1f}, rounded down)")
        return "\n".join([*lines, f"active constraint: {self.active}"])


def largest_batch(given=(), presets=(), latency_budget=None,
                  max_batch: float = 1e9) -> LargestBatch:
    """The largest batch whose weights and KV cache fit in HBM (memory_fill <= 1).

    With ``latency_budget`` the step time must also stay within it; the active
    constraint is reported. The pins must determine ``memory_fill`` at a given batch
    (chip capacity, chips, context, KV and weight sizes), else the error names what
    to pin.
    """
    from scipy.optimize import brentq

    curve = Curve(["step_time", "tokens_per_second", "tokens_per_second_per_user"],
                  "batch_size", given, presets)
    if "memory_fill" not in curve.reported:
        from chalk.knowledge import load_model

        pairs = parse_given(given)
        over = load_model().variable("batch_size")
        q = prepare(["memory_fill"], [*pairs, ("batch_size", f"1 {over.unit}")], presets)
        raise q.plan.underdetermined_error()
    one = curve(1.0)
    if one["memory_fill"][0] > 1:
        raise NoSolution("batch_size", "even one sequence does not fit: memory_fill = "
                         f"{one['memory_fill'][0]:.4g} at a batch of one sequence")
    checks = [("memory capacity", "memory_fill", 1.0)]
    if latency_budget is not None:
        try:
            budget, _ = read_value(curve.model.variable("step_time"), latency_budget)
        except ChalkError as exc:
            raise UsageError(f"--latency {latency_budget!r}: {exc.message}") from None
        if one["step_time"][0] > budget:
            raise NoSolution("batch_size", "even one sequence takes "
                             f"{curve.show('step_time', one['step_time'][0])}, over the "
                             "budget: the latency floor is above it")
        checks.append(("latency budget", "step_time", budget))
    edges = []
    for label, name, limit in checks:
        def excess(log_b, name=name, limit=limit):
            return curve(math.exp(log_b))[name][0] / limit - 1

        high = 1.0
        while excess(math.log(high)) <= 0 and high < max_batch:
            high = min(high * 10, max_batch)
        if excess(math.log(high)) <= 0:
            raise BeyondSearch("batch_size", "above", f"{max_batch:.4g} sequence",
                               f"the largest batch within the {label}")
        edges.append((math.exp(brentq(excess, math.log(max(high / 10, 1.0)), math.log(high),
                                      xtol=1e-14)), label))
    batch, active = min(edges)
    v = curve(batch)
    shown = {"batch_size": curve.show("batch_size", batch)}
    for name in ("memory_fill", "step_time", "tokens_per_second",
                 "tokens_per_second_per_user", *curve.reported):
        shown.setdefault(name, curve.show(name, v[name][0]))
    # an edge within the root's rounding of a whole number counts as that number
    whole = math.floor(batch * (1 + _WHOLE_RTOL))
    return LargestBatch(batch, float(v["step_time"][0]), active, shown, whole)
