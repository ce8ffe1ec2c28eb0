"""A compact, versioned record of one analysis: what a failure page shows, without the analysis.

The dashboard must never run the pipeline again to show a stored failure (it would be slow on
big logs and could disagree with the stored ranking). ``build`` turns the analysis that ranked a
failure, and the elements it rendered, into a plain JSON-able summary plus the log cut into
chunks of lines, each carrying which log statements its lines matched. The summary is small
whatever the log's size; the chunks let a page read only the log windows it shows.
Pure: no I/O; the store persists both parts.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from app.analysis.model import Analysis, Loc, State
from app.analysis.render import RenderedCode

SNAPSHOT_VERSION = 1
CHUNK_LINES = 1000  # log lines per stored chunk: a page window touches one or two
MAX_MATCHES_PER_STATEMENT = 50  # log lines listed per statement; the count says how many in all
STATE_CODES = {State.EXE.value: "E", State.NEXE.value: "N", State.DBT.value: "D", State.UNKNOWN.value: "D"}
STATE_NAMES = {"E": State.EXE.value, "N": State.NEXE.value, "D": State.DBT.value}
BLANK = " "


class SnapshotError(ValueError):
    """A stored snapshot this code cannot read (another version, or damaged)."""


@dataclass(frozen=True)
class LogChunk:
    """``lines`` of the log from ``first_line`` (1-based); ``marks`` maps a log line to statement indexes."""

    index: int
    first_line: int
    lines: tuple[str, ...]
    marks: dict[int, tuple[int, ...]]

    @property
    def last_line(self) -> int:
        return self.first_line + len(self.lines) - 1


@dataclass(frozen=True)
class Snapshot:
    summary: dict[str, Any]
    chunks: tuple[LogChunk, ...]

    def packed(self) -> PackedSnapshot:
        """The bytes the store keeps: built where the analysis ran (an analysis worker), so that
        the server process only writes them, and a smaller message crosses the process pipe."""
        return PackedSnapshot(
            version=int(self.summary["version"]),
            log_lines=int(self.summary["log"]["lines"]),
            summary_z=zlib.compress(json.dumps(self.summary, separators=(",", ":")).encode("utf-8"), 6),
            chunks=tuple(
                PackedChunk(
                    index=c.index,
                    first_line=c.first_line,
                    line_count=len(c.lines),
                    text_z=zlib.compress("\n".join(c.lines).encode("utf-8", "surrogatepass"), 6),
                    marks={str(k): list(v) for k, v in c.marks.items()},
                )
                for c in self.chunks
            ),
        )


@dataclass(frozen=True)
class PackedChunk:
    """A ``LogChunk`` as stored: its lines joined and compressed, its marks JSON-ready."""

    index: int
    first_line: int
    line_count: int
    text_z: bytes
    marks: dict[str, list[int]]


@dataclass(frozen=True)
class PackedSnapshot:
    """A ``Snapshot`` as stored: the summary as compressed JSON, the chunks packed."""

    version: int
    log_lines: int
    summary_z: bytes
    chunks: tuple[PackedChunk, ...]


def log_lines(log: str) -> list[str]:
    """The log's lines numbered as the log parser numbers them (split on LF, trailing CR dropped)."""
    lines = [line.rstrip("\r") for line in log.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _ranges(numbers: Iterable[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for n in sorted(numbers):
        if out and out[-1][1] == n - 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return out


def _error_span(lines: Sequence[str], message: str, after: int) -> list[int] | None:
    """Log lines (first, last) holding the error message: the first copy after ``after``, else the last."""
    wanted = [w.strip() for w in message.strip().splitlines() if w.strip()]
    if not wanted:
        return None
    head = wanted[0]
    found: int | None = None
    for number in range(max(after, 1), len(lines) + 1):
        if head in lines[number - 1]:
            found = number
            break
    if found is None:
        for number in range(len(lines), 0, -1):
            if head in lines[number - 1]:
                found = number
                break
    if found is None:
        return None
    return [found, min(len(lines), found + len(wanted) - 1)]


def build(
    analysis: Analysis, rendered: RenderedCode, log: str, *, chunk_lines: int = CHUNK_LINES
) -> Snapshot:
    """The snapshot of the analysis that ranked a failure (``rendered`` is its level and variant)."""
    variant = rendered.variant
    trace = analysis.traces[variant]
    lines = log_lines(log)
    rules: dict[str, int] = {}

    files: list[dict[str, Any]] = []
    for source in analysis.program.files:
        states: list[str] = []
        reasons: list[list[Any]] = []
        kept: list[int] = []
        for number in range(1, len(source.lines) + 1):
            loc = Loc(source.path, number)
            if number not in source.code_lines:
                states.append(BLANK)
                continue
            evidence = trace.evidence.get(loc)
            is_kept = loc in trace.kept
            if is_kept:
                kept.append(number)
            if evidence is None:
                states.append("E" if is_kept else "N")
                continue
            states.append(STATE_CODES.get(evidence.state.value, "D"))
            rule = rules.setdefault(evidence.rule, len(rules))
            reasons.append([number, rule, evidence.detail])
        files.append(
            {
                "path": source.path,
                "lines": list(source.lines),
                "states": "".join(states),
                "kept": _ranges(kept),
                "reasons": reasons,
            }
        )

    index_of_sid: dict[int, int] = {}
    statements: list[dict[str, Any]] = []
    for i, statement in enumerate(analysis.log_statements):
        if statement.sid is not None:
            index_of_sid[statement.sid] = i
        if not statement.is_static or statement.sid is None:
            state = State.DBT.value
        elif statement.sid in analysis.match.exe:
            state = State.EXE.value
        elif statement.sid in analysis.match.nexe:
            state = State.NEXE.value
        else:
            state = State.DBT.value
        statements.append(
            {
                "path": statement.path,
                "line": statement.line,
                "end_line": statement.end_line,
                "callee": statement.callee,
                "static": statement.is_static,
                "state": state,
                "matches": [],
                "match_count": 0,
            }
        )

    message_line = {m.index: m.line for m in analysis.log.messages}
    marks: dict[int, list[int]] = {}
    for message_index, sids in analysis.match.matches:
        log_line = message_line.get(message_index)
        if log_line is None:
            continue
        targets = [index_of_sid[s] for s in sids if s in index_of_sid]
        if not targets:
            continue
        marks.setdefault(log_line, []).extend(targets)
        for target in targets:
            entry = statements[target]
            entry["match_count"] += 1
            if len(entry["matches"]) < MAX_MATCHES_PER_STATEMENT:
                entry["matches"].append([log_line, len(sids) == 1])

    frames = [
        {
            "path": f.path,
            "line": f.line,
            "function": f.function,
            "log_line": f.log_line,
            "traceback": f.traceback,
        }
        for f in analysis.error_frames
    ]
    last_frame_line = max((f.log_line for f in analysis.log.frames), default=0)
    summary: dict[str, Any] = {
        "version": SNAPSHOT_VERSION,
        "variant": variant,
        "level": rendered.level,
        "files": files,
        "rules": list(rules),
        "statements": statements,
        "elements": [
            {"id": e.id, "path": e.path, "start_line": e.start_line, "end_line": e.end_line}
            for e in rendered.elements
        ],
        "error": {
            "message": analysis.log.error_message,
            "log_lines": _error_span(lines, analysis.log.error_message, last_frame_line),
            "frames": frames,
            "log_frame_lines": sorted({f.log_line for f in analysis.log.frames if f.log_line}),
        },
        "log": {
            "lines": len(lines),
            "format": analysis.log.format,
            "messages": len(analysis.log.messages),
            "matched_lines": len(marks),
            "chunk_lines": chunk_lines,
        },
        "trace": {
            "kept": len(trace.kept),
            "total": trace.total,
            "pruning_rate": round(trace.pruning_rate, 4),
        },
        "warnings": list(analysis.warnings),
    }
    chunks = tuple(
        LogChunk(
            index=i,
            first_line=start + 1,
            lines=tuple(lines[start : start + chunk_lines]),
            marks={
                n: tuple(dict.fromkeys(marks[n]))
                for n in range(start + 1, min(start + chunk_lines, len(lines)) + 1)
                if n in marks
            },
        )
        for i, start in enumerate(range(0, len(lines), chunk_lines))
    )
    return Snapshot(summary=summary, chunks=chunks)


def check(summary: Any) -> dict[str, Any]:
    """The summary if this code can read it; ``SnapshotError`` saying why not otherwise."""
    if not isinstance(summary, dict):
        raise SnapshotError("the stored analysis is not a JSON object")
    version = summary.get("version")
    if version != SNAPSHOT_VERSION:
        raise SnapshotError(
            f"the stored analysis has version {version!r}; this code reads {SNAPSHOT_VERSION}"
        )
    for key in ("variant", "files", "statements", "elements", "error", "log"):
        if key not in summary:
            raise SnapshotError(f"the stored analysis lacks {key!r}")
    return summary


def line_states(file: dict[str, Any]) -> dict[int, str]:
    """Line -> executed | not_executed | doubtful for the file's non-blank lines."""
    return {n: STATE_NAMES[c] for n, c in enumerate(file["states"], 1) if c != BLANK}


def kept_lines(file: dict[str, Any]) -> set[int]:
    return {n for start, end in file["kept"] for n in range(start, end + 1)}
