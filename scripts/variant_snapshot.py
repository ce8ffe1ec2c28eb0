"""Record the faithful trace variants of every case under tests/data, to prove later changes keep them.

Usage: python -m scripts.variant_snapshot > tests/data/faithful-variants.json

Each case gets, per faithful variant, the kept line count and a digest of the sorted kept lines:
small enough to keep in the repository, exact enough that any changed line shows.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from app.analysis.model import BASE_VARIANTS, Loc, Script
from app.analysis.pipeline import analyze
from app.eval.cases import load_cases

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
FAITHFUL = (*BASE_VARIANTS, *(f"CSR({v})" for v in BASE_VARIANTS))


def digest(kept: frozenset[Loc]) -> str:
    text = "\n".join(f"{loc.path}:{loc.line}" for loc in sorted(kept))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cases() -> list[tuple[str, list[Script], str, tuple[str, ...]]]:
    """(key, scripts, log, log functions) of the running example and every case folder under tests/data."""
    example = DATA / "running-example"
    expected = json.loads((example / "expected.json").read_text())
    out = [
        (
            "running-example",
            [Script("test_example.py", (example / "test_example.py").read_text())],
            (example / "failure.log").read_text(),
            tuple(expected["log_function_patterns"]),
        )
    ]
    folders = sorted({p.parent for p in DATA.rglob("*.json") if p.parent != example})
    for folder in folders:
        loaded, _problems = load_cases(folder)
        for case in loaded:
            key = f"{folder.relative_to(DATA)}/{case.id}"
            out.append((key, list(case.scripts), case.log, case.log_functions))
    return out


def snapshot() -> dict[str, dict[str, list]]:
    out: dict[str, dict[str, list]] = {}
    for key, scripts, log, patterns in cases():
        a = analyze(scripts, log, log_functions=patterns, explain=False)
        out[key] = {v: [len(a.traces[v].kept), digest(a.traces[v].kept)] for v in FAITHFUL}
    return out


if __name__ == "__main__":
    rows = sorted(snapshot().items())
    sys.stdout.write("{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in rows))
    sys.stdout.write("\n}\n")
