"""`tcfl ingest RUNS.jsonl`: record CI runs (passes too) in the database, idempotently."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.cli import EXIT_USAGE, UsageError
from app.cli.flags import add_job_flags, job_given
from app.cli.history import add_db_flag, history_store


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("ingest", help="record CI runs (one JSON run record per line) for history")
    p.add_argument(
        "runs", type=Path, metavar="RUNS.jsonl", help="run records: test_id, verdict, ... per line"
    )
    add_db_flag(p)
    add_job_flags(p)
    p.add_argument("--json", action="store_true", help="print each stored run's id, version and err_sig")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from app.history.records import parse_run, with_job

    try:
        job = job_given(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        text = args.runs.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {args.runs}: {exc}") from exc
    records, bad = [], []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(with_job(parse_run(json.loads(line)), job))
        except json.JSONDecodeError as exc:
            bad.append(f"{args.runs}:{n}: not JSON ({exc.msg})")
        except ValueError as exc:
            bad.append(f"{args.runs}:{n}: {exc}")
    if not records:
        raise UsageError(bad[0] if bad else f"{args.runs} holds no run record")
    with history_store(args.db) as history:  # a bad record never loses the others
        created = history.add_runs(records)
    if args.json:
        print(json.dumps({"runs": created}, indent=1))
    else:
        new = sum(not c["duplicate"] for c in created)
        print(f"{new} runs stored, {len(created) - new} already known", file=sys.stderr)
    if bad:  # the exit status says the input was not all good, as it always did
        for line in bad:
            print(f"tcfl: error: {line} (not recorded)", file=sys.stderr)
        return EXIT_USAGE
    return 0
