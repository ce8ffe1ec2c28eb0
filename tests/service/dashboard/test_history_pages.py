"""The CI-history pages over HTTP against a real ``tcfl serve``: tests, a test's timeline, signatures."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from tests.service.helpers import Server
from tests.service.test_history_surface_api import BAD, GOOD, real_log, record_history


def record_flaky(client: httpx.Client, tmp: Path, key: str) -> None:
    """One version, one environment, verdicts flipping: a flaky test."""
    logs = {"pass": real_log(GOOD, tmp), "fail": real_log(BAD, tmp)}
    runs = [
        {
            "test_id": key,
            "verdict": verdict,
            "started_at": f"2026-03-02T00:{n:02d}:00Z",
            "ci": {"job_url": f"https://ci/{key}/{n}"},
            "scripts": [{"path": "t.py", "content": GOOD}],
            "log": logs[verdict],
        }
        for n, verdict in enumerate(["pass", "fail", "pass", "fail", "pass", "fail"])
    ]
    assert client.post("/v1/runs", json=runs).status_code == 201


def history_triage(client: httpx.Client, key: str, logs: dict[str, str]) -> dict[str, Any]:
    body = {"scripts": [{"path": "t.py", "content": BAD}], "log": logs["bad"], "ranker": "heuristic"}
    found = client.post("/v1/triage", json={**body, "test": key, "level": "line", "k": 4})
    assert found.status_code == 200, found.text
    return found.json()


def test_history_pages(server: Server, tmp_path: Path) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        key, logs = record_history(client, tmp_path)
        flaky = f"t.py::test_flaky_{key[-8:]}"
        record_flaky(client, tmp_path, flaky)
        listing = client.get("/tests")
        assert listing.status_code == 200 and "Content-Security-Policy" in listing.headers
        rows = re.findall(r'<tr data-testid="test-row">(.*?)</tr>', listing.text, re.S)
        mine = next(r for r in rows if key in r)
        assert 'data-testid="last-verdict">fail<' in mine and 'data-testid="flaky"' not in mine
        assert 'data-testid="flaky"' in next(r for r in rows if flaky in r)

        page = client.get(f"/tests/{quote(key)}")
        assert page.status_code == 200
        verdicts = re.findall(r'data-testid="run" data-verdict="(\w+)"', page.text)
        assert verdicts == ["pass", "pass", "pass", "fail", "fail"]  # oldest first
        assert page.text.count('data-testid="version-tick"') == 2
        assert (
            "<ins>+     return x * 2 + 1</ins>" in page.text and "<del>-     return x * 2</del>" in page.text
        )
        assert ' style="' not in page.text  # the CSP forbids inline styles
        assert client.get("/tests/no::such_test").status_code == 404

        sigs = client.get("/signatures")
        assert sigs.status_code == 200
        group = next(
            r for r in re.findall(r'<tr data-testid="signature-row">(.*?)</tr>', sigs.text, re.S) if key in r
        )
        assert flaky in group  # the same assertion failed in both tests: one signature

        triage = history_triage(client, key, logs)
        shown = client.get(f"/triage/{triage['id']}").text
        assert 'data-testid="triage-history"' in shown and f'href="/tests/{quote(key)}"' in shown
        contributed = [i for i in triage["ranking"] if i["history"]["channels"]]
        assert shown.count('data-testid="channel-bars"') == len(contributed) >= 1
        widths = re.findall(r'<span class="chbar" aria-hidden="true"><span class="w(\d+)">', shown)
        assert widths and all(1 <= int(w) <= 20 for w in widths) and "20" in widths
