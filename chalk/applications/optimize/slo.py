"""The best batch under service-level limits on TPOT and TTFT (``chalk optimize
slo``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from chalk.applications.optimize.curve import GRID, Curve, flags_at
from chalk.solvers.pinning.pins import parse_given, read_value
from chalk.symbolic.errors import BeyondSearch, ChalkError, NoSolution, UsageError

SLO_OBJECTIVES = {"throughput": ("output_tokens_per_second_per_chip", True),
                  "cost": ("request_cost_per_token", False)}


@dataclass
class SloOptimum:
    """The best batch (and chip count, if several were tried) under service-level limits."""

    batch: float
    chips: float | None
    objective: str
    value: float
    active: str
    shown: dict[str, str]
    flags: tuple[str, ...] = ()
    whole_batch: int | None = None  # the largest whole batch within the limits

    def text(self) -> str:
        lines = [f"{name} = {text}" for name, text in self.shown.items()]
        return "\n".join([*lines, f"active constraint: {self.active}",
                          *(f"flag: {f}" for f in self.flags)])


def _limit(curve: Curve, name: str, text, option: str) -> float:
    try:
        value, _ = read_value(curve.model.variable(name), text)
    except ChalkError as exc:
        raise UsageError(f"{option} {text!r}: {exc.message}") from None
    return value


def best_under_slo(objective: str, tpot=None, ttft=None, given=(), presets=(),
                   chips: Sequence[float] = (), max_batch: float = 1e6) -> SloOptimum:
    """The batch with the most output per chip, or the cheapest output token, whose
    requests meet a TPOT and a TTFT limit.

    The question is a whole request: the pins must give ``prompt_tokens`` and
    ``output_tokens`` (and the chip's price for ``"cost"``). Where they determine
    ``memory_fill``, fitting in HBM is a limit too.

    Parameters
    ----------
    objective : {"throughput", "cost"}
        ``output_tokens_per_second_per_chip`` made largest, or ``request_cost_per_token``
        made smallest.
    tpot, ttft : str or Quantity, optional
        The longest time per output token (``"50 ms/token"``) and to first token
        (``"2 s"``) allowed.
    given, presets
        As for :func:`chalk.solve`; they must not pin ``batch_size`` (nor ``n_chips`` when
        ``chips`` is given).
    chips : sequence of float
        Chip counts of one replica to try (each pinned as ``n_chips``); empty: as pinned.
    max_batch : float
        The largest batch searched, in sequences.

    Returns
    -------
    SloOptimum
        The batch, the chip count tried that won (None without ``chips``), the objective's
        value (base units), the limit that stops the batch growing, and the quantities
        shown; ``text()`` prints it.

    Raises
    ------
    NoSolution
        No batch meets the limits: the message gives the best each limit allows.
    BeyondSearch
        The objective still improves at ``max_batch`` with every limit met.
    """
    if objective not in SLO_OBJECTIVES:
        raise UsageError(f"objective must be one of {', '.join(SLO_OBJECTIVES)}, not "
                         f"{objective!r}")
    if not chips:
        return _best_batch_under_slo(objective, tpot, ttft, list(parse_given(given)),
                                     presets, max_batch)
    better = max if SLO_OBJECTIVES[objective][1] else min
    found, refusals = [], []
    for count in chips:
        pins = [*parse_given(given), ("n_chips", f"{count!r} chip")]
        try:
            found.append(_best_batch_under_slo(objective, tpot, ttft, pins, presets,
                                               max_batch, count))
        except NoSolution as exc:
            refusals.append(f"{count:g} chip: {exc.reason}")
    if not found:
        raise NoSolution("batch_size", "no chip count tried meets the limits; "
                         + "; ".join(refusals))
    return better(found, key=lambda f: f.value)


def _best_batch_under_slo(objective, tpot, ttft, pins, presets, max_batch,
                          chips=None) -> SloOptimum:
    from scipy.optimize import brentq

    name, larger = SLO_OBJECTIVES[objective]
    curve = Curve([name, "time_per_output_token", "time_to_first_token"], "batch_size", pins,
                  presets)
    limits = []
    if tpot is not None:
        limits.append(("TPOT limit", "time_per_output_token",
                       _limit(curve, "time_per_output_token", tpot, "--tpot")))
    if ttft is not None:
        limits.append(("TTFT limit", "time_to_first_token",
                       _limit(curve, "time_to_first_token", ttft, "--ttft")))
    if "memory_fill" in curve.reported:
        limits.append(("memory capacity", "memory_fill", 1.0))
    grid = np.geomspace(1.0, max_batch, GRID)
    values = curve(grid)
    feasible = np.ones(GRID, dtype=bool)
    for _, quantity, limit in limits:
        feasible &= values[quantity] <= limit
    if not feasible.any():
        # the best any batch reaches is at a batch of one: say what each limit gets there
        broken = [f"{label}: {quantity} is at least {curve.show(quantity, values[quantity][0])}"
                  f" (at a batch of one sequence), over {curve.show(quantity, limit)}"
                  for label, quantity, limit in limits if values[quantity][0] > limit]
        raise NoSolution("batch_size", "no batch meets the limits; " + "; ".join(broken))
    sign = 1.0 if larger else -1.0
    with np.errstate(invalid="ignore"):
        score = np.where(feasible, sign * values[name], -np.inf)
    best = int(np.nanargmax(score))
    batch, active = float(grid[best]), "none: the objective is flat past it"
    if best + 1 < GRID and not feasible[best + 1]:
        # the limit that stops the batch: refine where it is met exactly
        edges = []
        for label, quantity, limit in limits:
            def excess(log_b, quantity=quantity, limit=limit):
                return curve(math.exp(log_b))[quantity][0] / limit - 1

            if excess(math.log(grid[best + 1])) > 0 >= excess(math.log(grid[best])):
                edges.append((math.exp(brentq(excess, math.log(grid[best]),
                                              math.log(grid[best + 1]), xtol=1e-14)), label))
        if edges:
            batch, active = min(edges)
    elif best == GRID - 1:
        raise BeyondSearch("batch_size", "above", f"{max_batch:.4g} sequence",
                           f"the batch with the best {name} under the limits")
    v = curve(batch)
    shown = {"batch_size": curve.show("batch_size", batch)}
    # a batch holds whole sequences: the largest whole batch within the limits, beside
    # the continuous answer (the limits only tighten as the batch grows)
    whole = math.floor(batch * (1 + 1e-12))
    if whole >= 1 and whole != batch:
        shown["whole batch_size"] = curve.show("batch_size", float(whole))
        shown[f"{name} at the whole batch"] = curve.show(name, curve(float(whole))[name][0])
    if chips is not None:
        shown["n_chips"] = f"{chips:g} chip"
    for quantity in (name, "time_per_output_token", "time_to_first_token", *curve.reported):
        shown.setdefault(quantity, curve.show(quantity, v[quantity][0]))
    return SloOptimum(batch, chips, objective, float(v[name][0]), active, shown,
                      flags_at(curve, v), whole)
