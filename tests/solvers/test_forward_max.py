"""A max() evaluated forwards leaves the plan to the planner's rank test; solved backwards
through, the rank test at the solution still decides (solvers.execution.checked)."""

from __future__ import annotations

import pytest
from chalk.knowledge import load_model
from chalk.solvers.analysis.at_solution import open_at
from chalk.solvers.execution import checked

from chalk import solve


@pytest.fixture
def rank_tests(monkeypatch):
    """The rank tests at a solution that solve runs, by the targets they were for."""
    asked = []

    def counted(model, relations, values, unknowns, targets, regimes=None):
        asked.append(tuple(targets))
        return open_at(model, relations, values, unknowns, targets, regimes)

    monkeypatch.setattr(checked, "open_at", counted)
    return asked


def test_a_max_evaluated_forwards_needs_no_rank_test_at_the_solution(rank_tests):
    # step_time = max(1 ms, 2 ms) = 2 ms: its own entry in the Jacobian is 1 whichever
    # argument is larger
    s = solve("step_time", {"t_compute": "1 ms", "t_memory": "2 ms"})
    assert s.value("step_time", "ms") == pytest.approx(2.0, rel=1e-12)
    assert rank_tests == []
    # the test it is spared finds nothing open there, in either regime
    model, values = load_model(), s.derivation.values
    for regime in ("compute-bound", "memory-bound"):
        assert open_at(model, ["step_time"], values, ["step_time"], ["step_time"],
                       {"step_time": regime}) == ()


def test_a_max_solved_backwards_is_still_tested_at_the_solution(rank_tests):
    # 2 ms = max(1 ms, t_memory): memory-bound, t_memory = 2 ms
    s = solve("t_memory", {"t_compute": "1 ms", "step_time": "2 ms"})
    assert s.value("t_memory", "ms") == pytest.approx(2.0, rel=1e-12)
    assert rank_tests == [("t_memory",)]
