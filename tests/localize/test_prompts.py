"""The Figure 4 prompt as sent, and reading answers back out of what models really write."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.analysis.model import Analysis
from app.analysis.pipeline import analyze
from app.analysis.render import LEVELS, render
from app.localize.prompts import (
    PLACEHOLDERS,
    PROMPTS_DIR,
    RawAnswer,
    build_messages,
    load_templates,
    parse_answer,
    parse_template,
)
from app.localize.schema import RESPONSE_KEYS
from tests.conftest import BENCHMARK, load_case, running_example

FIGURE_4_SENTENCES = (
    "As an expert software engineer and tester, your mission is to localize faults in Python test "
    "scripts at the block level.",
    "You will be provided with the test scripts and the error message caused by the test failure.",
    "Your goal is to identify 3 blocks that are most likely responsible for the failure and require "
    "modification.",
    "1. Carefully examine the provided test scripts and the associated error message.",
    "2. Identify the 3 blocks that are most likely to contain the faults.",
    "3. Return a list of faulty blocks and their IDs, without any additional explanation.",
    "Note that the list of blocks and their IDs should be within the range 1 to 7 and the size of the "
    "list must be exactly 3.",
    "The list should be also in descending order of likelihood of containing the fault, with the most "
    "suspicious block first and the least suspicious block last.",
    "Ensure that your response is strictly in the specified format.",
    "Here is the error message caused by the test failure:",
    "Below are the Python test scripts:",
)


@lru_cache(maxsize=1)
def golden() -> Analysis:
    scripts, log, expected = running_example()
    return analyze(scripts, log, log_functions=expected["log_function_patterns"])


@lru_cache(maxsize=1)
def real() -> Analysis:
    scripts, log, _ = load_case(BENCHMARK / "tpl-mtu-unbound-local.json")
    return analyze(scripts, log)


def test_block_prompt_keeps_figure_4_sentences_with_placeholders_filled() -> None:
    analysis = golden()
    messages = build_messages(render(analysis, "T0", "block"), analysis.log.error_message, 3)
    assert [m["role"] for m in messages] == ["system", "user"]
    text = "\n".join(m["content"] for m in messages)
    for sentence in FIGURE_4_SENTENCES:
        assert sentence in text
    assert '{"faulty_blocks": ["BLOCK 10", "BLOCK 7", ...]}' in text
    assert "ZeroDivisionError: division by zero" in text
    assert "{programming_language}" not in text and "{k}" not in text


def test_fixed_instructions_come_first_and_the_case_last() -> None:
    analysis = golden()
    rendered = render(analysis, "tplus", "block")
    user = build_messages(rendered, analysis.log.error_message, 3)[1]["content"]
    instructions = user.index("Carefully examine")
    error = user.index("ZeroDivisionError")
    code = user.index(rendered.text)
    note = user.index("within the range 1 to 7")
    assert instructions < error < code < note
    assert user.endswith("the size of the list must be exactly 3.")


def test_two_cases_share_the_prompt_prefix_up_to_the_error_message() -> None:
    one, two = golden(), real()
    a = build_messages(render(one, "tplus", "block"), one.log.error_message, 5)
    b = build_messages(render(two, "tplus", "block"), two.log.error_message, 5)
    assert a[0] == b[0]
    prefix = a[1]["content"].split("Here is the error message")[0]
    assert b[1]["content"].startswith(prefix)
    assert len(prefix) > 500


def test_braces_in_code_and_messages_are_not_treated_as_placeholders() -> None:
    analysis = golden()
    rendered = render(analysis, "T0", "line")
    message = "KeyError: '{k}' in {test_code}"
    user = build_messages(rendered, message, 2, output_format="paper")[1]["content"]
    assert message in user
    assert 'Log.log(f"{values}" f" var_1: {var_1}")' in user
    assert user.count(rendered.text) == 1


@pytest.mark.parametrize("level", LEVELS)
def test_every_level_has_a_template_and_its_output_format(level: str) -> None:
    analysis = golden()
    rendered = render(analysis, "tplus", level)
    paper = "\n".join(m["content"] for m in build_messages(rendered, "boom", 2, output_format="paper"))
    assert f"localize faults in Python test scripts at the {level} level" in paper
    if level == "line":
        assert '10: print("This line is faulty!")' in paper
        assert "within the range 1 to 23" in paper
    else:
        assert RESPONSE_KEYS[level] in paper
    schema_mode = "\n".join(m["content"] for m in build_messages(rendered, "boom", 2))
    assert RESPONSE_KEYS[level] in schema_mode


def test_template_files_parse_and_use_only_known_placeholders() -> None:
    templates = load_templates()
    assert set(templates) == set(LEVELS)
    for level in LEVELS:
        text = (PROMPTS_DIR / f"{level}.txt").read_text()
        template = parse_template(text)
        assert template.system.startswith("Task Description")
        assert "{err_msg}" in template.user and "{test_code}" in template.user
    with pytest.raises(ValueError, match="unknown placeholders"):
        parse_template("[system]\nhi {nope}\n[user]\nthere\n")
    with pytest.raises(ValueError, match=r"\[system\]"):
        parse_template("just text")
    assert {"err_msg", "test_code"} <= PLACEHOLDERS


def test_missing_template_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="prompts/"):
        load_templates(tmp_path)


def test_unknown_output_format_is_rejected() -> None:
    with pytest.raises(ValueError, match="output format"):
        build_messages(render(golden(), "T0", "block"), "x", 1, output_format="yaml")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"faulty_blocks": ["BLOCK 6", "BLOCK 1"]}', ["BLOCK 6", "BLOCK 1"]),
        ('```json\n{"faulty_blocks": ["BLOCK 6", "BLOCK 1",]}\n```', ["BLOCK 6", "BLOCK 1"]),
        ('Sure! Here you go: {"faulty_blocks": [6, "block 1"]} Hope it helps.', ["BLOCK 6", "BLOCK 1"]),
        ('{"blocks": ["BLOCK 2"]}', ["BLOCK 2"]),
        ("The faulty ones are BLOCK 3 and BLOCK 5.", ["BLOCK 3", "BLOCK 5"]),
        ('["BLOCK 4", "BLOCK 1"]', ["BLOCK 4", "BLOCK 1"]),
        ("no idea", []),
    ],
)
def test_block_answers_are_read_tolerantly(text: str, expected: list[str]) -> None:
    assert [a.id for a in parse_answer(text, "block", output_format="json_schema")] == expected


def test_function_and_line_answers() -> None:
    functions = parse_answer(
        '{"faulty_functions": ["test_1", "execute_tests"]}', "function", output_format="paper"
    )
    assert [a.id for a in functions] == ["test_1", "execute_tests"]
    prose = parse_answer("I think 'test_1' then `main`.", "function", output_format="paper")
    assert [a.id for a in prose] == ["test_1", "main"]
    lines = parse_answer(
        '```\n3:     return set()  # Fault\n17: var_2 = var_1 / len(values)\n- 9: x = "a: b"\n```',
        "line",
        output_format="paper",
    )
    assert lines == [
        RawAnswer("3", "    return set()  # Fault"),
        RawAnswer("17", "var_2 = var_1 / len(values)"),
        RawAnswer("9", 'x = "a: b"'),
    ]
    ids = parse_answer('{"faulty_lines": ["17", 3, "line 9"]}', "line", output_format="json_schema")
    assert ids == [RawAnswer("17"), RawAnswer("3"), RawAnswer("9")]
    with pytest.raises(ValueError):
        parse_answer("{}", "file", output_format="paper")


@given(
    ids=st.lists(st.integers(min_value=1, max_value=10_000), max_size=12),
    before=st.text(alphabet=st.characters(blacklist_characters="{}[]\"'`"), max_size=40),
    after=st.text(alphabet=st.characters(blacklist_characters="{}[]\"'`"), max_size=40),
    fenced=st.booleans(),
)
def test_json_answers_survive_prose_and_fences(ids: list[int], before: str, after: str, fenced: bool) -> None:
    body = json.dumps({"faulty_blocks": [f"BLOCK {n}" for n in ids]})
    text = f"{before}\n```json\n{body}\n```\n{after}" if fenced else f"{before} {body} {after}"
    assert [a.id for a in parse_answer(text, "block", output_format="json_schema")] == [
        f"BLOCK {n}" for n in ids
    ]


@given(st.text(max_size=300), st.sampled_from(LEVELS), st.sampled_from(("paper", "json_schema")))
def test_parsing_never_crashes(text: str, level: str, output_format: str) -> None:
    for answer in parse_answer(text, level, output_format=output_format):
        assert isinstance(answer.id, str)
