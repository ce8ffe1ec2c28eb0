"""JUnit/xUnit XML (pytest --junitxml, avocado --xunit, Jenkins, most runners).

Parsed through defusedxml: no DTDs, no entity expansion, no external entities, so an XML bomb
or a file that reaches for /etc/passwd is refused before anything reads it. A file that is not
well-formed only because of its characters (bytes that are not UTF-8, a NUL or an escape code
in captured output, ``&#0;``) is read again with those characters replaced, and says so. The
tree is walked without recursion, so nested ``<testsuite>`` elements at any depth are read; a
test case that cannot be read is a warning naming it, and the others are still read.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from app.ingest.base import MAX_TESTS, IngestError, TestRun, first_line, split_params
from app.ingest.clean import bad_time, duration, shown, unreadable

FORMAT = "junit"
_PY_PATH = re.compile(r"[\w./\\-]+\.py\b")
_ROOTS = ("testsuites", "testsuite")
_RESULTS = {"error": "error", "failure": "fail", "skipped": "skip"}
# characters XML 1.0 does not allow, raw or as a character reference
_BAD_CHAR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_CHAR_REF = re.compile(r"&#(?:x([0-9A-Fa-f]{1,8})|([0-9]{1,10}));")
_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._-]{1,40})["']""")


def sniff(head: bytes) -> bool:
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"<"):
        return False
    return any(f"<{tag}".encode() in head for tag in _ROOTS)


def parse_tree(data: bytes, name: str, warnings: list[str] | None = None) -> Element:
    """The XML root, safely; ``IngestError`` for bombs, DTDs, truncation and non-JUnit XML."""
    try:
        root = _fromstring(data, name)
    except ParseError as exc:
        repaired, changed = _repaired(data)
        try:
            root = _fromstring(repaired, name) if changed else None
        except ParseError:
            root = None
        if root is None:
            raise IngestError(f"{name}: not well-formed XML ({exc}); is the file truncated?") from None
        if warnings is not None:
            warnings.append(
                f"{name}: {changed} character(s) that are not UTF-8 or not allowed in XML were replaced"
            )
    if root.tag not in _ROOTS:
        raise IngestError(f"{name}: XML root is <{shown(root.tag)[1:-1]}>, not <testsuites> or <testsuite>")
    return root


def _fromstring(data: bytes, name: str) -> Element:
    try:
        return fromstring(data, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise IngestError(
            f"{name}: refused unsafe XML ({type(exc).__name__}: DTDs and entities are not allowed)"
        ) from None


def _repaired(data: bytes) -> tuple[bytes, int]:
    """(the document as UTF-8 without the characters XML refuses, how many were replaced)."""
    declared = _ENCODING.match(data[:200])
    codec = declared.group(1).decode("ascii") if declared else "utf-8"
    try:
        codecs.lookup(codec)
    except LookupError:
        codec = "utf-8"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        codec = "utf-16"
    text = data.decode("utf-8-sig" if codec.lower().replace("_", "-") == "utf-8" else codec, "replace")
    changed = text.count("\ufffd") - data.count(b"\xef\xbf\xbd")

    def reference(found: re.Match[str]) -> str:
        nonlocal changed
        code = int(found.group(1), 16) if found.group(1) else int(found.group(2))
        if code > 0x10FFFF or _BAD_CHAR.match(chr(code)):
            changed += 1
            return "\ufffd"
        return found.group(0)

    text = _CHAR_REF.sub(reference, _DECLARATION.sub("", text, count=1))
    text, raw = _BAD_CHAR.subn("\ufffd", text)
    return text.encode("utf-8"), max(changed, 0) + raw


def parse(data: bytes, name: str = "junit.xml", warnings: list[str] | None = None) -> list[TestRun]:
    """Every test case of the document, in order; unreadable cases become ``warnings``."""
    warnings = warnings if warnings is not None else []
    root = parse_tree(data, name, warnings)
    runs: list[TestRun] = []
    for n, (case, suite) in enumerate(_cases(root), 1):
        try:
            runs.append(_run(case, suite))
        except Exception as exc:  # one odd case must not lose the others: say which and go on
            warnings.append(unreadable(f"{name}: testcase #{n}", case.get("name") or "", exc))
        if len(runs) > MAX_TESTS:
            raise IngestError(f"{name}: more than {MAX_TESTS} test cases")
    return runs


def _cases(root: Element) -> Iterator[tuple[Element, Element]]:
    """(testcase, its suite) in document order of the suites; ``iter`` walks without recursion."""
    for suite in root.iter():
        if suite.tag in _ROOTS:
            for child in suite:
                if child.tag == "testcase":
                    yield child, suite


def case_id(classname: str, name: str) -> str:
    """pytest writes module.Class + name; avocado writes <unknown> + the whole id."""
    if not classname or classname == "<unknown>" or name.startswith(classname):
        return name
    return f"{classname}.{name}"


def _run(case: Element, suite: Element) -> TestRun:
    classname = case.get("classname") or ""
    name = case.get("name") or ""
    test_id = case_id(classname, name)
    verdict = "pass"
    error = ""
    report: list[str] = []
    streams: dict[str, str] = {}  # the first system-out and system-err, as junitparser read them
    for child in case:
        if child.tag in ("system-out", "system-err"):
            streams.setdefault(child.tag, child.text or "")
            continue
        kind = _RESULTS.get(child.tag) if isinstance(child.tag, str) else None
        if kind is None:
            continue
        if kind == "error":
            verdict = "error"
        elif kind == "fail":
            verdict = "fail" if verdict != "error" else verdict
        else:
            verdict = "skip" if verdict == "pass" else verdict
            continue
        message = child.get("message") or ""
        text = (child.text or "").strip()
        if text == "<unknown>":
            text = ""
        error = error or message or first_line(text)
        if text:
            report.append(text)
        elif message:
            report.append(message)
    outputs = [s for s in (streams.get("system-out"), streams.get("system-err")) if s and s.strip()]
    log = "\n".join([*(o.rstrip("\n") for o in outputs), *report])
    paths: list[str] = []
    file_attr = case.get("file")  # xunit1 and many runners
    if file_attr:
        paths.append(file_attr)
    paths.extend(_PY_PATH.findall(name))
    _, params = split_params(test_id)
    seconds, problem = duration(case.get("time"))
    return TestRun(
        test_id=test_id,
        verdict=verdict,
        log=log if verdict != "pass" or log.strip() else "",
        error=error,
        duration_s=seconds,
        script_paths=tuple(dict.fromkeys(paths)),
        suite=suite.get("name") or FORMAT,
        params=params,
        warnings=(bad_time(test_id, "time", problem),) if problem else (),
    )
