"""Plain text for a terminal or a job log: one section per failure group, today's triage report inside."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from app.emit import status
from app.localize.result import RankedItem, TriageResult

if TYPE_CHECKING:
    from app.ci import CiReport

CODE_PREVIEW_LINES = 4  # code lines shown under each ranked element
EVIDENCE_LINES = 3  # evidence records shown under each ranked element


def printable(text: str) -> str:
    """Text from a log made safe for a terminal: control characters shown as escapes, not obeyed."""
    return "".join(
        ch if ch in "\t\n" or (ch.isprintable() and ch != "\x7f") else ch.encode("unicode_escape").decode()
        for ch in text
    )


def render(report: CiReport) -> str:
    """``tcfl ci``'s text: each failure group, and the triage report of each of its tests."""
    s = report.to_dict()["summary"]
    out = [
        f"tcfl ci: {s['tests']} tests ({s['passed']} passed, {s['skipped']} skipped, {s['failed']} failed); "
        f"{s['triaged']} triaged in {s['groups']} group(s) [{report.format}]",
    ]
    for n, group in enumerate(report.groups, 1):
        members = [report.triaged[i] for i in group.members]
        out.append("")
        out.append("=" * 78)
        out.append(f"Group {n}: {group.error or '(no error message)'}")
        out.append(f"  {len(members)} test(s); top location: {group.top or '-'}; signature {group.signature}")
        out.append("=" * 78)
        for item in members:
            out.append("")
            said = status(report, item)
            out.append(f"--- {item.run.test_id} [{item.run.verdict}]" + (f" - {said}" if said else ""))
            if item.scripts:
                out.append(f"scripts: {', '.join(item.scripts)}")
            if item.result is None:
                out.append(f"NOT TRIAGED: {item.problem}")
                out.extend(f"warning: {w}" for w in item.warnings)
            else:
                out.append(format_result(item.result, list(item.warnings)).rstrip())
    if report.untriaged:
        out.append("")
        out.append("Not triaged:")
        out.extend(f"  {t.run.test_id}: {t.problem}" for t in report.untriaged)
    out.extend(f"warning: {w}" for w in report.warnings)
    return "\n".join(out) + "\n"


def format_result(result: TriageResult, extra_warnings: Sequence[str] | None = None) -> str:
    """The report: the ranking with code previews, then where it came from and what it cost.

    ``tcfl triage`` passes no warnings (it prints them on stderr, once each); a report that stands
    alone (``tcfl ci``'s text) passes them and gets them at the end, the result's own included.
    """
    out: list[str] = []
    out.append(f"Error: {printable(result.error_message) or '(no error message found in the log)'}")
    ranker = result.ranker if result.model is None else f"{result.ranker} ({result.model})"
    if result.fallback_reason:
        wanted = result.options.ranker if result.options is not None else "auto"
        who = "the model" if wanted in ("auto", "llm") else f"the {wanted} ranker"
        ranker += f" (fallback: {who} did not answer; see the warning)"
    listed, left_out = shown_items(result.ranking)
    notes = [] if len(result.ranking) == result.k else [f"of {result.k} asked: the trace holds no more"]
    if left_out:
        notes.append(f"{left_out} more scored 0/100 not listed")
    asked = f" ({'; '.join(notes)})" if notes else ""
    out.append(
        f"Top {len(listed)} {result.level}s{asked} by {ranker}; trace {result.variant}: "
        f"{result.kept_lines}/{result.total_lines} lines kept ({result.pruning_rate:.0%} pruned)"
    )
    if not result.evidence_found:
        out.append("No evidence in the log: this ranking is a guess (see the warning)")
    if result.history is not None:
        out.extend(history_lines(result.history))
    out.append("")
    for item in listed:
        span = (
            f"{item.start_line}" if item.start_line == item.end_line else f"{item.start_line}-{item.end_line}"
        )
        score = "" if item.relevance is None else f"  score {item.relevance}/100"
        out.append(f"{item.rank:>2}. {item.id}  {item.path}:{span}{score}")
        evidence = item.evidence[:EVIDENCE_LINES]
        why = why_text(item.reason, evidence)
        if why:
            out.append(f"    why: {printable(why)}")
        for ev in evidence:
            origin = f"  <- log line {ev.source_line}" if ev.source_line else ""
            detail = printable(ev.detail)
            out.append(f"      [{ev.channel}] {ev.path}:{ev.line} {detail} ({ev.weight:+.2f}){origin}")
        out.extend(_preview(item))
    if not result.ranking:
        out.append("(nothing to rank: no code is left in the trace)")
    out.append("")
    if result.tokens is not None:
        out.append(f"Tokens: {result.tokens[0]} in, {result.tokens[1]} out")
    timings = f"static {result.static_ms:.1f} ms, model {result.model_ms:.1f} ms"
    out.append(f"Time: {timings}, total {result.total_ms:.1f} ms")
    counts = result.postprocess
    if counts.invalid or counts.duplicates or counts.mismatches:
        out.append(
            f"Post-processing: {counts.invalid} invalid, {counts.duplicates} duplicate, "
            f"{counts.mismatches} mismatched ({counts.repaired} repaired)"
        )
    if extra_warnings is not None:
        for warning in dict.fromkeys([*extra_warnings, *result.warnings]):
            out.append(f"warning: {printable(warning)}")
    return "\n".join(out) + "\n"


def shown_items(ranking: Sequence[RankedItem]) -> tuple[list[RankedItem], int]:
    """The items worth reading and how many were left out: below the first item, one whose score
    rounds to 0/100 is padding (nothing points at it), so a reader is not shown it."""
    shown = [item for i, item in enumerate(ranking) if i == 0 or item.relevance is None or item.relevance > 0]
    return shown, len(ranking) - len(shown)


def why_text(reason: str, evidence: Sequence[Any]) -> str:
    """The ranker's reason without the parts the evidence lines below it already say."""
    said = {ev.detail for ev in evidence}
    return "; ".join(part for part in reason.split("; ") if part and part not in said)


def _preview(item: RankedItem) -> list[str]:
    """Up to ``CODE_PREVIEW_LINES`` of the element's code, around the first line its evidence names
    (the failing line of a long block would be cut off by its first lines alone)."""
    code = item.code.splitlines()
    if len(code) <= CODE_PREVIEW_LINES:
        return [f"    | {line}" for line in code]
    lines = [
        ev.line
        for ev in item.evidence
        if ev.path == item.path and item.start_line <= ev.line <= item.end_line
    ]
    focus = (lines[0] - item.start_line) if lines else 0
    first = max(0, min(focus - 1, len(code) - CODE_PREVIEW_LINES))
    out = []
    if first:
        out.append(f"    | ... ({first} lines above)")
    for offset, line in enumerate(code[first : first + CODE_PREVIEW_LINES]):
        mark = ">" if lines and first + offset == focus else "|"
        out.append(f"    {mark} {line}")
    rest = len(code) - first - CODE_PREVIEW_LINES
    if rest > 0:
        out.append(f"    | ... ({rest} more lines)")
    return out


HUNKS_SHOWN = 3  # changed regions listed under the first bad version
NEW_LINES_SHOWN = 10  # numbers of the log lines only the failure printed


def where_ran(commit: str | None, job: str | None, version: str | None) -> str:
    """A run's place as people name it: commit and job when CI said them, else the script version."""
    parts = [f"commit {commit[:12]}" if commit else "", f"job {job}" if job else ""]
    named = ", ".join(p for p in parts if p)
    return (
        f"{named} (script version {version})" if named and version else named or f"script version {version}"
    )


def history_lines(history: Mapping[str, Any]) -> list[str]:
    """What the test's CI history said: its verdict, the runs fused, the first bad version and
    what changed in it."""
    test = printable(str(history.get("test", "")))
    if not history.get("runs_used"):
        return [f"History of {test}: {printable(str(history.get('note') or 'no runs recorded'))}"]
    verdict = str(history.get("classification") or "unknown") + (", flaky" if history.get("flaky") else "")
    out = [
        f"History of {test}: {verdict}; fused {history['runs_used']} of {history['runs_read']} recorded runs"
    ]
    new = history.get("new_lines") or []
    if new:
        more = ", ..." if len(new) > NEW_LINES_SHOWN else ""
        shown = ", ".join(str(n) for n in new[:NEW_LINES_SHOWN]) + more
        out.append(f"New in this failure: {len(new)} log line(s) no passing run printed (lines {shown})")
    found = history.get("first_bad_version") or {}
    if found.get("first_bad") or found.get("first_bad_commit"):
        bad = where_ran(found.get("first_bad_commit"), found.get("first_bad_job"), found.get("first_bad"))
        good = where_ran(found.get("last_good_commit"), found.get("last_good_job"), found.get("last_good"))
        out.append(f"First bad version: {bad}" + (f" (last good: {good})" if found.get("last_good") else ""))
    if found.get("note"):
        out.append(f"  {printable(str(found['note']))}")
    hunks = found.get("hunks") or []
    for hunk in hunks[:HUNKS_SHOWN]:
        out.append(
            f"  changed {hunk['path']}:{hunk['new_start']} (+{hunk['new_count']} -{hunk['old_count']})"
        )
        out.extend(f"    - {printable(line)}" for line in hunk["old_lines"][:CODE_PREVIEW_LINES])
        out.extend(f"    + {printable(line)}" for line in hunk["new_lines"][:CODE_PREVIEW_LINES])
    if len(hunks) > HUNKS_SHOWN:
        out.append(f"  ... ({len(hunks) - HUNKS_SHOWN} more changed regions)")
    return out
