"""Preparation as ordered passes: each pin set is planned once."""

import chalk.preparation as preparation
from chalk.preparation import PASSES, prepare


def _counting(monkeypatch):
    """Record the (model, pins, targets) of every plan preparation makes."""
    calls = []
    original = preparation.make_plan

    def make_plan(model, pinned, targets, *args, **kwargs):
        calls.append((id(model), frozenset(pinned), tuple(targets)))
        return original(model, pinned, targets, *args, **kwargs)

    monkeypatch.setattr(preparation, "make_plan", make_plan)
    return calls


def test_a_preset_question_plans_each_pin_set_once(monkeypatch):
    calls = _counting(monkeypatch)
    q = prepare("critical_batch_size", presets=["h100", "bf16", "deepseek_v3"])
    # The pin sets this question goes through, by hand: (1) the pins after the MLA
    # variant is chosen; (2) those without the conventions' zero input-embedding table
    # and the two headline sizes (36.7e9 active, 671e9 total), which the architecture
    # determines; (3) the same pins planned with memory_fill and weight_fill, reported
    # beside a serving answer. Before the passes the first pin set was planned again
    # once zeros were settled, and the second twice: five plans.
    assert len(calls) == len(set(calls)) == 3
    assert calls[2][2] == ("critical_batch_size", "memory_fill", "weight_fill")
    assert q.plan.determined and [n for n, _ in q.reported] == ["memory_fill", "weight_fill"]


def test_a_pass_that_changes_nothing_plans_nothing(monkeypatch):
    q = prepare("hbm_drain_time", {"hbm_capacity": "80 GB", "hbm_bandwidth": "3.35 TB/s"})
    # the pins include zeros (the conventions' absent terms): a first look until put in
    state = preparation.State(q.model, q.targets, q.pins, q.stated, q.conventions,
                              explain=False, plan=q.plan)
    calls = _counting(monkeypatch)
    for step in PASSES[:-1]:  # the last one plans the reported quantities, if any
        assert step(state).plan is q.plan
    assert calls == []
