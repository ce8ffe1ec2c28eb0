"""The failure page's content, from a stored analysis snapshot, the ranking and feedback (pure).

Nothing here runs the analysis: the page shows what ranked the failure. Templates only lay this
out: each line's trace state and why, which log line each log statement matched (and back),
the traceback frames, the ranked elements with their full code, scaled scores and evidence, and
the log windows around the matched lines and the failure.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.analysis.model import Loc
from app.analysis.snapshot import kept_lines, line_states
from app.store.snapshots import LogLine

MAX_MATCHES_SHOWN = 10
LOG_CONTEXT = 2  # lines shown around a matched log line
ERROR_CONTEXT_BEFORE = 25  # lines shown before the error message (the traceback sits there)
MAX_ANCHORS = 80  # matched log lines that open a window on the page
MAX_NEW_LINES = 200  # lines only the failure printed that the page loads and lists first
FOCUS_CONTEXT = 150  # lines shown around a log line asked for with ?log=N
MAX_WINDOW_LINES = 2000  # log lines one page shows at most; gaps load the rest on demand
LOAD_STEP = 500  # lines one "show more" loads
LOG_LEAD = 60  # lines loaded before a log line asked for from a gap


@dataclass(frozen=True)
class LogMatch:
    log_line: int
    unique: bool  # the log line matched this statement only


@dataclass(frozen=True)
class LogInfo:
    """A log statement starting on a line: its Algorithm 1 state and the log lines it matched."""

    index: int  # in the snapshot's statements
    state: str  # executed | not_executed | doubtful
    callee: str
    static: bool
    matches: tuple[LogMatch, ...]
    match_count: int


@dataclass(frozen=True)
class FrameMark:
    index: int  # 1-based, outermost first
    total: int
    function: str | None
    log_line: int
    path: str
    line: int
    file: int | None

    @property
    def innermost(self) -> bool:
        return self.index == self.total


@dataclass(frozen=True)
class RankBadge:
    rank: int
    element: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class LineView:
    number: int
    code: str
    blank: bool
    kept: bool
    state: str | None  # executed | not_executed | doubtful; None for blank lines
    rule: str
    why: str
    rank: int | None  # best rank of a ranked element covering the line
    badges: tuple[RankBadge, ...]  # ranked elements starting on this line
    log: LogInfo | None
    frame: FrameMark | None
    marked: bool  # an engineer marked it as faulty


@dataclass(frozen=True)
class Segment:
    """A run of lines the variant kept, or a run it pruned (shown collapsed, expandable)."""

    pruned: bool
    lines: tuple[LineView, ...]

    @property
    def first(self) -> int:
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
    ranked: int
    states: Mapping[str, int]  # state -> number of lines


@dataclass(frozen=True)
class EvidenceView:
    channel: str
    weight: float
    share: int  # 0-100: this record's part of the element's evidence weight
    detail: str
    path: str
    line: int
    file: int | None
    source: str | None
    source_line: int | None


@dataclass(frozen=True)
class RankView:
    rank: int
    id: str
    path: str
    file: int | None  # index of the file in the snapshot; None when the path is unknown
    start_line: int
    end_line: int
    score: float | None
    scaled: int | None  # 0-100, relative to the top-ranked element's score
    reason: str
    rationale: str | None
    evidence: tuple[EvidenceView, ...]
    code: tuple[tuple[int, str], ...]  # the element's full code, every line


@dataclass(frozen=True)
class LogRow:
    number: int
    text: str
    targets: tuple[tuple[int, str, int], ...]  # (file index, path, line) of the statements it matched
    unique: bool  # matched exactly one statement
    error: bool  # part of the error message
    frame: tuple[int, int] | None  # (file index, line) of the script frame printed here
    new: bool = False  # no passing run of the test printed this line (``app.history.newlines``)


@dataclass(frozen=True)
class LogGap:
    first: int
    last: int

    @property
    def size(self) -> int:
        return self.last - self.first + 1


@dataclass(frozen=True)
class FailureView:
    variant: str
    level: str
    files: tuple[FileView, ...]
    ranking: tuple[RankView, ...]
    error_message: str
    error_lines: tuple[int, int] | None
    frames: tuple[FrameMark, ...]
    log_format: str
    log_lines: int
    log_messages: int
    log_matched: int
    log_statements: int
    log: tuple[LogRow | LogGap, ...]
    warnings: tuple[str, ...]
    new_lines: tuple[int, ...] = ()  # log lines no passing run printed (the page lists them first)
    new_rows: tuple[LogRow, ...] = ()  # those of them the page has the text of
    first_file: int | None = None  # the file of the first-ranked element: the page opens on it


def _file_index(summary: Mapping[str, Any]) -> dict[str, int]:
    return {f["path"]: i for i, f in enumerate(summary["files"])}


def _log_infos(summary: Mapping[str, Any]) -> dict[Loc, LogInfo]:
    infos: dict[Loc, LogInfo] = {}
    for i, s in enumerate(summary["statements"]):
        infos[Loc(s["path"], s["line"])] = LogInfo(
            index=i,
            state=s["state"],
            callee=s["callee"],
            static=bool(s["static"]),
            matches=tuple(LogMatch(int(n), bool(u)) for n, u in s["matches"][:MAX_MATCHES_SHOWN]),
            match_count=int(s["match_count"]),
        )
    return infos


def _frames(summary: Mapping[str, Any]) -> list[tuple[Loc, FrameMark]]:
    frames = summary["error"]["frames"]
    files = _file_index(summary)
    return [
        (
            Loc(f["path"], f["line"]),
            FrameMark(
                i,
                len(frames),
                f.get("function"),
                int(f.get("log_line") or 0),
                f["path"],
                int(f["line"]),
                files.get(f["path"]),
            ),
        )
        for i, f in enumerate(frames, 1)
    ]


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


def scale_scores(scores: Sequence[float | None]) -> list[int | None]:
    """Scores as 0-100 relative to the highest; None stays None (the model gives ranks, not scores)."""
    known = [s for s in scores if s is not None]
    top = max(known, default=0.0)
    if top <= 0:
        return [None if s is None else (100 if known and s == top else 0) for s in scores]
    return [None if s is None else max(0, min(100, round(100 * s / top))) for s in scores]


def _evidence(item: Mapping[str, Any], files: Mapping[str, int]) -> tuple[EvidenceView, ...]:
    records = [e for e in item.get("evidence") or () if isinstance(e, Mapping)]
    total = sum(abs(float(e.get("weight") or 0.0)) for e in records)
    out = []
    for e in sorted(records, key=lambda r: -abs(float(r.get("weight") or 0.0))):
        weight = float(e.get("weight") or 0.0)
        path = str(e.get("path") or item.get("path") or "")
        source_line = e.get("source_line")
        out.append(
            EvidenceView(
                channel=str(e.get("channel") or ""),
                weight=weight,
                share=round(100 * abs(weight) / total) if total > 0 else 0,
                detail=str(e.get("detail") or ""),
                path=path,
                line=int(e.get("line") or 0),
                file=files.get(path),
                source=None if e.get("source") is None else str(e.get("source"))[:300],
                source_line=int(source_line) if isinstance(source_line, int) else None,
            )
        )
    return tuple(out)


def rank_views(summary: Mapping[str, Any], ranking: Sequence[Mapping[str, Any]]) -> tuple[RankView, ...]:
    files = _file_index(summary)
    items = sorted(ranking, key=lambda i: int(i["rank"]))
    # the result's own 0-100 relevance (in rank order); results stored before it: scaled scores
    stored = [i.get("relevance") for i in items]
    if items and all(isinstance(r, int) for r in stored):
        scaled = [int(r) for r in stored]
    else:
        scaled = scale_scores([None if i.get("score") is None else float(i["score"]) for i in items])
    out = []
    for item, pct in zip(items, scaled, strict=True):
        path = str(item.get("path", ""))
        index = files.get(path)
        start, end = int(item["start_line"]), int(item["end_line"])
        source = summary["files"][index]["lines"] if index is not None else []
        code = tuple((n, source[n - 1]) for n in range(start, min(end, len(source)) + 1) if n >= 1)
        rationale = item.get("rationale") or next(
            (
                e.get("detail")
                for e in item.get("evidence") or ()
                if isinstance(e, Mapping) and e.get("channel") == "model"
            ),
            None,
        )
        out.append(
            RankView(
                rank=int(item["rank"]),
                id=str(item.get("id", "")),
                path=path,
                file=index,
                start_line=start,
                end_line=end,
                score=None if item.get("score") is None else float(item["score"]),
                scaled=pct,
                reason=str(item.get("reason") or ""),
                rationale=str(rationale) if rationale else None,
                evidence=_evidence(item, files),
                code=code,
            )
        )
    return tuple(out)


def log_windows(
    summary: Mapping[str, Any], focus: int | None = None, new_lines: Sequence[int] = ()
) -> list[tuple[int, int]]:
    """Log line ranges a page shows: the failure, the lines only failures print (``new_lines``),
    the matched lines, and ``focus``; merged, capped."""
    total = int(summary["log"]["lines"])
    if total == 0:
        return []
    wanted: list[tuple[int, int]] = []
    if focus is not None and 1 <= focus <= total:
        wanted.append((focus - FOCUS_CONTEXT // 3, focus + FOCUS_CONTEXT))
    error = summary["error"].get("log_lines")
    if error:
        wanted.append((int(error[0]) - ERROR_CONTEXT_BEFORE, int(error[1]) + LOG_CONTEXT))
    for n in summary["error"].get("log_frame_lines") or ():
        wanted.append((int(n) - 1, int(n) + 1))
    wanted.extend((n, n) for n in list(new_lines)[:MAX_NEW_LINES])
    anchors = sorted({int(s["matches"][0][0]) for s in summary["statements"] if s["matches"]})
    for n in anchors[:MAX_ANCHORS]:
        wanted.append((n - LOG_CONTEXT, n + LOG_CONTEXT))
    wanted.append((1, 3))
    shown: list[tuple[int, int]] = []
    budget = MAX_WINDOW_LINES
    for first, last in wanted:  # in priority order: what does not fit is left to "show more"
        first, last = max(1, first), min(total, last)
        size = last - first + 1
        if size > budget:
            continue
        budget -= size
        shown.append((first, last))
    shown.sort()
    merged: list[tuple[int, int]] = []
    for first, last in shown:
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def log_rows(
    summary: Mapping[str, Any], lines: Sequence[LogLine], new_lines: Collection[int] = ()
) -> list[LogRow]:
    """The log lines read from the store, with what they matched, whether they tell the error and
    whether only failures print them."""
    new = set(new_lines)
    files = _file_index(summary)
    statements = summary["statements"]
    error = summary["error"].get("log_lines")
    frames = {
        int(f["log_line"]): (files[f["path"]], int(f["line"]))
        for f in summary["error"]["frames"]
        if f.get("log_line") and f["path"] in files
    }
    frame_lines = set(summary["error"].get("log_frame_lines") or ())
    rows = []
    for line in lines:
        targets = tuple(
            (files[statements[i]["path"]], statements[i]["path"], int(statements[i]["line"]))
            for i in line.statements
            if 0 <= i < len(statements) and statements[i]["path"] in files
        )
        in_error = bool(error) and int(error[0]) <= line.number <= int(error[1])
        rows.append(
            LogRow(
                number=line.number,
                text=line.text,
                targets=targets,
                unique=len(targets) == 1,
                error=in_error or line.number in frame_lines,
                frame=frames.get(line.number),
                new=line.number in new,
            )
        )
    return rows


def with_gaps(rows: Sequence[LogRow], total: int) -> tuple[LogRow | LogGap, ...]:
    """Rows in order with a gap wherever lines were left out (before, between and after the windows)."""
    out: list[LogRow | LogGap] = []
    expected = 1
    for row in rows:
        if row.number > expected:
            out.append(LogGap(expected, row.number - 1))
        out.append(row)
        expected = row.number + 1
    if total >= expected:
        out.append(LogGap(expected, total))
    return tuple(out)


def failure_view(
    summary: Mapping[str, Any],
    ranking: Sequence[Mapping[str, Any]],
    lines: Sequence[LogLine] = (),
    marked: Collection[Loc] = (),
    new_lines: Sequence[int] = (),
) -> FailureView:
    """Everything the failure page shows; ``lines`` are the stored log lines of ``log_windows``;
    ``new_lines`` those no passing run of the test printed (the triage's history says which)."""
    logs = _log_infos(summary)
    frame_list = _frames(summary)
    frames = dict(frame_list)
    marked_set = set(marked)
    ranks = rank_views(summary, ranking)
    rules: list[str] = summary.get("rules") or []
    files: list[FileView] = []
    for index, file in enumerate(summary["files"]):
        path = file["path"]
        states = line_states(file)
        kept = kept_lines(file)
        reasons = {int(n): (rules[r] if 0 <= r < len(rules) else "", d) for n, r, d in file["reasons"]}
        best: dict[int, int] = {}
        starts: dict[int, list[RankBadge]] = {}
        for item in ranks:
            if item.path != path:
                continue
            starts.setdefault(item.start_line, []).append(
                RankBadge(item.rank, item.id, item.start_line, item.end_line)
            )
            for n in range(item.start_line, item.end_line + 1):
                best.setdefault(n, item.rank)
        lines_view: list[LineView] = []
        for number, code in enumerate(file["lines"], 1):
            loc = Loc(path, number)
            state = states.get(number)
            rule, why = reasons.get(number, ("", ""))
            lines_view.append(
                LineView(
                    number=number,
                    code=code,
                    blank=state is None,
                    kept=state is None or number in kept,
                    state=state,
                    rule=rule,
                    why=why,
                    rank=best.get(number),
                    badges=tuple(starts.get(number, ())),
                    log=logs.get(loc),
                    frame=frames.get(loc),
                    marked=loc in marked_set,
                )
            )
        counts: dict[str, int] = {}
        for state in states.values():
            counts[state] = counts.get(state, 0) + 1
        files.append(
            FileView(
                index=index,
                path=path,
                segments=_segments(lines_view),
                kept=len(kept),
                code_lines=len(states),
                ranked=sum(len(b) for b in starts.values()),
                states=counts,
            )
        )
    error = summary["error"].get("log_lines")
    log = summary["log"]
    rows = log_rows(summary, lines, new_lines)
    first = next((f.index for f in files if ranks and f.path == ranks[0].path), None)
    return FailureView(
        variant=summary["variant"],
        level=summary.get("level", ""),
        files=tuple(files),
        ranking=ranks,
        error_message=summary["error"]["message"],
        error_lines=(int(error[0]), int(error[1])) if error else None,
        frames=tuple(mark for _, mark in frame_list),
        log_format=log["format"],
        log_lines=int(log["lines"]),
        log_messages=int(log["messages"]),
        log_matched=int(log.get("matched_lines", 0)),
        log_statements=len(summary["statements"]),
        log=with_gaps(rows, int(log["lines"])),
        warnings=tuple(summary.get("warnings") or ()),
        new_lines=tuple(new_lines),
        new_rows=tuple(r for r in rows if r.new),
        first_file=first,
    )
