"""The dashboard's pages over HTTP against a real ``tcfl serve``: lists, filters, paging, errors, keys."""

from __future__ import annotations

import re

import httpx

from tests.service.dashboard.conftest import API_KEY, csrf, example_files, post_example
from tests.service.helpers import Server, example_body

ROW = re.compile(r'<a href="/triage/(\d+)" aria-label="Triage')


def row_ids(html: str) -> list[int]:
    return [int(n) for n in ROW.findall(html)]


def test_list_filters_and_pages_newest_first(http: httpx.Client) -> None:
    ids = [post_example(http, test_id="alpha" if i % 2 else "beta")["id"] for i in range(27)]
    page = http.get("/")
    assert page.status_code == 200
    first = row_ids(page.text)
    assert first == sorted(ids, reverse=True)[:25]
    older = re.search(r'href="(/\?[^"]*cursor=\d+)" rel="next"', page.text)
    assert older is not None
    rest = row_ids(http.get(older.group(1).replace("&amp;", "&")).text)
    assert rest == sorted(ids, reverse=True)[25:]

    alpha = row_ids(http.get("/", params={"test_id": "alpha"}).text)
    assert alpha == sorted(ids[1::2], reverse=True)[:25]
    assert row_ids(http.get("/", params={"status": "failed"}).text) == []
    odd = http.get("/", params={"status": "nonsense", "cursor": "x"})
    assert odd.status_code == 200 and "unknown status" in odd.text and "not valid" in odd.text


def test_failure_page_escapes_user_text_and_404s(http: httpx.Client) -> None:
    script, log = example_files()
    hostile = script + '\n# </code><script>alert("x")</script>\n'
    body = example_body(scripts=[{"path": "<b>evil</b>.py", "content": hostile}], log=log)
    triage_id = http.post("/v1/triage", json=body).json()["id"]
    page = http.get(f"/triage/{triage_id}")
    assert page.status_code == 200
    assert "<script>alert" not in page.text and "&lt;script&gt;alert" in page.text
    assert "<b>evil</b>" not in page.text
    for missing in ("999999", "abc", "0", "99999999999999"):
        response = http.get(f"/triage/{missing}")
        assert response.status_code == 404 and "no triage" in response.text.lower()


def test_feedback_rejects_lines_outside_the_scripts(http: httpx.Client) -> None:
    triage_id = post_example(http)["id"]
    token = csrf(http)
    for bad in ("0@test_example.py", "25@test_example.py", "3@other.py", "three"):
        response = http.post(f"/triage/{triage_id}/feedback", data={"line": bad, "csrf_token": token})
        assert response.status_code == 422 and "do not name a line" in response.text
    ok = http.post(
        f"/triage/{triage_id}/feedback", data={"line": ["24@test_example.py"], "csrf_token": token}
    )
    assert ok.status_code == 303 and ok.headers["location"] == f"/triage/{triage_id}?saved=1#feedback"
    missing = http.post("/triage/424242/feedback", data={"line": "1@a.py", "csrf_token": token})
    assert missing.status_code == 404


def test_submit_uploads_and_shows_service_errors_on_the_form(http: httpx.Client) -> None:
    script, log = example_files()
    files = {
        "script_file_0": ("test_example.py", script.encode(), "text/x-python"),
        "log_file": ("failure.log", log.encode(), "text/plain"),
    }
    data = {"log_functions": "Log.log", "ranker": "heuristic", "k": "2", "csrf_token": csrf(http)}
    done = http.post("/submit", data=data, files=files)
    assert done.status_code == 303
    triage_id = int(done.headers["location"].rsplit("/", 1)[1])
    stored = http.get(f"/v1/triage/{triage_id}").json()
    assert len(stored["ranking"]) == 2 and stored["ranking"][0]["path"] == "test_example.py"

    llm = http.post("/submit", data={**data, "ranker": "llm"}, files=files)
    assert llm.status_code == 422 and "TCFL_MODEL_URL is not set" in llm.text
    assert 'id="form-errors"' in llm.text and "internal error" not in llm.text
    assert re.search(r'<textarea id="log"[^>]*>[^<]*ZeroDivisionError', llm.text)  # the upload is kept
    many = {f"script_file_{i}": (f"s{i}.py", b"x = 1\n", "text/plain") for i in range(60)}
    unreadable = http.post("/submit", data=data, files=many)
    assert unreadable.status_code == 400 and "could not be read" in unreadable.text
    binary = http.post("/submit", data=data, files={"script_file_0": ("a.py", b"\xff\xfe", "text/plain")})
    assert binary.status_code == 422 and "not UTF-8" in binary.text


def test_running_example_prefill_and_static_assets(http: httpx.Client) -> None:
    page = http.get("/submit", params={"example": "running"})
    assert page.status_code == 200 and "Log.log" in page.text and "execute_tests" in page.text
    for asset in ("/static/dashboard.css", "/static/dashboard.js"):
        assert http.get(asset).status_code == 200


def test_keys_page_form_cookie_and_checks(keyed_server: Server) -> None:
    with httpx.Client(base_url=keyed_server.url, timeout=60, follow_redirects=False) as client:
        asked = client.get("/?status=done")
        assert asked.status_code == 401 and 'name="api_key"' in asked.text
        assert 'value="/?status=done"' in asked.text
        assert client.get("/static/dashboard.css").status_code == 200
        assert client.get("/batches/1/progress").status_code == 401
        assert client.get("/batches/1/progress").json()["detail"].startswith("missing or invalid")

        token = csrf(client, "/?status=done")
        wrong = client.post("/key", data={"api_key": "nope", "next": "/", "csrf_token": token})
        assert wrong.status_code == 401 and "not valid" in wrong.text
        huge = client.post("/key", data={"api_key": "k" * 20_000, "csrf_token": token})
        assert huge.status_code == 401 and "too large" in huge.text
        forged = client.post("/key", data={"api_key": API_KEY, "next": "/", "csrf_token": "x" * 43})
        assert forged.status_code == 403 and "CSRF" in forged.text
        evil = client.post("/key", data={"api_key": API_KEY, "next": "//evil.example/x", "csrf_token": token})
        assert evil.status_code == 303 and evil.headers["location"] == "/"
        cookie = evil.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie

        assert client.get("/").status_code == 200
        assert client.get("/v1/triage").status_code == 401  # the API itself reads X-API-Key only
        assert client.get("/batches/424242/progress").status_code == 404

        client.cookies.set("tcfl_api_key", "stale")
        stale = client.get("/")
        assert stale.status_code == 401 and "no longer valid" in stale.text

    with httpx.Client(base_url=keyed_server.url, timeout=60, headers={"X-API-Key": API_KEY}) as scripted:
        assert scripted.get("/").status_code == 200
        batch = scripted.post("/v1/batches", json={"cases": [example_body()]}).json()
        progress = scripted.get(f"/batches/{batch['id']}/progress").json()
        assert progress["id"] == batch["id"] and progress["total"] == 1
    with httpx.Client(base_url=keyed_server.url, timeout=60, headers={"X-API-Key": "wrong"}) as bad:
        assert bad.get("/").status_code == 401


def test_failed_triage_page_explains_instead_of_crashing(http: httpx.Client) -> None:
    script, log = example_files()
    twice = [{"path": "t.py", "content": script}, {"path": "t.py", "content": script}]
    refused = http.post("/v1/triage", json=example_body(scripts=twice, log=log))
    assert refused.status_code == 422
    failed = row_ids(http.get("/", params={"status": "failed"}).text)
    assert failed
    page = http.get(f"/triage/{failed[0]}")
    assert page.status_code == 200
    assert "This triage failed" in page.text and "share a path" in page.text
    assert 'data-testid="log"' not in page.text  # nothing to show, and nothing recomputed


def test_list_searches_test_file_and_error_and_filters_by_ranker_and_date(http: httpx.Client) -> None:
    script, log = example_files()
    other_log = log.replace("ZeroDivisionError: division by zero", "KeyError: 'user-991'")
    zero = post_example(http, test_id="suite::test_zero_search")["id"]
    key = post_example(
        http,
        test_id="suite::test_key_search",
        scripts=[{"path": "net/test_keys_search.py", "content": script}],
        log=other_log,
    )["id"]
    assert row_ids(http.get("/", params={"q": "test_zero_search"}).text) == [zero]
    assert row_ids(http.get("/", params={"q": "TEST_KEYS_SEARCH.PY"}).text) == [key]  # a file, any case
    by_error = row_ids(http.get("/", params={"q": "user-991"}).text)
    assert by_error == [key]
    assert row_ids(http.get("/", params={"q": "%"}).text) == []  # LIKE wildcards are literal
    assert key in row_ids(http.get("/", params={"q": "_search", "ranker": "heuristic"}).text)
    assert row_ids(http.get("/", params={"q": "_search", "ranker": "llm"}).text) == []
    today = row_ids(http.get("/", params={"q": "_search", "since": "2000-01-01", "until": "2999-12-31"}).text)
    assert set(today) == {zero, key}
    assert row_ids(http.get("/", params={"q": "_search", "until": "2000-01-01"}).text) == []
    odd = http.get("/", params={"since": "yesterday", "ranker": "oracle", "sig": "nope"})
    assert odd.status_code == 200
    assert (
        "must be a date" in odd.text and "unknown ranker" in odd.text and "signature is not valid" in odd.text
    )


def test_groups_put_failures_with_one_signature_together(http: httpx.Client) -> None:
    script, log = example_files()
    moved = "\n\n" + script  # the same code two lines lower: line numbers differ, the signature does not
    tag = "grp-" + str(len(row_ids(http.get("/").text)))
    same = [post_example(http, test_id=f"{tag}-a")["id"], post_example(http, test_id=f"{tag}-b")["id"]]
    shifted = post_example(
        http, test_id=f"{tag}-c", scripts=[{"path": "test_example.py", "content": moved}], log=log
    )["id"]
    other = post_example(http, test_id=f"{tag}-d", log=log.replace("division by zero", "bad operand 'x'"))[
        "id"
    ]
    page = http.get("/", params={"q": tag, "group": "1"})
    assert page.status_code == 200
    counts = re.findall(r'href="/\?sig=([0-9a-f]{40})" data-testid="group-count">(\d+) failure', page.text)
    assert sorted(int(n) for _, n in counts) == [1, 3]
    big = next(sig for sig, n in counts if n == "3")
    members = row_ids(http.get("/", params={"sig": big}).text)
    assert set(members) >= {*same, shifted} and other not in members
    assert "same signature" in http.get("/", params={"q": tag}).text


def test_a_triage_stored_before_snapshots_gets_one_on_first_view(http: httpx.Client, server: Server) -> None:
    from sqlalchemy import create_engine, text

    triage_id = post_example(http)["id"]
    engine = create_engine(server.database_url)
    try:
        with engine.begin() as conn:  # what a triage stored before migration 0003 looks like
            conn.execute(text("DELETE FROM log_chunks WHERE request_id = :i"), {"i": triage_id})
            conn.execute(
                text("UPDATE analysis_snapshots SET summary_z = NULL, version = NULL WHERE request_id = :i"),
                {"i": triage_id},
            )
        page = http.get(f"/triage/{triage_id}")
        assert page.status_code == 200 and 'id="log-4"' in page.text and 'id="L0-17"' in page.text
        with engine.connect() as conn:
            chunks = conn.execute(
                text("SELECT count(*) FROM log_chunks WHERE request_id = :i"), {"i": triage_id}
            )
            assert chunks.scalar() == 1
            stored = conn.execute(
                text("SELECT version FROM analysis_snapshots WHERE request_id = :i"), {"i": triage_id}
            )
            assert stored.scalar() == 1
        # a snapshot written by another snapshot version is replaced the same way
        from app.analysis.snapshot import Snapshot
        from app.store import snapshots

        summary, _ = snapshots.load(engine, triage_id, lambda s: []) or ({}, [])
        snapshots.save(engine, triage_id, Snapshot({**summary, "version": 0}, ()), {})
        again = http.get(f"/triage/{triage_id}")
        assert again.status_code == 200 and 'id="log-4"' in again.text and "cannot be shown" not in again.text
        assert (snapshots.load(engine, triage_id, lambda s: []) or ({}, []))[0]["version"] == 1
    finally:
        engine.dispose()


def test_log_rows_endpoint_pages_through_the_stored_log(http: httpx.Client) -> None:
    triage_id = post_example(http)["id"]
    rows = http.get(f"/triage/{triage_id}/log", params={"first": 3, "last": 6, "at": 3})
    assert rows.status_code == 200
    assert re.findall(r'id="log-(\d+)"', rows.text) == ["3", "4", "5", "6"]
    assert 'href="#L0-2"' in rows.text  # log line 4 matched the statement on line 2
    tail = http.get(f"/triage/{triage_id}/log", params={"first": 10, "last": 99, "at": 12})
    assert re.findall(r'id="log-(\d+)"', tail.text) == [str(n) for n in range(10, 15)]
    for params in ({"first": -5, "last": 2}, {"first": 2**40, "last": 2**41}, {"first": "x"}):
        assert http.get(f"/triage/{triage_id}/log", params=params).status_code in (200, 422)
    assert http.get("/triage/999999/log").status_code == 404
    assert http.get(f"/triage/{triage_id}", params={"log": "abc"}).status_code == 200


def test_evidence_rationale_and_scaled_scores_are_shown(server: Server) -> None:
    from app.store.store import Store, make_engine
    from tests.service.test_snapshots import EXAMPLE_LOG, case, triage_data

    data = triage_data(EXAMPLE_LOG)
    top = data["ranking"][0]
    top["rationale"] = "len(values) is 0 <here>"
    top["evidence"] = [
        {
            "channel": "traceback",
            "weight": 3.0,
            "path": top["path"],
            "line": 17,
            "detail": "innermost frame",
            "source": "ZeroDivisionError: division by zero",
            "source_line": 14,
        },
        {"channel": "lexical", "weight": 1.0, "path": top["path"], "line": 16, "detail": "shares words"},
    ]
    store = Store(make_engine(server.database_url))
    try:
        triage_id = store.record_triage(case(EXAMPLE_LOG), data).id
    finally:
        store.close()
    page = httpx.get(f"{server.url}/triage/{triage_id}").text
    item = page[page.index('id="rank-1"') : page.index('id="rank-2"')]
    assert "rationale:</strong> len(values) is 0 &lt;here&gt;" in item  # escaped
    assert item.index("traceback") < item.index("lexical")
    assert '<span class="muted">75 %</span>' in item and '<span class="muted">25 %</span>' in item
    assert 'href="#L0-17"' in item and 'href="#log-14" data-log="14"' in item
    assert "100<span" in item  # the top element's score, scaled
    assert 'data-testid="rank-item"' in page and page.count('data-testid="score"') == 3
    options = page[page.index('data-testid="options"') :]
    assert "level block" in options and "trace tplus" in options and "log_functions Log.log" in options
