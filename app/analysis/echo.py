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

from collections.abc import Mapping
from dataclasses import dataclass

from app.analysis.model import Program, Statement

MIN_CHARS = 12  # characters of a script line, whitespace removed, for its echo to count
TAIL_LINES = 5000
_MARKS = ">|"  # pytest's failing-line marker, quoting


@dataclass(frozen=True, slots=True)
class Echo:
    """A log line that repeats a script line."""

    sid: int  # the statement owning the echoed line
    path: str
    line: int  # the echoed script line
    log_line: int  # 1-based line of the log
    marked: bool  # pytest's ``>`` marker: the failing line of a frame
    shared: int  # script lines with the same text (the echo cannot tell them apart)


def _key(text: str) -> str:
    return "".join(text.split())


def echo_table(program: Program, trees: object = None) -> dict[str, tuple[tuple[str, int], ...]]:
    """Script lines by their text without whitespace (comments and short lines left out); ``trees``
    is unused (the signature of a kept parse's derived facts, so one table serves every log)."""
    table: dict[str, list[tuple[str, int]]] = {}
    for file in program.files:
        for number, line in enumerate(file.lines, start=1):
            key = _key(line)
            if len(key) >= MIN_CHARS and not key.startswith(("#", '"""', "'''")):
                table.setdefault(key, []).append((file.path, number))
    return {k: tuple(v) for k, v in table.items()}


def _tail(log: str, lines: int) -> tuple[int, list[str]]:
    """The log's last ``lines`` lines and the 1-based number of the first of them."""
    end = len(log)
    cut = end
    for _ in range(lines):
        cut = log.rfind("\n", 0, cut)
        if cut < 0:
            break
    tail = log[cut + 1 :].split("\n")
    first = 1 if cut < 0 else log.count("\n", 0, cut + 1) + 1
    return first, tail


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
        text = raw.strip()
        if len(text) < MIN_CHARS:
            continue
        marked = text[0] == ">"
        key = _key(text.lstrip(_MARKS))
        if key.startswith("E") and key not in table:
            key = key[1:]  # pytest's ``E`` column
        places = table.get(key)
        if places is None and "|" in text:  # a prefixed log: the message after the prefix's bar
            key = _key(text.split("|", 1)[1])
            places = table.get(key)
        if places is None:
            continue
        for path, number in places:
            stmt = index.get((path, number))
            if stmt is not None:
                out.append(Echo(stmt.sid, path, number, first + offset, marked, len(places)))
    return tuple(out)
