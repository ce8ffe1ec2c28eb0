"""The one pass over a log: messages (prefixes stripped, continuation lines joined) and the error message.

Matching (Algorithm 1) needs the messages without their prefixes; the ranker needs the exception
text. Nothing here raises on a ``str``; odd input becomes a warning.
"""

from __future__ import annotations

import re

from app.analysis.logparse.formats import (
    _COMBINED,
    _ERROR_LEVELS,
    _FORMATS,
    KNOWN_FORMATS,
    _binary_share,
    _combined,
    _detect,
    _Prefix,
    _Prefixer,
    check_prefix_format,
    clean_text,
)
from app.analysis.logparse.tracebacks import (
    _CHAIN_LINES,
    _FRAME_START,
    _FRAME_TAIL,
    _GROUP_HEADER,
    _PYTEST_E,
    _TB_HEADER,
    _WEAK_ERROR_WORDS,
    _WORD,
    _dedent,
    _frame_match,
    _indent,
    _pytest_kind,
    _Traceback,
    _TracebackReader,
    _unwrap_exception_groups,
)
from app.analysis.model import LogMessage, ParsedLog

_FAILING = frozenset({"FAIL", "ERROR", "INTERRUPTED"})
_STATUS = r"(?P<status>PASS|FAIL|ERROR|SKIP|WARN|INTERRUPTED|CANCEL|STARTED)"
# avocado: (1/4) path.py:Class.test;variant: ERROR: reason (3.69 s)   and the bare (4/4) id
_RUNNER_STATUS = re.compile(
    rf"\(\d+/\d+\) \S+?(?:: {_STATUS}(?:: (?P<reason>.*?))?)?(?: \(\d+(?:\.\d+)? s\))?"
)
# avocado's older job log: ERROR 1-ebizzy.py:Ebizzy.test;variant -> TestSetupFail: reason
_RUNNER_ARROW = re.compile(rf"{_STATUS} \d+-\S+ ->(?: (?P<reason>.*))?")
# job summary and counters: RESULTS : PASS 0 | ERROR 1 ..., JOB ID : ..., CI's exit status line
_RUNNER_COUNTER = re.compile(
    r"(?:RESULTS|JOB (?:ID|LOG|HTML|TIME|STATUS)|TESTS TIME|TEST TIME)\s*: |"
    r"Process completed with exit code \d+\.?$"
)
_RUNNER_FIRST = frozenset("(RJTPFESWIC")
_RUNNER_MAX = 4000
# a prefixed message starting with one of these may be more than a message: the full checks run
_SLOW_FIRST = frozenset("(RJTPFESWIC_=->")  # and any whitespace
_FAST_PATH = True  # the short paths for ordinary lines; the tests compare them with the full checks
_FUNC_NAME = re.compile(r"[\w<>.\[\]-]{1,200}")


class _Parser(_TracebackReader):
    """One pass over the lines; state for the message being continued and the open pytest block."""

    def __init__(
        self,
        lines: list[str],
        prefixes: list[_Prefix | None],
        offset: int,
        groups: dict[int, int] | None = None,
    ) -> None:
        self.quiet = groups or {}  # lines of exception groups: never messages
        self.lines = lines
        self.prefixes = prefixes
        self.offset = offset
        self.prefixed = any(p is not None for p in prefixes)
        self.messages: list[LogMessage] = []
        self.tracebacks: list[_Traceback] = []
        self.warnings: list[str] = []
        self.summaries: list[tuple[int, str]] = []  # (log line, text) of FAILED/FAIL: lines
        self.open: tuple[int, int, list[str], str | None] | None = None
        self.pytest: _Traceback | None = None
        self.pytest_code: str | None = None
        self.pytest_func: str | None = None
        self.in_report = False
        self.last_e = -2  # index of the last E line read
        self.open_layered = False  # the open message had an application prefix inside a transport one
        self.open_sig = ""  # the prefix signature of the open message
        self.runner: list[tuple[int, str, str]] = []  # (log line, status, reason) of runner status lines

    # -- helpers ---------------------------------------------------------------------------

    def body(self, i: int) -> str:
        p = self.prefixes[i]
        return p.body if p is not None else self.lines[i]

    def lineno(self, i: int) -> int:
        return i + 1 + self.offset

    def flush(self) -> None:
        if self.open is not None:
            start, end, parts, level = self.open
            self.open = None
            self.emit(start, end, "\n".join(parts), level)

    def emit(self, start: int, end: int, text: str, level: str | None) -> None:
        text = text.strip()
        if text:
            self.messages.append(
                LogMessage(len(self.messages), self.lineno(start), self.lineno(end), text, level)
            )

    # -- main loop -------------------------------------------------------------------------

    def run(self) -> None:
        i, n = 0, len(self.lines)
        lines, prefixes = self.lines, self.prefixes
        messages, offset = self.messages, self.offset + 1
        new_message = LogMessage
        slow_first, quiet, prefixed = _SLOW_FIRST, self.quiet, self.prefixed
        fast = _FAST_PATH
        while i < n:
            prefix = prefixes[i]
            if not fast:
                pass
            elif prefix is not None and not quiet:
                # Most lines: a prefixed message whose text cannot start anything (no traceback,
                # report, runner or frame shape, no continuation indent): open it and go on.
                body = prefix[3]
                if (
                    body
                    and body[0] not in slow_first
                    and not body[0].isspace()
                    and body[-1] not in ":]"
                    and not prefix[5]
                    and ".py" not in body
                ):
                    self.in_report = False
                    opened = self.open
                    if opened is not None:
                        start, end, parts, level = opened
                        text = (parts[0] if len(parts) == 1 else "\n".join(parts)).strip()
                        if text:
                            messages.append(
                                new_message(len(messages), start + offset, end + offset, text, level)
                            )
                    self.open = (i, i, [body], prefix[1])
                    self.open_layered = prefix[4]
                    self.open_sig = prefix[2]
                    i += 1
                    continue
            elif prefix is None and not prefixed and not quiet and not self.in_report:
                # A log without prefixes: an ordinary line is one message, as the checks below
                # would decide (no traceback, report, runner or frame shape, no indent)
                body = lines[i]
                if (
                    body
                    and body[0] not in slow_first
                    and not body[0].isspace()
                    and body[-1] not in ":]"
                    and ".py" not in body
                ):
                    if self.open is not None:
                        self.flush()
                    messages.append(new_message(len(messages), i + offset, i + offset, body, None))
                    i += 1
                    continue
            body = lines[i] if prefix is None else prefix.body
            stripped = body.strip()
            if stripped.endswith(_TB_HEADER):
                self.flush()
                self.close_pytest()
                before = stripped[: -len(_TB_HEADER)].strip()
                if before:
                    self.emit(i, i, before, prefix.level if prefix else None)
                i = self.python_traceback(i)
                continue
            if stripped in _CHAIN_LINES or i in self.quiet:
                self.flush()
                i += 1
                continue
            if prefix is not None and self.in_report:
                self.in_report = False
            if stripped[:1] in _RUNNER_FIRST and (used := self.runner_line(i, stripped)):
                self.flush()
                i += used
                continue
            if stripped[:1] == "E" and prefix is None and self.collapsed_e(i, stripped):
                self.flush()
                self.open_pytest(i).exception.append(stripped[2:])
                self.last_e = i
                i += 1
                continue
            if (stripped[:1] == "F" or ".py" in stripped[:200]) and self.frame_without_header(i, stripped):
                self.flush()
                self.close_pytest()
                i = self.python_traceback(i, headerless=True)
                continue
            kind = _pytest_kind(stripped)
            if kind is not None or self.in_report:
                self.flush()
                i += max(1, self.pytest_line(i, stripped, kind))
                continue
            if (
                i == self.last_e + 1
                and prefix is None
                and body.startswith("    ")
                and self.pytest is not None
            ):
                self.pytest.exception.append(body[4:])  # line style indents the rest of the E text
                self.last_e = i
            elif (
                prefix is not None
                and self.open is not None
                and prefix.sig
                and prefix.sig == self.open_sig
                and body[:1].isspace()
                and stripped
                and any(c.isdigit() for c in prefix.sig)
            ):
                # one logging call printed several lines, each with the call's own prefix
                # (its logger and source line): the indented ones continue the message
                start, _, parts, level = self.open
                parts.append(body)
                self.open = (start, i, parts, level)
            elif prefix is not None and not (prefix.bare and self.open_layered and self.open is not None):
                self.flush()
                self.open = (i, i, [body], prefix.level)
                self.open_layered = prefix.layered
                self.open_sig = prefix.sig
            elif not stripped:
                self.flush()
            elif self.open is not None and self.prefixed:
                start, _, parts, level = self.open
                parts.append(body)
                self.open = (start, i, parts, level)
            else:
                self.flush()
                self.emit(i, i, body, None)
            i += 1
        self.flush()

    # -- runner output and pasted fragments ----------------------------------------------

    def runner_line(self, i: int, stripped: str) -> int:
        """Lines used by a test runner's status or counter line at i (0: not one).

        Runner lines say how the run ended, not what the script logged: never messages. A failing
        status keeps its reason (``(1/1) id: ERROR: reason (2.1 s)``), which names the failure
        when the log holds no traceback.
        """
        if len(stripped) > _RUNNER_MAX:
            return 0  # no runner writes such a line; the lazy patterns stay linear below this
        first = stripped[0]
        if first == "(":
            m = _RUNNER_STATUS.fullmatch(stripped)
        else:
            if first in "RJTP" and _RUNNER_COUNTER.match(stripped):
                return 1
            m = _RUNNER_ARROW.fullmatch(stripped) if " ->" in stripped else None
        if m is None:
            return 0
        status, reason = m.group("status"), (m.group("reason") or "").strip()
        used = 1
        if status and not reason and m.re is _RUNNER_ARROW and i + 1 < len(self.lines):
            nxt = self.lines[i + 1].strip()
            if self.prefixes[i + 1] is None and nxt:
                reason, used = nxt, 2  # the reason wrapped onto the next line
        if status in _FAILING:
            self.runner.append((self.lineno(i), status, reason))
        return used

    def collapsed_e(self, i: int, stripped: str) -> bool:
        """pytest's ``E   `` lines pasted with their spaces collapsed (``E text``), in a run of them."""
        if not (stripped == "E" or stripped.startswith("E ")) or _PYTEST_E.fullmatch(stripped):
            return False
        if self.last_e == i - 1:
            return True
        if i + 1 < len(self.lines):
            nxt = self.lines[i + 1].strip()
            return nxt == "E" or nxt.startswith("E ")
        return False

    def frame_without_header(self, i: int, stripped: str) -> bool:
        """A traceback frame outside any traceback: the log was cut above the header, or pasted so.

        A frame cut before its path ended (``name.py", line 3, in f``) is given its start back.
        """
        if len(stripped) > 2000:
            return False
        if _FRAME_START.match(stripped):
            m = _frame_match(stripped)
            return m is not None and _FUNC_NAME.fullmatch((m.group("func") or "").strip()) is not None
        m = _FRAME_TAIL.fullmatch(stripped)
        if m is None:
            return False
        body = self.body(i)
        fixed = f'{body[: _indent(body)]}File "{stripped}'
        prefix = self.prefixes[i]
        if prefix is None:
            self.lines[i] = fixed
        else:
            self.prefixes[i] = prefix._replace(body=fixed)
        return True

    def error_message(self) -> str:
        for tb in reversed(self.tracebacks):
            if tb.group is not None:
                members = [t for t in self.tracebacks if t.group == tb.group]
                text = "\n".join(line for t in members for line in t.exception)
            elif tb.kind == "python":
                text = "\n".join(tb.exception)
            else:
                text = "\n".join(_dedent(tb.exception)).strip() or tb.crash
            if text:
                if not tb.frames:
                    self.warnings.append(f"no traceback frames found; error message from log line {tb.start}")
                return text.strip()
            if tb.frames:
                break  # the last traceback is truncated: its exception is unknown
        return self.fallback_error()

    def fallback_error(self) -> str:
        """No usable traceback: the last ERROR message or FAILED summary, else an error-looking line."""
        candidates: list[tuple[int, str]] = list(self.summaries[-1:])
        failed = [(line, reason) for line, _status, reason in self.runner if reason]
        candidates.extend(failed[-1:])
        for msg in reversed(self.messages):
            if msg.level in _ERROR_LEVELS:
                candidates.append((msg.line, msg.text))
                break
        if candidates:
            line, text = max(candidates)
            self.warnings.append(f"no traceback in the log; error message from log line {line}")
            return text
        found = self.error_looking()
        if found is not None:
            line, text = found
            self.warnings.append(f"no traceback in the log; error message from log line {line}")
            return text
        if self.messages:
            last = self.messages[-1]
            self.warnings.append("no traceback or error line in the log; error message is its last line")
            return last.text
        self.warnings.append("no traceback or error line in the log")
        return ""

    def error_looking(self) -> tuple[int, str] | None:
        """The last message naming an exception (else saying error/failed), with what follows it."""
        weak: int | None = None
        for k in range(len(self.messages) - 1, -1, -1):
            text = self.messages[k].text
            if ("Error" in text or "Exception" in text) and any(
                w.endswith(("Error", "Exception")) for w in _WORD.findall(text)
            ):
                return self.messages[k].line, self.with_followers(k)
            if weak is None:
                lower = text.lower()
                if ("error" in lower or "fail" in lower) and any(
                    w in _WEAK_ERROR_WORDS for w in _WORD.findall(lower)
                ):
                    weak = k
        return None if weak is None else (self.messages[weak].line, self.with_followers(weak))

    def with_followers(self, k: int) -> str:
        """A message ending in ``:`` goes on in the next lines (autotest's ``CmdError:`` blocks)."""
        first = self.messages[k]
        parts = [first.text]
        if not first.text.endswith(":"):
            return first.text
        end = first.end_line
        for msg in self.messages[k + 1 : k + 11]:
            if msg.line != end + 1:
                break
            parts.append(msg.text)
            end = msg.end_line
        return "\n".join(parts)


def parse_log(text: str, *, prefix_format: str | None = None, max_lines: int | None = None) -> ParsedLog:
    """Messages, traceback frames and the error message of one failure log.

    ``prefix_format``: None or ``auto`` detects the prefix, a name from ``KNOWN_FORMATS`` forces
    one, ``plain`` strips nothing, anything else is a regex with a ``(?P<msg>...)`` group (and
    optionally ``level``). ``max_lines`` keeps the last lines of a longer log (where the failure
    is); line numbers stay those of the whole log. ValueError only for invalid options.
    """
    custom = check_prefix_format(prefix_format) if prefix_format is not None else None
    if max_lines is not None and max_lines < 1:
        raise ValueError(f"max_lines must be at least 1, not {max_lines}")
    warnings: list[str] = []
    if not isinstance(text, str):
        raise ValueError(f"log must be text, not {type(text).__name__}; decode bytes with decode_log")
    text = clean_text(text)
    if not text.strip():
        return ParsedLog((), (), "", ("the log is empty",), "unknown")
    if _binary_share(text) > 0.1:
        warnings.append("the log looks like binary data; it was read as text")

    lines = [ln.rstrip() for ln in text.split("\n")]
    if lines and not lines[-1]:
        lines.pop()
    offset = 0
    if max_lines is not None and len(lines) > max_lines:
        offset = len(lines) - max_lines
        warnings.append(f"the log has {len(lines)} lines; only the last {max_lines} were read")
        lines = lines[offset:]

    spec = (prefix_format or "auto").strip()
    if custom is not None:
        prefixer, name = _Prefixer(custom, custom=True), "custom"
    elif spec == "plain":
        prefixer, name = _Prefixer(None), "plain"
    elif spec in KNOWN_FORMATS:
        prefixer, name = _Prefixer(_combined((KNOWN_FORMATS.index(spec),))), spec
    else:
        detected = _detect(lines)
        prefixer = _Prefixer(_COMBINED[-1 if detected is None else detected])
        name = "unknown" if detected is None else _FORMATS[detected][0]

    prefixes = prefixer.all(lines)
    if custom is not None and not any(prefixes):
        warnings.append("the configured prefix_format matched no line of the log")
    groups = _unwrap_exception_groups(lines, prefixes) if _GROUP_HEADER in text else None
    parser = _Parser(lines, prefixes, offset, groups)
    parser.run()
    error = parser.error_message()
    warnings.extend(parser.warnings)
    return ParsedLog(
        messages=tuple(parser.messages),
        frames=parser.frames(),
        error_message=error,
        warnings=tuple(dict.fromkeys(warnings)),
        format=name,
    )
