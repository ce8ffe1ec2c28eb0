"""Benchmark cases (docs/design.md §3): one JSON file per case, validated into plain records.

``parse_case`` is pure; ``load_cases`` reads a folder (or one file) and reports unreadable or
malformed files by name instead of failing the whole evaluation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.analysis.model import Loc, Script


class CaseError(ValueError):
    """A case file that cannot be evaluated; the message says which field is wrong."""


@dataclass(frozen=True)
class Case:
    id: str
    scripts: tuple[Script, ...]
    log: str
    faulty: frozenset[Loc]
    actual: frozenset[Loc] | None  # executed lines, where the case was really run
    log_functions: tuple[str, ...] = ()


def _locations(value: Any, field: str) -> frozenset[Loc]:
    if not isinstance(value, list):
        raise CaseError(f"`{field}` must be a list of {{path, line}} objects")
    out = set()
    for item in value:
        if not isinstance(item, Mapping) or not isinstance(item.get("path"), str):
            raise CaseError(f"every item of `{field}` needs a string `path`")
        line = item.get("line")
        if isinstance(line, bool) or not isinstance(line, int) or line < 1:
            raise CaseError(f"`{field}` item {item.get('path')!r} needs a 1-based integer `line`")
        out.add(Loc(item["path"], line))
    return frozenset(out)


def parse_case(data: Any, *, fallback_id: str = "case") -> Case:
    """A validated case from decoded JSON; extra fields are ignored."""
    if not isinstance(data, Mapping):
        raise CaseError("a case must be a JSON object")
    files = data.get("test_files")
    if not isinstance(files, list) or not files:
        raise CaseError("`test_files` must be a non-empty list of {path, content}")
    scripts = []
    for item in files:
        if not isinstance(item, Mapping) or not isinstance(item.get("path"), str):
            raise CaseError("every test file needs a string `path`")
        if not isinstance(item.get("content"), str):
            raise CaseError(f"test file {item['path']!r} needs a string `content`")
        scripts.append(Script(item["path"], item["content"]))
    log = data.get("failure_log")
    if not isinstance(log, str):
        raise CaseError("`failure_log` must be a string")
    faulty = _locations(data.get("faulty_lines", []), "faulty_lines")
    paths = {s.path for s in scripts}
    stray = sorted({loc.path for loc in faulty} - paths)
    if stray:
        raise CaseError(f"`faulty_lines` name files that are not in `test_files`: {', '.join(stray)}")
    actual = (
        _locations(data["actual_trace"], "actual_trace") if data.get("actual_trace") is not None else None
    )
    patterns = data.get("log_functions") or []
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise CaseError("`log_functions` must be a list of strings")
    case_id = data.get("id")
    return Case(
        id=case_id if isinstance(case_id, str) and case_id else fallback_id,
        scripts=tuple(scripts),
        log=log,
        faulty=faulty,
        actual=actual,
        log_functions=tuple(patterns),
    )


def load_cases(source: Path) -> tuple[list[Case], list[str]]:
    """Cases from a folder of ``*.json`` files (or one file), and one problem line per bad file."""
    if source.is_file():
        files = [source]
    elif source.is_dir():
        # dot files are a tool's own state beside the cases (the miner's progress and summary)
        files = sorted(p for p in source.glob("*.json") if p.name != "index.json" and p.name[0] != ".")
    else:
        raise FileNotFoundError(f"{source} is neither a case file nor a folder")
    cases: list[Case] = []
    problems: list[str] = []
    seen: set[str] = set()
    for path in files:
        try:
            case = parse_case(json.loads(path.read_text(encoding="utf-8")), fallback_id=path.stem)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, CaseError) as exc:
            problems.append(f"{path.name}: {exc}")
            continue
        if case.id in seen:
            problems.append(f"{path.name}: duplicate case id {case.id!r}; skipped")
            continue
        seen.add(case.id)
        cases.append(case)
    return cases, problems
