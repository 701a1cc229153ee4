"""The observation system: parameters in, log predictions and their Jacobian out.

Each subject's relations are the knowledge base's, asked forwards: the unknowns and the
fixed pins are pins, the observed quantities are targets, and the compiled question
(:func:`chalk.compiled.compile_question`) evaluates them on arrays, each prediction
the answer ``chalk.solve`` gives at those values (NaN where it refuses). Subjects whose
questions have the same shape (presets, pinned names, observed quantities) share one
compiled question and are evaluated together, one array element per subject: this is
what keeps a fit of a hundred observations fast. A parameter is one unknown quantity
for one group of subjects (all of them, one subject, or the subjects sharing a label),
named ``quantity`` or ``quantity@group``; subject ids only ever key dictionaries.

The Jacobian is taken by central differences in log space (step ``STEP`` in ln), all
perturbations in one vectorised evaluation per shape; for a product of powers it is
exact up to rounding (about 1e-10).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from chalk.applications.fit.spec import ALL, SUBJECT, FitSpec, Subject, Unknown
from chalk.symbolic.errors import ChalkError, UsageError
from chalk.symbolic.model import Model
from chalk.symbolic.uncertain import Spread

STEP = 1e-5  # central-difference step in ln(value)


@dataclass(frozen=True)
class Parameter:
    """One estimated value: an unknown quantity for one group of subjects."""

    name: str
    quantity: str
    group: str  # "" when shared by all subjects
    prior: Spread
    to_base: float
    unit: object  # the quantity's declared pint unit


@dataclass
class _Shape:
    """Subjects answered by one compiled question."""

    question: object  # the CompiledQuestion every subject of the shape is asked
    targets: tuple[str, ...]
    used: tuple[str, ...]  # unknown quantities the targets depend on
    fixed_names: tuple[str, ...]
    subjects: list[str] = field(default_factory=list)
    params: list[dict[str, int]] = field(default_factory=list)  # per subject: quantity -> index
    fixed: list[dict[str, float]] = field(default_factory=list)  # per subject: base values
    fixed_arrays: dict[str, np.ndarray] = field(default_factory=dict)  # name -> per subject


def parameter_name(unknown: Unknown, subject: Subject) -> tuple[str, str]:
    """The parameter an unknown is for a subject, and its group."""
    if unknown.per == ALL or not subject.name:
        return unknown.quantity, ""
    group = subject.name if unknown.per == SUBJECT else subject.labels[unknown.per]
    return f"{unknown.quantity}@{group}", group


def merge_repeats(spec: FitSpec) -> tuple[FitSpec, dict[int, int], list[str]]:
    """Count once the observations that repeat another: the same stated source, quantity,
    value and uncertainty, for subjects asked the same question (same presets, pins and
    parameters). A number copied into several places by one source is one measurement;
    counted again it would narrow every interval as if it were independent.

    Returns the spec with each repeat dropped, each dropped observation's index mapped
    to the index of the one it repeats, and a note per kept observation that had
    repeats.
    """
    subjects = {s.name: s for s in spec.subjects}
    kept, repeats = {}, {}
    for o in spec.observations:
        if not o.source:
            continue
        s = subjects.get(o.subject, Subject(""))
        question = (spec.presets + s.presets, tuple(sorted({**spec.pins, **s.pins}.items())),
                    tuple(parameter_name(u, s)[0] for u in spec.unknowns))
        key = (o.source, o.quantity, o.value, o.log_sd, question)
        if key in kept:
            repeats.setdefault(kept[key], []).append(o.index)
        else:
            kept[key] = o.index
    if not repeats:
        return spec, {}, []
    dropped = {i for group in repeats.values() for i in group}
    notes = [f"observation{'s' if len(group) > 1 else ''} "
             f"{', '.join(f'[{i}]' for i in group)} repeat{'' if len(group) > 1 else 's'} "
             f"[{first}] (same source, quantity, value and question) and "
             f"{'are' if len(group) > 1 else 'is'} counted once with it"
             for first, group in repeats.items()]
    observations = tuple(o for o in spec.observations if o.index not in dropped)
    return (replace(spec, observations=observations),
            {i: first for first, group in repeats.items() for i in group}, notes)


class System:
    """Observations as functions of the log parameters.

    Parameters
    ----------
    spec : FitSpec
    model : Model
    """

    def __init__(self, spec: FitSpec, model: Model):
        from chalk.solvers.bulk.progress import task

        self.spec = spec
        self.model = model
        self.parameters: list[Parameter] = []
        index: dict[str, int] = {}
        subjects = spec.subjects or (Subject(""),)
        observed = {s.name: [] for s in subjects}
        for o in spec.observations:
            observed[o.subject].append(o)
        self.notes: list[str] = [f"subject {s.name} has no observations and is left out"
                                 for s in subjects if not observed[s.name]]
        shapes: dict[tuple, _Shape] = {}
        # per observation: ("direct", parameter) or ("shape", key, subject position, target)
        self._where: list[tuple] = []
        places: dict[tuple[str, str], tuple] = {}
        with task("fit: setting up subjects", len(subjects)) as progress:
            for s in subjects:
                if observed[s.name]:
                    self._place(s, observed[s.name], index, shapes, places)
                progress.advance()
        self._shapes = shapes
        self._where = [places[(o.subject, o.quantity)] for o in spec.observations]
        self._gather()
        self.observed = np.log([o.value for o in spec.observations])
        self.sigma = np.array([o.log_sd for o in spec.observations])

    def _place(self, s: Subject, observed: list, index: dict[str, int],
               shapes: dict[tuple, _Shape], places: dict[tuple[str, str], tuple]) -> None:
        """Give subject ``s`` its parameters (new ones appended, found in ``index``), its
        question shape (in ``shapes``) and, in ``places``, where each of its observed
        quantities is predicted."""
        slots = {}
        for u in self.spec.unknowns:
            name, group = parameter_name(u, s)
            if name not in index:
                variable = self.model.variables[u.quantity]
                index[name] = len(self.parameters)
                self.parameters.append(Parameter(name, u.quantity, group, u.prior,
                                                 variable.to_base, variable.pint_unit))
            slots[u.quantity] = index[name]
        targets = tuple(sorted({o.quantity for o in observed} - set(slots)))
        if targets:
            key, shape = self._shape(s, slots, targets, shapes)
            shape.subjects.append(s.name)
            shape.params.append(slots)
            shape.fixed.append(self._fixed_values(s))
            for t in targets:
                places[(s.name, t)] = ("shape", key, len(shape.subjects) - 1, t)
        for q, i in slots.items():
            places[(s.name, q)] = ("direct", i)

    def _gather(self) -> None:
        """Index arrays that place each shape's answers and slopes in the observations'
        order, so evaluating needs no loop over observations."""
        direct = [(i, w[1]) for i, w in enumerate(self._where) if w[0] == "direct"]
        self._direct = tuple(np.array(a, dtype=int).reshape(-1) for a in
                             (zip(*direct, strict=True) if direct else ([], [])))
        self._places = {}  # shape key -> target -> (observations, subject positions)
        for i, w in enumerate(self._where):
            if w[0] == "shape":
                _, key, position, target = w
                self._places.setdefault(key, {}).setdefault(target, ([], []))
                self._places[key][target][0].append(i)
                self._places[key][target][1].append(position)
        for targets in self._places.values():
            for t, (rows, positions) in targets.items():
                targets[t] = (np.array(rows, dtype=int), np.array(positions, dtype=int))
        for shape in self._shapes.values():
            shape.fixed_arrays = {name: np.array([f[name] for f in shape.fixed])
                                  for name in shape.fixed_names}
        # shape key -> quantity -> parameter index per subject of the shape
        self._slots = {key: {q: np.array([slots[q] for slots in shape.params], dtype=int)
                             for q in {q for slots in shape.params for q in slots}}
                       for key, shape in self._shapes.items()}

    # building -----------------------------------------------------------------------
    def _pins_of(self, s: Subject) -> dict[str, str]:
        return {**self.spec.pins, **s.pins}

    def _fixed_values(self, s: Subject) -> dict[str, float]:
        from chalk.solvers.pinning.pins import read_value

        return {n: read_value(self.model.variables[n], text)[0]
                for n, text in self._pins_of(s).items()}

    def _shape(self, s: Subject, slots, targets, shapes) -> tuple[tuple, _Shape]:
        pins = self._pins_of(s)
        fixed = self._fixed_values(s)
        presets = self.spec.presets + s.presets
        key = (presets, tuple(sorted((n, fixed[n] == 0) for n in pins)), targets,
               tuple(sorted(slots)))
        if key in shapes:
            return key, shapes[key]
        where = f"subject {s.name}" if s.name else "the observations"
        try:
            shape = _Shape(*_compile_shape(self.model, presets, tuple(sorted(pins.items())),
                                           targets, tuple(self.spec.unknowns)))
        except ChalkError as exc:
            raise UsageError(f"{where}: {exc.message}") from None
        shapes[key] = shape
        return key, shape

    # evaluating ---------------------------------------------------------------------
    def predict(self, x: np.ndarray, jacobian: bool = False):
        """ln of every observation's prediction at log parameters ``x``, and with
        ``jacobian`` the matrix d ln prediction / d x (observations by parameters)."""
        n, p = len(self._where), len(self.parameters)
        out = np.empty(n)
        jac = np.zeros((n, p)) if jacobian else None
        rows, columns = self._direct
        out[rows] = x[columns]
        if jacobian:
            jac[rows, columns] = 1.0
        theta = np.exp(x)
        for key, shape in self._shapes.items():
            slots = self._slots[key]
            if jacobian:  # the point, then each used quantity up and down by STEP
                thetas = np.tile(theta, (1 + 2 * len(shape.used), 1))
                for j, q in enumerate(shape.used):
                    thetas[1 + 2 * j, slots[q]] *= np.exp(STEP)
                    thetas[2 + 2 * j, slots[q]] *= np.exp(-STEP)
            else:
                thetas = theta[None, :]
            logs = self._evaluate(shape, slots, thetas)
            for t, (where, positions) in self._places[key].items():
                out[where] = logs[t][0, positions]
                for j, q in enumerate(shape.used if jacobian else ()):
                    slope = (logs[t][1 + 2 * j] - logs[t][2 + 2 * j]) / (2 * STEP)
                    jac[where, slots[q][positions]] += slope[positions]
        return (out, jac) if jacobian else out

    def predict_many(self, xs: np.ndarray) -> np.ndarray:
        """:meth:`predict` at each row of ``xs`` (points by parameters), in one
        evaluation per shape: points by observations."""
        out = np.empty((len(xs), len(self._where)))
        rows, columns = self._direct
        out[:, rows] = xs[:, columns]
        thetas = np.exp(xs)
        for key, shape in self._shapes.items():
            logs = self._evaluate(shape, self._slots[key], thetas)
            for t, (where, positions) in self._places[key].items():
                out[:, where] = logs[t][:, positions]
        return out

    def _evaluate(self, shape: _Shape, slots: dict, thetas: np.ndarray) -> dict:
        """ln of each target for every subject of ``shape`` at each row of ``thetas``
        (points by parameters): target -> points by subjects."""
        points, count = len(thetas), len(shape.subjects)
        changeable = set(shape.question.pins)
        pins = {name: np.tile(values, points) for name, values in shape.fixed_arrays.items()
                if name in changeable}
        for name, index in slots.items():
            if name in changeable:
                pins[name] = thetas[:, index].ravel()
        raw = shape.question.evaluate(pins).values
        out = {}
        for t in shape.targets:
            v = np.broadcast_to(np.asarray(raw[t], dtype=float), (points * count,))
            with np.errstate(all="ignore"):
                out[t] = np.log(np.where(v > 0, v, np.nan)).reshape(points, count)
        return out

    def confirm(self, x: np.ndarray) -> None:
        """Solve each subject's question in full at log parameters ``x``, as
        ``chalk.solve`` would with those values given.

        Raises
        ------
        ChalkError
            Naming the subject, where solve refuses there (several physical values, a
            search that failed, pins that disagree) or where a prediction rests on a
            value held as a placeholder: a fit must not rest on what solve would not
            answer.
        """
        from chalk.solvers.bulk.progress import task

        theta = np.exp(x)
        count = sum(len(shape.subjects) for shape in self._shapes.values())
        with task("fit: checking subjects at the estimate", count) as progress:
            for shape in self._shapes.values():
                for position, subject in enumerate(shape.subjects):
                    self._confirm_one(shape, position, subject, theta)
                    progress.advance()

    def _confirm_one(self, shape: _Shape, position: int, subject: str,
                     theta: np.ndarray) -> None:
        """:meth:`confirm` for the subject at ``position`` of ``shape``."""
        changeable = set(shape.question.pins)
        values = dict(shape.fixed[position])
        values.update({q: float(theta[i]) for q, i in shape.params[position].items()})
        where = f"subject {subject}" if subject else "the observations"
        try:
            solution = shape.question.solve({n: v for n, v in values.items()
                                             if n in changeable})
        except ChalkError as exc:
            raise UsageError(f"{where}, at the estimate: {exc.message}") from None
        for t in shape.targets:
            if solution.base_value(t) is None:
                raise UsageError(f"{where}: {t} is not fixed at the estimate (it rests on a "
                                 "value held as a placeholder); pin what it depends on")

    def describe(self, i: int) -> tuple[str, str]:
        """An observation's quantity and subject."""
        o = self.spec.observations[i]
        return o.quantity, o.subject


@lru_cache(maxsize=64)
def _compile_shape(model: Model, presets: tuple[str, ...], pins: tuple, targets: tuple,
                   unknowns: Sequence[Unknown]) -> tuple:
    """Plan and compile one question shape (cached: repeated fits of one structure, as in
    a recovery study, plan once)."""
    from chalk.compiled import compile_question
    from chalk.symbolic.units import Q_

    given = dict(pins)
    for u in unknowns:
        variable = model.variables[u.quantity]
        given[u.quantity] = Q_(u.prior.nominal / variable.to_base, variable.pint_unit)
    question = compile_question(targets, given, presets, model=model)
    q = question.prepared
    if not q.plan.determined:
        raise q.plan.underdetermined_error()
    names = {u.quantity for u in unknowns}
    for relation in q.plan.checks:
        tied = sorted(names & q.model.variables_in(relation))
        if tied:
            others = sorted(set(q.plan.analysis.check_pins(q.model, relation)) - set(tied))
            raise UsageError(f"relation {relation} ties the unknown {', '.join(tied)} to "
                             f"{', '.join(others) or 'the other unknowns'}; estimate fewer of "
                             "them or drop the pins that fix it")
    used = tuple(sorted(names - set(q.plan.unused_pins)))
    return (question, targets, used, tuple(sorted(n for n, _ in pins)))
