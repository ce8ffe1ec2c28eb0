"""The lifecycle rules of the enhanced trace, each on a small script, each with its switch off too.

Every test states a property of Python test code and its log; the faithful variants never change.
"""

from __future__ import annotations

import textwrap

from app.analysis.context import REFINEMENTS, EstimateOptions
from app.analysis.model import Analysis, Script, State
from app.analysis.pipeline import analyze


def run(source: str, log: str, off: tuple[str, ...] = ()) -> Analysis:
    options = EstimateOptions().without(off)
    return analyze([Script("test_s.py", textwrap.dedent(source))], textwrap.dedent(log), options=options)


def line_of(a: Analysis, text: str) -> int:
    lines = a.program.files[0].lines
    return next(i for i, ln in enumerate(lines, start=1) if text in ln)


def state(a: Analysis, text: str, variant: str = "tplus") -> State:
    ev = {loc.line: e for loc, e in a.traces[variant].evidence.items()}
    return ev[line_of(a, text)].state


def kept(a: Analysis, text: str, variant: str = "tplus") -> bool:
    return any(loc.line == line_of(a, text) for loc in a.traces[variant].kept)


# -- the log's window --------------------------------------------------------------------------

WINDOW = """\
import logging
log = logging.getLogger(__name__)


def test_window():
    log.info("opening the session")
    prepare()
    log.info("sending the request")
    value = compute()
    if value:
        log.info("value accepted")
    assert value == 3


def prepare():
    log.info("prepared the device")


def compute():
    return 2
"""

EXCERPT = """\
INFO:tests:sending the request
Traceback (most recent call last):
  File "/ci/test_s.py", line 12, in test_window
    assert value == 3
AssertionError
"""


def test_messages_missing_before_the_first_matched_one_prove_nothing() -> None:
    a = run(WINDOW, EXCERPT)
    # the excerpt starts at "sending the request": what ran before could not be in it
    assert kept(a, 'log.info("opening the session")')
    assert kept(a, 'log.info("prepared the device")')  # a helper called only before the window
    # inside the window a missing message still counts: the branch did not run
    assert not kept(a, 'log.info("value accepted")')
    assert state(a, 'log.info("value accepted")') is State.NEXE


def test_log_window_switched_off_reads_every_missing_message_as_not_run() -> None:
    a = run(WINDOW, EXCERPT, off=("log-window",))
    assert state(a, 'log.info("opening the session")') is State.NEXE
    assert not kept(a, 'log.info("prepared the device")')
    on = run(WINDOW, EXCERPT)
    assert state(on, 'log.info("opening the session")') is not State.NEXE


def test_the_faithful_variants_ignore_the_window() -> None:
    on, off = run(WINDOW, EXCERPT), run(WINDOW, EXCERPT, off=tuple(REFINEMENTS))
    for name in on.traces:
        if name != "tplus":
            assert on.traces[name].kept == off.traces[name].kept, name
    assert not kept(on, 'log.info("opening the session")', "T1_dbt_nexe")


def test_a_statement_in_a_loop_with_the_first_match_stays_evidence() -> None:
    source = """\
    import logging
    log = logging.getLogger(__name__)


    def test_loop(items):
        for item in items:
            log.info("checking %s", item)
            log.info("checked")
    """
    a = run(source, "INFO:t:checked\nINFO:t:checked\n")
    # "checking" comes before "checked" in the source, but a loop runs it after the first match too
    assert not kept(a, 'log.info("checking %s", item)')


# -- after the failure -------------------------------------------------------------------------

FINALLY = """\
import logging
log = logging.getLogger(__name__)


def test_finally(session):
    log.info("start")
    try:
        session.send()
        log.info("sent")
    finally:
        session.close()
        log.info("closed")
    log.info("done")
"""

FINALLY_LOG = """\
INFO:t:start
Traceback (most recent call last):
  File "/ci/test_s.py", line 8, in test_finally
    session.send()
OSError: broken pipe
"""


def test_a_finally_block_around_the_failing_line_runs_after_it() -> None:
    a = run(FINALLY, FINALLY_LOG)
    assert kept(a, "finally:") and state(a, "finally:") is State.EXE
    assert kept(a, "session.close()")
    assert not kept(a, 'log.info("sent")')  # after the failing line inside the try: never ran
    assert not kept(a, 'log.info("done")')  # after the finally: the exception left the function


def test_finally_switched_off_is_cut_by_termination() -> None:
    a = run(FINALLY, FINALLY_LOG, off=("after-failure",))
    assert not kept(a, "session.close()")


TEARDOWN = """\
import logging
import unittest

log = logging.getLogger(__name__)


class T(unittest.TestCase):
    def setUp(self):
        log.info("setting up")
        self.addCleanup(self.release)

    def test_a(self):
        log.info("test body")
        self.assertEqual(1, 2)

    def tearDown(self):
        log.info("tearing down")

    def release(self):
        log.info("released")
"""

TEARDOWN_LOG = """\
INFO:t:setting up
INFO:t:test body
Traceback (most recent call last):
  File "/ci/test_s.py", line 14, in test_a
    self.assertEqual(1, 2)
AssertionError: 1 != 2
"""


def test_teardown_and_cleanups_run_after_the_failure_and_are_kept() -> None:
    a = run(TEARDOWN, TEARDOWN_LOG)
    # the log ends at the failure: their messages would come after it
    assert kept(a, 'log.info("tearing down")')
    assert kept(a, 'log.info("released")')
    assert state(a, 'log.info("tearing down")') is State.DBT


def test_teardown_switched_off_is_pruned_by_its_missing_message() -> None:
    a = run(TEARDOWN, TEARDOWN_LOG, off=("after-failure",))
    assert not kept(a, 'log.info("tearing down")')


def test_fixture_teardown_after_yield_is_kept() -> None:
    source = """\
    import logging
    import pytest

    log = logging.getLogger(__name__)


    @pytest.fixture
    def device():
        log.info("device up")
        yield 1
        log.info("device down")


    def test_b(device):
        log.info("using the device")
        assert device == 2
    """
    log = """\
    INFO:t:device up
    INFO:t:using the device
    Traceback (most recent call last):
      File "/ci/test_s.py", line 16, in test_b
        assert device == 2
    AssertionError
    """
    assert kept(run(source, log), 'log.info("device down")')
    assert not kept(run(source, log, off=("after-failure",)), 'log.info("device down")')


# -- a failing setUp ---------------------------------------------------------------------------

SETUP_LOG = """\
Traceback (most recent call last):
  File "/ci/test_s.py", line 9, in setUp
    log.info("setting up")
OSError: no device
"""


def test_a_failing_setup_means_the_test_body_never_ran() -> None:
    a = run(TEARDOWN, SETUP_LOG)
    assert not kept(a, 'log.info("test body")')
    ev = {loc.line: e for loc, e in a.traces["tplus"].evidence.items()}
    assert ev[line_of(a, 'log.info("test body")')].rule == "setup-failure"
    assert not kept(a, "self.addCleanup(self.release)")  # after the failing line of setUp


def test_setup_failure_switched_off_keeps_the_body() -> None:
    a = run(TEARDOWN, SETUP_LOG, off=("setup-failure",))
    assert kept(a, 'log.info("test body")')


def test_a_failing_fixture_skips_only_the_tests_that_use_it() -> None:
    source = """\
    import pytest


    @pytest.fixture
    def device():
        raise OSError("no device")
        yield 1


    def test_uses(device):
        assert device


    def test_other():
        assert True
    """
    log = """\
    Traceback (most recent call last):
      File "/ci/test_s.py", line 6, in device
        raise OSError("no device")
    OSError: no device
    """
    a = run(source, log)
    assert not kept(a, "assert device")
    assert kept(a, "assert True")


# -- three states ------------------------------------------------------------------------------

BRANCHES = """\
import logging
log = logging.getLogger(__name__)


def test_states(x):
    prepared = x + 1
    if prepared:
        x = 1
    else:
        x = 2
    log.info("after the branch")
    assert x == 3


def helper_never_called_in_log():
    return 1
"""

BRANCHES_LOG = """\
INFO:t:after the branch
Traceback (most recent call last):
  File "/ci/test_s.py", line 12, in test_states
    assert x == 3
AssertionError
"""


def test_executed_only_where_proven_else_doubtful() -> None:
    a = run(BRANCHES, BRANCHES_LOG)
    assert state(a, "prepared = x + 1") is State.EXE  # every walk to the log message passes it
    assert state(a, "x = 1") is State.DBT and state(a, "x = 2") is State.DBT  # one of the two ran
    assert kept(a, "x = 1") and kept(a, "x = 2")
    assert state(a, "return 1") is State.DBT  # kept whole, nothing known
    ev = {loc.line: e for loc, e in a.traces["tplus"].evidence.items()}
    assert ev[line_of(a, "x = 1")].detail.startswith("on a walk")


def test_proven_states_switched_off_says_executed_for_every_kept_line() -> None:
    a = run(BRANCHES, BRANCHES_LOG, off=("proven-states",))
    assert state(a, "x = 1") is State.EXE


def test_unknown_refinement_names_are_refused() -> None:
    try:
        EstimateOptions().without(["no-such-rule"])
    except ValueError as e:
        assert "no-such-rule" in str(e)
    else:
        raise AssertionError("an unknown name was accepted")


# -- what a finally around the failure and an import prove -------------------------------------

HELPER_FINALLY = """\
import logging
log = logging.getLogger(__name__)


def test_x():
    log.info("start")
    try:
        value = compute()
        log.info("value %s", value)
    finally:
        log.info("cleanup")
        cleanup()


def compute():
    raise ValueError("bad")


def cleanup():
    pass
"""

HELPER_LOG = """\
2024-01-01 10:00:00,000 INFO start
2024-01-01 10:00:00,001 INFO cleanup
Traceback (most recent call last):
  File "/ci/test_s.py", line 8, in test_x
    value = compute()
  File "/ci/test_s.py", line 16, in compute
    raise ValueError("bad")
ValueError: bad
"""


def test_a_message_of_the_finally_is_no_evidence_against_where_the_test_stopped() -> None:
    a = run(HELPER_FINALLY, HELPER_LOG)
    assert state(a, "try:") is State.EXE  # on every way to the failing line
    assert state(a, 'log.info("cleanup")') is State.EXE  # its message is in the log
    assert state(a, 'log.info("value %s"') is State.NEXE  # after the stop, outside the finally
    assert not any("termination ignored" in w for w in a.warnings)


def test_a_helper_called_from_a_finally_that_ran_is_not_removed() -> None:
    a = run(HELPER_FINALLY, HELPER_LOG)
    assert kept(a, "cleanup()")
    assert kept(a, "def cleanup():")
    assert state(a, "def cleanup():") is State.DBT  # called after the failure: not proven


def test_top_level_statements_of_a_file_whose_code_ran_are_executed() -> None:
    a = run(HELPER_FINALLY, HELPER_LOG)
    assert state(a, "import logging") is State.EXE  # the module was imported
    assert state(a, "log = logging.getLogger") is State.EXE
    guarded = HELPER_FINALLY + '\n\nif log.name == "other":\n    log.disabled = True\n'
    b = run(guarded, HELPER_LOG)
    assert state(b, "import logging") is State.EXE
    assert state(b, "log.disabled = True") is not State.EXE  # only under a condition: not proven


# -- a frame past a log statement the log lacks -----------------------------------------------------

QUOTED = """\
import logging
log = logging.getLogger(__name__)


def connect(host):
    log.info("connected to %s", host)


def shrink(params, on_k8s):
    count = params.get("count")
    log.info("Start shrink cluster by %s nodes", count)
    size = params.get("n_db_nodes")
    if on_k8s:
        size = params.get("k8s_pods", size)
    return count - size
"""


def test_a_frame_past_a_log_statement_the_quoted_log_lacks_stays_in_the_trace() -> None:
    # the log quotes only the failing line and the error: the log statement before it is missing,
    # yet the line the traceback stopped at ran
    log = (
        "INFO connected to db1\n"
        '    size = params.get("k8s_pods", size)\n'
        "TypeError: Config.get() takes 2 positional arguments but 3 were given\n"
    )
    a = run(QUOTED, log)
    assert kept(a, 'size = params.get("k8s_pods", size)')
    assert kept(a, "if on_k8s:")
    assert any("frame's line lies past" in w for w in a.warnings)
