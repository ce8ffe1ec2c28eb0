"""{err_msg} carries the failure: the error, the script frames and a window of the log, within a budget."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.analysis.logparse import parse_log
from app.analysis.pipeline import analyze
from app.analysis.render import render
from app.localize.prompts import CHARS_PER_TOKEN, build_messages, failure_context, failure_text
from app.options import TriageOptions
from tests.conftest import running_example


def example():
    scripts, log, exp = running_example()
    return analyze(scripts, log, log_functions=exp["log_function_patterns"])


def test_full_context_has_the_error_the_script_frames_and_the_log_before_the_failure() -> None:
    a = example()
    text = failure_context(a.log, a.error_frames)
    assert text.startswith("ZeroDivisionError: division by zero\n")
    assert "test_example.py:17 in execute_tests: var_2 = var_1 / len(values)" in text
    assert "test_example.py:23 in main: execute_tests()" in text
    assert text.index(":23 in main") < text.index(":17 in execute_tests")  # outermost first
    window = text.split("Log messages around the failure", 1)[1]
    assert "5: values: {}" in window and "1: Prepare testing..." in window
    assert "/opt/qa/run_case.py" not in text  # frames outside the scripts are left out


def test_paper_style_is_the_error_message_alone() -> None:
    a = example()
    assert failure_context(a.log, a.error_frames, style="paper") == "ZeroDivisionError: division by zero"
    assert failure_text(a, TriageOptions(prompt_style="paper")) == a.log.error_message


def test_a_small_budget_keeps_the_most_recent_lines_before_the_failure() -> None:
    log = "\n".join(f"[INFO] step {i} done with value {i * 7}" for i in range(200))
    log += '\n[ERROR] Traceback (most recent call last):\n  File "t.py", line 3, in test_a\n    f()\n'
    log += "ValueError: bad value\n[INFO] cleanup after the failure\n"
    parsed = parse_log(log)
    text = failure_context(parsed, (), budget=60)
    assert "step 199 done" in text and "step 198 done" in text
    assert "step 0 done" not in text
    lines = [ln for ln in text.splitlines() if "step" in ln]
    assert lines == sorted(lines, key=lambda ln: int(ln.split(":")[0]))  # printed in log order
    assert "cleanup after the failure" in text  # a share of the window is after the failure


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(0, 600),
    messages=st.lists(st.text(alphabet="abc xyz{}=0123", min_size=1, max_size=400), max_size=60),
)
def test_the_context_stays_within_its_budget(budget: int, messages: list[str]) -> None:
    log = "".join(f"[INFO] {m}\n" for m in messages) + "[ERROR] it broke: {k}\n"
    parsed = parse_log(log)
    text = failure_context(parsed, (), budget=budget)
    error = parsed.error_message.strip()
    assert text.startswith(error)
    assert len(text) - len(error) <= budget * CHARS_PER_TOKEN + 2


def test_the_fixed_instructions_stay_first_whatever_the_failure() -> None:
    a = example()
    rendered = render(a, "tplus", "block")
    full = build_messages(rendered, failure_context(a.log, a.error_frames), 3)
    paper = build_messages(rendered, a.log.error_message, 3)
    assert full[0] == paper[0]  # the system part never changes
    head = paper[1]["content"].split("ZeroDivisionError", 1)[0]
    assert full[1]["content"].startswith(head)  # the prefix a server caches is shared


def test_options_validate_the_prompt_style_and_budget() -> None:
    assert TriageOptions().validated().prompt_style == "full"
    with pytest.raises(ValueError, match="prompt_style"):
        TriageOptions(prompt_style="long").validated()
    with pytest.raises(ValueError, match="prompt_budget"):
        TriageOptions(prompt_budget=-1).validated()
    with pytest.raises(ValueError, match="unknown prompt style"):
        failure_context(parse_log("x\n"), (), style="long")


WINDOW_LINES = [
    "2024-05-01 10:00:00,000 INFO test: step {w}",
    "2024-05-01 10:00:00,000 ERROR test: ValueError: {w}",
    "ValueError: {w}",
    "Traceback (most recent call last):",
    '  File "/ci/tests/test_a.py", line 3, in test_a',
    "    run({w})",
    "value {w}",
    "",
]


@settings(max_examples=100, deadline=None)
@given(
    lines=st.lists(
        st.tuples(st.sampled_from(WINDOW_LINES), st.text(alphabet="ab1 ", max_size=8)), max_size=40
    ),
    budget=st.integers(0, 200),
)
def test_the_window_from_the_message_columns_equals_the_one_from_message_objects(
    lines: list[tuple[str, str]], budget: int
) -> None:
    from dataclasses import replace

    parsed = parse_log("\n".join(line.format(w=w) for line, w in lines))
    as_objects = replace(parsed, messages=tuple(parsed.messages))
    assert failure_context(parsed, (), budget=budget) == failure_context(as_objects, (), budget=budget)
