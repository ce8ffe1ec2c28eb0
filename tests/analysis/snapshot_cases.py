"""The trace-variant snapshot: every variant's kept line set over tests/data, digested.

Recorded before the speed work so that each optimisation is checked against the sets the
analysis gave before it. Regenerate only for an intended change of the estimation rules:
``python -m tests.analysis.snapshot_cases --write``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from app.analysis.model import Loc, Script

DATA = Path(__file__).resolve().parents[1] / "data"
SNAPSHOT = DATA / "snapshots" / "trace_variants.json"


def cases() -> Iterator[tuple[str, list[Script], str, tuple[str, ...]]]:
    """(name, scripts, log, extra log functions) for every case kept under tests/data."""
    running = DATA / "running-example"
    yield (
        "running-example",
        [Script("test_example.py", (running / "test_example.py").read_text())],
        (running / "failure.log").read_text(),
        (),
    )
    for folder in (DATA / "logs" / "real", DATA / "corpus" / "cpython"):
        for path in sorted(folder.glob("*.json")):
            case = json.loads(path.read_text())
            if not isinstance(case, dict) or not isinstance(case.get("test_files"), list):
                continue
            scripts = [Script(f["path"], f["content"]) for f in case["test_files"]]
            yield (
                f"{folder.name}/{path.stem}",
                scripts,
                case["failure_log"],
                tuple(case.get("log_functions") or ()),
            )


def digest(kept: frozenset[Loc]) -> list[object]:
    """[size, sha1 of the sorted "path:line" list] : small, and any difference changes it."""
    text = "\n".join(f"{loc.path}:{loc.line}" for loc in sorted(kept))
    return [len(kept), hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]]


def record() -> dict[str, dict[str, list[object]]]:
    from app.analysis.pipeline import analyze

    out: dict[str, dict[str, list[object]]] = {}
    for name, scripts, log, functions in cases():
        analysis = analyze(scripts, log, log_functions=functions)
        out[name] = {variant: digest(trace.kept) for variant, trace in sorted(analysis.traces.items())}
    return out


if __name__ == "__main__":
    if "--write" not in sys.argv:
        raise SystemExit("usage: python -m tests.analysis.snapshot_cases --write")
    SNAPSHOT.write_text(json.dumps(record(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT}")
