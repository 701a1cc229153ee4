"""The names ``import chalk`` offers: cheap to import, each loads on first use, and each
tool the notebooks use documents its parameters and what it returns."""

import math
import re
import subprocess
import sys

import pytest

import chalk

# the curve and optimum tools grown for the notebooks (item 7 of issue 13), the price-sheet
# tools and joint inference (issue 12), calibration (issue 24)
TOOLS = ["sweep", "plot", "crossover", "cheapest_batch", "compute_optimal",
         "lifetime_optimum", "tier_table", "tier_costs", "imply", "compare", "fit", "atlas",
         "calibrate"]


def test_import_chalk_loads_no_heavy_library():
    code = ("import sys, chalk; "
            "print(' '.join(m for m in ('sympy', 'numpy', 'scipy', 'matplotlib', 'pint') "
            "if m in sys.modules))")
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == ""


def test_every_export_is_listed_and_resolves():
    assert sorted(chalk.__all__) == sorted(chalk._EXPORTS)
    for name in chalk.__all__:
        assert getattr(chalk, name) is not None, name
    assert set(TOOLS) <= set(chalk.__all__)


@pytest.mark.parametrize("name", TOOLS)
def test_each_tool_has_a_numpy_docstring(name):
    doc = getattr(chalk, name).__doc__ or ""
    assert "Returns\n    -------" in doc, name
    if name != "tier_table":  # takes no arguments
        assert "Parameters\n    ----------" in doc, name


def test_an_unknown_name_says_so():
    with pytest.raises(AttributeError, match="no attribute 'sweeep'"):
        chalk.sweeep  # noqa: B018


def test_a_tool_answers_through_the_top_level_name():
    # the HBM drain of 288 GB at 20 TB/s is 288e9 / 20e12 = 14.4 ms; doubling the
    # capacity on a 2-point sweep gives 28.8 ms at the far end
    table = chalk.sweep("hbm_drain_time", "hbm_capacity", "288 GB", "576 GB", 2,
                        given={"hbm_bandwidth": "20 TB/s"})
    # the grid and the answers are Quantities (issue 25: they were bare arrays)
    assert table.xs.m_as("GB").tolist() == [288.0, 576.0]
    assert table.ys["hbm_drain_time"].m_as("ms") == pytest.approx([14.4, 28.8], rel=1e-12)
    assert table.y_values["hbm_drain_time"] == pytest.approx([14.4e-3, 28.8e-3], rel=1e-12)
    assert repr(table) == "Sweep(hbm_drain_time over hbm_capacity, 2 points; .text() prints " \
        "the table)"


# Issue 22: the API refuses what the command line refuses, with a ChalkError naming the
# argument, instead of letting OverflowError, MemoryError, ValueError or TypeError out.
DRAIN = {"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"}
RANGED = {"hbm_capacity": "288 GB", "hbm_bandwidth": "10..20 TB/s"}  # Monte Carlo runs


@pytest.mark.parametrize("options, given, message", [
    # 1e12 draws of a float are 8 TB: was MemoryError
    ({"samples": 10**12}, RANGED, "samples must be a whole number from 100 to 10,000,000"),
    ({"samples": 99}, RANGED, "samples must be a whole number from 100 to 10,000,000"),
    ({"samples": 1000.5}, RANGED, "samples must be a whole number"),
    ({"seed": -1}, RANGED, "seed must be a whole number, 0 or more"),  # was numpy's ValueError
    ({"seed": True}, DRAIN, "seed must be a whole number"),
    ({"regime": "bogus"}, DRAIN, "regime must be None, 'compute-bound' or 'memory-bound'"),
    ({"prefer": "bogus"}, DRAIN, "prefer must be 'stated' or 'derived'"),
    ({"rtol": math.inf}, DRAIN, "rtol must be a number between 0 and 1"),
    ({"rtol": math.nan}, DRAIN, "rtol must be a number between 0 and 1"),
    ({"rtol": 1}, DRAIN, "rtol must be a number between 0 and 1"),
    ({"timeout": 0}, DRAIN, "timeout must be a positive number of seconds"),
    ({"drop": "hbm_capacity"}, DRAIN, "drop must be a list of quantity names"),
])
def test_an_option_the_command_line_refuses_is_refused_by_name(options, given, message):
    with pytest.raises(chalk.ChalkError, match=f"^{re.escape(message)}"):
        chalk.solve("hbm_drain_time", given, **options)


def test_the_command_line_takes_the_api_choices_and_limits(run_cli):
    from chalk import api
    from chalk.cli.options import solve_parser

    for regime in api.REGIMES:
        assert solve_parser().parse_args(["solve", "step_time", "--regime", regime]).regime \
            == regime
    low, high = api.SAMPLE_LIMITS
    status, out, err = run_cli("solve", "hbm_drain_time", "--given", "hbm_capacity=288 GB",
                               "--given", "hbm_bandwidth=10..20 TB/s", "--samples",
                               str(high + 1))
    assert (status, out) == (2, "")
    assert err == f"chalk: error: --samples must be between {low} and {high}\n"


def test_pins_42_times_apart_are_not_waved_through_by_an_infinite_rtol():
    # 80 GB / 3.35 TB/s = 23.88 ms against a pinned 1 s: a factor 1 / 0.02388 = 41.9
    pins = {"hbm_capacity": "80 GB", "hbm_bandwidth": "3.35 TB/s", "hbm_drain_time": "1 s",
            "chip_flops": "989 TFLOP/s"}
    with pytest.raises(chalk.ChalkError, match="a factor 41.9 apart"):
        chalk.solve("hardware_intensity", pins)
    with pytest.raises(chalk.ChalkError, match="^rtol must be"):
        chalk.solve("hardware_intensity", pins, rtol=math.inf)


@pytest.mark.parametrize("call, message", [
    (lambda: chalk.solve(5, DRAIN), "targets must be a quantity name or a list of quantity "
                                    "names, not 5"),  # was TypeError
    (lambda: chalk.explain(5, DRAIN), "targets must be a quantity name"),
    (lambda: chalk.solve([5], DRAIN), "targets must be a quantity name"),
    (lambda: chalk.solve("hbm_drain_time", 5), "given must be a mapping {name: value} or a "
                                               "list of \"NAME=VALUE UNIT\" texts, not 5"),
    (lambda: chalk.solve("hbm_drain_time", {5: "1 s"}), "given must be a mapping"),
    (lambda: chalk.solve("hbm_drain_time", DRAIN, presets=5), "presets must be a preset "
                                                              "name or a list of them"),
    # float(10**400) overflows: was OverflowError, alone or as a Quantity's magnitude
    (lambda: chalk.solve("total_params", {"n_layers": 10**400}),
     "given n_layers=1000000000000000000000000000000000000... is too large for a "
     "floating-point number"),
    (lambda: chalk.solve("hbm_drain_time", {"hbm_capacity": chalk.Q_(10**400, "GB"),
                                            "hbm_bandwidth": "20 TB/s"}),
     "given hbm_capacity=1000"),
])
def test_arguments_the_engine_cannot_read_raise_a_chalk_error_naming_them(call, message):
    with pytest.raises(chalk.ChalkError, match=f"^{re.escape(message)}"):
        call()


def test_arguments_given_as_generators_are_read_once():
    # 288 GB / 20 TB/s = 14.4 ms
    solution = chalk.solve((t for t in ["hbm_drain_time"]),
                           (g for g in ["hbm_capacity=288 GB", "hbm_bandwidth=20 TB/s"]),
                           presets=iter(()), drop=iter(()), samples=100, seed=2**40)
    assert solution.value("hbm_drain_time", "ms") == pytest.approx(14.4, rel=1e-12)


def test_every_result_prints_a_short_repr_and_its_text_in_a_notebook():
    # issue 25: results printed as their dataclass fields (pages of arrays and models)
    drain = {"hbm_capacity": "288 GB", "hbm_bandwidth": "20 TB/s"}
    results = [
        chalk.explain("hbm_drain_time", given={"hbm_capacity": "288 GB"}),
        chalk.imply("gemini_2_5_pro"),
        chalk.compare(["gemini_2_5_pro"]),
        chalk.tier_costs("3333 byte/token"),
        chalk.tier_table(),
        chalk.compute_optimal(1e24),
        chalk.sweep("hbm_drain_time", "hbm_capacity", "288 GB", "576 GB", 2,
                    given={"hbm_bandwidth": "20 TB/s"}),
        chalk.Question("hbm_drain_time", drain),
        chalk.Question("hbm_drain_time", drain)(),
        chalk.solve("hbm_drain_time", drain),
    ]
    for result in results:
        shown = repr(result)
        assert len(shown) <= 200 and "\n" not in shown, type(result).__name__
        assert type(result).__name__ in shown
        assert result._repr_markdown_().strip()
