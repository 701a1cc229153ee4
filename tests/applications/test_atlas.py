"""The atlas: every shipped price sheet fitted at once; two rows worked by hand."""

import math

import pytest

from chalk.applications.atlas import RATIO_SIGMA, STEP_SIGMA, atlas

Z90 = 1.6448536269514722


@pytest.fixture(scope="module")
def result():
    return atlas()


def _widening(result) -> float:
    """The sheets scatter about their provider's ratio more than the stated log sd of 0.1,
    so the atlas widens every decode interval by sqrt(chi-squared / dof) (issue 24): chi-
    squared of the log ratios about each provider's mean log, over the sheets counted once,
    dof = those sheets less one utilisation per provider."""
    repeats = {r.subject: r.repeats for r in result.decode_fit.residuals}
    logs: dict[str, list[float]] = {}
    for row in result.rows:
        if repeats[row.sheet] is None:
            logs.setdefault(row.provider, []).append(math.log(row.ratio))
    chi2 = sum(((x - sum(xs) / len(xs)) / RATIO_SIGMA) ** 2
               for xs in logs.values() for x in xs)
    dof = sum(len(xs) for xs in logs.values()) - len(logs)
    return max(1.0, math.sqrt(chi2 / dof))


def test_claude_opus_4_6_row_by_hand(result):
    row = result.row("claude_opus_4_6")
    # output / input = 25 / 5; all 11 Anthropic sheets price output at 5x input, so the
    # provider's decode utilisation is 1/5. Three of them repeat another's number from the
    # same source (opus 4.7 and fable 5.1 cite opus 4.5's pricing page as it does,
    # sonnet 4.5 the same two sources as opus 4.6) and count once (issue 24): 8
    # measurements, a 90% interval of x/÷ exp(1.645 x 0.1/sqrt 8)
    assert row.ratio == pytest.approx(5)
    anthropic = {r.sheet for r in result.rows if r.provider == "anthropic"}
    assert len(anthropic) == 11
    repeats = {r.subject: r.repeats for r in result.decode_fit.residuals}
    counted = sum(repeats[sheet] is None for sheet in anthropic)
    assert counted == 8
    half = Z90 * RATIO_SIGMA / math.sqrt(counted) * _widening(result)
    assert row.decode == pytest.approx((0.2, 0.2 * math.exp(-half), 0.2 * math.exp(half)),
                                       rel=1e-4)
    # KV from the 200k step: 100e9 param x 2 FLOP/param/token / (300 FLOP/byte x 200,000)
    kv = 100e9 * 2 / (300 * 200_000)
    spread = math.exp(Z90 * STEP_SIGMA)
    assert row.kv == pytest.approx((kv, kv / spread, kv * spread), rel=1e-4)
    # a 5-minute write at 6.25 against 5 USD/Mtoken input: 1.25 USD/Mtoken per 1/12 h =
    # 15 USD/Mtoken/hour = 15e-6 USD per token-hour over 3,333 byte = 4.5 USD/GB/hour
    assert row.storage[0] == pytest.approx(15e-6 / kv * 1e9, rel=1e-4)
    assert row.tier.startswith("flash")  # 5 min is nearest flash's drain times


def test_gemini_2_5_pro_row_by_hand(result):
    row = result.row("gemini_2_5_pro")
    # Google's five sheets: output/input 10/1.25, 12/2, 12/2, 2.5/0.3, 3/0.5; one
    # utilisation u fits ln(1/ratio) in least squares with equal weights: the mean log
    ratios = [10 / 1.25, 12 / 2, 12 / 2, 2.5 / 0.3, 3 / 0.5]
    u = math.exp(-sum(math.log(r) for r in ratios) / len(ratios))
    half = Z90 * RATIO_SIGMA / math.sqrt(len(ratios)) * _widening(result)
    assert row.decode == pytest.approx((u, u * math.exp(-half), u * math.exp(half)),
                                       rel=1e-4)
    # this sheet's z: (ln fitted ratio - ln 8) / 0.1 = (ln(1/u) - ln 8) / 0.1
    assert row.ratio_z == pytest.approx((math.log(1 / u) - math.log(8)) / RATIO_SIGMA,
                                        rel=1e-4)
    # 4.5 USD/Mtoken/hour of storage over 3,333 byte/token = 1.35 USD/GB/hour
    kv = 100e9 * 2 / (300 * 200_000)
    assert row.storage[0] == pytest.approx(4.5e-6 / kv * 1e9, rel=1e-4)


def test_a_public_architecture_is_shown_beside(result):
    row = result.row("deepseek_v3_chat")
    # MLA: (512 latent + 64 RoPE) x 61 layers x 2 bytes
    assert row.kv_true == pytest.approx((512 + 64) * 61 * 2)
    assert row.kv is None  # no long-context step to imply one from
    assert row.cells()["cache USD/GB/h"] == "free"


@pytest.mark.slow  # the atlas again as a command, and a PNG drawn: the slow tier
def test_cli_runs_from_the_readme(run_cli, tmp_path):
    out_file = tmp_path / "atlas.png"
    status, out, err = run_cli("atlas", "--plot", str(out_file))
    assert status == 0, err
    assert out.startswith("atlas: what every shipped price sheet implies")
    assert out_file.read_bytes()[:4] == b"\x89PNG"
