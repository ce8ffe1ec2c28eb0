"""`tcfl retention`: apply the history retention policy (docs/design.md §8.1) to the database.

Runs older than ``--keep-days`` beyond each test's newest ``--keep-runs`` go, except each
test's last passing run and the first failure after it (the first bad version stays findable);
failing logs go after 90 days, passing ones after 14. ``--dry-run`` counts without changing.
"""

from __future__ import annotations

import argparse
import json

from app.cli import UsageError
from app.cli.history import add_db_flag, history_store


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("retention", help="drop old CI runs and logs (keeps each test's anchors)")
    add_db_flag(p)
    p.add_argument("--keep-days", type=int, metavar="N", help="keep runs of the last N days (default 180)")
    p.add_argument(
        "--keep-runs", type=int, metavar="N", help="keep each test's newest N runs, however old (default 500)"
    )
    p.add_argument("--dry-run", action="store_true", help="count what would be dropped; change nothing")
    p.add_argument("--json", action="store_true", help="print the counts as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from app.store.history import RETENTION_DAYS, RETENTION_RUNS

    keep_days = RETENTION_DAYS if args.keep_days is None else args.keep_days
    keep_runs = RETENTION_RUNS if args.keep_runs is None else args.keep_runs
    if keep_days < 0 or keep_runs < 0:
        raise UsageError("--keep-days and --keep-runs must be at least 0")
    with history_store(args.db) as history:
        counts = history.apply_retention(keep_days=keep_days, keep_runs=keep_runs, dry_run=args.dry_run)
    if args.json:
        print(json.dumps({"dry_run": args.dry_run, **counts}, indent=1))
    else:
        verb = "would drop" if args.dry_run else "dropped"
        print(
            f"{verb} {counts['runs']} runs, {counts['failing_logs']} failing logs,"
            f" {counts['passing_logs']} passing logs"
        )
    return 0
