"""The bulk log parser (prefixes over the whole text, runs of ordinary lines as spans) gives what
the line-by-line parse gives, on generated logs of every prefix format and every kind of mess."""

from __future__ import annotations

import pickle
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import app.analysis.logparse.messages as messages
from app.analysis.logparse import KNOWN_FORMATS, parse_log
from app.analysis.model import LogMessage, ParsedLog

PREFIXES = [
    "2017-09-16 16:38:59,012 stacktrace       L0040 INFO | ",
    "2023-02-08 10:53:48,717 avocado.test ERROR | ",
    "[stdlog] 2023-02-08 10:53:48,718 avocado.test DEBUG| ",
    "[stdout] ",
    "2015-07-31 09:37:44,661 17897 INFO [tempest.x] ",
    "2015-07-31 09:37:44.661 17897 ERROR nova.compute.manager [req-1 - -] ",
    "08:39:25 init._fixture_func_decorator L0073 ERROR | ",
    "2024-05-01 10:00:00 [ warning] ",
    "2024-05-01 10:00:00,000 - root - INFO - ",
    "INFO     conftest:conftest.py:12 ",
    "WARNING:root:",
    "[ERROR] ",
    "Jan  2 03:04:05 host prog[123]: ",
    "2024-05-01T10:00:00.123Z host prog: 2024-05-01 10:00:00,000 - app - ERROR - ",
    "xx:xx:xx INFO ",
    "2024-05-01T10:00:00.123Z [INFO] ",
    "2024-05-01 10:00:00,000 INFO test: ",
    "ERROR| ",
    "  ",
    "",
]
BODIES = [
    "{w}",
    "step {w}: value",
    "{w}:",
    "[{w}]",
    "path/to/{w}.py:12",
    "Traceback (most recent call last):",
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
    "{w} (most recent call last):",
    "{w} occurred:",
    '  File "/x/test_{w}.py", line 3, in f',
    "    {w}()",
    "ValueError: {w}",
    "E       assert {w}",
    "(1/2) suite.py:T.test: ERROR: {w} (1.0 s)",
    "RESULTS    : PASS 0 | ERROR 1",
    "FAILED test_{w}.py::test_x - AssertionError",
    "\x1b[31m{w}\x1b[0m",
    "10%\r50%\r{w} 100%",
    "{w}  \t",
    "{w}" * 400,
    "",
]
WORDS = st.text(alphabet="abc XYZ_=()-:.py[]E\xa0\t", max_size=15)
LINE = st.tuples(st.sampled_from(PREFIXES), st.sampled_from(BODIES), WORDS)


def line_by_line(log: str, **options: object) -> ParsedLog:
    """The reference: every prefix matched on its own line, every line through the full checks."""
    messages._FAST_PATH = False
    try:
        return parse_log(log, **options)  # type: ignore[arg-type]
    finally:
        messages._FAST_PATH = True


def make_log(lines: list[tuple[str, str, str]], crlf: bool, final_newline: bool) -> str:
    end = "\r\n" if crlf else "\n"
    log = end.join(prefix + body.format(w=w) for prefix, body, w in lines)
    return log + end if final_newline and log else log


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(LINE, max_size=30),
    crlf=st.booleans(),
    final_newline=st.booleans(),
    fmt=st.sampled_from([None, "plain", *KNOWN_FORMATS]),
)
@pytest.mark.slow
def test_bulk_parse_gives_the_line_by_line_messages(
    lines: list[tuple[str, str, str]], crlf: bool, final_newline: bool, fmt: str | None
) -> None:
    log = make_log(lines, crlf, final_newline)
    bulk = parse_log(log, prefix_format=fmt)
    assert bulk == line_by_line(log, prefix_format=fmt)
    assert [(m.text, m.level, m.line) for m in bulk.messages] == [
        (m.text, m.level, m.line) for m in line_by_line(log, prefix_format=fmt).messages
    ]


@settings(max_examples=100, deadline=None)
@given(
    groups=st.lists(st.tuples(LINE, st.integers(0, 2)), min_size=1, max_size=4),
    base=st.integers(0, 30),
    times=st.sampled_from([1, 80]),
    rng=st.randoms(use_true_random=False),
)
@pytest.mark.slow
def test_format_detection_agrees_with_trying_every_format_on_every_line(
    groups: list[tuple[tuple[str, str, str], int]], base: int, times: int, rng: random.Random
) -> None:
    """Close counts, ties and samples cut at DETECT_SAMPLE lines: the early stops change nothing."""
    lines = [line for line, extra in groups for _ in range(base * times + extra)]
    rng.shuffle(lines)
    log = make_log(lines, False, True)
    assert parse_log(log).format == line_by_line(log).format


@settings(max_examples=100, deadline=None)
@given(lines=st.lists(LINE, min_size=1, max_size=30), keep=st.integers(1, 10))
def test_bulk_parse_of_the_last_lines_gives_the_line_by_line_messages(
    lines: list[tuple[str, str, str]], keep: int
) -> None:
    log = make_log(lines, False, True)
    assert parse_log(log, max_lines=keep) == line_by_line(log, max_lines=keep)


@settings(max_examples=100, deadline=None)
@given(words=st.lists(st.text(alphabet="abcdef ", min_size=1, max_size=12), max_size=40))
def test_a_plain_log_is_one_message_per_ordinary_line(words: list[str]) -> None:
    log = "\n".join(words)
    expected = [(i + 1, w.strip()) for i, w in enumerate(words) if w.strip()]
    parsed = parse_log(log, prefix_format="plain")
    assert [(m.line, m.text) for m in parsed.messages] == expected


def test_message_columns_agree_with_the_messages() -> None:
    log = (
        "2024-05-01 10:00:00,000 INFO test: first\n"
        "  continued\n"
        "2024-05-01 10:00:01,000 ERROR test: second\n"
        "2024-05-01 10:00:01,000 DEBUG test: first\n"
    )
    found = parse_log(log).messages
    expected = ["test: first\n  continued", "test: second", "test: first"]
    assert found.texts() == [m.text for m in found] == expected
    assert list(found.lines()) == [m.line for m in found] == [1, 3, 4]
    assert found.levels() == ["INFO", "ERROR", "DEBUG"]
    last = LogMessage(2, 4, 4, "test: first", "DEBUG")
    assert found[-1] == last
    assert found[1:] == (LogMessage(1, 3, 3, "test: second", "ERROR"), last)
    assert pickle.loads(pickle.dumps(found)) == found == tuple(found)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab \t\n\x0b\x1c\x85\u2028\xa0", max_size=60))
def test_lines_are_read_without_their_trailing_whitespace(text: str) -> None:
    from app.analysis.logparse.messages import _stripped_lines

    assert _stripped_lines(text)[0] == "\n".join(ln.rstrip() for ln in text.split("\n"))


def test_the_odd_whitespace_list_is_all_whitespace_but_space_and_newline() -> None:
    import sys

    from app.analysis.logparse.messages import _ODD_SPACE

    every = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    assert set(_ODD_SPACE) == every - {" ", "\n"}


@pytest.mark.slow
@settings(max_examples=20, deadline=None)
@given(lines=st.lists(LINE, min_size=1, max_size=12), extra=st.integers(0, 300), seed=st.integers(0, 2**16))
def test_bulk_parse_of_a_log_longer_than_a_chunk_gives_the_line_by_line_messages(
    lines: list[tuple[str, str, str]], extra: int, seed: int
) -> None:
    """Chunks of lines whose commonest format changes from chunk to chunk, and lines of other
    formats (or none) among them, read as they are read one by one."""
    from app.analysis.logparse.formats import _CHUNK

    rng = random.Random(seed)
    many = [line for line in lines for _ in range(2 * _CHUNK // len(lines) + extra)]
    rng.shuffle(many)
    many.sort(key=lambda line: line[0] if rng.random() < 0.5 else "")  # runs of one prefix, and a mix
    log = make_log(many, False, True)
    assert parse_log(log) == line_by_line(log)


def test_the_space_characters_are_those_isspace_accepts() -> None:
    import sys

    from app.analysis.logparse.formats import _space_chars

    assert _space_chars() == {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}


# 40 examples in all, 0.2-0.4 s of CPU each (two parses of 5,000-10,000 lines): the quick lane runs
# the first test's 8, the full suite the other 32 too
LONG_LOGS = given(
    prefix=st.sampled_from(PREFIXES[:-2]),
    others=st.lists(LINE, min_size=1, max_size=8),
    every=st.integers(20, 400),
    thinning=st.booleans(),
    seed=st.integers(0, 2**16),
)


@settings(max_examples=8, deadline=None)
@LONG_LOGS
def test_a_long_log_of_mostly_one_prefix_gives_the_line_by_line_messages(
    prefix: str, others: list[tuple[str, str, str]], every: int, thinning: bool, seed: int
) -> None:
    """Chunks the first format nearly fills (the lines it misses are put in among its own) and,
    past a head of it, chunks that hold only a few of its lines, or none."""
    _long_log_reads_line_by_line(prefix, others, every, thinning, seed)


@pytest.mark.slow
@settings(max_examples=32, deadline=None)
@LONG_LOGS
def test_more_long_logs_of_mostly_one_prefix_give_the_line_by_line_messages(
    prefix: str, others: list[tuple[str, str, str]], every: int, thinning: bool, seed: int
) -> None:
    """The same property on more examples."""
    _long_log_reads_line_by_line(prefix, others, every, thinning, seed)


def _long_log_reads_line_by_line(
    prefix: str, others: list[tuple[str, str, str]], every: int, thinning: bool, seed: int
) -> None:
    """A head of ``prefix`` lines (every ``every``-th another's), then maybe a tail of others."""
    rng = random.Random(seed)
    head = [(prefix, rng.choice(BODIES), f"w{k}") for k in range(2500 if thinning else 5000)]
    tail = [rng.choice(others) for _ in range(5000)] if thinning else []
    for k in range(rng.randrange(every), len(head), every):
        head[k] = rng.choice(others)
    for k in range(rng.randrange(every), len(tail), every):
        tail[k] = (prefix, rng.choice(BODIES), f"v{k}")
    log = make_log(head + tail, False, True)
    assert parse_log(log) == line_by_line(log)


@settings(max_examples=100, deadline=None)
@given(lines=st.lists(st.integers(0, 40000), max_size=12), final_newline=st.booleans())
def test_line_starts_are_the_offsets_after_every_newline(lines: list[int], final_newline: bool) -> None:
    """Lines longer than the pieces the text is split in, and pieces ending at a newline."""
    from app.analysis.logparse.messages import _stripped_lines

    text = "\n".join("x" * k for k in lines) + ("\n" if final_newline else "")
    expected = [0, *(k + 1 for k, ch in enumerate(text) if ch == "\n")]
    assert list(_stripped_lines(text)[1]) == expected


NUMBERED = [
    "2017-09-16 16:38:{s:02d},{k:03d} stacktrace       L{n:04d} INFO | ",
    "2015-07-31 09:37:44.{k:03d} {n} ERROR nova.compute.manager [req-{n} - -] ",
    "08:39:{s:02d} init._fixture L{n:04d} ERROR | ",
    "{level:<8} conftest{n}:conftest.py:{n} ",
    "WARNING:root{n}:",
    "2024-05-01 10:00:{s:02d},{k:03d} INFO test{n}: ",
    "Jan  2 03:04:{s:02d} host prog[{n}]: ",
    "2024-05-01 10:00:{s:02d},{k:03d} - mod{n} - INFO - ",
]


@settings(max_examples=12, deadline=None)
@given(
    prefixes=st.lists(st.sampled_from(NUMBERED), min_size=1, max_size=3),
    bodies=st.lists(
        st.sampled_from([*BODIES[:16], "step {n}: value {k}", "sent {n} bytes"]), min_size=1, max_size=4
    ),
    spread=st.sampled_from([3, 40, 5000]),
    seed=st.integers(0, 2**16),
)
def test_logs_of_few_line_shapes_with_numbers_in_their_prefixes_read_as_line_by_line(
    prefixes: list[str], bodies: list[str], spread: int, seed: int
) -> None:
    """Chunks read by their lines' shapes (numbers aside, a few templates): the prefix groups that
    hold numbers (logger line numbers, process ids, logger names) read from each line's own text."""
    rng = random.Random(seed)
    lines = []
    for k in range(4500):
        n = rng.randrange(spread)
        values = {"s": k % 60, "k": k % 1000, "n": n, "level": rng.choice(["INFO", "DEBUG", "ERROR"])}
        body = rng.choice(bodies).format(w=f"w{n}", **values)
        lines.append(rng.choice(prefixes).format(**values) + body)
    log = "\n".join(lines) + "\n"
    assert parse_log(log) == line_by_line(log)


def test_no_built_in_prefix_pattern_tells_one_ascii_digit_from_another() -> None:
    """Lines are read by their shapes (every digit made 0): sound only while no pattern has a digit
    literal or a class holding some ASCII digits but not all."""
    import re._parser as sre_parse  # type: ignore[import-not-found]

    from app.analysis.logparse.formats import _FORMATS, _combined, _inner

    digits = set(range(ord("0"), ord("9") + 1))

    def check(items: object) -> None:
        for op, arg in items:  # type: ignore[attr-defined]
            name = str(op)
            if name in ("LITERAL", "NOT_LITERAL"):
                assert arg not in digits
            elif name == "IN":
                held: set[int] = set()
                for inner_op, value in arg:
                    if str(inner_op) == "LITERAL":
                        held |= {value} & digits
                    elif str(inner_op) == "RANGE":
                        held |= set(range(value[0], value[1] + 1)) & digits
                assert not held or held == digits
            elif name in ("SUBPATTERN",):
                check(arg[-1])
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                check(arg[2])
            elif name == "BRANCH":
                for branch in arg[1]:
                    check(branch)
            elif name in ("ASSERT", "ASSERT_NOT"):
                check(arg[1])
            elif name == "ATOMIC_GROUP":
                check(arg)
            elif name == "GROUPREF_EXISTS":
                check(arg[1])
                if arg[2] is not None:
                    check(arg[2])

    for pattern in (
        *(p for _, p in _FORMATS),
        _combined(tuple(range(len(_FORMATS)))).pattern,
        _inner().pattern,
    ):
        check(sre_parse.parse(pattern))


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(
        st.tuples(st.integers(0, 40000), st.text(alphabet=" x\t\xa0\x1c\x85\u2028", max_size=4)), max_size=12
    ),
    final_newline=st.booleans(),
)
def test_lines_stripped_of_trailing_whitespace_come_with_their_starts(
    lines: list[tuple[int, str]], final_newline: bool
) -> None:
    """Pieces of whole lines: lines longer than a piece, trailing spaces, other whitespace."""
    from app.analysis.logparse.messages import _stripped_lines

    text = "\n".join("x" * k + tail for k, tail in lines) + ("\n" if final_newline else "")
    stripped = "\n".join(ln.rstrip() for ln in text.split("\n"))
    text_out, starts = _stripped_lines(text)
    assert text_out == stripped
    assert list(starts) == [0, *(k + 1 for k, ch in enumerate(stripped) if ch == "\n")]


@settings(max_examples=10, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(
            ["all good", "FooError: bad 3", "it FAILED", "an eXception 9", "errors: 2", "fine 7"]
        ),
        min_size=1,
        max_size=4,
    ),
    seed=st.integers(0, 2**16),
)
def test_a_long_log_without_traceback_takes_its_error_as_line_by_line(words: list[str], seed: int) -> None:
    """The error-looking fallback over a log read by its lines' shapes (and some unprefixed lines)."""
    rng = random.Random(seed)
    lines = []
    for k in range(3000):
        body = rng.choice(words) if rng.random() < 0.01 else f"step {k}: value {k * 7}"
        lines.append(f"2017-09-16 16:38:59,{k % 1000:03d} stacktrace       L{k % 90:04d} INFO | {body}")
        if rng.random() < 0.01:
            lines.append(rng.choice(words))
    log = "\n".join(lines) + "\n"
    assert parse_log(log) == line_by_line(log)


def test_a_log_of_many_shapes_then_few_reads_as_line_by_line() -> None:
    """Chunks of too many line shapes are read otherwise, and the chunks after them too for a while."""
    rng = random.Random(5)
    letters = "abcdefghijklmnopqrstuvwxyz"
    head = [
        f"2024-05-01 10:00:00,000 INFO test: {''.join(rng.choice(letters) for _ in range(12))}"
        for _ in range(2500)
    ]
    tail = [
        f"2017-09-16 16:38:59,{k % 1000:03d} stacktrace       L{k % 90:04d} INFO | {rng.choice(BODIES[:13])}"
        for k in range(20000)
    ]
    log = "\n".join(head + tail + head[:300]) + "\n"
    assert parse_log(log) == line_by_line(log)
