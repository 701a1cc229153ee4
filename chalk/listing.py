"""``chalk list``: what the knowledge base holds, as text or JSON."""

from __future__ import annotations

import json

from chalk.knowledge import load_model
from chalk.symbolic.printing.quantities import format_unit


def _matches(text: str, needle: str) -> bool:
    return needle.lower() in text.lower()


def variables_table(needle: str = "") -> list[dict]:
    model = load_model()
    rows = []
    for v in model.variables.values():
        row = {"name": v.name, "unit": v.unit, "description": v.description, "topic": v.topic,
               "aliases": list(v.aliases), "relations": list(model.relations_of(v.name))}
        if _matches(" ".join([v.name, v.description, v.topic, *v.aliases]), needle):
            rows.append(row)
    return rows


def relations_table(needle: str = "") -> list[dict]:
    model = load_model()
    rows = []
    for r in model.relations.values():
        row = {"name": r.name, "equation": r.equation, "description": r.description,
               "source": str(r.source), "assumptions": list(r.assumptions), "topic": r.topic}
        if r.regimes:
            row["regimes"] = [label for label, _ in r.regimes]
        haystack = " ".join([r.name, r.equation, r.description, str(r.source), r.topic])
        if _matches(haystack, needle):
            rows.append(row)
    return rows


def conditions_table(needle: str = "") -> list[dict]:
    """Bounds no relation forces, flagged when an answer breaks them."""
    rows = []
    for c in load_model().conditions.values():
        row = {"name": c.name, "condition": c.inequality,
               "meaning": c.meaning, "source": str(c.source), "topic": c.topic}
        if _matches(" ".join([c.name, c.quantity, c.meaning, c.topic]), needle):
            rows.append(row)
    return rows


def presets_table(needle: str = "") -> list[dict]:
    from chalk.knowledge.presets import all_presets

    rows = []
    for p in all_presets().values():
        row = {"name": p.name, "kind": p.kind, "description": p.description,
               "pins": {k: v.text for k, v in p.values.items()}}
        if _matches(" ".join([p.name, p.kind, p.description]), needle):
            rows.append(row)
    return rows


def sheets_table(needle: str = "") -> list[dict]:
    from chalk.knowledge.price_sheets import shipped_sheets

    rows = []
    for sheet in shipped_sheets().values():
        row = {"name": sheet.id, "provider": sheet.provider, "model": sheet.model,
               "date": sheet.date, "long_context": bool(sheet.long_context),
               "cache_writes": len(sheet.cache_writes), "fast_mode": bool(sheet.fast_mode)}
        if _matches(" ".join([sheet.id, sheet.provider, sheet.model]), needle):
            rows.append(row)
    return rows


def listing(what: str, needle: str, as_json: bool) -> str:
    tables = {}
    if what in ("all", "sheets"):
        tables["sheets"] = sheets_table(needle)
    if what in ("all", "variables"):
        tables["variables"] = variables_table(needle)
    if what in ("all", "relations"):
        tables["relations"] = relations_table(needle)
    if what in ("all", "presets"):
        tables["presets"] = presets_table(needle)
    if what in ("all", "conditions"):
        tables["conditions"] = conditions_table(needle)
    if as_json:
        return json.dumps(tables, indent=2)
    lines = []
    model = load_model()
    if "variables" in tables:
        lines.append(f"variables ({len(tables['variables'])})")
        for row in tables["variables"]:
            unit = format_unit(model.variables[row["name"]].pint_unit) or "1"
            solved = "" if row["relations"] else "  (no relation yet)"
            lines.append(f"  {row['name']:<28} {unit:<20} {row['description']}{solved}")
    if "relations" in tables:
        lines.append(f"relations ({len(tables['relations'])})")
        for row in tables["relations"]:
            lines.append(f"  {row['name']:<28} {row['equation']}")
            lines.append(f"  {'':<28} {row['description']} [{row['source']}]")
    if "conditions" in tables:
        lines.append(f"conditions ({len(tables['conditions'])})")
        for row in tables["conditions"]:
            lines.append(f"  {row['name']:<28} {row['condition']}")
            lines.append(f"  {'':<28} flagged: {row['meaning']} [{row['source']}]")
    if "sheets" in tables:
        lines.append(f"price sheets ({len(tables['sheets'])})")
        for row in tables["sheets"]:
            extras = [k for k in ("long_context", "fast_mode") if row[k]]
            if row["cache_writes"]:
                extras.append("cache_writes")
            lines.append(f"  {row['name']:<28} {row['provider']} {row['model']} "
                         f"({row['date']}) {' '.join(extras)}")
    if "presets" in tables:
        lines.append(f"presets ({len(tables['presets'])})")
        for row in tables["presets"]:
            lines.append(f"  {row['name']:<28} {row['kind']:<12} {row['description']}")
    return "\n".join(lines)
