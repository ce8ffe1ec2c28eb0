"""The list page's search, filters and groups on both database backends."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta

from app.service.dashboard.queries import Filters, groups, search
from app.store.snapshots import SNAPSHOT_KEY
from app.store.store import Store
from tests.service.test_snapshots import EXAMPLE_LOG, case, triage_data


def _store(store: Store, log: str, test_id: str) -> int:
    data = triage_data(log)
    return store.record_triage(replace(case(log), test_id=test_id), data).id


def test_search_filters_and_groups(database_url: str) -> None:
    store = Store.open(database_url)
    try:
        zero = [_store(store, EXAMPLE_LOG, f"suite::zero_{i}") for i in range(3)]
        key_log = EXAMPLE_LOG.replace("ZeroDivisionError: division by zero", "KeyError: 'k_1'")
        key = _store(store, key_log, "suite::key")
        queued = store.create_request(case(EXAMPLE_LOG), status="queued")
        everything = search(store.engine, Filters(), limit=10, cursor=None)
        assert [i["id"] for i in everything.items] == [queued, key, *reversed(zero)]
        assert everything.items[0]["signature"] is None and everything.items[1]["signature"]

        def ids(**kw: object) -> list[int]:
            return [i["id"] for i in search(store.engine, Filters(**kw), limit=10, cursor=None).items]

        assert ids(q="ZERO_") == list(reversed(zero))
        assert ids(q="keyerror") == [key]
        assert ids(q="k_1") == [key] and ids(q="_") != []  # "_" is literal, and test ids contain one
        assert ids(q="test_example") == [queued, key, *reversed(zero)]  # the script's path
        assert ids(status="queued") == [queued]
        assert ids(ranker="heuristic") == [key, *reversed(zero)] and ids(ranker="llm") == []
        today = date.today()
        assert ids(since=today - timedelta(days=1), until=today + timedelta(days=1))[:1] == [queued]
        assert ids(until=today - timedelta(days=2)) == []
        page = search(store.engine, Filters(), limit=2, cursor=None)
        assert page.next_cursor == key
        rest = search(store.engine, Filters(), limit=10, cursor=page.next_cursor)
        assert [i["id"] for i in rest.items] == list(reversed(zero))

        found, more = groups(store.engine, Filters(), limit=10, offset=0)
        assert not more and [(g.count, g.tests, g.latest_id) for g in found] == [
            (3, 3, zero[-1]),
            (1, 1, key),
        ]
        assert "ZeroDivisionError" in (found[0].extra.error_message or "")
        assert ids(signature=found[0].signature) == list(reversed(zero))
        first, more = groups(store.engine, Filters(), limit=1, offset=0)
        assert more and len(first) == 1
        assert groups(store.engine, Filters(q="keyerror"), limit=10, offset=0)[0][0].latest_id == key
        stored = store.get_triage(key)
        assert stored is not None and stored.result is not None and SNAPSHOT_KEY not in stored.result
    finally:
        store.close()


def test_a_group_counts_one_test_once_whichever_tool_named_it(database_url: str) -> None:
    store = Store.open(database_url)
    try:
        for label in (
            "test_links.TestLinks.test_x",
            "test_links.py::TestLinks::test_x[1]",
            "test_links.py::other",
        ):
            _store(store, EXAMPLE_LOG, label)
        (found,), _ = groups(store.engine, Filters(), limit=10, offset=0)
        assert (found.count, found.tests) == (3, 2)  # JUnit's and pytest's ids of test_x are one test
    finally:
        store.close()
