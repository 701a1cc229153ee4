"""Property: for random numbers in a cached question's shape, the cached CLI answer is the
full solver's answer to the byte, or the cache declines (issue 22).

Each pin is set alone to each of a few extreme magnitudes (8e-200, 1e200, ...: where the
solver's own checks overflow and may refuse), then numbers are drawn with a seeded
generator around typical values, spread over six decades, with one pin in seven extreme.
"""

from __future__ import annotations

import numpy as np
import pytest

# label -> (targets and options, [(pin, typical value, unit)], presets)
SHAPES = {
    "critical batch": (["critical_batch_size"],
                       [("chip_flops", 989e12, "FLOP/s"), ("hbm_bandwidth", 3.35, "TB/s"),
                        ("bytes_per_param", 2, "byte/param"),
                        ("flops_per_param", 2, "FLOP/param/token"),
                        ("total_params", 671e9, "param"), ("active_params", 37e9, "param")],
                       []),
    "critical batch as JSON": (["critical_batch_size", "--json"],
                               [("chip_flops", 989e12, "FLOP/s"),
                                ("hbm_bandwidth", 3.35, "TB/s"),
                                ("bytes_per_param", 2, "byte/param"),
                                ("flops_per_param", 2, "FLOP/param/token"),
                                ("total_params", 671e9, "param"),
                                ("active_params", 37e9, "param")], []),
    "drain time": (["hbm_drain_time"], [("hbm_capacity", 288, "GB"),
                                        ("hbm_bandwidth", 20, "TB/s")], []),
    "step time through max()": (["step_time"],
                                [("total_params", 671e9, "param"),
                                 ("active_params", 36.7e9, "param"),
                                 ("kv_bytes_per_token", 70272, "byte/token"),
                                 ("batch_size", 64, "sequence"), ("n_chips", 8, "chip"),
                                 ("context_length", 4000, "token")], ["h100", "bf16"]),
    "sparsity": (["sparsity_factor"], [("critical_batch_size", 2400, "sequence")],
                 ["lecture"]),
    "a flagged batch": (["batch_size"], [("tokens_per_second", 30, "token/s"),
                                         ("step_time", 20, "ms")], []),
    # a model preset whose headline sizes give way to its architecture: the size steps
    # read only the presets, the step time the typed numbers (issue 22 item 5)
    "Llama 3.1 70B's step time": (["step_time"],
                                  [("batch_size", 32, "sequence"), ("n_chips", 8, "chip"),
                                   ("context_length", 8000, "token")],
                                  ["h100", "bf16", "llama_3_1_70b"]),
    # a zero pin, and pins that follow from it (expert_params = 0)
    "Llama 3.1 8B's size": (["total_params"],
                            [("n_layers", 32, ""), ("d_model", 4096, ""), ("n_heads", 32, ""),
                             ("n_kv_heads", 8, ""), ("d_head", 128, ""), ("d_ff", 14336, ""),
                             ("vocab_size", 128256, ""), ("untied_embeddings", 1, ""),
                             ("n_moe_layers", 0, "")], ["fp8"]),
}
DRAWS = 50  # random draws per shape: 400 in all, and 280 with one pin at an extreme
EXTREMES = (8e-200, 1e-120, 1e-50, 1e-20, 1e20, 1e50, 1e120, 1e200)


def _argv(head, pins, presets, values):
    argv = ["solve", *head]
    for (name, _, unit), value in zip(pins, values, strict=True):
        argv += ["--given", f"{name}={value:.6g} {unit}".strip()]
    for preset in presets:
        argv += ["--preset", preset]
    return argv


def _draw(rng, pins):
    values = []
    for _, typical, _ in pins:
        if rng.random() < 1 / 7:
            values.append(float(rng.choice(EXTREMES)))
        else:
            values.append(typical * 10 ** rng.uniform(-3, 3))
    return values


@pytest.mark.slow
@pytest.mark.parametrize("label", sorted(SHAPES))
def test_the_cache_answers_as_the_solver_does_or_declines(run_cli, tmp_path, monkeypatch,
                                                         label):
    from chalk.cli.fast import answer

    head, pins, presets = SHAPES[label]
    monkeypatch.setenv("CHALK_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CHALK_NO_CACHE", raising=False)
    typical = [p[1] for p in pins]
    assert run_cli(*_argv(head, pins, presets, typical))[0] == 0
    assert len(list(tmp_path.glob("*.json"))) == 1  # stored
    rng = np.random.default_rng(sum(map(ord, label)))
    # each pin alone at each extreme (n_chips = 8e-200 was answered from the cache and
    # refused in full), then random draws
    alone = [typical[:i] + [x] + typical[i + 1:]
             for i in range(len(pins)) for x in EXTREMES]
    ordinary = answered = 0
    for values in alone + [_draw(rng, pins) for _ in range(DRAWS)]:
        argv = _argv(head, pins, presets, values)
        cached = answer(argv)
        monkeypatch.setenv("CHALK_NO_CACHE", "1")
        status, out, err = run_cli(*argv)
        monkeypatch.delenv("CHALK_NO_CACHE")
        if status == 0 and not set(values) & set(EXTREMES):
            ordinary += 1
        if cached is not None:
            answered += 1
            assert status == 0, (argv, err)
            assert out == (cached if cached.endswith("\n") else cached + "\n"), argv
    # not a cache that declines everything: most answers at ordinary numbers come from it
    assert answered >= 0.6 * ordinary > 0
