"""Traceback frames against the submitted scripts: which script a printed path names, which line it means.

Reporters often run a slightly different copy of the script than the one submitted (a local
edit moves lines by a few), and terminals or paste tools change spacing. The frame's printed
source text is the better witness than its line number: a frame is moved to the nearest line
holding that text, and the move is reported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from app.analysis.model import Frame

SKEW_WINDOW = 6  # lines a traceback's line number may be off by (reporters run slightly different copies)
_SPACE = re.compile(r"\s+")
_MIN_PREFIX = 12  # a printed line cut short still identifies its source line when this long


def realign(lines: Sequence[str], line: int, code: str | None) -> int | None:
    """The frame's line, or the nearest line within the skew window holding the printed code.

    Text is compared with whitespace runs collapsed, then with whitespace removed altogether
    (``f(a,b)`` printed for ``f(a, b)``); a printed line cut short matches by its start. The
    nearest match wins, earlier lines first at equal distance. None when the line is outside
    the file and no nearby line holds the code.
    """
    in_range = 1 <= line <= len(lines)
    if not code:
        return line if in_range else None
    want = _SPACE.sub(" ", code).strip()
    if not want:
        return line if in_range else None
    squeezed = _SPACE.sub("", want)
    for same in (_same_spacing, _same_without_spaces):
        key = want if same is _same_spacing else squeezed
        if in_range and same(lines[line - 1], key):
            return line
        for delta in range(1, SKEW_WINDOW + 1):
            for cand in (line - delta, line + delta):
                if 1 <= cand <= len(lines) and same(lines[cand - 1], key):
                    return cand
    return line if in_range else None


def _same_spacing(source_line: str, want: str) -> bool:
    have = _SPACE.sub(" ", source_line).strip()
    return have == want or (len(want) >= _MIN_PREFIX and have.startswith(want))


def _same_without_spaces(source_line: str, want: str) -> bool:
    have = _SPACE.sub("", source_line)
    return have == want or (len(want) >= _MIN_PREFIX and have.startswith(want))


def match_script_path(printed_path: str, script_paths: Sequence[str]) -> str | None:
    """The submitted script a traceback path refers to, by the longest common path suffix.

    Whole components only (``/x/test_a.py`` never matches ``best_a.py``), at least the file name;
    ``./`` and backslashes are ignored. None when nothing matches or two scripts tie.
    """
    target = _components(printed_path)
    if not target:
        return None
    best_len, best = 0, {}
    for path in script_paths:
        comps = _components(path)
        common = 0
        for a, b in zip(reversed(target), reversed(comps), strict=False):
            if a != b:
                break
            common += 1
        if common == 0:
            continue
        if common > best_len:
            best_len, best = common, {}
        if common == best_len:
            best.setdefault(tuple(comps), path)
    return next(iter(best.values())) if len(best) == 1 else None


def folder_conflict(printed_path: str, script_path: str) -> str | None:
    """Where a frame matched a script by file name alone while both name different folders.

    ``/ci/tests/b/test_x.py`` and a submitted ``tests/a/test_x.py`` share only ``test_x.py``: the
    traceback may well come from a same-named file elsewhere, so the match deserves a warning.
    None when the folders agree or one side names none (a bare file name proves nothing).
    """
    printed, script = _components(printed_path), _components(script_path)
    if len(printed) < 2 or len(script) < 2 or printed[-1] != script[-1]:
        return None
    if printed[-2] == script[-2]:
        return None
    return f"{printed[-2]}/ vs {script[-2]}/"


def _components(path: str) -> list[str]:
    cleaned = path.strip().strip("\"'").replace("\\", "/")
    return [c for c in cleaned.split("/") if c and c != "."]


def script_frames(
    frames: Sequence[Frame], files: Mapping[str, Sequence[str]]
) -> tuple[list[Frame], list[str]]:
    """The frames in the scripts (``files``: path -> lines), path rewritten and line numbers
    corrected for small skew, and warnings about the matches; frames elsewhere are dropped."""
    out: list[Frame] = []
    warnings: list[str] = []
    paths = list(files)
    for frame in frames:
        path = match_script_path(frame.path, paths)
        if path is None:
            continue
        lines = files[path]
        line = realign(lines, frame.line, frame.code)
        if line is None:
            warnings.append(
                f"traceback frame {frame.path}:{frame.line} is outside {path} ({len(lines)} lines); ignored"
            )
            continue
        conflict = folder_conflict(frame.path, path)
        if conflict is not None and not _code_confirms(lines[line - 1], frame.code):
            warnings.append(
                f"traceback frame {frame.path} was matched to {path} by file name only ({conflict}) and"
                " the log shows no code to confirm it: if it comes from another file of that name, submit it"
            )
        if line != frame.line:
            warnings.append(
                f"traceback line {frame.line} of {path} does not hold the code the log shows;"
                f" using line {line}"
            )
        out.append(replace(frame, path=path, line=line))
    return out, warnings


def _code_confirms(source_line: str, printed: str | None) -> bool:
    """Whether the code a frame printed is the script's line: a folder mismatch is then a checkout path."""
    want = " ".join((printed or "").split())
    have = " ".join(source_line.split())
    return bool(want) and (have == want or have.startswith(want))
