"""The screen before a plan: which pins could not determine a quantity in any regime."""

import pytest
import sympy
from chalk.knowledge import load_model
from chalk.solvers.analysis.screen import may_determine
from chalk.solvers.planning.plan import make_plan
from chalk.symbolic.model import build_model
from chalk.symbolic.relations import Relation, definition
from chalk.symbolic.variables import Variable

FAST = Variable("test_fast_path", "s", "time along one path")
SLOW = Variable("test_slow_path", "s", "time along the other path")
FIRST = Variable("test_first_arrival", "s", "the later of the two")
BATCH = Variable("test_batch", "1", "sequences in a step")
PER_SEQUENCE = Variable("test_t_seq", "s", "time per sequence")


def _later_of_two():
    relations = [
        Relation("test_first_arrival", FIRST.symbol, sympy.Max(FAST.symbol, SLOW.symbol),
                 "the later of two times", definition(),
                 regimes=(("fast-path", FAST.symbol), ("slow-path", SLOW.symbol))),
        Relation("test_fast_path", FAST.symbol, BATCH.symbol * PER_SEQUENCE.symbol,
                 "a batch of sequences, one after the other", definition()),
    ]
    return build_model([FAST, SLOW, FIRST, BATCH, PER_SEQUENCE], relations)


def test_a_quantity_one_regime_fixes_is_not_screened_out():
    # first = max(fast, slow): mixed, pinning first fixes neither path; in the regime
    # where the fast path is the later one, first = fast fixes it outright
    model = _later_of_two()
    pins = {"test_first_arrival"}
    assert may_determine(model, pins, "test_fast_path")
    assert make_plan(model, frozenset(pins), ("test_fast_path",)).determined


def test_a_scale_no_pin_sets_is_screened_out():
    # every relation is homogeneous in time: multiplying every time by the same factor
    # keeps them all true, so no time is fixed while no time is pinned, in any regime
    model = _later_of_two()
    pins = {"test_batch"}
    for name in ("test_fast_path", "test_slow_path", "test_first_arrival", "test_t_seq"):
        assert not may_determine(model, pins, name)
        assert not make_plan(model, frozenset(pins), (name,)).determined
    # one time pinned brings the fast path's: fast = batch x t_seq
    assert may_determine(model, {"test_batch", "test_t_seq"}, "test_fast_path")


def test_a_pinned_quantity_may_be_determined():
    assert may_determine(_later_of_two(), {"test_slow_path"}, "test_slow_path")


CRITICAL_BATCH_PINS = {"chip_flops", "hbm_bandwidth", "bytes_per_param", "flops_per_param",
                       "decode_tokens_per_step", "total_params", "active_params"}


def test_on_the_knowledge_base_it_passes_what_the_plan_determines():
    # the pins of the lecture's critical batch: B* = (CF / BW) bpp S / (d fpp)
    model = load_model()
    for name in ("critical_batch_size", "hardware_intensity", "sparsity_factor",
                 "weight_bytes"):
        assert may_determine(model, CRITICAL_BATCH_PINS, name)
    # nothing pinned is a time, a price or a context length
    for name in ("step_time", "cost_per_token", "context_length", "kv_bytes_per_token"):
        assert not may_determine(model, CRITICAL_BATCH_PINS, name)


def _screened_out(model, pins):
    return [v for v in sorted(model.variables) if not may_determine(model, pins, v)]


def test_what_it_screens_out_no_plan_determines_sampled():
    model = load_model()
    screened = _screened_out(model, CRITICAL_BATCH_PINS)
    assert len(screened) > 100  # it spares most plans of these pins
    for name in screened[::8]:
        assert not make_plan(model, frozenset(CRITICAL_BATCH_PINS), (name,),
                             explain=False).determined, name


@pytest.mark.slow
@pytest.mark.parametrize("pins", [
    CRITICAL_BATCH_PINS,
    # a serving question: chip, model, batch, context, and a measured step time
    {"chip_flops", "hbm_bandwidth", "hbm_capacity", "n_chips", "bytes_per_param",
     "total_params", "active_params", "batch_size", "context_length",
     "kv_bytes_per_token", "step_time"},
])
def test_what_it_screens_out_no_plan_determines(pins):
    model = load_model()
    for name in _screened_out(model, pins):
        assert not make_plan(model, frozenset(pins), (name,), explain=False).determined, name


def test_a_screen_asked_again_answers_as_it_did_without_working_again(monkeypatch):
    # The same pins and quantity are screened many times while a question is prepared:
    # the answer is remembered per model and pin set (as a set: the order pins come in
    # does not matter), and the projection behind it is not computed a second time.
    from chalk.solvers.analysis import screen

    model = load_model()
    screen.clear_caches()
    pins = ["chip_flops", "hbm_bandwidth"]
    first = screen.may_determine(model, pins, "hardware_intensity")
    worked = []
    monkeypatch.setattr(screen, "_open_directions",
                        lambda m: worked.append(m) or pytest.fail("screened again"))
    assert screen.may_determine(model, list(reversed(pins)), "hardware_intensity") is first
    assert first is True  # hardware_intensity = chip_flops / hbm_bandwidth
    assert not worked
