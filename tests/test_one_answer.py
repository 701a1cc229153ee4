"""One question, one answer: every path into the engine gives ``chalk.solve``'s answer or
its refusal (issue 22).

Random questions are drawn over the knowledge base, topic by topic: a consistent state
(selfcheck.consistent_state), a random sufficient set of pins taken from it, a target
among the rest, and one pin moved by a factor (so some questions have no physical answer
and must be refused). The same question is then asked through ``chalk.solve``, a
:class:`chalk.Question` asked again at the moved value, a sweep whose first point is that
value, and the compiled question's bulk evaluation; a third of the questions carry a
surplus pin from the state, so the cross-checks decide too. Each path must give the
answer ``solve`` gives to 1e-9, or refuse with the same error type.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from chalk.knowledge import TOPIC_MODULES
from chalk.symbolic.errors import ChalkError
from chalk.symbolic.units import Q_
from selfcheck import Skip, consistent_state, sufficient_pins, topic_model

from chalk import Question, solve
from chalk.applications.sweep import sweep
from chalk.compiled import compile_question

pytestmark = pytest.mark.slow

QUESTIONS = int(__import__("os").environ.get("CHALK_ONE_ANSWER", 500))
RTOL = 1e-9
FACTORS = (1.0, 1.0, 1.1, 0.5, 3.0, 1e-3)
MODELS = {topic: topic_model(topic) for topic in TOPIC_MODULES}


def _draw(seed: int):
    """A question: (model, target, given at the state, the moved pin, its new value)."""
    rng = random.Random(seed)
    topic = rng.choice(sorted(MODELS))
    model = MODELS[topic]
    state = consistent_state(seed, model)
    pins = sufficient_pins(model, rng)
    free = sorted(v for v in state if v not in pins and model.relations_of(v))
    if not free:
        raise Skip("every quantity is pinned")
    target = rng.choice(free)
    if rng.random() < 1 / 3:  # a surplus pin: a cross-check decides too
        extra = rng.choice(free)
        if extra != target:
            pins = [*pins, extra]
    varied = rng.choice(pins)
    given = {n: Q_(state[n], model.variables[n].pint_unit) for n in pins}
    return model, target, given, varied, state[varied] * rng.choice(FACTORS)


def _outcome(call):
    """A float answer, or the name of the refusal's type."""
    try:
        value = call()
    except ChalkError as exc:
        return type(exc).__name__
    return float(value)


def _paths(model, target, given, varied, value) -> dict:
    """The answer (declared unit) or the refusal's type on each path."""
    unit = model.variables[varied].pint_unit
    scale = model.variables[target].to_base
    at = {**given, varied: Q_(value, unit)}

    def bulk():
        compiled = compile_question(target, given, ["none"], model=model)
        result = compiled.evaluate({varied: np.array([value * model.variables[varied]
                                                      .to_base])})
        if 0 in result.refusals:
            raise result.refusals[0]
        return result.values[target][0] / scale

    def table():
        # a grid of two with the value at one end (the other end inside the bounds)
        others = {k: v for k, v in given.items() if k != varied}
        variable = model.variables[varied]
        upward = variable.admits(2 * value * variable.to_base)
        ends = (value, 2 * value) if upward else (value / 2, value)
        at = 0 if upward else 1
        swept = sweep(target, varied, *(Q_(e, unit) for e in ends), 2, False, others,
                      ["none"], model=model)
        if at in swept.refusals:
            raise swept.refusals[at]
        return swept.y_values[target][at]

    return {
        "solve": _outcome(lambda: solve(target, at, ["none"], model=model).value(target)),
        "Question": _outcome(lambda: Question(target, given, ["none"], model=model).magnitudes(
            **{varied: value})[target]),
        "evaluate": _outcome(bulk),
        "sweep": _outcome(table),
    }


def _agree(outcomes: dict) -> bool:
    reference = outcomes["solve"]
    for value in outcomes.values():
        if isinstance(reference, float) != isinstance(value, float):
            return False
        if isinstance(reference, float):
            if not abs(value - reference) <= RTOL * abs(reference):
                return False
        elif value != reference:
            return False
    return True


def test_an_under_determined_question_at_a_value_out_of_bounds():
    # Regression (question 143 of the draw, seed 143): kv_extra_copies with
    # attention_tensor_parallelism moved from 1.105 chip by 1e-3 to 0.0011 chip, below a
    # group's one chip, and both kinds' markers (kv_lora_rank, n_kv_heads) pinned, so no
    # kind is chosen and the per-chip KV is undetermined. solve and the sweep read the
    # value first (BoundsError); Question and evaluate refused it as under-determined
    model, target, given, varied, value = _draw(143)
    assert (target, varied) == ("kv_extra_copies", "attention_tensor_parallelism")
    assert value < 1  # chip: below a group's least
    outcomes = _paths(model, target, given, varied, value)
    assert set(outcomes.values()) == {"BoundsError"}, outcomes


def test_every_path_gives_solves_answer_or_its_refusal():
    asked, answered, disagreements = 0, 0, []
    seed = 0
    while asked < QUESTIONS:
        seed += 1
        try:
            model, target, given, varied, value = _draw(seed)
        except Skip:
            continue
        outcomes = _paths(model, target, given, varied, value)
        asked += 1
        answered += isinstance(outcomes["solve"], float)
        if not _agree(outcomes):
            disagreements.append((seed, target, varied, outcomes))
    assert not disagreements, disagreements[:5]
    # both kinds of outcome are exercised: answers and refusals
    assert QUESTIONS // 4 < answered < QUESTIONS


# Questions with presets: a chip, a model and a precision, the serving figures a user
# gives, and one of them moved. Every preparation pass runs here (headlines giving way
# to the architecture, counts held, statements answered, user pins over presets).
PRESET_QUESTIONS = int(__import__("os").environ.get("CHALK_ONE_ANSWER_PRESETS", 150))
CHIPS = ("h100", "h200", "b200", "mi300x", "gb200_nvl72", "h800")
MODELS_BY_NAME = ("llama_3_1_70b", "llama_3_1_8b", "deepseek_v3", "qwen3_235b_a22b",
                  "mixtral_8x22b", "gpt_oss_120b")
PRECISIONS = ("bf16", "fp8")
SERVING_TARGETS = ("step_time", "tokens_per_second", "tokens_per_second_per_user",
                   "memory_fill", "t_compute", "t_memory", "critical_batch_size",
                   "kv_bytes_per_token", "weight_bytes", "active_params")


def _preset_question(seed: int):
    rng = random.Random(seed)
    presets = [rng.choice(CHIPS), rng.choice(MODELS_BY_NAME), rng.choice(PRECISIONS)]
    given = {"n_chips": f"{rng.choice((1, 8, 16, 72))} chip",
             "batch_size": f"{rng.choice((1, 8, 64, 512, 4096))} sequence",
             "context_length": f"{rng.choice((1000, 8000, 128000))} token"}
    target = rng.choice(SERVING_TARGETS)
    varied = rng.choice(sorted(given))
    number = float(given[varied].split()[0]) * rng.choice((1.0, 0.5, 3.0, 1e-3))
    return presets, target, given, varied, number


def _preset_paths(model, presets, target, given, varied, number) -> dict:
    """The answer (declared unit) or the refusal's type on each path, with presets."""
    variable = model.variables[varied]
    at = {**given, varied: Q_(number, variable.pint_unit)}

    def bulk():
        compiled = compile_question(target, given, presets)
        result = compiled.evaluate({varied: np.array([number * variable.to_base])})
        if 0 in result.refusals:
            raise result.refusals[0]
        return result.values[target][0] / model.variables[target].to_base

    return {
        "solve": _outcome(lambda: solve(target, at, presets).value(target)),
        "Question": _outcome(lambda: Question(target, given, presets).magnitudes(
            **{varied: number})[target]),
        "evaluate": _outcome(bulk),
    }


def test_every_path_gives_solves_answer_with_presets():
    from chalk.knowledge import load_model

    model = load_model()
    disagreements, answered = [], 0
    for seed in range(PRESET_QUESTIONS):
        question = _preset_question(seed)
        outcomes = _preset_paths(model, *question)
        answered += isinstance(outcomes["solve"], float)
        if not _agree(outcomes):
            disagreements.append((seed, *question, outcomes))
    assert not disagreements, disagreements[:5]
    assert PRESET_QUESTIONS // 4 < answered
