"""A safety net under the traceback parser: frames found by their own shape anywhere in the log.

The structured reader (tracebacks.py) follows a traceback line by line and trusts the prefix
format detected from the log's head. A log mangled on its way to us (quoted in an email, wrapped
at 72 columns in a commit message, prefixed by a second logger, pasted under a wrong guess of its
format) can defeat it, and a frame it misses is evidence lost: a plain stack-trace reader would
still have seen it. Here every ``File "PATH", line N`` and every pytest ``PATH:N:`` location is
found with ``str.find`` and parsed by hand (no regex runs over a whole line), joining up to a few
following lines where a wrap cut the frame. The frames the reader missed are merged into its
tracebacks (messages.py).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence

RawFrame = tuple[str, int, str | None, int]  # path, line, function, 0-based log line
ScannedFrame = tuple[str, int, str | None, int, bool]  # a RawFrame, and whether it is a pytest location
_JOINS = 4  # lines a wrapped frame may continue over (a long path wraps more than once)
_MAX_FRAME = 1200  # characters a joined frame may grow to: keeps the scan linear
_QUOTES = " \t>|"  # what email quoting, bars and indentation put before a line
_DIGIT_SHAPE = str.maketrans("0123456789", "0000000000")
_IDENT = re.compile(r"[A-Za-z_][\w.]*")
_FUNC_NAME = re.compile(r"[\w<>.\[\]-]{1,200}")  # as messages.py reads a frame's function
_MAX_LINE = 2000
# pytest's crash line names the exception: `path.py:12: AssertionError`, `path.py:3: Failed: msg`
_EXC_ENDS = ("Error", "Exception", "Failed", "Failure", "Exit", "Interrupt", "Timeout", "Fault", "Group")
_TB_MARKS = ("Traceback (most recent call last)", "_____ ")
_BOUNDARY = frozenset("\"'([{<>|: \t=,")


def _number(s: str, i: int) -> int:
    """End of the run of ASCII digits starting at i (``int`` reads no other digit such as ``¹``)."""
    n = len(s)
    while i < n and "0" <= s[i] <= "9":
        i += 1
    return i


def _skip(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in " \t":
        i += 1
    return i


def _python(s: str) -> tuple[str, int, str | None] | bool:
    """Parse ``File "PATH", line N[, in F]`` at the start of s.

    A frame, False when s is no frame, True when s ends before the frame is complete (a wrap).
    A line number at the very end counts as complete (``_joined`` peeks for a cut number).
    """
    n = len(s)
    i = _skip(s, 4)
    if i == n:
        return True
    if s[i] != '"':
        return False
    close = s.find('"', i + 1)
    if close < 0:
        return True
    path = s[i + 1 : close].strip()
    i = _skip(s, close + 1)
    if i == n:
        return True
    if s[i] != ",":
        return False
    i = _skip(s, i + 1)
    if n - i < 4:
        return "line".startswith(s[i:])
    if not s.startswith("line", i):
        return False
    i = _skip(s, i + 4)
    end = _number(s, i)
    if end == i:
        return end == n
    line = int(s[i:end])
    if not path or line < 1:
        return False
    func: str | None = None
    i = _skip(s, end)
    if i < n and s[i] == ",":
        i = _skip(s, i + 1)
        if s.startswith("in", i):
            i = _skip(s, i + 2)
            word = s[i:].split(None, 1)
            func = word[0] if word else None
    return path, line, func


def _pytest(line: str, dot: int) -> tuple[str, int, str | None] | None:
    """A pytest location ``PATH:N:`` whose ``.py:`` is at ``dot`` in the line, or None."""
    i = dot + 4
    end = _number(line, i)
    if end == i or end >= len(line) or line[end] != ":":
        return None
    start = dot
    while start > 0 and line[start - 1] not in _BOUNDARY:
        start -= 1
    path = line[start : dot + 3]
    if len(path) <= 3 or int(line[i:end]) < 1:
        return None
    rest = line[end + 1 :].strip()
    if not rest:
        return path, int(line[i:end]), None
    if rest.startswith("in "):
        words = rest[3:].split()
        if len(words) == 1 and _IDENT.fullmatch(words[0].split("[", 1)[0]):
            return path, int(line[i:end]), words[0]
        return None
    name = rest.split(":", 1)[0]
    if _IDENT.fullmatch(name) and name.rsplit(".", 1)[-1].endswith(_EXC_ENDS):
        return path, int(line[i:end]), None
    return None


def _continuations(head: str, nxt: str, body: str | None) -> list[str]:
    """The ways line ``nxt`` may continue a frame whose line began with ``head``."""
    out: list[str] = []
    if body is not None:
        out.append(body.strip())
    core = head.rstrip()
    if (
        core
        and len(nxt) >= len(core)
        and nxt[: len(core)].translate(_DIGIT_SHAPE) == core.translate(_DIGIT_SHAPE)
    ):
        out.append(nxt[len(core) :].strip())  # the same prefix (timestamps aside) on every line
    out.append(nxt.lstrip(_QUOTES).strip())
    return list(dict.fromkeys(out))


def _joined(
    text: str, bounds: Sequence[int], n: int, k: int, at: int, body: Callable[[int], str | None]
) -> tuple[str, int, str | None] | None:
    """The frame starting at offset ``at`` of line k, joining the lines a wrap cut it into."""
    line_end = bounds[k + 1] - 1
    head = text[bounds[k] : at]
    got = _python(text[at:line_end])
    if got is False:
        return None
    parts = [text[at:line_end]]
    j = k + 1
    while (got is True or _cut_number(got, parts[0])) and j < n and j <= k + _JOINS:
        nxt = text[bounds[j] : bounds[j + 1] - 1]
        if not nxt.strip():
            break
        best = None
        for cont in _continuations(head, nxt, body(j)):
            if not cont or len(parts[0]) + len(cont) > _MAX_FRAME:
                continue
            trial = _python(parts[0] + cont)
            # a complete frame only takes a line that gives it its function (or the rest of its number)
            if (trial[2] is not None) if isinstance(trial, tuple) and isinstance(got, tuple) else trial:
                best = (cont, trial)
                break
        if best is None:
            break
        parts[0] += best[0]
        got = best[1]
        j += 1
    return got if isinstance(got, tuple) else None


def _cut_number(got: tuple[str, int, str | None] | bool, s: str) -> bool:
    """A frame whose line number ends the line: a wrap may have cut the number or the function."""
    return (
        isinstance(got, tuple) and got[2] is None and (s.rstrip()[-1:].isdigit() or s.rstrip().endswith(","))
    )


def scan_frames(
    text: str, bounds: Sequence[int], n: int, body: Callable[[int], str | None]
) -> list[RawFrame]:
    """Every frame of the log's n lines (``bounds``: line starts), in log order.

    ``body(j)``: line j less the prefix the parser found on it (None: no prefix), one way to read
    a continuation line.
    """
    found: list[tuple[int, ScannedFrame]] = []  # (text offset, frame)
    end = bounds[n] - 1 if n < len(bounds) else len(text)
    for needle in ("File", ".py:"):
        at = text.find(needle, 0, end)
        while at >= 0:
            k = bisect_right(bounds, at) - 1
            start, stop = bounds[k], bounds[k + 1] - 1
            if stop - start > _MAX_LINE:
                at = text.find(needle, stop, end)  # no traceback prints such a line; skipping keeps it linear
                continue
            if needle == "File":
                got = None
                if at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_"):
                    got = _joined(text, bounds, n, k, at, body)
            else:
                got = _pytest(text[start:stop], at - start)
            if got is not None:
                func = got[2] if got[2] is None or _FUNC_NAME.fullmatch(got[2]) else None
                found.append((at, (got[0], got[1], func, k, needle != "File")))
            at = text.find(needle, at + 4, end)
    found.sort(key=lambda item: item[0])
    return [frame for _, frame in found]


def traceback_marks(text: str, bounds: Sequence[int], n: int) -> list[int]:
    """Lines (0-based, ascending) that start a traceback: Python's header, pytest's section titles."""
    end = bounds[n] - 1 if n < len(bounds) else len(text)
    marks: set[int] = set()
    for mark in _TB_MARKS:
        at = text.find(mark, 0, end)
        while at >= 0:
            marks.add(bisect_right(bounds, at) - 1)
            nl = text.find("\n", at, end)
            if nl < 0:
                break
            at = text.find(mark, nl, end)
    return sorted(marks)


StructuredFrame = tuple[str, int, str | None, str | None, int]  # path, line, function, code, log line


def _base(path: str) -> str:
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].strip()


def merge_frames(
    tracebacks: Sequence[tuple[int, Sequence[StructuredFrame]]],
    raw: Sequence[RawFrame],
    marks: Callable[[], Sequence[int]],
    offset: int,
) -> list[list[StructuredFrame]] | None:
    """The reader's tracebacks (first log line, frames) with the raw frames it missed; None: none missed.

    A raw frame is the reader's when it names the same file and line on the same log line (a
    wrapped frame counts from its first line, for both). A missed one joins the traceback above it,
    after its frames of earlier log lines, unless a traceback header or pytest title (``marks``)
    lies between them; then it starts one of its own. Raw-only tracebacks join their neighbours the
    same way. Tracebacks come in log order, so the last frame of the last one is the innermost.
    """
    seen = {
        (_base(path), line, log_line) for _, frames in tracebacks for path, line, _f, _c, log_line in frames
    }
    missed: list[StructuredFrame] = [
        (path, line, func, None, k + 1 + offset)
        for path, line, func, k in raw
        if (_base(path), line, k + 1 + offset) not in seen
    ]
    if not missed:
        return None
    starts = marks()
    marked = [m + 1 + offset for m in starts]  # 1-based log lines of traceback starts

    def split(after: int, upto: int) -> bool:
        """A traceback starts on a line in (after, upto]."""
        return bisect_right(marked, upto) > bisect_right(marked, after)

    # [first log line, frames, only raw frames?], in log order
    groups: list[list] = [[start, list(frames), False] for start, frames in tracebacks if frames]
    groups.sort(key=lambda g: g[0])
    at = -1  # index of the last group starting at or above the frame (frames come in log order)
    for frame in missed:
        log_line = frame[4]
        while at + 1 < len(groups) and groups[at + 1][0] <= log_line:
            at += 1
        home = groups[at] if at >= 0 else None
        if home is None or split(max((f[4] for f in home[1] if f[4] <= log_line), default=home[0]), log_line):
            at += 1
            groups.insert(at, [log_line, [frame], True])
            continue
        frames = home[1]
        cut = len(frames)
        while cut > 0 and frames[cut - 1][4] > log_line:
            cut -= 1
        frames.insert(cut, frame)
    merged: list[list] = []
    for group in groups:  # a run of raw frames just above a traceback the reader found is part of it
        if merged and (merged[-1][2] or group[2]) and not split(merged[-1][1][-1][4], group[1][0][4]):
            merged[-1][1].extend(group[1])
            merged[-1][2] = merged[-1][2] and group[2]
        else:
            merged.append(group)
    return [group[1] for group in merged]
