"""The lecture's blackboard figures, drawn from the engine.

Every curve comes from a sweep of the knowledge base's relations and every
marker (latency floor, critical batch, crossovers) from a solve, so a figure
changes when a pin does. Axes carry units. matplotlib is imported only here.
"""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np

from chalk.api import solve
from chalk.applications.sweep import sweep
from chalk.symbolic.errors import ChalkError, UnderdeterminedError, UsageError
from chalk.symbolic.printing.quantities import format_quantity
from chalk.symbolic.units import ureg

PLOTS: dict[str, Callable] = {}


def _figure(title: str):
    # No backend is forced: headless runs get Agg by default, and a notebook's inline
    # backend keeps working after a chalk plot.
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.6), dpi=110)
    ax.set_title(title, fontsize=11)
    ax.grid(True, which="both", alpha=0.25)
    return fig, ax


# Colours cycle within a line style, then the style changes, so up to 40 series never
# share both colour and line style.
_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
            "tab:pink", "tab:gray", "tab:olive", "tab:cyan")
_STYLES = ("-", "--", "-.", ":")


def series_style(index: int) -> dict:
    """Colour and line style of the ``index``-th of many series: distinct for the first
    40."""
    return {"color": _COLOURS[index % len(_COLOURS)],
            "linestyle": _STYLES[(index // len(_COLOURS)) % len(_STYLES)]}


def _legend(ax, fontsize=7, handles=None, below=False):
    """The legend outside the axes, so it covers no curve or label: on the right, or
    ``below`` (under the x label) when the right holds a second axis."""
    kwargs = {"handles": handles} if handles is not None else {}
    if below:
        return ax.legend(fontsize=fontsize, loc="upper center", bbox_to_anchor=(0.5, -0.14),
                         borderaxespad=0.0, ncol=2, **kwargs)
    return ax.legend(fontsize=fontsize, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                     borderaxespad=0.0, **kwargs)


def _register(name):
    def wrap(fn):
        PLOTS[name] = fn
        return fn
    return wrap


def _try(target, given, presets):
    try:
        return solve(target, given, presets)
    except ChalkError:
        return None


# Pins a reader needs in a figure's title to know what it shows, in this order.
_TITLE_PINS = ("n_chips", "batch_size", "context_length")


def subject(given=(), presets=(), swept: str | None = None) -> str:
    """What a figure is drawn for, for its title: the model, the chips, the precision and
    the pins that set the scene (``llama_3_1_70b on 8 chip h100, bf16; context_length
    8k token``). ``swept`` (the x axis) is left out."""
    from chalk.knowledge.presets import preset as find_preset
    from chalk.solvers.pinning.pins import parse_given

    pins = {n: getattr(v, "text", v) for n, v in parse_given(given)}
    chosen = [p if not isinstance(p, str) else find_preset(p)
              for p in ([presets] if isinstance(presets, str) else presets)]
    kinds = {kind: [p.name for p in chosen if p.kind == kind]
             for kind in ("model", "accelerator", "precision", "conventions")}
    chips = ", ".join(kinds["accelerator"])
    if "n_chips" in pins and swept != "n_chips":
        chips = f"{pins['n_chips']} {chips}".strip()
    parts = [" on ".join(x for x in (", ".join(kinds["model"]), chips) if x)]
    parts += kinds["precision"] + [f"{c} conventions" for c in kinds["conventions"]]
    head = ", ".join(p for p in parts if p)
    scene = [f"{n} {pins[n]}" for n in _TITLE_PINS if n in pins and n not in (swept,
                                                                              "n_chips")]
    return "; ".join(x for x in (head, ", ".join(scene)) if x)


def _titled(what: str, given, presets, swept: str | None) -> str:
    detail = subject(given, presets, swept)
    return f"{what}\n{detail}" if detail else what


def memory_wall(over: str, given=(), presets=()) -> float | None:
    """Where the weights and KV cache stop fitting as ``over`` (batch_size or
    context_length) grows: its value in its declared unit at ``memory_fill = 1``, 0 when
    the weights alone do not fit, None when the pins do not say."""
    from chalk.solvers.pinning.pins import parse_given

    pins = {n: v for n, v in parse_given(given) if n != over}
    weights = _try("weight_fill", pins, presets)
    if weights is not None and weights.value("weight_fill") >= 1:
        return 0.0
    wall = _try(over, {**pins, "memory_fill": "1"}, presets)
    return None if wall is None else wall.value(over)


def _mark_memory_wall(ax, over: str, unit: str, given, presets) -> float | None:
    """Shade where the swept quantity no longer fits in HBM, and label the wall."""
    wall = memory_wall(over, given, presets)
    if wall is None:
        return None
    low, high = ax.get_xlim()
    if wall <= 0:
        ax.axvspan(low, high, color="tab:red", alpha=0.08,
                   label="the weights alone do not fit in HBM")
    elif wall < high:
        ax.axvspan(max(wall, low), high, color="tab:red", alpha=0.08,
                   label=f"does not fit in HBM past {over} = "
                         f"{format_quantity(wall, ureg.Unit(unit))}")
        ax.axvline(wall, color="tab:red", lw=1.2, ls="-")
    ax.set_xlim(low, high)
    return wall


@_register("step_time_vs_batch")
def step_time_vs_batch(given=(), presets=(), low="1 sequence", high="16384 sequence"):
    """Step time against batch: compute, weight fetch, KV fetch and their roofline."""
    parts = ["t_compute", "t_weight_fetch", "t_kv_fetch", "step_time"]
    table = sweep(parts, "batch_size", low, high, 200, True, given, presets)
    fig, ax = _figure(_titled("Time per decode step vs batch size", given, presets,
                              "batch_size"))
    ms = 1e3
    styles = {"t_compute": ":", "t_weight_fetch": "--", "t_kv_fetch": "-."}
    for index, name in enumerate(parts[:-1]):
        ax.plot(table.x_values, table.y_values[name] * ms, styles[name], label=name,
                color=_COLOURS[index])
    ax.plot(table.x_values, table.y_values["step_time"] * ms, "k-", lw=2.2,
            label="step_time = max(t_compute, t_weight_fetch + t_kv_fetch)")
    floor = _try("latency_floor", given, presets)
    if floor is not None:
        ax.axhline(floor.value("latency_floor", "s") * ms, color="tab:olive", lw=1,
                   label=f"latency_floor {floor.derivation.show('latency_floor')}")
    critical = _try("critical_batch_size", given, presets)
    if critical is not None:
        b = critical.value("critical_batch_size", "sequence")
        ax.axvline(b, color="tab:brown", lw=1,
                   label=f"critical_batch_size {critical.derivation.show('critical_batch_size')}")
    for index, _, before, after in table.changes:
        ax.plot(table.x_values[index], table.y_values["step_time"][index] * ms, "o",
                color="tab:purple", label=f"{before} -> {after}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("batch_size [sequence]")
    ax.set_ylabel("time per step [ms]")
    _mark_memory_wall(ax, "batch_size", "sequence", given, presets)
    _legend(ax)
    return fig


@_register("cost_vs_batch")
def cost_vs_batch(given=(), presets=(), low="1 sequence", high="16384 sequence"):
    """Cost per token against batch: weight reads amortised down to the compute floor."""
    table = sweep(["cost_per_token"], "batch_size", low, high, 200, True, given, presets)
    fig, ax = _figure(_titled("Cost per token vs batch size", given, presets, "batch_size"))
    ax.plot(table.x_values, table.y_values["cost_per_token"] * 1e6, "k-", lw=2,
            label="cost_per_token")
    floor = _try("cost_per_token_floor", given, presets)
    if floor is not None:
        ax.axhline(floor.value("cost_per_token_floor", "USD/token") * 1e6, color="tab:red",
                   lw=1, label=f"compute floor {floor.derivation.show('cost_per_token_floor')}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("batch_size [sequence]")
    ax.set_ylabel("cost per token [USD per million tokens]")
    _mark_memory_wall(ax, "batch_size", "sequence", given, presets)
    _legend(ax, 8)
    return fig


@_register("cost_vs_context")
def cost_vs_context(given=(), presets=(), sheet: str | None = None, low="1k token",
                    high="1M token"):
    """Cost per token against context length, with a provider's price tiers over it."""
    table = sweep(["cost_per_token"], "context_length", low, high, 200, True, given, presets)
    fig, ax = _figure(_titled("Cost per token vs context length", given, presets,
                              "context_length"))
    ax.plot(table.x_values, table.y_values["cost_per_token"] * 1e6, "k-", lw=2,
            label="cost_per_token (chip time)")
    for index, quantity, before, after in table.changes:
        ax.axvline(table.x_values[index], color="tab:purple", lw=1, ls=":",
                   label=f"{quantity}: {before} -> {after}")
    ax.set_xscale("log")
    ax.set_xlabel("context_length [token]")
    # a price and a cost are both USD per million tokens: one axis, so that a price drawn
    # above a cost is higher
    ax.set_ylabel("cost or price per token [USD per million tokens]")
    if sheet is not None:
        from chalk.knowledge.price_sheets import price_sheet

        prices = price_sheet(sheet)
        xs = table.x_values
        ys = np.full(xs.shape, prices.prices["output"].quantity().to("USD/Mtoken").magnitude)
        if prices.long_context and "output" in prices.long_context:
            threshold = prices.long_context["threshold"].quantity().to("token").magnitude
            above = prices.long_context["output"].quantity().to("USD/Mtoken").magnitude
            ys = np.where(xs > threshold, above, ys)
            ax.axvline(threshold, color="tab:orange", lw=1, ls="--",
                       label=f"long-context price from {threshold:,.0f} token")
        ax.step(xs, ys, where="post", color="tab:orange",
                label=f"{prices.title} output price")
    ax.set_ylim(bottom=0)
    _mark_memory_wall(ax, "context_length", "token", given, presets)
    _legend(ax, 8, below=True)
    return fig


@_register("tier_cost_vs_hold")
def tier_cost_vs_hold(given=(), presets=(), kv_bytes: str | None = None):
    """Cost of keeping one token's KV against hold time, per memory tier, crossovers marked.

    Tiers whose curves coincide (the same price per byte-hour and per read) are one line
    named by all of them; each line is labelled at its right end as well as in the legend.
    """
    from chalk.applications.tiers import tier_costs, tier_table
    from chalk.solvers.pinning.pins import parse_given

    pins = {n: getattr(v, "text", v) for n, v in parse_given(given)}  # drop source notes
    kv = kv_bytes or pins.pop("kv_bytes_per_token", None)
    if kv is None:
        raise UsageError("the tier plot needs kv_bytes_per_token, e.g. --given "
                         "'kv_bytes_per_token=2000 byte/token'")
    try:  # recomputing the KV instead of holding it, priced from the pins and presets
        costs = tier_costs(kv, remat=pins if (pins or presets) else None, presets=presets)
    except UnderdeterminedError:
        if pins:
            raise
        costs = tier_costs(kv)  # the presets alone do not price recomputing: tiers only

    size = format_quantity(costs.kv_bytes_per_token, ureg.Unit("byte/token"))
    fig, ax = _figure(f"Cost of holding a token's KV cache vs hold time\nKV cache {size}")
    # The tiers that are cheapest somewhere (and recomputing) are lines of their own, each
    # labelled at its right end; the rest of each kind is one shaded band from its
    # cheapest to its dearest, so that 18 tiers stay legible.
    kinds = {row.name: row.kind for row in tier_table()}
    alone = list(dict.fromkeys(costs.cheapest)) + [n for n in costs.costs if n not in kinds]
    for index, name in enumerate(n for n in costs.costs if n in alone):
        label, curve, style = name.removeprefix("tier_"), costs.costs[name], series_style(index)
        ax.plot(costs.hold_times, curve * 1e6, lw=1.6, label=label, **style)
        ax.annotate(label, (costs.hold_times[-1], curve[-1] * 1e6), xytext=(3, 0),
                    textcoords="offset points", fontsize=7, va="center",
                    color=style["color"])
    others: dict[str, list[str]] = {}
    for name in costs.costs:
        if name not in alone:
            others.setdefault(kinds[name], []).append(name)
    for index, (kind, names) in enumerate(others.items()):
        stacked = np.vstack([costs.costs[n] for n in names]) * 1e6
        ax.fill_between(costs.hold_times, stacked.min(axis=0), stacked.max(axis=0),
                        color=_COLOURS[(index + len(alone)) % len(_COLOURS)], alpha=0.18,
                        lw=0, label=f"other {kind} tiers ({len(names)}): "
                                    f"{', '.join(n.removeprefix('tier_') for n in names)}"
                        if len(names) <= 3 else f"other {kind} tiers ({len(names)})")
    for index, (t, before, after) in enumerate(costs.crossovers):
        ax.axvline(t, color="grey", lw=0.8, ls=":",
                   label="the cheapest changes (named on the line)" if index == 0
                   else "_crossover")
        ax.text(t, ax.get_ylim()[0], f" {before.removeprefix('tier_')} -> "
                f"{after.removeprefix('tier_')}", rotation=90, fontsize=6, color="grey",
                va="bottom", ha="right")
    for mark, label in ((300, "5 min"), (3600, "1 h")):
        # black, so no tier's colour and style is read as a hold-time mark
        ax.axvline(mark, color="black", lw=1, ls="--")
        ax.text(mark, ax.get_ylim()[1], f" {label}", color="black", fontsize=8, va="top")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("hold_time [s]")
    ax.set_ylabel("cost per token [USD per million tokens]")
    _legend(ax)
    return fig


@_register("pipeline_schedule")
def pipeline_schedule(given=(), presets=(), training: bool = True):
    """Which rack works on which micro-batch when: a GPipe-style schedule, bubbles shaded."""
    from chalk.solvers.pinning.pins import parse_given

    pins = dict(parse_given(given))
    s = solve("pipeline_bubble_fraction", pins, presets)
    stages = int(round(s.value("pipeline_stages")))
    micro = int(round(s.value("n_micro_batches")))
    if not (1 <= stages <= 64 and 1 <= micro <= 256):
        raise UsageError("the schedule plot draws up to 64 stages and 256 micro-batches")
    fig, ax = _figure(f"Pipeline schedule: {stages} stages, {micro} micro-batches, "
                      f"bubble {100 * s.value('pipeline_bubble_fraction'):.0f}% "
                      "(forward, then backward)")
    slots = micro + stages - 1
    for rack in range(stages):
        ax.broken_barh([(0, 2 * slots)], (rack - 0.4, 0.8), facecolors="0.88")  # idle
        for m in range(micro):
            forward = rack + m
            backward = slots + (stages - 1 - rack) + m
            ax.broken_barh([(forward, 1)], (rack - 0.4, 0.8), facecolors="tab:blue",
                           edgecolor="white")
            ax.broken_barh([(backward, 1)], (rack - 0.4, 0.8), facecolors="tab:orange",
                           edgecolor="white")
            if micro <= 16:
                ax.text(forward + 0.5, rack, str(m), ha="center", va="center", fontsize=7,
                        color="white")
                ax.text(backward + 0.5, rack, str(m), ha="center", va="center", fontsize=7)
    ax.set_xlim(0, 2 * slots)
    ax.set_ylim(stages - 0.5, -0.5)
    ax.set_yticks(range(stages))
    ax.set_xlabel("time [micro-batch slots]")
    ax.set_ylabel("pipeline stage (rack)")
    ax.grid(False)
    return fig


def render(fig, fmt: str = "png", close: bool = True) -> bytes:
    """The figure as PNG or SVG bytes (closed afterwards unless ``close`` is false)."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, bbox_inches="tight")
    if close:
        plt.close(fig)
    return buffer.getvalue()


def plot(name: str, given=(), presets=(), **options):
    """Draw one of chalk's named figures from pins.

    Parameters
    ----------
    name : str
        ``step_time_vs_batch``, ``cost_vs_batch``, ``cost_vs_context``,
        ``tier_cost_vs_hold`` or ``pipeline_schedule``.
    given, presets
        As for :func:`chalk.solve`: the pins the curves are drawn at.
    **options
        The figure's own options: ``low`` and ``high`` (the swept range, value text)
        for the batch and context plots, ``sheet`` (a price sheet whose price steps
        ``cost_vs_context`` overlays), ``kv_bytes`` for ``tier_cost_vs_hold``,
        ``training`` for ``pipeline_schedule``.

    Returns
    -------
    matplotlib.figure.Figure
        Axes carry units. The figure stays open; close it when done.

    Raises
    ------
    ChalkError
        An unknown figure name (the message lists them) or pins that do not
        determine the curves.
    """
    if name not in PLOTS:
        raise UsageError(f"unknown plot {name!r}; choose from {', '.join(PLOTS)}")
    return PLOTS[name](given, presets, **options)

