"""Load-time checks: a wrong relation fails when the knowledge base is built."""

import pytest
import sympy
from chalk.symbolic.errors import KnowledgeError, UnknownNameError
from chalk.symbolic.model import build_model
from chalk.symbolic.relations import Condition, Relation, definition
from chalk.symbolic.variables import Variable, unit_constant

SPEED = Variable("test_speed", "byte/s", "a bandwidth")
SIZE = Variable("test_size", "byte", "a capacity")
TIME = Variable("test_time", "s", "a time")
TOKENS = Variable("test_tokens", "token", "a token count")


def test_dimensionally_wrong_relation_names_both_sides():
    wrong = Relation("test_wrong", TIME.symbol, SIZE.symbol * SPEED.symbol, "wrong on purpose",
                     definition())
    with pytest.raises(KnowledgeError) as info:
        build_model([SPEED, SIZE, TIME], [wrong])
    message = str(info.value)
    assert "test_wrong" in message
    assert "time" in message and "bytes^2/time" in message


def test_sum_of_unlike_terms_is_rejected():
    wrong = Relation("test_sum", TIME.symbol, TIME.symbol + SIZE.symbol / SPEED.symbol
                     + TOKENS.symbol, "wrong", definition())
    with pytest.raises(KnowledgeError, match="test_sum"):
        build_model([SPEED, SIZE, TIME, TOKENS], [wrong])


def test_float_coefficients_are_rejected():
    bad = Relation("test_float", TIME.symbol, sympy.Float(0.5) * SIZE.symbol / SPEED.symbol,
                   "float", definition())
    with pytest.raises(KnowledgeError, match="float"):
        build_model([SPEED, SIZE, TIME], [bad])


def test_good_relation_loads_and_unknown_names_get_suggestions():
    good = Relation("test_drain", TIME.symbol, SIZE.symbol / SPEED.symbol, "drain", definition())
    model = build_model([SPEED, SIZE, TIME], [good])
    assert model.variables_in("test_drain") == {"test_speed", "test_size", "test_time"}
    with pytest.raises(UnknownNameError) as info:
        model.variable("test_sped")
    assert "test_speed" in info.value.suggestions


def test_relation_sides_must_be_expressions_not_text():
    with pytest.raises(TypeError):
        Relation("test_text", TIME.symbol, "test_size/test_speed", "text", definition())


def test_variable_names_are_identifiers():
    with pytest.raises(ValueError):
        Variable("__import__", "s", "bad")
    with pytest.raises(ValueError):
        Variable("Bad Name", "s", "bad")


def test_a_condition_is_dimension_checked_against_its_quantity():
    drain = Relation("test_drain", TIME.symbol * SPEED.symbol, SIZE.symbol, "drain time",
                     definition())
    one_token = unit_constant("token").symbol
    good = Condition("test_some_tokens", "test_tokens", ">=", one_token, "m", definition())
    model = build_model([SPEED, SIZE, TIME, TOKENS], [drain], [good])
    assert list(model.conditions) == ["test_some_tokens"]
    wrong = Condition("test_wrong_bound", "test_time", ">=", one_token, "m", definition())
    with pytest.raises(KnowledgeError,
                       match="condition test_wrong_bound is dimensionally inconsistent"):
        build_model([SPEED, SIZE, TIME, TOKENS], [drain], [wrong])
    lost = Condition("test_lost", "test_nothing", ">=", one_token, "m", definition())
    with pytest.raises(KnowledgeError, match="bounds undeclared quantity test_nothing"):
        build_model([SPEED, SIZE, TIME, TOKENS], [drain], [lost])


@pytest.mark.parametrize("value", [
    Relation("test_drain", TIME.symbol, SIZE.symbol / SPEED.symbol, "drain time", definition()),
    SPEED,
], ids=["relation", "variable"])
def test_a_hash_kept_for_speed_is_the_fields_hash_and_is_never_pickled(value):
    import copy
    import dataclasses
    import pickle

    # what a frozen dataclass would generate: the hash of its compared fields, in order
    expected = hash(tuple(getattr(value, f.name) for f in dataclasses.fields(value)))
    assert hash(value) == expected
    assert hash(value) == expected  # kept from the first call
    # string hashes differ between processes: a pickled copy hashes afresh
    assert "_fields_hash" not in pickle.loads(pickle.dumps(value)).__dict__
    twin = dataclasses.replace(value)
    assert twin == value and hash(twin) == hash(value)
    assert copy.deepcopy(value) == value
    assert {value: 1}[twin] == 1
