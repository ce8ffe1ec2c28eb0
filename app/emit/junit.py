"""JUnit XML with the ranking added: the input file's test cases gain ``tcfl.*`` properties and text.

When the input was JUnit, its document is kept as it was (re-parsed safely) and only gains
properties and a ``system-out`` note on failed cases; for other inputs a JUnit file is built
from the runs, so a CI's test-report view shows the triage either way.
"""

from __future__ import annotations

from xml.etree.ElementTree import Element, SubElement, tostring

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

from app.ci import CiReport, TriagedRun
from app.emit import span, status
from app.emit.text import history_lines, shown_items
from app.ingest.junit import case_id, parse_tree


def _note(item: TriagedRun, said: str | None) -> str:
    head = [f"tcfl: {said}"] if said else []
    if item.result is None:
        return "\n".join([*head, f"tcfl: not triaged: {item.problem}"])
    shown, left_out = shown_items(item.result.ranking)
    lines = [*head, f"tcfl: top {len(shown)} {item.result.level}s by {item.result.ranker}:"]
    for r in shown:
        score = "" if r.relevance is None else f"  score {r.relevance}/100"
        lines.append(f"  {r.rank}. {r.id}  {r.path}:{span(r.start_line, r.end_line)}{score}  ({r.reason})")
    if left_out:
        lines.append(f"  ({left_out} more ranked with score 0/100 left out)")
    if item.result.history is not None:
        lines.extend(history_lines(item.result.history))
    return "\n".join(lines)


def _annotate(case: Element, item: TriagedRun, said: str | None) -> None:
    props = case.find("properties")
    if props is None:
        props = Element("properties")
        case.insert(0, props)
    values = [("tcfl.signature", item.signature), ("tcfl.triaged", "true" if item.result else "false")]
    if said:
        values.append(("tcfl.status", said))
    if item.result is not None:
        values.append(("tcfl.ranker", item.result.ranker))
        for r in item.result.ranking:
            values.append((f"tcfl.rank.{r.rank}", f"{r.path}:{span(r.start_line, r.end_line)} {r.id}"))
    else:
        values.append(("tcfl.problem", item.problem or ""))
    for name, value in values:
        SubElement(props, "property", {"name": name, "value": value})
    out = case.find("system-out")
    if out is None:
        out = SubElement(case, "system-out")
    out.text = ((out.text or "").rstrip("\n") + "\n\n" + _note(item, said)).lstrip("\n") + "\n"


def render(report: CiReport) -> str:
    by_id = {t.run.test_id: t for t in report.triaged}
    raw = report.results.raw if report.results is not None else None
    if raw is not None:
        root = parse_tree(raw, "input JUnit")
        for case in root.iter("testcase"):
            item = by_id.get(case_id(case.get("classname") or "", case.get("name") or ""))
            if item is not None:
                _annotate(case, item, status(report, item))
        try:
            return '<?xml version="1.0" encoding="utf-8"?>\n' + tostring(root, encoding="unicode") + "\n"
        except RecursionError:  # suites nested thousands deep: ElementTree writes recursively
            pass
    return _build(report, by_id)


def _build(report: CiReport, by_id: dict[str, TriagedRun]) -> str:
    suite = TestSuite(f"tcfl ({report.format})")
    runs = report.results.runs if report.results is not None else tuple(t.run for t in report.triaged)
    for run in runs:
        case = TestCase(run.test_id)
        if run.duration_s is not None:
            case.time = run.duration_s
        if run.verdict in ("fail", "error"):
            # the failure's text is its traceback and log, as pytest's own JUnit XML carries them
            found = Failure(run.error or "failed") if run.verdict == "fail" else Error(run.error or "error")
            found.text = run.log or run.error or None
            case.result = [found]
            if run.log:
                case.system_out = run.log
        elif run.verdict == "skip":
            case.result = [Skipped()]
        suite.add_testcase(case)
        item = by_id.get(run.test_id)
        if item is not None:
            _annotate(case._elem, item, status(report, item))
    xml = JUnitXml("tcfl")
    xml.add_testsuite(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + tostring(xml._elem, encoding="unicode") + "\n"
