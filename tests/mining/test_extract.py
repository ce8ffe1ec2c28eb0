"""The pure mining steps: log cut from commit messages, frames, faulty lines, grades."""

from __future__ import annotations

import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from app.mining.extract import (
    FixFacts,
    FixHunks,
    LogCut,
    case_id,
    faulty_lines,
    find_log,
    fix_nature,
    grade,
    is_python,
    is_test_path,
    log_frames,
    parse_unified_diff,
)

TRACEBACK = """\
Traceback (most recent call last):
  File "/home/ci/src/tests/test_cart.py", line 12, in test_total
    assert cart.total() == expected
AssertionError: 3 != 4"""


def message(*paragraphs: str) -> str:
    return "\n\n".join(paragraphs)


def test_traceback_between_prose_is_cut_verbatim() -> None:
    msg = message(
        "tests: fix the expected total",
        "The cart test failed on every run:",
        textwrap.indent(TRACEBACK, "    "),
        "The expected value counted the discount twice.",
        "Signed-off-by: A Person <a@example.com>",
    )
    cut = find_log(msg)
    assert cut is not None
    assert cut.text == textwrap.indent(TRACEBACK, "    ")
    assert cut.strength == "traceback"
    assert {"traceback", "frame", "exception"} <= cut.markers
    assert msg.split("\n")[cut.first_line - 1].strip().startswith("Traceback")


def test_fenced_log_with_blank_lines_is_one_log() -> None:
    log = "2024-01-02 10:00:01 INFO starting\n\n2024-01-02 10:00:02 ERROR boom: KeyError: 'x'"
    msg = message("fix", "Seen in CI:", f"```\n{log}\n```", "Fixes: #12")
    cut = find_log(msg)
    assert cut is not None and cut.text == log


def test_prose_alone_is_no_log() -> None:
    assert find_log("Fix typo in test\n\nThe helper used the wrong name, which made it fail.") is None
    # the subject is never a log, even when it names an exception
    assert find_log("Fix AttributeError: 'NoneType' in test_cart\n\nRename the helper.") is None


def test_pytest_output_and_status_lines() -> None:
    pytest_log = (
        "    def test_total():\n>       assert total() == 4\nE       assert 3 == 4\n\n"
        "tests/test_cart.py:7: AssertionError"
    )
    cut = find_log(message("fix", pytest_log))
    assert cut is not None and "pytest_e" in cut.markers and cut.strength == "traceback"
    status = find_log(message("fix", "(1/2) tests/net.py:NetTest.test_up: FAIL (3.2 s)"))
    assert status is not None and status.strength == "status"


def test_frames_plain_wrapped_and_pytest() -> None:
    frames = log_frames(TRACEBACK)
    assert [(f.path, f.line, f.code) for f in frames] == [
        ("/home/ci/src/tests/test_cart.py", 12, "assert cart.total() == expected")
    ]
    wrapped = (
        'Traceback (most recent call last):\n  File "/very/long/path/tests/test_x.py",\n'
        " line 40, in test_y\n    x()"
    )
    assert [(f.path, f.line) for f in log_frames(wrapped)] == [("/very/long/path/tests/test_x.py", 40)]
    assert [(f.path, f.line) for f in log_frames("tests/test_cart.py:7: AssertionError")] == [
        ("tests/test_cart.py", 7)
    ]


DIFF = """\
diff --git a/tests/test_cart.py b/tests/test_cart.py
index 1..2 100644
--- a/tests/test_cart.py
+++ b/tests/test_cart.py
@@ -3 +3 @@ def expected():
-    return 4
+    return 3
@@ -9,0 +10,2 @@ def test_total():
+    cart.reset()
+
diff --git a/tests/old.py b/tests/new.py
similarity index 90%
rename from tests/old.py
rename to tests/new.py
--- a/tests/old.py
+++ b/tests/new.py
@@ -2,2 +2 @@
-a = 1
-
+a = 2
diff --git a/tests/added.py b/tests/added.py
new file mode 100644
--- /dev/null
+++ b/tests/added.py
@@ -0,0 +1 @@
+x = 1
"""


def test_unified_diff_removed_lines_insertions_and_renames() -> None:
    hunks = parse_unified_diff(DIFF)
    assert [(h.path, h.new_path, h.removed, h.insertions, h.added) for h in hunks] == [
        ("tests/test_cart.py", "tests/test_cart.py", (3,), (9,), 3),
        ("tests/old.py", "tests/new.py", (2, 3), (), 1),
    ]


def test_faulty_lines_skip_blanks_and_mark_insertion_points() -> None:
    parent = (
        "def expected():\n\n    return 4\n\n\ndef test_total():\n    cart = Cart()\n    cart.add(1)\n"
        "    x = 1\n\n    assert cart.total() == expected()\n"
    )
    lines = faulty_lines(FixHunks("t.py", "t.py", (2, 3), (9,), 3), parent)
    assert [(f.line, f.kind, f.text.strip()) for f in lines] == [
        (3, "modified_or_removed", "return 4"),
        (11, "insertion_point", "assert cart.total() == expected()"),
    ]
    # an insertion at the end of the file points at the last line before it
    tail = faulty_lines(FixHunks("t.py", "t.py", (), (11,), 1), parent)
    assert [(f.line, f.kind) for f in tail] == [(11, "insertion_point")]


def test_test_paths_and_python_files() -> None:
    assert is_test_path("tests/unit/test_x.py")
    assert is_test_path("ipatests/test_integration/test_dns.py")
    assert is_test_path("test/verify/check-networking")
    assert not is_test_path("src/app/models.py")
    assert is_test_path("sdcm/nemesis.py", ("*",))
    assert is_python("test/verify/check-networking", "#!/usr/bin/python3\nimport x\n")
    assert not is_python("test/verify/check-networking", "#!/bin/sh\n")
    assert not is_python("tests/data.json", None)


def _facts(log: str, faulty: dict[str, str], **kw: object) -> FixFacts:
    cut = find_log("fix\n\n" + log)
    assert cut is not None
    return FixFacts(cut, log_frames(cut.text), faulty, faulty_count=1, **kw)  # type: ignore[arg-type]


def test_grade_high_when_frames_match_the_faulty_version() -> None:
    faulty = {"tests/test_cart.py": "\n" * 11 + "    assert cart.total() == expected\n"}
    g = grade(_facts(TRACEBACK, faulty, changed_lines=2))
    assert g.confidence == "high", g.reasons
    assert any("1 of 1" in r for r in g.reasons)


def test_grade_drops_for_product_code_and_unmatched_frames() -> None:
    faulty = {"tests/test_cart.py": "\n" * 11 + "    something else\n"}
    g = grade(_facts(TRACEBACK, faulty, changed_lines=2, product_files=("src/cart.c",)))
    assert g.confidence == "low"
    assert any("not test code" in r for r in g.reasons)
    unnamed = grade(_facts("KeyError: 'x'", {"tests/test_other.py": "x = 1\n"}, changed_lines=80))
    assert unnamed.confidence == "low"


def test_case_id_is_stable_and_readable() -> None:
    assert case_id("org/suite", "0123456789abcdef", "Fix: the Expected total!") == (
        "suite-0123456789-fix-the-expected-total"
    )


_LINE = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x1f\x1e"), max_size=80
)


@given(st.lists(_LINE, max_size=30))
@settings(max_examples=200, deadline=None)
def test_any_message_gives_a_verbatim_cut_or_none(lines: list[str]) -> None:
    msg = "\n".join(["subject", *lines])
    cut = find_log(msg)
    if cut is not None:
        assert isinstance(cut, LogCut) and cut.text
        for piece in cut.text.split("\n\n"):
            assert piece.strip("\n") in msg
        assert cut.markers


@given(
    st.lists(
        st.sampled_from(["    ", "> ", "", "\t", "2024-01-01 00:00:00 ERROR| "]), min_size=1, max_size=1
    ),
    st.lists(_LINE.filter(lambda s: s.strip() != "" and "Traceback" not in s), max_size=5),
)
@settings(max_examples=100, deadline=None)
def test_a_traceback_pasted_any_way_is_found(prefix: list[str], prose: list[str]) -> None:
    pasted = "\n".join(prefix[0] + line for line in TRACEBACK.split("\n"))
    cut = find_log(message("fix", *[p for p in prose if p.strip()], pasted))
    assert cut is not None and pasted in cut.text
    assert any(f.line == 12 and f.path.endswith("tests/test_cart.py") for f in log_frames(cut.text))


def test_lint_and_warning_reports_are_no_failure_log() -> None:
    lint = "sdcm/nemesis.py:88:0: E0401: Unable to import 'x' (import-error)\n************* Module sct"
    assert find_log(message("fix pylint", lint)) is None
    flake = "tests/test_a.py:12:5: E741 ambiguous variable name 'l'\ntests/a.py:30:1: F821 undefined name 'x'"
    assert find_log(message("fix flake8", flake)) is None
    mypy = "test/common/testlib.py:40: error: Name 'x' is not defined  [name-defined]"
    assert find_log(message("fix mypy", mypy)) is None
    warning = "teuthology/orchestra/run.py:3: DeprecationWarning: 'pipes' is deprecated"
    assert find_log(message("fix warning", warning)) is None


def test_output_after_the_fix_is_not_part_of_the_log() -> None:
    msg = message(
        "fix", TRACEBACK, "With this fix the output is:", "2024-01-01 10:00:00 ERROR other: KeyError: 'y'"
    )
    cut = find_log(msg)
    assert cut is not None and cut.text == TRACEBACK


def test_fix_nature_spots_fixes_that_repair_nothing() -> None:
    assert fix_nature("-    x = f(a)  # noqa\n+    x = f(a)\n") == "the fix only changes comments or layout"
    assert fix_nature("+    log.info('state %s', s)\n") == "the fix only adds logging"
    assert fix_nature("+@pytest.mark.xfail(reason='flaky')\n") == "the fix only skips or expects the failure"
    assert fix_nature("-    return 4\n+    return 3\n") is None


def test_demos_and_announced_examples_are_no_failure_log() -> None:
    stdin = 'Traceback (most recent call last):\n  File "<stdin>", line 1, in <module>\nKeyError: 3'
    assert find_log(message("fix", stdin)) is None
    assert find_log(message("fix", "cqlsh> SELECT * FROM ks.t;\nInvalidRequest: Error from server")) is None
    example = message(
        "fix",
        "Example output:",
        "2024-01-01 10:00:00 ERROR waited: TimeoutError: x",
        "It failed with:",
        TRACEBACK,
    )
    cut = find_log(example)
    assert cut is not None and cut.text == TRACEBACK


def test_changed_strings_repair_nothing_only_on_message_lines() -> None:
    assert fix_nature("-    log.info('waiting for %s', n)\n+    log.info('waited for %s', n)\n") == (
        "the fix only changes message texts"
    )
    # a changed command, query or path string is a real repair
    assert (
        fix_nature("-    session.execute('SELECT * FROM t')\n+    session.execute('SELECT * FROM ks.t')\n")
        is None
    )
