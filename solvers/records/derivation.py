"""Derivations: the record of how every answer was obtained, for people and scripts.

A :class:`Derivation` lists the pins (with origin, source and date), the steps
in the order they were solved (relation, closed form, values substituted,
result, regime), and the cross-checks. It renders as text, as a JSON-ready
dict, and as Markdown with LaTeX for notebooks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chalk.solvers.execution.steps import CheckRecord, StepRecord
from chalk.solvers.records.flags import Flag
from chalk.solvers.records.notes import Note, texts
from chalk.symbolic.printing.numbers import format_display, format_gap

if TYPE_CHECKING:  # pragma: no cover
    from chalk.solvers.pinning.pinned import Pin
    from chalk.symbolic.model import Model

# Text and JSON are rendered from the model's variables (unit, to_base, display) and
# relations (name, equation, source) and the records alone, so a derivation replayed
# from a cached plan renders with light stand-ins for them (chalk.cli.fast) and needs
# neither sympy nor pint. Markdown and LaTeX import the printers when asked.


@dataclass(frozen=True)
class Derivation:
    """How a solution was reached. Values are base-unit floats; see ``show``."""

    model: Model
    conventions: str
    pins: Mapping[str, Pin]
    steps: tuple[StepRecord, ...]
    checks: tuple[CheckRecord, ...]
    values: Mapping[str, float]
    remarks: tuple[Note, ...]  # what was set aside or settled, and why (as data)
    unused_pins: tuple[str, ...]
    rtol: float
    placeholders: tuple[str, ...] = ()  # quantities that cancel, held at arbitrary values
    provisional: frozenset[str] = frozenset()  # computed from a placeholder: not answers
    targets: tuple[str, ...] = ()
    flags: tuple[Flag, ...] = ()  # answers past a bound the model declares (solvers.records.flags)
    # (name, bound) reported beside the targets whenever determined (solvers.records.flags.reported)
    reported: tuple[tuple[str, str], ...] = ()

    @property
    def notes(self) -> tuple[str, ...]:
        """The remarks in words, as every rendering shows them."""
        return texts(self.remarks)

    def flag_lines(self) -> list[str]:
        """One line per flag, to stand beside the answers."""
        return [f"flag: {text}" for text in self.flags]

    def reported_lines(self) -> list[str]:
        """One line per reported quantity whose condition holds, after the answers and
        before the flags; one whose condition fails is said once, by its flag."""
        return [f"{name} = {self.show(name)} (checked: {bound})"
                for name, bound in self._reported() if name not in self._failed()]

    def _reported(self) -> list[tuple[str, str]]:
        return [(name, bound) for name, bound in self.reported if self.determined(name)]

    def _failed(self) -> set[str]:
        return {flag.quantity for flag in self.flags}

    def determined(self, name: str) -> bool:
        """Whether ``name``'s value is fixed by the pins (not an artefact of a placeholder)."""
        return (name in self.values and name not in self.placeholders
                and name not in self.provisional)

    def held(self, name: str) -> bool:
        """Whether ``name`` holds a stand-in value: a placeholder (it cancels from the
        answer) or a quantity computed from one. Such a value is never shown."""
        return name in self.placeholders or name in self.provisional

    def cancel_lines(self) -> list[str]:
        """What cancels from the answer, and that the steps' stand-in values are not shown."""
        if not self.placeholders:
            return []
        names = ", ".join(self.placeholders)
        one = len(self.placeholders) == 1
        wanted = ", ".join(self.targets) or "the answer"
        return [f"{names} {'cancels' if one else 'cancel'} from the answer: any value gives "
                f"the same {wanted}. The steps hold {'it' if one else 'them'} at a stand-in "
                f"value, so {'it' if one else 'they'} and the values that move with "
                f"{'it' if one else 'them'} are named, not shown"]

    def step_value(self, name: str) -> str:
        """A quantity as a step shows it: its value, or its name if that is a stand-in."""
        return name if self.held(name) else self.show(name)

    def block_results(self, step: StepRecord) -> list[str]:
        """What a step solved together found: ``name = value`` for each quantity the pins
        fix, then one clause naming those that move with what cancels."""
        out = [f"{n} = {self.show(n)}" for n in step.variables if not self.held(n)]
        held = [n for n in step.variables if self.held(n)]
        if held:
            out.append(f"{', '.join(held)}: not fixed by the pins (they move with what "
                       "cancels)")
        return out

    def substitution(self, step: StepRecord) -> str | None:
        """A closed-form step's formula with its inputs' values put in, or None where that
        line would add nothing: with no inputs (the formula would be repeated as it
        stands), or where the formula is one input as it is (the line would be the
        result in brackets)."""
        if not step.inputs:
            return None
        text = step.substituted_text({n: self.step_value(n) for n in step.inputs})
        return None if text == f"({self.step_result(step.variables[0])})" else text

    def step_result(self, name: str) -> str:
        """What a step found for ``name``: its value, or that the pins do not fix it."""
        if self.held(name):
            return "not fixed by the pins (it moves with what cancels)"
        return self.show(name)

    def show(self, name: str) -> str:
        """A quantity's value for people, e.g. ``14.4 ms``."""
        variable = self.model.variables[name]
        return format_display(self.values[name] / variable.to_base, variable.display)

    def declared(self, name: str) -> float:
        """A quantity's value in its declared unit."""
        return self.values[name] / self.model.variables[name].to_base

    def used_pins(self) -> list[Pin]:
        return [p for n, p in self.pins.items() if n not in self.unused_pins]

    def step_lines(self, index: int, step: StepRecord) -> list[str]:
        relations = [self.model.relations[r] for r in step.relations]
        cite = "; ".join(f"{r.name}: {r.source}" for r in relations)
        lines = []
        if step.closed_form:
            name = step.variables[0]
            lines.append(f"{index}. {name} = {step.formula_text()}")
            substitution = self.substitution(step)
            if substitution is not None:
                lines.append(f"     = {substitution}")
            lines.append(f"     = {self.step_result(name)}")
        else:
            lines.append(f"{index}. solve for {', '.join(step.variables)}:")
            for r in relations:
                lines.append(f"     {r.equation}")
            lines.extend(f"     {line}" for line in self.block_results(step))
        lines.append(f"     [{cite} | {step.method}]")
        if step.note:
            lines.append(f"     note: {step.note}")
        return lines

    def check_lines(self) -> list[str]:
        out = []
        for check in self.checks:
            relation = self.model.relations[check.relation]
            mark = "ok" if check.ok(self.rtol) else "FAILS"
            gain = (f"; the steps amplify the pins' {100 * self.rtol:g}% by "
                    f"{check.gain:.3g}" if check.gain > 1 else "")
            out.append(f"- {relation.name}: {relation.equation}  "
                       f"[{mark}: sides {format_gap(check.difference)}{gain}]")
        return out

    def text(self) -> str:
        lines = [f"conventions: {self.conventions}"]
        lines.append("")
        lines.append("pins")
        pins = self.used_pins()
        width = max((len(p.name) for p in pins), default=0)
        for pin in pins:
            shown = self.show(pin.name)
            if pin.spread is not None:
                shown = f"{pin.text} (nominal {shown})"
            lines.append(f"  {pin.name.ljust(width)}  {shown:<20} {_origin(pin)}")
        if self.unused_pins:
            lines.append(f"  (not needed: {', '.join(self.unused_pins)})")
        lines.extend(self.cancel_lines())
        lines.append("")
        lines.append("derivation")
        if not self.steps:
            lines.append("  (nothing to solve: every target was pinned)")
        for index, step in enumerate(self.steps, 1):
            lines.extend("  " + line for line in self.step_lines(index, step))
        if self.checks:
            lines.append("")
            lines.append("cross-checks (surplus pins, consistent within "
                         f"{100 * self.rtol:g}%)")
            lines.extend("  " + line for line in self.check_lines())
        for note in self.notes:
            lines.append(f"note: {note}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-ready form (values in each quantity's declared unit)."""
        model = self.model
        steps = []
        for step in self.steps:
            entry = {
                "relations": list(step.relations),
                "solved_for": list(step.variables),
                "equations": [model.relations[r].equation for r in step.relations],
                "sources": [str(model.relations[r].source) for r in step.relations],
                "method": step.method,
                "values": {n: self.json_value(n) for n in (*step.inputs, *step.variables)},
            }
            if step.closed_form:
                entry["expression"] = step.formula_text()
                entry["substituted"] = step.substituted_text(
                    {n: self.step_value(n) for n in step.inputs})
            if step.regime:
                entry["regime"] = step.regime
            if any(n in self.provisional for n in step.variables):
                entry["depends_on_placeholder"] = True
            if step.note:
                entry["note"] = step.note
            steps.append(entry)
        pins = {}
        for name, pin in self.pins.items():
            pins[name] = {
                **self.json_value(name),
                "given_as": pin.text,
                "origin": pin.origin,
                "used": name not in self.unused_pins,
            }
            for key in ("source", "date", "note"):
                if getattr(pin, key):
                    pins[name][key] = getattr(pin, key)
            if pin.estimate:
                pins[name]["estimate"] = True
        checks = [
            {
                "relation": c.relation,
                "equation": model.relations[c.relation].equation,
                "relative_difference": c.difference,
                "ok": c.ok(self.rtol),
            }
            for c in self.checks
        ]
        out = {"conventions": self.conventions, "pins": pins, "steps": steps,
               "checks": checks, "notes": list(self.notes), "flags": list(self.flags)}
        if self._reported():
            out["reported"] = {name: {**self.json_value(name), "condition": bound,
                                      "holds": name not in self._failed()}
                               for name, bound in self._reported()}
        if self.placeholders:
            out["cancels"] = list(self.placeholders)
        return out

    def json_value(self, name: str) -> dict:
        """``{"value": ..., "unit": ...}`` in the declared unit; a stand-in value is
        ``None``, with ``"cancels"`` or ``"depends_on_placeholder"`` saying why."""
        variable = self.model.variables[name]
        if not self.held(name):
            return {"value": self.declared(name), "unit": variable.unit}
        why = "cancels" if name in self.placeholders else "depends_on_placeholder"
        return {"value": None, "unit": variable.unit, why: True}

    def markdown(self) -> str:
        """Markdown with LaTeX maths, for notebooks and reports."""
        from chalk.symbolic.printing.expressions import latex

        lines = [f"**conventions:** {self.conventions}", "", "| pin | value | from |",
                 "|---|---|---|"]
        for pin in self.used_pins():
            lines.append(f"| `{pin.name}` | {self.show(pin.name)} | {_origin(pin)} |")
        lines.append("")
        lines.extend(f"*{line}*" for line in self.cancel_lines())
        for index, step in enumerate(self.steps, 1):
            relations = [self.model.relations[r] for r in step.relations]
            cite = "; ".join(str(r.source) for r in relations)
            if step.expression is not None:
                name = step.variables[0]
                lines.append(
                    f"{index}. $\\mathrm{{{_tex(name)}}} = {latex(step.expression)}$"
                    f" = **{self.step_result(name)}** — {cite}")
            else:
                eqs = ", ".join(f"${latex(r.lhs)} = {latex(r.rhs)}$" for r in relations)
                vals = "; ".join(f"**{line}**" for line in self.block_results(step))
                lines.append(f"{index}. solve {eqs} together: {vals} — {cite}")
            if step.note:
                lines.append(f"   *{step.note}*")
        return "\n".join(lines)


def _tex(name: str) -> str:
    return name.replace("_", r"\_")


def _origin(pin: Pin) -> str:
    parts = [pin.origin]
    if pin.source:
        parts.append(pin.source)
    if pin.date:
        parts.append(pin.date)
    text = " | ".join(parts)
    if pin.estimate:
        text += " (estimate)"
    if pin.replaces:
        text += f" (overrides {pin.replaces})"
    return text

