"""Log parsing: messages without prefixes, traceback frames, the error message, and path mapping."""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from app.analysis.logparse import KNOWN_FORMATS, decode_log, match_script_path, parse_log
from app.analysis.model import ParsedLog

DATA = Path(__file__).parents[1] / "data"
LOGS = DATA / "logs"
REAL = LOGS / "real"
_SPACE = re.compile(r"\s+")


def texts(parsed: ParsedLog) -> list[str]:
    return [m.text for m in parsed.messages]


def mapped(parsed: ParsedLog, script_paths: list[str]) -> list[tuple[str, int, str | None]]:
    """Frames in the given scripts, as (script path, line, function), in log order."""
    out = []
    for f in parsed.frames:
        path = match_script_path(f.path, script_paths)
        if path is not None:
            out.append((path, f.line, f.function))
    return out


def same_code(printed: str, source_line: str) -> bool:
    want, have = _SPACE.sub(" ", printed).strip(), _SPACE.sub(" ", source_line).strip()
    return have == want or have.startswith(want)


def assert_well_formed(parsed: ParsedLog, n_lines: int) -> None:
    for k, m in enumerate(parsed.messages):
        assert m.index == k
        assert 1 <= m.line <= m.end_line <= n_lines
        assert m.text and m.text == m.text.strip()
    last_tb = 0
    for f in parsed.frames:
        assert isinstance(f.line, int) and f.line > 0
        assert 1 <= f.log_line <= n_lines
        assert f.traceback >= last_tb
        last_tb = f.traceback


# --------------------------------------------------------------------------------------------
# The golden case
# --------------------------------------------------------------------------------------------


def test_running_example() -> None:
    log = (DATA / "running-example" / "failure.log").read_text()
    parsed = parse_log(log)

    assert parsed.format == "bracket"
    assert texts(parsed) == [
        "Prepare testing...",
        "Current time: 19:42:37",
        "{1, 2, 3} var_1: 3",
        "Test 1 executed!",
        "values: {}",
    ]
    assert {m.level for m in parsed.messages} == {"INFO"}
    assert mapped(parsed, ["test_example.py"]) == [
        ("test_example.py", 23, "main"),
        ("test_example.py", 17, "execute_tests"),
    ]
    assert [f.code for f in parsed.frames] == [
        "suite.main()",
        "execute_tests()",
        "var_2 = var_1 / len(values)",
    ]
    assert [f.log_line for f in parsed.frames] == [7, 9, 11]
    assert "ZeroDivisionError: division by zero" in parsed.error_message
    assert parsed.warnings == ()


# --------------------------------------------------------------------------------------------
# Real cases (benchmark/real): frames mapped to the submitted scripts, and the error message
# --------------------------------------------------------------------------------------------

REAL_EXPECTED: dict[str, tuple[list[tuple[str, int, str | None]], str]] = {
    "amt-binutils-wrong-variable": (
        [("toolchain/binutils.py", 60, "setUp"), ("toolchain/binutils.py", 47, "check_install")],
        "AttributeError: 'Binutils' object has no attribute 'package'",
    ),
    "amt-bonnie-missing-build-deps": (
        [("io/disk/bonnie.py", 70, "setUp")],
        "CmdError: Command './configure' failed (rc=77)",
    ),
    "amt-pmem-dm-teardown-attr": (
        [("memory/pmem_dm.py", 140, "test"), ("memory/pmem_dm.py", 205, "tearDown")],
        "AttributeError: 'PmemDeviceMapper' object has no attribute 'dm_disk'",
    ),
    "sonic-bgp-bbr-poll-timeouts": (
        [("tests/bgp/test_bgp_bbr.py", 414, None)],
        "Failed: DUT check failed",
    ),
    "sonic-fib-utils-dict-keys": (
        [
            ("tests/common/fixtures/fib_utils.py", 304, "fib_info_files"),
            ("tests/common/fixtures/fib_utils.py", 86, "get_t2_fib_info"),
        ],
        "TypeError: 'dict_keys' object is not subscriptable",
    ),
    "tempest-detach-notfound-wrong-module": (
        [("tempest/api/compute/base.py", 437, "_detach_volume")],
        "AttributeError: 'module' object has no attribute 'NotFound'",
    ),
    "tpl-mtu-unbound-local": (
        [("libvirt/tests/src/virtual_network/mtu.py", 179, "run")],
        "UnboundLocalError: local variable 'new_pkg' referenced before assignment",
    ),
}


def load_case(case_id: str) -> dict:
    return json.loads((REAL / f"{case_id}.json").read_text())


@pytest.mark.parametrize("case_id", sorted(REAL_EXPECTED))
def test_real_case_frames_and_error(case_id: str) -> None:
    case = load_case(case_id)
    frames, error = REAL_EXPECTED[case_id]
    paths = [t["path"] for t in case["test_files"]]
    parsed = parse_log(case["failure_log"])

    assert mapped(parsed, paths) == frames
    assert parsed.error_message == error
    assert not any("truncated" in w for w in parsed.warnings)
    assert_well_formed(parsed, len(case["failure_log"].splitlines()))


@pytest.mark.parametrize("case_id", sorted(REAL_EXPECTED))
def test_real_case_frames_show_the_source_line(case_id: str) -> None:
    """The cases' notes say the log's line numbers match the faulty version: the code must agree."""
    case = load_case(case_id)
    sources = {t["path"]: t["content"].splitlines() for t in case["test_files"]}
    parsed = parse_log(case["failure_log"])
    checked = 0
    for f in parsed.frames:
        path = match_script_path(f.path, list(sources))
        if path is not None and f.code is not None:
            assert same_code(f.code, sources[path][f.line - 1]), (f, sources[path][f.line - 1])
            checked += 1
    assert checked == sum(1 for _, _, func in REAL_EXPECTED[case_id][0] if func is not None)


def test_real_pmem_two_tracebacks_the_error_is_the_second() -> None:
    parsed = parse_log(load_case("amt-pmem-dm-teardown-attr")["failure_log"])
    assert sorted({f.traceback for f in parsed.frames}) == [0, 1]
    # terminal-wrapped frames: `..., line` / ` 54, in wrapper` and `..., line 754,` / `in wrapper`
    assert [(f.line, f.function) for f in parsed.frames if f.traceback == 0] == [
        (54, "wrapper"),
        (52, "wrapper"),
        (140, "test"),
        (754, "wrapper"),
        (801, "cancel"),
    ]
    assert parsed.frames[-1].line == 205 and parsed.frames[-1].traceback == 1
    assert "TestCancel" not in parsed.error_message


def test_real_tpl_path_wrapped_mid_word() -> None:
    parsed = parse_log(load_case("tpl-mtu-unbound-local")["failure_log"])
    (frame,) = parsed.frames
    assert frame.path.endswith("/io-github-autotest-libvirt/libvirt/tests/src/virtual_network/mtu.py")
    assert (frame.log_line, frame.code) == (2, "utils_package.package_install(new_pkg)")
    assert parsed.messages == ()


def test_real_bgp_wrapped_message_is_one_message_and_report_lines_are_not_messages() -> None:
    parsed = parse_log(load_case("sonic-bgp-bbr-poll-timeouts")["failure_log"])
    assert parsed.format == "sonic"
    (msg,) = parsed.messages
    assert (msg.line, msg.end_line, msg.level) == (1, 3, "WARNING")
    assert _SPACE.sub(" ", msg.text).startswith("DUT didn't advertise the route")


def test_real_fib_empty_prefixed_line_continues_into_next() -> None:
    parsed = parse_log(load_case("sonic-fib-utils-dict-keys")["failure_log"])
    # line 1 is pytest's node id, line 2 its live-log banner: report lines, not messages
    assert [(m.line, m.end_line, m.level, m.text) for m in parsed.messages] == [
        (3, 4, "ERROR", "TypeError(\"'dict_keys' object is not subscriptable\")"),
    ]
    assert [f.code for f in parsed.frames][-1] == "if 'role' in ports[po_members[ifname].keys()[0]] and"


def test_real_avocado_messages_keep_stdout_markers_and_levels() -> None:
    parsed = parse_log(load_case("amt-bonnie-missing-build-deps")["failure_log"])
    assert parsed.format == "avocado"
    assert parsed.messages[2].text == "[stdout] checking for g++... no"
    assert parsed.messages[2].level == "DEBUG"
    # the runner's status line (ERROR 1-.../bonnie.py:Bonnie.test -> ...) says how the run ended
    assert not any(t.startswith("ERROR 1-") for t in texts(parsed))
    assert parsed.error_message == "CmdError: Command './configure' failed (rc=77)"
    assert not any("File " in t or t.startswith("Traceback") for t in texts(parsed))


def test_real_no_traceback_warns_and_uses_the_error_line() -> None:
    case = load_case("tpq-enospc-cleanup-ignore-status")
    parsed = parse_log(case["failure_log"])
    assert parsed.frames == ()
    assert parsed.error_message.startswith("Test failed: CmdError:")
    assert "fuser -k" in parsed.error_message
    assert any("no traceback" in w for w in parsed.warnings)
    assert len(parsed.messages) == len(case["failure_log"].splitlines())


# --------------------------------------------------------------------------------------------
# Fixture logs, one per prefix format (made by running tests/data/logs/suite_demo.py and
# pytest_demo.py under each format)
# --------------------------------------------------------------------------------------------

SUITE = (LOGS / "suite_demo.py").read_text().splitlines()
PYTEST_DEMO = (LOGS / "pytest_demo.py").read_text().splitlines()
SUITE_MESSAGES = [
    ("Prepare testing...", "INFO"),
    ("link is slow:\n  rx=10\n  tx=12", "WARNING"),
    ("probing 2 ports", "INFO"),
    ("reading port eth9", "DEBUG"),
]
# chained: KeyError in probe/read_port, then ProbeError raised from it in main/probe
SUITE_FRAMES = [(20, "probe"), (14, "read_port"), (30, "main"), (22, "probe")]


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("python_default.log", "python"),
        ("asctime.log", "asctime"),
        ("bracket.log", "bracket"),
        ("iso.log", "iso"),
        ("iso_ci.log", "iso"),
        ("syslog.log", "syslog"),
        ("avocado_job.log", "avocado"),
        ("avocado_stdlog.log", "avocado"),
    ],
)
def test_suite_logs_in_every_format(name: str, fmt: str) -> None:
    log = (LOGS / name).read_text()
    parsed = parse_log(log)

    assert parsed.format == fmt
    assert [(m.text, m.level) for m in parsed.messages[:4]] == SUITE_MESSAGES
    suite_frames = [f for f in parsed.frames if match_script_path(f.path, ["logs/suite_demo.py"])]
    assert [(f.line, f.function) for f in suite_frames][:4] == SUITE_FRAMES
    for f in suite_frames:
        assert same_code(f.code or "", SUITE[f.line - 1])
    assert parsed.error_message.endswith("ProbeError: port eth9 is missing\nknown ports: ['eth0', 'eth1']")
    assert not any("Traceback" in t or "File " in t or "exception" in t for t in texts(parsed))
    assert parsed.warnings == ()
    assert_well_formed(parsed, len(log.splitlines()))


def test_logger_exception_then_unhandled_traceback_gives_four_tracebacks() -> None:
    parsed = parse_log((LOGS / "python_default.log").read_text())
    assert sorted({f.traceback for f in parsed.frames}) == [0, 1, 2, 3]
    assert [(f.line, f.function) for f in parsed.frames if f.traceback == 3] == [
        (39, "<module>"),
        (30, "main"),
        (22, "probe"),
    ]
    assert texts(parsed)[-1] == "probe failed"
    assert parsed.messages[-1].level == "ERROR"


def test_avocado_closing_status_line_is_not_a_message() -> None:
    parsed = parse_log((LOGS / "avocado_job.log").read_text())
    assert not any(t.startswith("ERROR 1-suite_demo.py") for t in texts(parsed))
    assert "ProbeError" in parsed.error_message
    assert [f.traceback for f in parsed.frames] == [0, 0, 1, 1, 1]


PYTEST_FRAMES = [(14, "test_ratio"), (8, "helper"), (20, "test_compare")]


@pytest.mark.parametrize(
    ("name", "with_functions"),
    [
        ("pytest_long.log", True),
        ("pytest_short.log", True),
        ("pytest_native.log", True),
        ("pytest_live_captured.log", True),
        ("pytest_live_time.log", True),
        ("sonic_live.log", True),
        ("pytest_line.log", False),
        ("pytest_live_bracket.log", False),
    ],
)
def test_pytest_reports(name: str, with_functions: bool) -> None:
    log = (LOGS / name).read_text()
    parsed = parse_log(log)

    frames = [(f.line, f.function) for f in parsed.frames if f.path.endswith("test_demo.py")]
    if with_functions:
        assert frames == PYTEST_FRAMES
        for f in parsed.frames:
            if f.path.endswith("test_demo.py"):
                assert same_code(f.code or "", PYTEST_DEMO[f.line - 1])
    else:
        assert frames == [(8, None), (20, None)]
    tb_of = {f.line: f.traceback for f in parsed.frames if f.path.endswith("test_demo.py")}
    assert tb_of[8] != tb_of[20]
    assert parsed.error_message.startswith("AssertionError: x should be 2")
    # report lines (source listings, E lines, locations, summaries, banners) are no messages
    for t in texts(parsed):
        assert not t.startswith(("E ", ">", "FAILED", "===", "___", "def ", "test_demo.py:"))
        assert "assert x == 2" not in t
    assert "values: {}" in texts(parsed)
    assert "starting ratio test" in texts(parsed)
    assert parsed.warnings == ()
    assert_well_formed(parsed, len(log.splitlines()))


def test_pytest_live_formats_strip_their_prefixes() -> None:
    bracket = parse_log((LOGS / "pytest_live_bracket.log").read_text())
    assert bracket.format == "pytest-live-bracket"
    live = [m for m in bracket.messages if m.text == "starting ratio test"]
    assert [m.level for m in live] == ["WARNING", "WARNING"]  # live log and captured log

    sonic = parse_log((LOGS / "sonic_live.log").read_text())
    assert sonic.format == "sonic"
    assert ("computing ratio for []", "INFO") in [(m.text, m.level) for m in sonic.messages]


def test_unittest_report() -> None:
    parsed = parse_log((LOGS / "unittest.log").read_text())
    source = (LOGS / "unittest_demo.py").read_text().splitlines()
    assert [(f.line, f.function) for f in parsed.frames] == [(15, "test_speed")]
    assert same_code(parsed.frames[0].code or "", source[14])
    assert parsed.error_message == "KeyError: 'eth1'"
    # print() output right after a prefixed message continues it (the log cannot tell them apart)
    assert [(m.text, m.level) for m in parsed.messages[:2]] == [
        ("ut: bringing link up", "INFO"),
        ("ut: measuring __init__ speed\n__main__", "WARNING"),
    ]
    assert "Ran 1 test in 0.001s" in texts(parsed)
    assert "E" not in texts(parsed)


def test_dunder_lines_are_not_pytest_section_titles() -> None:
    parsed = parse_log("__main__\n__init__ done\nnext line\n")
    assert texts(parsed) == ["__main__", "__init__ done", "next line"]


def test_pytest_long_style_error_joins_e_lines() -> None:
    parsed = parse_log((LOGS / "pytest_long.log").read_text())
    assert parsed.error_message == "AssertionError: x should be 2\nassert 1 == 2"


# --------------------------------------------------------------------------------------------
# Tracebacks in odd shapes
# --------------------------------------------------------------------------------------------


def test_frames_without_quotes_or_indentation() -> None:
    log = "\n".join(
        [
            "Traceback (most recent call last):",
            "File /opt/suite/test_net.py, line 12, in test_ping",
            "ping(host)",
            "File /opt/suite/net.py, line 40, in ping",
            "raise",
            "RuntimeError: no route",
        ]
    )
    parsed = parse_log(log)
    assert [(f.path, f.line, f.function, f.code) for f in parsed.frames] == [
        ("/opt/suite/test_net.py", 12, "test_ping", "ping(host)"),
        ("/opt/suite/net.py", 40, "ping", "raise"),
    ]
    assert parsed.error_message == "RuntimeError: no route"


def test_unprefixed_frame_wrapped_by_a_terminal() -> None:
    log = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/srv/ci/workspace/very/long/path/to/the/suite/tests/test_stor',
            'age.py", line 88, in test_resize',
            "    resize(vol)",
            "ValueError: bad size",
        ]
    )
    parsed = parse_log(log)
    (frame,) = parsed.frames
    assert frame.path == "/srv/ci/workspace/very/long/path/to/the/suite/tests/test_storage.py"
    assert (frame.line, frame.function, frame.code, frame.log_line) == (88, "test_resize", "resize(vol)", 2)
    assert parsed.messages == ()


def test_syntax_error_frame_without_function_and_caret_lines() -> None:
    log = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/x/run.py", line 3, in <module>',
            "    import test_cfg",
            '  File "/x/test_cfg.py", line 7',
            "    x = (",
            "        ^",
            "SyntaxError: '(' was never closed",
        ]
    )
    parsed = parse_log(log)
    assert [(f.line, f.function, f.code) for f in parsed.frames] == [
        (3, "<module>", "import test_cfg"),
        (7, None, "x = ("),
    ]
    assert parsed.error_message == "SyntaxError: '(' was never closed"


def test_recursion_traceback_skips_repeat_marker() -> None:
    log = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/x/t.py", line 2, in f',
            "    return f()",
            "           ^^^",
            "  [Previous line repeated 996 more times]",
            "RecursionError: maximum recursion depth exceeded",
        ]
    )
    parsed = parse_log(log)
    assert [(f.line, f.code) for f in parsed.frames] == [(2, "return f()")]
    assert parsed.error_message == "RecursionError: maximum recursion depth exceeded"
    assert parsed.messages == ()


def test_messages_around_a_traceback_are_kept() -> None:
    log = "\n".join(
        [
            "starting run",
            "Traceback (most recent call last):",
            '  File "/x/t.py", line 5, in main',
            "    go()",
            "KeyError: 'a'",
            "",
            "cleanup done",
        ]
    )
    parsed = parse_log(log)
    assert [(m.line, m.text) for m in parsed.messages] == [(1, "starting run"), (7, "cleanup done")]
    assert parsed.error_message == "KeyError: 'a'"


def test_multiline_exception_message_stops_at_next_prefixed_line() -> None:
    log = "\n".join(
        [
            "2024-01-01 10:00:00,001 - suite - ERROR - run failed",
            "Traceback (most recent call last):",
            '  File "/x/t.py", line 5, in main',
            "    check()",
            "AssertionError: mismatch:",
            "  expected 1",
            "  got 2",
            "2024-01-01 10:00:00,002 - suite - INFO - tearing down",
        ]
    )
    parsed = parse_log(log)
    assert parsed.error_message == "AssertionError: mismatch:\nexpected 1\ngot 2"
    assert texts(parsed) == ["run failed", "tearing down"]


def test_truncated_traceback_warns_and_falls_back() -> None:
    log = "\n".join(
        [
            "[INFO] step 1",
            "[ERROR] Traceback (most recent call last):",
            '  File "/x/t.py", line 5, in main',
            "    go()",
            "[ERROR] giving up on device sda",
        ]
    )
    parsed = parse_log(log)
    assert [f.line for f in parsed.frames] == [5]
    assert any("truncated traceback at log line 2" in w for w in parsed.warnings)
    assert parsed.error_message == "giving up on device sda"
    assert texts(parsed) == ["step 1", "giving up on device sda"]


@pytest.mark.parametrize(
    "log",
    [
        "Traceback (most recent call last):",
        "Traceback (most recent call last):\n",
        "[ERROR] Traceback (most recent call last):\n\n",
        'Traceback (most recent call last):\n  File "/x.py", line',
    ],
)
def test_lone_traceback_header(log: str) -> None:
    parsed = parse_log(log)
    assert any("truncated traceback" in w for w in parsed.warnings)
    assert parsed.messages == ()


def test_exception_group_report() -> None:
    parsed = parse_log((LOGS / "exception_group.log").read_text())
    source = (LOGS / "group_demo.py").read_text().splitlines()
    assert [(f.traceback, f.line, f.function) for f in parsed.frames] == [
        (0, 19, "<module>"),
        (0, 17, "main"),
        (1, 13, "main"),
        (1, 7, "check"),
        (2, 13, "main"),
        (2, 6, "check"),
    ]
    assert all(same_code(f.code or "", source[f.line - 1]) for f in parsed.frames)
    assert (
        parsed.error_message == "ExceptionGroup: checks failed (2 sub-exceptions)\nValueError: 1\nKeyError: 2"
    )
    assert texts(parsed) == ["collected 2 errors"]


def test_python_warnings_are_not_pytest_frames() -> None:
    log = "/x/test_a.py:3: DeprecationWarning: old api\n  api.call()\n"
    parsed = parse_log(log)
    assert parsed.frames == ()
    assert texts(parsed)[0] == "/x/test_a.py:3: DeprecationWarning: old api"


# --------------------------------------------------------------------------------------------
# Error message without a traceback
# --------------------------------------------------------------------------------------------


def test_failed_summary_is_the_error_without_traceback() -> None:
    log = "collected 3 items\n\nFAILED tests/test_a.py::test_x[a b] - AssertionError: boom\n"
    parsed = parse_log(log)
    assert parsed.error_message == "AssertionError: boom"
    assert texts(parsed) == ["collected 3 items"]
    assert any("no traceback" in w for w in parsed.warnings)


def test_last_error_level_message_without_traceback() -> None:
    log = "[INFO] a\n[ERROR] first problem\n[INFO] b\n[ERROR] disk full\n[INFO] done\n"
    parsed = parse_log(log)
    assert parsed.error_message == "disk full"
    assert any("no traceback" in w for w in parsed.warnings)


def test_last_line_when_nothing_looks_like_an_error() -> None:
    parsed = parse_log("one\ntwo\n\nthree\n")
    assert parsed.error_message == "three"
    assert parsed.warnings


# --------------------------------------------------------------------------------------------
# Configured formats and options
# --------------------------------------------------------------------------------------------


def test_configured_known_format_is_the_only_one_stripped() -> None:
    parsed = parse_log("INFO:root:a\n[INFO] b\n\n[INFO] c\nERROR:root:d\n", prefix_format="python")
    assert parsed.format == "python"
    assert [(m.text, m.level) for m in parsed.messages] == [
        ("a\n[INFO] b", "INFO"),
        ("[INFO] c", None),
        ("d", "ERROR"),
    ]


def test_configured_regex_with_level() -> None:
    log = "1700000000 W | disk slow\n1700000001 E | disk gone\n    while copying\n"
    parsed = parse_log(log, prefix_format=r"\d+ (?P<level>[A-Z]) \| (?P<msg>.*)")
    assert parsed.format == "custom"
    assert [(m.text, m.level) for m in parsed.messages] == [
        ("disk slow", "W"),
        ("disk gone\n    while copying", "E"),
    ]


def test_configured_regex_that_matches_nothing_warns() -> None:
    parsed = parse_log("plain line\n", prefix_format=r"@@(?P<msg>.*)")
    assert texts(parsed) == ["plain line"]
    assert any("matched no line" in w for w in parsed.warnings)


def test_plain_format_strips_nothing() -> None:
    assert texts(parse_log("[INFO] a\n", prefix_format="plain")) == ["[INFO] a"]


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ("(?P<msg>.*", "not a valid regex"),
        (r"(?P<text>.*)", "unknown prefix_format"),
        ("nonsense", "unknown prefix_format"),
        (r"(?P<ts>\d+)(?=\s) (?P<msg>.*)", r"a lookahead \(\?=\.\.\.\)"),
        (r"(?<=\]) (?P<msg>.*)", "a lookbehind"),
        (r"(?P<q>['\"])(?P<msg>.*)(?P=q)", "a named backreference"),
        (r"(\w)\1 (?P<msg>.*)", "a backreference"),
        (r"a{5000}(?P<msg>.*)", "a repetition count over 1000"),
        ("", "empty"),
    ],
)
def test_invalid_prefix_format_is_a_value_error(spec: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_log("x", prefix_format=spec)


@pytest.mark.parametrize(
    "spec",
    [r"(?P<msg>(a|a)+)$", r"(?P<ts>(\d+)+) (?P<msg>.*)", r"(?:\w+\s?)* (?P<msg>.*)", r"(?P<msg>.*.*.*.*=)"],
)
def test_backtracking_regexes_run_in_linear_time(spec: str) -> None:
    """Patterns that backtrack exponentially in Python's engine run linearly: no line takes long."""
    hostile = ["a" * 5000 + "b", "1" * 5000 + "x", "w " * 2500 + "!", "x" * 5000]
    log = "\n".join(hostile * 5) + "\n"
    t0 = time.process_time()
    parsed = parse_log(log, prefix_format=spec)
    assert len(parsed.messages) >= 1
    # generous: the backtracking engine needs hours here; a linear one a few milliseconds
    assert time.process_time() - t0 < 5


def test_linear_regex_still_strips_prefixes() -> None:
    parsed = parse_log(
        "aaaa\n12 34 INFO hello\n", prefix_format=r"(?P<ts>(\d+ )+)(?P<level>[A-Z]+) (?P<msg>.*)"
    )
    assert [(m.text, m.level) for m in parsed.messages] == [("aaaa", None), ("hello", "INFO")]


def test_harmless_regex_is_accepted() -> None:
    parsed = parse_log("[a+b]* x\n", prefix_format=r"\[[a-z+]+\]\* (?P<msg>(?:x|y))")
    assert texts(parsed) == ["x"]


def test_max_lines_keeps_the_tail_with_original_line_numbers() -> None:
    log = "\n".join(f"[INFO] line {i}" for i in range(1, 101))
    parsed = parse_log(log, max_lines=10)
    assert [m.line for m in parsed.messages] == list(range(91, 101))
    assert any("only the last 10" in w for w in parsed.warnings)
    with pytest.raises(ValueError):
        parse_log(log, max_lines=0)


def test_ansi_colours_and_crlf() -> None:
    log = "\x1b[32m[INFO]\x1b[0m ready\r\n\x1b[31m[ERROR]\x1b[0m broken\r\n"
    parsed = parse_log(log)
    assert [(m.text, m.level) for m in parsed.messages] == [("ready", "INFO"), ("broken", "ERROR")]


# --------------------------------------------------------------------------------------------
# Robustness
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("log", ["", "   ", "\n\n\n", "\x00\x00"])
def test_empty_log(log: str) -> None:
    parsed = parse_log(log)
    assert parsed.messages == () and parsed.frames == () and parsed.error_message == ""
    assert parsed.warnings == ("the log is empty",)


def test_binary_junk_is_text_with_a_warning() -> None:
    rng = random.Random(7)
    junk = bytes(rng.randrange(256) for _ in range(20000)).decode("latin-1")
    parsed = parse_log(junk)
    assert any("binary" in w for w in parsed.warnings)
    assert_well_formed(parsed, junk.count("\n") + 1)


def test_huge_single_line() -> None:
    line = 'File "a", line 1, in ' + " " * 5_000_000 + "x" + "a.py:" * 100_000
    parsed = parse_log(line)
    assert len(parsed.messages) == 1 and parsed.frames == ()


def test_many_lines() -> None:
    lines = [f"2024-05-01 10:00:{i % 60:02d},000 - suite - INFO - step {i}" for i in range(100_000)]
    lines += ["Traceback (most recent call last):", '  File "/x/t.py", line 9, in t', "    f()", "OSError: x"]
    parsed = parse_log("\n".join(lines))
    assert len(parsed.messages) == 100_000
    assert parsed.messages[-1].text == "step 99999"
    assert parsed.error_message == "OSError: x"


# --------------------------------------------------------------------------------------------
# match_script_path
# --------------------------------------------------------------------------------------------

SCRIPTS = ["tests/common/fixtures/fib_utils.py", "tests/decap/test_decap.py", "memory/pmem_dm.py"]


@pytest.mark.parametrize(
    ("printed", "expected"),
    [
        ("/data/tests/common/fixtures/fib_utils.py", "tests/common/fixtures/fib_utils.py"),
        ("decap/test_decap.py", "tests/decap/test_decap.py"),
        ("./tests/decap/test_decap.py", "tests/decap/test_decap.py"),
        ("C:\\ci\\tests\\decap\\test_decap.py", "tests/decap/test_decap.py"),
        ("/home/x/avocado-misc-tests/memory/pmem_dm.py", "memory/pmem_dm.py"),
        ("/elsewhere/pmem_dm.py", "memory/pmem_dm.py"),
        ("/x/my_pmem_dm.py", None),
        ("/x/fib_utils.pyc", None),
        ("/usr/lib/python3/site-packages/avocado/core/test.py", None),
        ("<string>", None),
        ("", None),
        ("/", None),
    ],
)
def test_match_script_path(printed: str, expected: str | None) -> None:
    assert match_script_path(printed, SCRIPTS) == expected


def test_match_script_path_longest_suffix_wins_and_ties_are_refused() -> None:
    scripts = ["a/util.py", "b/util.py", "x/b/util.py"]
    assert match_script_path("/r/x/b/util.py", scripts) == "x/b/util.py"
    assert match_script_path("/r/y/a/util.py", scripts) == "a/util.py"
    assert match_script_path("/r/util.py", scripts) is None
    assert match_script_path("/r/util.py", ["./util.py", "util.py"]) == "./util.py"
    assert match_script_path("util.py", []) is None


# --------------------------------------------------------------------------------------------
# decode_log
# --------------------------------------------------------------------------------------------


def test_decode_log_plain_utf8() -> None:
    assert decode_log("[INFO] café\n".encode()) == ("[INFO] café\n", [])


def test_decode_log_replaces_bad_bytes_and_strips_nuls() -> None:
    text, warnings = decode_log(b"[INFO] ok\xff\xfe\n\x00[ERROR] bad\x00\n")
    assert text == "[INFO] ok\ufffd\ufffd\n[ERROR] bad\n"
    assert any("not valid UTF-8" in w for w in warnings)
    assert any("binary" in w for w in warnings)
    assert texts(parse_log(text))[1] == "bad"


def test_decode_log_boms() -> None:
    assert decode_log("\ufeff[INFO] x\n".encode())[0] == "[INFO] x\n"
    assert decode_log("[INFO] x\n".encode("utf-16"))[0] == "[INFO] x\n"


def test_decode_log_keeps_a_literal_replacement_character() -> None:
    assert decode_log("x \ufffd y".encode()) == ("x \ufffd y", [])


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------

WRITERS: dict[str, Callable[[str, str], str]] = {
    "avocado": lambda lvl, m: f"2017-09-16 16:38:59,012 download         L0066 {lvl[:5]:<5}| {m}",
    "avocado-stream": lambda lvl, m: f"[stdout] {m}",  # stream tags carry no level
    "sonic": lambda lvl, m: f"08:39:25 init._fixture_func_decorator    L0073 {lvl:<8} | {m}",
    "pytest-live-bracket": lambda lvl, m: f"2024-01-01 10:00:00 [{lvl:>8}] {m} (test_a.py:12)",
    "asctime": lambda lvl, m: f"2024-01-01 10:00:00,123 - suite.net - {lvl} - {m}",
    "pytest-captured": lambda lvl, m: f"{lvl:<8} suite.net:test_a.py:12 {m}",
    "python": lambda lvl, m: f"{lvl}:suite.net:{m}",
    "bracket": lambda lvl, m: f"[{lvl}] {m}",
    "syslog": lambda lvl, m: f"Jan  2 03:04:05 qa-host suite[123]: {m}",
    "pytest-live": lambda lvl, m: f"10:00:00 {lvl} {m}",
    "iso": lambda lvl, m: f"2024-05-01T10:00:00.123Z {lvl} {m}",
    "oslo": lambda lvl, m: f"2015-07-31 09:37:44,661 17897 {lvl} [tempest.lib.common.rest_client] {m}",
    "avocado-console": lambda lvl, m: f"{lvl[:5]:<5}| {m}",
}
LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


def test_every_known_format_has_a_writer() -> None:
    assert set(WRITERS) == set(KNOWN_FORMATS)


def ordinary(message: str) -> bool:
    """A message that reads as itself when it stands alone (not a traceback or report line)."""
    for spec in ("plain", None):
        parsed = parse_log(message, prefix_format=spec)
        if texts(parsed) != [message] or parsed.messages[0].level is not None:
            return False
    return True


message_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=60
).filter(lambda s: s == s.strip() and "\n" not in s)


@settings(max_examples=300, deadline=None)
@given(
    fmt=st.sampled_from(sorted(WRITERS)),
    entries=st.lists(st.tuples(st.sampled_from(LEVELS), message_text), min_size=1, max_size=5),
)
def test_prefixed_messages_round_trip(fmt: str, entries: list[tuple[str, str]]) -> None:
    for _, message in entries:
        assume(ordinary(message))
    log = "\n".join(WRITERS[fmt](level, message) for level, message in entries)
    parsed = parse_log(log, prefix_format=fmt)
    assert texts(parsed) == [message for _, message in entries]
    if fmt not in ("syslog", "avocado-stream"):
        assert [m.level for m in parsed.messages] == [level for level, _ in entries]


word_text = st.lists(
    st.text(
        alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,!?'\"{}()=/-+", min_size=1
    ),
    min_size=1,
    max_size=6,
).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(
    fmt=st.sampled_from(sorted(WRITERS)),
    entries=st.lists(st.tuples(st.sampled_from(LEVELS), word_text), min_size=1, max_size=5),
)
def test_detected_format_round_trips(fmt: str, entries: list[tuple[str, str]]) -> None:
    for _, message in entries:
        assume(ordinary(message))
    log = "\n".join(WRITERS[fmt](level, message) for level, message in entries)
    parsed = parse_log(log)
    assert parsed.format == fmt
    assert texts(parsed) == [message for _, message in entries]


LINE_PIECES = [
    "Traceback (most recent call last):",
    '  File "/x/test_a.py", line 3, in f',
    '  File "/x/test_a.py", line',
    " 12, in g",
    "File /y.py, line 0, in h",
    "    return g()",
    "           ^^^^",
    "ValueError: boom",
    "During handling of the above exception, another exception occurred:",
    "_________ test_a _________",
    "test_a.py:0: in f",
    "test_a.py:7: AssertionError",
    "E   assert 1 == 2",
    ">       assert x",
    "FAILED test_a.py::test_x - boom",
    "=== 1 failed in 0.1s ===",
    "--- Captured log call ---",
    "[ERROR] Traceback (most recent call last):",
    '2017-09-16 16:38:59,012 stacktrace       L0045 ERROR|   File "/a.py", line 9, in s',
    "",
    "    ",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(LINE_PIECES), st.text(max_size=40)), max_size=40))
def test_parse_log_never_raises_and_frames_are_sane(pieces: list[str]) -> None:
    log = "\n".join(pieces)
    parsed = parse_log(log)
    assert_well_formed(parsed, max(1, len(log.split("\n"))))
    assert isinstance(parsed.error_message, str)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_parse_log_never_raises_on_any_text(text: str) -> None:
    parsed = parse_log(text)
    assert_well_formed(parsed, max(1, len(text.split("\n"))))


@settings(max_examples=200, deadline=None)
@given(
    frames=st.lists(
        st.tuples(st.from_regex(r"/[a-z_/]{1,30}\.py", fullmatch=True), st.integers(1, 10**7)),
        min_size=1,
        max_size=6,
    ),
    wrap_at=st.integers(len('  File "/') + 1, 60),
    prefixed=st.booleans(),
)
@pytest.mark.slow
def test_traceback_frames_round_trip(frames: list[tuple[str, int]], wrap_at: int, prefixed: bool) -> None:
    prefix = "2021-03-23 22:35:35,295 stacktrace       L0045 ERROR| " if prefixed else ""
    lines = [prefix + "Traceback (most recent call last):"]
    for path, line in frames:
        frame = f'  File "{path}", line {line}, in fn'
        if wrap_at <= len(frame) - len("fn"):  # a terminal wrapped it: the tail goes on an unprefixed line
            lines += [prefix + frame[:wrap_at], frame[wrap_at:]]
        else:
            lines.append(prefix + frame)
        lines.append(prefix + "    do_it()")
    lines.append(prefix + "RuntimeError: failed")
    parsed = parse_log("\n".join(lines))
    assert [(f.path, f.line, f.function, f.code) for f in parsed.frames] == [
        (path, line, "fn", "do_it()") for path, line in frames
    ]
    assert parsed.error_message == "RuntimeError: failed"
    assert parsed.messages == ()


def test_folder_conflict_only_when_both_sides_name_different_folders() -> None:
    from app.analysis.logparse import folder_conflict

    assert folder_conflict("/ci/tests/b/test_x.py", "tests/a/test_x.py") == "b/ vs a/"
    assert folder_conflict("/ci/tests/a/test_x.py", "tests/a/test_x.py") is None
    assert folder_conflict("test_x.py", "tests/a/test_x.py") is None
    assert folder_conflict("/ci/tests/b/test_x.py", "test_x.py") is None
    assert folder_conflict("C:\\ci\\b\\test_x.py", "a/test_x.py") == "b/ vs a/"


_CONTROL_SPEC = {chr(c) for c in (*range(32), *range(0x7F, 0xA0))} - set("\t\n\r\f\v\x1b")


@given(
    st.text(
        alphabet=st.sampled_from(
            ["a", " ", "\n", "\t", "\x00", "\x01", "\x1b", "\x7f", "\x85", "é", "\ufffd"]
        )
    )
)
def test_binary_share_counts_control_characters_whatever_the_text(text: str) -> None:
    """The share behind the binary-data warning: control characters (and U+FFFD) over the sample,
    the same on the ASCII path as on the general one."""
    from app.analysis.logparse.formats import _BINARY_SAMPLE, _binary_share

    sample = text[:_BINARY_SAMPLE]
    odd = sum(ch in _CONTROL_SPEC or ch == "\ufffd" for ch in sample)
    assert _binary_share(text) == (odd / len(sample) if sample else 0.0)
