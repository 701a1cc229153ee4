"""The command line: answers, JSON, and one-line errors for user mistakes."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

CRITICAL = [
    "solve", "critical_batch_size",
    "--given", "chip_flops=989e12 FLOP/s", "--given", "hbm_bandwidth=3.35 TB/s",
    "--given", "bytes_per_param=2 byte/param", "--given", "flops_per_param=2 FLOP/param/token",
    "--given", "total_params=671e9 param", "--given", "active_params=37e9 param",
]


def test_solve_prints_answer_and_derivation(run_cli):
    status, out, err = run_cli(*CRITICAL)
    assert status == 0 and err == ""
    assert out.startswith("critical_batch_size = 5,354 sequence")
    for relation in ("hardware_intensity", "sparsity_factor", "critical_batch_size"):
        assert f"{relation}:" in out  # each relation cited with its source
    assert "(989 TFLOP/s)/(3.35 TB/s)" in out  # values substituted


def test_brief_prints_the_answer_and_one_line_per_assumption(run_cli):
    status, out, err = run_cli("solve", "critical_batch_size", "--preset", "lecture",
                               "--given", "sparsity_factor=8", "--brief")
    assert status == 0 and err == ""
    lines = out.splitlines()
    # the lecture's 300 FLOP/byte x sparsity 8 x 1 byte/param / (1 FLOP/param/token x
    # 1 token/sequence, no drafted tokens accepted) = 2,400 sequences
    assert lines[0] == "critical_batch_size = 2,400 sequence"
    assumed = lines[lines.index("assumed") + 1:]
    conventions = [line.strip() for line in assumed if "(convention lecture" in line]
    assert [line.split(" (")[0] for line in conventions] == [
        "flops_per_param = 1 FLOP/(param·token)", "bytes_per_param = 1 byte/param",
        "hardware_intensity = 300 FLOP/byte",
        "accepted_tokens_per_step = 0 token/sequence"]  # no speculation: one token a step
    assert "derivation" not in lines and "pins" not in lines
    assert lines[-1] == "(the pins' sources and every step: the same command without --brief)"


def test_json_shape(run_cli):
    status, out, _ = run_cli(*CRITICAL, "--json")
    assert status == 0
    body = json.loads(out)
    assert set(body) >= {"results", "steps", "pins", "checks"}
    result = body["results"]["critical_batch_size"]
    assert result["unit"] == "sequence"
    expected = 989e12 / 3.35e12 * 2 * (671 / 37) / 2
    assert result["value"] == pytest.approx(expected, rel=1e-9)
    assert body["steps"][-1]["solved_for"] == ["critical_batch_size"]
    assert body["pins"]["hbm_bandwidth"]["value"] == pytest.approx(3.35e12)
    assert body["pins"]["hbm_bandwidth"]["unit"] == "byte/s"


def test_explain_shows_plan_without_numbers(run_cli):
    status, out, _ = run_cli("explain", "critical_batch_size", "--preset", "lecture")
    assert status == 0
    assert "not determined: critical_batch_size" in out
    assert "{sparsity_factor}" in out


def test_list_filters(run_cli):
    status, out, _ = run_cli("list", "relations", "--filter", "drain")
    assert status == 0
    assert "hbm_drain_time" in out and "critical_batch_size" not in out


def test_list_conditions_shows_each_bound_and_what_breaking_it_means(run_cli):
    status, out, _ = run_cli("list", "conditions")
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == "conditions (3)"
    assert "  whole_sequences              batch_size >= 1 sequence" in lines
    assert "  fits_in_memory               memory_fill <= 1" in lines
    assert "  weights_fit                  weight_fill <= 1" in lines
    status, out, _ = run_cli("list", "conditions", "--filter", "memory", "--json")
    assert [row["condition"] for row in json.loads(out)["conditions"]] == [
        "memory_fill <= 1", "weight_fill <= 1"]


BAD_INPUTS = [
    (["solve", "critical_batch_sise", "--preset", "lecture"],
     "chalk: error: unknown quantity 'critical_batch_sise'; did you mean "
     "'critical_batch_size' or 'micro_batch_size' or 'max_batch_size'?"),
    (["solve", "critical_batch_size", "--given", "hbm_bandwidth=20 TB"],
     "chalk: error: hbm_bandwidth needs a unit like byte/s (bytes/time), but '20 TB' is bytes"),
    (["solve", "sparsity_factor", "--preset", "lecture", "--given", "critical_batch_size=2400"],
     "chalk: error: critical_batch_size=2400 has no unit; write it with a unit such as "
     "'2400 sequence'"),
    (["solve", "critical_batch_size", "--preset", "lecture"],
     "chalk: error: not enough pins to determine critical_batch_size; also pin "
     "sparsity_factor; or, from inputs, pin active_params, total_params"),
    (["solve", "hardware_intensity", "--given", "hbm_capacity=288 GB",
      "--given", "hbm_bandwidth=20 TB/s", "--given", "hbm_drain_time=20 ms",
      "--given", "chip_flops=5e15 FLOP/s"],
     "chalk: error: pins disagree in relation hbm_drain_time (hbm_drain_time = "
     "hbm_capacity/hbm_bandwidth): left side 20 ms, right side 14.4 ms (28% apart); fix or "
     "drop one of: hbm_bandwidth, hbm_capacity, hbm_drain_time"),
    (["solve", "critical_batch_size", "--given", "hbm_bandwidth=-3.35 TB/s"],
     "chalk: error: hbm_bandwidth=-3.35 TB/s is not allowed: hbm_bandwidth must be positive"),
    (["solve", "critical_batch_size", "--given", "batch_size=__import__('os').system('true')"],
     "chalk: error: cannot read \"__import__('os').system('true')\": expected a number such "
     "as 3.35, 2e12 or 200k"),
    (["solve", "critical_batch_size", "--given", "__class__=1"],
     "chalk: error: cannot read '__class__=1': '__class__' is not a quantity name; names are "
     "lower-case words joined by '_'"),
    (["solve", "critical_batch_size", "--preset", "lectur"],
     "chalk: error: unknown preset 'lectur'; did you mean 'lecture'?"),
    (["solve", "hbm_drain_time", "--given", "hbm_drain_time=20 ms"],
     "chalk: error: hbm_drain_time is both pinned and asked for; drop the pin or the target"),
    (["solve", "critical_batch_size", "--given", "hbm_bandwidth=3.35 TB/s; import os"],
     "chalk: error: cannot read '3.35 TB/s; import os': unexpected character ';' in a unit; "
     "write a number then a unit, e.g. '3.35 TB/s'"),
    (["solve", "critical_batch_size", "--given", "hbm_bandwidth=1e999 B/s"],
     "chalk: error: cannot read '1e999 B/s': exponent 999 is out of range (at most ±300)"),
    # a negative seed reached numpy with a range pin: was ValueError and a traceback
    (["solve", "hbm_drain_time", "--given", "hbm_capacity=288 GB",
      "--given", "hbm_bandwidth=10..20 TB/s", "--seed", "-1"],
     "chalk: error: --seed must be a whole number, 0 or more, not -1"),
    (["frobnicate"],
     "chalk: error: argument COMMAND: invalid choice: 'frobnicate' (choose from 'solve', "
     "'explain', 'imply', 'atlas', 'sweep', 'plot', 'fit', 'report', 'optimize', "
     "'calibrate', 'list'); see 'chalk --help'"),
]


@pytest.mark.parametrize(("argv", "message"), BAD_INPUTS, ids=[" ".join(a)[:50] for a, _ in
                                                               BAD_INPUTS])
def test_user_mistakes_get_one_line_and_status_2(run_cli, argv, message):
    status, out, err = run_cli(*argv)
    assert status == 2
    assert out == ""
    assert err == message + "\n"
    assert "Traceback" not in err


def test_console_script_rejects_code_without_running_it(tmp_path):
    marker = tmp_path / "pwned"
    payload = f"batch_size=__import__('os').system('touch {marker}')"
    script = [sys.executable, "-m", "chalk", "solve", "critical_batch_size",
              "--given", payload]
    done = subprocess.run(script, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert not marker.exists()


def test_readme_fit_examples(run_cli):
    # the two commands of the README's "Does it fit?" section, by hand, in DeepSeek's own
    # layout (dp_attention: every GPU an attention group of its own), and the first again in
    # the conventions' Megatron layout the prose sets beside it. The preset counts
    # DeepSeek-V3 from its architecture (tests/knowledge/test_architecture.py): one MLA
    # layer 7,168 x 1,536 + 7,168 x 576 + 7,168 x 128 x 128 + 512 x 128 x 256 + 128 x
    # 1,536 x 192 = 187,105,280 params; the total 671,025,397,760, of which the routed
    # experts are 3 x 7,168 x 2,048 x 256 x 58 and the input table 129,280 x 7,168.
    attention = 7168 * 1536 + 7168 * 576 + 7168 * 128 * 128 + 512 * 128 * 256 \
        + 128 * 1536 * 192
    assert attention == 187_105_280
    total, routed, table = 671_025_397_760, 3 * 7168 * 2048 * 256 * 58, 129_280 * 7168
    kv = 4000 * 576 * 61 * 2  # byte a sequence: 281,088,000
    read_per_step = 1 / 30 * 32 * 3.35e12  # byte the 32 chips read in 1/30 s
    hbm = 32 * 80e9

    def batch(copies, extra):
        # memory-bound: every weight read but the input table and the (248/256)^B of the
        # routed experts no token picks, plus each chip's extra attention copy, plus
        # ``copies`` of every sequence's KV; the batch and the unread share depend on each
        # other: iterate from every expert read
        b = 0.0
        for _ in range(30):
            b = (read_per_step - 2 * (total - table - routed * (248 / 256) ** b + extra)) / (
                copies * kv)
        return b

    # data-parallel attention: 31 extra copies of 61 layers' attention (353.8e9 params),
    # each sequence's KV once: B = (3.5733e12 - 2.0478e12) / 281,088,000 = 5,427.2, whose
    # fill is (2 x 671.03e9 + 2 x 353.8e9 + B kv) / 2.56e12 = 1.397; the largest batch that
    # fits is (2.56e12 - 1,342.05e9 - 707.6e9) / 281,088,000 = 1,815.5
    extra = 31 * 61 * attention
    dp = batch(1, extra)
    assert dp == pytest.approx(5427.2, abs=0.1)
    dp_fill = (2 * total + 2 * extra + dp * kv) / hbm
    assert dp_fill == pytest.approx(1.397, abs=1e-3)
    largest = (hbm - 2 * total - 2 * extra) / kv
    assert largest == pytest.approx(1815.5, abs=0.1)
    # Megatron's layout: one attention copy split 32 ways, MLA's latent whole on every chip,
    # 32 copies of each sequence's KV: B = 248.3, fill (1,342.05e9 + 32 x 248.3 x
    # 281,088,000) / 2.56e12 = 1.397 again (a memory-bound step reads what the chips hold)
    megatron = batch(32, 0)
    assert megatron == pytest.approx(248.3, abs=0.05)
    megatron_fill = (2 * total + 32 * megatron * kv) / hbm
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Does it fit?", 1)[1].split("```", 2)[1]
    first, second = [shlex.split(line)[1:] for line in section.strip().splitlines()]
    assert "dp_attention" in first and "dp_attention" in second
    at = first.index("dp_attention")
    assert first[at - 1] == "--preset"
    runs = {"dp": (first, dp, dp_fill),
            "megatron": (first[:at - 1] + first[at + 1:], megatron, megatron_fill)}
    for layout, (argv, expected, fill) in runs.items():
        status, out, _ = run_cli(*argv)
        assert status == 0, layout
        lines = out.splitlines()
        assert lines[0] == f"batch_size = {expected:,.4g} sequence", layout
        # a fill past 1 reads as failed, once: no "(checked ...)" line beside the flag
        assert lines[2].startswith(f"flag: memory_fill = {fill:.4g} is above 1"), layout
        assert "(checked: memory_fill" not in out
    status, out, _ = run_cli(*second)
    assert status == 0
    assert out.splitlines()[0] == f"batch_size = {largest:,.4g} sequence"
    assert "active constraint: memory capacity" in out


def test_readme_attention_example(run_cli):
    # README "attention, prefill and model sizes": MLA attention over 5,000 tokens,
    # 2 x 128 heads x (2 x 512 + 64) x 61 layers x 5,000 = 84.95e9 FLOP per token, against
    # 2 x 36.62e9 active parameters (DeepSeek-V3's architecture count) = 73.25e9
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Beyond the lecture: attention", 1)[1].split("```", 2)[1]
    status, out, _ = run_cli(*shlex.split(section.strip())[1:])
    assert status == 0
    lines = out.splitlines()
    assert lines[0].startswith("attention_flops_per_token = 84.95e9 FLOP/token")
    assert lines[1] == "flops_per_token = 73.25e9 FLOP/token"
    assert f"{2 * 128 * 1088 * 61 * 5000:.4g}" == "8.495e+10"


def test_brief_notes_say_what_was_assumed_for_a_reader(run_cli):
    status, out, _ = run_cli("solve", "step_time", "--preset", "h100", "--preset", "bf16",
                             "--preset", "llama_3_1_70b", "--given", "batch_size=64 sequence",
                             "--given", "context_length=8k token", "--given", "n_chips=8 chip",
                             "--brief")
    assert status == 0
    notes = [line.strip() for line in out.splitlines() if line.strip().startswith("note:")]
    # the published 70.55e9 gives way to the architecture's own count (issue 22's "one
    # size per model"), said as what it means, not as the engine's bookkeeping
    assert ("note: active_params is computed from the architecture (d_ff, d_head, d_model "
            "and 4 more), not the published 70.55e9 param of preset llama_3_1_70b") in notes
    assert not any("set aside:" in note or "hold whatever else" in note for note in notes)


def test_largest_batch_json_gives_the_whole_batch_the_api_gives(run_cli):
    # one answer on every path: the CLI's whole batch is the API's, the edge rounded down
    import math

    from chalk.applications.optimize import largest_batch

    pins = {"n_chips": "8 chip", "context_length": "8k token"}
    presets = ["h100", "bf16", "llama_3_1_70b"]
    argv = ["optimize", "largest-batch", *(a for p in presets for a in ("--preset", p)),
            *(a for k, v in pins.items() for a in ("--given", f"{k}={v}")), "--json"]
    status, out, err = run_cli(*argv)
    assert status == 0, err
    found = largest_batch(pins, presets)
    assert json.loads(out)["whole_batch"] == found.whole == math.floor(found.batch)
    assert found.whole >= 1


def test_the_shared_parser_carries_nothing_from_one_command_line_to_the_next():
    from chalk.cli.main import build_parser

    parser = build_parser()
    first = parser.parse_args(["solve", "step_time", "--given", "n_chips=8 chip",
                               "--preset", "h100"])
    second = build_parser().parse_args(["solve", "step_time"])
    assert build_parser() is parser
    assert first.given == ["n_chips=8 chip"] and first.preset == ["h100"]
    assert second.given == [] and second.preset == []
