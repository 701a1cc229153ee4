"""The fit you can trust (issue 24 item 5): each defect an independent validation found,
reproduced from a hand-built fit.

Most cases use the fast tier's step, ``step_time_fast = max(batch_size_fast *
t_compute_per_sequence, t_weight_fetch + batch_size_fast * t_kv_per_sequence)``
(knowledge/fast_mode.py): a roofline whose flat stretches (the side of the max that
does not win) are what trips a local search.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from chalk.applications.fit import fit

Z90 = 1.6448536269514722


def _steps(times: dict, sigma: float, unknowns: dict | None = None,
           pins: dict | None = None) -> dict:
    """A fit of fast-tier step times observed at batch sizes (``times`` maps batch size
    to seconds), each with sd ``sigma`` of its log."""
    return {
        "unknowns": unknowns or {"t_compute_per_sequence": "1e-5..1 s/sequence",
                                 "t_weight_fetch": "1e-4..10 s",
                                 "t_kv_per_sequence": "1e-6..1 s/sequence"},
        "subjects": {f"b{b}": {"pins": {"batch_size_fast": f"{b} sequence", **(pins or {})}}
                     for b in times},
        "observations": [{"quantity": "step_time_fast", "subject": f"b{b}",
                          "value": f"lognormal({t!r} s, {sigma})"} for b, t in times.items()],
    }


def _grid_profile(times: dict, sigma: float, which: int) -> tuple[float, float, float]:
    """The exact profile by brute force: chi-squared of the step times on a grid over the
    priors' ranges (log-spaced), minimised over the two other parameters at each value of
    parameter ``which`` (0 compute, 1 weight fetch, 2 KV time); the values it keeps within
    Z90^2 of the best, and the grid's spacing in ln along that parameter."""
    ranges = [(1e-5, 1.0), (1e-4, 10.0), (1e-6, 1.0)]
    sizes = [161, 161, 161]
    sizes[which] = 641
    axes = [np.exp(np.linspace(math.log(a), math.log(b), n))
            for (a, b), n in zip(ranges, sizes, strict=True)]
    batches = np.array(list(times), dtype=float)
    observed = np.log(np.array(list(times.values())))
    others = [j for j in range(3) if j != which]
    first, second = np.meshgrid(axes[others[0]], axes[others[1]], indexing="ij")
    profile = []
    for value in axes[which]:
        point = {others[0]: first, others[1]: second, which: np.full_like(first, value)}
        c, w, v = (point[j][..., None] for j in range(3))
        predicted = np.log(np.maximum(batches * c, w + batches * v))
        profile.append(float(np.min(np.sum(((predicted - observed) / sigma) ** 2, axis=-1))))
    profile = np.array(profile)
    inside = axes[which][profile <= profile.min() + Z90 ** 2]
    spacing = math.log(ranges[which][1] / ranges[which][0]) / (sizes[which] - 1)
    return float(inside.min()), float(inside.max()), spacing


# Memory-bound steps (about 40 ms of weights, little KV) at three batch sizes, 3% apart:
# the compute time per sequence only has to stay below 41 ms / 32 to leave them as they
# are, so its profile is flat below; the inner solve warm-started there stopped short and
# brentq found no sign change (ValueError, a traceback from chalk fit).
PLATEAU = {8: 0.0402, 16: 0.0400, 32: 0.0411}


def test_the_profile_does_not_crash_on_a_plateau_and_is_no_narrower_than_a_grid():
    result = fit(_steps(PLATEAU, 0.03))
    names = ("t_compute_per_sequence", "t_weight_fetch", "t_kv_per_sequence")
    profiled = [k for k, name in enumerate(names)
                if result[name].method == "profile likelihood"]
    assert profiled  # the case exercises the profile
    for k in profiled:
        e = result[names[k]]
        low, high, spacing = _grid_profile(PLATEAU, 0.03, k)
        # the grid's inner minimum is a grid point, never below the true one: its
        # interval can only be narrower than the exact profile's, by up to a spacing
        assert e.low is not None and e.high is not None
        assert math.log(e.low) <= math.log(low) + spacing, (names[k], e.low, low)
        assert math.log(e.high) >= math.log(high) - spacing, (names[k], e.high, high)


def test_a_tangent_of_a_curved_ridge_is_not_called_fixed():
    # t_memory = (weight_bytes + batch_size * context_length * kv_bytes_per_token) /
    # hbm_bandwidth (knowledge/batch.py, one chip), observed at one batch size: only that
    # sum over the bandwidth is fixed. Along it the bandwidth runs from 1.4e11 byte /
    # 68 ms = 2.06 TB/s (no KV) upwards while the KV share grows, so no product of powers
    # of the two stays put; the tangent at the estimate used to be named "fixed", with a
    # unit like byte^0.64.
    pins = {"batch_size": "32 sequence", "context_length": "4000 token",
            "weight_bytes": "1.4e11 byte", "n_chips": "1 chip"}
    result = fit({"pins": pins,
                  "unknowns": {"hbm_bandwidth": "1e11..1e14 byte/s",
                               "kv_bytes_per_token": "1e3..1e7 byte/token"},
                  "observations": [{"quantity": "t_memory", "value": "lognormal(68 ms, 0.1)"}]})
    text = result.text()
    for name in ("hbm_bandwidth", "kv_bytes_per_token"):
        e = result[name]
        assert not e.identified and e.fixed != "fixed" and e.value is None, name
        assert e.statement.startswith("not identified: the observations fix only a curve")
        assert f"{name}: only" not in text
    bandwidth = result["hbm_bandwidth"].statement
    assert "moves by a factor" in bandwidth
    # the walk starts at the bandwidth no KV at all would need, 2.06 TB/s (less the
    # objective's allowed rise, 0.01 * 1.645^2 in chi-squared: 1.6% at sd 0.1)
    assert "from 2.0" in bandwidth
    units = text.replace("kv_bytes_per_token", "kv")  # the names aside, no unit has a power
    assert "byte^" not in units and "token^" not in units


def test_a_product_of_powers_is_fixed_along_the_whole_ridge():
    # context_crossover fixes hardware_intensity * kv_bytes_per_token exactly (see
    # test_fit.py): the walk over hardware_intensity's whole prior 10..3000 FLOP/byte
    # keeps it, so it is "fixed" and says where it was checked
    result = fit({"pins": {"active_params": "37e9 param"},
                  "unknowns": {"kv_bytes_per_token": "1e3..1e7 byte/token",
                               "hardware_intensity": "10..3000 FLOP/byte"},
                  "observations": [{"quantity": "context_crossover",
                                    "value": "lognormal(3581 token, 0.1)"}]})
    e = result["hardware_intensity"]
    assert e.fixed == "fixed"
    assert "from 10 FLOP/byte to 3,000 FLOP/byte" in e.statement


# Every step compute-bound: 2, 4, 8 and 16 sequences at 5 ms each (KV 0.1 ms per
# sequence pinned), sd 0.05 of the log.
COMPUTE_BOUND = {b: 0.005 * b for b in (2, 4, 8, 16)}


def test_a_time_that_only_a_larger_value_would_show_is_bounded_from_one_side():
    # The weight fetch time starts at its prior's middle, sqrt(1e-5 * 1) = 3.2 ms,
    # where no step depends on it. But above 10 ms - 2 * 0.1 ms = 9.8 ms the 2-sequence
    # step turns memory-bound, and its prediction w + 0.2 ms no longer depends on the
    # compute time, which the three other steps keep at 5 ms. The observations alone
    # (chi-squared 0 at the estimate: the data are exact) then rise by 1.645^2 when that
    # step is 1.645 sd high: w + 0.2 ms = 10 ms * e^(1.645 * 0.05), w = 10.657 ms. Below,
    # nothing changes down to the prior's bound.
    result = fit(_steps(COMPUTE_BOUND, 0.05,
                        {"t_compute_per_sequence": "1e-5..1 s/sequence",
                         "t_weight_fetch": "1e-5..1 s"},
                        {"t_kv_per_sequence": "1e-4 s/sequence"}))
    e = result["t_weight_fetch"]
    assert not e.identified and e.low is None
    assert e.high == pytest.approx(0.010 * math.exp(Z90 * 0.05) - 2e-4, rel=1e-4)
    assert e.statement.startswith("bounded above by about 10.66 ms")
    assert "no observation depends on it" not in result.text().split("residuals")[0] \
        .replace("not below (no observation depends on it there)", "")
