"""Log parsing keeps the failure: runner lines, pasted fragments, CI noise, new prefixes, stable detection."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.analysis.logparse import parse_log, realign
from app.analysis.logparse.formats import DETECT_SAMPLE, clean_text
from app.analysis.logparse.pyerrors import python_error
from app.analysis.model import ParsedLog


def texts(parsed: ParsedLog) -> list[str]:
    return [m.text for m in parsed.messages]


# -- prefixes ----------------------------------------------------------------------------------


def test_old_and_new_avocado_prefixes_are_stripped() -> None:
    log = (
        "2017-09-16 16:38:59,012 download         L0066 INFO | old style\n"
        "2023-02-08 10:53:48,717 avocado.test INFO | new style\n"
        "[stdlog] 2023-02-08 10:53:48,718 avocado.test DEBUG| from the test's stdlog\n"
    )
    parsed = parse_log(log)
    assert parsed.format == "avocado"
    assert [(m.text, m.level) for m in parsed.messages] == [
        ("old style", "INFO"),
        ("new style", "INFO"),
        ("from the test's stdlog", "DEBUG"),
    ]


def test_avocado_console_prefix_keeps_the_traceback() -> None:
    log = (
        "ERROR| Traceback (most recent call last):\n"
        'ERROR|   File "suite.py", line 7, in setUp\n'
        "ERROR|     self.prepare()\n"
        "ERROR| ValueError: no disk\n"
    )
    parsed = parse_log(log)
    assert parsed.format == "avocado-console"
    assert [(f.path, f.line, f.function) for f in parsed.frames] == [("suite.py", 7, "setUp")]
    assert parsed.error_message == "ValueError: no disk"


def test_tempest_oslo_format() -> None:
    log = (
        "2015-07-31 09:37:44,661 17897 INFO [tempest.lib.common.rest_client] Request (ServersTest): 200 GET\n"
        "2015-07-31 09:37:45.002 17897 ERROR nova.compute.manager [req-1 - -] Instance failed\n"
    )
    parsed = parse_log(log)
    assert parsed.format == "oslo"
    assert [(m.text, m.level) for m in parsed.messages] == [
        ("Request (ServersTest): 200 GET", "INFO"),
        ("Instance failed", "ERROR"),
    ]


def test_indented_lines_of_one_logging_call_are_one_message() -> None:
    log = (
        "2017-09-16 16:38:59,012 stacktrace       L0040 INFO | Command output:\n"
        "2017-09-16 16:38:59,012 stacktrace       L0040 INFO |   line one\n"
        "2017-09-16 16:38:59,013 stacktrace       L0041 INFO | next call\n"
        "2017-09-16 16:38:59,014 stacktrace       L0041 INFO | not indented: its own message\n"
    )
    parsed = parse_log(log)
    assert texts(parsed) == ["Command output:\n  line one", "next call", "not indented: its own message"]


# -- runner output -----------------------------------------------------------------------------


def test_runner_status_lines_and_counters_are_never_messages_nor_the_error() -> None:
    log = (
        "WARNING:root:No imaging library installed. Screendump disabled.\n"
        "JOB ID     : b35f4a8196b45bf8f596137717f1706ceb9da0de\n"
        "JOB LOG    : /root/avocado/job-results/job-2021-01-25T21.04-b35f4a8/job.log\n"
        " (1/1) type_specific.suite.case: ERROR: local variable 'vm' referenced before assignment (6.56 s)\n"
        "RESULTS    : PASS 0 | ERROR 1 | FAIL 0 | SKIP 0 | WARN 0 | INTERRUPT 0 | CANCEL 0\n"
        "JOB TIME   : 7.31 s\n"
    )
    parsed = parse_log(log)
    assert texts(parsed) == ["No imaging library installed. Screendump disabled."]
    assert parsed.error_message == "local variable 'vm' referenced before assignment"


def test_the_last_failing_status_gives_the_error_and_passing_ones_none() -> None:
    log = (
        "(1/3) suite.py:Suite.test;a-1: PASS (1.01 s)\n"
        "(2/3) suite.py:Suite.test;b-2: FAIL: value 3 != 4 (2.00 s)\n"
        "(3/3) suite.py:Suite.test;c-3\n"
    )
    parsed = parse_log(log)
    assert parsed.messages == ()
    assert parsed.error_message == "value 3 != 4"


def test_runner_arrow_line_with_its_reason_on_the_next_line() -> None:
    log = "ERROR 1-suite.py:Suite.test;x-1 ->\nTestSetupFail: no disk\n"
    parsed = parse_log(log)
    assert parsed.messages == ()
    assert parsed.error_message == "TestSetupFail: no disk"


def test_a_line_that_merely_starts_like_a_status_is_a_message() -> None:
    parsed = parse_log("(1/2) of the disks are ready: yes\nRESULTS were fine\n")
    assert texts(parsed) == ["(1/2) of the disks are ready: yes", "RESULTS were fine"]


# -- fragments users paste ---------------------------------------------------------------------


def test_frames_without_their_header_still_make_a_traceback() -> None:
    log = (
        'File "/ci/tests/test_console.py", line 22, in test_escape\n'
        "match = re.search(r'(\\d) packets', child.read())\n"
        'File "/usr/lib/python3.8/re.py", line 201, in search\n'
        "return _compile(pattern, flags).search(string)\n"
        "TypeError: cannot use a string pattern on a bytes-like object\n"
    )
    parsed = parse_log(log)
    assert [(f.path, f.line, f.function) for f in parsed.frames] == [
        ("/ci/tests/test_console.py", 22, "test_escape"),
        ("/usr/lib/python3.8/re.py", 201, "search"),
    ]
    assert parsed.frames[0].code == "match = re.search(r'(\\d) packets', child.read())"
    assert parsed.error_message == "TypeError: cannot use a string pattern on a bytes-like object"
    assert parsed.messages == ()
    assert any("without its header" in w for w in parsed.warnings)


def test_a_log_cut_inside_a_frame_line_keeps_that_frame() -> None:
    log = (
        'tests/virsh_compare.py", line 63, in get_cpu_xml\n'
        "     xml.remove_feature(num)\n"
        '   File "/usr/lib/site-packages/vm_xml.py", line 1534, in get_feature\n'
        '     raise LibvirtXMLError("Only %d feature(s)" % count)\n'
        " LibvirtXMLError: Only 0 feature(s)\n"
    )
    parsed = parse_log(log)
    first = parsed.frames[0]
    assert (first.path, first.line, first.function, first.code) == (
        "tests/virsh_compare.py",
        63,
        "get_cpu_xml",
        "xml.remove_feature(num)",
    )
    assert parsed.error_message == "LibvirtXMLError: Only 0 feature(s)"


def test_pytest_e_lines_with_collapsed_spaces_are_the_error() -> None:
    log = (
        'raise ModuleFail("run module {} failed".format(name), res)\n'
        "E errors.ModuleFail: run module shell failed, Results =>\n"
        "E rc = 2\n"
        "E\n"
        'E Error: Missing option "-n".\n'
    )
    parsed = parse_log(log)
    assert parsed.error_message == (
        'errors.ModuleFail: run module shell failed, Results =>\nrc = 2\n\nError: Missing option "-n".'
    )
    assert texts(parsed) == ['raise ModuleFail("run module {} failed".format(name), res)']


def test_a_single_line_starting_with_e_and_a_space_is_a_message() -> None:
    assert texts(parse_log("E lines are rare\nordinary line\n")) == ["E lines are rare", "ordinary line"]


# -- terminal and CI noise ---------------------------------------------------------------------


def test_ci_markers_colours_and_progress_overwrites_are_stripped() -> None:
    log = (
        "##[group]Run pytest -x\n"
        "\x1b[32mstarting\x1b[0m\n"
        "downloading  10%\rdownloading  55%\rdownloading 100%\n"
        "::error file=tests/test_a.py,line=3::boom happened\n"
        "##[endgroup]\n"
        "##[error]Process completed with exit code 1.\n"
    )
    parsed = parse_log(log)
    assert texts(parsed) == ["Run pytest -x", "starting", "downloading 100%", "boom happened"]
    assert parsed.error_message != "Process completed with exit code 1."


def test_clean_text_keeps_crlf_line_ends_as_line_ends() -> None:
    assert clean_text("a\r\nb\r\n") == "a\nb\n"
    assert clean_text("\x1b]0;title\x07x") == "x"


# -- properties --------------------------------------------------------------------------------

SHAPES = [
    "2024-05-01T10:00:00Z runner-1 pytest: {m}",  # syslog with an RFC 3339 stamp (also reads as iso)
    "2024-05-01T10:00:00.123Z {m}",
    "2017-09-16 16:38:59,012 download         L0066 INFO | {m}",
    "[ERROR] {m}",
    "INFO:suite.net:{m}",
    "{m}",
    "",
]
words = st.text(alphabet="abcdefghij klm:=0123", min_size=1, max_size=30)


@settings(max_examples=100, deadline=None)
@given(
    head=st.lists(st.tuples(st.sampled_from(SHAPES), words), min_size=1, max_size=10),
    tail=st.lists(st.tuples(st.sampled_from(SHAPES), words), max_size=30),
)
@pytest.mark.slow
def test_detection_does_not_change_as_the_log_grows(
    head: list[tuple[str, str]], tail: list[tuple[str, str]]
) -> None:
    """Lines past the head never flip the detected format, however many and of whatever shape."""
    lines = [shape.format(m=m) for shape, m in head]
    base = "\n".join(lines)
    fmt = parse_log(base).format
    grown = base + "\n" + "\n".join(shape.format(m=m) for shape, m in tail)
    repeated = "\n".join([base] * (DETECT_SAMPLE // max(1, len(lines)) + 1)) + "\n" + grown
    if sum(1 for ln in lines if ln.strip()) * (DETECT_SAMPLE // max(1, len(lines)) + 1) >= DETECT_SAMPLE:
        assert parse_log(repeated).format == parse_log(repeated + "\n" + grown).format
    assert parse_log("\n".join([base] * 3)).format == fmt


status = st.sampled_from(["PASS", "FAIL", "ERROR", "SKIP", "CANCEL", "INTERRUPTED", "WARN"])


@settings(max_examples=100, deadline=None)
@given(
    entries=st.lists(
        st.tuples(st.integers(1, 99), status, st.text(alphabet="abcxyz '=0123", max_size=20)),
        min_size=1,
        max_size=6,
    ),
    messages=st.lists(st.text(alphabet="abcdefxyz =0123", min_size=1, max_size=20), max_size=4),
)
def test_runner_lines_never_become_messages(entries: list[tuple[int, str, str]], messages: list[str]) -> None:
    runner = [
        f"({i}/{len(entries)}) suite/test_{n}.py:T.test;v-{n}: {s}"
        + (f": {r.strip()}" if r.strip() else "")
        + f" ({n}.0{i} s)"
        for i, (n, s, r) in enumerate(entries, start=1)
    ]
    body = [f"[INFO] {m.strip()}" for m in messages if m.strip()]
    log = "\n".join([*body, *runner, "RESULTS    : PASS 0 | ERROR 1 | FAIL 0 | SKIP 0"]) + "\n"
    parsed = parse_log(log)
    assert texts(parsed) == [m.strip() for m in messages if m.strip()]
    failing = [r.strip() for _, s, r in entries if s in {"FAIL", "ERROR", "INTERRUPTED"} and r.strip()]
    if failing:
        assert parsed.error_message == failing[-1]
    assert "RESULTS" not in parsed.error_message and not parsed.error_message.startswith("(")


# -- frames against the script -----------------------------------------------------------------

SCRIPT = [
    "def test_a(self):",
    "    value = compute( 1,2 )",
    "    check(value)",
    "",
    "    check(value)",
    "    assert value == 3",
]


def test_frame_realigned_by_its_text_when_lines_moved() -> None:
    assert realign(SCRIPT, 4, "assert value == 3") == 6  # two lines of skew
    assert realign(SCRIPT, 6, "assert value == 3") == 6
    assert realign(SCRIPT, 40, "assert value == 3") is None  # too far: nothing to trust


def test_frame_realigned_when_only_whitespace_differs() -> None:
    assert realign(SCRIPT, 1, "value = compute(1, 2)") == 2


def test_nearest_holder_of_the_text_wins_and_no_text_keeps_the_number() -> None:
    assert realign(SCRIPT, 4, "check(value)") == 3  # lines 3 and 5 tie: the earlier
    assert realign(SCRIPT, 6, "check(value)") == 5
    assert realign(SCRIPT, 2, None) == 2
    assert realign(SCRIPT, 9, None) is None


@settings(max_examples=100, deadline=None)
@given(skew=st.integers(-6, 6), target=st.integers(0, 5))
def test_realign_finds_a_unique_line_within_the_window(skew: int, target: int) -> None:
    lines = [f"statement_{i}(arg_{i})" for i in range(40)]
    line = 20 + target
    printed = lines[line - 1].replace("(", " ( ")
    assert realign(lines, line + skew, printed) == line


# -- the short path for ordinary lines decides as the full checks do -------------------------

PIECES = [
    "2017-09-16 16:38:59,012 stacktrace       L0040 INFO | {w}",
    "2017-09-16 16:38:59,012 stacktrace       L0040 INFO |   {w}",
    "[INFO] {w}",
    "[ERROR] Traceback (most recent call last):",
    '  File "/x/test_a.py", line 3, in f',
    "    {w}",
    "ValueError: {w}",
    "(1/2) suite.py:T.test: ERROR: {w} (1.0 s)",
    "RESULTS    : PASS 0 | ERROR 1",
    "E {w}",
    "{w}",
    "\xa0{w}",
    "{w}:",
    "{w} [50%]",
    "",
]


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(
        st.tuples(st.sampled_from(PIECES), st.text(alphabet="abc XYZ_=()-:.py[]E\xa0", max_size=20)),
        max_size=25,
    )
)
def test_short_path_gives_what_the_full_checks_give(lines: list[tuple[str, str]]) -> None:
    import app.analysis.logparse.messages as messages

    log = "\n".join(piece.format(w=w) for piece, w in lines)
    fast = parse_log(log)
    messages._FAST_PATH = False
    try:
        slow = parse_log(log)
    finally:
        messages._FAST_PATH = True
    assert fast == slow


@pytest.mark.parametrize(
    ("log", "whole"),
    [
        # a trailing backslash, then a hanging indent (as pasted into a commit message)
        (
            "      TypeError: sudo() got an unexpected keyword argument \\\n          'change_context'\n",
            "'change_context'",
        ),
        (
            "  TypeError: Builder.revoke() missing 1 required\n             positional argument: 'reason'\n",
            "positional argument: 'reason'",
        ),
        # a line cannot end with "and": the next one goes on with it
        ("TypeError: unsupported operand type(s) for +: 'dict_values' and\n'dict_values'\n", "'dict_values'"),
        # Python's own message is incomplete without the next line (wrapped at 72 columns, no indent)
        (
            "AttributeError: 'TestShareBasicOpsNFS' object\nhas no attribute 'image_ref'\n",
            "has no attribute 'image_ref'",
        ),
        (
            "AttributeError: module 'neutron_lib.constants'\nhas no attribute 'RULE_TYPE'\n",
            "has no attribute 'RULE_TYPE'",
        ),
        ("    AttributeError: 'TestVrf' object has no attribute\n    'wait_for_table'\n", "'wait_for_table'"),
    ],
)
def test_an_error_line_wrapped_over_several_lines_is_read_whole(log: str, whole: str) -> None:
    error = parse_log(log).error_message
    assert error.splitlines()[0].endswith(
        ("\\", "required", "and", "object", "'neutron_lib.constants'", "attribute")
    )
    assert error.splitlines()[-1] == whole
    assert python_error(error).kind is not None or "TypeError" in error


def test_the_lines_after_an_unwrapped_error_line_are_not_part_of_it() -> None:
    log = "ValueError: bad value\nnext step starts\n  Traceback text is not here\nOtherError: x\n"
    complete = "AttributeError: 'X' object has no attribute 'y'\nhas no attribute 'z'\n"
    assert parse_log(complete).error_message == "AttributeError: 'X' object has no attribute 'y'"
    assert parse_log("ValueError: bad value\nnext step starts\n").error_message == "ValueError: bad value"
    assert parse_log(log).error_message == "OtherError: x"
