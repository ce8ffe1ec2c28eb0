"""Re-grade the kept corpus with the miner's current grading rules, without the source clones.

    python scripts/corpus_regrade.py [corpus/mined] [--write]

Each case keeps what the grade reads: the log cut, the files at the faulty commit (and the helpers its
frames name), the fix's diff over them (the fixed files are rebuilt from it), its subject, and in its
earlier reasons the facts it does not keep whole (product files the fix changed, a message saying the
error was only logged). Prints how many cases change grade, per hand-check verdict, and the mining
precision by grade before and after; ``--write`` stores the new grades and reasons in the cases.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.mining.extract import FixFacts, LogCut, fix_nature, grade, log_frames, parse_unified_diff

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")
_PRODUCT = "the fix also changes code that is not test code: "
_TRACEBACK = "the log holds a traceback or frame locations"
_STATUS = "the log holds only status lines"
_LOGGED = "the message says the error was only logged, not that the test failed"


def apply_diff(files: dict[str, str], diff: str) -> dict[str, str]:
    """The fixed version of each file a zero-context (``-U0``) diff changes."""
    edits: dict[str, list[tuple[int, int, list[str]]]] = {}
    path = ""
    for line in diff.split("\n"):
        if line.startswith("--- "):
            old = line[4:].split("\t")[0]
            path = old[2:] if old.startswith("a/") else ""
        elif path and (m := _HUNK.match(line)):
            start, count = int(m.group(1)), int(m.group(2) or "1")
            # a pure insertion (count 0) goes after line ``start``
            edits.setdefault(path, []).append((start if count else start + 1, count, []))
        elif path and line.startswith("+") and not line.startswith("+++") and edits.get(path):
            edits[path][-1][2].append(line[1:])
    fixed: dict[str, str] = {}
    for name, changes in edits.items():
        if name not in files:
            continue
        lines = files[name].split("\n")
        for start, count, new in sorted(changes, reverse=True):  # bottom up: earlier numbers stay valid
            lines[start - 1 : start - 1 + count] = new
        fixed[name] = "\n".join(lines)
    return fixed


def facts_of(case: dict[str, Any]) -> FixFacts:
    """The grade's facts, rebuilt from a kept case."""
    text = case["failure_log"]
    reasons = case.get("confidence_reasons", [])
    # what marked the log (kept only as the earlier grade's reason): frames, an error line or status lines
    if _TRACEBACK in reasons:
        markers = frozenset({"traceback"})
    elif _STATUS in reasons:
        markers = frozenset({"status"})
    else:
        markers = frozenset({"exception"})
    cut = LogCut(text, markers, 1)
    faulty = {f["path"]: f["content"] for f in case["test_files"] if f.get("role", "faulty") == "faulty"}
    context = {f["path"]: f["content"] for f in case["test_files"] if f.get("role") == "context"}
    diff = case["fix_diff"]
    changed = sum(len(h.removed) + h.added for h in parse_unified_diff(diff))
    product = tuple(r[len(_PRODUCT) :] for r in reasons if r.startswith(_PRODUCT))
    message = (
        case["fix_subject"] + "\n\n" + text + ("\n\nthe error is only logged" if _LOGGED in reasons else "")
    )
    return FixFacts(
        log=cut,
        frames=log_frames(text),
        faulty_files=faulty,
        fixed_files=apply_diff(faulty, diff),
        changed_lines=changed,
        product_files=product,
        faulty_count=len(case["faulty_lines"]),
        nature=fix_nature(diff),
        message=message,
        context_files=context,
        diff=diff,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", default="corpus/mined", type=Path)
    parser.add_argument("--write", action="store_true", help="store the new grades in the cases")
    parser.add_argument(
        "--draw", type=int, default=50, metavar="N", help="also check ten seeded draws of N high cases"
    )
    args = parser.parse_args()
    before: dict[str, Counter[str]] = {}
    after: dict[str, Counter[str]] = {}
    moves: Counter[tuple[str, str, str]] = Counter()
    high: list[str] = []  # verdicts of the cases graded high now
    for path in sorted(args.corpus.glob("*/*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        verdict = case.get("hand_check", {}).get("verdict", "unchecked")
        g = grade(facts_of(case))
        new = "dropped" if g.other_version is not None else g.confidence
        before.setdefault(case["confidence"], Counter())[verdict] += 1
        after.setdefault(new, Counter())[verdict] += 1
        if new == "high":
            high.append(verdict)
        if new != case["confidence"]:
            moves[(case["confidence"], new, verdict)] += 1
            print(f"{case['id']}: {case['confidence']} -> {new} ({verdict})")
        if args.write and (new != case["confidence"] or list(g.reasons) != case["confidence_reasons"]):
            # a case the grade now drops stays as the record of what it was, graded low with the reason
            case["confidence"] = "low" if new == "dropped" else new
            case["confidence_reasons"] = list(g.reasons)
            path.write_text(json.dumps(case, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for (old, new, verdict), n in sorted(moves.items()):
        print(f"{old} -> {new}: {n} {verdict}")
    for name, table in (("before", before), ("after", after)):
        cells = []
        for g_name in ("high", "medium", "low", "dropped"):
            c = table.get(g_name, Counter())
            if c:
                total = sum(c.values())
                cells.append(f"{g_name} {c['right']}/{total} = {100 * c['right'] / total:.1f} %")
        print(f"precision {name}: " + ", ".join(cells))
    if args.draw and len(high) >= args.draw:
        draws = [sum(v == "right" for v in random.Random(seed).sample(high, args.draw)) for seed in range(10)]
        print(f"right in ten seeded draws of {args.draw} high cases: {draws}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
