"""Source echoes: log lines that repeat a line of the scripts word for word.

Python's tracebacks print the source line of every frame, pytest prints the failing test's source
and marks the failing line with ``>``, and people quote the failing line when they report a
failure. Such a line locates the failure even where no frame header survived (a cut or wrapped
traceback, a frame path that names no submitted script, a line quoted in prose). Lines are
compared without whitespace; a script line shorter than ``MIN_CHARS`` (``else:``, ``return x``)
says too little to count. Only the log's last ``TAIL_LINES`` lines are read: echoes sit next to
the failure, at the end of a log, and the cost stays flat however long the log is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.analysis.model import Frame, Program, Statement

MIN_CHARS = 12  # characters of a script line, whitespace removed, for its echo to count
TAIL_LINES = 3000
_MARKS = ">|"  # pytest's failing-line marker, quoting
ERROR_GAP = 3  # log lines an exception line may follow its source line by (caret lines, blank ones)
# An exception's headline as Python, pytest (``E   ``) and the test frameworks print it: a dotted
# class name ending like an exception, then a colon or the end of the line.
EXCEPTION_LINE = re.compile(
    r"^(?:E\s+)?(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Fail|Failure|Failed|Timeout|Interrupt|"
    r"Iteration|Warning)(?::|\s*$)"
)
_CARETS = re.compile(r"^[\s~^]*$")  # 3.11+ carets under the failing expression


@dataclass(frozen=True, slots=True)
class Echo:
    """A log line that repeats a script line."""

    sid: int  # the statement owning the echoed line
    path: str
    line: int  # the echoed script line
    log_line: int  # 1-based line of the log
    marked: bool  # pytest's ``>`` marker: the failing line of a frame
    shared: int  # script lines with the same text (the echo cannot tell them apart)
    raised: bool = False  # an exception line follows it: a traceback's source line, header cut

    @property
    def failing(self) -> bool:
        """A frame's source line whatever the header: pytest's ``>`` or the line an exception follows."""
        return self.marked or self.raised


def _key(text: str) -> str:
    # str.replace is C-level and several times faster here than translate or split/join; a line of
    # code holds no other whitespace (tabs aside, which are few)
    return text.replace(" ", "").replace("\t", "").replace("\r", "")


def echo_table(program: Program, trees: object = None) -> dict[str, tuple[tuple[str, int], ...]]:
    """Script lines by their text without whitespace (comments and short lines left out); ``trees``
    is unused (the signature of a kept parse's derived facts, so one table serves every log)."""
    table: dict[str, list[tuple[str, int]]] = {}
    for file in program.files:
        for number, line in enumerate(file.lines, start=1):
            # a traceback prints the line as written, an inline comment included or (some tools) not
            code, hash_, _comment = line.partition(" #")
            keys = {_key(line)}
            if hash_ and code.count('"') % 2 == 0 and code.count("'") % 2 == 0:
                keys.add(_key(code))
            for key in keys:
                if len(key) >= MIN_CHARS and not key.startswith(("#", '"""', "'''")):
                    table.setdefault(key, []).append((file.path, number))
    return {k: tuple(v) for k, v in table.items()}


def _tail(log: str, lines: int) -> tuple[int, list[str]]:
    """The log's last ``lines`` lines and the 1-based number of the first of them (C-level splits of
    the end of the text only: a long log is never copied whole)."""
    total = log.count("\n") + 1
    window = lines * 256
    chunk = log[-window:] if len(log) > window else log
    tail = chunk.split("\n")
    if chunk is not log:
        tail = tail[1:]  # the first piece may be the end of a longer line
    tail = tail[-lines:]
    return total - len(tail) + 1, tail


def find_echoes(
    table: Mapping[str, tuple[tuple[str, int], ...]],
    index: Mapping[tuple[str, int], Statement],
    log: str,
    *,
    tail_lines: int = TAIL_LINES,
) -> tuple[Echo, ...]:
    """Every log line (of the last ``tail_lines``) that repeats a script line, in log order."""
    if not table:
        return ()
    first, lines = _tail(log, tail_lines)
    out: list[Echo] = []
    for offset, raw in enumerate(lines):
        if len(raw) < MIN_CHARS:
            continue
        key = _key(raw)
        if len(key) < MIN_CHARS:
            continue
        marked = key[0] == ">"
        if key[0] in _MARKS:
            key = key.lstrip(_MARKS)
            if not key:  # a line of marks only (``>>>>``, ``----``)
                continue
        places = table.get(key)
        if places is None and key[0] == "E":
            places = table.get(key[1:])  # pytest's ``E`` column
        if places is None and "|" in key:  # a prefixed log: the message after the prefix's bar
            places = table.get(key.split("|", 1)[1])
        if places is None:
            continue
        raised = _exception_follows(lines, offset)
        for path, number in places:
            stmt = index.get((path, number))
            if stmt is not None:
                out.append(Echo(stmt.sid, path, number, first + offset, marked, len(places), raised))
    return tuple(out)


def _exception_follows(lines: Sequence[str], at: int) -> bool:
    """Whether an exception's headline follows line ``at`` (caret and blank lines skipped)."""
    for raw in lines[at + 1 : at + 1 + ERROR_GAP]:
        text = raw.strip()
        if not text or _CARETS.match(text):
            continue
        return EXCEPTION_LINE.match(text) is not None
    return False


def echo_frames(echoes: Sequence[Echo], program: Program) -> list[Frame]:
    """Frames read from the echoes of failing lines, for a log whose tracebacks name no script (their
    headers cut, or naming paths no submitted script matches): each unambiguous ``>`` line or line an
    exception follows, outermost first, as one traceback. The last is where the failure surfaced."""
    functions = {f.fid: f for f in program.functions}
    statements = program.statements
    out: list[Frame] = []
    seen: set[tuple[str, int]] = set()
    for echo in echoes:
        if not echo.failing or echo.shared != 1 or (echo.path, echo.line) in seen:
            continue
        seen.add((echo.path, echo.line))
        function = functions[statements[echo.sid].function]
        name = "<module>" if function.kind == "module" else function.name
        lines = next(f.lines for f in program.files if f.path == echo.path)
        out.append(Frame(echo.path, echo.line, name, lines[echo.line - 1].strip(), echo.log_line, 0))
    return out
