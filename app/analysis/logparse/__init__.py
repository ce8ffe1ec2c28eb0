"""Failure log -> log messages (prefixes stripped), traceback frames and the error message.

Split by job: ``formats`` (prefix formats, detection, text clean-up), ``messages`` (the pass over
the log and the error message), ``tracebacks`` (Python tracebacks and pytest reports), ``frames``
(frames against the submitted scripts). This module re-exports the public names.
"""

from app.analysis.logparse.formats import KNOWN_FORMATS, check_prefix_format, decode_log
from app.analysis.logparse.frames import folder_conflict, match_script_path, realign, script_frames
from app.analysis.logparse.messages import LogMessages, parse_log

__all__ = [
    "KNOWN_FORMATS",
    "LogMessages",
    "check_prefix_format",
    "decode_log",
    "folder_conflict",
    "match_script_path",
    "parse_log",
    "realign",
    "script_frames",
]
