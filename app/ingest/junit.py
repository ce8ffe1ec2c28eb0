"""JUnit/xUnit XML (pytest --junitxml, avocado --xunit, Jenkins, most runners).

Parsed through defusedxml: no DTDs, no entity expansion, no external entities, so an XML bomb
or a file that reaches for /etc/passwd is refused before junitparser sees it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring
from junitparser import Error, Failure, JUnitXml, JUnitXmlError, Skipped, TestCase, TestSuite

from app.ingest.base import MAX_TESTS, IngestError, TestRun, first_line, split_params

FORMAT = "junit"
_PY_PATH = re.compile(r"[\w./\\-]+\.py\b")
_ROOTS = ("testsuites", "testsuite")


def sniff(head: bytes) -> bool:
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"<"):
        return False
    return any(f"<{tag}".encode() in head for tag in _ROOTS)


def parse_tree(data: bytes, name: str) -> Element:
    """The XML root, safely; ``IngestError`` for bombs, DTDs, truncation and non-JUnit XML."""
    try:
        root = fromstring(data, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise IngestError(
            f"{name}: refused unsafe XML ({type(exc).__name__}: DTDs and entities are not allowed)"
        ) from None
    except ParseError as exc:
        raise IngestError(f"{name}: not well-formed XML ({exc}); is the file truncated?") from None
    if root.tag not in _ROOTS:
        raise IngestError(f"{name}: XML root is <{root.tag}>, not <testsuites> or <testsuite>")
    return root


def parse(data: bytes, name: str = "junit.xml") -> list[TestRun]:
    root = parse_tree(data, name)
    try:
        xml = JUnitXml.fromroot(root)
    except JUnitXmlError as exc:
        raise IngestError(f"{name}: {exc}") from None
    runs: list[TestRun] = []
    for suite in _suites(xml):
        for case in suite:
            if not isinstance(case, TestCase):
                continue
            runs.append(_run(case, suite))
            if len(runs) > MAX_TESTS:
                raise IngestError(f"{name}: more than {MAX_TESTS} test cases")
    return runs


def _suites(xml: JUnitXml) -> Iterator[TestSuite]:
    for suite in xml:
        yield suite
        yield from _nested(suite)


def _nested(suite: TestSuite) -> Iterator[TestSuite]:
    for inner in suite.iterchildren(TestSuite):
        yield inner
        yield from _nested(inner)


def case_id(classname: str, name: str) -> str:
    """pytest writes module.Class + name; avocado writes <unknown> + the whole id."""
    if not classname or classname == "<unknown>" or name.startswith(classname):
        return name
    return f"{classname}.{name}"


def _run(case: TestCase, suite: TestSuite) -> TestRun:
    classname = case.classname or ""
    name = case.name or ""
    test_id = case_id(classname, name)
    verdict = "pass"
    error = ""
    report: list[str] = []
    for result in case.result:
        if isinstance(result, Error):
            verdict = "error"
        elif isinstance(result, Failure):
            verdict = "fail" if verdict != "error" else verdict
        elif isinstance(result, Skipped):
            verdict = "skip" if verdict == "pass" else verdict
            continue
        message = result.message or ""
        text = (result.text or "").strip()
        if text in ("", "<unknown>"):
            text = ""
        error = error or message or first_line(text)
        if text:
            report.append(text)
        elif message:
            report.append(message)
    outputs = [s for s in (case.system_out, case.system_err) if s and s.strip()]
    log = "\n".join([*(o.rstrip("\n") for o in outputs), *report])
    paths: list[str] = []
    file_attr = case._elem.get("file")  # xunit1 and many runners; junitparser has no accessor
    if file_attr:
        paths.append(file_attr)
    paths.extend(_PY_PATH.findall(name))
    _, params = split_params(test_id)
    time = case.time
    return TestRun(
        test_id=test_id,
        verdict=verdict,
        log=log if verdict != "pass" or log.strip() else "",
        error=error,
        duration_s=float(time) if time is not None else None,
        script_paths=tuple(dict.fromkeys(paths)),
        suite=suite.name or FORMAT,
        params=params,
    )
