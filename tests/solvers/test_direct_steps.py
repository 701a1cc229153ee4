"""Explicit steps with nothing to decide at run time take a short path (issue 22 speed).

A step with one closed form and no regime, guard, polish or conditioning check is its
value and the physical test (solvers.execution.execute ``_direct``). The short path
must give exactly what the full one gives: the same values and the same records, and
where the value is not physical, the full path's refusal.
"""

from __future__ import annotations

import dataclasses

import pytest
from chalk.solvers.execution.execute import compile_plan, run_steps
from chalk.symbolic.errors import NoSolution

from chalk import solve

QUICK_START = {"chip_flops": "989e12 FLOP/s", "hbm_bandwidth": "3.35 TB/s",
               "bytes_per_param": "2 byte/param", "flops_per_param": "2 FLOP/param/token",
               "total_params": "671e9 param", "active_params": "37e9 param"}
LLAMA = dict(targets=["step_time", "memory_fill"], presets=["h100", "bf16", "llama_3_1_70b"],
             given={"n_chips": "8 chip", "batch_size": "32 sequence",
                    "context_length": "8192 token"})


def _without_direct(compiled):
    steps = [dataclasses.replace(s, direct=None) for s in compiled.steps]
    return dataclasses.replace(compiled, steps=steps)


@pytest.mark.parametrize("question", [dict(targets="critical_batch_size", given=QUICK_START),
                                      LLAMA])
def test_the_short_path_gives_the_full_paths_values_and_records(question):
    s = solve(**question)
    compiled = compile_plan(s.derivation.model, s.plan)
    assert any(step.direct is not None for step in compiled.steps)
    pins = {n: p.value for n, p in s.derivation.pins.items()}
    short = run_steps(compiled, pins)
    full = run_steps(_without_direct(compiled), pins)
    assert short[0] == full[0]
    assert short[1] == full[1]
    assert short[2] == full[2]


def test_a_value_out_of_bounds_on_the_short_path_gets_the_full_paths_refusal():
    # hardware_intensity = chip_flops / hbm_bandwidth: 989e12 / 3.35e12 = 295.2 FLOP/byte,
    # one closed form with nothing to decide. Made negative through a pin the solver
    # never sees (the base value put straight in), it must be refused as not physical.
    s = solve("critical_batch_size", given=QUICK_START)
    compiled = compile_plan(s.derivation.model, s.plan)
    step = next(st for st in compiled.steps if list(st.step.variables) == ["hardware_intensity"])
    assert step.direct is not None
    assert s.value("hardware_intensity") == pytest.approx(989e12 / 3.35e12, rel=1e-12)
    pins = {**{n: p.value for n, p in s.derivation.pins.items()}, "chip_flops": -989e12}
    with pytest.raises(NoSolution) as short:
        run_steps(compiled, pins)
    with pytest.raises(NoSolution) as full:
        run_steps(_without_direct(compiled), pins)
    assert str(short.value) == str(full.value)
    assert "not physical" in str(short.value)
