"""Kinds of model whose relations exclude each other: which one a question is about.

A relation that holds for one kind of model only (grouped-query attention's KV width,
say) names its :class:`~chalk.symbolic.relations.Variant`. Left in a question about
the other kind, such relations are not idle: with the latent-attention widths pinned,
the grouped-query forms would solve for a "KV head count" and a "head dimension" the
model does not have, and two of them over-determine those. The pins say which kind a
question is about: a variant is chosen when every one of its markers is pinned, and the
others of its group are then set aside. With no marker pinned (or the markers of every
variant) all relations stay, as they always did, but those that hold only once their
variant is chosen (``Relation.only_when_chosen``).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from chalk.solvers.records.notes import Kind, Note
from chalk.symbolic.model import Model, narrowed_model


def set_aside(model: Model, pinned: Iterable[str]) -> tuple[str, ...]:
    """Names of the variants the pins rule out, in declaration order."""
    pinned = set(pinned)
    out = []
    for members in _groups(model).values():
        chosen = [v for v in members if all(m in pinned for m in v.markers)]
        if chosen and len(chosen) < len(members):
            out.extend(v.name for v in members if v not in chosen)
    return tuple(out)


def chosen(model: Model, pinned: Iterable[str]) -> tuple[str, ...]:
    """Names of the variants the pins choose, in declaration order: those whose markers
    are all pinned where the others of their group are not (a group of one is chosen by
    its own markers: a model holding only grouped-query relations still needs
    ``n_kv_heads`` to say its attention is of that kind)."""
    pinned = set(pinned)
    out = []
    for members in _groups(model).values():
        marked = [v for v in members if all(m in pinned for m in v.markers)]
        if marked and (len(marked) < len(members) or len(members) == 1):
            out.extend(v.name for v in marked)
    return tuple(out)


def _groups(model: Model) -> dict[str, list]:
    groups: dict[str, list] = {}
    for variant in model.variants.values():
        groups.setdefault(variant.group, []).append(variant)
    return groups


def for_pins(model: Model, pinned: Iterable[str]) -> tuple[Model, Note | None]:
    """The model a question with these pins is planned on, and a note saying which
    relations were set aside (None when no variant was chosen)."""
    pinned = tuple(pinned)
    dropped = set_aside(model, pinned)
    narrowed = _without(model, dropped, chosen(model, pinned))
    if not dropped:
        return narrowed, None
    names = sorted(set(model.relations) - set(narrowed.relations))
    picked = sorted({v.name for v in model.variants.values() if v.name not in dropped
                     and v.group in {model.variants[d].group for d in dropped}})
    return narrowed, Note(Kind.VARIANT, {"chosen": picked, "set_aside": names})


@lru_cache(maxsize=32)
def _without(model: Model, dropped: tuple[str, ...], picked: tuple[str, ...]) -> Model:
    keep = [r for r in model.relations.values() if r.variant not in dropped
            and not (r.only_when_chosen and r.variant not in picked)]
    if len(keep) == len(model.relations):
        return model
    variants = [v for v in model.variants.values() if v.name not in dropped]
    return narrowed_model(model, keep, variants)
