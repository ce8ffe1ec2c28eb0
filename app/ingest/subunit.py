"""subunit v2 streams, as stestr and tempest write them (``.stestr/N``, ``stestr last --subunit``).

Decoded with python-subunit into testtools' per-test dicts; a test's attachments (traceback,
stdout, stderr, pythonlogging) become its log, captured output first. A damaged packet is a
warning (python-subunit reports it as the pseudo test ``subunit.parser``); the others are read.
"""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from testtools import StreamToDict

from app.ingest.base import MAX_TESTS, IngestError, TestRun, first_line, split_params
from app.ingest.clean import shown, unreadable

FORMAT = "subunit"
SIGNATURE = 0xB3  # first byte of every subunit v2 packet
PARSER_ID = "subunit.parser"  # python-subunit's pseudo test for a packet it cannot decode
_STATUS = {"success": "pass", "fail": "fail", "skip": "skip", "xfail": "pass", "uxsuccess": "fail"}
_ORDER = ("pythonlogging", "stdout", "stderr", "traceback")
_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*)(?:Error|Exception|Failure|Exit|Interrupt)\b.*$")


def sniff(head: bytes) -> bool:
    return bool(head) and head[0] == SIGNATURE


def parse(data: bytes, name: str = "stream.subunit", warnings: list[str] | None = None) -> list[TestRun]:
    # python-subunit and testtools (asyncio, unittest.mock) cost ~100 ms to import: only when decoding
    from subunit import ByteStreamToStreamResult
    from testtools import StreamToDict

    tests: list[dict[str, Any]] = []
    result = StreamToDict(tests.append)
    result.startTestRun()
    if data[:5] in (b"time:", b"test:", b"tags:") or data[:9] == b"progress:":
        raise IngestError(
            f"{name}: a subunit v1 stream; convert it with subunit-1to2 or use `stestr last --subunit`"
        )
    try:
        ByteStreamToStreamResult(io.BytesIO(data), non_subunit_name="stdout").run(_Events(result))
    except Exception as exc:  # the decoder raises plain exceptions on corrupt packets
        raise IngestError(f"{name}: not a readable subunit v2 stream ({type(exc).__name__}: {exc})") from None
    finally:
        result.stopTestRun()
    problems: list[str] = []
    runs: list[TestRun] = []
    for n, test in enumerate(tests, 1):
        if not test.get("id") or test.get("status") in (None, "exists", "inprogress"):
            continue
        if test["id"] == PARSER_ID:  # the decoder reports a damaged packet as this pseudo test
            problems.append(f"{name}: damaged packet(s) skipped ({_parser_error(test)})")
            continue
        try:
            runs.append(_run(test))
        except Exception as exc:  # one odd test must not lose the others: say which and go on
            problems.append(unreadable(f"{name}: test #{n}", test.get("id"), exc))
    if not runs and data and not sniff(data[:1]):
        raise IngestError(f"{name}: not a subunit v2 stream")
    if not runs and problems:
        reason = problems[0].removeprefix(f"{name}: ")
        raise IngestError(f"{name}: not a readable subunit v2 stream ({reason})")
    if warnings is not None:
        warnings.extend(problems)
    if len(runs) > MAX_TESTS:
        raise IngestError(f"{name}: more than {MAX_TESTS} tests")
    return runs


def _attachment_text(content: Any) -> str | None:
    """A text attachment's text (bad bytes replaced, not lost), None for a binary one."""
    try:
        return content.as_text()
    except Exception:  # not UTF-8 as it claims, or not text at all
        pass
    try:
        if content.content_type.type != "text":
            return None
        return b"".join(content.iter_bytes()).decode("utf-8", "replace")
    except Exception:
        return None


def _parser_error(test: dict[str, Any]) -> str:
    """The decoder's reason ("Parser Error" attachment), short and safe to show."""
    detail = (test.get("details") or {}).get("Parser Error")
    try:
        text = detail.as_text() if detail is not None else ""
    except Exception:  # an attachment that is not text
        text = ""
    return shown(first_line(text, 200) or "unknown")[1:-1]


class _Events:
    """Forwards test events to the dict builder; the stream's non-subunit bytes are dropped."""

    def __init__(self, target: StreamToDict) -> None:
        self.target = target

    def status(self, test_id: str | None = None, **kwargs: Any) -> None:
        if test_id is None:
            return
        self.target.status(test_id=test_id, **kwargs)


def _run(test: dict[str, Any]) -> TestRun:
    test_id = str(test["id"])
    verdict = _STATUS.get(str(test.get("status")), "error")
    details = test.get("details") or {}
    parts: list[str] = []
    traceback = ""
    for key in sorted(details, key=lambda k: (_ORDER.index(k) if k in _ORDER else len(_ORDER), k)):
        text = _attachment_text(details[key])
        if text is None:  # a binary attachment
            continue
        if not text.strip():
            continue
        if key == "traceback":
            traceback = text
        parts.append(f"{key}:\n{text.rstrip()}")
    error = ""
    for line in reversed(traceback.splitlines()):
        if _EXCEPTION.match(line.strip()):
            error = line.strip()
            break
    timestamps = test.get("timestamps") or (None, None)
    duration = None
    if timestamps[0] is not None and timestamps[1] is not None:
        try:
            duration = (timestamps[1] - timestamps[0]).total_seconds()  # clean.py drops a negative one
        except (TypeError, OverflowError):  # one timestamp with a zone, one without
            duration = None
    _, params = split_params(test_id)
    return TestRun(
        test_id=test_id,
        verdict=verdict,
        log="\n".join(parts) if verdict != "pass" else "",
        error=error,
        duration_s=duration,
        suite="subunit",
        params=params,
    )
