"""What the planner decides does not depend on the reference point's random draw (issue 22).

Relations that are not products of powers are linearised at a reference point whose
start is nudged at random (solvers.analysis.reference); the planner's decisions
(identities, what pins determine, which relations are cross-checks, what stays open,
which pins would complete a question) must come out the same at every draw. Each draw
builds fresh models, since the engine caches everything per model. The draws include
those that changed decisions before the fix: seed 1 (sequence) and seed 1 (per name)
missed the identity fast_batch_from_prices in the whole model, and seed 0 per name sent
the SLO question of tests/applications/test_slo.py through the fast-mode block.
"""

from __future__ import annotations

import dataclasses
import random
import subprocess
import sys
from importlib import import_module

import pytest
from chalk.knowledge import TOPIC_MODULES, load_model
from chalk.solvers.analysis import reference
from chalk.solvers.planning.plan import analyse_pins, identities, make_plan
from chalk.solvers.tolerances import REFERENCE
from selfcheck import submodel, sufficient_pins

DRAWS = (dataclasses.replace(REFERENCE, seed=1),
         dataclasses.replace(REFERENCE, seed=0, draw="per_name"),
         dataclasses.replace(REFERENCE, seed=1, draw="per_name"))
QUESTIONS = 4


def _decisions(build, draw, monkeypatch, questions: int = QUESTIONS) -> dict:
    """Every structural decision the planner makes on a fresh model at ``draw``: the
    identities, random sufficient pin sets (themselves chosen by rank), and for each the
    analysis with all of them and with one left out, and a plan of one quantity."""
    monkeypatch.setattr(reference, "REFERENCE", draw)
    model = build()
    rng = random.Random(0)
    out: dict = {"identities": sorted(identities(model))}
    for k in range(questions):
        pins = sufficient_pins(model, rng)
        out[k, "pins"] = pins
        for pinned in (frozenset(pins), frozenset(pins[1:])):
            analysis = analyse_pins(model, pinned)
            out[k, len(pinned)] = (sorted(analysis.determined),
                                   sorted(r for r, _ in analysis.dependent),
                                   analysis.checks, analysis.free)
            unknown = sorted(v for v in model.variables
                             if v not in pinned and model.relations_of(v))
            if unknown:
                plan = make_plan(model, pinned, (rng.choice(unknown),))
                out[k, len(pinned), "plan"] = (
                    plan.targets, [s.relations for s in plan.steps], plan.checks,
                    plan.undetermined, plan.completions, plan.placeholders)
    return out


def _topic(name):
    return lambda: submodel(import_module(f"chalk.knowledge.{name}").RELATIONS)


@pytest.mark.parametrize("topic", TOPIC_MODULES)
def test_each_topic_is_planned_alike_at_every_draw(topic, monkeypatch):
    first = _decisions(_topic(topic), REFERENCE, monkeypatch)
    for draw in DRAWS:
        assert _decisions(_topic(topic), draw, monkeypatch) == first, draw


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "known limitation, found in issue 22 and left when it closed: the whole model's "
    "reference point saturates the expert coverage "
    "curve, unread_expert_fraction = (1 - 14.7/230.5)^335 = 2.4e-10, within a factor of "
    "RANK.rtol (1e-9); whether its share survives elimination then depends on the draw "
    "(seed 1 (sequence) gives 1.4e-7, and tokens_per_step is determined by pins that at "
    "the reference leave it tied to vocab_size)"))
def test_the_whole_model_is_planned_alike_at_every_draw(monkeypatch):
    fresh = load_model.__wrapped__
    first = _decisions(fresh, REFERENCE, monkeypatch, questions=2)
    # the identity among the fast-mode prices holds whatever the values: the speedup,
    # the batch ratio and the price ratio multiply to one (knowledge/fast_mode.py)
    assert "fast_batch_from_prices" in first["identities"]
    for draw in DRAWS:
        assert _decisions(fresh, draw, monkeypatch, questions=2) == first, draw


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_nudge_below_a_lower_bound_is_reflected_off_it(seed):
    # attention_data_parallelism is typically 1, its lower bound; these seeds nudge it
    # below. Stopped on the bound, replicated_attention_params = (1 - 1) x ... = 0 and the
    # search never left the start (residual 2.2, attention_groups); reflected, it is
    # 1 + a little, and the point is found.
    model = _topic("tensor_parallel")()
    point = reference.consistent_point(model, seed, REFERENCE.spread)
    assert point.converged
    assert point.values["attention_data_parallelism"] > 1


# The regression of tests/applications/test_slo.py at the draw that broke it (per name,
# seed 0), in a process of its own: every model of that question is drawn afresh. The
# question's model (zeros put in) searched from the whole model's point had stepped past
# the sign change of cache_storage_price (price_cache_write - price_input < 0), where
# its relative residual is 1 whatever the values: it stopped there, residual 1.0.
@pytest.mark.slow
def test_the_rates_of_a_request_rest_on_no_price_at_a_per_name_draw():
    code = (
        "import dataclasses, sys\n"
        "sys.path.insert(0, 'tests/applications')\n"
        "from chalk.solvers.analysis import reference\n"
        "reference.REFERENCE = dataclasses.replace(reference.REFERENCE, draw='per_name')\n"
        "import test_slo\n"
        "test_slo.test_the_rates_of_a_request_rest_on_no_price()\n"
        "from chalk.compiled import compile_question\n"
        "question = compile_question(['time_per_output_token'], {**test_slo.SMALL, "
        "'n_chips': '8 chip', 'batch_size': '30 sequence'})\n"
        "print(reference.reference_point(question.model).residual)\n")
    root = __import__("pathlib").Path(__file__).resolve().parents[2]
    ran = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                         text=True, timeout=900)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert float(ran.stdout.split()[-1]) < 1e-9


def test_a_narrowed_model_shares_the_rows_its_parent_takes_at_the_same_point():
    # A narrowed model takes from its parent the rows of the relations it keeps as they
    # were, where they do not depend on the point (products of powers) or the two points
    # agree on the relation's quantities; each row is the one taken afresh for it
    from chalk.knowledge import load_model
    from chalk.solvers.analysis.jacobian import _log_row, log_rows
    from chalk.solvers.analysis.reference import reference_point
    from chalk.solvers.pinning.yielding import without_relations

    parent = load_model()
    dropped = sorted(parent.relations)[:3]
    child = without_relations(parent, tuple(dropped))
    rows, above = log_rows(child), log_rows(parent)
    here, there = reference_point(child).values, reference_point(parent).values
    assert set(rows) == set(parent.relations) - set(dropped)
    shared = 0
    for name, row in rows.items():
        relation = child.relations[name]
        fresh = _log_row(child, name, relation.lhs, relation.rhs)
        assert fresh.exact == row.exact and fresh.entries == row.entries
        same_point = all(here[v] == there[v] for v in child.variables_in(name))
        if row.exact or same_point:
            assert row is above[name]
            shared += 1
    assert shared > len(rows) / 2
