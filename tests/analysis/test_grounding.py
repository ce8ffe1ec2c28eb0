"""missing_evidence: grounded by a matched log statement or a frame in the scripts, else what to try."""

from __future__ import annotations

from app.analysis.grounding import missing_evidence
from app.analysis.model import Script
from app.analysis.pipeline import analyze

LOGGING = (
    'import logging\n\n\ndef test_a():\n    logging.info("step one done")\n    x = 1\n    assert x == 2\n'
)
HELPER = (
    "class Log:\n    def log(self, m):\n        print(m)\n\n\n"
    'def test_a(log):\n    log.write("step one done")\n'
)
TRACEBACK = 'Traceback (most recent call last):\n  File "t.py", line 7, in test_a\nAssertionError\n'


def _gaps(script: str, log: str, **kwargs: object) -> tuple[str, ...]:
    return missing_evidence(analyze([Script("t.py", script)], log, **kwargs))


def test_a_matched_message_alone_grounds_the_analysis() -> None:
    assert _gaps(LOGGING, "INFO:root:step one done\n") == ()


def test_a_frame_in_the_scripts_alone_grounds_the_analysis() -> None:
    assert _gaps(LOGGING, TRACEBACK) == ()


def test_no_log_statement_recognised_points_at_log_function() -> None:
    (gap,) = _gaps(HELPER, "step one done\n")
    assert gap.startswith("no evidence: ")
    assert "--log-function" in gap and "no Python traceback" in gap


def test_messages_matching_nothing_point_at_both_options_and_count_what_was_seen() -> None:
    (gap,) = _gaps(LOGGING, "something else\nand more\n")
    assert "2 message(s)" in gap and "1 static log statement(s)" in gap
    assert "--log-function" in gap and "--log-format" in gap


def test_frames_in_other_files_are_named_as_such() -> None:
    other = 'Traceback (most recent call last):\n  File "/lib/other.py", line 3, in f\nValueError: x\n'
    (gap,) = _gaps(LOGGING, other)
    assert "1 frame(s), none in the submitted scripts" in gap
