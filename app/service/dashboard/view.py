"""The failure view's content, computed from an Analysis, a stored ranking and the feedback (pure).

Templates only lay this out: which lines a trace variant kept, why, which log line each log
statement matched, where the traceback passed, and where the ranked elements are.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.analysis.model import TRACE_ALIASES, VARIANTS, Analysis, Loc, State

MAX_MATCHES_SHOWN = 10
_ALIAS_OF = {variant: alias for alias, variant in TRACE_ALIASES.items()}


@dataclass(frozen=True)
class LogMatch:
    log_line: int
    text: str
    unique: bool  # the message matched this statement only


@dataclass(frozen=True)
class LogInfo:
    """A log statement starting on a line: its Algorithm 1 state and the messages it matched."""

    state: str  # executed | not_executed | doubtful
    callee: str
    static: bool
    matches: tuple[LogMatch, ...]


@dataclass(frozen=True)
class FrameMark:
    index: int  # 1-based, outermost first
    total: int
    function: str | None

    @property
    def innermost(self) -> bool:
        return self.index == self.total


@dataclass(frozen=True)
class RankBadge:
    rank: int
    element: str
    start_line: int
    end_line: int
    score: float | None
    reason: str


@dataclass(frozen=True)
class LineView:
    number: int
    code: str
    blank: bool
    kept: bool
    state: str | None  # the variant's state for this line (None for blank lines)
    rule: str
    why: str
    rank: int | None  # best rank of a ranked element covering the line
    badges: tuple[RankBadge, ...]  # ranked elements starting on this line
    log: LogInfo | None
    frame: FrameMark | None
    marked: bool  # an engineer marked it as faulty


@dataclass(frozen=True)
class Segment:
    """A run of lines the variant kept, or a run it pruned (shown greyed out and collapsible)."""

    pruned: bool
    lines: tuple[LineView, ...]

    @property
    def first(self) -> int:
        """First non-blank line (blank lines only ride along with a run)."""
        return next((line.number for line in self.lines if not line.blank), self.lines[0].number)

    @property
    def last(self) -> int:
        return next((line.number for line in reversed(self.lines) if not line.blank), self.lines[-1].number)

    @property
    def code_lines(self) -> int:
        return sum(1 for line in self.lines if not line.blank)


@dataclass(frozen=True)
class FileView:
    index: int
    path: str
    segments: tuple[Segment, ...]
    kept: int
    code_lines: int
    ranked: int  # ranked elements in this file


@dataclass(frozen=True)
class VariantOption:
    name: str
    alias: str | None
    kept: int
    total: int
    pruning_rate: float


@dataclass(frozen=True)
class FailureView:
    variant: str
    files: tuple[FileView, ...]
    variants: tuple[VariantOption, ...]
    error_message: str
    log_format: str
    log_messages: int
    log_statements: int
    warnings: tuple[str, ...]


def log_state(analysis: Analysis, sid: int | None) -> str:
    """Algorithm 1's verdict: unique match -> executed, no match -> not executed, else doubtful."""
    if sid is not None and sid in analysis.match.exe:
        return State.EXE.value
    if sid is not None and sid in analysis.match.nexe:
        return State.NEXE.value
    return State.DBT.value


def _log_infos(analysis: Analysis) -> dict[Loc, LogInfo]:
    messages = {m.index: m for m in analysis.log.messages}
    matched: dict[int, list[LogMatch]] = {}
    for index, sids in analysis.match.matches:
        message = messages.get(index)
        if message is None:
            continue
        for sid in sids:
            found = matched.setdefault(sid, [])
            if len(found) < MAX_MATCHES_SHOWN:
                found.append(LogMatch(message.line, message.text[:500], len(sids) == 1))
    infos: dict[Loc, LogInfo] = {}
    for statement in analysis.log_statements:
        infos[Loc(statement.path, statement.line)] = LogInfo(
            state=log_state(analysis, statement.sid) if statement.is_static else State.DBT.value,
            callee=statement.callee,
            static=statement.is_static,
            matches=tuple(matched.get(statement.sid, ())) if statement.sid is not None else (),
        )
    return infos


def _frames(analysis: Analysis) -> dict[Loc, FrameMark]:
    total = len(analysis.error_frames)
    marks: dict[Loc, FrameMark] = {}
    for i, frame in enumerate(analysis.error_frames, 1):
        marks[Loc(frame.path, frame.line)] = FrameMark(i, total, frame.function)
    return marks


def _badges(
    ranking: Sequence[Mapping[str, Any]], path: str
) -> tuple[dict[int, int], dict[int, list[RankBadge]]]:
    best: dict[int, int] = {}
    starts: dict[int, list[RankBadge]] = {}
    for item in sorted(ranking, key=lambda i: int(i["rank"])):
        if item.get("path") != path:
            continue
        start, end, rank = int(item["start_line"]), int(item["end_line"]), int(item["rank"])
        score = item.get("score")
        badge = RankBadge(
            rank,
            str(item.get("id", "")),
            start,
            end,
            None if score is None else float(score),
            str(item.get("reason") or ""),
        )
        starts.setdefault(start, []).append(badge)
        for line in range(start, end + 1):
            best.setdefault(line, rank)
    return best, starts


def _segments(lines: list[LineView]) -> tuple[Segment, ...]:
    """Consecutive lines with the same kept/pruned status; blank lines join the run they sit in."""
    segments: list[Segment] = []
    run: list[LineView] = []
    pruned: bool | None = None
    for line in lines:
        if not line.blank and pruned is not None and (not line.kept) != pruned:
            segments.append(Segment(pruned, tuple(run)))
            run = []
        if not line.blank:
            pruned = not line.kept
        run.append(line)
    if run:
        segments.append(Segment(bool(pruned), tuple(run)))
    return tuple(segments)


def failure_view(
    analysis: Analysis,
    variant: str,
    ranking: Sequence[Mapping[str, Any]],
    marked: Collection[Loc] = (),
) -> FailureView:
    """Everything the failure page shows for one trace variant (canonical name, from VARIANTS)."""
    trace = analysis.traces[variant]
    logs = _log_infos(analysis)
    frames = _frames(analysis)
    marked_set = set(marked)
    files: list[FileView] = []
    for index, source in enumerate(analysis.program.files):
        best, starts = _badges(ranking, source.path)
        lines: list[LineView] = []
        for number, code in enumerate(source.lines, 1):
            loc = Loc(source.path, number)
            blank = number not in source.code_lines
            kept = loc in trace.kept
            evidence = trace.evidence.get(loc)
            state = (
                None
                if blank
                else (evidence.state.value if evidence else ("executed" if kept else "not_executed"))
            )
            lines.append(
                LineView(
                    number=number,
                    code=code,
                    blank=blank,
                    kept=kept or blank,
                    state=state,
                    rule=evidence.rule if evidence else "",
                    why=evidence.detail if evidence else "",
                    rank=best.get(number),
                    badges=tuple(starts.get(number, ())),
                    log=logs.get(loc),
                    frame=frames.get(loc),
                    marked=loc in marked_set,
                )
            )
        files.append(
            FileView(
                index=index,
                path=source.path,
                segments=_segments(lines),
                kept=sum(1 for loc in trace.kept if loc.path == source.path),
                code_lines=len(source.code_lines),
                ranked=sum(len(b) for b in starts.values()),
            )
        )
    options = tuple(
        VariantOption(
            name=name,
            alias=_ALIAS_OF.get(name),
            kept=len(analysis.traces[name].kept),
            total=analysis.traces[name].total,
            pruning_rate=analysis.traces[name].pruning_rate,
        )
        for name in VARIANTS
    )
    return FailureView(
        variant=variant,
        files=tuple(files),
        variants=options,
        error_message=analysis.log.error_message,
        log_format=analysis.log.format,
        log_messages=len(analysis.log.messages),
        log_statements=len(analysis.log_statements),
        warnings=analysis.warnings,
    )
