"""The names ``import chalk`` offers: cheap to import, each loads on first use, and each
tool the notebooks use documents its parameters and what it returns."""

import subprocess
import sys

import pytest

import chalk

# the curve and optimum tools grown for the notebooks (item 7 of issue 13), the price-sheet
# tools and joint inference (issue 12)
TOOLS = ["sweep", "plot", "crossover", "cheapest_batch", "compute_optimal",
         "lifetime_optimum", "tier_table", "tier_costs", "imply", "compare", "fit", "atlas"]


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
    assert table.ys["hbm_drain_time"] == pytest.approx([14.4e-3, 28.8e-3], rel=1e-12)
