"""Python tracebacks, chained and grouped exceptions, and pytest's failure reports.

The reader's methods run inside the one pass over the log (messages.py) and collect tracebacks
there; each line meets a constant number of anchored patterns.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from app.analysis.logparse.formats import _Prefix
from app.analysis.model import Frame

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
# a frame line cut before its path ended: `virsh_cpu_compare.py", line 63, in get_cpu_xml`
_FRAME_TAIL = re.compile(r'\s*(?P<path>[^"\s]+\.py)",\s*line\s*(?P<line>\d+),\s*in\s*(?P<func>\S+)')
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


class _TracebackReader:
    """Traceback and pytest-report reading for the parser; the parser holds the state."""

    lines: list[str]
    prefixes: list[_Prefix | None]
    tracebacks: list[_Traceback]
    warnings: list[str]
    summaries: list[tuple[int, str]]
    quiet: dict[int, int]
    pytest: _Traceback | None
    pytest_code: str | None
    pytest_func: str | None
    in_report: bool
    last_e: int

    def body(self, i: int) -> str:
        p = self.prefixes[i]
        return p.body if p is not None else self.lines[i]

    def lineno(self, i: int) -> int:
        raise NotImplementedError

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

    def python_traceback(self, i: int, *, headerless: bool = False) -> int:
        """Read the traceback whose header is line i; the index of the first line after it.

        ``headerless``: line i is already the first frame (a log cut above its header, or a
        reporter that pasted only the frames).
        """
        tb = _Traceback("python", self.lineno(i), group=self.quiet.get(i))
        self.tracebacks.append(tb)
        header_indent = _indent(self.body(i))
        if headerless:
            header_indent = max(0, header_indent - 2)
            if not tb.group:
                self.warnings.append(f"traceback without its header at log line {self.lineno(i)}")
        prefixed_style: bool | None = None  # do its frame lines carry the log prefix?
        frame_indent = header_indent
        have_code = False
        exc_sig: str | None = None
        in_exception = False
        j, n = (i if headerless else i + 1), len(self.lines)
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


_ECHO_SPAN = 60  # lines between a `>` code line and its location (a long statement, many E lines)


def echoed_source(locations: Sequence[int], n: int, body: Callable[[int], str]) -> set[int]:
    """Lines of source that pytest's long tracebacks echo above a ``>`` line: never log output.

    A frame of a long report prints its function's source indented by four spaces, marks the
    failing line with ``>``, then the ``E`` lines and the ``path.py:N:`` location. The source
    echoes the script's own ``print``/``logging`` calls, which would otherwise read as messages
    those calls logged. Read upwards from each location line (``locations``, 0-based, ascending,
    found by the raw scan), so a prefixed or cut report (no section title) is read the same.
    """
    echo: set[int] = set()
    floor = -1  # lines above it were read from an earlier location
    for j in locations:
        if j <= floor or j >= n:
            continue
        below: list[int] = []
        k = j - 1
        while k > floor and k >= j - _ECHO_SPAN:
            line = body(k)
            stripped = line.strip()
            if line.startswith(">") and _pytest_kind(stripped) == "code":
                break
            if line.startswith("    "):
                below.append(k)  # the rest of a statement that spans lines
            elif stripped and _pytest_kind(stripped) != "e":
                k = floor
                break
            k -= 1
        if k <= floor or k < j - _ECHO_SPAN:
            floor = j
            continue
        echo.update(below)
        up = k - 1
        while up > floor:
            line = body(up)
            if line.strip() and not line.startswith("    "):
                break
            if line.strip():
                echo.add(up)
            up -= 1
        floor = j
    return echo
