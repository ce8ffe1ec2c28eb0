"""Traceback frames against the submitted scripts: which script a printed path names."""

from __future__ import annotations

from collections.abc import Sequence


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


def _components(path: str) -> list[str]:
    cleaned = path.strip().strip("\"'").replace("\\", "/")
    return [c for c in cleaned.split("/") if c and c != "."]
