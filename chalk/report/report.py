"""Scripted deduction reports: run a deduction file into a :class:`Report`.

Each question is solved; a question with ranged pins is solved again with those pins
at the values that give its answer's median (:mod:`chalk.report.ranges`), so the
section shows one number and a derivation that produces it. Each answer is compared
with the number the lecture states for it, where the file records one. Sweeps and
plots are drawn from the same engine. Everything is built in memory before anything
is written; :mod:`chalk.report.markdown` and :mod:`chalk.report.html` render it.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field

from chalk.api import Options, Solution, solve
from chalk.compiled import compile_question
from chalk.report.deduction import DeductionFile, Entry, load
from chalk.report.ranges import MedianPoint, median_point
from chalk.symbolic.errors import ChalkError, UsageError
from chalk.symbolic.parsing import looks_uncertain, parse_spread, parse_unit_cached, parse_value
from chalk.symbolic.presets import PresetValue
from chalk.symbolic.printing.expressions import latex, plain
from chalk.symbolic.printing.numbers import column_scale, format_number
from chalk.symbolic.printing.quantities import format_quantity, unit_display
from chalk.symbolic.units import Q_

VERSION = "0.1.0"


@dataclass(frozen=True)
class Change:
    """One input of an answer: how much the answer moves with it.

    ``elasticity`` is d ln(answer) / d ln(input); ``share`` the input's share of the
    answer's spread (None for an input that is not uncertain).
    """

    name: str
    value: str
    elasticity: float
    share: float | None


@dataclass(frozen=True)
class Comparison:
    """A stated number for an answer (the file's ``compared_with``), shown in the answer's
    unit, and how close."""

    target: str
    stated: str
    at: str
    agreement: str
    source: str = "the lecture"  # whose number it is, as the file names it

    @property
    def said_by(self) -> str:
        """``source`` to open a sentence (``The lecture``, ``My spreadsheet``)."""
        return self.source[:1].upper() + self.source[1:]


@dataclass
class Section:
    """One entry of the deduction file, run.

    ``solution`` is the solve as asked (with its Monte Carlo summary when pins are
    ranges); ``shown`` the one whose derivation is printed: the same, or the re-solve
    at ``point`` (the pins that give the median).
    """

    entry: Entry
    number: int
    solution: Solution | None = None
    shown: Solution | None = None
    point: MedianPoint | None = None
    sweep: object | None = None
    fit: object | None = None  # a FitResult or an Atlas, with .text() and .figure()
    svg: str = ""
    png: bytes = b""
    changes: dict[str, list[Change]] = field(default_factory=dict)
    comparison: Comparison | None = None
    # a sweep's pins and presets that its answers rest on (None: every one is listed)
    used: frozenset[str] | None = None

    @property
    def anchor(self) -> str:
        return f"s{self.number}"

    @property
    def primary(self) -> str:
        """The target a summary row shows: the one the lecture's number is for, else the
        first."""
        if self.entry.stated is not None:
            return self.entry.stated.target
        return self.entry.options["targets"][0] if "targets" in self.entry.options else ""

    def answer(self, target: str) -> str:
        """The answer as shown: one number, labelled (median) with its 90% interval when
        pins are ranges."""
        solution = self.shown or self.solution
        unit = solution.derivation.model.variables[target].pint_unit
        summary = (self.solution.uncertainty.summaries.get(target)
                   if self.solution.uncertainty else None)
        if summary is None:
            line = next(x for x in solution.headline().splitlines()
                        if x.startswith(f"{target} = "))
            return line.split(" = ", 1)[1]
        scale = solution.derivation.model.variables[target].to_base
        low, high = (format_quantity(x / scale, unit) for x in (summary.low, summary.high))
        if self.point is not None:
            value = format_quantity(solution.value(target), unit)
            label = "median" if target == self.point.target else "at the same pins"
        else:
            value, label = format_quantity(summary.median / scale, unit), "median"
        return f"{value} ({label}; 90% interval {low} to {high})"


@dataclass
class Report:
    """A deduction file run: its sections and every assumption they used."""

    file: DeductionFile
    sections: list[Section]
    assumptions: list[dict]
    generated: str

    @property
    def title(self) -> str:
        return self.file.title


def build(name_or_path: str) -> Report:
    """Run every question, sweep and plot of a deduction file (a path, or a shipped
    name such as ``lecture``).

    Raises
    ------
    ChalkError
        A bad file names the file, entry and key; a question that fails names itself.
    """
    from chalk.solvers.bulk.progress import counted

    spec = load(name_or_path)
    sections = []
    for number, entry in enumerate(counted("report sections", spec.entries), 1):
        try:
            sections.append(_run(spec, entry, number))
        except ChalkError as exc:
            raise UsageError(f"{entry.kind[:-1]} '{entry.title}': {exc.message}") from None
    return Report(spec, sections, _assumptions(spec, sections),
                  datetime.date.today().isoformat())


def _run(spec: DeductionFile, entry: Entry, number: int) -> Section:
    pins = {**spec.pins, **entry.pins}
    presets = [*spec.presets, *entry.presets]
    section = Section(entry, number)
    if entry.kind == "questions":
        regime = entry.options.get("regime")
        question = compile_question(entry.options["targets"], pins, presets,
                                    options=Options(regime=regime, samples=spec.samples,
                                                    seed=spec.seed))
        solution = question.solve()
        section.solution = section.shown = solution
        section.point = median_point(solution, section.primary)
        if section.point is not None:
            section.shown = solve(entry.options["targets"],
                                  {**pins, **_at_point(solution, section.point)}, presets,
                                  regime=regime)
        section.changes = _what_would_change(section)
        section.comparison = _compare(section, spec.compared_with)
    elif entry.kind == "sweeps":
        from chalk.applications.sweep import parse_over, sweep

        name, low, high = parse_over(entry.options["over"])
        section.sweep = sweep(entry.options["targets"], name, low, high,
                              int(entry.options.get("steps", 21)),
                              bool(entry.options.get("log", False)), pins, presets)
        section.used = _sweep_inputs(entry.options["targets"], name, low, pins, presets)
    elif entry.kind == "fits":
        from pathlib import Path

        from chalk.applications.plots import render

        if entry.options.get("atlas"):
            from chalk.applications.atlas import atlas

            section.fit = atlas()
        else:
            from chalk.applications.fit import fit

            section.fit = fit(Path(spec.path).parent / entry.options["file"])
        figure = section.fit.figure()
        section.svg = render(figure, "svg", close=False).decode("utf-8")
        section.png = render(figure, "png")
    else:
        from chalk.applications.plots import plot, render

        options = {"sheet": entry.options["sheet"]} if "sheet" in entry.options else {}
        figure = plot(entry.options["name"], pins, presets, **options)
        section.svg = render(figure, "svg", close=False).decode("utf-8")
        section.png = render(figure, "png")
    return section


def _sweep_inputs(targets, over: str, low, pins, presets) -> frozenset[str]:
    """The pins (by name) and presets (by name) a sweep's answers rest on: those the
    question's plan uses at the first point of the grid."""
    from chalk.preparation import used_quantities
    from chalk.solvers.pinning.pinned import Layer

    question = compile_question(targets, {**pins, over: low}, presets)
    prepared = question.prepared
    used = used_quantities(question.model, prepared.plan)
    return frozenset(used | {pin.preset for name, pin in prepared.pins.items()
                             if name in used and pin.layer is Layer.PRESET})


def _at_point(solution: Solution, point: MedianPoint) -> dict[str, PresetValue]:
    """The ranged pins as plain values at ``point``, keeping their sources."""
    d = solution.derivation
    out = {}
    for name, base in point.values.items():
        pin, variable = d.pins[name], d.model.variables[name]
        text = f"{base / variable.to_base!r} {variable.unit}".strip()
        out[name] = PresetValue(text, pin.source, pin.date, f"from the range {pin.text}")
    return out


def _what_would_change(section: Section) -> dict[str, list[Change]]:
    """Every input each answer moves with, at the pins the derivation shows: the
    uncertain ones first by share, then by size of elasticity, ties by name."""
    shown, asked = section.shown, section.solution
    out = {}
    for target in shown.targets:
        summary = asked.uncertainty.summaries.get(target) if asked.uncertainty else None
        shares = dict(summary.sensitivity) if summary is not None else {}
        slopes = dict(shown.elasticities(target))
        rows = []
        for name in sorted(set(slopes) | set(shares)):
            value = shown.derivation.show(name)
            if name in shares:
                value += f" (range {asked.derivation.pins[name].text})"
            rows.append(Change(name, value, slopes.get(name, 0.0), shares.get(name)))
        rows.sort(key=lambda c: (-(c.share or 0.0), -abs(c.elasticity), c.name))
        out[target] = rows
    return out


def _compare(section: Section, source: str) -> Comparison | None:
    stated = section.entry.stated
    if stated is None:
        return None
    solution = section.shown
    variable = solution.derivation.model.variables[stated.target]
    unit = variable.pint_unit
    try:
        if looks_uncertain(stated.value):
            spread = parse_spread(stated.value)
            low, high = (Q_(x, spread.unit).to(unit).magnitude
                         for x in (spread.a, spread.b))
        else:
            parsed = parse_value(stated.value)
            low = high = Q_(parsed.magnitude, parsed.unit).to(unit).magnitude
    except Exception:  # pint's DimensionalityError, or a bare number for a unit
        raise UsageError(f"{source}'s value {stated.value!r} is not in units of "
                         f"{stated.target} ({variable.unit})") from None
    answer = solution.value(stated.target)
    shown = format_quantity(low, unit)
    if high != low:
        shown = f"{shown} to {format_quantity(high, unit)}"
    return Comparison(stated.target, shown, stated.at, agreement(answer, low, high, source),
                      source)


def agreement(answer: float, low: float, high: float, source: str = "the lecture") -> str:
    """How an answer compares with a number ``source`` states (``low == high``) or a range.

    Within half of the stated number the gap reads as a percentage of it (``within
    19%``); further apart, as a ratio (``36.6× the lecture's``). A range reads
    ``inside the lecture's range`` or as a ratio to the nearer end.
    """
    if low != high:
        if low <= answer <= high:
            return f"inside {source}'s range"
        end, word = (high, "upper") if answer > high else (low, "lower")
        return f"{format_number(answer / end, 3)}× its {word} end"
    gap = abs(answer - low) / abs(low)
    if gap < 5e-4:  # equal to the four digits shown
        return "equal"
    if gap <= 0.5:
        return f"within {format_number(100 * gap, 2)}%"
    return f"{format_number(answer / low, 3)}× {source}'s"


def _assumptions(spec: DeductionFile, sections: list[Section]) -> list[dict]:
    """One row per distinct pin (name, value, origin), with the sections that used it.

    Questions contribute the pins their solve used (presets and conventions included);
    sweeps the pins the file gives them that their answers rest on, and plots every pin
    the file gives them.
    """
    rows: dict[tuple, dict] = {}

    def add(name, text, origin, source, date, estimate, number):
        key = (name, text, origin)
        if key not in rows:
            rows[key] = {"name": name, "value": text, "origin": origin, "source": source,
                         "date": date, "estimate": estimate,
                         "range": looks_uncertain(text), "sections": []}
        if number not in rows[key]["sections"]:
            rows[key]["sections"].append(number)

    for section in sections:
        if section.solution is not None:
            for pin in section.solution.derivation.used_pins():
                add(pin.name, pin.text, pin.origin, pin.source, pin.date, pin.estimate,
                    section.number)
        else:
            for name, value in {**spec.pins, **section.entry.pins}.items():
                if section.used is None or name in section.used:
                    add(name, value.text, "given", value.source, value.date, False,
                        section.number)
    return sorted(rows.values(), key=lambda r: (r["name"], r["sections"][0]))


def sweep_columns(table, limit: int = 25) -> tuple[list[str], list[list[str]], list[str]]:
    """A sweep as a table: headers, up to about ``limit`` rows of cells (keeping both
    sides of every regime change) and sentences for the regime changes.

    Each column is shown in one unit, the one :func:`format_quantity` picks for its
    largest value, and in one number format (scientific for the whole column when
    any of its cells would need it).
    """
    columns = [(table.over, table.over_unit, table.x_values)]
    columns += [(t, table.units[t], table.y_values[t]) for t in table.targets]
    headers, cells = [], []
    for name, unit_text, values in columns:
        header, shown = _column(name, unit_text, [float(v) for v in values])
        headers.append(header)
        cells.append(shown)
    count = len(table.x_values)
    sides = {i for index, *_ in table.changes for i in (index - 1, index) if i >= 0}
    shown = range(count) if count <= limit else sorted(
        set(range(0, count, max(1, count // limit))) | {count - 1} | sides)
    rows = [[column[i] for column in cells] for i in shown]
    notes = [f"{quantity} changes from {before} to {after} between {table.over} = "
             f"{cells[0][index - 1]} and {cells[0][index]}"
             for index, quantity, before, after in table.changes if index > 0]
    # what the command line's sweep warns of, the report says too
    notes += [f"Warning: {flag}" for flag in table.flags]
    notes += [f"No solution: {gap}" for gap in table.gaps]
    return headers, rows, notes


def _column(name: str, unit_text: str, values: list[float]) -> tuple[str, list[str]]:
    if unit_text not in ("", "1"):
        # the unit a person would write for the column's largest value
        unit_text, scale = column_scale(values, unit_display(parse_unit_cached(unit_text)))
        values = [v * scale for v in values]
    finite = [abs(v) for v in values if v == v and abs(v) != float("inf") and v != 0]
    scientific = any(not 1e-3 <= v < 1e7 for v in finite)
    shown = [("-" if v != v else f"{v:.3e}" if scientific else format_number(v))
             for v in values]
    header = name if unit_text in ("", "1") else f"{name} [{unit_text}]"
    return header, shown


def step_parts(solution: Solution):
    """Per step: (index, step, equation LaTeX, equation text, substituted text (None where
    it adds nothing: :meth:`~chalk.solvers.records.derivation.Derivation.substitution`),
    result text, citation, closed form or None)."""
    d = solution.derivation
    for index, step in enumerate(d.steps, 1):
        relations = [d.model.relations[r] for r in step.relations]
        cite = "; ".join(f"{r.name}: {r.source}" for r in relations) + f" · {step.method}"
        if step.expression is not None:
            name = step.variables[0]
            equation = f"\\mathrm{{{name.replace('_', chr(92) + '_')}}} = {latex(step.expression)}"
            text = f"{name} = {plain(step.expression)}"
            # a stand-in value (it cancels) is named, never shown as a number
            subst = d.substitution(step)
            result = d.step_result(name)
            yield index, step, equation, text, subst, result, cite, step.expression
        else:
            equation = ", \\quad ".join(f"{latex(r.lhs)} = {latex(r.rhs)}" for r in relations)
            text = "; ".join(r.equation for r in relations)
            result = "; ".join(d.block_results(step))
            yield index, step, equation, text, "solved together", result, cite, None


URL = re.compile(r"https?://[^\s<>\"'()\[\]]+")


def link_parts(text: str) -> list[tuple[str, bool]]:
    """``text`` cut into (piece, is_url) pairs, so a renderer can make each URL a link.

    A URL ends at a space, bracket or quote; a trailing full stop, comma, colon or
    semicolon is left outside it.
    """
    out, start = [], 0
    for match in URL.finditer(text):
        url = match.group(0).rstrip(".,;:")
        if match.start() > start:
            out.append((text[start:match.start()], False))
        out.append((url, True))
        start = match.start() + len(url)
    if start < len(text):
        out.append((text[start:], False))
    return out


def range_note(section: Section) -> str:
    """How the section's one number and its derivation relate to the ranges, or ''."""
    solution, point = section.solution, section.point
    if solution.uncertainty is None:
        return ""
    d = solution.derivation
    if point is None:
        return ("The derivation below is at each range's nominal value (its mid-point, "
                "geometric for a log-uniform range): the answer does not move one way "
                "with the ranges, so no single point gives its median.")
    if point.exact:
        (name, base), = point.values.items()
        variable = d.model.variables[name]
        value = format_quantity(base / variable.to_base, variable.pint_unit)
        return (f"The derivation below is solved again with {name} at its median, "
                f"{value} (of {d.pins[name].text}): {point.target} moves one way with it, "
                f"so that is exactly {point.target}'s median. The interval is from the "
                "Monte Carlo.")
    return (f"The derivation below is solved again with every uncertain pin at its "
            f"{format_number(point.percentile, 3)}th percentile (counted from the top for "
            f"a pin that lowers {point.target}), the point where {point.target} equals "
            "its Monte Carlo median. The interval is from the Monte Carlo.")


def summary_columns(report: Report) -> list[str]:
    """The summary table's headings: the stated number and the agreement only when some
    entry states a number to compare with."""
    head = ["§", "question", "answer"]
    if any(s.comparison is not None for s in report.sections):
        head += [report.file.compared_with, "agreement"]
    return head


def inputs_line(report: Report, section: Section) -> str:
    """What a sweep, plot or fit was given: its presets and pins, as one sentence."""
    entry = section.entry
    if entry.kind == "fits":
        return ("Inputs: every shipped price sheet (chalk atlas)." if entry.options.get("atlas")
                else f"Inputs: the fit file {entry.options['file']} (chalk fit).")
    presets = [str(p) for p in (*report.file.presets, *entry.presets)]
    pins = {**report.file.pins, **entry.pins}
    used = section.used
    unused = [] if used is None else \
        [p for p in presets if p not in used] + [n for n in pins if n not in used]
    presets = [p for p in presets if p not in unused]
    parts = ([f"presets {', '.join(presets)}"] if presets else []) + \
        [f"{n} = {v.text}" for n, v in pins.items() if n not in unused]
    line = "Inputs: " + ("; ".join(parts) if parts else "none") + "."
    return line + (f" Given but not used here: {', '.join(unused)}." if unused else "")
