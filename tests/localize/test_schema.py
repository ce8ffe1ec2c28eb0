"""ranking_schema: the structured-output contract checked with a real JSON-schema validator."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.localize.schema import RESPONSE_KEYS, ranking_schema

BLOCKS = ["BLOCK 1", "BLOCK 2", "BLOCK 3", "BLOCK 4"]


def validator(schema: dict) -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("level", sorted(RESPONSE_KEYS))
def test_schema_shape_per_level(level: str) -> None:
    schema = ranking_schema(level, BLOCKS, 2)
    key = RESPONSE_KEYS[level]
    assert schema == {
        "type": "object",
        "properties": {
            key: {
                "type": "array",
                "items": {"type": "string", "enum": BLOCKS},
                "minItems": 2,
                "maxItems": 2,
            }
        },
        "required": [key],
        "additionalProperties": False,
    }


def test_schema_accepts_exactly_k_known_ids() -> None:
    v = validator(ranking_schema("block", BLOCKS, 3))
    assert v.is_valid({"faulty_blocks": ["BLOCK 3", "BLOCK 1", "BLOCK 4"]})
    assert not v.is_valid({"faulty_blocks": ["BLOCK 3", "BLOCK 1"]})
    assert not v.is_valid({"faulty_blocks": ["BLOCK 3", "BLOCK 1", "BLOCK 4", "BLOCK 2"]})
    assert not v.is_valid({"faulty_blocks": ["BLOCK 3", "BLOCK 1", "BLOCK 9"]})
    assert not v.is_valid({"faulty_blocks": ["BLOCK 3", "BLOCK 1", "BLOCK 4"], "why": "x"})
    assert not v.is_valid({"faulty_lines": ["BLOCK 3", "BLOCK 1", "BLOCK 4"]})


def test_k_larger_than_ids_asks_for_all_of_them() -> None:
    prop = ranking_schema("function", ["login", "check"], 10)["properties"]["faulty_functions"]
    assert (prop["minItems"], prop["maxItems"]) == (2, 2)


def test_never_unique_items_because_vllm_rejects_it() -> None:
    schema = ranking_schema("line", ["a.py:1", "a.py:2"], 2)
    assert "uniqueItems" not in json.dumps(schema)
    assert validator(schema).is_valid({"faulty_lines": ["a.py:1", "a.py:1"]})


def test_duplicate_ids_are_offered_once() -> None:
    prop = ranking_schema("block", ["BLOCK 1", "BLOCK 1", "BLOCK 2"], 5)["properties"]["faulty_blocks"]
    assert prop["items"]["enum"] == ["BLOCK 1", "BLOCK 2"]
    assert prop["minItems"] == 2


@pytest.mark.parametrize(
    ("level", "ids", "k", "message"),
    [
        ("statement", BLOCKS, 1, "unknown level"),
        ("block", [], 1, "must not be empty"),
        ("block", BLOCKS, 0, "k must be"),
        ("block", BLOCKS, -3, "k must be"),
        ("block", BLOCKS, True, "k must be"),
        ("block", "BLOCK 1", 1, "not a single string"),
        ("block", ["BLOCK 1", 2], 1, "must be a string"),
    ],
)
def test_bad_arguments_raise_value_error(level: str, ids: object, k: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ranking_schema(level, ids, k)  # type: ignore[arg-type]


@given(
    level=st.sampled_from(sorted(RESPONSE_KEYS)),
    ids=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=30),
    k=st.integers(min_value=1, max_value=40),
)
def test_any_prefix_of_distinct_ids_is_the_only_valid_length(level: str, ids: list[str], k: int) -> None:
    schema = ranking_schema(level, ids, k)
    v = validator(schema)
    distinct = list(dict.fromkeys(ids))
    n = min(k, len(distinct))
    key = RESPONSE_KEYS[level]
    assert v.is_valid({key: distinct[:n]})
    assert v.is_valid({key: list(reversed(distinct))[:n]})
    assert not v.is_valid({key: distinct[: n - 1]})
    assert not v.is_valid({key: [*distinct[:n], distinct[0]]})
    unknown = "".join(distinct) + "?"
    assert not v.is_valid({key: [*distinct[: n - 1], unknown]})
