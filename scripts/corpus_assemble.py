"""Assemble the mined corpus kept in the repository: mined cases plus their hand checks.

    python scripts/corpus_assemble.py MINED_DIR... [--checks corpus/checks] [--out corpus/mined]
                                      [--max-share 0.4]

Each MINED_DIR holds one folder per source repository as `tcfl corpus mine --out` wrote it. Each line
of the check files (JSONL: id, verdict, fault_kind, log_kind, reason) is a person's verdict on one
case; only checked cases are written, each with its verdict under `hand_check` (evaluation and
learning use the `right` ones). No repository may hold more than `--max-share` of the right cases:
of one that would, a seeded random draw of its right cases is kept (the others are left out).
Prints the per-repository table and the mining precision by grade.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
from collections import Counter, defaultdict
from pathlib import Path

from app.mining.mine import is_open


def load_checks(folder: Path) -> dict[str, dict]:
    checks: dict[str, dict] = {}
    for path in sorted(folder.glob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                print(f"{path.name}:{n}: not JSON; skipped", file=sys.stderr)
                continue
            if record.get("verdict") not in {"right", "wrong", "unsure"}:
                print(f"{path.name}:{n}: no verdict; skipped", file=sys.stderr)
                continue
            checks[record["id"]] = record
    return checks


def cap(chosen: list[tuple[dict, dict]], share: float, seed: int) -> list[tuple[dict, dict]]:
    """Leave out right cases of the largest repository until none holds more than ``share`` of them."""
    right: dict[str, list[int]] = defaultdict(list)
    for n, (case, check) in enumerate(chosen):
        if check["verdict"] == "right":
            right[case["repo"]].append(n)
    total = sum(len(v) for v in right.values())
    drop: set[int] = set()
    for _repo, indexes in sorted(right.items(), key=lambda kv: -len(kv[1])):
        others = total - len(indexes)
        allowed = int(share * others / (1 - share))
        if len(indexes) > allowed:
            drop |= set(random.Random(seed).sample(indexes, len(indexes) - allowed))
            total = others + allowed
    return [item for n, item in enumerate(chosen) if n not in drop]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mined", type=Path, nargs="+")
    parser.add_argument("--checks", type=Path, default=Path("corpus/checks"))
    parser.add_argument("--out", type=Path, default=Path("corpus/mined"))
    parser.add_argument("--max-share", type=float, default=0.4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    checks = load_checks(args.checks)
    table: dict[str, Counter[str]] = defaultdict(Counter)
    precision: dict[str, Counter[str]] = defaultdict(Counter)
    licences: dict[str, str] = {}
    written = 0
    chosen: list[tuple[dict, dict]] = []
    for mined in args.mined:
        for case_path in sorted(mined.glob("*/[!.]*.json")):
            case = json.loads(case_path.read_text(encoding="utf-8"))
            check = checks.get(case["id"])
            if check is None:
                continue
            if not is_open(case.get("licence", "unknown")):
                print(
                    f"{case['id']}: licence {case.get('licence')!r} is not an open one; left out",
                    file=sys.stderr,
                )
                continue
            chosen.append((case, check))
    chosen = cap(chosen, args.max_share, args.seed)
    if args.out.exists():
        shutil.rmtree(args.out)
    for case, check in chosen:
        case["hand_check"] = {
            "verdict": check["verdict"],
            "reason": check.get("reason", ""),
            "log_kind": check.get("log_kind", ""),
        }
        if check.get("fault_kind"):
            case["fault_kind"] = check["fault_kind"]
        folder = args.out / case["repo"].replace("/", "__")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{case['id']}.json").write_text(json.dumps(case, indent=1, ensure_ascii=False) + "\n")
        written += 1
        table[case["repo"]][check["verdict"]] += 1
        precision[case["confidence"]][check["verdict"]] += 1
        licences[case["repo"]] = case.get("licence", "unknown")
    missing = sorted(set(checks) - {p.stem for p in args.out.glob("*/*.json")})
    if missing:
        print(f"{len(missing)} checked ids have no mined case: {', '.join(missing[:5])}", file=sys.stderr)
    right = sum(c["right"] for c in table.values())
    print(f"{written} checked cases written to {args.out}; {right} right")
    print(f"{'repository':45} {'licence':12} {'right':>6} {'wrong':>6} {'unsure':>6} {'share':>6}")
    for repo, c in sorted(table.items(), key=lambda kv: -kv[1]["right"]):
        share = c["right"] / right if right else 0.0
        print(f"{repo:45} {licences[repo]:12} {c['right']:6} {c['wrong']:6} {c['unsure']:6} {share:6.1%}")
    print("mining precision by grade (right / checked):")
    for grade in ("high", "medium", "low"):
        c = precision.get(grade, Counter())
        total = sum(c.values())
        if total:
            print(f"  {grade:7} {c['right']}/{total} = {c['right'] / total:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
