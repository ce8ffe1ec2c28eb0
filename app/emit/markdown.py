"""Markdown for a job summary (``$GITHUB_STEP_SUMMARY``) or a merge-request comment."""

from __future__ import annotations

from app.ci import CiReport
from app.emit import span, status
from app.emit.text import history_lines, shown_items

MAX_CODE_LINES = 8
MAX_ITEM_WARNINGS = 5  # per untriaged test: enough to say why, short enough for a job summary


def cell(text: str) -> str:
    """Table-cell safe: one line, pipes and backticks escaped."""
    flat = " ".join(text.split())
    return flat.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`").replace("<", "&lt;")[:300]


def code_span(text: str) -> str:
    flat = " ".join(text.split())
    fence = "``" if "`" in flat else "`"
    return f"{fence} {flat} {fence}" if fence == "``" else f"`{flat}`"


def render(report: CiReport) -> str:
    s = report.to_dict()["summary"]
    out = [
        f"## tcfl: {s['failed']} failed test(s) in {s['groups']} group(s)",
        "",
        f"{s['tests']} tests: {s['passed']} passed, {s['skipped']} skipped, {s['failed']} failed; "
        f"{s['triaged']} triaged.",
        "",
    ]
    if report.triaged:
        out += ["| Test | Status | Error | Top suspect |", "| --- | --- | --- | --- |"]
        for t in report.triaged:
            top = t.top or f"not triaged: {t.problem}"
            said = status(report, t) or "-"
            out.append(f"| {cell(t.run.test_id)} | {cell(said)} | {cell(t.error)} | {cell(top)} |")
        out.append("")
    for n, group in enumerate(report.groups, 1):
        out.append(f"### Group {n}: {cell(group.error) or '(no error message)'}")
        out.append("")
        out.append(f"{len(group.members)} test(s); top location {code_span(group.top or '-')}.")
        out.append("")
        for i in group.members:
            item = report.triaged[i]
            out.append(f"#### {cell(item.run.test_id)}")
            out.append("")
            said = status(report, item)
            if said:
                out += [f"**{cell(said)}**", ""]
            if item.result is not None and item.result.history is not None:
                out += [f"> {cell(line)}" for line in history_lines(item.result.history)[:2]]
                out.append("")
            if item.result is None:
                out.append(f"Not triaged: {cell(item.problem or '')}")
                out.append("")
                # why: a script refused (a link out of the checkout, a FIFO) or a value the reader cut
                out += [f"> warning: {cell(w)}" for w in item.warnings[:MAX_ITEM_WARNINGS]]
                if item.warnings:
                    out.append("")
                continue
            r = item.result
            model = f" ({r.model})" if r.model else ""
            out.append(f"Ranked by {r.ranker}{model}, level {r.level}, trace {r.variant}.")
            out.append("")
            out += ["| Rank | Score | Element | Location | Why |", "| ---: | ---: | --- | --- | --- |"]
            shown, left_out = shown_items(r.ranking)
            for ranked in shown:
                where = f"{ranked.path}:{span(ranked.start_line, ranked.end_line)}"
                score = "-" if ranked.relevance is None else str(ranked.relevance)
                why = cell(ranked.reason)
                out.append(f"| {ranked.rank} | {score} | {cell(ranked.id)} | {code_span(where)} | {why} |")
            out.append("")
            if left_out:
                out += [f"{left_out} more ranked with score 0 left out.", ""]
            if r.ranking:
                code = r.ranking[0].code.splitlines()[:MAX_CODE_LINES]
                fence = "````" if any("```" in line for line in code) else "```"
                out += [f"{fence}python", *code, fence, ""]
    if report.untriaged:
        out.append("### Not triaged")
        out.append("")
        out += [f"- {cell(t.run.test_id)}: {cell(t.problem or '')}" for t in report.untriaged]
        out.append("")
    for warning in report.warnings:
        out.append(f"> warning: {cell(warning)}")
    return "\n".join(out).rstrip() + "\n"
