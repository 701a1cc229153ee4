"""Structured exceptions.

Every user mistake raises a subclass of :class:`ChalkError` whose ``message`` is
one line naming what was wrong and what to do; the CLI prints it and exits with
status 2. Mistakes in the knowledge base itself raise :class:`KnowledgeError`.
"""

from __future__ import annotations


class ChalkError(Exception):
    """A problem with what the user asked for; ``message`` is one line."""

    exit_status = 2

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class ParseError(ChalkError):
    """Text that is not a value, a unit or a pin chalk can read."""

    def __init__(self, text: str, reason: str, hint: str = ""):
        self.text = text
        self.reason = reason
        shown = text if len(text) <= 60 else text[:57] + "..."
        message = f"cannot read {shown!r}: {reason}"
        if hint:
            message += f"; {hint}"
        super().__init__(message)


class UnknownNameError(ChalkError):
    """A quantity, preset or relation name that does not exist."""

    def __init__(self, name: str, kind: str, suggestions: list[str] | tuple[str, ...] = ()):
        self.name = name
        self.kind = kind
        self.suggestions = tuple(suggestions)
        shown = name if len(name) <= 60 else name[:57] + "..."
        message = f"unknown {kind} {shown!r}"
        if self.suggestions:
            message += "; did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?"
        else:
            message += f"; run 'chalk list' to see every {kind}"
        super().__init__(message)


class UnitError(ChalkError):
    """A unit string naming a unit chalk does not know."""

    def __init__(self, unit: str, reason: str):
        self.unit = unit
        super().__init__(f"unknown unit {unit!r}: {reason}")


class DimensionMismatch(ChalkError):
    """A value whose unit has the wrong dimension for the quantity it is given to."""

    def __init__(self, name: str, given: str, expected: str, given_dim: str, expected_dim: str):
        self.name = name
        self.given = given
        self.expected = expected
        message = (
            f"{name} needs a unit like {expected} ({expected_dim}), "
            f"but {given!r} is {given_dim}"
        )
        super().__init__(message)


class MissingUnit(ChalkError):
    """A bare number given to a quantity that has a unit."""

    def __init__(self, name: str, value: str, expected: str):
        self.name = name
        super().__init__(
            f"{name}={value} has no unit; write it with a unit such as '{value} {expected}'"
        )


class BoundsError(ChalkError):
    """A value outside the range its quantity allows (negative counts, say)."""

    def __init__(self, name: str, value: str, requirement: str):
        self.name = name
        self.value = value
        super().__init__(f"{name}={value} is not allowed: {name} must be {requirement}")


class UnderdeterminedError(ChalkError):
    """The pins do not fix the asked-for quantities.

    ``fixed`` maps a target to the product involving it that the pins do fix (as
    text), where that says more than "missing".
    """

    def __init__(self, targets: list[str], completions: list[tuple[str, ...]],
                 from_inputs: tuple[str, ...] = (), fixed: dict[str, str] | None = None):
        self.targets = tuple(targets)
        self.completions = [tuple(c) for c in completions]
        self.from_inputs = tuple(from_inputs)
        self.fixed = dict(fixed or {})
        super().__init__(self._compose())

    def _compose(self) -> str:
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


class DegenerateError(UnderdeterminedError):
    """Pins that fix only a combination of some quantities, though there are as many as
    the relations need: moving those quantities together leaves every relation holding.
    """

    def __init__(self, names: list[str], completions: list[tuple[str, ...]] | None = None,
                 from_inputs: tuple[str, ...] = (), fixed: dict[str, str] | None = None):
        self.names = tuple(names)
        super().__init__(list(names), completions if completions is not None
                         else [(n,) for n in names], from_inputs, fixed)

    def _compose(self) -> str:
        if self.fixed:
            combos = ", ".join(dict.fromkeys(self.fixed.values()))
            options = " or ".join("{" + ", ".join(c) + "}" for c in self.completions[:6])
            noun = "that combination" if len(set(self.fixed.values())) == 1 else \
                "those combinations"
            return (f"the pins fix only {combos}, not {', '.join(self.targets)} on "
                    f"{'its' if len(self.targets) == 1 else 'their'} own: moving the "
                    f"factors of {noun} together leaves every relation holding; also pin "
                    + (options or "one of the factors"))
        return (f"the pins fix only a combination of {', '.join(self.names)}: changing them "
                "together leaves every relation satisfied; pin one of them")


class InconsistentPins(ChalkError):
    """Over-determined pins that disagree through a relation."""

    def __init__(self, relation: str, equation: str, lhs: str, rhs: str, gap: str,
                 pins: list[str]):
        self.relation = relation
        self.lhs = lhs
        self.rhs = rhs
        self.gap = gap
        self.pins = tuple(pins)
        message = (
            f"pins disagree in relation {relation} ({equation}): left side {lhs}, "
            f"right side {rhs} ({gap}); fix or drop one of: {', '.join(pins)}"
        )
        super().__init__(message)


class NoSolution(ChalkError):
    """The pins admit no physical value for a quantity (e.g. every root negative)."""

    def __init__(self, name: str, reason: str):
        self.name = name
        super().__init__(f"no physical value of {name}: {reason}")


class SearchFailed(NoSolution):
    """A numeric search found no physical value, without proving that none exists."""

    def __init__(self, name: str, reason: str):
        self.name = name
        ChalkError.__init__(self, f"found no physical value of {name}: {reason}")


class IllConditioned(NoSolution):
    """The relation that would give a value barely depends on it: rounding leaves no digit."""

    def __init__(self, name: str, reason: str):
        self.name = name
        ChalkError.__init__(self, f"cannot pin down {name}: {reason}")


class AmbiguousSolution(ChalkError):
    """Several physical values fit; the user must say which regime or root is meant."""

    def __init__(self, name: str, options: list[str], hint: str):
        self.name = name
        self.options = tuple(options)
        super().__init__(f"{name} has several physical values ({'; '.join(options)}); {hint}")


class UsageError(ChalkError):
    """A request that is malformed as a whole (e.g. a quantity both pinned and asked for)."""


class DataError(ChalkError):
    """A data file (preset, price sheet) that fails validation."""

    def __init__(self, path: str, entry: str, field: str, reason: str):
        self.path = path
        self.entry = entry
        self.field = field
        where = "".join(part for part in (
            f", entry {entry!r}" if entry != "-" else "",
            f", field {field!r}" if field != "-" else "") if part)
        super().__init__(f"{path}{where}: {reason}")


class KnowledgeError(Exception):
    """A defect in the knowledge base itself, found when it loads."""
