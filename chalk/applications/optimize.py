"""Balance points and optima found numerically (SciPy) on top of the solve plan.

Every function plans its question once, then evaluates the compiled plan as a
vectorised function of one quantity: a grid brackets every sign change or
constraint boundary, and ``brentq`` / ``minimize_scalar`` refine them. Results
say which root is physical and which constraint is active.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from chalk.api import prepare
from chalk.compiled import Options, compile_question
from chalk.solvers.pinning.pins import parse_given, read_value
from chalk.symbolic.errors import BeyondSearch, ChalkError, NoSolution, UsageError
from chalk.symbolic.printing.quantities import describe_dimension, format_quantity
from chalk.symbolic.printing.readable import Readable

GRID = 400


def minimize_in_log(objective, low: float, high: float, name: str, unit: str,
                    question: str, xatol: float = 1e-12, edges=("below", "above"),
                    minimised: str = "the objective") -> float:
    """The x in [low, high] that minimises ``objective(x)``, searched in log x.

    Parameters
    ----------
    objective : callable
        float -> float, unimodal on the range.
    low, high : float
        The range searched (positive).
    name, unit : str
        The quantity searched and the unit ``low`` and ``high`` are in, for messages.
    question : str
        What the search answers, for messages.
    xatol : float
        Tolerance on log x.
    edges : tuple of str
        Which ends are search bounds ("below" for ``low``, "above" for ``high``); an
        end that is a real constraint may hold the optimum.
    minimised : str
        What ``objective`` measures, for messages (``"the loss"``).

    Raises
    ------
    BeyondSearch
        The objective is no larger at a search bound than at the minimum found: the
        optimum lies at or past that bound.
    NoSolution
        The objective is not finite at the minimum found.
    """
    from scipy.optimize import minimize_scalar

    best = minimize_scalar(lambda t: objective(math.exp(t)), method="bounded",
                           bounds=(math.log(low), math.log(high)), options={"xatol": xatol})
    if not math.isfinite(best.fun):
        raise NoSolution(name, f"{question}: {minimised} is not a finite number at any "
                               f"{name} searched ({low:.4g}..{high:.4g} {unit})")
    for side, bound in (("below", low), ("above", high)):
        if side in edges and objective(bound) <= best.fun:
            raise BeyondSearch(name, side, f"{bound:.4g} {unit}", question)
    return math.exp(best.x)


class Curve:
    """Targets as functions of one quantity, from a compiled plan.

    ``Curve(targets, over, given, presets)`` plans the targets with ``over`` pinned
    (at its typical value, as a stand-in); calling it with an array of ``over`` values
    (base units) evaluates every target at once. Quantities in ``tie`` move in
    proportion with ``over``.
    """

    def __init__(self, targets: Sequence[str], over: str, given, presets, tie: Sequence[str] = (),
                 regime: str | None = None):
        self.question = self._plan(targets, over, parse_given(given), presets, tie, regime)
        q = self.question.prepared
        model, names, pins, plan = q.model, q.targets, q.pins, q.plan
        self.model, self.names, self.pins, self.plan = model, names, pins, plan
        # quantities reported beside these answers (memory_fill), when the pins fix them
        self.reported = self.question.reported
        self.over = model.variable(over).name
        self.tie = [model.variable(t).name for t in tie]
        self.regime = regime
        self.base = {n: p.value for n, p in pins.items()}

    @staticmethod
    def _plan(targets, over, pairs, presets, tie, regime):
        from chalk.knowledge import load_model

        model = load_model()
        variable = model.variable(over)
        typical = f"{variable.typical or 1!r} {variable.unit}"
        extra = [(over, typical)] + [(t, f"{model.variable(t).typical or 1!r} "
                                         f"{model.variable(t).unit}") for t in tie]
        question = compile_question(list(targets), [*pairs, *extra], presets,
                                    options=Options(regime=regime))
        if not question.prepared.plan.determined:
            raise question.prepared.plan.underdetermined_error()
        return question

    def __call__(self, xs) -> dict[str, np.ndarray]:
        """Every target and reported quantity at ``xs`` (base units): the answer
        ``chalk.solve`` gives at each, NaN where it refuses."""
        xs = np.atleast_1d(np.asarray(xs, dtype=float))
        values = {self.over: xs}
        for t in self.tie:
            scale = self.model.variables[t].to_base / self.model.variables[self.over].to_base
            values[t] = xs * scale
        return self.question.evaluate(values).values

    def show(self, name: str, base_value: float) -> str:
        v = self.model.variables[name]
        return format_quantity(base_value / v.to_base, v.pint_unit)


def _bounds(model, name, low, high):
    variable = model.variable(name)
    lo, _ = read_value(variable, low)
    hi, _ = read_value(variable, high)
    if not 0 < lo < hi:
        raise UsageError(f"the range of {variable.name} must have 0 < low < high")
    return lo, hi


def _comparable(model, first: str, second: str) -> None:
    """Refuse a comparison that cannot cross: a quantity with itself, or two quantities
    of different dimensions (a time is never equal to a ratio)."""
    a, b = model.variable(first), model.variable(second)
    if a.name == b.name:
        raise UsageError(f"crossover compares {a.name} with itself; name two different "
                         "quantities")
    if a.dimensionality != b.dimensionality:
        raise UsageError(f"{a.name} ({describe_dimension(a.dimensionality)}) and {b.name} "
                         f"({describe_dimension(b.dimensionality)}) have different "
                         "dimensions, so they are never equal; compare two quantities of "
                         "the same dimension")


@dataclass(repr=False)
class Crossover(Readable):
    """Where two quantities are equal as a third varies."""

    first: str
    second: str
    over: str
    roots: list[float]  # base units of ``over``
    shown: list[str]
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        if not self.roots:
            return (f"{self.first} and {self.second} do not cross for {self.over} in the "
                    "range" + ("".join(f"\nnote: {n}" for n in self.notes)))
        lines = [f"{self.first} = {self.second} at {self.over} = {s}" for s in self.shown]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def crossover(first: str, second: str, over: str, low, high, given=(), presets=(),
              regime: str | None = None, tie: Sequence[str] = ()) -> Crossover:
    """Every value of ``over`` in [low, high] where ``first`` equals ``second``.

    A geometric grid brackets each sign change of ln(first/second) and Brent's method
    refines it, so ``low`` and ``high`` must be positive.

    Parameters
    ----------
    first, second : str
        The two quantities compared (``"t_compute"``, ``"t_memory"``).
    over : str
        The quantity that varies.
    low, high : str or Quantity
        The range searched, as value text with a unit or Quantities.
    given, presets, regime
        As for :func:`chalk.solve`.
    tie : sequence of str
        Names pinned equal to ``over`` as it varies.

    Returns
    -------
    Crossover
        ``roots`` in base (SI) units of ``over``, ``shown`` as text with units, and
        ``notes`` on grid points without a physical value; ``text()`` prints it.
    """
    from scipy.optimize import brentq

    from chalk.knowledge import load_model

    _comparable(load_model(), first, second)
    curve = Curve([first, second], over, given, presets, tie, regime)
    lo, hi = _bounds(curve.model, over, low, high)
    grid = np.geomspace(lo, hi, GRID)
    values = curve(grid)
    a, b = values[curve.names[0]], values[curve.names[1]]
    with np.errstate(all="ignore"):
        f = np.log(a) - np.log(b)
    roots, notes = [], []
    for i in range(GRID - 1):
        if not (np.isfinite(f[i]) and np.isfinite(f[i + 1])):
            continue
        if f[i] == 0:
            roots.append(grid[i])
        elif f[i] * f[i + 1] < 0:
            def g(log_x):
                v = curve(math.exp(log_x))
                return math.log(v[curve.names[0]][0]) - math.log(v[curve.names[1]][0])
            roots.append(math.exp(brentq(g, math.log(grid[i]), math.log(grid[i + 1]),
                                         xtol=1e-14)))
    if not np.all(np.isfinite(f)):
        notes.append(f"{int(np.sum(~np.isfinite(f)))} of {GRID} grid points had no physical "
                     "value and were skipped")
    if len(roots) > 1:
        notes.append(f"{len(roots)} crossings: each is a balance point; the regime changes at "
                     "each one")
    shown = [curve.show(curve.over, r) for r in roots]
    return Crossover(curve.names[0], curve.names[1], curve.over, roots, shown, notes)


@dataclass(repr=False)
class CheapestBatch(Readable):
    batch: float
    cost: float
    step_time: float
    active: str
    shown: dict[str, str]
    flags: tuple[str, ...] = ()

    def text(self) -> str:
        lines = [f"{name} = {text}" for name, text in self.shown.items()]
        return "\n".join([*lines, f"active constraint: {self.active}",
                          *(f"flag: {f}" for f in self.flags)])


def _flags_at(curve: Curve, values: dict) -> tuple[str, ...]:
    """Flag lines for the conditions a curve's values break at one point."""
    from chalk.solvers.records.flags import flags

    point = {n: float(np.atleast_1d(v)[0]) for n, v in values.items()}
    return flags(curve.model, point, lambda n: True)


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
    return CheapestBatch(batch, float(v["cost_per_token"][0]), float(v["step_time"][0]),
                         active, shown, _flags_at(curve, v))


@dataclass(repr=False)
class LargestBatch(Readable):
    """The largest batch the chips' HBM holds (and the latency budget allows, if any)."""

    batch: float
    step_time: float
    active: str
    shown: dict[str, str]

    def text(self) -> str:
        lines = [f"{name} = {text}" for name, text in self.shown.items()]
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
    return LargestBatch(batch, float(v["step_time"][0]), active, shown)


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
                      _flags_at(curve, v), whole)
