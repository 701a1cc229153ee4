"""How the reference point is searched for (solvers.analysis.reference, issue 22 speed).

A model narrowed by zeros or variants starts from its parent's point; the search there
used to crawl for tens of Gauss-Newton steps at a residual near 1 (each one halving its
way along a step the linearisation overshot) and then stall at a rounding floor a little
above ``REFERENCE.atol``, after which a second search from typical values ran as well.
Damped steps (Levenberg-Marquardt) and a stop at the rounding floor end both.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import subprocess
import sys

import pytest
from chalk.solvers.analysis import reference
from chalk.solvers.tolerances import REFERENCE
from test_reference_draws import _topic


def _counting(monkeypatch) -> list[int]:
    """Count trial points: each evaluates every relation once."""
    calls = [0]
    row = reference._row

    def counted(*args):
        calls[0] += 1
        return row(*args)

    monkeypatch.setattr(reference, "_row", counted)
    return calls


def test_a_residual_at_the_rounding_floor_holds_and_ends_the_search(monkeypatch):
    # With atol out of reach (1e-30, below what doubles can resolve in a log of a sum),
    # the search must stop where a step no longer halves the residual, below the rounding
    # bound, and call the point consistent: not run out its iterations.
    monkeypatch.setattr(reference, "REFERENCE", dataclasses.replace(REFERENCE, atol=1e-30))
    model = _topic("pricing")()
    calls = _counting(monkeypatch)
    point = reference.consistent_point(model, REFERENCE.seed, REFERENCE.spread, atol=1e-30)
    evaluations = calls[0] / len(model.relations)
    assert point.converged
    assert 0 < point.residual <= REFERENCE.rounding_atol
    assert evaluations < REFERENCE.max_iterations / 4


def test_a_point_short_of_the_floor_is_not_called_consistent(monkeypatch):
    # One trial point allowed: the search cannot get near the floor, and says so.
    monkeypatch.setattr(reference, "REFERENCE",
                        dataclasses.replace(REFERENCE, max_iterations=1))
    model = _topic("pricing")()
    point = reference.consistent_point(model, REFERENCE.seed, REFERENCE.spread)
    assert not point.converged
    assert point.residual > REFERENCE.rounding_atol


# In a process of its own: every cache (models, plans, prepared questions) starts empty.
SEARCHES = """
import json
from chalk.solvers.analysis import reference
search, calls, searches = reference.consistent_point, [0], []
row = reference._row
def counted(*args):
    calls[0] += 1
    return row(*args)
def recorded(model, seed, spread, atol=reference.REFERENCE.atol, start=None):
    calls[0] = 0
    point = search(model, seed, spread, atol, start)
    searches.append([start is not None, point.converged, calls[0] / len(model.relations)])
    return point
reference._row, reference.consistent_point = counted, recorded
from chalk import solve
solve("critical_batch_size", presets=["h100", "bf16", "deepseek_v3"])
print(json.dumps(searches))
"""


@pytest.mark.slow
def test_models_narrowed_from_deepseek_are_found_from_the_parent_in_a_few_steps():
    # The question that showed the crawl: DeepSeek-V3 with chip and precision presets and
    # no chip count. Its narrowed models (zeros put in, variants chosen) took 218-525
    # trial points each from the parent's point, and one then searched afresh; each must
    # now hold from the parent's start within a few dozen, with no fresh search.
    root = pathlib.Path(__file__).resolve().parents[2]
    ran = subprocess.run([sys.executable, "-c", SEARCHES], cwd=root, capture_output=True,
                         text=True, timeout=900)
    assert ran.returncode == 0, ran.stderr[-2000:]
    searches = json.loads(ran.stdout.splitlines()[-1])
    from_parent = [(converged, n) for started, converged, n in searches if started]
    assert from_parent, "no narrowed model was searched from its parent"
    assert all(converged for converged, _ in from_parent)
    assert all(n <= 30 for _, n in from_parent), [n for _, n in from_parent]
    assert len(searches) == len(from_parent) + 1  # the whole model alone searched afresh


def test_a_search_that_stops_making_progress_ends_before_its_last_trial(monkeypatch):
    # The whole model (every variant's relations at once) has no point that holds to the
    # rounding floor near its typical values; its search must end once a window of trial
    # points no longer halves the residual, not spend every trial it is allowed.
    from chalk.knowledge import load_model

    model = load_model()
    calls = _counting(monkeypatch)
    point = reference.consistent_point(model, REFERENCE.seed, REFERENCE.spread)
    evaluations = calls[0] / len(model.relations)
    assert point.converged or evaluations < REFERENCE.max_iterations / 2


def test_zeros_are_carried_forwards_through_the_definitions_before_the_search(monkeypatch):
    # No speculation (no accepted or rejected draft tokens, no draft time) takes terms out
    # of the definitions of a step's tokens and time. Searched from the parent's point as
    # it was, the narrowed model took 27 trial points; each definition is now evaluated
    # again first, and the search starts where the zeros put the quantities they feed.
    import math

    from chalk.knowledge import load_model
    from chalk.solvers.pinning.variants import for_pins
    from chalk.solvers.pinning.zeros import put_zeros

    variant, _ = for_pins(load_model(), ["n_kv_heads"])
    parent = reference.reference_point(variant)
    assert parent.converged
    child = put_zeros(variant, frozenset({"accepted_tokens_per_step",
                                          "rejected_tokens_per_step", "t_draft"})).model
    carried = reference._carried_forward(child, parent.values)
    sides = dict(zip(child.relations, reference._sides(child), strict=True))
    # the relations that define a derived quantity outright, where only one does
    by_quantity: dict[str, list[str]] = {}
    for name, relation in child.relations.items():
        if relation.lhs.is_Symbol and child.variables[relation.lhs.name].derived:
            by_quantity.setdefault(relation.lhs.name, []).append(name)
    defined = [names[0] for names in by_quantity.values() if len(names) == 1]
    assert "step_time" in by_quantity and len(defined) > 50
    for name in defined:
        lhs, rhs = sides[name]
        assert math.log(lhs(carried)[0] / rhs(carried)[0]) == pytest.approx(0, abs=1e-12), name
    # the draft's time no longer adds to the step, so the step is shorter; what no zero
    # reaches is left as it was, to the bit
    assert carried["step_time"] < parent.values["step_time"]
    assert carried["total_params"] == parent.values["total_params"]
    calls = _counting(monkeypatch)
    reference.consistent_point(child, REFERENCE.seed, 0.0, start=parent.values)
    from_parent, calls[0] = calls[0], 0
    reference.consistent_point(child, REFERENCE.seed, 0.0, start=carried)
    assert calls[0] < from_parent
