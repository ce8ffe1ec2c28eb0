"""Script versions: content addresses, line maps between versions, and the hunks that changed.

Runs of older versions count on the current one only through a line map (docs/design.md §8.1): lines
equal after stripping map 1:1; inside a ``replace`` opcode lines pair in order when their
Levenshtein ratio is at least 0.8 (an edited line keeps its history); the rest has no pre-image
and is *absent* from older runs, which is not the same as "did not run".
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from Levenshtein import ratio

MODIFIED_RATIO = 0.8


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def version_id(files: Mapping[str, str]) -> str:
    """A version is its files' contents: the same files give the same id whatever their order."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode("utf-8") + b"\0" + content_hash(files[path]).encode("ascii") + b"\n")
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class LineMap:
    """One file's map from an old version's lines to a new version's (both 1-based)."""

    forward: Mapping[int, int]  # old line -> new line
    modified: frozenset[int]  # new lines paired with an edited old line
    added: frozenset[int]  # new lines with no pre-image

    def changed(self) -> frozenset[int]:
        """New lines that differ from the old version: the diff channel's lines."""
        return self.modified | self.added


def map_lines(old: Sequence[str], new: Sequence[str], *, min_ratio: float = MODIFIED_RATIO) -> LineMap:
    """Map ``old`` lines to ``new`` lines (texts without newlines)."""
    a = [s.strip() for s in old]
    b = [s.strip() for s in new]
    forward: dict[int, int] = {}
    modified: set[int] = set()
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            forward.update({i + 1: j + 1 for i, j in zip(range(i1, i2), range(j1, j2), strict=True)})
        elif tag == "replace":
            j = j1
            for i in range(i1, i2):
                for cand in range(j, j2):
                    if ratio(a[i], b[cand]) >= min_ratio:
                        forward[i + 1] = cand + 1
                        modified.add(cand + 1)
                        j = cand + 1
                        break
    images = set(forward.values())
    added = frozenset(n for n in range(1, len(b) + 1) if n not in images and b[n - 1])
    return LineMap(forward, frozenset(modified), added)


@dataclass(frozen=True)
class Hunk:
    """One changed region, for a person reading "what changed since the last pass"."""

    path: str
    old_start: int  # 1-based; old_count lines from here were replaced
    old_count: int
    new_start: int
    new_count: int
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "old_start": self.old_start,
            "old_count": self.old_count,
            "new_start": self.new_start,
            "new_count": self.new_count,
            "old_lines": list(self.old_lines),
            "new_lines": list(self.new_lines),
        }


def hunks(path: str, old: Sequence[str], new: Sequence[str]) -> tuple[Hunk, ...]:
    """The changed regions between two versions of one file (whitespace-only edits ignored)."""
    a = [s.strip() for s in old]
    b = [s.strip() for s in new]
    out = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.append(Hunk(path, i1 + 1, i2 - i1, j1 + 1, j2 - j1, tuple(old[i1:i2]), tuple(new[j1:j2])))
    return tuple(out)


def changed_lines(old: Mapping[str, str], new: Mapping[str, str]) -> frozenset[tuple[str, int]]:
    """(path, line) of ``new`` that are edited or new since ``old``; whole new files included."""
    out: set[tuple[str, int]] = set()
    for path, text in new.items():
        if path in old:
            out.update((path, n) for n in map_lines(old[path].splitlines(), text.splitlines()).changed())
        else:
            out.update((path, n) for n, line in enumerate(text.splitlines(), 1) if line.strip())
    return frozenset(out)
