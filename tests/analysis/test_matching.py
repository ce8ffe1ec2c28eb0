"""Algorithm 1 (source-to-log matching) and the ordered matcher behind it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest
import tree_sitter_python
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_sitter import Language, Parser

from app.analysis.logstatements import DEFAULT_LOG_FUNCTIONS, find_log_statements
from app.analysis.matching import match_messages, ordered_match
from app.analysis.model import LogMessage, LogStatement

EXAMPLE = Path(__file__).parents[1] / "data" / "running-example"


def stmt(sid: int, *parts: str) -> LogStatement:
    return LogStatement(path="t.py", line=sid, end_line=sid, callee="logger.info", parts=parts, sid=sid)


def msgs(*texts: str) -> list[LogMessage]:
    return [LogMessage(index=i, line=i + 1, end_line=i + 1, text=t) for i, t in enumerate(texts)]


def reference_regex(parts: Sequence[str]) -> str:
    return ".*" + ".*".join(map(re.escape, parts)) + ".*"


def reference_algorithm_1(
    static: Sequence[LogStatement], messages: Sequence[LogMessage], errors: Iterable[int]
) -> tuple[set[int], set[int]]:
    """The paper's Algorithm 1 written out literally, with the paper's regexes."""
    statements = [s for s in static if s.parts]
    exe, mm = set(errors), set()
    for m in messages:
        matched = {s.sid for s in statements if re.fullmatch(reference_regex(s.parts), m.text, re.S)}
        if len(matched) == 1:
            exe |= matched
        else:
            mm |= matched - exe
    nexe = {s.sid for s in statements if s.sid not in exe | mm}
    return exe, nexe


# ---------------------------------------------------------------------------------------------
# ordered_match
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parts", "message", "expected"),
    [
        (("Current time: ",), "Current time: 19:42", True),
        ((" var_1: ",), "{1, 2, 3} var_1: 3", True),  # unanchored: text before the first part
        (("a", "b"), "xaxbx", True),
        (("a", "b"), "ba", False),  # order matters
        (("ab", "bc"), "abc", False),  # parts do not overlap
        (("ab", "bc"), "abbc", True),
        (("aa", "ab"), "aab", False),  # "ab" would need the a that "aa" used
        (("aa", "ab"), "aaab", True),
        ((), "anything", True),
        (("x",), "", False),
    ],
)
def test_ordered_match(parts: tuple[str, ...], message: str, expected: bool) -> None:
    assert ordered_match(parts, message) is expected


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.text(alphabet="ab:", max_size=3), max_size=4),
    st.text(alphabet="ab: \n", max_size=12),
)
def test_ordered_match_agrees_with_the_papers_regex(parts: list[str], message: str) -> None:
    assert ordered_match(parts, message) == bool(re.fullmatch(reference_regex(parts), message, re.S))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(min_size=1).filter(str.strip), min_size=1, max_size=5),
    st.lists(st.text(), min_size=6, max_size=6),
)
def test_joined_parts_always_match(parts: list[str], fillers: list[str]) -> None:
    message = fillers[0] + "".join(p + f for p, f in zip(parts, fillers[1:], strict=False))
    assert ordered_match(parts, message)
    result = match_messages([stmt(1, *parts)], msgs(message), [])
    assert (result.exe, result.nexe, result.matches) == ({1}, set(), ((0, (1,)),))


# ---------------------------------------------------------------------------------------------
# Algorithm 1
# ---------------------------------------------------------------------------------------------


def test_unique_match_is_executed() -> None:
    result = match_messages([stmt(1, "start "), stmt(2, "stop ")], msgs("start now"), [])
    assert (result.exe, result.nexe, result.multi) == ({1}, {2}, set())
    assert result.matches == ((0, (1,)),)


def test_multi_matched_statements_are_neither_executed_nor_not_executed() -> None:
    result = match_messages([stmt(1, "value: "), stmt(2, "value"), stmt(3, "other")], msgs("value: 3"), [])
    assert result.multi == {1, 2}
    assert result.exe == set()
    assert result.nexe == {3}
    assert result.matches == ((0, (1, 2)),)


def test_unmatched_statements_are_not_executed() -> None:
    result = match_messages([stmt(1, "never printed")], msgs("something else", ""), [])
    assert (result.exe, result.nexe, result.matches) == (set(), {1}, ())


def test_error_statements_are_always_executed() -> None:
    result = match_messages([stmt(1, "done")], msgs(), [17, 23])
    assert result.exe == {17, 23}
    assert result.error_sids == {17, 23}
    assert result.nexe == {1}


def test_error_statement_that_is_also_a_log_statement_stays_executed() -> None:
    result = match_messages([stmt(1, "done")], msgs("nothing"), [1])
    assert (result.exe, result.nexe) == ({1}, set())


def test_message_matching_an_executed_statement_and_another_leaves_the_other_unknown() -> None:
    static = [stmt(1, "Test "), stmt(2, "Test end ")]
    result = match_messages(static, msgs("Test 1", "Test end 5"), [])
    assert result.exe == {1}
    assert result.multi == {2}  # only L_mm \ L_exe is added: statement 1 is not demoted
    assert result.nexe == set()


def test_multi_matched_statement_later_matched_uniquely_becomes_executed() -> None:
    static = [stmt(1, "a"), stmt(2, "a", "b")]
    result = match_messages(static, msgs("a b", "b a"), [])
    assert result.exe == {1}  # "b a" matches only statement 1
    assert result.multi == {2}
    assert result.nexe == set()


def test_calls_sharing_a_statement_id_match_that_statement_uniquely() -> None:
    first, second = stmt(5, "x="), LogStatement("t.py", 5, 5, "print", ("x=", "y="), 5)
    result = match_messages([first, second, stmt(6, "z")], msgs("x=1 y=2"), [])
    assert (result.exe, result.nexe, result.matches) == ({5}, {6}, ((0, (5,)),))


def test_statements_without_static_parts_take_no_part() -> None:
    result = match_messages([stmt(1), stmt(2, "hello")], msgs("hello", "anything"), [])
    assert (result.exe, result.nexe, result.multi) == ({2}, set(), set())


def test_a_statement_without_sid_is_rejected() -> None:
    unnumbered = LogStatement("t.py", 3, 3, "print", ("x",))
    with pytest.raises(ValueError, match=r"t\.py:3 has no sid"):
        match_messages([unnumbered], msgs("x"), [])


def test_a_part_spanning_lines_matches_its_lines_in_order() -> None:
    static = [stmt(1, "Result:\n"), stmt(2, "head\nbody "), stmt(3, "tail\n")]
    result = match_messages(static, msgs("Result:", "head", "body 42", "head\nbody 7"), [])
    assert result.exe == {1, 2}
    assert result.nexe == {3}
    assert result.matches == ((0, (1,)), (3, (2,)))


def test_whitespace_differences_do_not_prevent_a_match() -> None:
    static = [stmt(1, "DUT didn't advertise the route"), stmt(2, "a\tb  c"), stmt(3, "x y")]
    result = match_messages(static, msgs("DUT didn't advertise\nthe route", "  a b\n\tc  ", "xy"), [])
    assert (result.exe, result.nexe) == ({1, 2}, {3})


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(alphabet="ab \t\n", min_size=1, max_size=4), min_size=1, max_size=3),
    st.text(alphabet="ab \t\n", max_size=14),
)
def test_every_match_of_the_papers_regex_is_kept(parts: list[str], message: str) -> None:
    result = match_messages([stmt(1, *parts)], msgs(message), [])
    if re.fullmatch(reference_regex(parts), message, re.S):
        assert result.matches == ((0, (1,)),)


def test_repeated_messages_keep_their_own_indices() -> None:
    result = match_messages([stmt(1, "tick")], msgs("tick", "tock", "tick"), [])
    assert result.matches == ((0, (1,)), (2, (1,)))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.text(alphabet="abc:", min_size=1, max_size=3), max_size=3), max_size=6),
    st.lists(st.text(alphabet="abc: ", max_size=10), max_size=8),
    st.sets(st.integers(min_value=0, max_value=8), max_size=2),
)
def test_agrees_with_the_literal_algorithm(
    part_lists: list[list[str]], texts: list[str], errors: set[int]
) -> None:
    static = [stmt(sid, *parts) for sid, parts in enumerate(part_lists)]
    messages = msgs(*texts)
    result = match_messages(static, messages, errors)
    assert (result.exe, result.nexe) == reference_algorithm_1(static, messages, errors)
    assert not result.multi & (result.exe | result.nexe)


# ---------------------------------------------------------------------------------------------
# the golden case, from the script through the real parser
# ---------------------------------------------------------------------------------------------


def test_running_example_matches_the_paper() -> None:
    expected = json.loads((EXAMPLE / "expected.json").read_text())
    tree = Parser(Language(tree_sitter_python.language())).parse((EXAMPLE / "test_example.py").read_bytes())
    patterns = (*DEFAULT_LOG_FUNCTIONS, *expected["log_function_patterns"])
    found = find_log_statements(tree.root_node, "test_example.py", patterns)
    static = [LogStatement(s.path, s.line, s.end_line, s.callee, s.parts, sid=s.line) for s in found]
    lines = (EXAMPLE / "failure.log").read_text().splitlines()
    messages = msgs(*(re.sub(r"^\[[A-Z]+\] ", "", line) for line in lines))

    result = match_messages(static, messages, expected["error_statements"])

    assert sorted(result.exe) == expected["L_exe"]
    assert sorted(result.nexe) == expected["L_nexe"]
    assert result.multi == set()


@given(st.lists(st.text(alphabet="ab \t\n\xa0\u2028.", max_size=12), max_size=12))
def test_all_texts_are_normalized_as_each_alone(texts: list[str]) -> None:
    from app.analysis.matching import _normalized, _normalized_all

    if texts:
        assert _normalized_all(texts) == [_normalized(t) for t in texts]


@settings(max_examples=60, deadline=None)
@given(
    part_lists=st.lists(st.lists(st.text(alphabet="ab1 9:", min_size=1, max_size=4), max_size=3), max_size=6),
    templates=st.lists(st.text(alphabet="ab1 9:\t\n", max_size=10), min_size=1, max_size=6),
    numbers=st.lists(st.integers(0, 99999), min_size=1, max_size=20),
    count=st.integers(1, 600),
)
def test_many_texts_of_few_shapes_match_as_each_alone(
    part_lists: list[list[str]], templates: list[str], numbers: list[int], count: int
) -> None:
    """Texts first told apart by their shapes (digits made 0): the same statements as matched one by one."""
    from app.analysis.matching import Matcher, _normalized

    static = [stmt(sid, *parts) for sid, parts in enumerate(part_lists)]
    texts = [
        f"{templates[k % len(templates)]}{numbers[k % len(numbers)]}{templates[(k * 7) % len(templates)]}"
        for k in range(count)
    ]
    index = Matcher(static).index
    assert index.match_all(texts) == [index.match(_normalized(t)) for t in texts]


@settings(max_examples=25, deadline=None)
@given(
    part_lists=st.lists(st.lists(st.text(alphabet="ab1 9:", min_size=1, max_size=4), max_size=3), max_size=6),
    bodies=st.lists(st.text(alphabet="ab :\t", min_size=1, max_size=10), min_size=1, max_size=5),
    seed=st.integers(0, 2**16),
)
def test_a_parsed_log_matches_as_its_messages_one_by_one(
    part_lists: list[list[str]], bodies: list[str], seed: int
) -> None:
    """A long prefixed log read by its lines' shapes: the messages its shapes rule out match nothing."""
    _parsed_log_matches_one_by_one(part_lists, bodies, seed)


def test_messages_of_digit_free_shapes_match_as_one_by_one() -> None:
    """Messages without digits are their shapes (no text cut out for them), beside others."""
    parts = [["ab"], ["a 1"], ["b", "22"], ["ab", "7"], [":"]]
    _parsed_log_matches_one_by_one(parts, ["ab a", " :b", "b 22 a", "x ab"], 7)


def _parsed_log_matches_one_by_one(part_lists: list[list[str]], bodies: list[str], seed: int) -> None:
    import random

    from app.analysis.logparse import parse_log
    from app.analysis.matching import Matcher

    rng = random.Random(seed)
    lines = []
    for k in range(3000):
        number = rng.choice([rng.randrange(10 ** rng.randrange(1, 6)), ""])
        logger = rng.choice(["test", "app", "x1"])
        stamp = f"2024-05-01 10:00:{k % 60:02d},{rng.randrange(1000):03d}"
        lines.append(f"{stamp} INFO {logger}: {rng.choice(bodies)}{number}{rng.choice(bodies)}")
    messages = parse_log("\n".join(lines) + "\n").messages
    codes, shapes = messages.shapes()
    assert shapes and len(codes) == len(messages)  # read by shapes: a code for every message
    matcher = Matcher([stmt(sid, *parts) for sid, parts in enumerate([["ab"], *part_lists])])
    assert matcher.match(messages, [1]) == matcher.match(list(messages), [1])
