"""Plain text for a terminal or a job log: one section per failure group, today's triage report inside."""

from __future__ import annotations

from app.ci import CiReport


def render(report: CiReport) -> str:
    from app.cli.triage import format_result  # the one terminal rendering of a triage

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
            out.append(f"--- {item.run.test_id} [{item.run.verdict}]")
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
