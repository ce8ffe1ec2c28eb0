"""`tcfl history KEY`: a test's runs, classification and first bad version, from the database."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from app.cli import UsageError

if TYPE_CHECKING:  # the store loads when a command runs, never for --help
    from app.store.history import HistoryStore

_MARK = {"pass": ".", "fail": "F", "error": "E", "skip": "s"}
RECENT_RUNS = 10  # runs listed under the timeline, newest first


def add_db_flag(p: argparse.ArgumentParser) -> None:
    """``--db``, as every command on the CI history (history, ingest, retention) takes it."""
    p.add_argument("--db", metavar="URL", help="database URL (default TCFL_DATABASE_URL, else per-user)")


@contextmanager
def history_store(db: str | None) -> Iterator[HistoryStore]:
    """The CI history in the database ``db`` (``--db``; None: the default one), closed after use."""
    from app.cli.io import open_store
    from app.store.history import HistoryStore

    store = open_store(db)
    try:
        yield HistoryStore(store)
    finally:
        store.close()


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("history", help="show a test's CI history: verdicts, versions, flakiness")
    p.add_argument(
        "key",
        metavar="KEY",
        help="the test, by any tool's id: tests/test_a.py::TestX::test_y, tests.test_a.TestX.test_y, ...",
    )
    add_db_flag(p)
    p.add_argument("--limit", type=int, default=200, help="newest runs to show (default 200)")
    p.add_argument("--json", action="store_true", help="the same JSON as GET /v1/tests/{key}/history")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise UsageError("--limit must be at least 1")
    with history_store(args.db) as history:
        page = history.history(args.key, limit=args.limit)
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
        from app.emit.text import where_ran

        bad = where_ran(fbv.get("first_bad_commit"), fbv.get("first_bad_job"), fbv.get("first_bad"))
        if fbv["script_changed"]:
            good = where_ran(fbv.get("last_good_commit"), fbv.get("last_good_job"), fbv.get("last_good"))
            between = f" (untested between: {', '.join(fbv['between'])})" if fbv["between"] else ""
            lines.append(f"first bad version: {bad} (last good: {good}){between}")
        else:
            lines.append(f"first failure since the last pass: {bad}")
            if fbv["note"]:
                lines.append(fbv["note"])
    lines.append(f"newest runs (of {len(runs)}):")
    for r in page["runs"][:RECENT_RUNS]:
        ci = r.get("ci") or {}
        commit = f"commit {ci['commit'][:12]}" if ci.get("commit") else ""
        where = ", ".join(p for p in (commit, ci.get("job_url") or "") if p)
        lines.append(f"  {(r['started_at'] or '')[:19].replace('T', ' ')}  {r['verdict']:<5}  {where or '-'}")
    return "\n".join(lines)
