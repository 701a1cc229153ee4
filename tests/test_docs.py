"""The public names stay stable and the reference stays in sync with the declarations."""

import re
from pathlib import Path

from chalk.knowledge import load_model
from chalk.symbolic.parsing import parse_unit

from chalk.docs import reference

ROOT = Path(__file__).resolve().parents[1]


def test_reference_is_generated_from_the_declarations():
    committed = (ROOT / "docs" / "REFERENCE.md").read_text(encoding="utf-8")
    assert committed.strip() == reference().strip(), (
        "docs/REFERENCE.md is stale: run python -m chalk.docs > docs/REFERENCE.md")


def test_every_vocabulary_name_exists_with_its_unit():
    model = load_model()
    text = (ROOT / "docs" / "VOCABULARY.md").read_text(encoding="utf-8")
    rows = [(n, u) for n, u in re.findall(r"^\| ([a-z][a-z0-9_]*) \| ([^|]+) \|", text,
                                          flags=re.MULTILINE) if n != "name"]
    # every row of the vocabulary's tables: 69 shared names + 5 tensor-parallel ones + the
    # speed one user sees + a chip's peaks per number format (bf16, fp8, fp4) + the
    # serving efficiencies (FLOP/s, bandwidth, usable HBM, scale-up links) + precision per
    # part (8) + the attention layout and the KV copies over a group (8) + the cache-read
    # price over the input price (1)
    assert len(rows) == 99
    for name, unit in rows:
        variable = model.variable(name)
        assert variable.name == name
        declared = variable.pint_unit.dimensionality
        assert parse_unit(unit.strip().replace("·", "*")).dimensionality == declared, name
