"""Reference documentation generated from the declarations (docs/REFERENCE.md).

Run ``python -m chalk.docs > docs/REFERENCE.md``; a test checks the committed file
matches, so the documentation cannot drift from the relations it describes.
"""

from __future__ import annotations

from chalk.knowledge import load_model
from chalk.symbolic.printing.quantities import format_unit


def reference() -> str:
    model = load_model()
    out = ["# chalk reference", "",
           "Generated from the declarations by `python -m chalk.docs`; do not edit by hand.",
           "", "## Quantities", "", "| name | unit | meaning | aliases |", "|---|---|---|---|"]
    for v in sorted(model.variables.values(), key=lambda v: (v.topic, v.name)):
        unit = format_unit(v.pint_unit) or "1"
        out.append(f"| `{v.name}` | {unit} | {v.description} | "
                   f"{', '.join(v.aliases) or ''} |")
    topics: dict[str, list] = {}
    for r in model.relations.values():
        topics.setdefault(r.topic, []).append(r)
    out += ["", "## Relations", ""]
    for topic, relations in topics.items():
        out += [f"### {topic}", ""]
        for r in relations:
            out.append(f"- **{r.name}**: `{r.equation}` — {r.description}. *Source: {r.source}.*")
            if r.assumptions:
                out.append(f"  Assumes: {'; '.join(r.assumptions)}.")
            if r.regimes:
                out.append(f"  Regimes: {', '.join(label for label, _ in r.regimes)}.")
        out.append("")
    if model.conditions:
        out += ["## Conditions", "",
                "Bounds no relation forces; an answer past one is given with a flag.", ""]
        for c in model.conditions.values():
            out.append(f"- **{c.name}**: `{c.inequality}` — {c.meaning}. "
                       f"*Source: {c.source}.*")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover
    print(reference())
