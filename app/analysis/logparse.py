"""Failure log -> log messages (prefixes stripped), traceback frames and the error message.

Logs are what users paste: any logging prefix (detected from the log or configured), tracebacks
whose lines carry the prefix or not, frames wrapped by a terminal, pytest reports in every
``--tb`` style. Matching (Algorithm 1) needs the messages without their prefixes; the error
statements need every frame; the ranker needs the exception text.

Every pattern is anchored and has no nested quantifiers, and each line meets a constant number
of them, so parsing is linear in the log size whatever the input. Nothing here raises on a
``str``; odd input becomes a warning.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from app.analysis.model import Frame, LogMessage, ParsedLog

# --------------------------------------------------------------------------------------------
# Prefix formats
# --------------------------------------------------------------------------------------------

_LEVEL = (
    r"(?:TRACE|DEBUG|INFO|NOTICE|WARNING|WARNI|WARN|ERROR|ERR|CRITICAL|CRITI|CRIT|FATAL|SEVERE|EXCEPTION)"
)
_LEVEL_ANY_CASE = f"(?i:{_LEVEL[3:-1]})"
_PY_LEVEL = r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)"
_DATE = r"(?:\d{4}-\d\d-\d\d|\d{4}/\d\d/\d\d|\d\d/\d\d/\d{4})"
_ISO_DATE = r"\d{4}-\d\d-\d\d"
# Reporters redact times as 01:xx:xx; accept that where a time is expected.
_TIME = r"[\dxX]{2}:[\dxX]{2}:[\dxX]{2}(?:[.,][\dxX]+)?"
_ZONE = r"(?:Z|[+-]\d\d:?\d\d)?"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"

# (name, pattern). Groups: msg (required), level, sig (the prefix minus its timestamp: lines of
# one logging call share it). Order = preference when several formats fit equally well.
_FORMATS: tuple[tuple[str, str], ...] = (
    # 2017-09-16 16:38:59,012 download         L0066 INFO | msg   ([stdlog] and a logger name optional)
    (
        "avocado",
        rf"(?:\[stdlog\] )?{_DATE} {_TIME} +"
        rf"(?P<sig>(?:\S+ +)??\S+ +L\d+ +(?P<level>{_LEVEL}) *)\| ?(?P<msg>.*)",
    ),
    # avocado (nrunner) debug.log stream tags around what the test printed: [stdout] msg
    ("avocado-stream", r"\[(?:stdout|stderr|stdlog)\] ?(?P<msg>.*)"),
    # sonic-mgmt live log: 08:39:25 init._fixture_func_decorator L0073 ERROR | msg
    ("sonic", rf"(?:{_DATE} )?{_TIME} +(?P<sig>\S+ +(?:L\d+ +)?(?P<level>{_LEVEL}) *)\| ?(?P<msg>.*)"),
    # pytest log_cli_format "%(asctime)s [%(levelname)8s] %(message)s (%(filename)s:%(lineno)s)"
    ("pytest-live-bracket", rf"(?:{_DATE}[ T])?{_TIME} +\[ *(?P<level>{_LEVEL_ANY_CASE}) *\] (?P<msg>.*)"),
    # %(asctime)s - %(name)s - %(levelname)s - %(message)s   (name optional)
    ("asctime", rf"{_DATE}[ T]{_TIME} +- +(?P<sig>(?:\S+ +- +)?(?P<level>{_LEVEL})) +-(?: (?P<msg>.*)|$)"),
    # pytest captured/live log default: "%(levelname)-8s %(name)s:%(filename)s:%(lineno)d %(message)s"
    ("pytest-captured", rf"(?P<sig>(?P<level>{_LEVEL}) +[^\s:]+:[^\s:]+:\d+)(?: (?P<msg>.*))?"),
    # Python logging's default: LEVEL:name:msg
    ("python", rf"(?P<sig>(?P<level>{_PY_LEVEL}):[^\s:]+):(?P<msg>.*)"),
    ("bracket", rf"\[ *(?P<level>{_LEVEL_ANY_CASE}) *\]:? ?(?P<msg>.*)"),
    # Jan  2 03:04:05 host prog[123]: msg   (also with an RFC 3339 timestamp)
    (
        "syslog",
        rf"(?:{_MONTH} +\d{{1,2}} {_TIME}|{_ISO_DATE}T{_TIME}{_ZONE}) \S+ "
        rf"(?P<sig>[^\s:\[]+)(?:\[\d+\])?: ?(?P<msg>.*)",
    ),
    # pytest live log with a time-only date format: 10:00:00 INFO msg
    ("pytest-live", rf"(?:{_DATE}[ T])?{_TIME} +(?P<level>{_LEVEL}):?(?: +(?P<msg>.*))?"),
    # 2024-05-01T10:00:00.123Z [LEVEL] msg   (CI runners; Jenkins' timestamper brackets it)
    (
        "iso",
        rf"\[?{_ISO_DATE}[T ]{_TIME}{_ZONE}\]?(?:[ \t](?: *\[? *(?P<level>{_LEVEL}) *\]?:? +)?(?P<msg>.*)|$)",
    ),
)

KNOWN_FORMATS: tuple[str, ...] = tuple(name for name, _ in _FORMATS)
"""Names accepted by ``parse_log(prefix_format=...)`` besides a regex; ``plain`` strips nothing."""

_SINGLE = tuple(re.compile(pattern) for _, pattern in _FORMATS)


def _combined(order: Sequence[int]) -> re.Pattern[str]:
    """One alternation trying the formats in ``order``: a single C-level match per line."""
    alternatives = []
    for i in order:
        pattern = _FORMATS[i][1]
        for group in ("msg", "level", "sig"):
            pattern = pattern.replace(f"(?P<{group}>", f"(?P<{group}{i}>")
        alternatives.append(f"(?P<f{i}>{pattern})")
    return re.compile("|".join(alternatives))


# _COMBINED[i] prefers format i, then the others in their default order; the last is the default.
_ALL = tuple(range(len(_FORMATS)))
_COMBINED = (*(_combined((i, *(j for j in _ALL if j != i))) for i in _ALL), _combined(_ALL))
_LIVE_BRACKET = KNOWN_FORMATS.index("pytest-live-bracket")
_TRANSPORTS = frozenset({KNOWN_FORMATS.index("syslog"), KNOWN_FORMATS.index("iso")})
_INNER = _combined([i for i in _ALL if i not in _TRANSPORTS])

_LEVEL_ALIASES = {
    "WARN": "WARNING",
    "WARNI": "WARNING",
    "ERR": "ERROR",
    "CRIT": "CRITICAL",
    "CRITI": "CRITICAL",
}
_ERROR_LEVELS = frozenset({"ERROR", "CRITICAL", "FATAL", "SEVERE", "EXCEPTION"})
_LOCATION_TAIL = re.compile(r"[^\s()]+:\d+")


class _Prefix(NamedTuple):
    """What the prefix of one line said."""

    fmt: int  # index into _FORMATS, -1 for a configured regex
    level: str | None
    sig: str  # the prefix less its timestamp: lines of one logging call share it
    body: str  # the line with the prefix stripped
    layered: bool = False  # a transport prefix (syslog, CI timestamps) around an application one
    bare: bool = False  # a transport prefix around nothing recognisable: may continue a message


class _Prefixer:
    """Strips prefixes with one compiled pattern (None: strip nothing).

    Group lookups go by precomputed index and levels through a per-parse cache: this runs once
    per log line.
    """

    def __init__(self, pattern: re.Pattern[str] | None, *, custom: bool = False, inner: bool = True) -> None:
        self.pattern = pattern
        self.levels: dict[str, str] = {}
        # syslog and CI timestamps wrap whatever the program printed: strip its own prefix too
        self.inner = _Prefixer(_INNER, inner=False) if inner and pattern is not None and not custom else None
        # outer group index -> (format, msg group, level group, sig group); 0 = no such group
        self.table: dict[int, tuple[int, int, int, int]] = {}
        if pattern is None:
            return
        groups = pattern.groupindex
        if custom:
            self.table[-1] = (-1, groups["msg"], groups.get("level", 0), groups.get("sig", 0))
            return
        for i in _ALL:
            if f"f{i}" in groups:
                self.table[groups[f"f{i}"]] = (
                    i,
                    groups[f"msg{i}"],
                    groups.get(f"level{i}", 0),
                    groups.get(f"sig{i}", 0),
                )

    def __call__(self, line: str) -> _Prefix | None:
        if self.pattern is None:
            return None
        m = self.pattern.match(line)
        if m is None:
            return None
        fmt, msg_group, level_group, sig_group = self.table.get(m.lastindex or 0) or self.table[-1]
        msg = m.group(msg_group)
        if msg is None:
            if fmt < 0:
                return None
            msg = ""
        raw_level = m.group(level_group) if level_group else None
        level = self.level(raw_level) if raw_level else None
        sig = (m.group(sig_group) if sig_group else None) or raw_level or ""
        if fmt in _TRANSPORTS:
            inner = self.inner(msg) if self.inner is not None else None
            if inner is not None:
                return _Prefix(inner.fmt, inner.level, f"{sig} {inner.sig}", inner.body, True)
            return _Prefix(fmt, level, sig, msg.rstrip(), bare=level is None)
        if fmt == _LIVE_BRACKET:
            msg = _strip_location(msg)
        return _Prefix(fmt, level, sig, msg.rstrip())

    def level(self, raw: str) -> str:
        level = self.levels.get(raw)
        if level is None:
            level = self.levels[raw] = _level(raw)
        return level


def _level(raw: str) -> str:
    up = raw.upper()
    return _LEVEL_ALIASES.get(up, up)


def _strip_location(msg: str) -> str:
    """Drop the ``(file.py:12)`` pytest puts after the message in its bracket live-log format."""
    rest = msg.rstrip()
    cut = rest.rfind(" (")
    if rest.endswith(")") and cut >= 0 and _LOCATION_TAIL.fullmatch(rest, cut + 2, len(rest) - 1):
        return rest[:cut]
    return msg


def check_prefix_format(spec: str) -> re.Pattern[str] | None:
    """Validate a configured prefix format; the compiled regex, or None for a known name.

    Raises ValueError with a one-line reason, so shells can reject bad settings up front.
    """
    name = spec.strip()
    if name in KNOWN_FORMATS or name in {"plain", "auto"}:
        return None
    if not name:
        raise ValueError("prefix_format is empty; give a format name or a regex with a (?P<msg>...) group")
    if "(?P<msg>" not in spec:
        raise ValueError(
            f"unknown prefix_format {spec!r}: use one of {', '.join((*KNOWN_FORMATS, 'plain'))} "
            "or a regex with a named group (?P<msg>...)"
        )
    try:
        pattern = re.compile(spec)
    except (re.error, RecursionError, OverflowError) as e:
        raise ValueError(f"prefix_format is not a valid regex: {e}") from None
    if "msg" not in pattern.groupindex:
        raise ValueError("prefix_format regex needs a named group (?P<msg>...)")
    if _nested_quantifier(spec):
        raise ValueError(
            "prefix_format regex repeats a group that itself repeats (like (a+)+), which can take "
            "exponential time on some lines; rewrite it without the nesting"
        )
    return pattern


def _nested_quantifier(pattern: str) -> bool:
    """True when an unbounded quantifier applies to a group holding one (catastrophic backtracking)."""
    stack = [False]
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i += 1
            if i < n and pattern[i] == "^":
                i += 1
            if i < n and pattern[i] == "]":
                i += 1
            while i < n and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
            i += 1
            continue
        if c == "(":
            stack.append(False)
        elif c == ")" and len(stack) > 1:
            inner = stack.pop()
            repeated = _unbounded_at(pattern, i + 1)
            if inner and repeated:
                return True
            stack[-1] = stack[-1] or inner or repeated
        elif c in "*+" or (c == "{" and _unbounded_at(pattern, i)):
            stack[-1] = True
        i += 1
    return False


_OPEN_REPEAT = re.compile(r"\{\d*,\}")


def _unbounded_at(pattern: str, i: int) -> bool:
    if i >= len(pattern):
        return False
    return pattern[i] in "*+" or bool(_OPEN_REPEAT.match(pattern, i))


def _detect(lines: Sequence[str]) -> int | None:
    """The known format most sample lines carry (ties: the earlier, more specific one)."""
    candidates = [ln for ln in lines if ln and not ln.isspace()]
    step = max(1, len(candidates) // 1000)
    sample = candidates[::step][:1000]
    best, best_score = None, 0
    for i, pattern in enumerate(_SINGLE):
        score = sum(1 for ln in sample if pattern.match(ln))
        if score > best_score:
            best, best_score = i, score
    return best


# --------------------------------------------------------------------------------------------
# Tracebacks and pytest reports
# --------------------------------------------------------------------------------------------

_TB_HEADER = "Traceback (most recent call last):"
_CHAIN_LINES = frozenset(
    {
        "During handling of the above exception, another exception occurred:",
        "The above exception was the direct cause of the following exception:",
    }
)
_FRAME_QUOTED = re.compile(r'\s*File "(?P<path>[^"]+)",\s*line\s*(?P<line>\d+)(?:,\s*in\s*(?P<func>.*))?')
_FRAME_BARE = re.compile(r"\s*File (?P<path>[^\s\",][^,]*),\s*line\s*(?P<line>\d+)(?:,\s*in\s*(?P<func>.*))?")
_FRAME_START = re.compile(r"\s*File ")
_EXC_NAME = re.compile(r"[A-Za-z_][\w.]*")
# pytest: location lines (long, short and line styles), E lines, the `>` source marker.
_PYTEST_LOC = re.compile(r"(?P<path>\S+?\.py):(?P<line>\d+):(?: (?P<rest>.*))?")
_PYTEST_E = re.compile(r"\s{0,2}E(?: {3}(?P<text>.*))?")
_PYTEST_CODE = re.compile(r"\s{0,2}> {3}(?P<code>.*)")
_DEF = re.compile(r"\s*(?:async\s+)?def\s+(?P<name>\w+)")
_UNITTEST_SUMMARY = re.compile(r"(?:FAIL|ERROR): \w+ \([\w.]+\)")
_PYTEST_BANNER_WORDS = re.compile(
    r"FAILURES|ERRORS|short test summary|test session starts|warnings summary|"
    r"\d+ (?:failed|passed|errors?|skipped|xfailed|xpassed|deselected)|no tests ran"
)
_WORD = re.compile(r"\w+")
_WEAK_ERROR_WORDS = frozenset({"error", "errors", "failed", "fail", "failure", "failures"})


@dataclass
class _Traceback:
    """One traceback while it is read; frames become ``Frame`` records at the end."""

    kind: str  # "python" | "pytest"
    start: int  # log line of its first line
    frames: list[tuple[str, int, str | None, str | None, int]] = field(default_factory=list)
    exception: list[str] = field(default_factory=list)  # Python: exception line(s); pytest: its E lines
    crash: str = ""  # pytest: what the terminal location line said (``AssertionError``)
    group: int | None = None  # first line of the exception group it is part of


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _is_caret(stripped: str) -> bool:
    return bool(stripped) and not stripped.strip("~^")


def _looks_like_exception(stripped: str) -> bool:
    """``ValueError: x`` or ``KeyboardInterrupt``, not ``return f()`` nor a bare ``raise``."""
    m = _EXC_NAME.match(stripped)
    if m is None:
        return False
    end = m.end()
    if end < len(stripped) and stripped[end] != ":":
        return False
    return not keyword.iskeyword(m.group().split(".")[0])


def _frame_match(text: str) -> re.Match[str] | None:
    return _FRAME_QUOTED.fullmatch(text) or _FRAME_BARE.fullmatch(text)


def _pytest_title(stripped: str) -> bool:
    """``____ test_name[param] ____`` (a failure section's header in pytest's report)."""
    left, _, rest = stripped.partition(" ")
    title, _, right = rest.rpartition(" ")
    if len(left) < 2 or len(right) < 2 or left.strip("_") or right.strip("_") or not title.strip():
        return False  # not `__init__`, nor any line that merely starts with underscores
    title = title.strip()
    head = title.split("[", 1)[0]
    return " " not in head or title.startswith(("ERROR at ", "ERROR collecting ", "summary"))


def _pytest_separator(stripped: str) -> bool:
    return stripped.startswith("_ _") and not stripped.strip("_ ")


def _pytest_progress(stripped: str) -> bool:
    """``test_x.py::test_a PASSED   [ 50%]``, ``test_x.py::test_a`` and friends."""
    if ".py::" in stripped.split(" ", 1)[0]:
        return True
    if not stripped.endswith("%]"):
        return False
    cut = stripped.rfind("[")
    return cut >= 0 and stripped[cut + 1 : -2].strip().isdigit()


def _summary(stripped: str) -> str | None:
    """The failure text of ``FAILED path::test - msg`` (or unittest's ``FAIL: test (Case)``)."""
    if stripped.startswith(("FAILED ", "ERROR ")):
        rest = stripped.split(" ", 1)[1]
        node, _, msg = rest.partition(" - ")
        head = node.split("::", 1)[0]
        if (("::" in node) or node.endswith(".py")) and head and not any(ch.isspace() for ch in head):
            return msg.strip() or stripped
        return None
    if _UNITTEST_SUMMARY.match(stripped):
        return stripped
    return None


def _location(stripped: str) -> tuple[str, int, str | None, str | None] | None:
    """A pytest ``path.py:N:`` line: (path, line, function, crash text) or None.

    Long style ends a frame with nothing (or the exception name on the last one), short style
    with ``in func``, line style with ``Exc: msg``. Python warnings (``x.py:3: DeprecationWarning:
    ...``) share the shape and are not frames.
    """
    if ".py:" not in stripped:
        return None
    m = _PYTEST_LOC.fullmatch(stripped)
    if m is None:
        return None
    line = int(m.group("line"))
    if line < 1:
        return None
    rest = (m.group("rest") or "").strip()
    path = m.group("path")
    if not rest:
        return path, line, None, None
    if rest.startswith("in ") and " " not in rest[3:].strip():
        return path, line, rest[3:].strip(), None
    if rest.startswith("assert "):
        return path, line, None, rest
    name = rest.split(":", 1)[0]
    if _EXC_NAME.fullmatch(name) and not name.endswith("Warning") and not keyword.iskeyword(name):
        return path, line, None, rest
    return None


_PYTEST_FIRST = frozenset("_=-FE>")


def _pytest_kind(stripped: str) -> str | None:
    """Which pytest report line this is (None: not one); decides nothing, changes nothing."""
    if not stripped:
        return None
    first = stripped[0]
    if first not in _PYTEST_FIRST and stripped[-1] != "]" and ".py:" not in stripped:
        return None
    if first == "_":
        if _pytest_separator(stripped):
            return "separator"
        return "title" if _pytest_title(stripped) else None
    if first == "=" and stripped.startswith("===") and stripped.endswith("==="):
        return "banner" if _PYTEST_BANNER_WORDS.search(stripped.strip("= ")) else None
    if first == "-" and stripped.startswith("---") and stripped.endswith("---"):
        inner = stripped.strip("- ")
        return "section" if inner.startswith(("Captured ", "live log")) else None
    if _pytest_progress(stripped):
        return "progress"
    if first in "FE" and _summary(stripped) is not None:
        return "summary"
    if first == "E" and _PYTEST_E.fullmatch(stripped):
        return "e"
    if first == ">" and _PYTEST_CODE.fullmatch(stripped):
        return "code"
    if _location(stripped) is not None:
        return "location"
    return None


def _dedent(lines: Sequence[str]) -> list[str]:
    widths = [_indent(ln) for ln in lines if ln.strip()]
    cut = min(widths, default=0)
    return [ln[cut:].rstrip() for ln in lines]


_GROUP_HEADER = "+ Exception Group Traceback (most recent call last):"


def _unwrap_exception_groups(lines: list[str], prefixes: list[_Prefix | None]) -> dict[int, int]:
    """Rewrite ExceptionGroup reports (``| ``-bordered) into plain tracebacks, in place.

    Returns line index -> the group's first line for each of their lines. They are never log
    messages (sub-exceptions printed without a traceback would otherwise read as ones), and the
    error message gathers the exceptions of the whole group.
    """
    quiet: dict[int, int] = {}
    i, n = 0, len(lines)
    while i < n:
        prefix = prefixes[i]
        if not (lines[i] if prefix is None else prefix.body).lstrip().startswith(_GROUP_HEADER):
            i += 1
            continue
        start = i
        while i < n:
            prefix = prefixes[i]
            content = (lines[i] if prefix is None else prefix.body).lstrip()
            if not content.startswith(("|", "+")):
                break
            for _ in range(8):  # nested groups add a border per level
                if content.startswith(_GROUP_HEADER):
                    content = _TB_HEADER
                elif content.startswith("|"):
                    content = content[2:] if content.startswith("| ") else content[1:]
                    if content.lstrip().startswith(("|", "+")):
                        content = content.lstrip()
                        continue
                elif content.startswith("+"):
                    content = ""  # the +---- n ---- separators between sub-exceptions
                break
            if prefix is None:
                lines[i] = content
            else:
                prefixes[i] = prefix._replace(body=content)
            quiet[i] = start
            i += 1
    return quiet


# --------------------------------------------------------------------------------------------
# The parser
# --------------------------------------------------------------------------------------------


class _Parser:
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
        while i < n:
            prefix = prefixes[i]
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
            elif prefix is not None and not (prefix.bare and self.open_layered and self.open is not None):
                self.flush()
                self.open = (i, i, [body], prefix.level)
                self.open_layered = prefix.layered
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

    # -- Python tracebacks -----------------------------------------------------------------

    def frame_at(self, i: int) -> tuple[re.Match[str] | None, int]:
        """The frame starting at line i, joining lines a terminal wrapped; (match, lines used).

        A wrap can cut the path, the line number or the ``in`` (not the function name, which
        cannot be told from a code line printed without indentation). A frame that parses but
        names no function may still be cut after its line number: the join wins when it names one.
        """
        body = self.body(i)
        if not _FRAME_START.match(body):
            return None, 1
        first = _frame_match(body)
        if first is not None and (first.group("func") or "").strip():
            return first, 1
        joined = body
        for extra in (1, 2):
            j = i + extra
            if j >= len(self.lines) or self.prefixes[j] is not None or not self.lines[j].strip():
                break
            joined += self.lines[j]
            m = _frame_match(joined)
            if m is not None and (first is None or (m.group("func") or "").strip()):
                return m, extra + 1
        return first, 1

    def python_traceback(self, i: int) -> int:
        """Read the traceback whose header is line i; the index of the first line after it."""
        tb = _Traceback("python", self.lineno(i), group=self.quiet.get(i))
        self.tracebacks.append(tb)
        header_indent = _indent(self.body(i))
        prefixed_style: bool | None = None  # do its frame lines carry the log prefix?
        frame_indent = header_indent
        have_code = False
        exc_sig: str | None = None
        in_exception = False
        j, n = i + 1, len(self.lines)
        while j < n:
            prefix = self.prefixes[j]
            body = self.body(j)
            stripped = body.strip()
            if stripped.endswith(_TB_HEADER) or stripped in _CHAIN_LINES:
                break
            if in_exception:
                if not stripped or _FRAME_START.match(body) or _pytest_kind(stripped):
                    break
                if prefix is not None:
                    if not prefixed_style or prefix.sig != exc_sig:
                        break
                    tb.exception.append(stripped)
                elif prefixed_style:
                    tb.exception[-1] += body.rstrip()  # a terminal wrapped the exception line
                else:
                    tb.exception.append(stripped)
                j += 1
                continue
            if not stripped:
                if j + 1 < n and _FRAME_START.match(self.body(j + 1)):
                    j += 1
                    continue
                break
            if prefix is not None and prefixed_style is False:
                break  # the log went on before the traceback ended
            match, used = self.frame_at(j)
            if match is None and _FRAME_START.match(body):
                j += 1  # a frame line cut short: nothing to learn from it
                continue
            if match is not None and int(match.group("line")) < 1:
                j += used
                continue
            if match is not None:
                if prefixed_style is None:
                    prefixed_style = prefix is not None
                frame_indent = _indent(body)
                have_code = False
                func = (match.group("func") or "").strip() or None
                tb.frames.append(
                    (match.group("path").strip(), int(match.group("line")), func, None, self.lineno(j))
                )
                j += used
                continue
            if _is_caret(stripped) or stripped == "..." or stripped.startswith("[Previous line repeated"):
                j += 1
                continue
            if tb.frames:
                indent = _indent(body)
                flat = frame_indent <= header_indent  # frames printed without indentation
                if not have_code and (
                    indent > frame_indent or (flat and not _looks_like_exception(stripped))
                ):
                    path, line, func, _, log_line = tb.frames[-1]
                    tb.frames[-1] = (path, line, func, stripped, log_line)
                    have_code = True
                    j += 1
                    continue
                if indent > frame_indent or (prefix is None and prefixed_style):
                    j += 1  # more source lines of the statement, or a wrapped code line
                    continue
            elif not _looks_like_exception(stripped):
                break
            tb.exception.append(stripped)
            exc_sig = prefix.sig if prefix is not None else None
            if prefixed_style is None:
                prefixed_style = prefix is not None
            in_exception = True
            j += 1
        if not tb.exception:
            what = "no frames" if not tb.frames else "no exception line"
            self.warnings.append(f"truncated traceback at log line {tb.start}: {what}")
        return j

    # -- pytest reports --------------------------------------------------------------------

    def open_pytest(self, i: int) -> _Traceback:
        if self.pytest is None:
            self.pytest = _Traceback("pytest", self.lineno(i))
            self.tracebacks.append(self.pytest)
        return self.pytest

    def close_pytest(self) -> None:
        self.pytest = None
        self.pytest_code = None
        self.pytest_func = None

    def pytest_line(self, i: int, stripped: str, kind: str | None) -> int:
        """Consume a pytest report line at i (and a short-style code line after it); lines used."""
        if kind is None:
            if self.in_report:
                m = _DEF.match(stripped)
                if m is not None:
                    self.pytest_func = m.group("name")
            return 1
        if kind == "separator":
            self.pytest_code = None
            self.pytest_func = None
        elif kind == "title":
            self.close_pytest()
            self.in_report = True
        elif kind == "banner":
            self.close_pytest()
            inner = stripped.strip("= ")
            self.in_report = inner in {"FAILURES", "ERRORS"}
        elif kind == "section":
            self.in_report = False
        elif kind == "summary":
            self.summaries.append((self.lineno(i), _summary(stripped) or stripped))
        elif kind == "e":
            m = _PYTEST_E.fullmatch(stripped)
            text = (m.group("text") if m else None) or ""
            if text.strip() or self.pytest is not None:  # a lone `E` is unittest's progress mark
                self.open_pytest(i).exception.append(text)
                self.last_e = i
        elif kind == "code":
            m = _PYTEST_CODE.fullmatch(stripped)
            self.open_pytest(i)
            self.pytest_code = m.group("code").strip() if m else None
        elif kind == "location":
            return self.pytest_location(i, stripped)
        return 1

    def pytest_location(self, i: int, stripped: str) -> int:
        loc = _location(stripped)
        if loc is None:  # pytest_kind said it was one
            return 1
        path, line, func, crash = loc
        tb = self.open_pytest(i)
        code, used = self.pytest_code, 1
        if func is not None and i + 1 < len(self.lines):
            nxt = self.body(i + 1)
            if nxt.strip() and _indent(nxt) >= _indent(self.body(i)) + 2 and not _pytest_kind(nxt.strip()):
                code, used = nxt.strip(), 2  # short style prints the line under its location
        tb.frames.append((path, line, func or self.pytest_func, code, self.lineno(i)))
        self.pytest_code = None
        self.pytest_func = None
        if crash is not None:
            tb.crash = crash
            self.close_pytest()
        return used

    # -- results ---------------------------------------------------------------------------

    def frames(self) -> tuple[Frame, ...]:
        out: list[Frame] = []
        index = 0
        for tb in self.tracebacks:
            if not tb.frames:
                continue
            for path, line, func, code, log_line in tb.frames:
                out.append(Frame(path, line, func, code, log_line, index))
            index += 1
        return tuple(out)

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


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_BINARY_SAMPLE = 65536
_CONTROL = frozenset(chr(c) for c in (*range(32), *range(0x7F, 0xA0)) if chr(c) not in "\t\n\r\f\v\x1b")


def _binary_share(text: str, *, replaced: int | None = None) -> float:
    """Share of control characters (and U+FFFD, unless ``replaced`` says how many decoding made)."""
    sample = text[:_BINARY_SAMPLE]
    if not sample:
        return 0.0
    odd = sum(1 for ch in sample if ch in _CONTROL)
    odd += sample.count("\ufffd") if replaced is None else min(replaced, len(sample))
    return odd / len(sample)


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
    if "\x00" in text:
        text = text.replace("\x00", "")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
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

    prefixes = [prefixer(ln) for ln in lines]
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


def decode_log(data: bytes) -> tuple[str, list[str]]:
    """Bytes from a file or upload -> text safe for ``parse_log``, with warnings.

    Invalid UTF-8 becomes U+FFFD rather than an error; NULs are dropped; a UTF-16 byte-order mark
    (logs redirected by PowerShell) is honoured.
    """
    warnings: list[str] = []
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="replace")
    else:
        text = data.decode("utf-8-sig", errors="replace")
        bad = text.count("\ufffd") - data.count(b"\xef\xbf\xbd")
        if bad > 0:
            warnings.append(f"the log is not valid UTF-8: {bad} undecodable byte sequence(s) replaced")
    nuls = text.count("\x00")
    if nuls:
        text = text.replace("\x00", "")
    replaced = max(0, text.count("\ufffd") - data.count(b"\xef\xbf\xbd"))
    if nuls > 0 or _binary_share(text, replaced=replaced) > 0.1:
        warnings.append("the log looks like binary data; it was read as text")
    return text, warnings


def match_script_path(printed_path: str, script_paths: Sequence[str]) -> str | None:
    """The submitted script a traceback path refers to, by the longest common path suffix.

    Whole components only (``/x/test_a.py`` never matches ``best_a.py``), at least the file name;
    ``./`` and backslashes are ignored. None when nothing matches or two scripts tie.
    """
    target = _components(printed_path)
    if not target:
        return None
    best_len, best = 0, {}
    for path in script_paths:
        comps = _components(path)
        common = 0
        for a, b in zip(reversed(target), reversed(comps), strict=False):
            if a != b:
                break
            common += 1
        if common == 0:
            continue
        if common > best_len:
            best_len, best = common, {}
        if common == best_len:
            best.setdefault(tuple(comps), path)
    return next(iter(best.values())) if len(best) == 1 else None


def _components(path: str) -> list[str]:
    cleaned = path.strip().strip("\"'").replace("\\", "/")
    return [c for c in cleaned.split("/") if c and c != "."]
