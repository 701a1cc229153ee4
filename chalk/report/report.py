"""Scripted deduction reports: run a deduction file, render Markdown (and HTML).

A report holds, for each question: the question in words, each answer with its
unit (and interval when pins are ranges), the derivation as numbered steps, the
cross-checks, and what would change the answer (the sensitivity ranking, or the
elasticity of the answer to each pin). An assumptions table lists every pin
with its value, unit, origin, source and date. Plots and sweeps are drawn from
the same engine. Everything is built in memory before anything is written.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from chalk.api import Solution, solve
from chalk.report.deduction import DeductionFile, Entry, load
from chalk.solvers.execute import compile_plan
from chalk.solvers.uncertainty import elasticities
from chalk.symbolic.errors import ChalkError, UsageError
from chalk.symbolic.printing.expressions import latex, plain, substituted

VERSION = "0.1.0"


@dataclass
class Section:
    entry: Entry
    solution: Solution | None = None
    sweep: object | None = None
    svg: str = ""
    png: bytes = b""
    changes: dict[str, list[str]] = field(default_factory=dict)  # target -> sentences


@dataclass
class Report:
    file: DeductionFile
    sections: list[Section]
    assumptions: list[dict]
    generated: str

    @property
    def title(self) -> str:
        return self.file.title


def build(name_or_path: str) -> Report:
    """Run every question, sweep and plot of a deduction file."""
    spec = load(name_or_path)
    sections = []
    for entry in spec.entries:
        try:
            sections.append(_run(spec, entry))
        except ChalkError as exc:
            raise UsageError(f"{entry.kind[:-1]} '{entry.title}': {exc.message}") from None
    return Report(spec, sections, _assumptions(sections),
                  datetime.date.today().isoformat())


def _run(spec: DeductionFile, entry: Entry) -> Section:
    pins = {**spec.pins, **entry.pins}
    presets = [*spec.presets, *entry.presets]
    section = Section(entry)
    if entry.kind == "questions":
        solution = solve(entry.options["targets"], pins, presets,
                         regime=entry.options.get("regime"), samples=spec.samples,
                         seed=spec.seed)
        section.solution = solution
        section.changes = _what_would_change(solution)
    elif entry.kind == "sweeps":
        from chalk.applications.sweep import parse_over, sweep

        name, low, high = parse_over(entry.options["over"])
        section.sweep = sweep(entry.options["targets"], name, low, high,
                              int(entry.options.get("steps", 21)),
                              bool(entry.options.get("log", False)), pins, presets)
    else:
        from chalk.applications.plots import plot, render

        options = {"sheet": entry.options["sheet"]} if "sheet" in entry.options else {}
        figure = plot(entry.options["name"], pins, presets, **options)
        section.svg = render(figure, "svg", close=False).decode("utf-8")
        section.png = render(figure, "png")
    return section


def _what_would_change(solution: Solution) -> dict[str, list[str]]:
    """Sentences naming the pins each answer hangs on, largest effect first."""
    out = {}
    compiled = compile_plan(solution.derivation.model, solution.plan)
    pins = solution.derivation.pins
    for target in solution.targets:
        lines = []
        summary = (solution.uncertainty.summaries.get(target)
                   if solution.uncertainty else None)
        if summary is not None:
            for name, share in summary.sensitivity:
                lines.append(f"{name} drives {100 * share:.0f}% of the spread of {target}")
        for name, e in elasticities(compiled, pins, target)[:4]:
            lines.append(f"doubling {name} multiplies {target} by {2 ** e:.3g} "
                         f"(elasticity {e:+.2f})")
        out[target] = lines
    return out


def _assumptions(sections: list[Section]) -> list[dict]:
    """One row per distinct pin (name, value, origin), with the sections that used it."""
    rows: dict[tuple, dict] = {}
    for number, section in enumerate(sections, 1):
        if section.solution is None:
            continue
        d = section.solution.derivation
        for pin in d.used_pins():
            key = (pin.name, pin.text, pin.origin)
            if key not in rows:
                rows[key] = {"name": pin.name, "value": pin.text,
                             "unit": d.model.variables[pin.name].unit,
                             "origin": pin.origin, "source": pin.source, "date": pin.date,
                             "estimate": pin.estimate, "range": pin.spread is not None,
                             "sections": []}
            rows[key]["sections"].append(number)
    return sorted(rows.values(), key=lambda r: (r["name"], r["sections"][0]))


def answer_lines(solution: Solution) -> list[str]:
    return solution.headline().splitlines()


def step_parts(solution: Solution):
    """Per step: (relation names, equation LaTeX, substituted text, result text, citation)."""
    d = solution.derivation
    for index, step in enumerate(d.steps, 1):
        relations = [d.model.relations[r] for r in step.relations]
        cite = "; ".join(f"{r.name}: {r.source}" for r in relations) + f" · {step.method}"
        if step.expression is not None:
            name = step.variables[0]
            equation = f"\\mathrm{{{name.replace('_', chr(92) + '_')}}} = {latex(step.expression)}"
            text = f"{name} = {plain(step.expression)}"
            subst = substituted(step.expression, {n: d.show(n) for n in step.inputs})
            result = d.show(name)
            yield index, step, equation, text, subst, result, cite, step.expression
        else:
            equation = ", \\quad ".join(f"{latex(r.lhs)} = {latex(r.rhs)}" for r in relations)
            text = "; ".join(r.equation for r in relations)
            result = ", ".join(f"{n} = {d.show(n)}" for n in step.variables)
            yield index, step, equation, text, "solved together", result, cite, None


def markdown(report: Report, asset_prefix: str = "") -> tuple[str, dict[str, bytes]]:
    """The report as Markdown, and the PNG files it links to (name -> bytes)."""
    out = [f"# {report.title}", ""]
    if report.file.description:
        out += [report.file.description, ""]
    out += [f"*Generated by chalk {VERSION} on {report.generated} from "
            f"`{report.file.path.split('/')[-1]}`.*", "", "## Assumptions", "",
            "| quantity | value | from | source | date | used in |",
            "|---|---|---|---|---|---|"]
    for row in report.assumptions:
        value = row["value"] + (" (range)" if row["range"] else "")
        estimate = " (estimate)" if row["estimate"] else ""
        used = ", ".join(f"§{n}" for n in row["sections"])
        out.append(f"| `{row['name']}` | {value} | {row['origin']} | "
                   f"{row['source'] or '-'}{estimate} | {row['date'] or '-'} | {used} |")
    assets = {}
    for number, section in enumerate(report.sections, 1):
        entry = section.entry
        out += ["", f"## {number}. {entry.title}", ""]
        if entry.text:
            out += [entry.text, ""]
        if section.solution is not None:
            out += _md_question(section)
        elif section.sweep is not None:
            out += _md_sweep(section.sweep)
        else:
            name = f"{asset_prefix}plot-{number}.png"
            assets[name] = section.png
            out += [f"![{entry.title}]({name})", ""]
    return "\n".join(out) + "\n", assets


def _md_question(section: Section) -> list[str]:
    solution = section.solution
    out = [f"**{line}**  " for line in answer_lines(solution)]
    if solution.uncertainty is not None:
        out += ["", f"*{solution.uncertainty.method()}*"]
    out += ["", f"Conventions: {solution.derivation.conventions}.", "", "Derivation:", ""]
    for index, _, equation, _, subst, result, cite, _ in step_parts(solution):
        out += [f"{index}. $${equation}$$", f"   = {subst}  ", f"   = **{result}**  ",
                f"   <sub>{cite}</sub>"]
    checks = solution.derivation.check_lines()
    if checks:
        out += ["", "Cross-checks:", ""] + [f"{line}" for line in checks]
    changes = [line for lines in section.changes.values() for line in lines]
    if changes:
        out += ["", "What would change the answer:", ""] + [f"- {line}" for line in changes]
    for note in solution.derivation.notes:
        out += ["", f"*Note: {note}*"]
    return out + [""]


def _md_sweep(table) -> list[str]:
    header, rows = sweep_rows(table)
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for cells, mark in rows:
        out.append("| " + " | ".join(cells) + " |" + (f" ← {mark}" if mark else ""))
    return out + [""]


def sweep_rows(table, limit: int = 25) -> tuple[list[str], list[tuple[list[str], str]]]:
    """A sweep's column headers and up to about ``limit`` rows (cells, regime-change mark),
    keeping every row where a regime changes."""
    header = [f"{table.over} [{table.over_unit}]"] + [f"{t} [{table.units[t]}]"
                                                      for t in table.targets]
    marks = {i: f"{q}: {a} → {b}" for i, q, a, b in table.changes}
    count = len(table.xs)
    shown = range(count) if count <= limit else sorted(
        set(range(0, count, max(1, count // limit))) | {count - 1} | set(marks))
    rows = [([f"{table.xs[i]:.4g}"] + [f"{table.ys[t][i]:.4g}" for t in table.targets],
             marks.get(i, "")) for i in shown]
    return header, rows
