"""Which version of the code a failure log comes from: the faulty one, or another.

A log pasted into a fix's message is supposed to come from the faulty version (the fix's parent). It
may come from an older or newer run instead: its frames then point at lines that hold other code, past
the end of the file, or print code the file does not hold at all; or it prints a message that only the
fix adds (the author pasted the fixed version's output). Both are read here, without I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from app.analysis.logparse import match_script_path
from app.analysis.model import Frame

SKEW = 5  # lines a frame may be off by and still come from the faulty version (a local edit, a rebase)
_MIN_PREFIX = 12  # a printed line cut short (``...``, a wrap) identifies its source line when this long
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class FrameEvidence:
    """What the frames that name a file of the case say about the version the log comes from."""

    matched: int = 0  # frames whose printed code is at (or within SKEW lines of) the printed line
    skewed: int = 0  # of those, frames off by 1..SKEW lines
    faulty_only: int = 0  # of those, frames that the fixed version does not match (the fix changed them)
    unprinted: int = 0  # frames without printed code whose line and function the faulty version holds
    fixed: int = 0  # frames that match the fixed version but not the faulty one
    far: tuple[str, ...] = ()  # frames whose printed code the faulty version holds more than SKEW lines away
    absent: tuple[str, ...] = ()  # frames past the file's end, or printing code or a function it lacks

    @property
    def other(self) -> tuple[str, ...]:
        """The frames that contradict the faulty version, each said in words."""
        return self.far + self.absent

    @property
    def checked(self) -> int:
        return self.matched + self.unprinted + self.fixed + len(self.other)


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _printed(code: str) -> tuple[str, bool]:
    """The printed code without spaces, and whether it may be only the start of its line (cut short)."""
    cut = code.rstrip()
    short = cut.endswith(("...", "\u2026", "\\", "(", "[", "{", ","))
    cut = cut.rstrip(".\u2026\\").rstrip()
    return _squeezed(cut), short or len(_squeezed(cut)) >= _MIN_PREFIX


def _holds(line: str, want: str, prefix: bool) -> bool:
    have = _squeezed(line)
    return have == want or (prefix and len(want) >= _MIN_PREFIX and have.startswith(want))


def _distance(lines: Sequence[str], line: int, code: str) -> int | None:
    """How far from ``line`` the nearest line holding the printed code is (0: there), None: nowhere."""
    want, prefix = _printed(code)
    if not want:
        return 0
    best: int | None = None
    for n, text in enumerate(lines, 1):
        if _holds(text, want, prefix) and (best is None or abs(n - line) < best):
            best = abs(n - line)
    return best


def _diverge(printed: str, path: str) -> bool:
    """Whether a printed path and a case's path part at a folder above their common end: pytest's
    ``site-packages/_pytest/config/__init__.py`` is not the case's ``robottelo/config/__init__.py``
    (a checkout's own folders above the case's whole path are fine)."""
    a = [c for c in printed.replace("\\", "/").split("/") if c and c != "."]
    b = [c for c in path.split("/") if c]
    common = 0
    while common < min(len(a), len(b)) and a[-1 - common] == b[-1 - common]:
        common += 1
    return common < len(a) and common < len(b)


def frame_evidence(
    frames: Iterable[Frame], files: Mapping[str, str], fixed_files: Mapping[str, str] | None = None
) -> FrameEvidence:
    """Every frame that names a file of the case (``files``: path -> faulty version's text) checked
    against that file: its printed code at the printed line (``SKEW`` lines of skew allowed), else the
    line inside the file and the function defined in it. ``fixed_files``: the fixed version's text,
    to tell a log of the fixed version from one of some other version."""
    fixed_files = fixed_files or {}
    names = list(files)
    matched = skewed = faulty_only = unprinted = fixed = 0
    far: list[str] = []
    absent: list[str] = []
    for frame in frames:
        path = match_script_path(frame.path, names)
        if path is None or _diverge(frame.path, path):
            continue  # another file of the same name, maybe
        lines = files[path].split("\n")
        where = f"{path}:{frame.line}"
        if frame.line > len(lines):
            # the printed code may sit a line or two above the end, but no run of this version printed
            # a line it does not have
            absent.append(f"{where} is past the end of the file ({len(lines)} lines)")
        elif frame.code and _squeezed(frame.code):
            d = _distance(lines, frame.line, frame.code)
            after = fixed_files.get(path)
            d_fixed = _distance(after.split("\n"), frame.line, frame.code) if after is not None else None
            if d is not None and d <= SKEW:
                matched += 1
                skewed += d > 0
                faulty_only += after is not None and (d_fixed is None or d_fixed > SKEW)
                continue
            if d_fixed is not None and d_fixed <= SKEW:
                fixed += 1
            elif d is not None:
                far.append(f"{where} prints code that is {d} lines away in the faulty version")
            else:
                absent.append(f"{where} prints code that is not in the faulty version")
        elif (
            frame.function
            and _IDENTIFIER.fullmatch(frame.function)
            and not re.search(rf"\b(?:def|class)\s+{re.escape(frame.function)}\b", files[path])
        ):
            absent.append(
                f"{where} names a function {frame.function} that the faulty version does not define"
            )
        else:
            unprinted += 1
    return FrameEvidence(matched, skewed, faulty_only, unprinted, fixed, tuple(far), tuple(absent))


# statements whose strings are what a run prints: a raised or asserted message, a failure, a log line
_PRINTING = re.compile(
    r"\braise\b|\bassert\b|\bfail\(|\.fail\w*\(|\bprint\(|\b(?:log|logger|LOG|LOGGER|logging|_log)\.\w+\("
)
_LITERAL = re.compile(r"""(?<![\w'"])[rRbBuUfF]{0,2}("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')""")
# what a string's formatting fills in at run time: ``{x}``, ``%s``, an escape
_HOLE = re.compile(r"\{[^{}]*\}|%[-#0 +]*\d*(?:\.\d+)?[sdrifxXeEgGcab%]|\\.")
_DIFF_LINE = re.compile(r"^[\s>|]*(?:E\s+)?[-+?] ")  # a line of an assertion's diff (pytest, unittest)


def message_added_by_fix(log: str, diff: str, before: Iterable[str]) -> str | None:
    """A message the log prints that only a line the fix adds can print (a raise, assert, failure or log
    call's string, its placeholders matching anything), or None. ``before``: the faulty version's
    texts; a string found there, or in a line the fix removes, is no evidence. A quoted value or an
    assertion's diff line in the log is a compared value, not a message."""
    minus = [line[1:] for line in diff.split("\n") if line.startswith("-") and not line.startswith("---")]
    old = ["\n".join(minus), *before]
    log_lines = [line for line in log.split("\n") if not _DIFF_LINE.match(line)]
    for line in _printing_lines(diff):
        for m in _LITERAL.finditer(line):
            body = m.group(1)[1:-1]
            pieces = [p for p in _HOLE.split(body)]
            fixed_text = max(pieces, key=len).strip()
            if len(fixed_text) < _MIN_PREFIX or " " not in fixed_text or any(fixed_text in t for t in old):
                continue
            pattern = re.compile(".{0,200}?".join(re.escape(p) for p in pieces if p) or re.escape(body))
            for log_line in log_lines:
                found = pattern.search(log_line)
                if found and (found.start() == 0 or log_line[found.start() - 1] not in "'\""):
                    return fixed_text
    return None


def _printing_lines(diff: str) -> list[str]:
    """The added lines of statements that print (a raise, assert, failure, print or log call): a statement
    runs on while brackets are open or a line ends with a backslash, and never across a hunk."""
    out: list[str] = []
    printing = False
    depth = 0  # brackets open at the end of the line before
    continued = False  # the line before ended with a backslash
    for line in diff.split("\n"):
        if line.startswith("@@") or not line.startswith("+") or line.startswith("+++"):
            depth, continued = 0, False
            continue
        code = line[1:]
        if depth == 0 and not continued:
            printing = bool(_PRINTING.search(code))
        if printing:
            out.append(code)
        bare = _LITERAL.sub('""', code)
        depth = max(0, depth + sum(map(bare.count, "([{")) - sum(map(bare.count, ")]}")))
        continued = code.rstrip().endswith("\\")
    return out


def describe(evidence: FrameEvidence) -> str:
    """The frames' evidence in words, for a case's confidence reasons."""
    text = (
        f"frames into files of the case whose printed code the faulty version holds at that line: "
        f"{evidence.matched} of {evidence.checked}"
    )
    if evidence.unprinted:
        text += f" ({evidence.unprinted} print no code; their line and function are there)"
    if evidence.skewed:
        text += f" ({evidence.skewed} within {SKEW} lines)"
    if evidence.fixed:
        text += f"; {evidence.fixed} match the fixed version instead"
    return text
