"""Which missing messages are evidence: real statements and real logs through the real parsers."""

from __future__ import annotations

import textwrap

from app.analysis.coverage import call_level, log_coverage
from app.analysis.model import Script
from app.analysis.pipeline import analyze

CODE = textwrap.dedent(
    """\
    import logging
    log = logging.getLogger("suite")

    def test_run(dut):
        log.info("connecting to %s", dut)
        log.debug("raw banner: %s", dut.banner)
        print("dut ready")
        log.warning("retrying %s", dut)
    """
)


def coverage_of(log: str):
    a = analyze([Script("t.py", CODE)], log)
    return a, log_coverage(a.log_statements, a.match, a.log)


def line_of(a, sid: int) -> int:
    return a.program.statements[sid].start_line


def test_call_levels_come_from_the_method_name():
    assert call_level("logging.debug") == "DEBUG"
    assert call_level("self.log.warn") == "WARNING"
    assert call_level("LOG.exception") == "ERROR"
    assert call_level("print") is None and call_level("Log.log") is None


def test_a_log_without_any_of_the_scripts_messages_proves_nothing_missing():
    a, cov = coverage_of(
        'Traceback (most recent call last):\n  File "t.py", line 7, in test_run\nOSError: x\n'
    )
    assert sorted(line_of(a, s) for s in cov.silent) == [5, 6, 8]
    assert "trimmed log" in cov.reasons[0]


def test_levels_below_the_lowest_level_seen_are_silent():
    log = "".join(f"2024-01-01 10:00:0{i},000 INFO suite: connecting to dut{i}\n" for i in range(4))
    a, cov = coverage_of(log)
    assert sorted(line_of(a, s) for s in cov.silent) == [6]  # DEBUG cannot show in an INFO log
    assert 8 not in {line_of(a, s) for s in a.match.exe}  # the warning could have shown: still evidence


def test_a_log_that_shows_debug_keeps_every_absence_as_evidence():
    log = (
        "2024-01-01 10:00:00,000 DEBUG suite: raw banner: x\n" * 2
        + "2024-01-01 10:00:01,000 INFO suite: other\n"
    )
    _a, cov = coverage_of(log)
    assert cov.silent == frozenset()


GENERIC = textwrap.dedent(
    """\
    import logging
    log = logging.getLogger("suite")

    def report(error):
        log.debug("Error: {}".format(error))

    def test_window(settings):
        log.info("changing the window of %s", settings["name"])
        unit = settings["compaction"]["window_unit"]
        return unit
    """
)


def test_an_exception_line_a_generic_template_matches_is_no_sign_of_a_whole_log():
    # "Error: {}" matches inside "KeyError: ..." as Algorithm 1 reads it; the log is only the
    # exception line, quoted in a report: the other statements' missing messages prove nothing
    a = analyze([Script("t.py", GENERIC)], "KeyError: 'window_unit'\n")
    cov = log_coverage(a.log_statements, a.match, a.log)
    assert a.match.matches  # the generic template did match the exception line
    assert "trimmed log" in cov.reasons[0]
    assert any(line_of(a, s) == 8 for s in cov.silent)
    # a message of the scripts beside it shows how much of the log there is
    a = analyze([Script("t.py", GENERIC)], "INFO changing the window of ks.t1\nKeyError: 'window_unit'\n")
    cov = log_coverage(a.log_statements, a.match, a.log)
    assert not cov.reasons or "trimmed log" not in cov.reasons[0]
