"""A report leads with its answers: summary first, contents that resolve, assumptions
once each, URLs as links, ranged sections with one number, complete sensitivity lists,
sweep columns in one unit, plots whose series and legend stay readable."""

import html
import math
import re

import pytest

from chalk.report import build, markdown, render_html
from chalk.report.deduction import load
from chalk.report.report import agreement, sweep_columns

SMALL = '''
title = "Small"
description = "Numbers from https://example.org/sheet, checked."
[pins]
hbm_bandwidth = { value = "20 TB/s", source = "datasheet https://example.org/chip (table 2)" }

[[questions]]
title = "Drain time"
text = "See https://example.org/why."
targets = ["hbm_drain_time"]
pins = { hbm_capacity = "288 GB" }
lecture = { value = "15 ms", at = "24:34" }

[[questions]]
title = "Drain time of a ranged capacity"
targets = ["hbm_drain_time"]
pins = { hbm_capacity = "100 GB..400 GB" }

[[questions]]
title = "Critical batch"
targets = ["critical_batch_size"]
presets = ["lecture"]
pins = { sparsity_factor = "8" }
'''


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = tmp_path_factory.mktemp("small") / "small.toml"
    path.write_text(SMALL)
    report = build(str(path))
    return report, markdown(report)[0], render_html(report)


def test_summary_table_comes_first_with_the_lecture_number(small):
    _, md, html = small
    headings = [line for line in md.splitlines() if line.startswith("## ")]
    assert headings[:2] == ["## Summary", "## Contents"]
    # 288e9 byte / 20e12 byte/s = 14.4 ms; |14.4 - 15| / 15 = 4%
    assert "| [§1](#s1) | Drain time | hbm_drain_time = 14.4 ms | 15 ms (24:34) | within 4% |" \
        in md
    assert html.index('id="summary"') < html.index('id="contents"') < html.index('id="s1"')


def test_contents_and_section_links_resolve(small):
    _, md, html = small
    ids = set(re.findall(r'<a id="([^"]+)"></a>', md))
    targets = set(re.findall(r"\]\(#([^)]+)\)", md))
    assert targets and targets <= ids
    assert {"s1", "s2", "s3", "assumptions"} <= targets
    html_ids = set(re.findall(r' id="([^"]+)"', html))
    html_targets = set(re.findall(r'href="#([^"]+)"', html))
    assert html_targets and html_targets <= html_ids


def test_every_url_is_a_link(small):
    _, md, html = small
    urls = re.findall(r"https?://[^\s)\]|]+", md)
    assert {"https://example.org/sheet", "https://example.org/chip",
            "https://example.org/why"} <= {u.rstrip(".,") for u in urls}
    text = re.sub(r"\[(https?://[^\]]+)\]\(\1\)", "", md)  # remove the links
    assert "http" not in text
    bare = re.sub(r'<a href="(https?://[^"]+)">\1</a>', "", html)
    assert "http" not in bare


def test_assumptions_are_listed_once_each(small):
    report, _, _ = small
    keys = [(r["name"], r["value"], r["origin"]) for r in report.assumptions]
    assert len(keys) == len(set(keys))
    bandwidth = [r for r in report.assumptions if r["name"] == "hbm_bandwidth"]
    assert len(bandwidth) == 1 and bandwidth[0]["sections"] == [1, 2]


def test_ranged_section_shows_one_number_labelled_median(small):
    report, md, _ = small
    section = report.sections[1]
    # log-uniform 100..400 GB: median sqrt(100 x 400) = 200 GB; 200e9 / 20e12 = 10 ms,
    # exact because the answer moves one way with its one ranged pin
    assert section.answer("hbm_drain_time").startswith("10 ms (median; 90% interval ")
    assert section.point.exact and section.point.percentile == 50
    assert section.shown.value("hbm_drain_time", "ms") == pytest.approx(10, rel=1e-12)
    low, high = section.solution.interval("hbm_drain_time", "ms")
    # 5th and 95th percentiles: 100 x 4**0.05 = 107.2 GB and 100 x 4**0.95 = 373.2 GB
    assert low.magnitude == pytest.approx(107.2 / 20, rel=0.01)
    assert high.magnitude == pytest.approx(373.2 / 20, rel=0.01)
    body = md.split('<a id="s2"></a>')[1].split('<a id="s3"></a>')[0]
    results = re.findall(r"= \*\*([^*]+)\*\*", body)
    assert results == ["10 ms"]  # the derivation ends at the headline number
    assert body.count("(median;") == 1


def test_what_would_change_lists_every_input_sorted(small):
    report, _, _ = small
    rows = report.sections[2].changes["critical_batch_size"]
    # B = bytes x intensity x sparsity / (tokens_per_step x flops): tokens per step is
    # 1 + accepted drafted tokens (0 in the conventions), so it is derived and not an
    # input; the four inputs have elasticity +1 or -1, so the order is by name
    assert [(r.name, round(r.elasticity, 6)) for r in rows] == [
        ("bytes_per_param", 1), ("flops_per_param", -1),
        ("hardware_intensity", 1), ("sparsity_factor", 1)]


def test_shares_of_two_ranges_and_their_method(tmp_path):
    path = tmp_path / "two.toml"
    path.write_text('title = "two"\n[[questions]]\ntitle = "q"\ntargets = ["hbm_drain_time"]\n'
                    'pins = { hbm_capacity = "100 GB..400 GB", '
                    'hbm_bandwidth = "10 TB/s..20 TB/s" }\n')
    report = build(str(path))
    section = report.sections[0]
    rows = section.changes["hbm_drain_time"]
    # each pin alone gives ln(p95/p5) = 0.9 x ln(4) and 0.9 x ln(2): shares
    # ln(4)^2 / (ln(4)^2 + ln(2)^2) = 4/5 and 1/5
    assert [r.name for r in rows] == ["hbm_capacity", "hbm_bandwidth"]
    assert rows[0].share == pytest.approx(0.8, abs=0.01)
    assert rows[1].share == pytest.approx(0.2, abs=0.01)
    # the derivation is at the pins that give the Monte Carlo median
    median = section.solution.median("hbm_drain_time", "ms").magnitude
    assert section.shown.value("hbm_drain_time", "ms") == pytest.approx(median, rel=2e-3)
    text = markdown(report)[0]
    assert "one-at-a-time, not a variance decomposition" in text
    assert "ln(p95/p5)" in text


@pytest.mark.parametrize(("answer", "low", "high", "expected"), [
    (2400, 2000, 2000, "within 20%"),  # 400 / 2000
    (14.4, 15, 15, "within 4%"),  # 0.6 / 15
    (40, 40, 40, "equal"),
    (36.57, 1, 1, "36.6× the lecture's"),  # 36.57 / 1 to 3 digits
    (3.255, 1, 10, "inside the lecture's range"),
    (12, 1, 10, "1.2× its upper end"),  # 12 / 10
])
def test_agreement_words(answer, low, high, expected):
    assert agreement(answer, low, high) == expected


def test_lecture_value_in_the_wrong_unit_names_the_question(run_cli, tmp_path):
    bad = tmp_path / "unit.toml"
    bad.write_text('title = "x"\n[[questions]]\ntitle = "q"\ntargets = ["hbm_drain_time"]\n'
                   'pins = { hbm_capacity = "288 GB", hbm_bandwidth = "20 TB/s" }\n'
                   'lecture = { value = "15 GB" }\n')
    status, _, stderr = run_cli("report", str(bad))
    assert status == 2
    assert stderr == ("chalk: error: question 'q': the lecture's value '15 GB' is not in "
                      "units of hbm_drain_time (s)\n")


def test_lecture_target_must_be_asked(run_cli, tmp_path):
    bad = tmp_path / "target.toml"
    bad.write_text('title = "x"\n[[questions]]\ntitle = "q"\ntargets = ["hbm_drain_time"]\n'
                   'lecture = { value = "15 ms", target = "step_time" }\n')
    status, _, stderr = run_cli("report", str(bad))
    assert status == 2
    assert stderr == ("chalk: error: target.toml, entry 'questions[0]', field 'lecture.target': "
                      "not one of the targets (hbm_drain_time)\n")


def test_sweep_columns_have_one_unit_and_format():
    from chalk.applications.sweep import sweep

    table = sweep(["hbm_drain_time"], "hbm_capacity", "1 GB", "1000 GB", 4, True,
                  {"hbm_bandwidth": "1 TB/s"}, ())
    header, rows, notes = sweep_columns(table)
    # capacities 1, 10, 100, 1000 GB shown in TB (the unit of the largest, 1 TB);
    # drain times 1e9/1e12 = 1 ms up to 1 s, shown in s
    assert header == ["hbm_capacity [TB]", "hbm_drain_time [s]"]
    assert rows == [["0.001", "0.001"], ["0.01", "0.01"], ["0.1", "0.1"], ["1", "1"]]
    assert notes == []
    assert all(h.strip() for h in header)


def test_titles_name_the_precision_their_pins_use():
    spec = load("lecture")
    for entry in spec.entries:
        for precision in ("fp8", "bf16"):
            if precision not in entry.title:
                continue
            pins = {**spec.pins, **entry.pins}
            presets = [*spec.presets, *entry.presets]
            other = {"fp8": "2 byte/param", "bf16": "1 byte/param"}[precision]
            assert all(p.text != other for n, p in pins.items() if n == "bytes_per_param"), \
                entry.title
            accelerators = [p for p in presets if p.startswith(("gb200", "h100", "b200"))]
            wrong = "_fp8" if precision == "bf16" else ""
            for name in accelerators:
                assert name.endswith("_fp8") if precision == "fp8" else wrong not in name, \
                    (entry.title, name)
            if "kv_bytes_per_token" in pins:
                # DeepSeek-V3's MLA: 61 layers x 576 elements x (1 byte fp8, 2 byte bf16)
                expected = 61 * 576 * (1 if precision == "fp8" else 2)
                assert pins["kv_bytes_per_token"].text.startswith(str(expected)), entry.title


def _legend_styles(figure):
    axes = figure.axes[0]
    legend = axes.get_legend()
    lines = legend.get_lines()
    return axes, legend, [(line.get_color(), line.get_linestyle(), line.get_marker())
                          for line in lines]


def test_many_series_plot_keeps_styles_apart_and_legend_off_the_axes():
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from chalk.applications.plots import plot

    figure = plot("tier_cost_vs_hold", {"kv_bytes_per_token": "3333 byte/token"})
    FigureCanvasAgg(figure).draw()  # whatever backend an earlier test left behind
    axes, legend, styles = _legend_styles(figure)
    # the tiers never cheapest are bands by kind (issue 25: 17 lines were illegible); the
    # lines left keep their styles apart
    assert len(set(styles)) == len(styles)
    renderer = figure.canvas.get_renderer()
    box, frame = legend.get_window_extent(renderer), axes.get_window_extent(renderer)
    assert box.x0 >= frame.x1  # beside the axes: it covers no curve and no label
    assert not math.isnan(box.width)
    plt.close(figure)


def test_a_section_says_which_conditions_hold_and_which_fail(tmp_path):
    # Llama 3.1 70B in bf16 on 8 H100s (8 x 80e9 byte), 8,000 tokens of context: KV
    # 80 x 8 x 128 x 2 x 2 = 327,680 byte/token. Weights 70.55e9 x 2 = 141.1e9 byte fill
    # 141.1e9 / 640e9 = 0.2205; at batch 1000 the fill is (141.1e9 + 1000 x 8000 x 327,680)
    # / 640e9 = 4.316, past 1, said once as failed (sections printed no condition at all)
    path = tmp_path / "fill.toml"
    path.write_text('title = "fill"\npresets = ["h100", "bf16", "llama_3_1_70b"]\n'
                    '[pins]\nn_chips = "8 chip"\ncontext_length = "8000 token"\n'
                    'total_params = "70.55e9 param"\nbatch_size = "1000 sequence"\n'
                    '[[questions]]\ntitle = "q"\ntargets = ["tokens_per_second"]\n')
    report = build(str(path))
    text, _ = markdown(report)
    page = render_html(report)
    held = "weight_fill = 0.2205 (checked: weight_fill <= 1)"
    failed = "flag: memory_fill = 4.316 is above 1"
    for out, shown in ((text, str), (page, html.escape)):
        assert shown(held) in out and shown(failed) in out
        assert "(checked: memory_fill" not in out


DRAIN = ('[[questions]]\ntitle = "q"\ntargets = ["hbm_drain_time"]\n'
         'pins = { hbm_capacity = "288 GB", hbm_bandwidth = "20 TB/s" }\n')


def test_the_comparison_column_is_named_by_the_file(tmp_path):
    # issue 25: the column was hard-wired to the lecture. 288 GB / 20 TB/s = 14.4 ms
    # against a stated 12 ms: a gap of 2.4 / 12 = 20%, read as "within 20%"
    path = tmp_path / "mine.toml"
    path.write_text('title = "x"\ncompared_with = "my spreadsheet"\n' + DRAIN
                    + 'stated = { value = "12 ms", at = "row 7" }\n')
    report = build(str(path))
    text, _ = markdown(report)
    page = render_html(report)
    assert "| § | question | answer | my spreadsheet | agreement |" in text
    assert "My spreadsheet at row 7: 12 ms; within 20%." in text
    assert "<th>my spreadsheet</th>" in page and "the lecture" not in text.lower()


def test_the_old_lecture_key_still_names_the_lecture(tmp_path):
    path = tmp_path / "old.toml"
    path.write_text('title = "x"\n' + DRAIN + 'lecture = { value = "1.44 ms" }\n')
    text, _ = markdown(build(str(path)))
    # 14.4 ms is 10x the stated 1.44 ms
    assert "| § | question | answer | the lecture | agreement |" in text
    assert "The lecture: 1.44 ms; 10× the lecture's." in text


def test_a_stated_number_given_twice_is_refused(tmp_path):
    from chalk.symbolic.errors import DataError

    path = tmp_path / "both.toml"
    path.write_text('title = "x"\n' + DRAIN + 'stated = "12 ms"\nlecture = "12 ms"\n')
    with pytest.raises(DataError, match="give the stated number once"):
        load(str(path))


SWEEP = ('title = "fill"\npresets = ["h100", "bf16", "llama_3_1_70b"]\n'
         '[pins]\nn_chips = "8 chip"\ncontext_length = "8000 token"\n'
         'pretrain_tokens = "15e12 token"\n'
         '[[sweeps]]\ntitle = "s"\ntargets = ["step_time"]\n'
         'over = "batch_size=64..512 sequence"\nsteps = 4\n')


def test_a_sweep_table_warns_where_memory_overflows_and_lists_only_used_inputs(tmp_path):
    # KV 327,680 byte/token x 8,000 tokens; weights 141.1e9 byte; HBM 640e9 byte: the fill
    # passes 1 past (640e9 - 141.1e9) / (8000 x 327,680) = 190.3 sequences, so at 3 of the
    # 4 points 64, 213.3, 362.7, 512
    path = tmp_path / "sweep.toml"
    path.write_text(SWEEP)
    report = build(str(path))
    text, _ = markdown(report)
    page = render_html(report)
    warning = "Warning: memory_fill is above 1 at 3 of 4 points"
    for out in (text, page):
        assert warning in out
    inputs = ("Inputs: presets h100, bf16, llama_3_1_70b; n_chips = 8 chip; "
              "context_length = 8000 token. Given but not used here: pretrain_tokens.")
    assert inputs in text and html.escape(inputs) in page
    assumptions = text.split("## Assumptions", 1)[1]
    assert "`n_chips`" in assumptions and "pretrain_tokens" not in assumptions
