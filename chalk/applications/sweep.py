"""Sweeps: a target against one pin over a grid, with regime changes marked.

The question is compiled once with the swept quantity pinned
(:func:`chalk.compiled.compile_question`) and evaluated on the whole grid at once;
every point is the answer ``chalk.solve`` gives there, or its refusal. This is also
what the plots draw.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from chalk.compiled import SETTLE, Options, compile_question
from chalk.symbolic.errors import BoundsError, ChalkError, UsageError
from chalk.symbolic.parsing import parse_number, parse_spread, parse_value
from chalk.symbolic.printing.numbers import format_display, format_number

SOLVED_TOGETHER = 25  # grid points solved in full per call, between progress updates

MAX_STEPS = 1_000_000


@dataclass
class Sweep:
    """Grid values of the swept pin and of each target.

    ``xs`` and ``ys[name]`` are pint Quantities (arrays) in each quantity's declared
    unit; ``x_values`` and ``y_values[name]`` are the same numbers as plain arrays, for
    code that does its own arithmetic fast. NaN marks a point with no answer
    (``refusals`` says why).
    """

    over: str
    over_unit: str
    x_values: np.ndarray
    targets: tuple[str, ...]
    units: dict[str, str]
    y_values: dict[str, np.ndarray]
    regimes: dict[str, np.ndarray]  # quantity -> label per point
    changes: list[tuple[int, str, str, str]]  # (index, quantity, before, after)
    flags: tuple[str, ...] = ()  # conditions broken at some points (memory_fill > 1)
    gaps: tuple[str, ...] = ()  # runs of points with no solution, and why, in words
    refusals: dict = field(default_factory=dict)  # point index -> the error solve gives there

    @property
    def xs(self):
        """The swept pin's grid, a Quantity in its declared unit."""
        return _quantity(self.x_values, self.over_unit)

    @property
    def ys(self) -> dict:
        """Each target (and reported condition) on the grid, a Quantity in its declared
        unit."""
        return {t: _quantity(v, self.units[t]) for t, v in self.y_values.items()}

    def __repr__(self) -> str:
        return (f"Sweep({', '.join(self.targets)} over {self.over}, "
                f"{len(self.x_values)} points; .text() prints the table)")

    def _repr_markdown_(self) -> str:
        return "```\n" + self.text() + "\n```"

    def rows(self) -> list[dict]:
        out = []
        for i, x in enumerate(self.x_values):
            row = {self.over: float(x)}
            row.update({t: float(self.y_values[t][i]) for t in self.targets})
            for name, labels in self.regimes.items():
                row[f"regime:{name}"] = str(labels[i])
            out.append(row)
        return out

    def to_csv(self) -> str:
        buffer = io.StringIO()
        rows = self.rows()
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        return buffer.getvalue()

    def to_dict(self) -> dict:
        return {"over": {"name": self.over, "unit": self.over_unit},
                "targets": {t: {"unit": self.units[t]} for t in self.targets},
                "rows": self.rows(),
                "regime_changes": [{"index": i, "quantity": q, "from": a, "to": b}
                                   for i, q, a, b in self.changes],
                "flags": list(self.flags), "gaps": list(self.gaps)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def text(self) -> str:
        """A table in units a person would write (``ms``, ``GB``, ``USD/Mtoken``): one per
        column, chosen by its largest value; ``-`` where there is no solution."""
        from chalk.knowledge import load_model
        from chalk.symbolic.printing.numbers import column_scale

        model = load_model()
        columns = [(self.over, self.x_values)] + [(t, self.y_values[t]) for t in self.targets]
        scales = [column_scale(values, model.variables[name].display)
                  for name, values in columns]
        header = [f"{name} [{unit or '1'}]" for (name, _), (unit, _) in zip(columns, scales,
                                                                           strict=True)]
        lines = ["  ".join(f"{h:>24}" for h in header)]
        marks = {}
        for i, q, a, b in self.changes:
            marks.setdefault(i, []).append(f"{q}: {a} -> {b}")
        for i in range(len(self.x_values)):
            cells = [_num(values[i] * factor)
                     for (_, values), (_, factor) in zip(columns, scales, strict=True)]
            line = "  ".join(f"{c:>24}" for c in cells)
            if i in marks:
                line += "   <- " + "; ".join(marks[i])
            lines.append(line)
        lines.extend(f"flag: {text}" for text in self.flags)
        lines.extend(f"no solution: {text}" for text in self.gaps)
        return "\n".join(lines)


def _quantity(values: np.ndarray, unit: str):
    from chalk.symbolic.parsing import parse_unit_cached
    from chalk.symbolic.units import ureg

    return ureg.Quantity(values, parse_unit_cached(unit) if unit not in ("", "1") else "")


def _num(x: float) -> str:
    return "-" if not np.isfinite(x) else format_number(x, 6)


def sweep(targets: str | Sequence[str], over: str, start, stop, steps: int = 21,
          log: bool = False, given=(), presets=(), regime: str | None = None, *,
          model=None) -> Sweep:
    """Evaluate ``targets`` on a grid of values of one pin, ``over``.

    Parameters
    ----------
    targets : str or sequence of str
        Quantity names to evaluate at every grid point.
    over : str
        The quantity that varies; it must not also be a target.
    start, stop : str or Quantity
        The grid's ends, as value text with a unit (``"1 sequence"``) or Quantities.
    steps : int
        Grid points, ends included (2 to 1,000,000).
    log : bool
        Space the grid geometrically instead of linearly (both ends positive).
    given, presets, regime, model
        As for :func:`chalk.solve`; ``given`` must not pin ``over``.

    Returns
    -------
    Sweep
        ``xs`` and ``ys[target]`` as Quantities in the declared units (``x_values`` and
        ``y_values[target]`` as plain arrays), the active side of
        each ``max(...)`` per point (``regimes``), the indices where it changes
        (``changes``), and a line per condition broken somewhere (``flags``);
        ``text()`` and ``to_csv()`` print it.

    Raises
    ------
    ChalkError
        An unknown name, a bad range, or pins that leave a target undetermined.
    """
    if not 2 <= steps <= MAX_STEPS:
        raise UsageError(f"--steps must be between 2 and {MAX_STEPS}")
    from chalk.knowledge import load_model
    from chalk.solvers.pinning.pins import parse_given, read_value

    targets = [targets] if isinstance(targets, str) else list(targets)
    model = model if model is not None else load_model()
    variable = model.variable(over)
    if variable.name in {model.variable(t).name for t in targets}:
        raise UsageError(f"{variable.name} is both swept and asked for; sweep another "
                         "quantity or drop it from the targets")
    try:
        low, _ = read_value(variable, start)
        high, _ = read_value(variable, stop)
    except BoundsError:
        raise  # names the quantity and its value: the refusal solve gives that value
    except ChalkError as exc:
        raise UsageError(f"--over {variable.name}={start}..{stop}: {exc.message}") from None
    if low >= high:
        raise UsageError(f"--over {variable.name}: empty range (the low end is not below the "
                         "high end)")
    question = compile_question(targets, [*parse_given(given), (over, start)], presets,
                                model=model, options=Options(regime=regime))
    q = question.prepared
    ranged = sorted(n for n, p in q.pins.items() if p.spread is not None)
    if ranged:
        # one number per point: a range would be replaced by its nominal value unseen
        raise UsageError(f"a sweep takes single values; {', '.join(ranged)} "
                         f"{'is a range' if len(ranged) == 1 else 'are ranges'} (use chalk "
                         "solve for a range, or sweep it)")
    if not q.plan.determined:
        raise q.plan.underdetermined_error()
    if log and (low <= 0 or high <= 0):
        raise UsageError("a --log sweep needs positive ends")
    model = question.model  # with absent terms taken out, if any
    # quantities a condition reports beside these answers (memory_fill) become columns
    names = question.targets + question.reported
    grid = np.geomspace(low, high, steps) if log else np.linspace(low, high, steps)
    result = _evaluate(question, variable.name, grid)
    ys = {t: result.values[t] / model.variables[t].to_base for t in names}
    changes = []
    for quantity, labels in result.regimes.items():
        for i in np.nonzero(labels[1:] != labels[:-1])[0] + 1:
            if labels[i - 1] and labels[i] and np.isfinite(ys[names[0]][[i - 1, i]]).all():
                changes.append((int(i), quantity, str(labels[i - 1]), str(labels[i])))
    changes.sort()
    xs = grid / variable.to_base
    return Sweep(variable.name, variable.unit, xs, tuple(names),
                 {t: model.variables[t].unit for t in names}, ys, result.regimes, changes,
                 _broken(model, variable, xs, result.values), _gaps(variable, xs, result),
                 dict(result.refusals))


def _evaluate(question, name: str, grid: np.ndarray):
    """``question.evaluate`` over the grid of ``name``, counted point by point on the
    progress line: the points the vectorised run vouches for at once, then those solved
    in full (at most ``SETTLE``, the budget one call has), ``SOLVED_TOGETHER`` at a time."""
    from chalk.solvers.bulk.progress import task

    with task(f"sweep of {name}", grid.size) as progress:
        result = question.evaluate({name: grid}, settle=0)
        pending = np.flatnonzero(result.unsettled)
        progress.advance(grid.size - pending.size)
        settled = pending[:SETTLE]
        for first in range(0, settled.size, SOLVED_TOGETHER):
            part = settled[first:first + SOLVED_TOGETHER]
            answered = question.evaluate({name: grid[part]}, settle=part.size)
            for target, values in answered.values.items():
                result.values[target][part] = values
            result.refusals.update({int(part[i]): e for i, e in answered.refusals.items()})
            result.unsettled[part] = answered.unsettled
            result.settled += answered.settled
            progress.advance(part.size)
        progress.advance(pending.size - settled.size)  # beyond the budget: left unsettled
    return result


def _gaps(over, xs: np.ndarray, result) -> tuple[str, ...]:
    """For each run of grid points with no answer, the run and why: the error
    ``chalk.solve`` gives at its first point (which quantity would be non-physical,
    which pins disagree), or that the run was too long to solve point by point."""
    reasons = [result.refusals[i].message if i in result.refusals
               else f"not solved point by point (more than {SETTLE:,} points needed it)"
               if result.unsettled[i] else None for i in range(len(xs))]
    out = []
    start = 0
    while start < len(xs):
        if reasons[start] is None:
            start += 1
            continue
        end = start
        while end + 1 < len(xs) and reasons[end + 1] == reasons[start]:
            end += 1
        low, high = (format_display(x, over.display) for x in (xs[start], xs[end]))
        where = f"{over.name} = {low}" if start == end else f"{over.name} {low} to {high}"
        out.append(f"{where} ({end - start + 1} of {len(xs)} points): {reasons[start]}")
        start = end + 1
    return tuple(out)


def _broken(model, over, xs: np.ndarray, values) -> tuple[str, ...]:
    """A line per condition broken somewhere on the grid: where, and what it means."""
    from chalk.solvers.records.flags import bound_value, violated

    out = []
    for condition in model.conditions.values():
        if condition.quantity not in values:
            continue
        bound = bound_value(condition)
        ys = np.broadcast_to(values[condition.quantity], xs.shape)
        bad = violated(ys, bound, condition.kind)  # elementwise, with the flags' slack
        if not bad.any():
            continue
        variable = model.variables[condition.quantity]
        side = "above" if condition.kind == "<=" else "below"
        low, high = (format_display(x, over.display) for x in (xs[bad].min(), xs[bad].max()))
        where = f"{low} to {high}" if low != high else low
        out.append(f"{condition.quantity} is {side} "
                   f"{format_display(bound / variable.to_base, variable.display)} at "
                   f"{int(bad.sum())} of {xs.size} points ({over.name} {where}): "
                   f"{condition.meaning}")
    return tuple(out)


def parse_over(text: str) -> tuple[str, str, str]:
    """Split ``NAME=START..STOP`` into the name and the two value texts, as the user wrote
    them (a START written without a unit takes STOP's, as in ``1..4096 sequence``), so that
    a later error quotes the user's own text."""
    if "=" not in text:
        raise UsageError("--over needs NAME=START..STOP, e.g. 'batch_size=1..4096 sequence'")
    name, span = text.split("=", 1)
    spread = parse_spread(span)  # the range as a whole: ends that read, units that agree
    if spread.kind != "range":
        raise UsageError("--over needs a range START..STOP")
    start, stop = (end.strip() for end in span.split("..", 1))
    if spread.unit is not None and parse_value(start).unit is None:
        start = f"{start} {parse_number(stop)[1].strip()}"
    return name.strip(), start, stop
