"""Simultaneous blocks: what the derivation says about the solution it found."""

import random
import warnings

from chalk import Q_, solve
from solvers.blocks import MULTI_START
from solvers.selfcheck import _matching, _max_residual, consistent_state, topic_model


def test_a_multi_start_answer_says_it_may_not_be_unique():
    # Batch-section seed 9 (found by the round-trip run): 14 pins, among them
    # context_crossover, latency_floor and tokens_per_second, leave a block with two or
    # more tears, which only multi-start solves. The answer must hold every relation and
    # the derivation must say, outside the step notes too, that others may exist.
    model = topic_model("batch")
    state = consistent_state(9, model)
    solved_by = _matching(model, random.Random(9), prefer_natural=False)
    unknowns = sorted(set(solved_by.values()))
    given = {n: Q_(state[n], model.variables[n].pint_unit) for n in state
             if n not in unknowns}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        s = solve(unknowns, given, ["none"], model=model)
    blocks = [i for i, step in enumerate(s.derivation.steps, 1) if step.method == MULTI_START]
    assert blocks
    assert _max_residual(model, s.derivation.values) < 1e-8
    notes = [n for n in s.derivation.notes if "multi-start" in n]
    assert len(notes) == len(blocks)
    assert all(note.startswith(f"step {i} (") for i, note in zip(blocks, notes, strict=True))
    assert "others may exist" in s.derivation.text()
