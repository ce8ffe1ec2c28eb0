"""Source echoes (app/analysis/echo.py): any log gives echoes that point at real script lines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.analysis.echo import echo_table, find_echoes
from app.analysis.model import Script
from app.analysis.pipeline import analyze

SCRIPT = 'def test_restart():\n    state = run("systemctl is-active sshd")\n    assert state == "active"\n'


def test_lines_of_marks_only_are_not_echoes() -> None:
    # ">>>>" or "||||" lose every character to the mark strip: nothing is left to look up
    analysis = analyze([Script("tests/test_svc.py", SCRIPT)], "x\n")
    table = echo_table(analysis.program)
    assert find_echoes(table, analysis.line_index, ">" * 20 + "\n" + "|" * 15 + "\n>|>|>|>|>|>|>|\n") == ()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(alphabet=">|E \t-", max_size=30), st.sampled_from(SCRIPT.splitlines()))))
def test_any_log_gives_echoes_of_script_lines_only(lines: list[str]) -> None:
    analysis = analyze([Script("tests/test_svc.py", SCRIPT)], "x\n")
    table = echo_table(analysis.program)
    log = "\n".join(lines)
    for echo in find_echoes(table, analysis.line_index, log):
        assert echo.line in (2, 3)
        assert 1 <= echo.log_line <= log.count("\n") + 1


HELPERS = (
    "def fetch(url):\n"
    "    body = download(url)\n"
    "    return body.decode()\n"
    "\n"
    "def test_fetch():\n"
    '    page = fetch("http://localhost/")\n'
    '    assert "ok" in page\n'
)


def _frames(log: str, script: str = HELPERS) -> list[tuple[str, int]]:
    analysis = analyze([Script("tests/test_fetch.py", script)], log)
    return [(frame.path, frame.line) for frame in analysis.error_frames]


def test_a_source_line_an_exception_follows_is_where_the_failure_surfaced() -> None:
    # a traceback whose "File ..." headers were cut when it was pasted: the source line and the error
    log = "    return body.decode()\nAttributeError: 'NoneType' object has no attribute 'decode'\n"
    assert _frames(log) == [("tests/test_fetch.py", 3)]
    analysis = analyze([Script("tests/test_fetch.py", HELPERS)], log)
    assert analysis.error_statements == (analysis.line_index[("tests/test_fetch.py", 3)].sid,)


def test_carets_and_pytest_columns_between_the_line_and_the_error_are_skipped() -> None:
    log = "    return body.decode()\n           ^^^^^^^^^^^\nE   AttributeError: 'NoneType' object\n"
    assert _frames(log) == [("tests/test_fetch.py", 3)]


def test_pytest_marked_lines_are_frames_outermost_first() -> None:
    log = (
        '>       page = fetch("http://localhost/")\n'
        "\n"
        ">       return body.decode()\n"
        "E       AttributeError: 'NoneType' object has no attribute 'decode'\n"
    )
    assert _frames(log) == [("tests/test_fetch.py", 6), ("tests/test_fetch.py", 3)]


def test_a_quoted_line_no_exception_follows_is_no_frame() -> None:
    log = "the helper does\n    return body.decode()\nand that fails on old servers\n"
    assert _frames(log) == []


def test_a_line_the_scripts_hold_twice_is_no_frame() -> None:
    twice = HELPERS + "\ndef again(body):\n    return body.decode()\n"
    log = "    return body.decode()\nAttributeError: 'NoneType' object has no attribute 'decode'\n"
    assert _frames(log, twice) == []


def test_a_traceback_naming_the_script_keeps_its_own_frames() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/ci/tests/test_fetch.py", line 6, in test_fetch\n'
        '    page = fetch("http://localhost/")\n'
        "    return body.decode()\n"
        "AttributeError: 'NoneType' object has no attribute 'decode'\n"
    )
    assert _frames(log) == [("tests/test_fetch.py", 6)]
