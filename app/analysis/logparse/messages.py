"""The one pass over a log: messages (prefixes stripped, continuation lines joined) and the error message.

Matching (Algorithm 1) needs the messages without their prefixes; the ranker needs the exception
text. Nothing here raises on a ``str``; odd input becomes a warning.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import accumulate, compress, islice, repeat
from operator import gt, is_, is_not, le, not_
from typing import overload

from app.analysis.logparse.formats import (
    _ERROR_LEVELS,
    _FORMATS,
    KNOWN_FORMATS,
    _binary_share,
    _combined,
    _detect,
    _detect_text,
    _offset_type,
    _preferring,
    _PrefixColumns,
    _Prefixer,
    check_prefix_format,
    clean_text,
)
from app.analysis.logparse.pyerrors import python_error
from app.analysis.logparse.rawframes import merge_frames, scan_frames, traceback_marks
from app.analysis.logparse.tracebacks import (
    _CHAIN_LINES,
    _DEF,
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
    _looks_like_exception,
    _pytest_kind,
    _Traceback,
    _TracebackReader,
    _unwrap_exception_groups,
    echoed_source,
)
from app.analysis.model import Frame, LogMessage, ParsedLog

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
# a prefixed message ending in ``:`` is more than a message only when it ends like one of these
_COLON_ENDS = (_TB_HEADER, *sorted(_CHAIN_LINES))
_FAST_PATH = True  # bulk passes (prefixes, runs of ordinary lines); the tests compare them with line by line
_FUNC_NAME = re.compile(r"[\w<>.\[\]-]{1,200}")


class LogMessages(Sequence[LogMessage]):
    """The messages of one log as columns: a sequence of ``LogMessage`` made on access.

    A log repeats short messages by the hundred thousand; an object per message held several
    times the log's size. Here most texts are spans of the log's own text, the rest (joined
    continuation lines, stripped texts) are kept whole; lines, end lines and level codes are
    arrays. ``texts()``, ``lines()`` and ``levels()`` give whole columns for bulk work.
    ``_shape``: for a message read by its line's shape, an index into ``_shapes``, the shape
    of its text (every digit made 0); else -1. Kept only when the parse read some line by its
    shape (``_shapes`` is then given, and never empty).
    """

    __slots__ = (
        "_end",
        "_extra",
        "_level",
        "_levels",
        "_line",
        "_shape",
        "_shapes",
        "_start",
        "_stop",
        "_text",
    )

    def __init__(
        self, text: str = "", levels: list[str | None] | None = None, shapes: list[str] | None = None
    ) -> None:
        self._text = text
        self._line = array("i")  # 1-based first line
        self._end = array("i")  # last line
        # text span in ``_text``; a negative start -k: ``_extra[k - 1]``
        self._start = array(_offset_type(len(text)))
        self._stop = array(_offset_type(len(text)))
        self._level = bytearray()  # index into ``_levels``
        self._levels: list[str | None] = levels if levels is not None else [None]
        self._extra: list[str] = []
        self._shape = array("i")
        self._shapes: list[str] = shapes if shapes is not None else []

    # -- building (the parser only) -------------------------------------------------------

    def _code(self, level: str | None) -> int:
        try:
            return self._levels.index(level)
        except ValueError:
            self._levels.append(level)
            return len(self._levels) - 1

    def _append(self, line: int, end: int, text: str, level: str | None) -> None:
        self._extra.append(text)
        self._line.append(line)
        self._end.append(end)
        self._start.append(-len(self._extra))
        self._stop.append(0)
        self._level.append(self._code(level))
        if self._shapes:
            self._shape.append(-1)

    def _append_span(self, line: int, start: int, stop: int, code: int) -> None:
        self._line.append(line)
        self._end.append(line)
        self._start.append(start)
        self._stop.append(stop)
        self._level.append(code)
        if self._shapes:
            self._shape.append(-1)

    # -- reading --------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._line)

    @overload
    def __getitem__(self, i: int) -> LogMessage: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[LogMessage, ...]: ...
    def __getitem__(self, i: int | slice) -> LogMessage | tuple[LogMessage, ...]:
        if isinstance(i, slice):
            return tuple(self._message(k) for k in range(*i.indices(len(self._line))))
        n = len(self._line)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("message index out of range")
        return self._message(i)

    def _message(self, i: int) -> LogMessage:
        return LogMessage(i, self._line[i], self._end[i], self.text(i), self._levels[self._level[i]])

    def __iter__(self) -> Iterator[LogMessage]:
        return map(self._message, range(len(self._line)))

    def __reversed__(self) -> Iterator[LogMessage]:
        return map(self._message, range(len(self._line) - 1, -1, -1))

    def text(self, i: int) -> str:
        start = self._start[i]
        return self._extra[-start - 1] if start < 0 else self._text[start : self._stop[i]]

    def texts(self) -> list[str]:
        """Every message's text, in order."""
        # every span cut in C; the few kept whole (negative starts cut as "") put in after
        texts = list(map(self._text.__getitem__, map(slice, self._start, self._stop)))
        if self._extra:
            for k in compress(range(len(texts)), map(gt, repeat(0), self._start)):
                texts[k] = self._extra[-self._start[k] - 1]
        return texts

    def selected(self, mask: bytes) -> tuple[list[int], list[str]]:
        """The indexes and texts of the messages whose byte in ``mask`` is set, in order.

        A message whose shape holds no digit is its shape: that string serves, not a new cut.
        """
        where = list(compress(range(len(mask)), mask))
        if not self._shapes:
            return where, self._cut(where)
        known: list[str | None] = [None if "0" in s else s for s in self._shapes]
        known.append(None)  # read for the code -1
        texts = list(map(known.__getitem__, compress(self._shape, mask)))
        if None in texts:
            need = bytes(map(is_, texts, repeat(None)))
            for k, text in zip(
                compress(range(len(texts)), need), self._cut(list(compress(where, need))), strict=True
            ):
                texts[k] = text
        return where, texts  # type: ignore[return-value]

    def _cut(self, where: list[int]) -> list[str]:
        """The texts of messages ``where`` (ascending indexes)."""
        starts = list(map(self._start.__getitem__, where))
        texts = list(map(self._text.__getitem__, map(slice, starts, map(self._stop.__getitem__, where))))
        if self._extra:
            for k in compress(range(len(texts)), map(gt, repeat(0), starts)):
                texts[k] = self._extra[-starts[k] - 1]
        return texts

    def shapes(self) -> tuple[Sequence[int], Sequence[str]]:
        """Each message's shape code (-1: none known) and the shapes the codes index."""
        return self._shape, self._shapes

    def lines(self) -> Sequence[int]:
        """Every message's first log line, in order (ascending)."""
        return self._line

    def end_lines(self) -> Sequence[int]:
        return self._end

    def levels(self) -> list[str | None]:
        """Every message's level (None where the prefix gave none), in order."""
        levels = self._levels
        return [levels[c] for c in self._level]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"LogMessages({list(self)!r})"


class _Lines:
    """The log's lines as a list the parser reads and rewrites, without cutting the text up.

    Line i is ``text[bounds[i]:bounds[i+1]-1]``; a line with a prefix reads as "" (the parser
    reads it through its prefix), a rewritten line as what was written.
    """

    __slots__ = ("bounds", "fixed", "n", "prefixes", "text")

    def __init__(self, text: str, bounds: array, n: int) -> None:
        self.text = text
        self.bounds = bounds
        self.n = n
        self.prefixes: _PrefixColumns | None = None
        self.fixed: dict[int, str] = {}

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> str:
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError("line index out of range")
        fixed = self.fixed.get(i)
        if fixed is not None:
            return fixed
        if self.prefixes is not None and self.prefixes.fmt[i]:
            return ""
        return self.text[self.bounds[i] : self.bounds[i + 1] - 1]

    def __setitem__(self, i: int, line: str) -> None:
        self.fixed[i + self.n if i < 0 else i] = line

    def __iter__(self) -> Iterator[str]:
        return map(self.__getitem__, range(self.n))


# Unprefixed lines the short path may not take: empty, a first character that may start a
# traceback, report, runner line or continuation, a last one that may end a header, a path.
_PLAIN_START = re.compile(r"\n(?=[\s(RJTPFESWIC_=\->]|\Z)")
_PLAIN_END = re.compile(r"[:\]](?=\n)")
_PY = re.compile(r"\.py")


def _plain_special(text: str, bounds: array, n: int) -> bytearray:
    """Lines of an unprefixed log that need the parser's full checks (1), found over the whole text."""
    special = bytearray(n)
    first, end = bounds[0], bounds[n] - 1
    head = text[first : first + 1] if bounds[1] - 1 > first else ""
    if not head or head in _SLOW_FIRST or head.isspace():
        special[0] = 1
    for m in _PLAIN_START.finditer(text, first, end):
        k = bisect_right(bounds, m.start() + 1) - 1
        if k < n:
            special[k] = 1
    ends = [m.start() for m in _PLAIN_END.finditer(text, first, end)]
    if end > first and text[end - 1] in ":]":
        ends.append(end - 1)
    for pos in (*ends, *(m.start() for m in _PY.finditer(text, first, end))):
        special[bisect_right(bounds, pos) - 1] = 1
    return special


class _Parser(_TracebackReader):
    """One pass over the lines; state for the message being continued and the open pytest block.

    Runs of ordinary lines (``special`` clear) are taken in bulk, as spans of the text; the other
    lines go through the full checks one by one.
    """

    def __init__(
        self,
        lines: _Lines,
        prefixes: _PrefixColumns,
        offset: int,
        groups: dict[int, int] | None = None,
    ) -> None:
        self.quiet = groups or {}  # lines of exception groups: never messages
        self.lines = lines
        self.prefixes = prefixes
        self.offset = offset
        self.prefixed = prefixes.count > 0
        self.messages = LogMessages(lines.text, prefixes.levels, prefixes.shapes)
        self.tracebacks: list[_Traceback] = []
        self.warnings: list[str] = []
        self.summaries: list[tuple[int, str]] = []  # (log line, text) of FAILED/FAIL: lines
        # (first, last line, parts, level); parts None: the message is line first's prefixed body
        self.open: tuple[int, int, list[str] | None, str | None] | None = None
        self.pytest: _Traceback | None = None
        self.pytest_code: str | None = None
        self.pytest_func: str | None = None
        self.in_report = False
        self.last_e = -2  # index of the last E line read
        self.open_layered = False  # the open message had an application prefix inside a transport one
        self.open_sig = ""  # the prefix signature of the open message
        self.runner: list[tuple[int, str, str]] = []  # (log line, status, reason) of runner status lines
        if not _FAST_PATH or self.quiet:
            self.special = bytearray(b"\x01") * lines.n
        elif self.prefixed:
            self.special = prefixes.special
        else:
            self.special = _plain_special(lines.text, lines.bounds, lines.n)
        # source lines pytest echoed in its report: traceback text, not messages
        self.raw = scan_frames(lines.text, lines.bounds, lines.n, self.prefixed_body)
        self.echo = echoed_source([k for _p, _l, _f, k, py in self.raw if py], lines.n, self.body)
        if self.echo:
            self.special = bytearray(self.special)
            for k in self.echo:
                self.special[k] = 1

    # -- helpers ---------------------------------------------------------------------------

    def body(self, i: int) -> str:
        p = self.prefixes[i]
        return p.body if p is not None else self.lines[i]

    def lineno(self, i: int) -> int:
        return i + 1 + self.offset

    def prefixed_body(self, i: int) -> str | None:
        p = self.prefixes[i]
        return None if p is None else p.body

    def flush(self) -> None:
        if self.open is not None:
            start, end, parts, level = self.open
            self.open = None
            if parts is None:
                ms, me = self.prefixes.body_span(start)
                self.messages._append_span(self.lineno(start), ms, me, self.messages._code(level))
            else:
                self.emit(start, end, "\n".join(parts), level)

    def open_parts(self) -> tuple[int, list[str], str | None]:
        """The open message's first line, parts (made a list) and level: a line is to be added."""
        assert self.open is not None
        start, _, parts, level = self.open
        return start, [self.body(start)] if parts is None else parts, level

    def emit(self, start: int, end: int, text: str, level: str | None) -> None:
        text = text.strip()
        if text:
            self.messages._append(self.lineno(start), self.lineno(end), text, level)

    # -- main loop -------------------------------------------------------------------------

    def run(self) -> None:
        i, n = 0, len(self.lines)
        special = self.special
        while i < n:
            if not special[i]:
                stop = special.find(1, i)
                if stop < 0:
                    stop = n
                if self.prefixed:
                    self.prefixed_run(i, stop)
                    i = stop
                    continue
                if not self.in_report:
                    self.plain_run(i, stop)
                    i = stop
                    continue
            i = self.step(i)
        self.flush()

    def plain_run(self, i: int, stop: int) -> None:
        """Ordinary lines of an unprefixed log: each one message, its text the line itself."""
        self.flush()
        m, bounds, first = self.messages, self.lines.bounds, self.lineno(i)
        count = stop - i
        m._line.extend(range(first, first + count))
        m._end.extend(m._line[-count:])  # one line each: copied in C, not counted again
        m._start.extend(bounds[i:stop])
        m._stop.extend(map((-1).__add__, bounds[i + 1 : stop + 1]))
        m._level.extend(bytes(stop - i))
        if m._shapes:
            m._shape.extend(array("i", (-1,)) * count)

    def prefixed_run(self, i: int, stop: int) -> None:
        """Prefixed lines whose bodies cannot start anything: each ends the message before it.

        The last one stays open (an unprefixed line after it may continue it).
        """
        self.in_report = False
        self.flush()
        m, p, first = self.messages, self.prefixes, self.lineno(i)
        last = stop - 1
        if last > i:
            count = last - i
            m._line.extend(range(first, first + count))
            m._end.extend(m._line[-count:])  # one line each: copied in C, not counted again
            m._start.extend(p.start[i:last])
            m._stop.extend(p.stop[i:last])
            m._level.extend(p.level[i:last])
            if m._shapes:
                m._shape.extend(p.shape[i:last])
        self.open = (last, last, None, p.levels[p.level[last]])
        self.open_layered = False
        self.open_sig = p.sig_at(last)

    def step(self, i: int) -> int:
        """The full checks on line i; the index of the next line to read."""
        lines, prefix = self.lines, self.prefixes[i]
        body = lines[i] if prefix is None else prefix.body
        stripped = body.strip()
        if stripped.endswith(_TB_HEADER):
            self.flush()
            self.close_pytest()
            before = stripped[: -len(_TB_HEADER)].strip()
            if before:
                self.emit(i, i, before, prefix.level if prefix else None)
            return self.python_traceback(i)
        if stripped in _CHAIN_LINES or i in self.quiet:
            self.flush()
            return i + 1
        if i in self.echo:
            self.flush()
            m = _DEF.match(stripped)
            if m is not None:  # the function whose frame the next location closes
                self.pytest_func = m.group("name")
            return i + 1
        if prefix is not None and self.in_report:
            self.in_report = False
        if stripped[:1] in _RUNNER_FIRST and (used := self.runner_line(i, stripped)):
            self.flush()
            return i + used
        if stripped[:1] == "E" and prefix is None and self.collapsed_e(i, stripped):
            self.flush()
            self.open_pytest(i).exception.append(stripped[2:])
            self.last_e = i
            return i + 1
        if (stripped[:1] == "F" or ".py" in stripped[:200]) and self.frame_without_header(i, stripped):
            self.flush()
            self.close_pytest()
            return self.python_traceback(i, headerless=True)
        kind = _pytest_kind(stripped)
        if kind is not None or self.in_report:
            self.flush()
            return i + max(1, self.pytest_line(i, stripped, kind))
        if i == self.last_e + 1 and prefix is None and body.startswith("    ") and self.pytest is not None:
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
            start, parts, level = self.open_parts()
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
            start, parts, level = self.open_parts()
            parts.append(body)
            self.open = (start, i, parts, level)
        else:
            self.flush()
            self.emit(i, i, body, None)
        return i + 1

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
        m = self.messages
        last = max((m._level.rfind(c) for c, lv in enumerate(m._levels) if lv in _ERROR_LEVELS), default=-1)
        if last >= 0:
            candidates.append((m._line[last], m.text(last)))
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
        text_of = self.messages.text
        for k in reversed(self.error_candidates()):
            text = text_of(k)
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

    def error_candidates(self) -> list[int]:
        """The messages that may name an error (``exception``, ``error`` or ``fail`` in any case),
        ascending: by their shapes where the parse coded most messages (a shape holds such a word
        when its text does: digits are no letters), else by a search of the log's text."""
        m = self.messages
        codes, shapes = m.shapes()
        if shapes and codes.count(-1) * 4 < len(codes):
            flags = [any(word in shape.lower() for word in _ERROR_HINTS) for shape in shapes]
            flags.append(True)  # read for the code -1: the text is tested below
            found = list(compress(range(len(codes)), map(flags.__getitem__, codes)))
            text_of = m.text
            return [
                k for k in found if codes[k] >= 0 or any(word in text_of(k).lower() for word in _ERROR_HINTS)
            ]
        text = m._text
        if "\u0130" in text:  # the one character whose lower case is longer: test every message
            return list(range(len(m)))
        n = len(m)
        spans: Sequence[int] = range(n)
        starts: Sequence[int] = m._start
        found: set[int] = set()
        if m._extra:  # the messages kept whole are all candidates; the rest are spans of the text
            is_span = bytes(map(le, repeat(0), m._start))
            spans, starts = list(compress(spans, is_span)), list(compress(starts, is_span))
            found.update(compress(range(n), map(not_, is_span)))
        hits: list[int] = []
        for lo in range(0, len(text), _PIECE):
            piece = text[lo : lo + _PIECE + _HINT_OVERLAP].lower()
            for word in _ERROR_HINTS:
                at = piece.find(word)
                while 0 <= at < _PIECE:
                    hits.append(lo + at)
                    at = piece.find(word, at + 1)
        for pos in hits:
            j = bisect_right(starts, pos) - 1
            if j >= 0 and pos < m._stop[spans[j]]:
                found.add(spans[j])
        return sorted(found)

    def with_followers(self, k: int) -> str:
        """A message ending in ``:`` goes on in the next lines (autotest's ``CmdError:`` blocks); one
        wrapped over several lines (a long exception line pasted into a commit message) is read whole."""
        first = self.messages[k]
        parts = [first.text]
        end = first.end_line
        if first.text.endswith(":"):
            for msg in self.messages[k + 1 : k + 11]:
                if msg.line != end + 1:
                    break
                parts.append(msg.text)
                end = msg.end_line
            return "\n".join(parts)
        indent = _indent(self.body(first.line - 1 - self.offset))
        for msg in self.messages[k + 1 : k + 1 + _WRAPPED_MAX]:
            if msg.line != end + 1:
                break
            line = self.body(msg.line - 1 - self.offset)
            if not (_wraps(parts[-1], indent, line) or _completes("\n".join(parts), line)):
                break
            parts.append(msg.text)
            end = msg.end_line
        return "\n".join(parts)


# what a text ``error_looking`` takes holds, lowered: "Exception", or "error" or "fail" in its lower case
_ERROR_HINTS = ("exception", "error", "fail")
_HINT_OVERLAP = len("exception") - 1  # a word across two pieces is found in the first
_WRAPPED_MAX = 4  # continuation lines of one wrapped error line
# words no sentence ends with: a line ending in one was wrapped
_DANGLING = frozenset(
    {"and", "or", "of", "to", "for", "in", "the", "a", "an", "with", "from", "by", "at", "is", "not"}
    | {"but", "than"}
)


def _wraps(previous: str, indent: int, line: str) -> bool:
    """``line`` goes on with the error text ``previous`` (whose first line was indented ``indent``):
    after a trailing backslash or a dangling word, or indented deeper (a hanging indent)."""
    if not line.strip() or _looks_like_exception(line.strip()):
        return False
    if previous.endswith("\\"):
        return True
    words = previous.rsplit(None, 1)
    if words and words[-1] in _DANGLING:
        return True
    return _indent(line) > indent


def _completes(text: str, line: str) -> bool:
    """``line`` completes one of Python's own error messages that ``text`` began (``'X' object``,
    then ``has no attribute 'y'``): wrapped where no hanging indent or dangling word shows it."""
    rest = line.strip()
    if not rest or _looks_like_exception(rest) or python_error(text).kind is not None:
        return False
    return python_error(f"{text}\n{rest}").kind is not None


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

    text, bounds = _stripped_lines(text)
    if text.endswith("\n"):
        n = len(bounds) - 1  # the text after the last newline is no line
    else:
        n = len(bounds)
        bounds.append(len(text) + 1)
    offset = 0
    if max_lines is not None and n > max_lines:
        offset = n - max_lines
        warnings.append(f"the log has {n} lines; only the last {max_lines} were read")
        base = bounds[offset]
        text = text[base:]  # the messages keep what was read, not the whole log
        bounds = array(bounds.typecode, (b - base for b in bounds[offset:]))
        n = max_lines
    lines = _Lines(text, bounds, n)

    spec = (prefix_format or "auto").strip()
    detected: int | None = -1
    if custom is not None:
        prefixer, name = _Prefixer(custom, custom=True), "custom"
    elif spec == "plain":
        prefixer, name = _Prefixer(None), "plain"
    elif spec in KNOWN_FORMATS:
        prefixer, name = _Prefixer(_combined((KNOWN_FORMATS.index(spec),))), spec
    else:
        detected = _detect_text(text, bounds, n) if _FAST_PATH else _detect(lines)
        prefixer = _Prefixer(_preferring(detected))
        name = "unknown" if detected is None else _FORMATS[detected][0]

    prefixes = prefixer.columns(
        text, bounds, n, _SLOW_FIRST, headers=_COLON_ENDS, bulk=_FAST_PATH, shapes=detected is not None
    )
    lines.prefixes = prefixes
    if custom is not None and not prefixes.count:
        warnings.append("the configured prefix_format matched no line of the log")
    groups = _unwrap_exception_groups(lines, prefixes) if _GROUP_HEADER in text else None  # type: ignore[arg-type]
    parser = _Parser(lines, prefixes, offset, groups)
    parser.run()
    error = parser.error_message()
    warnings.extend(parser.warnings)
    return ParsedLog(
        messages=parser.messages,
        frames=_all_frames(parser, text, bounds, n, offset),
        error_message=error,
        warnings=tuple(dict.fromkeys(warnings)),
        format=name,
    )


def _all_frames(parser: _Parser, text: str, bounds: array, n: int, offset: int) -> tuple[Frame, ...]:
    """The reader's frames, with those only the raw scan of the text found (rawframes.py) merged in."""
    merged = merge_frames(
        [(tb.start, tb.frames) for tb in parser.tracebacks],
        [(path, line, func, k) for path, line, func, k, _py in parser.raw],
        lambda: traceback_marks(text, bounds, n),
        offset,
    )
    if merged is None:
        return parser.frames()
    return tuple(
        Frame(path, line, func, code, log_line, index)
        for index, frames in enumerate(merged)
        for path, line, func, code, log_line in frames
    )


_PIECE = 1 << 16  # characters of the text split at once: the pieces' lines are short-lived


def _stripped_lines(text: str) -> tuple[str, array]:
    """The text with every line's trailing whitespace cut (the parser's lines are read so), and
    its line starts: 0 and the offset after every newline.

    A piece of whole lines at a time (splitting the text whole would hold a string per line at
    once): its lines' lengths, summed in C, give the starts, and ``str.rstrip`` returns a line
    it leaves unchanged as the same object, so only a piece where some line lost trailing
    whitespace is rebuilt, and the text with it.
    """
    bounds = array(_offset_type(len(text)), [0])
    kept: list[str] | None = None  # the text's pieces, once one of them changed
    lo, base, size = 0, 0, len(text)
    while lo < size:
        hi = text.rfind("\n", lo, lo + _PIECE) + 1
        if hi <= lo:  # a line longer than a piece
            hi = text.find("\n", lo + _PIECE) + 1 or size
        piece = text[lo:hi]
        parts = piece.split("\n")
        stripped = list(map(str.rstrip, parts))
        if any(map(is_not, stripped, parts)):
            parts = stripped
            piece = "\n".join(parts)
            if kept is None:
                kept = [text[:lo]]
        if kept is not None:
            kept.append(piece)
        parts.pop()  # what follows the piece's last newline: "" unless the text ends there
        bounds.extend(islice(accumulate(map((1).__add__, map(len, parts)), initial=base), 1, None))
        base += len(piece)
        lo = hi
    return (text if kept is None else "".join(kept)), bounds


# whitespace (as str.isspace and str.rstrip see it) other than the space and the newline
_ODD_ASCII_SPACE = "\t\x0b\x0c\r\x1c\x1d\x1e\x1f"
_ODD_SPACE = (
    _ODD_ASCII_SPACE
    + "\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    + "\u2028\u2029\u202f\u205f\u3000"
)
