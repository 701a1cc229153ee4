"""What ``chalk imply`` returns: one :class:`Deduction` per thing a sheet implies (or why
it cannot be deduced), gathered in an :class:`Implication`, and the value each quotes."""

from __future__ import annotations

from dataclasses import dataclass, field

from chalk.api import Solution
from chalk.knowledge.price_sheets import PriceSheet
from chalk.symbolic.printing.numbers import format_display
from chalk.symbolic.printing.quantities import format_quantity
from chalk.symbolic.printing.readable import Readable


@dataclass
class Deduction:
    """One thing the sheet implies, or why it cannot be deduced.

    Attributes
    ----------
    key : str
        Short name of the deduction (``kv``, ``decode``, ``cache``, ``floor``, ``fast``).
    title : str
    targets : tuple of str
    solution : Solution or None
    skipped : str
        Why it was not deduced ("" if it was).
    lines : list of str
        The answer and what it means, in words.
    checks : list of str
        Values the user's pins or presets give for the same quantities, and the gaps.
    details : dict
        Structured extras for ``--json`` (the tier verdict, the fast-mode optimiser).
    pins : dict
        The pins the deduction added to the user's (the sheet's prices and the defaults
        it needed), so a later deduction can derive the same quantity in its own solve.
    """

    key: str
    title: str
    targets: tuple[str, ...]
    solution: Solution | None = None
    skipped: str = ""
    lines: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    details: dict = field(default_factory=dict)
    pins: dict = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        out = {"key": self.key, "title": self.title, "targets": list(self.targets),
               "summary": self.lines, "checks": self.checks, **self.details}
        if self.solution is not None:
            out.update(self.solution.to_dict())
        if self.skipped:
            out["skipped"] = self.skipped
        return out


@dataclass(repr=False)
class Implication(Readable):
    """What one price sheet implies: the assumptions in force and each deduction."""

    sheet: PriceSheet
    assumptions: list[tuple[str, str, str]]
    deductions: list[Deduction]

    def deduction(self, key: str) -> Deduction | None:
        return next((d for d in self.deductions if d.key == key), None)

    def text(self, derivations: bool = True) -> str:
        s = self.sheet
        lines = [f"{s.title} ({s.id}), prices of {s.date}", f"source: {s.source}", ""]
        lines.append("assumptions")
        for name, value, origin in self.assumptions:
            lines.append(f"  {name} = {value}  ({origin})")
        for index, d in enumerate(self.deductions, 1):
            lines.append("")
            lines.append(f"{index}. {d.title}")
            if d.skipped:
                lines.append(f"   not deduced: {d.skipped}")
                continue
            for line in d.lines + d.checks:
                lines.extend(f"   {part}" for part in line.splitlines())
            if derivations and d.solution is not None:
                body = d.solution.derivation.text().splitlines()
                start = body.index("derivation") if "derivation" in body else 0
                if d.solution.uncertainty is not None:
                    body[start] = _midpoint_heading(d.solution)
                # what cancels is said with the pins, which are not shown here
                body[start:start] = d.solution.derivation.cancel_lines()
                lines.extend(f"   {line}" for line in body[start:])
        return "\n".join(lines)

    def to_dict(self) -> dict:
        s = self.sheet
        return {
            "sheet": {"id": s.id, "provider": s.provider, "model": s.model, "source": s.source,
                      "date": s.date, "preset": s.preset},
            "assumptions": [{"name": n, "value": v, "origin": o} for n, v, o in self.assumptions],
            "deductions": [d.to_dict() for d in self.deductions],
        }


def _midpoint_heading(solution: Solution) -> str:
    """The heading of a ranged solution's derivation: it runs at each range's mid-point,
    so where a result's value there is not its Monte Carlo median the heading says so."""
    differ = [f"{t} = {solution.derivation.show(t)} here"
              for t in solution.targets
              if t in solution.uncertainty.summaries
              and _show_base(solution, t, solution.uncertainty.summaries[t].median)
              != solution.derivation.show(t)]
    text = "derivation (at each range's mid-point"
    if differ:
        text += (f": {', '.join(differ)}; the median above is over the Monte Carlo samples, "
                 "so the two differ by sampling (and, with several ranges, by how they combine)")
    return text + ")"


def _show_base(solution: Solution, name: str, base_value: float) -> str:
    variable = solution.derivation.model.variables[name]
    return format_display(base_value / variable.to_base, variable.display)


def central(solution: Solution, name: str, unit: str | None = None) -> float:
    """The value imply quotes for ``name``: the Monte Carlo median when a pin it rests on
    is a range (as the headline prints it), else the value."""
    if solution.uncertainty is not None and name in solution.uncertainty.summaries:
        return float(solution.median(name, unit).magnitude)
    return solution.value(name, unit)


def central_text(solution: Solution, name: str) -> str:
    """``central`` as the headline prints it, labelled ``(median)`` when it is one."""
    variable = solution.derivation.model.variables[name]
    shown = format_quantity(central(solution, name), variable.pint_unit)
    ranged = solution.uncertainty is not None and name in solution.uncertainty.summaries
    return f"{shown} (median)" if ranged else shown

