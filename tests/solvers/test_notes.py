"""Notes as data: a kind and what it is about, rendered only at the edge."""

import json

import pytest
from chalk.solvers.records.notes import Kind, Note

from chalk.preparation import prepare

# One note of each kind, with data as the modules that write them give it.
EXAMPLES = {
    Kind.VARIANT: ({"chosen": ("mla",), "set_aside": ("kv_width_gqa",)},
                   "the model is read as mla (the pins name its parts), so the other kinds' "
                   "relations are not used: kv_width_gqa"),
    Kind.YIELDED: ({"origin": "conventions careful", "shown": "0 param", "zero": True,
                    "name": "input_embedding_params", "behind": ("d_model", "vocab_size")},
                   "input_embedding_params is computed from d_model, vocab_size, not left "
                   "out as zero (conventions careful)"),
    Kind.HEADLINE: ({"origin": "preset x", "shown": "70e9 param", "zero": False,
                     "name": "active_params", "behind": ("n_layers",)},
                    "active_params is computed from the architecture (n_layers), not the "
                    "published 70e9 param of preset x"),
    # 160,000 against 327,680: 1 - 160,000 / 327,680 = 0.5117, "a factor 2.05 apart"
    Kind.OVERRIDDEN: ({"name": "kv_bytes_per_token", "given": "160,000 byte/token",
                       "implied": "327,680 byte/token", "presets": ("bf16", "llama"),
                       "conventions": "careful", "gap": 1 - 160_000 / 327_680,
                       "agree": False, "relation": "kv_bytes_per_token"},
                      "kv_bytes_per_token: you gave 160,000 byte/token; presets bf16 and "
                      "llama give 327,680 byte/token: a factor 2.05 apart (relation "
                      "kv_bytes_per_token set aside: your value stands)"),
    Kind.ABSENT: ({"set_aside": ("t_alltoall",)},
                  "relations left out because a quantity in them is zero (a part the model "
                  "or deployment does not have): t_alltoall"),
    Kind.UNREPORTED: ({"names": ("memory_fill",), "reason": "no physical value"},
                      "memory_fill not reported: no physical value"),
    Kind.COUNT: ({"name": "n_local_layers", "others": ("kv_bytes_per_token",)},
                 "n_local_layers is a count of the model's config, here derived from "
                 "kv_bytes_per_token: one that is not whole is flagged"),
    Kind.HELD: ({"target": "n_local_layers", "origin": "preset llama", "stated": "0"},
                "n_local_layers: preset llama states 0; a count of the model's config, kept: "
                "the other pins would derive it from serving figures"),
    # 0.01 is 1% apart, within a 5% tolerance
    Kind.STATED: ({"target": "chip_flops", "origin": "preset h100", "stated": "989 TFLOP/s",
                   "derived": "979 TFLOP/s", "gap": 0.01, "agree": True, "unsolved": None},
                  "chip_flops: preset h100 states 989 TFLOP/s; the other pins give 979 "
                  "TFLOP/s; they agree (1% apart)"),
    Kind.DERIVED: ({"target": "chip_flops", "origin": "preset h100", "stated": "989 TFLOP/s",
                    "derived": "500 TFLOP/s", "gap": 0.4944, "agree": False,
                    "behind": ("hbm_bandwidth",)},
                   "chip_flops: the pins give 500 TFLOP/s; preset h100 states 989 TFLOP/s, set "
                   "aside: hbm_bandwidth determine it; they differ: 49.4% apart"),
    Kind.SET_ASIDE: ({"name": "hardware_intensity", "behind": ("chip_flops", "hbm_bandwidth"),
                      "derived": "295.2 FLOP/byte", "claimed": "range 200 FLOP/byte to 400 "
                      "FLOP/byte", "spread": False},
                     "hardware_intensity: chip_flops, hbm_bandwidth give 295.2 FLOP/byte, which "
                     "lies inside your range 200 FLOP/byte to 400 FLOP/byte: the derived value "
                     "is used, and your range is its cross-check"),
    Kind.SETTLED: ({"how": "forks", "step": 3, "name": "batch_size", "count": 2,
                    "same": False, "set_aside": ("with 12 sequence, memory_fill is above 1",)},
                   "step 3 (batch_size) has 2 physical solutions; only one carries through the "
                   "rest (set aside: with 12 sequence, memory_fill is above 1)"),
}


def test_every_kind_has_an_example():
    assert set(EXAMPLES) == set(Kind)


@pytest.mark.parametrize("kind", list(Kind))
def test_a_note_renders_and_round_trips_through_json(kind):
    data, text = EXAMPLES[kind]
    note = Note(kind, data)
    assert note.text() == text
    back = Note.from_json(json.loads(json.dumps(note.to_json())))
    assert back == note and back.text() == text


def test_an_entry_that_is_no_note_is_refused():
    with pytest.raises(ValueError):
        Note.from_json({"kind": "guess", "data": {}})


def test_preparation_notes_say_what_gave_way_as_data():
    q = prepare("critical_batch_size", presets=["h100", "bf16", "deepseek_v3"])
    kinds = [(n.kind, n.data.get("name")) for n in q.notes]
    # DeepSeek-V3 pins its latent-attention widths (the MLA variant), the careful
    # conventions' zero input-embedding table gives way to its vocabulary and width (their
    # zero attention copies stay: the copies are counted from the chips of a group, and
    # no n_chips is pinned), its headline sizes (36.7e9 active, 671e9 total) to its
    # architecture, the H100's datasheet 989 TFLOP/s to bf16's share of the matmuls at
    # the chip's BF16 peak, and the absent terms (no all-to-all, no draft) are taken out
    assert kinds == [(Kind.VARIANT, None), (Kind.YIELDED, "input_embedding_params"),
                     (Kind.HEADLINE, "active_params"), (Kind.HEADLINE, "chip_flops"),
                     (Kind.HEADLINE, "total_params"), (Kind.ABSENT, None)]
    assert q.notes[0].data["chosen"] == ("mla",)
    assert q.notes[1].data["zero"] is True
    assert [n.data["shown"] for n in q.notes[2:5]] == ["36.7e9 param", "989 TFLOP/s",
                                                         "671e9 param"]
