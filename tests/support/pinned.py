"""The answers the speed work must not change, per case: traces, matches, the parsed log, rankings.

Recorded by ``scripts/pin_answers.py`` into ``tests/data/snapshots/answers.json`` before the
speed work (issue 25); ``tests/test_pinned_answers.py`` compares fresh answers with it. Each
answer is digested (a size and a hash prefix): small to keep, and any difference changes it.

The cases: the golden example (tests/data/running-example), the 20 real cases
(tests/data/benchmark/real) and the mined corpus's cases a person checked as right
(corpus/mined). The rankings are the hand-set weights' (``handset``) and the stack-trace
baseline's: the shipped learned model is retrained apart, and its weights are no answer of the
analysis.

The answers are computed with ``PYTHONHASHSEED=0``: the data-flow channel's evidence names the
first of several names it followed, in the order of a set of strings, which the hash seed decides.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from app.analysis.model import Script

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "tests" / "data" / "snapshots" / "answers.json"
RUNNING = ROOT / "tests" / "data" / "running-example"
REAL = ROOT / "tests" / "data" / "benchmark" / "real"
MINED = ROOT / "corpus" / "mined"
RANKINGS = (("handset", "function"), ("handset", "block"), ("handset", "line"), ("stacktrace", "block"))
K = 5

Case = tuple[str, list[Script], str, tuple[str, ...]]


def cases() -> Iterator[Case]:
    """(name, scripts, log, log-function patterns) of every pinned case, in a fixed order."""
    expected = json.loads((RUNNING / "expected.json").read_text())
    yield (
        "running-example",
        [Script("test_example.py", (RUNNING / "test_example.py").read_text())],
        (RUNNING / "failure.log").read_text(),
        tuple(expected["log_function_patterns"]),
    )
    for path in sorted(REAL.glob("*.json")):
        yield _case(f"real/{path.stem}", json.loads(path.read_text()))
    for path in sorted(MINED.glob("*/*.json")):
        data = json.loads(path.read_text())
        if (data.get("hand_check") or {}).get("verdict") == "right":
            yield _case(f"mined/{path.parent.name}/{path.stem}", data)


def _case(name: str, data: dict[str, Any]) -> Case:
    scripts = [Script(f["path"], f["content"]) for f in data["test_files"]]
    return name, scripts, data["failure_log"], tuple(data.get("log_functions") or ())


def digest(value: Any) -> str:
    """A 16-hex-digit digest of ``value``'s canonical JSON."""
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def answers(scripts: list[Script], log: str, log_functions: tuple[str, ...]) -> dict[str, Any]:
    """One case's answers: every trace variant, tplus's per-line states, the matches, the parsed
    log's messages, frames and error, and the pinned rankings (ids and scores, and a digest of
    their reasons and evidence)."""
    from app.analysis.model import VARIANTS
    from app.analysis.pipeline import analyze
    from app.options import TriageOptions
    from app.triage import finish, triage

    analysis = analyze(scripts, log, log_functions=log_functions, variants=VARIANTS, explain=True)
    out: dict[str, Any] = {}
    for variant, trace in sorted(analysis.traces.items()):
        out[f"trace/{variant}"] = digest(sorted(f"{loc.path}:{loc.line}" for loc in trace.kept))
    tplus = analysis.traces["tplus"]
    out["states/tplus"] = digest(
        sorted((loc.path, loc.line, str(ev.state), ev.rule, ev.detail) for loc, ev in tplus.evidence.items())
    )
    match = analysis.match
    out["match"] = digest(
        {
            "exe": sorted(match.exe),
            "nexe": sorted(match.nexe),
            "multi": sorted(match.multi),
            "matches": [[m, list(sids)] for m, sids in match.matches],
        }
    )
    out["errors"] = digest(
        {
            "statements": list(analysis.error_statements),
            "frames": [[f.path, f.line, f.function] for f in analysis.error_frames],
        }
    )
    parsed = analysis.log
    out["log"] = digest(
        {
            "messages": [[m.line, m.end_line, m.text, m.level] for m in parsed.messages],
            "frames": [[f.path, f.line, f.function, f.code, f.log_line] for f in parsed.frames],
            "error": parsed.error_message,
            "format": parsed.format,
            "warnings": list(parsed.warnings),
        }
    )
    out["warnings"] = digest(list(analysis.warnings))
    for ranker, level in RANKINGS:
        options = TriageOptions(ranker=ranker, level=level, k=K, log_functions=log_functions)
        result = finish(lambda o=options: triage(scripts, log, o, client=None))
        items = result.ranking
        out[f"rank/{ranker}/{level}"] = [[item.id, round(item.score, 6)] for item in items]
        why = [[item.reason, *map(_evidence, item.evidence)] for item in items]
        out[f"why/{ranker}/{level}"] = digest(why)
    return out


def _evidence(ev: Any) -> list[Any]:
    """One piece of a ranked item's evidence; its weight rounded (sums of floats differ in the last
    bits with the order a set gives them, which the string hash seed decides)."""
    return [str(ev.channel), round(ev.weight, 6), ev.path, ev.line, ev.detail, ev.source, ev.source_line]


def record() -> dict[str, dict[str, Any]]:
    return {name: answers(scripts, log, functions) for name, scripts, log, functions in cases()}


def sample(every: int = 60) -> list[Case]:
    """The quick lane's cases: the golden example, every 4th real case and every ``every``-th mined
    case (the slow lane checks them all)."""
    chosen = list(cases())
    real = [c for c in chosen if c[0].startswith("real/")]
    mined = [c for c in chosen if c[0].startswith("mined/")]
    golden = [c for c in chosen if not c[0].startswith(("real/", "mined/"))]
    return golden + real[::4] + mined[::every]


def changed(chosen: list[Case]) -> list[str]:
    """``case: answer`` for every answer of ``chosen`` that differs from the pinned one."""
    pinned = json.loads(SNAPSHOT.read_text())
    out = []
    for name, scripts, log, functions in chosen:
        fresh, expected = answers(scripts, log, functions), pinned.get(name, {})
        out += [f"{name}: {k}" for k in sorted(set(fresh) | set(expected)) if fresh.get(k) != expected.get(k)]
    return out


def write() -> Path:
    """The answers, one case a line (a changed answer shows as one changed line in a diff)."""
    rows = [f"{json.dumps(name)}: {json.dumps(a, sort_keys=True)}" for name, a in sorted(record().items())]
    SNAPSHOT.write_text("{\n" + ",\n".join(rows) + "\n}\n")
    return SNAPSHOT
