"""Reports and plots: the lecture report holds every lecture number, HTML is
self-contained, plots are valid files with units on their axes."""

import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

# Each number the lecture deduces, as the report writes it, derived by hand:
LECTURE_NUMBERS = {
    "critical batch, lecture": "critical_batch_size = 2,400 sequence",  # 300 x 1 x 8 / 1
    # 295.2 x 2 x S / 2, S = 671.03e9 / 36.62e9 = 18.32: the preset counts DeepSeek-V3
    # from its architecture (tests/knowledge/test_architecture.py), its 671B and 37B rounded
    "critical batch, careful": "critical_batch_size = 5,409 sequence",
    "sparsity backwards": "sparsity_factor = 8",  # 2400 / 300
    "HBM drain": "hbm_drain_time = 14.4 ms",  # 288e9 / 20e12
    "tokens per second": "tokens_per_second = 128,000 token/s",  # 2000 / 0.015625
    "batch back": "batch_size = 2,000 sequence",  # 128000 x 0.015625
    "latency floor": "latency_floor = 1.165 ms",  # 671e9 / (72 x 8e12)
    "worst case": "worst_case_latency = 40 ms",  # 2 x 20 ms
    # 0.02 x 8 x 2/3600 / 2000 = 44.44e-9 USD/token, shown per million tokens
    "cost per token": "cost_per_token = 0.04444 USD/Mtoken",
    "experts per chip": "experts_per_chip = 4",  # 256 / 64
    "cut ratio": "scale_up_out_time_ratio = 2",  # 2 x 1/8 x 8 x 1
    "memory per chip": "memory_per_chip = 28.97 GB",  # (671e9 + 9600 x 1e4 x 70272) / 256
    "lifetime tokens": "inference_tokens = 259.2e12 token",  # 50e6 x 60 x 86400
    "over-training": "overtrain_factor = 100",  # 200e12 / (20 x 100e9)
    "equal split RL": "rl_tokens = 100e12 token",  # 150e12 / 1.5
    "equal split serving": "inference_tokens = 150e12 token",  # = D_pretrain
    "KV from 200K, lecture": "kv_bytes_per_token = 1,667 byte/token",  # 1e11 / (300 x 2e5)
    "KV from 200K, careful": "kv_bytes_per_token = 3,333 byte/token",  # 2e11 / (300 x 2e5)
    "DeepSeek MLA": "kv_bytes_per_token = 70,272 byte/token",  # 61 x 576 x 2
    "Llama 70B GQA": "kv_bytes_per_token = 327,680 byte/token",  # 80 x 2 x 8 x 128 x 2
    "decode utilisation": "decode_mfu_ratio = 0.2",  # 5 / 25
    "HBM drain (H100)": "tier_drain_time = 23.88 ms",  # 80e9 / 3.35e12
    "DRAM drain": "tier_drain_time = 3.255 s",  # 2e12 / 614.4e9
    "flash drain": "tier_drain_time = 36.57 min",  # 30.72e12 / 14e9 / 60
    "disk drain": "tier_drain_time = 23.39 h",  # 24e12 / 285e6 / 3600
    "fast mode": "fast_batch_ratio = 0.06667",  # 1 / (6 x 2.5)
}


@pytest.fixture(scope="module")
def lecture_report(tmp_path_factory):
    from chalk.cli.main import main

    folder = tmp_path_factory.mktemp("report")
    html, md = folder / "out.html", folder / "out.md"
    assert main(["report", "lecture", "--html", str(html), "--md", str(md)]) == 0
    return folder, html.read_text(encoding="utf-8"), md.read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("label", sorted(LECTURE_NUMBERS))
def test_lecture_report_has_every_number(lecture_report, label):
    _, html, md = lecture_report
    assert LECTURE_NUMBERS[label] in md
    assert LECTURE_NUMBERS[label] in html


class _ExternalRefs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found = []
        self.tags = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        attrs = dict(attrs)
        for key in ("src", "href", "data", "xlink:href"):
            value = attrs.get(key) or ""
            if tag in ("script", "link", "img", "iframe", "object", "embed", "source", "image",
                       "use", "style") and value and not value.startswith(("#", "data:")):
                self.found.append((tag, key, value))


@pytest.mark.slow
def test_html_is_self_contained(lecture_report):
    _, html, _ = lecture_report
    parser = _ExternalRefs()
    parser.feed(html)
    assert parser.found == []
    assert "script" not in parser.tags and "link" not in parser.tags
    assert "@import" not in html and "url(http" not in html
    assert "<math" in html and "<svg" in html  # maths as MathML, plots inline


@pytest.mark.slow
def test_lecture_report_leads_with_a_summary(lecture_report):
    _, html, md = lecture_report
    lines = md.splitlines()
    assert lines[lines.index("## Summary") + 2].startswith(
        "| § | question | answer | the lecture |")
    # 288 GB / 20 TB/s = 14.4 ms against the lecture's 15 ms (24:34): 0.6 / 15 = 4%
    assert "| hbm_drain_time = 14.4 ms | 15 ms (24:34) | within 4% |" in md
    # 1ms..10ms log-uniform: median sqrt(1 x 10) = 3.162 ms, times 4 stages = 12.65 ms
    assert "pipeline_latency_added = 12.65 ms (median; 90% interval" in md
    assert md.index("## Summary") < md.index("## Contents") < md.index("## 1.") \
        < md.index("## Assumptions")
    assert html.index('id="summary"') < html.index('id="s1"')


@pytest.mark.slow
def test_markdown_links_its_plots(lecture_report):
    folder, _, md = lecture_report
    images = [line.rsplit("](", 1)[1].rstrip(")") for line in md.splitlines()
              if line.startswith("![")]
    # one PNG per [[plots]] section (5) and per [[fits]] section (the atlas, 1)
    assert len(images) == 6
    for name in images:
        assert (folder / name).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.slow
def test_report_shows_assumption_sources_and_derivations(lecture_report):
    _, _, md = lecture_report
    assert ("| `hbm_bandwidth` | 3.35 TB/s | preset h100 | "
            "[https://www.nvidia.com/en-us/data-center/h100/]"
            "(https://www.nvidia.com/en-us/data-center/h100/)") in md
    assert "What would change the answer" in md
    assert "Monte Carlo over 20,000 samples" in md


GIVEN = ["--given", "n_chips=8 chip", "--given", "chip_flops=989e12 FLOP/s",
         "--given", "hbm_bandwidth=3.35 TB/s", "--given", "total_params=671e9 param",
         "--given", "active_params=37e9 param", "--given", "bytes_per_param=1 byte/param",
         "--given", "kv_bytes_per_token=70272 byte/token", "--given", "chip_price=2 USD/hour"]

PLOT_ARGS = {
    "step_time_vs_batch": [*GIVEN, "--given", "context_length=4k token"],
    "cost_vs_batch": [*GIVEN, "--given", "context_length=4k token"],
    "cost_vs_context": [*GIVEN, "--given", "batch_size=256 sequence", "--sheet",
                        "gemini_2_5_pro"],
    "tier_cost_vs_hold": ["--given", "kv_bytes_per_token=2000 byte/token"],
    "pipeline_schedule": ["--given", "pipeline_stages=4", "--given", "n_micro_batches=8"],
}
AXIS_LABELS = {
    "step_time_vs_batch": ("batch_size [sequence]", "time per step [ms]"),
    "cost_vs_batch": ("batch_size [sequence]", "cost per token [USD per million tokens]"),
    "cost_vs_context": ("context_length [token]",
                        "cost or price per token [USD per million tokens]"),
    "tier_cost_vs_hold": ("hold_time [s]", "cost per token [USD per million tokens]"),
    "pipeline_schedule": ("time [micro-batch slots]", "pipeline stage (rack)"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PLOT_ARGS))
def test_plots_write_png_and_svg_with_units(run_cli, tmp_path, name):
    png, svg = tmp_path / f"{name}.png", tmp_path / f"{name}.svg"
    assert run_cli("plot", name, *PLOT_ARGS[name], "--out", str(png))[0] == 0
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert run_cli("plot", name, *PLOT_ARGS[name], "--out", str(svg))[0] == 0
    root = ET.fromstring(svg.read_bytes())
    assert root.tag.endswith("svg")
    text = svg.read_text(encoding="utf-8")
    for label in AXIS_LABELS[name]:
        # matplotlib writes text as glyph paths but keeps it in a comment
        assert f"<!-- {label} -->" in text


def test_bad_deduction_file_is_one_line_and_writes_nothing(run_cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('title = "x"\ncolour = "red"\n[[questions]]\ntitle = "q"\n'
                   'targets = ["step_time"]\n')
    out = tmp_path / "out.html"
    status, stdout, stderr = run_cli("report", str(bad), "--html", str(out))
    assert status == 2 and stdout == ""
    assert stderr == "chalk: error: bad.toml, field 'colour': unknown key\n"
    assert not out.exists()


def test_failing_question_names_itself_and_writes_nothing(run_cli, tmp_path):
    bad = tmp_path / "under.toml"
    bad.write_text('title = "x"\n[[questions]]\ntitle = "too few pins"\n'
                   'targets = ["critical_batch_size"]\n')
    out = tmp_path / "out.md"
    status, _, stderr = run_cli("report", str(bad), "--md", str(out))
    assert status == 2
    assert stderr.startswith("chalk: error: question 'too few pins': not enough pins")
    assert list(tmp_path.iterdir()) == [bad]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_html_renders_in_headless_chromium(lecture_report, tmp_path):
    from PIL import Image

    folder, _, _ = lecture_report
    shot = tmp_path / "shot.png"
    subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
         f"--screenshot={shot}", "--window-size=1200,3000",
         (folder / "out.html").as_uri()],
        capture_output=True, timeout=120, check=True)
    image = Image.open(shot).convert("L")
    lo, hi = image.getextrema()
    assert hi - lo > 100  # text on a page, not a blank canvas
    histogram = image.histogram()
    assert sum(histogram[:128]) > 0.002 * sum(histogram)  # a fair amount of dark ink
