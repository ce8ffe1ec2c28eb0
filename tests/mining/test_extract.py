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


def cut_text(*body: str) -> str | None:
    """The log cut from a message of these paragraphs under a subject, or None."""
    cut = find_log(message("fix", *body))
    return None if cut is None else cut.text


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


REPORTED = "the fix only changes how the failure is reported"


def test_fixes_that_only_change_how_a_failure_is_reported_repair_nothing() -> None:
    # the message printed swapped for the whole traceback
    swap = "+import traceback\n-    print(str(e))\n+    traceback.print_exc()\n"
    assert fix_nature(swap) == REPORTED
    # the failing statement wrapped in a try/except that logs and re-raises
    wrapped = (
        "-    (path, kind) = line.split(':')\n+    try:\n+        (path, kind) = line.split(':')\n"
        "+    except ValueError:\n+        log.error('cannot split %s', line)\n+        raise\n"
    )
    assert fix_nature(wrapped) == REPORTED
    # an earlier check whose only effect is a clearer message
    check = (
        "+        if n_loaders <= 0:\n+            self.error('n_loaders is %s,'\n"
        "+                       ' it must be positive' % n_loaders)\n"
    )
    assert fix_nature(check) == REPORTED
    assert fix_nature("-        LOGGER.exception('not a number')\n") == REPORTED


def test_a_fix_of_the_reporting_statement_itself_or_that_handles_the_error_is_a_repair() -> None:
    # the log call raised (a None joined to a str): rewriting the same call repairs it
    assert (
        fix_nature(
            "-    log.info(job['status'] + ' ' + job['description'])\n"
            "+    log.info(f\"{job['status']} {job['description']}\")\n"
        )
        is None
    )
    assert fix_nature("-    print('<- ' + res['error'])\n+    print('<- %s' % res['error'])\n") is None
    # the error caught and not re-raised: the failure is handled
    handled = (
        "-    value = int(text)\n+    try:\n+        value = int(text)\n"
        "+    except ValueError:\n+        log.warning('not a number: %s', text)\n+        value = 0\n"
    )
    assert fix_nature(handled) is None
    # a condition put around existing code changes what runs
    guarded = (
        "-    run.save()\n+    if running:\n+        run.save()\n"
        "-    log.debug(exc_info=True)\n+    log.warning('x', exc_info=True)\n"
    )
    assert fix_nature(guarded) is None


def test_a_subject_that_doubts_the_repair_is_never_graded_high() -> None:
    faulty = {"tests/test_cart.py": "\n" * 11 + "    assert cart.total() == expected\n"}
    sure = grade(_facts(TRACEBACK, faulty, changed_lines=2, message="cart: fix the expected total"))
    assert sure.confidence == "high", sure.reasons
    for subject in (
        "Simplify the cart, possibly fix a failing test",
        "cart: debug the total",
        "Try to fix cart",
    ):
        g = grade(_facts(TRACEBACK, faulty, changed_lines=2, message=subject))
        assert g.confidence == "medium", (subject, g.reasons)
        assert "not high: the subject doubts that the change repairs the failure" in g.reasons
    # ``debug`` as a noun further on is no doubt
    noun = grade(_facts(TRACEBACK, faulty, changed_lines=2, message="decode: handle a missing debug file"))
    assert noun.confidence == "high", noun.reasons


def test_demos_and_announced_examples_are_no_failure_log() -> None:
    stdin = 'Traceback (most recent call last):\n  File "<stdin>", line 1, in <module>\nKeyError: 3'
    assert find_log(message("fix", stdin)) is None
    assert find_log(message("fix", "cqlsh> SELECT * FROM ks.t;\nInvalidRequest: Error from server")) is None
    example = ("Example output:", "2024-01-01 10:00:00 ERROR waited: TimeoutError: x", "It failed with:")
    assert cut_text(*example, TRACEBACK) == TRACEBACK


def test_changed_strings_repair_nothing_only_on_message_lines() -> None:
    assert fix_nature("-    log.info('waiting for %s', n)\n+    log.info('waited for %s', n)\n") == (
        "the fix only changes message texts"
    )
    # a changed command, query or path string is a real repair
    assert (
        fix_nature("-    session.execute('SELECT * FROM t')\n+    session.execute('SELECT * FROM ks.t')\n")
        is None
    )


# Logs people pasted into real commit messages (each named by its repository and commit), cut short.


def test_pyflakes_codespell_and_prose_bullets_are_no_failure_log() -> None:
    # ComplianceAsCode/content 7e2938e5ca, 4e9aac1ece; virt-manager ec87485852
    pyflakes = (
        "pyflakes:\ntests/unit/ssg-module/test_build_remediations.py:71:5: local variable 'fixes' is "
        "assigned to but never used"
    )
    assert find_log(message("Fix tests/unit", pyflakes)) is None
    unused = "tests/ssg_test_suite/common.py:435:13: '...'.format(...) has unused named argument(s): x"
    assert find_log(message("fix: drop unused format params", unused)) is None
    no_column = "tests/log.py:52: '...'.format(...) has unused arguments"
    assert find_log(message("tests: no column", no_column)) is None
    assert find_log(message("spelling", "tests/test_xmlconfig.py:92: ba  ==> by, be")) is None
    # sonic-swss 5386d7f181: a bullet of the message names a failed test, it pastes no output
    bullets = "* fix VS test failure for test_crm.py::test_CrmAcl FAILED\n* use the right counter"
    assert find_log(message("Fix bad parameter for gCrmOrch", bullets)) is None
    # a bullet of a failed-tests list is still a status line
    status = find_log(message("fix", "- test_crm.py::test_CrmAcl FAILED"))
    assert status is not None and status.strength == "status"


def test_a_phrase_about_the_fix_hides_only_the_output_it_announces() -> None:
    earlier = ("With this patch the helper waits for the cart.", "Before it, the test failed with:")
    assert cut_text(*earlier, TRACEBACK) == TRACEBACK
    same_paragraph = message("fix", "With this patch the helper waits. Before, it failed with:", TRACEBACK)
    assert find_log(same_paragraph) is not None
    new_output = "2024-01-01 10:00:00 ERROR x: KeyError: 'y'"
    after = message("fix", TRACEBACK, "After this patch the output is:", new_output)
    cut = find_log(after)
    assert cut is not None and cut.text == TRACEBACK
    # openstack/sahara-tests d0afe0fa58: "and example of traceback:" announces the new decorator's output
    example = (
        '    Traceback (most recent call last):\n      File "base.py", line 56, in wrapper\n'
        "    RuntimeError: OOPS"
    )
    announced = message("Collect errors", "Here example of results.", "and example of traceback:", example)
    assert find_log(announced) is None


def test_an_ipython_session_is_a_demo_whatever_its_traceback_looks_like() -> None:
    # redhat-openstack/tobiko e8eb4ff759
    session = message(
        "Fixes for podman client",
        "In [34]: client = podman.Client(uri=uri_via_socat)\n    ...:",
        "~/test/lib/python3.6/site-packages/varlink/client.py in open_unix()\n"
        "    511                 s.setblocking(True)\n--> 512                 s.connect(address)",
        "ConnectionRefusedError: [Errno 111] Connection refused",
        "This just works:",
    )
    assert find_log(session) is None
    # the same traceback shape with no IPython prompt in the message is no session
    plain = message("fix", "It failed:", "ConnectionRefusedError: [Errno 111] Connection refused")
    assert find_log(plain) is not None


def test_an_error_pasted_at_the_end_of_prose_is_the_log() -> None:
    # redhat-openstack/tobiko 67cabfce: the message's continuation after a ':' belongs to it
    tobiko = message(
        "fix assert_ovn_containers_running for podified envs",
        "It didn't expect container names exactly match and due to that the test\n"
        "fails with certain configuration, making test_ovn_containers_running fail due to:\n"
        "AssertionError: container states mismatched:\n"
        "only one running container ovn_controller was expected on node compute-0, but got 2! :",
        "Change-Id: I41e03bf29462db617f6c2ee2528d58b37396e2e7",
    )
    cut = find_log(tobiko)
    assert cut is not None
    assert cut.text.startswith("AssertionError: container states mismatched:\nonly one running")
    assert tobiko.split("\n")[cut.first_line - 1].startswith("AssertionError")
    # osbuild 280aca8f: a two-line indented excerpt under prose ending in ':'
    excerpt = "  fcntl.ioctl(self.fd, self.LOOP_SET_FD, fd)\n  ValueError: file descriptor cannot be negative"
    assert cut_text("usages of the device that would often manifest in CI runs:\n" + excerpt) == excerpt
    # osbuild 85fe1f1e: a backticked error line; the prose after it stays out
    backticked = "`PermissionError: [Errno 13] Permission denied: '/run/osbuild'`"
    assert cut_text(f"Without this, the test fails with:\n{backticked}\nif not run as root.") == backticked
    # osbuild a3f86a07: podman's "Error: ..." in a fenced block (and the code block before it is no log)
    podman = (
        "is broken for nested containers like:\n```\nwith make_container(tmp_path, {}) as base_tag:\n```\n"
        "It errors with:\n```\nError: 5b947de461ee: image not known\n```"
    )
    assert cut_text(podman) == "Error: 5b947de461ee: image not known"
    # in plain prose "Error: ..." is a sentence, and prose that mentions an error is no log
    assert find_log(message("fix", "Error: the helper used the wrong name.")) is None
    assert find_log(message("fix", "The test failed:\nwith a KeyError raised by the helper.")) is None


def test_the_cut_keeps_a_log_whole_and_leaves_prose_out() -> None:
    # linux-nvme/nvme-cli 7d12fdf5ee: Python's caret line is no ~~~ fence
    nvme = (
        "    if self.host_behavior_data[4] & cross_namespace_copy:\n"
        "       ~~~~~~~~~~~~~~~~~~~~~~~~~~~^~~~~~~~~~~~~~~~~~~~~~\n"
        "TypeError: unsupported operand type(s) for &: 'str' and 'int'"
    )
    cut = find_log(message("tests: fix python TypeError errors", "This is to fix the errors below.", nvme))
    assert cut is not None and cut.text == nvme
    # SSSD/sssd-test-framework 6dbfe1ed17: a fenced block is output through and through
    fenced = (
        "Command #9 exited with return code 255:\n  Command:\n"
        "    samba-tool group add tgroup --gid-number 1\n  Error output:\n"
        "    ERROR: Both --gid-number and --nis-domain have to be set"
    )
    cut = find_log(message("samba: add nis-domain", "otherwise we get:", f"```\n{fenced}\n```"))
    assert cut is not None and cut.text == fenced
    # canonical/checkbox 1f19f8a552: the lead-in prose glued on top is not part of the log
    glued = "For the record the error was:\nImportError: module encoding not found"
    cut = find_log(message("pm_test: unset", glued))
    assert cut is not None and cut.text == "ImportError: module encoding not found"


def test_frames_wrapped_with_backslashes_and_quoted() -> None:
    # scylladb/scylla-cluster-tests b40c948868
    log = (
        '    >   File "scylla-cluster-tests/sdcm/cluster_k8s/__init__.py", \\\n'
        "    >       line 2130, in wait_for_nodes_up_and_normal\n"
        "    >     self.wait_for_pods_readiness(\\\n"
        "    >       pods_to_wait=len(nodes), total_pods=len(self.nodes))\n"
        "    > TypeError: object of type 'NoneType' has no len()"
    )
    (frame,) = log_frames(log)
    assert (frame.path, frame.line, frame.function) == (
        "scylla-cluster-tests/sdcm/cluster_k8s/__init__.py",
        2130,
        "wait_for_nodes_up_and_normal",
    )
    assert frame.code is not None and "".join(frame.code.split()) == (
        "self.wait_for_pods_readiness(pods_to_wait=len(nodes),total_pods=len(self.nodes))"
    )
    # scylla-cluster-tests dfab900a66: a header wrapped over two lines keeps the code printed under it
    wrapped = (
        'File "/home/ubuntu/sct/sdcm/remote/base.py",\n    line 231, in submit_line\n'
        '      self.log.debug("<%s>: " + line, self.hostname)\nMessage: x'
    )
    (frame,) = log_frames(wrapped)
    assert (frame.line, frame.code) == (231, 'self.log.debug("<%s>: " + line, self.hostname)')


def test_grade_names_a_log_from_another_version_and_checks_helpers_too() -> None:
    faulty = {"tests/test_cart.py": "\n" * 11 + "    assert cart.total() == expected\n"}
    # the frame's code is 24 lines away (scylla-cluster-tests b40c948868): another version, kept low for a
    # person to judge; a line past the end of the file: dropped
    moved = {"tests/test_cart.py": "\n" * 35 + "    assert cart.total() == expected\n"}
    g = grade(_facts(TRACEBACK, moved, changed_lines=2))
    said = "the log comes from another version: tests/test_cart.py:12 prints code that is 24 lines away"
    assert g.other_version is None and g.confidence == "low" and said + " in the faulty version" in g.reasons
    short = {"tests/test_cart.py": "x = 1\n"}
    g = grade(_facts(TRACEBACK, short, changed_lines=2))
    assert (
        g.other_version
        == "the log comes from another version: tests/test_cart.py:12 is past the end of the file (2 lines)"
    )
    # a helper the frames name (a context file) is checked like the fixed files
    log = TRACEBACK.replace(
        "AssertionError",
        '  File "/home/ci/src/tests/helpers.py", line 3, in total\n    return sum(x)\nAssertionError',
    )
    helper = {"tests/helpers.py": "def total(x):\n    return len(x)\n"}
    cut = find_log("fix\n\n" + log)
    assert cut is not None
    g = grade(FixFacts(cut, log_frames(cut.text), faulty, faulty_count=1, context_files=helper))
    # one frame matches and one does not: kept, low, with the reason
    assert g.other_version is None and g.confidence == "low"
    said = "the log comes from another version: "
    said += "tests/helpers.py:3 prints code that is not in the faulty version"
    assert said in g.reasons
    g = grade(FixFacts(cut, log_frames(cut.text), faulty, faulty_count=1))
    assert g.other_version is None and g.confidence == "high", g.reasons


def test_grade_flags_logs_that_were_only_logged_and_expected_failures() -> None:
    # openstack/rally-openstack 0c01e067d5
    msg = (
        "Use real credentials object at sahara tests\n\nFakeDict doesn't have all attributes of Credentials "
        "object and produces\nbad log message:\n\n"
        "   AttributeError: 'FakeDict' object has no attribute 'insecure'"
    )
    cut = find_log(msg)
    assert cut is not None
    faulty = {"tests/unit/test_sahara.py": "fake = FakeDict()\n"}
    g = grade(FixFacts(cut, (), faulty, faulty_count=1, changed_lines=4, message=msg))
    assert "the message says the error was only logged, not that the test failed" in g.reasons
    assert g.confidence == "low"
    # rally-openstack 4822b45230: a confusing error message is still the failure's
    failed = (
        "uploads fail.\n\nIt results in the following confusing error message:\n\nUnicodeDecodeError: 'utf-8'"
    )
    cut = find_log(failed)
    assert cut is not None
    g = grade(FixFacts(cut, (), faulty, faulty_count=1, changed_lines=4, message=failed))
    assert not any("only logged" in reason for reason in g.reasons)
    # stratis-storage/stratis-cli 0902bbe462
    assert fix_nature("+@unittest.expectedFailure\n") == "the fix only skips or expects the failure"
    conditional = "+    if os.getuid() != 0:\n+        pytest.skip('needs root')\n"
    assert fix_nature(conditional) == "the fix only skips or expects the failure"


def test_a_test_runner_at_the_top_of_the_repository_is_test_code() -> None:
    # scylladb's test.py runs its test suites
    assert is_test_path("test.py") and is_test_path("conftest.py") and is_test_path("test_x.py")
    assert not is_test_path("setup.py") and not is_test_path("src/test.py")


def test_frames_under_a_runner_prefix_print_their_code() -> None:
    # SSSD/sssd 0610618bbf: pytest's E before a SyntaxError's frame and the code under it
    log = (
        'E     File "/home/build/sssd/src/tests/intg/test_pam_responder.py", line 647\n'
        'E       assert err.find("pam_authenticate for user [auth_only\\user1]: " +\n'
        "E                      ^\n"
        "E   SyntaxError: (unicode error) 'unicodeescape' codec can't decode bytes: truncated \\uXXXX escape"
    )
    (frame,) = log_frames(log)
    assert frame.code == 'assert err.find("pam_authenticate for user [auth_only\\user1]: " +'
    # openstack/rally-openstack 2a36f6554e: a logger's prefix wrapped onto a line of its own is no code
    prefixed = (
        "2018-12-20 11:31:56.827 32486 ERROR rally.task.hook\n"
        '   File "/opt/stack/rally-openstack/rally_openstack/hook/fault_injection.py",\n'
        "   line 61, in get_cloud_config\n2018-12-20 11:31:56.827 32486 ERROR rally.task.hook\n"
        '   if deployment_config["type"] != "ExistingCloud":'
    )
    assert [(f.line, f.code) for f in log_frames(prefixed)] == [(61, None)]


def test_static_analysis_reports_are_no_failure_log() -> None:
    # SSSD/sssd cca54fd89a: a covscan report in a fenced block
    covscan = (
        "Fixes following warnings:\n```\nError: UNINIT (CWE-457):\n"
        'src/responder/kcm/kcmsrv_ccache.c:285: var_decl: Declaring variable "ret" without initializer.\n'
        " #  323|->     return ret;\n```"
    )
    assert cut_text(covscan) is None
    clang = "```\nError: CLANG_WARNING:\nsrc/p11.c:348:9: warning: Value stored to 'ret' is never read\n```"
    assert cut_text(clang) is None


def test_an_exception_name_alone_in_prose_is_no_log() -> None:
    # pulp/pulpcore 2fb461cb8b: the subject wrapped onto the body
    assert find_log("Removed OperationFailed exception; it's redundant with\nPulpExecutionException") is None
    assert cut_text("It failed with:", "    asyncio.exceptions.CancelledError") is not None


def test_prose_about_the_change_or_a_failure_example_does_not_hide_the_log() -> None:
    # avocado 27029ff43e: "One example of such a failure:" quotes the failure
    assert cut_text("One example of such as failure:", TRACEBACK) == TRACEBACK
    # nfv-tempest-plugin c46b5fd7f7: prose on the change glued on top of the traceback
    glued = "Now it is possible to select ports either with vnic type or with\nnetwork_id\n" + TRACEBACK
    assert cut_text(glued) == TRACEBACK
    # ManageIQ integration_tests 8dd5b824a3: a bare exception name inside a pasted log is part of it
    widget = "/ci/widgetastic/widget/base.py:1199: AttributeError\nAttributeError\nb'This is not an instance'"
    assert cut_text("Recent changes broke the dashboard tests:", widget) == widget


def test_a_log_in_two_fenced_blocks_is_cut_without_the_fences() -> None:
    # canonical/cloud-init cdb4644303
    first = "schema.py[WARNING]: network-config-v1 failed schema validation!"
    second = "# cloud-init schema --system\nError: Cloud config schema errors: 128 is not of type 'string'"
    assert (
        cut_text(f"A config drive produces this:\n```\n{first}\n```\n```\n{second}\n```")
        == f"{first}\n\n{second}"
    )


def test_an_error_named_in_inline_code_of_a_sentence_is_prose() -> None:
    # scylladb/scylla-cluster-tests 01734bb18f: a bullet's indented continuation names the error
    bullet = (
        "  * sct-runner discovery and tagging went through the emulated endpoint\n"
        "    too, so it found the emulated guests instead of the runner. Their\n"
        "    DescribeInstances output has no LaunchTime, so enumeration died with\n"
        "    `KeyError: 'LaunchTime'`; collect-logs never tagged logs_collected"
    )
    assert cut_text("Two EC2 calls reach minicloud:", bullet) is None


def test_a_log_under_a_runner_prefix_keeps_its_lines_after_the_error() -> None:
    # scylladb/scylla-cluster-tests 1396590179
    log = (
        "p:ERROR > sdcm.cluster.NodeSetupFailed: Encountered a bad command exit code!\n"
        "p:ERROR > Command: 'sudo systemctl stop iptables'\np:ERROR >\n"
        "p:ERROR > Failed to stop iptables.service: Unit iptables.service not loaded."
    )
    assert cut_text("On latest rolling upgrades the job failed with error:\n" + log) == log
    # scylla-cluster-tests bf71a6daa4: "Event message example:" shows what the change prints
    event = "2022-08-21 10:20:56.761: (ScyllaBenchEvent Severity.ERROR) period_type=end event_id=x"
    assert cut_text(f"Event message example:\n{event}") is None


def test_a_type_checkers_error_lines_are_no_failure_log() -> None:
    # scylladb 6ec63bd10c, d25ed0a151
    mypy = 'error: Need type annotation for "run_with_temporary_dir_pids"'
    assert (
        cut_text("`mypy` complains when globals have no types, e.g.:", "gives:", f"```\n{mypy}\n```") is None
    )
    # without a linter named, a tool's error in a fenced block is a log
    assert cut_text("The build fails with:", f"```\n{mypy}\n```") == mypy


def test_inline_code_wrapped_over_two_lines_is_an_error_line_and_a_pycon_session_is_a_demo() -> None:
    # scylla-cluster-tests 7ec1311f56: the backticked error wraps onto the next line
    wrapped = "`ValueError: Unsupported environment variables were used: -\n SCT_AWS_ACCOUNT_ID=400694452550`"
    assert cut_text(f"It fails SCT test execution:\n\n{wrapped}") == wrapped
    # SatelliteQE/robottelo 44103f08df: an interactive session without IPython's spaces
    session = (
        "In[1] attrs =\nentities.ActivationKey().create()\n\nFactoryError: Error encountered while POSTing"
    )
    assert cut_text(f"```pycon\n{session}\n```") is None
