"""The figure gallery: every plot kind drawn from the figure objects' own titles, axis
labels and markers (issue 25: titles that name the model, chip, precision and context;
the memory wall marked on every serving curve; one axis per unit; legible tier plots)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from chalk.applications.plots import PLOTS, memory_wall, plot, render  # noqa: E402

pytestmark = pytest.mark.slow  # each figure sweeps 200 points: about 30 s in all

SERVING = ["h100", "bf16", "llama_3_1_70b"]
CHIPS = {"n_chips": "8 chip"}
# Llama 3.1 70B in BF16 on 8 H100: weights 69.50e9 param x 2 byte (the architecture's
# count, without the input-embedding table the step does not read: 70.55e9 - 1.051e9);
# memory 8 x 80e9 byte; KV 80 layers x 2 (K, V) x 8 heads x 128 x 2 byte = 327,680
# byte/token. The weights counted for memory are all 70.55e9 param (141.1e9 byte).
WEIGHT_BYTES = 70.55e9 * 2
KV_PER_TOKEN = 80 * 2 * 8 * 128 * 2
HBM = 8 * 80e9

GALLERY = {
    "step_time_vs_batch": dict(given={**CHIPS, "context_length": "8k token"},
                               presets=SERVING),
    "cost_vs_batch": dict(given={**CHIPS, "context_length": "8k token",
                                 "chip_price": "2 USD/hour"}, presets=SERVING),
    "cost_vs_context": dict(given={**CHIPS, "batch_size": "64 sequence",
                                   "chip_price": "2 USD/hour"}, presets=SERVING,
                            sheet="gemini_2_5_pro"),
    "tier_cost_vs_hold": dict(given={"kv_bytes_per_token": "3333 byte/token", **CHIPS},
                              presets=["h100", "llama_3_1_70b"]),
    "pipeline_schedule": dict(given={"pipeline_stages": "4", "n_micro_batches": "8"},
                              presets=()),
}
AXES = {
    "step_time_vs_batch": ("batch_size [sequence]", "time per step [ms]"),
    "cost_vs_batch": ("batch_size [sequence]", "cost per token [USD per million tokens]"),
    "cost_vs_context": ("context_length [token]",
                        "cost or price per token [USD per million tokens]"),
    "tier_cost_vs_hold": ("hold_time [s]", "cost per token [USD per million tokens]"),
    "pipeline_schedule": ("time [micro-batch slots]", "pipeline stage (rack)"),
}


def test_the_gallery_covers_every_plot_kind():
    assert set(GALLERY) == set(PLOTS)


@pytest.fixture(scope="module")
def drawn():
    figures = {}
    for name, spec in GALLERY.items():
        spec = dict(spec)
        figures[name] = plot(name, spec.pop("given"), spec.pop("presets"), **spec)
    yield figures
    for figure in figures.values():
        plt.close(figure)


@pytest.mark.parametrize("name", sorted(GALLERY))
def test_each_figure_has_one_axis_per_unit_and_labelled_axes(drawn, name):
    figure = drawn[name]
    assert len(figure.axes) == 1  # a price and a cost share their axis
    ax = figure.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == AXES[name]
    assert render(figure, close=False).startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.parametrize("name", ["step_time_vs_batch", "cost_vs_batch", "cost_vs_context"])
def test_serving_titles_name_model_chips_precision_and_the_fixed_pin(drawn, name):
    title = drawn[name].axes[0].get_title()
    assert "llama_3_1_70b on 8 chip h100, bf16" in title
    fixed = "batch_size 64 sequence" if name == "cost_vs_context" else \
        "context_length 8k token"
    assert fixed in title


def _wall_label(ax) -> str:
    labels = [label for label in ax.get_legend_handles_labels()[1]
              if "does not fit in HBM" in label]
    assert len(labels) == 1
    return labels[0]


def test_the_batch_curves_mark_where_the_kv_cache_stops_fitting(drawn):
    # memory_fill = 1: B = (HBM - weights) / (context x KV per token)
    wall = (HBM - WEIGHT_BYTES) / (8000 * KV_PER_TOKEN)  # 190.3 sequences
    assert memory_wall("batch_size", {**CHIPS, "context_length": "8k token"},
                       SERVING) == pytest.approx(wall, rel=1e-3)
    for name in ("step_time_vs_batch", "cost_vs_batch"):
        assert _wall_label(drawn[name].axes[0]) == \
            f"does not fit in HBM past batch_size = {wall:.4g} sequence"


def test_the_context_curve_marks_where_the_kv_cache_stops_fitting(drawn):
    wall = (HBM - WEIGHT_BYTES) / (64 * KV_PER_TOKEN)  # 23,789 tokens at batch 64
    assert _wall_label(drawn["cost_vs_context"].axes[0]) == \
        f"does not fit in HBM past context_length = {wall:,.0f} token"


def test_weights_that_do_not_fit_shade_the_whole_curve():
    # one H100: 80e9 byte < 141.1e9 byte of weights
    assert memory_wall("batch_size", {"n_chips": "1 chip", "context_length": "8k token"},
                       SERVING) == 0.0


def test_the_tier_plot_states_the_kv_size_and_labels_every_line(drawn):
    ax = drawn["tier_cost_vs_hold"].axes[0]
    assert "KV cache 3,333 byte/token" in ax.get_title()
    lines = [line for line in ax.get_lines() if line.get_color() not in ("grey", "black")]
    drawn_names = [line.get_label() for line in lines]
    annotated = {text.get_text() for text in ax.texts}
    for label in drawn_names:  # a label at each line's right end, as in the legend
        assert label in annotated
    # no two labelled lines share both colour and line style
    styles = [(line.get_color(), line.get_linestyle()) for line in lines]
    assert len(styles) == len(set(styles))
    # each change of the cheapest tier is named on its line
    crossings = [text for text in annotated if "->" in text]
    assert len(crossings) == sum(1 for line in ax.get_lines() if line.get_color() == "grey")
    assert crossings
    # the n_chips pin and the model preset price recomputing the KV (they failed before)
    assert "recompute" in drawn_names
