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
    sizes[which] = 321
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


def _drains(offsets, sigma: float, **extra) -> dict:
    """hbm_drain_time = 80 GB / hbm_bandwidth observed at 40 ms times e^offset."""
    return {"pins": {"hbm_capacity": "80 GB"},
            "unknowns": {"hbm_bandwidth": "1e11..1e14 byte/s"},
            "observations": [{"quantity": "hbm_drain_time",
                              "value": f"lognormal({0.040 * math.exp(d)!r} s, {sigma})"}
                             for d in offsets], **extra}


# Offsets in the log of +-0.02, +-0.06, +-0.1 and +-0.2 with a stated sd of 0.04: z of
# +-0.5, +-1.5, +-2.5 and +-5. Symmetric, so every loss puts the estimate at 80 GB / 40 ms
# = 2 TB/s exactly.
SCATTER = (-0.2, -0.1, -0.06, -0.02, 0.02, 0.06, 0.1, 0.2)


@pytest.mark.parametrize("loss", ["soft_l1", "huber", "cauchy"])
def test_scatter_beyond_the_stated_uncertainty_is_said_under_every_loss(loss):
    # Under a robust loss the +-5 are outliers; the six inliers give chi-squared
    # 2 * (0.25 + 2.25 + 6.25) = 17.5 on 6 - 1 = 5 degrees of freedom: 3.5, p = 0.0036
    result = fit(_drains(SCATTER, 0.04), loss=loss)
    assert result.dispersion == pytest.approx(17.5 / 5)
    assert any(n.startswith("the observations scatter more than their stated "
                            "uncertainties allow among the 6 observations within") and
               "chi-squared / dof = 3.5 (p = 0.0036)" in n for n in result.notes)


def test_intervals_scaled_by_the_dispersion_say_so():
    # Least squares: chi-squared 2 * (0.25 + 2.25 + 6.25 + 25) = 67.5 on 7 degrees of
    # freedom, dispersion 9.643. The bandwidth's 90% half-width in the log is
    # 1.645 * 0.04 / sqrt(8) = 0.02326, scaled by sqrt(9.643) = 3.105 to 0.07223.
    plain = fit(_drains(SCATTER, 0.04))
    scaled = fit(_drains(SCATTER, 0.04), scale_intervals=True)
    from_file = fit(_drains(SCATTER, 0.04, scale_by_dispersion=True))
    half = Z90 * 0.04 / math.sqrt(8)
    assert plain.dispersion == pytest.approx(67.5 / 7)
    e = plain["hbm_bandwidth"]
    assert math.log(e.high / e.value) == pytest.approx(half, rel=1e-6)
    for result in (scaled, from_file):
        e = result["hbm_bandwidth"]
        assert e.value == pytest.approx(2e12, rel=1e-9)
        assert math.log(e.high / e.value) == pytest.approx(half * math.sqrt(67.5 / 7), rel=1e-6)
        assert math.log(e.value / e.low) == pytest.approx(half * math.sqrt(67.5 / 7), rel=1e-6)
        assert result.interval_scale == pytest.approx(math.sqrt(67.5 / 7))
        assert any(n.startswith("intervals scaled by the dispersion: every half-width in the "
                                "log is multiplied by sqrt(9.64) = 3.11") for n in result.notes)
    # the note that they are too narrow gives way to the one saying they were widened
    assert not any("likely too narrow" in n for n in scaled.notes)
    assert any("likely too narrow" in n for n in plain.notes)


def test_one_sources_repeated_number_counts_once():
    # Three copies of 40 ms from one sheet and 50 ms from another, each sd 0.1: counted
    # once, the estimate is 80 GB over the geometric mean sqrt(40 * 50) = 44.72 ms,
    # 1.789 TB/s, half-width 1.645 * 0.1 / sqrt(2) in the log. Counted four times it would
    # be 80 GB / (40^0.75 * 50^0.25 ms) = 1.892 TB/s with half-width 1.645 * 0.1 / 2.
    spec = {"pins": {"hbm_capacity": "80 GB"},
            "unknowns": {"hbm_bandwidth": "1e11..1e14 byte/s"},
            "observations": [{"quantity": "hbm_drain_time", "value": "lognormal(40 ms, 0.1)",
                              "source": "sheet A"}] * 3
            + [{"quantity": "hbm_drain_time", "value": "lognormal(50 ms, 0.1)",
                "source": "sheet B"}]}
    result = fit(spec)
    e = result["hbm_bandwidth"]
    assert e.value == pytest.approx(80e9 / math.sqrt(0.040 * 0.050), rel=1e-6)
    assert math.log(e.high / e.value) == pytest.approx(Z90 * 0.1 / math.sqrt(2), rel=1e-6)
    assert [r.repeats for r in result.residuals] == [None, 0, 0, None]
    assert result.counted == 2 and result.dof == 1
    assert ("observations [1], [2] repeat [0] (same source, quantity, value and question) "
            "and are counted once with it") in result.notes


def test_an_estimate_on_a_priors_bound_says_which_way_the_observations_push():
    # 80 GB / 40 ms = 2 TB/s, above the prior's 1.5 TB/s: the estimate sits on that bound
    # and the observation wants more
    result = fit(_drains([0.0], 0.1) | {"unknowns": {"hbm_bandwidth": "1e12..1.5e12 byte/s"}})
    e = result["hbm_bandwidth"]
    assert e.value == pytest.approx(1.5e12)
    assert "the estimate is the prior's upper bound 1.5 TB/s: the observations want it " \
           "above the prior's upper bound" in e.notes
    assert not any("do not bound it" in n for n in e.notes)


def test_identifiability_of_many_observations_builds_no_square_matrix():
    # 3,000 observations of 3 parameters: the full SVD's U would be 3,000 x 3,000 doubles,
    # 72 MB; the reduced one is 3,000 x 3 (72 kB)
    import tracemalloc

    from chalk.applications.fit.identify import identify

    rng = np.random.default_rng(0)
    jacobian = rng.normal(size=(3000, 3))
    jacobian[:, 2] = jacobian[:, 0] + jacobian[:, 1]  # rank 2: one combination unseen
    tracemalloc.start()
    found = identify(jacobian)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 5e6
    assert found.rank == 2 and found.null.shape == (3, 1)
    # the null direction is (1, 1, -1) / sqrt(3): J (1, 1, -1) = c0 + c1 - (c0 + c1) = 0
    assert abs(found.null[:, 0] @ np.array([1, 1, -1])) == pytest.approx(math.sqrt(3))


def test_identifiability_with_fewer_observations_than_parameters():
    # one observation of hardware_intensity = chip_flops / hbm_bandwidth, a third
    # parameter nothing depends on: rank 1, a null space of 2
    from chalk.applications.fit.identify import identify

    found = identify(np.array([[1.0, -1.0, 0.0]]))
    assert found.rank == 1 and found.null.shape == (3, 2)
    assert np.allclose(np.array([1.0, -1.0, 0.0]) @ found.null, 0)
    assert found.combinations[0] == {0: 1.0, 1: -1.0} and found.combinations[2] == {}


def test_more_than_five_thousand_observations_are_read():
    # the cap was 5,000; the fit's measured cost decides now (estimate.refuse_too_large)
    from chalk.knowledge import load_model

    from chalk.applications.fit.spec import read_spec

    spec = _drains([0.0], 0.1)
    spec["observations"] = spec["observations"] * 5001
    assert len(read_spec(spec, load_model()).observations) == 5001


def test_the_command_line_scales_intervals(tmp_path):
    import contextlib
    import io
    import json

    from chalk.cli.main import main

    path = tmp_path / "scatter.toml"
    lines = ['pins = { hbm_capacity = "80 GB" }', "[unknowns]",
             'hbm_bandwidth = "1e11..1e14 byte/s"']
    for d in SCATTER:
        lines += ["[[observations]]", 'quantity = "hbm_drain_time"',
                  f'value = "lognormal({0.040 * math.exp(d)!r} s, 0.04)"']
    path.write_text("\n".join(lines) + "\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fit", str(path), "--scale-intervals", "--json"]) == 0
    body = json.loads(out.getvalue())
    assert body["interval_scale"] == pytest.approx(math.sqrt(67.5 / 7))


def test_scale_by_dispersion_must_be_true_or_false():
    from chalk.symbolic.errors import DataError

    with pytest.raises(DataError, match="scale_by_dispersion.*expected true or false"):
        fit(_drains([0.0], 0.1, scale_by_dispersion="yes"))


def test_a_profile_that_never_rises_is_not_bounded_on_that_side():
    # One parameter whose prediction saturates: ln predicted = min(ln theta, 0), observed
    # at ln 1 = 0 with sd 0.1, prior 1e-20..1e20. Below the estimate (ln theta = 0) the
    # objective (ln theta / 0.1)^2 reaches 1.645^2 at ln theta = -0.1645; above, it stays
    # 0 for ever: past PROFILE_SPAN (30 in the log) that side is not bounded, and says how
    # far it looked.
    from types import SimpleNamespace

    from chalk.applications.fit.estimate import PROFILE_SPAN, _Objective, _profile

    class Saturating:
        observed = np.array([0.0])
        sigma = np.array([0.1])
        parameters = [SimpleNamespace(prior=SimpleNamespace(kind="loguniform", nominal=1.0,
                                                            a=1e-20, b=1e20))]

        def predict(self, x, jacobian=False):
            out = np.array([min(x[0], 0.0)])
            return (out, np.array([[1.0 if x[0] < 0 else 0.0]])) if jacobian else out

    objective = _Objective(Saturating(), "linear")
    low, high = np.array([math.log(1e-20)]), np.array([math.log(1e20)])
    ends = _profile(objective, np.array([0.0]), np.array([[0.01]]), 0, np.ones(1), low, high)
    assert ends[0].value == pytest.approx(-Z90 * 0.1, abs=1e-5)
    assert ends[1].value is None and ends[1].searched == PROFILE_SPAN
