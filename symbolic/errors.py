"""Structured exceptions.

Every user mistake raises a subclass of :class:`ChalkError` whose ``message`` is
one line naming what was wrong and what to do; the CLI prints it and exits with
status 2. Mistakes in the knowledge base itself raise :class:`KnowledgeError`.

Each error is a dataclass, as pint's are: the offending names and units are fields,
the message is composed from them, and every error also derives from the built-in
type a caller would catch (``ValueError``, ``KeyError``). Errors survive pickling,
so chalk works inside a multiprocessing pool.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields


class _Picklable:
    """Pickle a dataclass exception by its fields (``BaseException`` pickles ``args``)."""

    def __reduce__(self):
        return self.__class__, tuple(getattr(self, f.name) for f in fields(self))

    def __str__(self) -> str:
        return self.message


class ChalkError(_Picklable, Exception):
    """A problem with what the user asked for; ``message`` is one line."""

    exit_status = 2

    @property
    def message(self) -> str:  # pragma: no cover - every concrete error composes its own
        raise NotImplementedError


@dataclass(eq=False)
class ParseError(ChalkError, ValueError):
    """Text that is not a value, a unit or a pin chalk can read."""

    text: str
    reason: str
    hint: str = ""

    @property
    def message(self) -> str:
        shown = self.text if len(self.text) <= 60 else self.text[:57] + "..."
        message = f"cannot read {shown!r}: {self.reason}"
        return message + (f"; {self.hint}" if self.hint else "")


@dataclass(eq=False)
class UnknownNameError(ChalkError, KeyError):
    """A quantity, preset or relation name that does not exist."""

    name: str
    kind: str
    suggestions: tuple[str, ...] = ()

    def __post_init__(self):
        self.suggestions = tuple(self.suggestions)

    @property
    def message(self) -> str:
        shown = self.name if len(self.name) <= 60 else self.name[:57] + "..."
        message = f"unknown {self.kind} {shown!r}"
        if self.suggestions:
            return message + "; did you mean " + " or ".join(
                repr(s) for s in self.suggestions) + "?"
        return message + f"; run 'chalk list' to see every {self.kind}"


@dataclass(eq=False)
class UnitError(ChalkError, ValueError):
    """A unit string naming a unit chalk does not know."""

    unit: str
    reason: str
    suggestions: tuple[str, ...] = ()

    def __post_init__(self):
        self.suggestions = tuple(self.suggestions)

    @property
    def message(self) -> str:
        message = f"unknown unit {self.unit!r}: {self.reason}"
        if self.suggestions:
            return message + "; did you mean " + " or ".join(
                repr(s) for s in self.suggestions) + "?"
        return message


@dataclass(eq=False)
class DimensionMismatch(ChalkError, ValueError):
    """A value whose unit has the wrong dimension for the quantity it is given to."""

    name: str
    given: str
    expected: str
    given_dim: str
    expected_dim: str
    hint: str = ""

    @property
    def message(self) -> str:
        message = (f"{self.name} needs a unit like {self.expected} ({self.expected_dim}), "
                   f"but {self.given!r} is {self.given_dim}")
        return message + (f"; {self.hint}" if self.hint else "")


@dataclass(eq=False)
class MissingUnit(ChalkError, ValueError):
    """A bare number given to a quantity that has a unit."""

    name: str
    value: str
    expected: str

    @property
    def message(self) -> str:
        return (f"{self.name}={self.value} has no unit; write it with a unit such as "
                f"'{self.value} {self.expected}'")


@dataclass(eq=False)
class BoundsError(ChalkError, ValueError):
    """A value outside the range its quantity allows (negative counts, say)."""

    name: str
    value: str
    requirement: str

    @property
    def message(self) -> str:
        return (f"{self.name}={self.value} is not allowed: {self.name} must be "
                f"{self.requirement}")


@dataclass(eq=False)
class UnderdeterminedError(ChalkError, ValueError):
    """The pins do not fix the asked-for quantities.

    ``completions`` are the smallest sets of extra pins that would; ``fixed`` maps a
    target to the product involving it that the pins do fix (as text), where that
    says more than "missing".
    """

    targets: tuple[str, ...]
    completions: tuple[tuple[str, ...], ...] = ()
    from_inputs: tuple[str, ...] = ()
    fixed: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        self.targets = tuple(self.targets)
        self.completions = tuple(tuple(c) for c in (self.completions or ()))
        self.from_inputs = tuple(self.from_inputs)
        self.fixed = dict(self.fixed or {})

    @property
    def message(self) -> str:
        wanted = ", ".join(self.targets)
        completions = self.completions
        # Where two or more pins are missing, say which combination the pins already fix.
        combo = next(iter(self.fixed.values()), "")
        if (len(self.targets) == 1 and combo and completions and len(completions[0]) > 1
                and combo.count("·") + combo.count("/") <= 3):
            wanted += f" (the pins fix only {combo})"
        if len(completions) == 1:
            message = (f"not enough pins to determine {wanted}; also pin "
                       + ", ".join(completions[0]))
        elif completions:
            options = " or ".join("{" + ", ".join(c) + "}" for c in completions[:6])
            message = f"not enough pins to determine {wanted}; also pin one of the sets {options}"
        else:
            message = (
                f"not enough pins to determine {wanted}, and no small set of extra pins "
                "would; run 'chalk explain' to see the plan"
            )
        if self.from_inputs:
            message += "; or, from inputs, pin " + ", ".join(self.from_inputs)
        return message


@dataclass(eq=False)
class DegenerateError(UnderdeterminedError):
    """Pins that fix only a combination of some quantities, though there are as many as
    the relations need: moving those quantities together leaves every relation holding.

    ``targets`` are the quantities concerned; with no ``completions`` given, pinning
    any one of them completes the set.
    """

    def __post_init__(self):
        super().__post_init__()
        if not self.completions:
            self.completions = tuple((n,) for n in self.targets)

    @property
    def names(self) -> tuple[str, ...]:
        return self.targets

    @property
    def message(self) -> str:
        if self.fixed:
            combos = ", ".join(dict.fromkeys(self.fixed.values()))
            options = " or ".join("{" + ", ".join(c) + "}" for c in self.completions[:6])
            noun = "that combination" if len(set(self.fixed.values())) == 1 else \
                "those combinations"
            return (f"the pins fix only {combos}, not {', '.join(self.targets)} on "
                    f"{'its' if len(self.targets) == 1 else 'their'} own: moving the "
                    f"factors of {noun} together leaves every relation holding; also pin "
                    + (options or "one of the factors"))
        return (f"the pins fix only a combination of {', '.join(self.targets)}: changing "
                "them together leaves every relation satisfied; pin one of them")


@dataclass(eq=False)
class InconsistentPins(ChalkError, ValueError):
    """Over-determined pins that disagree through a relation."""

    relation: str
    equation: str
    lhs: str
    rhs: str
    gap: str
    pins: tuple[str, ...]
    difference: float = 0.0  # relative, |lhs - rhs| / max(|lhs|, |rhs|)
    # the conventions' defaults the failing check rests on (named before ``pins``, which
    # then holds only the user's and the presets' pins), and each one's value as shown
    defaults: tuple[str, ...] = ()
    default_values: tuple[str, ...] = ()

    def __post_init__(self):
        self.pins = tuple(self.pins)
        self.defaults = tuple(self.defaults)
        self.default_values = tuple(self.default_values)

    @property
    def message(self) -> str:
        message = (f"pins disagree in relation {self.relation} ({self.equation}): left side "
                   f"{self.lhs}, right side {self.rhs} ({self.gap}); ")
        if self.defaults:
            message += (f"it rests on the conventions' {self._defaults_text()}: pin your own "
                        f"value{'s' if len(self.defaults) > 1 else ''}, or ")
        return message + f"fix or drop one of: {', '.join(self.pins)}"

    def _defaults_text(self) -> str:
        """``default a = 2 FLOP/param/token`` or ``defaults a = b = 1``: names that share
        a value are written together."""
        shared: dict[str, list[str]] = {}
        for name, value in zip(self.defaults, self.default_values, strict=True):
            shared.setdefault(value, []).append(name)
        said = ", ".join(" = ".join((*names, value)) for value, names in shared.items())
        return f"default{'s' if len(self.defaults) > 1 else ''} {said}"


@dataclass(eq=False)
class PastDefaultBound(InconsistentPins):
    """A pin set against the bound the conventions' defaults give it, each default at a
    bound of its own quantity (a measured rate against the roofline at peak efficiency).

    ``measured`` is the user's pin in the failing relation, ``given`` its value and
    ``bound`` what the other pins give it at the defaults; ``side`` says how the two stand
    (``4.01x below``). ``bounded`` are the defaults on a bound of their quantity (the
    rest of ``defaults`` are on none: a FLOP count). ``readers`` are those that, moved off
    their bound (``within``, ``below 1``), would close the gap, the one the answer turns
    on where it stands first (a memory-bound step: the bandwidth efficiency); with none,
    the pin is beyond what any value of them allows and ``pins`` holds what to fix.
    """

    measured: str = ""
    given: str = ""
    bound: str = ""
    side: str = ""
    bounded: tuple[str, ...] = ()
    readers: tuple[str, ...] = ()
    within: str = ""

    def __post_init__(self):
        super().__post_init__()
        self.bounded = tuple(self.bounded)
        self.readers = tuple(self.readers)

    @property
    def message(self) -> str:
        message = (f"pins disagree in relation {self.relation}: at the conventions' "
                   f"{self._defaults_text()} the bound is {self.measured} = {self.bound}; you "
                   f"gave {self.given}, {self.side} it")
        if self.readers:
            others = f" (or {', '.join(self.readers[1:])})" if len(self.readers) > 1 else ""
            return (message + f"; ask for {self.readers[0]}{others}, or pin one, to read the "
                    f"gap as a value {self.within}")
        return (message + f", and no {' or '.join(self.bounded)} {self.within} reaches "
                "it: a pin cannot beat a physical bound; fix or drop one of: "
                f"{', '.join(self.pins)}")


@dataclass(eq=False)
class RangeDisagrees(ChalkError, ValueError):
    """A ranged or distributed pin that the other pins determine, outside its range."""

    name: str
    claimed: str  # the pin's range, or its 90% interval
    derived: str  # what the other pins give (a value or a 90% interval)
    pins: tuple[str, ...]

    def __post_init__(self):
        self.pins = tuple(self.pins)

    @property
    def message(self) -> str:
        return (f"{self.name}: {', '.join(self.pins)} give {self.derived}, which does not "
                f"overlap your {self.claimed}; widen the range or drop one of: "
                f"{', '.join((self.name, *self.pins))}")


@dataclass(eq=False)
class NoSolution(ChalkError, ValueError):
    """The pins admit no physical value for a quantity (e.g. every root negative).

    ``after_search`` names the quantities of an earlier step that this one was computed
    from and that a search did not prove unique: then "none" holds only for the values
    that search found, which rules out that path but proves nothing about the question.
    """

    name: str
    reason: str
    after_search: tuple[str, ...] = ()

    @property
    def message(self) -> str:
        return f"no physical value of {self.name}: {self.reason}"


@dataclass(eq=False)
class SearchFailed(NoSolution):
    """A numeric search found no physical value, without proving that none exists."""

    @property
    def message(self) -> str:
        return f"found no physical value of {self.name}: {self.reason}"


@dataclass(eq=False)
class IllConditioned(NoSolution):
    """The relation that would give a value barely depends on it: rounding leaves no digit."""

    @property
    def message(self) -> str:
        return f"cannot pin down {self.name}: {self.reason}"


@dataclass(eq=False)
class RoundedUp(NoSolution):
    """A whole count is known and the quantity it rounds (up or down) is asked: every value
    of an interval rounds to the same count, so none is the answer (``reason`` names it)."""

    @property
    def message(self) -> str:
        return f"cannot recover {self.name} from a whole count: {self.reason}"


@dataclass(eq=False)
class AmbiguousSolution(ChalkError, ValueError):
    """Several physical values fit; the user must say which regime or root is meant.

    ``step`` and ``count`` are set when one step of a plan has ``count`` discrete
    solutions (roots, a block's solutions), so that each can be followed through the
    rest of the plan; ``solutions`` holds, for an ambiguity that survived the whole
    plan, every complete solution (base units) with the pins.
    """

    name: str
    options: tuple[str, ...]
    hint: str
    step: int | None = None
    count: int = 0
    solutions: tuple = ()

    def __post_init__(self):
        self.options = tuple(self.options)

    @property
    def message(self) -> str:
        return (f"{self.name} has several physical values ({'; '.join(self.options)}); "
                f"{self.hint}")


@dataclass(eq=False)
class UsageError(ChalkError, ValueError):
    """A request that is malformed as a whole (e.g. a quantity both pinned and asked for)."""

    detail: str

    @property
    def message(self) -> str:
        return self.detail


@dataclass(eq=False)
class DataError(ChalkError, ValueError):
    """A data file (preset, price sheet) that fails validation."""

    path: str
    entry: str
    field: str
    reason: str

    @property
    def message(self) -> str:
        where = "".join(part for part in (
            f", entry {self.entry!r}" if self.entry != "-" else "",
            f", field {self.field!r}" if self.field != "-" else "") if part)
        return f"{self.path}{where}: {self.reason}"

@dataclass(eq=False)
class BeyondSearch(ChalkError, ValueError):
    """An optimum on an edge of the range searched: the answer lies beyond it, and the
    edge is not an answer."""

    name: str
    side: str  # "above" or "below"
    bound: str  # the edge, as text with its unit
    question: str  # what was searched for, e.g. "the compute-optimal model at 1e+35 FLOP"

    @property
    def message(self) -> str:
        edge = "largest" if self.side == "above" else "smallest"
        return (f"{self.question}: the best {self.name} is {self.side} {self.bound}, the "
                f"{edge} value searched; the answer is beyond the range searched")


_SHOWN = 120  # longest path quoted whole in a message


def shown_path(path) -> str:
    """A path as a message quotes it: as typed when that is plain and short, else quoted
    or cut, so the message stays one readable line."""
    text = os.fspath(path)
    if len(text) > _SHOWN:
        text = text[:_SHOWN - 3] + "..."
    plain = text and text.isprintable() and text == text.strip()
    return text if plain else repr(text)


@dataclass(eq=False)
class OutputError(ChalkError, ValueError):
    """A destination chalk will not or cannot write, and why."""

    path: str
    reason: str

    @property
    def message(self) -> str:
        return f"cannot write {shown_path(self.path)}: {self.reason}"


@dataclass(eq=False)
class KnowledgeError(_Picklable, Exception):
    """A defect in the knowledge base itself, found when it loads."""

    detail: str

    @property
    def message(self) -> str:
        return self.detail
