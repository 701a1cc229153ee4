"""A repeated ``chalk solve`` answered from a compiled question, without sympy or pint.

The first time a question of a given shape is solved (the same targets, presets, pin
names, units and options; any numbers), :func:`remember` stores what the answer took:
the pins the presets and conventions add, each step's closed form as plain data
(:mod:`chalk.symbolic.ir`) with its printed formula and a template for the values, the
cross-checks, and how each quantity is shown. :func:`answer` replays such an entry with
the new numbers and renders it with the same :class:`~chalk.solvers.records.derivation.Derivation`
as the full solver, so the output is the same to the byte.

Only questions whose answer cannot depend on the numbers in any other way are stored:
where a step reads a number the user typed, a straight-line closed form (one root, no
guards; a max() only evaluated forwards, its regime chosen again from the numbers); no
ranges, no stated targets, no placeholders, no pin that could give way to another. Such a
form with a difference in it can amplify rounding (it is not
:func:`~chalk.solvers.analysis.conditioning.cannot_amplify`): the replay measures it at
the new numbers by the solver's own rule (:func:`~chalk.solvers.analysis.conditioning.check`,
against the inputs :func:`~chalk.solvers.analysis.conditioning.measured_inputs` keeps) and
hands the question back wherever the solver would warn or refuse
(``kv_extra_copies = max(t/n_kv_heads, 1) - 1`` follows the typed ``n_chips``). A step
that reads only what the presets and conventions give computes the same value at every
replay, so any closed form the solver took there is stored (a model's size from its
architecture, with its differences of layer counts); and a question with no number typed
at all (presets alone) is a constant of its key, notes included. Each step is stored as the tree
(:mod:`chalk.symbolic.ir`) the engine itself compiled and ran.

At replay, a value outside its quantity's bounds or beyond :data:`MAGNITUDE`, a failed
cross-check, an entry whose digest does not match or whose layout is not one
:func:`remember` writes, or any text the cache cannot read hands the question to the full
solver, which then gives the answer or the error in its own words: a cached answer is
exactly the full solver's answer, or there is none.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass

from chalk.cli import cache
from chalk.solvers.execution.steps import CheckRecord, StepRecord, regime_taken
from chalk.solvers.pinning.pinned import Layer, Pin
from chalk.solvers.records.brief import brief_text
from chalk.solvers.records.counts import fractional_counts
from chalk.solvers.records.derivation import Derivation
from chalk.solvers.records.flags import flag_text, violated
from chalk.solvers.records.notes import Kind, Note
from chalk.symbolic.errors import ChalkError
from chalk.symbolic.ir import evaluate_ir
from chalk.symbolic.parsing import looks_uncertain, parse_number, split_pin
from chalk.symbolic.printing.numbers import UnitDisplay, format_display
from chalk.symbolic.variables import BOUND_RTOL, within_bounds

# Base-unit magnitudes the replay answers for (exact zeros apart). Beyond them the full
# solver's own checks at the solution (log-space gradients, products of several values)
# overflow or underflow and may refuse, so the cache cannot promise the same answer;
# any sensible question lies far inside (training FLOPs ~1e26, a token's price ~1e-7 USD).
MAGNITUDE = (1e-60, 1e60)
# The top of an entry as _freeze writes it; an entry laid out otherwise is ignored, and
# one that differs deeper down raises one of _UNFIT while it is replayed (ignored too)
_LAYOUT = {"targets": list, "conventions": str, "rtol": float,
           "unused": list, "given": list, "pins": list, "steps": list, "checks": list,
           "conditions": list, "variables": dict, "reported": list, "notes": list,
           "relations": dict}
_UNFIT = (KeyError, IndexError, TypeError, ValueError, AttributeError, ZeroDivisionError,
          OverflowError, RecursionError)


@dataclass(frozen=True)
class _Variable:
    """What rendering and checking need of a quantity, read from an entry."""

    name: str
    unit: str
    to_base: float
    display: UnitDisplay
    lower: float | None
    upper: float | None
    allow_zero: bool
    structural: bool = False  # a count of a model's config: flagged when not whole
    description: str = ""

    def admits(self, base_value: float, rtol: float = BOUND_RTOL) -> bool:
        return within_bounds(base_value / self.to_base, self.lower, self.upper,
                             self.allow_zero, rtol)


@dataclass(frozen=True)
class _Relation:
    name: str
    equation: str
    source: str


@dataclass(frozen=True)
class _Model:
    variables: dict
    relations: dict


def shape(args) -> dict | None:
    """What keys a question in the cache: everything but the pins' numbers (None if the
    question is not one the cache holds)."""
    if args.command != "solve" or args.calibrated is not None or args.calibration is not None:
        return None  # a calibrated answer is not cached
    given = []
    try:
        for item in args.given:
            name, value = split_pin(item)
            if looks_uncertain(value):
                return None
            _, unit = parse_number(value)
            given.append([name, unit.strip()])
    except ChalkError:
        return None
    return {"command": "solve", "targets": list(args.targets), "presets": list(args.preset),
            "given": given, "regime": args.regime, "rtol": args.rtol,
            "samples": args.samples, "seed": args.seed, "json": args.json}


def answer(argv: list[str]) -> str | None:
    """The output of ``chalk ARGV`` from the cache, or None to solve it in full."""
    if not argv or argv[0] != "solve" or not cache.enabled() \
            or any(a in ("-h", "--help") for a in argv):
        return None
    from chalk.cli.options import solve_parser

    try:
        args = solve_parser().parse_args(argv)
    except Exception:  # noqa: BLE001 - a usage mistake: the full path says what it is
        return None
    question = shape(args)
    if question is None:
        return None
    entry = cache.load(cache.key(question))
    if entry is None or any(type(entry.get(k)) is not t for k, t in _LAYOUT.items()):
        return None
    try:
        with warnings.catch_warnings():  # numpy's overflow warnings: the checks decide
            warnings.simplefilter("ignore")
            return _replay(entry, args)
    except _UNFIT:
        return None  # an entry that does not fit these numbers: solve in full


def _replay(entry: dict, args) -> str | None:
    variables = {name: _Variable(name, v["unit"], v["to_base"], UnitDisplay(*v["display"]),
                                 v["lower"], v["upper"], v["allow_zero"],
                                 v["count"] is not None, v["count"] or "")
                 for name, v in entry["variables"].items()}
    relations = {name: _Relation(name, r["equation"], r["source"])
                 for name, r in entry["relations"].items()}
    given = []
    for item, spec in zip(args.given, entry["given"], strict=True):
        _, text = split_pin(item)
        number, unit = parse_number(text)
        base = number * spec["factor"]
        if unit.strip() != spec["unit"] or not math.isfinite(base) \
                or not variables[spec["name"]].admits(base) or (base == 0) != spec["zero"]:
            return None
        given.append((spec, base, text.strip()))
    pins: dict[str, Pin] = {}
    for item in entry["pins"]:
        if "given" in item:
            spec, base, text = given[item["given"]]
            pins[spec["name"]] = Pin(spec["name"], base, text, Layer.GIVEN,
                                     replaces=spec["replaces"])
        else:
            pins[item["name"]] = Pin(item["name"], item["value"], item["text"],
                                     Layer(item["layer"]), item["preset"], item["source"],
                                     item["date"], item["note"], item["estimate"],
                                     item["replaces"])
    env = {name: pin.value for name, pin in pins.items()}
    records = []
    for step in entry["steps"]:
        name = step["variable"]
        value = evaluate_ir(step["ir"], env)
        if not isinstance(value, float) or not variables[name].admits(value):
            return None
        if "sides" in step:  # polished on the relation as written, as the solver does
            value = _polished(step, env, value)
        if "measured" in step and _would_speak(step, env, value):
            return None  # the solver notes or refuses this difference here: it answers
        env[name] = value
        regime, note = _regime(step, env)
        records.append(StepRecord((step["relation"],), (name,), None, step["method"],
                                  tuple(step["inputs"]), regime, note,
                                  formula=step["formula"], template=step["template"]))
    checks = []
    for check in entry["checks"]:
        left, right = evaluate_ir(check["lhs"], env), evaluate_ir(check["rhs"], env)
        scale = max(abs(left), abs(right))
        record = CheckRecord(check["relation"], left, right,
                             0.0 if scale == 0 else abs(left - right) / scale)
        if not record.ok(entry["rtol"]):
            return None  # the full solver names the conflict
        checks.append(record)
    sides = [v for c in checks for v in (c.lhs, c.rhs)]
    if not all(_moderate(v) for v in (*env.values(), *sides)):
        return None
    targets = tuple(entry["targets"])
    found = tuple(flag_text(c["quantity"], env[c["quantity"]], c["bound"], c["kind"],
                            c["meaning"], variables[c["quantity"]].display,
                            variables[c["quantity"]].to_base)
                  for c in entry["conditions"]
                  if violated(env[c["quantity"]], c["bound"], c["kind"]))
    # a count that comes out fractional is flagged, as the full solve flags it
    found += fractional_counts(_Model(variables, relations), env,
                               [n for n in env if n not in pins])
    derivation = Derivation(_Model(variables, relations), entry["conventions"], pins,
                            tuple(records), tuple(checks), env,
                            tuple(Note.from_json(n) for n in entry["notes"]),
                            tuple(entry["unused"]),
                            entry["rtol"], (), frozenset(), targets, found,
                            tuple((name, bound) for name, bound in entry["reported"]))
    shown = [format_display(env[n] / variables[n].to_base, variables[n].display)
             for n in env if n in variables]
    if any("*" in text for text in shown):
        return None  # the live printer would tidy it: leave such a value to it
    if args.json:
        results = {t: derivation.json_value(t) for t in targets}
        return json.dumps({"results": results, **derivation.to_dict()}, indent=2)
    headline = [f"{t} = {derivation.show(t)}" for t in targets]
    summary = [*headline, *derivation.reported_lines(), *derivation.flag_lines()]
    if args.brief:
        return brief_text(summary, derivation)
    return "\n".join(summary) + "\n\n" + derivation.text()


def _moderate(value: float) -> bool:
    """Whether a base-unit value is zero or within :data:`MAGNITUDE`."""
    low, high = MAGNITUDE
    return value == 0 or low <= abs(value) <= high


def _polished(step: dict, env: dict, value: float) -> float:
    """A stored step's ``value`` polished on its relation's two sides (the step's
    ``sides``) by the solver's own Newton steps
    (:func:`~chalk.solvers.execution.numeric.polish_root`), where the solver polishes
    (:func:`~chalk.solvers.execution.execute.polishes`)."""
    from chalk.solvers.execution.numeric import polish_root

    lhs, rhs = step["sides"]
    return polish_root(lambda point: evaluate_ir(lhs, point),
                       lambda point: evaluate_ir(rhs, point), env, step["variable"], value)


def _would_speak(step: dict, env: dict, value: float) -> bool:
    """Whether the full solve would warn about, or refuse, the conditioning of a stored
    step's ``value`` at these numbers: the solver's own measure and thresholds
    (:func:`~chalk.solvers.analysis.conditioning.check`) on the stored tree, against the
    inputs it measures (the step's ``measured``)."""
    from chalk.solvers.analysis.conditioning import check
    from chalk.symbolic.errors import IllConditioned

    tree = step["ir"]
    try:
        return bool(check(step["variable"], step["relation"],
                          lambda point: evaluate_ir(tree, point), env, step["measured"],
                          value))
    except IllConditioned:
        return True


def _regime(step: dict, env: dict) -> tuple[str | None, str]:
    """Which argument of a max() (or min()) a forward step took, and the note saying so
    (as the solver says it: :func:`~chalk.solvers.execution.steps.regime_taken`), the
    arguments shown in their own unit."""
    if not step.get("regimes"):
        return None, ""
    args = [(label, float(evaluate_ir(ir, env))) for label, ir in step["regimes"]]
    shown = UnitDisplay(*step["regime_display"])
    return regime_taken(args, step["low_wins"], lambda v: format_display(v, shown))


def _number_free(note: Note) -> bool:
    """Whether a note holds whatever the pins' numbers are (it depends on which pins
    there are): a variant chosen by its markers, absent terms taken out, or a zero default
    or a published headline that gave way (both yield to any pins that determine their
    quantity). An answer with only such notes may be replayed with other numbers."""
    return (note.kind in (Kind.VARIANT, Kind.ABSENT, Kind.HEADLINE)
            or (note.kind is Kind.YIELDED and note.data["zero"] is True))


def _varying(records, given: list[str]) -> set[str]:
    """The quantities whose values follow from a number the user typed: the given pins
    and every step whose closed form, with the forms of the steps before it put in, still
    reads one, in the order the steps ran. The rest are the same at every replay of the
    entry (attention copies beyond the first, ``(n_chips - n_chips / groups) / ...`` with
    one group, are 0 whatever the chips)."""
    varying = set(given)
    forms: dict = {}
    for record in records:
        if not varying.intersection(record.inputs):
            continue
        if record.expression is None:
            varying.update(record.variables)
            continue
        symbols = {s.name: s for s in record.expression.free_symbols}
        form = record.expression.xreplace({symbols[n]: forms.get(n, symbols[n])
                                           for n in record.inputs
                                           if n in varying and n in symbols})
        # a varying quantity with no closed form of its own counts as typed
        if _reads(form, {n for n in varying if n not in forms}):
            varying.update(record.variables)
            forms.update(dict.fromkeys(record.variables, form))
    return varying


def _reads(form, names: set[str]) -> bool:
    """Whether the sympy form depends on a quantity in ``names``: cancelled first where a
    difference could leave nothing of one (otherwise, or where sympy cannot cancel it,
    every quantity it names counts)."""
    from sympy import cancel

    from chalk.solvers.analysis.conditioning import cannot_amplify

    if not any(s.name in names for s in form.free_symbols):
        return False
    if cannot_amplify(form):
        return True
    try:
        form = cancel(form)
    except Exception:  # noqa: BLE001 - a form sympy cannot cancel: taken to depend
        return True
    return any(s.name in names for s in form.free_symbols)


def _one_way(relation, name: str) -> bool:
    """Whether solving ``relation`` for ``name`` can only go one way whatever the
    numbers: a single closed form, without guards, regimes or a note (its conditioning,
    which does depend on them, is measured at each replay: :func:`_would_speak`)."""
    from chalk.solvers.execution.symbolic_solve import DEFAULT_TIMEOUT, solve_relation

    solved = solve_relation(relation, name, DEFAULT_TIMEOUT)
    (candidate, *others) = solved.candidates or (None,)
    return not (others or candidate is None or solved.numeric or solved.note
                or candidate.guards or candidate.regime)


def remember(args, solution) -> bool:
    """Store a solved question for :func:`answer`, if its answer can only depend on the
    numbers through straight-line closed forms; True if stored."""
    if not cache.enabled():
        return False
    question = shape(args)
    if question is None:
        return False
    try:
        entry = _freeze(args, question, solution)
        return entry is not None and cache.store(cache.key(question), cache.sealed(entry))
    except Exception:  # noqa: BLE001 - the answer is already made: a cache never costs it
        return False


def _freeze(args, question: dict, solution) -> dict | None:
    from chalk.solvers.analysis.conditioning import cannot_amplify
    from chalk.solvers.execution.execute import measured_for, polishes
    from chalk.solvers.execution.steps import slot
    from chalk.solvers.pinning.yielding import yield_candidates
    from chalk.solvers.records.flags import bound_value
    from chalk.symbolic.ir import to_ir
    from chalk.symbolic.parsing import parse_unit
    from chalk.symbolic.printing.expressions import plain, substituted
    from chalk.symbolic.printing.quantities import unit_display
    from chalk.symbolic.units import base_factor

    d, plan = solution.derivation, solution.plan
    model = d.model
    given_names = [model.variable(n).name for n, _ in (split_pin(g) for g in args.given)]
    varying = _varying(d.steps, given_names)
    if (solution.uncertainty is not None or solution.stated
            or (given_names and not all(_number_free(n) for n in d.remarks))
            or d.placeholders
            or d.provisional or plan.regime):
        return None
    if d.checks and yield_candidates(model, d.pins, d.targets):
        return None  # a pin might give way at other numbers
    constants = model.constant_values()
    steps = []
    for record in d.steps:
        if record.expression is None or len(record.relations) != 1:
            return None
        relation, name = model.relations[record.relations[0]], record.variables[0]
        if name in varying and not _one_way(relation, name):
            return None  # more than one way this step could go at other numbers
        step = {
            "relation": relation.name, "variable": name, "inputs": list(record.inputs),
            "method": record.method, "ir": to_ir(record.expression, constants),
            "formula": plain(record.expression),
            "template": substituted(record.expression,
                                    {n: slot(i) for i, n in enumerate(record.inputs)}),
        }
        if polishes(relation, name, record.expression):  # as the solver does
            step["sides"] = [to_ir(relation.lhs, constants), to_ir(relation.rhs, constants)]
        if name in varying and not cannot_amplify(record.expression):
            step["measured"] = list(measured_for(model, relation, name, record.expression))
        if relation.regimes:  # a max() evaluated forwards: which argument wins varies
            if args.regime is not None or relation.inside_regime_node(name):
                return None
            step["regimes"] = [[label, to_ir(e, constants)] for label, e in relation.regimes]
            step["low_wins"] = relation.is_min()
            shown = unit_display(model.base_unit_of(relation.regimes[0][1]))
            step["regime_display"] = [shown.text, shown.to_base, shown.ladder]
            if name in varying and not all(cannot_amplify(e) for _, e in relation.regimes):
                return None
        # what a replay would say here must be what the solver said
        if _regime(step, d.values) != (record.regime, record.note):
            return None
        steps.append(step)
    checks = []
    for check in d.checks:
        relation = model.relations[check.relation]
        checks.append({"relation": relation.name, "lhs": to_ir(relation.lhs, constants),
                       "rhs": to_ir(relation.rhs, constants)})
    given = []
    for (typed, unit), name in zip(question["given"], given_names, strict=True):
        pin = d.pins[name]
        # a zero takes terms out of the relations: the entry holds for zero or non-zero
        given.append({"name": name, "typed": typed, "unit": unit,
                      "factor": base_factor(parse_unit(unit)) if unit else 1.0,
                      "replaces": pin.replaces, "zero": pin.value == 0})
    pins = []
    for name, pin in d.pins.items():
        if name in given_names:
            pins.append({"given": given_names.index(name)})
        else:
            pins.append({"name": name, "value": pin.value, "text": pin.text,
                         "layer": int(pin.layer), "preset": pin.preset, "source": pin.source,
                         "date": pin.date, "note": pin.note, "estimate": pin.estimate,
                         "replaces": pin.replaces})
    conditions = [{"quantity": c.quantity, "kind": c.kind, "bound": bound_value(c),
                   "meaning": c.meaning}
                  for c in model.conditions.values() if c.quantity in d.values]
    shown = set(d.pins) | set(d.targets) | {n for r in d.steps
                                             for n in (*r.inputs, *r.variables)}
    shown |= {c["quantity"] for c in conditions}
    variables = {}
    for name in shown:
        v = model.variables[name]
        display = v.display
        variables[name] = {"unit": v.unit, "to_base": v.to_base,
                           "display": [display.text, display.to_base, display.ladder],
                           "lower": v.lower, "upper": v.upper, "allow_zero": v.allow_zero,
                           "count": v.description if v.structural else None}
    used = {r for record in d.steps for r in record.relations} | {c.relation for c in d.checks}
    relations = {r: {"equation": model.relations[r].equation,
                     "source": str(model.relations[r].source)} for r in used}
    return {"targets": list(d.targets), "conventions": d.conventions, "rtol": d.rtol,
            "unused": list(d.unused_pins), "given": given, "pins": pins, "steps": steps,
            "checks": checks, "conditions": conditions, "variables": variables,
            "reported": [list(item) for item in d.reported],
            "notes": [n.to_json() for n in d.remarks],
            "relations": relations}
