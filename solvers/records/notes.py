"""Notes as data: what a question set aside or settled, and why, rendered only at the edge.

A :class:`Note` is a :class:`Kind` and the names and values it is about. Preparation and
the solve add notes; the command line, :class:`~chalk.solvers.records.derivation.Derivation`
text, explanations and reports render them with :meth:`Note.text`, and code that must
tell notes apart (which answers the question cache may replay) reads their kind. The
data is plain JSON-ready values, so a note round-trips through the cache
(:meth:`Note.to_json`, :meth:`Note.from_json`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from chalk.symbolic.printing.numbers import format_gap


class Kind(StrEnum):
    """What a note is about.

    variant
        A kind of model was chosen (its markers are pinned); the other kinds' relations
        are set aside. Data: ``chosen``, ``set_aside`` (relation names).
    yielded
        A conventions or preset value gave way to higher layers that determine it.
        Data: ``origin``, ``shown`` (the value as written), ``name``, ``behind`` (the
        pins that determine it), ``zero`` (whether it was a zero: absence).
    headline
        A published headline size gave way to the architecture it rounds. Data as
        ``yielded``.
    overridden
        A user's pin stands over what presets alone derive for it. Data: ``name``,
        ``given`` and ``implied`` (shown), ``presets``, ``conventions``, ``gap``,
        ``agree``, ``relation`` (the relation set aside).
    absent
        Zeros were put in: relations that hold identically or only define an absent
        quantity are set aside. Data: ``set_aside``.
    unreported
        Quantities a condition reports beside the answers could not be solved. Data:
        ``names``, ``reason``.
    set_aside
        A ranged pin the other pins determine, judged against what they give. Data:
        ``name``, ``behind`` (the pins that determine it), ``derived`` and ``claimed``
        (shown), ``spread`` (whether the derived value is an interval).
    settled
        How the solve settled several solutions or max() regimes. Data: ``how``, and
        with ``how`` = ``regimes`` the ``regimes`` that hold and ``whole_block``
        (whether the block as a whole needed a multi-start search first); ``forks``:
        the ``step`` (counted from 1), its ``name``, the ``count`` of physical solutions,
        ``same`` (every one gives the same targets) and ``set_aside`` (why each other
        one failed); ``multi_start``: the ``step`` and its ``variables``.
    count
        A count of a model's config derived from pins that are no counts. Data:
        ``name``, ``others``.
    stated
        A target a preset or the conventions state, answered with the statement.
        Data: ``target``, ``origin``, ``stated``, ``derived`` (shown, or None when the
        other pins give nothing to check it against), ``gap``, ``agree``, ``unsolved``
        (why the other pins' value could not be solved, or None).
    derived
        A stated target answered with what the other pins derive. Data: ``target``,
        ``derived``, ``origin``, ``stated``, ``behind`` (the pins that outrank the
        statement, empty when the derivation was preferred), ``gap``, ``agree``.
    held
        A stated count of the model's config kept, though serving figures would derive
        it. Data: ``target``, ``origin``, ``stated``.
    """

    VARIANT = "variant"
    YIELDED = "yielded"
    HEADLINE = "headline"
    OVERRIDDEN = "overridden"
    ABSENT = "absent"
    UNREPORTED = "unreported"
    SET_ASIDE = "set_aside"
    SETTLED = "settled"
    COUNT = "count"
    STATED = "stated"
    DERIVED = "derived"
    HELD = "held"


@dataclass(frozen=True)
class Note:
    """One note: its kind and the names and values it is about (see :class:`Kind`)."""

    kind: Kind
    data: Mapping[str, object] = field(default_factory=dict, hash=False)

    def __post_init__(self):
        # lists (as JSON gives them back) are held as tuples: a note read back from the
        # cache equals the one written
        object.__setattr__(self, "kind", Kind(self.kind))
        object.__setattr__(self, "data", {k: tuple(v) if isinstance(v, list) else v
                                          for k, v in dict(self.data).items()})

    def text(self, names: Callable[[Sequence[str]], str] | None = None) -> str:
        """The note in words, for a reader of the answer.

        ``names`` shows each list of names the note carries (all of them, comma-separated,
        unless given: a brief output passes one that names a few and counts the rest).
        """
        return _RENDER[self.kind](self.data, names or _joined)

    def to_json(self) -> dict:
        """``{"kind": ..., "data": ...}``, JSON-ready."""
        return {"kind": self.kind.value, "data": dict(self.data)}

    @classmethod
    def from_json(cls, item: Mapping) -> Note:
        """The note :meth:`to_json` wrote.

        Raises
        ------
        ValueError, TypeError, KeyError
            If ``item`` is not one :meth:`to_json` writes.
        """
        return cls(Kind(item["kind"]), dict(item["data"]))


def texts(notes) -> tuple[str, ...]:
    """Each note in words, in order."""
    return tuple(n.text() for n in notes)


def _joined(names) -> str:
    return ", ".join(names)


def _verdict(data, differ: str) -> str:
    gap = format_gap(data["gap"])
    return f"they agree ({gap})" if data["agree"] else f"{differ}{gap}"


def _variant(d, names) -> str:
    return (f"the model is read as {' and '.join(d['chosen'])} (the pins name its parts), "
            f"so the other kinds' relations are not used: {names(d['set_aside'])}")


def _yielded(d, names) -> str:
    instead = "left out as zero" if d["zero"] else f"taken as {d['shown']}"
    return f"{d['name']} is computed from {names(d['behind'])}, not {instead} ({d['origin']})"


def _headline(d, names) -> str:
    if d["origin"].startswith("conventions"):  # a default, not a publication
        return (f"{d['name']} is computed from {names(d['behind'])}, not the default "
                f"{d['shown']} of {d['origin']}")
    source = (f"the architecture ({names(d['behind'])})" if d.get("architecture", True)
              else names(d["behind"]))
    return (f"{d['name']} is computed from {source}, "
            f"not the published {d['shown']} of {d['origin']}")


def _overridden(d, names) -> str:
    presets = d["presets"]
    origin = (f"preset {presets[0]} gives" if len(presets) == 1
              else f"presets {' and '.join(presets)} give" if presets
              else f"conventions {d['conventions']} give")
    return (f"{d['name']}: you gave {d['given']}; {origin} {d['implied']}: "
            f"{_verdict(d, '')} (relation {d['relation']} set aside: your value stands)")


def _absent(d, names) -> str:
    return ("relations left out because a quantity in them is zero (a part the model or "
            f"deployment does not have): {names(d['set_aside'])}")


def _stated(d, names) -> str:
    head = f"{d['target']}: {d['origin']} states {d['stated']}; "
    if d["derived"] is not None:
        return head + f"the other pins give {d['derived']}; {_verdict(d, 'they differ: ')}"
    if d["unsolved"] is not None:
        return head + f"the other pins would give it but cannot be solved ({d['unsolved']})"
    return head + "the other pins do not determine it, so there is nothing to check it against"


def _derived(d, names) -> str:
    why = f", set aside: {names(d['behind'])} determine it" if d["behind"] else ""
    return (f"{d['target']}: the pins give {d['derived']}; {d['origin']} states "
            f"{d['stated']}{why}; {_verdict(d, 'they differ: ')}")


def _settled(d) -> str:
    if d["how"] == "regimes":
        block = (" (the block as a whole needed a multi-start search)" if d["whole_block"]
                 else "")
        return (f"solved in each combination of max() regimes{block}: only {d['regimes']} "
                "holds at the solution")
    if d["how"] == "multi_start":
        return (f"step {d['step']} ({', '.join(d['variables'])}) is one solution a "
                "multi-start search found; others may exist: pin one of its quantities to "
                "make the answer unique")
    said = f"step {d['step']} ({d['name']}) has {d['count']} physical solutions"
    if d["same"]:
        return f"{said}; the targets are the same with each"
    return (f"{said}; only one carries through the rest"
            + (" (set aside: " + "; ".join(d["set_aside"]) + ")" if d["set_aside"] else ""))


_RENDER: dict[Kind, Callable[[Mapping, Callable], str]] = {
    Kind.VARIANT: _variant,
    Kind.YIELDED: _yielded,
    Kind.HEADLINE: _headline,
    Kind.OVERRIDDEN: _overridden,
    Kind.ABSENT: _absent,
    Kind.UNREPORTED: lambda d, names: f"{names(d['names'])} not reported: {d['reason']}",
    Kind.SET_ASIDE: lambda d, names: (
        f"{d['name']}: {', '.join(d['behind'])} give {d['derived']}, which "
        f"{'overlaps' if d['spread'] else 'lies inside'} your {d['claimed']}: the derived "
        "value is used, and your range is its cross-check"),
    Kind.SETTLED: lambda d, names: _settled(d),
    Kind.COUNT: lambda d, names: (f"{d['name']} is a count of the model's config, here "
                                  f"derived from {names(d['others'])}: one that is not "
                                  "whole is flagged"),
    Kind.STATED: _stated,
    Kind.DERIVED: _derived,
    Kind.HELD: lambda d, names: (f"{d['target']}: {d['origin']} states {d['stated']}; a "
                                 "count of the model's config, kept: the other pins would "
                                 "derive it from serving figures"),
}
