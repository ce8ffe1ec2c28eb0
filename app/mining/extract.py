"""Pure steps of mining: the failure log cut from a commit message, its frames, the fix's faulty lines,
and a confidence grade with its reasons.

People paste logs into commit messages in many ways: fenced, indented, quoted with ``>``, wrapped
at 72 columns, with or without the runner's prefixes. A log is recognised by paragraphs (blank
lines apart, a fenced block counts as one) most of whose lines look like log output, holding at
least one strong marker (a traceback, a frame, a pytest ``E`` line, an exception line, a failing
status line, or a timestamped error). The cut is verbatim: paragraphs are joined as they stood.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatch
from pathlib import PurePosixPath

from app.analysis.logparse import match_script_path, parse_log
from app.analysis.model import Frame
from app.mining.versions import describe, frame_evidence, message_added_by_fix

# Markers, each searched on one line (no pattern can backtrack across lines).
_EXCEPTION = re.compile(
    r"^(?:[\s>|`]*E?\s*|.*?(?:\d\d:\d\d\S*|ERROR|CRITICAL|FAILED|FAIL)\W{0,3}?[\s|:>\]-]+\s*)"
    r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Failure|Exit|Timeout|Fail|Failed))(?::\s|:$|$)"
)
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d)?|(?:^|[\s\[])\d\d:\d\d:\d\d(?:[.,]\d+)?\b")
# The markers a line holds when all of their patterns are found on it.
_FOUND_MARKERS: dict[str, tuple[re.Pattern[str], ...]] = {
    "traceback": (re.compile(r"Traceback \(most recent call last\)"),),
    "frame": (re.compile(r'File "([^"\n]+)", line (\d+)|File (/[^",\s]+\.py), line (\d+)'),),
    "pytest_e": (re.compile(r"^\W{0,3}E {2,}\S|^\W{0,3}E\s+\w*(Error|Exception|assert)\b"),),
    "pytest_loc": (re.compile(r"(?:^|[\s(])([\w./-]+\.py):(\d+):"),),
    "exception": (_EXCEPTION,),
    # a status word, where a runner put it (``::``, ``(3/10)``, ``... FAIL``, ``FAIL: test_x``)
    "status": (
        re.compile(r"\b(?:FAILED|FAIL|ERROR|ERRORED)\b"),
        re.compile(r"::|\(\d+/\d+\)|\.\.\.\s*(?:FAIL|ERROR)|^\W*(?:FAIL|ERROR):\s*\w"),
    ),
    # a command-line tool's error (podman's ``Error: ...``): a log where pasted as one (_is_log_paragraph)
    "cli_error": (re.compile(r"^\W{0,3}(?:Error|error|FATAL|Fatal|fatal):\s+\S"),),
    "section": (
        re.compile(r"^\W*(?:_{3,}|={3,}|-{5,})\s*\S.*?(?:_{3,}|={3,}|-{5,})\s*$|^\s*[=_-]{10,}\s*$"),
    ),
    "timestamp": (_TIMESTAMP,),
    "timestamped_error": (_TIMESTAMP, re.compile(r"\b(?:CRITICAL|ERROR|FATAL)\b")),
    # a level word before a separator (``ERROR:``, ``[INFO]``, ``WARNING -``); see _line_kinds
    "level": (re.compile(r"\b(?:CRITICAL|ERROR|WARNING|INFO|DEBUG)\b\s*[:|\]-]"),),
}
# a fence line: backticks or tildes and an optional info word (``~~~^~~~`` under code is Python's caret line)
_FENCE = re.compile(r"^\s*(?:`{3,}|~{3,})\s*[\w+.-]*\s*$")
_TRAILER = re.compile(
    r"^(?:Signed-off-by|Co-authored-by|Co-Authored-By|Change-Id|Reviewed-by|Reviewed-on|Acked-by|Tested-by"
    r"|Reported-by|Suggested-by|Cc|Fixes|Closes|Resolves|Related-Bug|Related|Partial-Bug|Closes-Bug"
    r"|Depends-On|Story|Task|Refs|See-also|Cherry-picked-from|\(cherry picked from)\b",
    re.IGNORECASE,
)
# Lint, type-checker and compiler-warning reports cite ``path.py:N`` like tracebacks do but are no
# test run: flake8/ruff/pycodestyle ``x.py:3:1: E303``, pyflakes ``x.py:3:1: 'x' imported but unused``
# (a column: no traceback or pytest location prints one), pylint ``W0611:`` or ``************* Module``,
# mypy ``x.py:3: error: ... [code]``, codespell ``x.py:3: teh ==> the``, a tool's name as a header; static
# analysers of C (Coverity/covscan ``Error: CLANG_WARNING:``, ``(CWE-457)``, ``#  321|->``) and compilers.
_LINT = re.compile(
    r"\.py:\d+:\d+:?\s+[A-Z]{1,3}\d{2,4}\b|\.py:\d+(?::\d+)?: (?:error|note|warning): |^\W*\*{5,} Module \S"
    r"|\b[CRWEF]\d{4}(?:\(|:)|\b[CRWEF]\d{4}\s*:?\s*\d+,\d+:"
    r"|\.py:\d+:\d+:\s+(?![\w.]*(?:Error|Exception|Warning)\b)\S"
    r"|\.py:\d+: (?:'[^']*' imported but unused|undefined name"
    r"|local variable .* is assigned to but never used|redefinition of unused|'\.\.\.'(?:\.format| %)"
    r"|f-string is missing placeholders)"
    r"|:\d+: \S+\s+==>\s+\S"
    r"|^\W*(?:pyflakes|flake8|pylint|pycodestyle|pep8|codespell|mypy|ruff|pyright|bandit)\w*\s*:?\s*$"
    r"|\(CWE-\d+\)|^\W*Error: [A-Z][A-Z_]+:|^\s*#\s*\d*\|(?:->)? |\.(?:c|h|cc|cpp|cxx|hpp):\d+(?::\d+)?: \w+"
)
_WARNING = re.compile(r"\.py:\d+: \w*Warning\b|^\W*\w*Warning: ")
# Prose that introduces the output of the fixed version, or an example: the log right after it is not the
# failure. Read in the last sentence of the prose right before a log, where it introduces what follows (ends
# in ``:``, or is a few words): "With this patch X works. Before, it failed with:" quotes the failure, and
# "Now it is possible to select ports by network" describes the change ...
_AFTER_FIX = re.compile(
    r"(?i)\b(?:after (?:this|the) (?:fix|change|patch|commit)|with (?:this|the) (?:fix|change|patch|commit)"
    r"|this (?:fix|change|patch|commit) (?:makes|gives|shows)|now (?:it|we get|the output|the test|they)"
    r"|instead it|output looks like|looks like this|test results|if this times out)\b|^\W*(?:now|after)\W*$"
)
_INTRODUCES = re.compile(r":\s*$|^\W*(?:\S+\s+){0,5}\S+\W*$")
# ... and phrases that announce the new output or an example anywhere in that prose ("an example of such a
# failure" quotes the failure).
_NEW_OUTPUT = re.compile(
    r"(?i)\b(?:(?:after|with) (?:this|the) (?:fix|change|patch|commit),? the (?:\w+ )?(?:output|log|result)s?"
    r" (?:is|are|looks?|becomes?|reads?)|fixed output|new output|will look like|should look like"
    r"|example (?:output|results)|here(?:'s| is)? (?:an? )?example"
    r"|(?:message|output|log|event|usage) examples?"
    r"|examples? of(?! (?:(?:such|the|this|that|a|an|one|these|those|as)\s+)*"
    r"(?:failure|error|issue|problem|crash|fault|bug)s?\b))\b"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
# A message about a linter's or type checker's findings: a bare ``error: ...`` it quotes is the tool's report
_LINT_TOOL = re.compile(
    r"(?i)\b(?:mypy|pylint|flake8|pyflakes|pycodestyle|ruff|pyright|codespell|shellcheck|coverity|covscan"
    r"|cppcheck|clang-tidy|type[- ]check(?:er|ing)?|linter|static analy[sz](?:er|is))\b"
)
_REPORT_ONLY = frozenset({"cli_error", "status", "level", "section", "timestamp"})
_REPL = re.compile(r"^\s*(?:>>>|In ?\[\d+\]:?(?=\s|$)|cqlsh(?::\w+)?>)|File \"<(?:stdin|string)>\"")
# a span of inline code closed on its line with prose after it
_INLINE_CODE = re.compile(r"^\s*`[^`]+`\W*\s+\w")
# An IPython session's traceback: ``~/x.py in f()`` headers and ``---> 57`` arrows (read as REPL output
# only in a message that holds ``In [N]:`` prompts)
_IPYTHON_PROMPT = re.compile(r"^\s*In ?\[\d+\]:?(?=\s|$)", re.MULTILINE)
_IPYTHON_TRACEBACK = re.compile(r"^\s*-*-> ?\d+\b|\.py in [\w<>]+\(|^\s*Out\[\d+\]:")
# A bullet of prose (``* fix VS test failure for test_x.py::test_y FAILED``): a status word there is prose
_BULLET = re.compile(r"^\s*[*\u2022-]\s+[a-z]+\s+[A-Za-z]")
# what a runner puts before each line of its output (``p:ERROR >``, ``12:01:02 |``)
_RUNNER_PREFIX = re.compile(r"\S*?[\w\]][ \t]*[>|](?=\s)")
_BARE_NAME = re.compile(r"[A-Za-z_][\w.]*\s*")
_PASSED_RUN = re.compile(r"\b\d+ passed\b|^\s*OK\s*(?:\(|$)")
_FAILED_RUN = re.compile(r"\b\d+ (?:failed|errors?)\b|\bFAILED\b|Traceback")


@dataclass(frozen=True)
class LogCut:
    """A failure log cut verbatim from a commit message, and what marked it as one."""

    text: str
    markers: frozenset[str]  # traceback, frame, pytest_e, exception, status, timestamped_error
    first_line: int  # 1-based line of the message where the cut starts

    @property
    def strength(self) -> str:
        """``traceback`` (frames), ``error`` (an error line, no frames) or ``status`` (a status line only)."""
        if {"traceback", "frame", "pytest_loc"} & self.markers:
            return "traceback"
        if {"pytest_e", "exception", "timestamped_error", "cli_error"} & self.markers:
            return "error"
        return "status"


def _line_kinds(line: str) -> set[str]:
    """The log markers on one line (empty for prose or code)."""
    if _LINT.search(line):
        return {"lint"}
    if _WARNING.search(line) and not re.search(r"Error|Exception|Traceback|File \"", line):
        return {"warning"}
    kinds = {kind for kind, patterns in _FOUND_MARKERS.items() if all(p.search(line) for p in patterns)}
    if "timestamp" in kinds:  # a timestamped line is a log line already; its level word adds nothing
        kinds.discard("level")
    if kinds and kinds <= {"status", "level", "section"} and _BULLET.match(line):
        return set()
    if "exception" in kinds and _INLINE_CODE.match(line):
        kinds.discard("exception")  # inline code in a sentence ("died with `KeyError: 'x'`; then ...")
    return kinds


STRONG = frozenset(
    {"traceback", "frame", "pytest_e", "pytest_loc", "exception", "status", "timestamped_error", "cli_error"}
)
# markers that make a line of prose the start of a log pasted under it ("... fails due to:\nKeyError: 'x'")
_TAIL_START = frozenset({"traceback", "frame", "pytest_e", "exception", "timestamped_error"})


def _paragraphs(lines: Sequence[str]) -> list[tuple[int, int, bool]]:
    """(start, end, fenced) line ranges, end exclusive: fenced blocks whole, others split on blank lines."""
    out: list[tuple[int, int, bool]] = []
    i, n = 0, len(lines)
    while i < n:
        if not lines[i].strip():
            i += 1
            continue
        if _FENCE.match(lines[i]):
            j = i + 1
            while j < n and not _FENCE.match(lines[j]):
                j += 1
            if j > i + 1:
                out.append((i + 1, j, True))
            i = j + 1
            continue
        j = i
        while j < n and lines[j].strip() and not _FENCE.match(lines[j]):
            j += 1
        out.append((i, j, False))
        i = j
    return out


def _is_repl(lines: Sequence[str], ipython: bool) -> bool:
    """An interactive session (a usage demo): prompts, or IPython's traceback (in a message with prompts)."""
    return any(_REPL.search(line) or (ipython and _IPYTHON_TRACEBACK.search(line)) for line in lines)


def _is_log_paragraph(lines: Sequence[str], fenced: bool) -> tuple[bool, set[str]]:
    kinds_per_line = [_line_kinds(line) for line in lines]
    if (
        len(lines) == 1
        and not fenced
        and kinds_per_line[0] == {"exception"}
        and _BARE_NAME.fullmatch(lines[0])
    ):
        return False, set()  # a name alone in a paragraph of prose (a subject wrapped onto the body)
    if not fenced and not all(_indented_or_quoted(line, loose=True) for line in lines):
        # a tool's ``Error: ...`` is a log line only where pasted as output (fenced or indented)
        kinds_per_line = [k - {"cli_error"} for k in kinds_per_line]
    kinds: set[str] = set().union(*kinds_per_line) if kinds_per_line else set()
    noise = sum(1 for k in kinds_per_line if k & {"lint", "warning"})
    if noise and noise >= sum(1 for k in kinds_per_line if k & STRONG):
        return False, kinds
    if not kinds & STRONG:
        # a paragraph without a strong marker joins a log only as its continuation (timestamped lines)
        stamped = sum(1 for k in kinds_per_line if {"timestamp", "level"} & k)
        return (bool(lines) and stamped >= max(1, len(lines) // 2)), kinds
    if fenced or {"traceback", "frame", "pytest_e"} & kinds:
        return True, kinds
    loggy = sum(1 for line, k in zip(lines, kinds_per_line, strict=True) if k or _indented_or_quoted(line))
    return loggy * 2 >= len(lines), kinds


def _passing(lines: Sequence[str]) -> bool:
    """A run that ended well: pytest's "N passed" or unittest's "OK" and no failure (no failure log)."""
    return any(_PASSED_RUN.search(line) for line in lines) and not any(
        _FAILED_RUN.search(line) for line in lines
    )


def _skip_prose(lines: Sequence[str], start: int, end: int) -> int:
    """The first line of a log paragraph after any lead-in prose ("CI failed with:") glued on top."""
    i = start
    while i < end and not _line_kinds(lines[i]) and not _indented_or_quoted(lines[i]):
        i += 1
    return i if i < end else start


def _log_tail(lines: Sequence[str], start: int, end: int) -> tuple[int, int] | None:
    """The lines of a log pasted at the end of a prose paragraph, or None: after a line ending in ``:``,
    an indented excerpt holding an error, or an error line (``... fails due to:\nAttributeError: x``)
    with its message's continuation (after a ``:``, indented, or under the same runner prefix as the error
    line: ``p:ERROR >``) but not the prose after it."""
    for i in range(start + 1, end):
        if not lines[i - 1].rstrip().endswith(":"):
            continue
        rest = lines[i:end]
        kinds = [_line_kinds(line) for line in rest]
        excerpt = all(_indented_or_quoted(line, loose=True) for line in rest)
        if excerpt and any(k & _TAIL_START for k in kinds):
            return i, end
        if kinds[0] & _TAIL_START:
            prefix = _RUNNER_PREFIX.match(rest[0])
            n = 1
            while n < len(rest) and (
                rest[n - 1].rstrip().endswith(":")
                or _indented_or_quoted(rest[n], loose=True)
                or (prefix is not None and rest[n].startswith(prefix.group()))
            ):
                n += 1
            return i, i + n
    return None


def _indented_or_quoted(line: str, loose: bool = False) -> bool:
    """A line set off from prose: indented by a tab or four spaces (any space when ``loose``), quoted."""
    return line.startswith(("    ", "\t", ">", "|")) or (loose and line[:1].isspace())


def _body_lines(message: str) -> tuple[list[str], int]:
    """The message's lines after the subject, trailers at the end removed, and the offset of the first."""
    lines = message.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    body = lines[1:]
    end = len(body)
    while end and (not body[end - 1].strip() or _TRAILER.match(body[end - 1].strip())):
        end -= 1
    return body[:end], 1


def _announces(prose: Sequence[str]) -> bool:
    """Whether prose right before a log announces the fixed version's output or an example."""
    text = " ".join(line.strip() for line in prose if line.strip())
    if not text:
        return False
    last = _SENTENCE_END.split(text)[-1]
    return bool(_NEW_OUTPUT.search(text) or (_AFTER_FIX.search(last) and _INTRODUCES.search(last)))


def find_log(message: str) -> LogCut | None:
    """The failure log pasted into a commit message, verbatim, or None when it holds none."""
    lines, offset = _body_lines(message)
    ipython = bool(_IPYTHON_PROMPT.search(message))
    # joined log paragraphs: their pieces (start, end; a fence between two makes two) and markers
    runs: list[tuple[list[tuple[int, int]], set[str]]] = []
    skipping = False  # an announced example, the fixed version's output or a REPL session's: skip it all
    prose: Sequence[str] = ()  # the prose paragraph right before this one
    for start, end, fenced in _paragraphs(lines):
        if _is_repl(lines[start:end], ipython):
            skipping, prose = True, ()
            continue
        ok, kinds = _is_log_paragraph(lines[start:end], fenced)
        last = runs[-1][0][-1][1] if runs else 0
        follows = runs and all(not lines[i].strip() for i in range(last, start))
        if not ok and follows and all(_indented_or_quoted(line) for line in lines[start:end]):
            ok = True  # the indented rest of a log
        if not ok:
            tail = None if fenced else _log_tail(lines, start, end)
            if tail is None:
                skipping, prose = False, lines[start:end]
                continue
            prose, (start, end) = lines[start : tail[0]], tail
            kinds = set().union(*(_line_kinds(line) for line in lines[start:end]))
        elif not fenced:
            glued = _skip_prose(lines, start, end)
            if glued > start:
                prose, start = lines[start:glued], glued
        if skipping or _announces(prose):
            skipping, prose = True, ()
            continue
        prose = ()
        last = runs[-1][0][-1][1] if runs else 0
        gap = range(last, start)
        if runs and all(not lines[i].strip() for i in gap):
            runs[-1][0][-1] = (runs[-1][0][-1][0], end)
            runs[-1][1].update(kinds)
        elif runs and all(not lines[i].strip() or _FENCE.match(lines[i]) for i in gap):
            runs[-1][0].append((start, end))  # the next fenced block of the same log: a piece of its own
            runs[-1][1].update(kinds)
        else:
            runs.append(([(start, end)], set(kinds)))
    runs = [r for r in runs if r[1] & STRONG and not _passing([x for s, e in r[0] for x in lines[s:e]])]
    if _LINT_TOOL.search(message):
        runs = [r for r in runs if not r[1] <= _REPORT_ONLY]
    if not runs:
        return None
    chosen = [r for r in runs if "traceback" in r[1] or "frame" in r[1]] or runs
    text = "\n\n".join("\n".join(lines[s:e]).strip("\n") for pieces, _ in chosen for s, e in pieces)
    markers = frozenset(set().union(*(r[1] for r in chosen)) & STRONG)
    return LogCut(text, markers, chosen[0][0][0][0] + offset + 1)


_CONTINUED = re.compile(r"\\\s*$")  # a line its writer continued on the next with a backslash
_QUOTE_MARKS = " \t>|"


def _unwrap(log: str) -> list[str]:
    """The log's lines with backslash-continued ones joined (a frame header or its code wrapped by hand,
    ``File "x.py", \\`` then ``line 12, in f``), the continuation's quote marks and indentation dropped."""
    out: list[str] = []
    joining = False
    for line in log.split("\n"):
        if joining and out:
            out[-1] += line.lstrip(_QUOTE_MARKS)
        else:
            out.append(line)
        joining = bool(_CONTINUED.search(out[-1]))
        if joining:
            out[-1] = _CONTINUED.sub("", out[-1]).rstrip() + " "
    return out


def log_frames(log: str) -> tuple[Frame, ...]:
    """The frames the log names, with the source line each echoes, read by the product's own log parser
    (Python's ``File "P", line N`` however prefixed or wrapped, and pytest's ``P:N:`` locations); a
    header continued with a backslash is joined first, and the code under a header wrapped over two
    lines is read from the line after it."""
    lines = _unwrap(log)
    frames = parse_log("\n".join(lines)).frames
    return tuple(f if f.code else replace(f, code=_code_under(lines, f)) for f in frames)


def _code_under(lines: Sequence[str], frame: Frame) -> str | None:
    """The source line printed under a frame whose header the parser read without one, or None."""
    at = frame.log_line - 1
    if not 0 <= at < len(lines) or 'File "' not in lines[at]:
        return None
    number = re.compile(rf"\bline {frame.line}\b")
    prefix = lines[at][: lines[at].index('File "')].rstrip()  # a runner's mark on every line (pytest's ``E``)
    for j in range(at, min(at + 3, len(lines) - 1)):
        if number.search(lines[j]):
            code = lines[j + 1]
            code = (code[len(prefix) :] if prefix and code.startswith(prefix) else code).strip(_QUOTE_MARKS)
            if (
                code
                and not re.match(r"File \"|Traceback|\w+(?:\.\w+)*: |\^+$", code)
                and not _TIMESTAMP.search(code)
            ):
                return code
            return None  # a log line's prefix wrapped apart from its text, or no code: nothing printed
    return None


@dataclass(frozen=True)
class FaultyLine:
    path: str
    line: int
    text: str
    kind: str  # "modified_or_removed" or "insertion_point"

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "text": self.text, "kind": self.kind}


@dataclass(frozen=True)
class FixHunks:
    """What a fix did to one file of the faulty version."""

    path: str  # path in the faulty version
    new_path: str  # path in the fixed version (differs after a rename)
    removed: tuple[int, ...]  # 1-based lines the fix modified or removed
    insertions: tuple[int, ...]  # 0-based: a fix inserted lines after this line of the faulty version
    added: int  # lines the fix added


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def parse_unified_diff(diff: str) -> list[FixHunks]:
    """Per file of a ``-U0`` diff (renames followed, new files skipped): removed lines, insertion points."""
    out: list[FixHunks] = []
    path: str | None = None
    new_path = ""
    removed: list[int] = []
    inserted: list[int] = []
    added = 0

    def close() -> None:
        if path is not None:
            out.append(FixHunks(path, new_path or path, tuple(removed), tuple(inserted), added))

    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            close()
            path, new_path, removed, inserted, added = None, "", [], [], 0
        elif line.startswith("--- "):
            old = line[4:].split("\t")[0]
            path = None if old == "/dev/null" else old[2:] if old.startswith("a/") else old
        elif line.startswith("+++ "):
            new = line[4:].split("\t")[0]
            if new == "/dev/null":
                path = None  # a deleted file: nothing of it survives to be fixed
            else:
                new_path = new[2:] if new.startswith("b/") else new
        elif path is not None and (m := _HUNK.match(line)):
            start, count = int(m.group(1)), int(m.group(2) or "1")
            new_count = int(m.group(4) or "1")
            added += new_count
            if count == 0:
                inserted.append(start)
            else:
                removed.extend(range(start, start + count))
    close()
    return out


def faulty_lines(hunks: FixHunks, parent_text: str) -> list[FaultyLine]:
    """The faulty lines of one file: lines the fix modified or removed (blank ones aside), and for an
    insertion the first non-blank line after the insertion point (or the last one before it at the
    end of the file)."""
    lines = parent_text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out: dict[int, FaultyLine] = {}
    for n in hunks.removed:
        if 1 <= n <= len(lines) and lines[n - 1].strip():
            out[n] = FaultyLine(hunks.path, n, lines[n - 1], "modified_or_removed")
    for after in hunks.insertions:
        n = after + 1
        while n <= len(lines) and not lines[n - 1].strip():
            n += 1
        if n > len(lines):
            n = after
            while n >= 1 and not lines[n - 1].strip():
                n -= 1
        if n >= 1 and n not in out:
            out[n] = FaultyLine(hunks.path, n, lines[n - 1], "insertion_point")
    return [out[n] for n in sorted(out)]


# Test code by folder: a folder named like ``tests``, ``selftests``, ``ipatests``, ``unit_tests``,
# ``test_utils``, ``testing`` or ``qa`` (a whole name: ``x509_attestation/`` is no test folder), and
# cockpit's ``test/verify/check-*``. A product module named ``test_*.py`` (a plugin listing tests) is not
# a test; a ``test_*.py`` at the top of the repository is.
_TEST_FOLDER = re.compile(r"(?i)^(?:[a-z0-9]*tests?|tests?[_-]\w*|testing|qa)$")
DEFAULT_TEST_GLOBS: tuple[str, ...] = ()
# at the top of a repository: tests, a test runner (scylladb's ``test.py``) and pytest's fixtures
_ROOT_TESTS = ("test_", "test.py", "conftest.py")


def is_test_path(path: str, globs: Sequence[str] = DEFAULT_TEST_GLOBS) -> bool:
    """Whether a repository path counts as test code: under ``globs`` when given (fnmatch; ``*`` crosses
    folders), else by its folders' names."""
    if globs:
        return any(fnmatch(path, g) for g in globs)
    *folders, name = path.split("/")
    return any(_TEST_FOLDER.match(f) for f in folders) or (not folders and name.startswith(_ROOT_TESTS))


def is_python(path: str, head: str | None) -> bool:
    """A Python file: ``.py``, or a file without a suffix whose first line is a python shebang."""
    if path.endswith(".py"):
        return True
    if "." in PurePosixPath(path).name or head is None:
        return False
    first = head.split("\n", 1)[0]
    return first.startswith("#!") and "python" in first


# lines whose strings are messages for people: a changed text there repairs nothing
_MESSAGE_LINE = re.compile(
    r"\b(?:raise|assert|print|fail|skipTest|warn|warning|info|debug|error|exception|critical)\b|\bmsg\s*="
)
_LOGGING_CALL = re.compile(r"^(?:self\.)?(?:log|logger|LOG|LOGGER|logging)\.\w+\(|^print\(")
_SKIP = re.compile(
    r"^@pytest\.mark\.(?:xfail|skip|skipif|flaky)\b|^@(?:unittest\.)?(?:expectedFailure|skip(?:If|Unless)?)\b"
    r"|^(?:self\.skipTest|pytest\.(?:skip|xfail)|raise (?:unittest\.)?SkipTest)\("
)
_CONDITION = re.compile(r"^(?:if|elif)\b.*:$|^else:$")


def _code(line: str) -> str:
    """A source line without its comment and whitespace (a ``#`` inside quotes is kept: rough on purpose)."""
    text = line
    if "#" in text and not re.search(r"[\"'][^\"']*#", text):
        text = text.split("#", 1)[0]
    return "".join(text.split())


def fix_nature(diff: str) -> str | None:
    """Why a fix cannot be the repair of a failure, or None: it only changes comments and layout (a lint
    fix), only adds logging, or only skips or expects the failure."""
    removed = [line[1:] for line in diff.split("\n") if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in diff.split("\n") if line.startswith("+") and not line.startswith("+++")]
    if any(line.startswith(("<<<<<<< ", ">>>>>>> ")) or line == "=======" for line in added):
        return "the fix commits merge-conflict markers"
    old = sorted(c for c in map(_code, removed) if c)
    new = sorted(c for c in map(_code, added) if c)
    if old == new:
        return "the fix only changes comments or layout"
    gained = [line.strip() for line in added if _code(line) and _code(line) not in old]
    lost = [c for c in old if c not in new]
    if gained and not lost and all(_LOGGING_CALL.match(g) for g in gained):
        return "the fix only adds logging"
    if (
        gained
        and not lost
        and all(_SKIP.match(g) or _CONDITION.match(g) for g in gained)
        and any(_SKIP.match(g) for g in gained)
    ):
        return "the fix only skips or expects the failure"
    messages = all(_MESSAGE_LINE.search(line) for line in removed if _code(line))
    if old and messages and sorted(map(_unquoted, old)) == sorted(map(_unquoted, new)):
        return "the fix only changes message texts"
    if _reports_only(gained, [line.strip() for line in removed if _code(line) and _code(line) in lost]):
        return "the fix only changes how the failure is reported"
    return None


# statements that only report: a log line, a print, a printed traceback, a failure raised or reported
# with a message, and the imports they need
_REPORT = re.compile(
    r"^(?:(?:self\.)?(?:_?log|logger|LOG|LOGGER|logging)\.\w+\(|print\(|traceback\.print_\w*\("
    r"|(?:import|from) (?:traceback|logging)\b|(?:self|pytest)\.(?:error|fail)\("
    r"|raise \w+(?:Error|Exception)\()"
)
# a line continuing the statement above it: a string, an operand or closing brackets
_OPERAND_LINE = re.compile(r"^(?:[rbuf]{0,2}[\"']|[%+,)\]}])")


def _head(line: str) -> str:
    """The called name or raised class a reporting statement starts with."""
    found = re.match(r"^(?:raise )?[\w.]+", line)
    return found.group(0) if found else line


def _reports_only(gained: Sequence[str], lost: Sequence[str]) -> bool:
    """True when the changed statements only report the failure (a diagnostics change, not a repair):
    logging or printing swapped, removed or added, a traceback printed, a try/except that logs and
    re-raises, or an earlier check whose only effect is a clearer message."""
    if not gained and not lost:
        return False
    if not all(_REPORT.match(line) or _OPERAND_LINE.match(line) for line in lost):
        return False
    reports = [line for line in gained if _REPORT.match(line)]
    if gained and not reports:
        return False
    # the same call rewritten (``log.info(a + b)`` -> ``log.info(f"{a}{b}")``): the reporting statement
    # itself may have raised, and the fix repairs it
    if {_head(line) for line in lost if _REPORT.match(line)} & {_head(line) for line in reports}:
        return False
    reraised = "raise" in gained
    checks = 0
    for line in gained:
        if _REPORT.match(line) or _OPERAND_LINE.match(line):
            continue
        if reraised and (line in {"try:", "raise"} or re.match(r"^except\b.*:$", line)):
            continue
        if not lost and re.match(r"^if\b.*:$", line):
            checks += 1  # a new check (with nothing moved under it) that only reports
            continue
        return False
    # a check that reports must report something the check found; a bare try/except needs the re-raise
    return not checks or any(not line.startswith(("import ", "from ")) for line in reports)


def _unquoted(code: str) -> str:
    return re.sub(r"(?:[rbuf]{0,2})(\"[^\"]*\"|'[^']*')", '""', code)


@dataclass(frozen=True)
class Grade:
    confidence: str  # high, medium, low
    reasons: tuple[str, ...]
    other_version: str | None = None  # why the log plainly comes from another version than the faulty one


@dataclass(frozen=True)
class FixFacts:
    """What the grade reads about one fix."""

    log: LogCut
    frames: tuple[Frame, ...]
    faulty_files: Mapping[str, str]  # path -> faulty version's text
    fixed_files: Mapping[str, str] = field(default_factory=dict)  # path -> fixed version's text
    changed_lines: int = 0  # lines removed plus added in test files
    product_files: tuple[str, ...] = ()  # changed files that are not test code
    faulty_count: int = 0
    nature: str | None = None  # ``fix_nature`` of the fix's diff
    message: str = ""  # the fix's commit message
    context_files: Mapping[str, str] = field(default_factory=dict)  # helpers the frames name: path -> text
    diff: str = ""  # the fix's diff over the test files


# An author unsure the change repairs the failure, or adding diagnostics to find out why it fails.
_HEDGE = re.compile(
    r"(?i)\b(?:possibly|hopefully|might fix|may fix|try(?:ing)? to (?:fix|avoid|mitigate)|attempt to|"
    r"workaround for|debug(?:ging)?|more (?:verbose|informative|details)|better (?:error|message|logging)"
    r"|add(?:ing)? (?:more )?log(?:ging|s)?)\b"
)
# A subject saying the author does not know whether the change repairs the failure, or that it only
# helps to debug it: such a case is never graded high.
_UNSURE = re.compile(
    r"(?i)\b(?:possibly|hopefully|might fix|may fix|should fix|try(?:ing)? to fix|attempt(?:ing)? to fix)\b"
    r"|^(?:[^:\s][^:]*:\s*)?debug\b"
)
# A message saying the quoted error was only logged while the test went on (no failure of the test).
_LOGGED_ONLY = re.compile(
    r"(?i)\b(?:(?:bad|noisy|ugly|spurious|scary) (?:log|warning)"
    r" (?:message|output|line)s?|clean (?:up )?(?:our |the )?logs?"
    r"|(?:pollutes?|spams?|floods?) (?:the |our )?logs?"
    r"|(?:is|are|gets?|was|were) (?:only|just) logged|tests? (?:still )?pass(?:es|ed)? (?:anyway|though|but)"
    r"|(?:although|even though|while) the tests? pass(?:es|ed)?"
    r"|does(?:n't| not) (?:make|cause) the tests? (?:to )?fail)\b"
)


def grade(facts: FixFacts) -> Grade:
    """high / medium / low, with the reasons: does the log name a fixed file, do its frames' line numbers
    and echoed texts match the faulty version (or another one), how large is the fix, does it touch
    product code. ``other_version`` is set when the log plainly comes from another version."""
    reasons: list[str] = []
    score = 0
    names = list(facts.faulty_files)
    named = {p for f in facts.frames if (p := match_script_path(f.path, names)) is not None}
    stems = {PurePosixPath(p).stem for p in names}
    mentioned = {s for s in stems if len(s) >= 4 and s in facts.log.text}
    if named:
        score += 2
        reasons.append(f"the log's frames name the fixed file(s): {', '.join(sorted(named))}")
    elif mentioned:
        score += 1
        reasons.append(f"the log mentions the fixed file(s) by name: {', '.join(sorted(mentioned))}")
    else:
        score -= 2
        reasons.append("the log does not name any fixed file")
    files = {**facts.context_files, **facts.faulty_files}
    evidence = frame_evidence(facts.frames, files, facts.fixed_files)
    if evidence.checked:
        reasons.append(describe(evidence))
        good = evidence.matched and not evidence.other and not evidence.fixed
        score += 2 if good else -2 if not evidence.matched else 0
    other_version: str | None = None
    if evidence.other:
        # code more than a few lines away: low, for a person to judge; code or lines the file lacks: dropped
        score -= 6
        other = "the log comes from another version: " + "; ".join(evidence.other[:3])
        reasons.append(other)
        if evidence.absent and not evidence.matched:
            other_version = other
    added = message_added_by_fix(facts.log.text, facts.diff, files.values())
    if (evidence.fixed and not evidence.matched) or (added is not None and not evidence.faulty_only):
        score -= 6
        fixed = "the log comes from another version (the fixed one): " + (
            f"it prints {added!r}, which only a line the fix adds prints"
            if added is not None
            else "its frames match the fixed version, not the faulty one"
        )
        reasons.append(fixed)
        other_version = other_version or fixed
    if facts.log.strength == "traceback":
        score += 1
        reasons.append("the log holds a traceback or frame locations")
    elif facts.log.strength == "status":
        score -= 1
        reasons.append("the log holds only status lines")
    size = facts.changed_lines
    if size <= 12:
        score += 1
        reasons.append(f"small fix ({size} changed lines in test code)")
    elif size > 60:
        score -= 2
        reasons.append(f"large fix ({size} changed lines in test code)")
    else:
        reasons.append(f"fix of {size} changed lines in test code")
    if facts.nature is not None:
        score -= 4
        reasons.append(facts.nature)
    if facts.faulty_count == 0:
        score -= 3
        reasons.append("no faulty line in the faulty version (the fix only added a file)")
    if facts.product_files:
        score -= 2
        shown = ", ".join(facts.product_files[:3]) + (" ..." if len(facts.product_files) > 3 else "")
        reasons.append(f"the fix also changes code that is not test code: {shown}")
    subject = facts.message.split("\n", 1)[0]
    if _HEDGE.search(subject):
        score -= 2
        reasons.append("the subject is unsure the change fixes the failure, or adds diagnostics")
    if _LOGGED_ONLY.search(facts.message):
        score -= 4
        reasons.append("the message says the error was only logged, not that the test failed")
    # high: nothing speaks against the case, and the log's own echoed code ties it to the faulty version
    tied = evidence.matched and not evidence.other and not evidence.fixed and other_version is None
    if tied and score >= 4 and _UNSURE.search(subject):
        tied = False
        reasons.append("not high: the subject doubts that the change repairs the failure")
    confidence = "high" if score >= 4 and tied else ("medium" if score >= 1 else "low")
    return Grade(confidence, tuple(reasons), other_version)


def case_id(repo: str, sha: str, subject: str) -> str:
    """A stable, readable id: repository name, short hash, subject words."""
    name = repo.rsplit("/", 1)[-1]
    words = re.findall(r"[a-z0-9]+", subject.lower())[:6]
    return "-".join([name, sha[:10], *words])[:90].rstrip("-")
