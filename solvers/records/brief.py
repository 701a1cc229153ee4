"""A solution in a few lines: the answers, their flags, and what they rest on.

``chalk solve --brief`` prints this instead of the pin table and the derivation. Every
value the answer rests on that the user did not give is one line: a convention's value
with its reason, and each preset with the values it supplied; then the notes, each in a
line a reader can act on (:func:`for_a_reader`). Nothing here decides a number; it only
chooses what to show.
"""

from __future__ import annotations

from collections.abc import Sequence

from chalk.solvers.pinning.pinned import Layer
from chalk.solvers.records.derivation import Derivation
from chalk.solvers.records.notes import Note

SHOWN_PER_PRESET = 4  # a model preset supplies a dozen architecture values: name a few


def assumption_lines(derivation: Derivation) -> list[str]:
    """One line per convention the answer uses, one per preset, then the notes."""
    used = derivation.used_pins()
    lines = []
    for pin in used:
        if pin.layer is Layer.CONVENTIONS:
            reason = f": {pin.source}" if pin.source else ""
            lines.append(f"{pin.name} = {derivation.show(pin.name)} "
                         f"(convention {pin.preset}{reason})")
    by_preset: dict[str, list[str]] = {}
    for pin in used:
        if pin.layer is Layer.PRESET:
            by_preset.setdefault(pin.preset, []).append(
                f"{pin.name} = {derivation.show(pin.name)}")
    for preset, values in by_preset.items():
        shown = ", ".join(values[:SHOWN_PER_PRESET])
        more = len(values) - SHOWN_PER_PRESET
        lines.append(f"preset {preset}: {shown}" + (f" and {more} more" if more > 0 else ""))
    lines.extend(derivation.cancel_lines())
    lines.extend(f"note: {for_a_reader(note)}" for note in derivation.remarks)
    return lines


def _some(names, shown: int = 3) -> str:
    """The first ``shown`` names, and how many more."""
    names = list(names)
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def for_a_reader(note: Note) -> str:
    """A note in one short line: its wording, with each list cut to a few names.

    The full output prints every name (:meth:`Note.text`); the words are the same.
    """
    return note.text(names=_some)


def brief_text(summary: Sequence[str], derivation: Derivation) -> str:
    """``summary`` (the answer lines and flags), then the assumptions, then where the
    rest is."""
    lines = [*summary]
    assumed = assumption_lines(derivation)
    if assumed:
        lines += ["", "assumed"] + [f"  {line}" for line in assumed]
    lines += ["", "(the pins' sources and every step: the same command without --brief)"]
    return "\n".join(lines)
