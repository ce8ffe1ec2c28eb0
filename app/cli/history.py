"""`tcfl history KEY`: a test's runs, classification and first bad version, from the database."""

from __future__ import annotations

import argparse
import json
from typing import Any

from app.cli import UsageError

_MARK = {"pass": ".", "fail": "F", "error": "E", "skip": "s"}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("history", help="show a test's CI history: verdicts, versions, flakiness")
    p.add_argument("key", metavar="KEY", help="test key, e.g. tests/test_a.py::TestX::test_y")
    p.add_argument("--db", metavar="URL", help="database URL (default TCFL_DATABASE_URL, else per-user)")
    p.add_argument("--limit", type=int, default=200, help="newest runs to show (default 200)")
    p.add_argument("--json", action="store_true", help="the same JSON as GET /v1/tests/{key}/history")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from app.cli.io import open_store
    from app.service.history_store import HistoryStore

    if args.limit < 1:
        raise UsageError("--limit must be at least 1")
    store = open_store(args.db)
    try:
        page = HistoryStore(store).history(args.key, limit=args.limit)
    finally:
        store.close()
    if page is None:
        raise UsageError(f"no runs recorded for test {args.key!r}")
    print(json.dumps(page, indent=1) if args.json else render(page))
    return 0


def render(page: dict[str, Any]) -> str:
    runs = list(reversed(page["runs"]))
    lines = [f"{page['key']}: {len(runs)} runs, {len(page['versions'])} script versions"]
    timeline, last = [], None
    for r in runs:
        if r["version_id"] != last:
            timeline.append("|")
            last = r["version_id"]
        timeline.append(_MARK.get(r["verdict"], "?"))
    lines.append("timeline (oldest first, | = new script version): " + "".join(timeline))
    if page["classification"]:
        lines.append(f"last failure: {page['classification']}" + (" (flaky)" if page["flaky"] else ""))
    fbv = page.get("first_bad_version")
    if fbv:
        if fbv["script_changed"]:
            between = f" (untested between: {', '.join(fbv['between'])})" if fbv["between"] else ""
            lines.append(f"first bad version: {fbv['first_bad']} (last good {fbv['last_good']}){between}")
        elif fbv["note"]:
            lines.append(fbv["note"])
    return "\n".join(lines)
