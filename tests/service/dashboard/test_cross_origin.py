"""In a real browser, a page on another origin cannot make the user's browser write to the service."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from tests.service.dashboard.conftest import post_example
from tests.service.helpers import Server

pytestmark = pytest.mark.browser


@contextmanager
def attacker_site(html: str) -> Iterator[str]:
    """A page served from another origin (``localhost`` rather than ``127.0.0.1``, another port)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://localhost:{httpd.server_address[1]}/evil.html"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _counts(server: Server) -> tuple[int, int]:
    with server.client() as api:
        return len(api.get("/v1/triage").json()["items"]), len(api.get("/v1/batches").json()["items"])


@pytest.mark.parametrize(
    ("action", "enctype", "fields"),
    [
        ("/v1/batches", "multipart/form-data", '<textarea name="file">{}</textarea>'),
        ("/submit", "multipart/form-data", '<textarea name="log">x</textarea>'),
        ("/triage/{id}/feedback", "application/x-www-form-urlencoded", '<input name="line" value="24@t.py">'),
    ],
    ids=["batches", "submit", "feedback"],
)
def test_a_cross_origin_form_post_is_refused_with_403(
    page: Any, server: Server, action: str, enctype: str, fields: str
) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as api:
        triage_id = post_example(api)["id"]
    target = server.url + action.format(id=triage_id)
    html = (
        f'<form id="f" method="post" action="{target}" enctype="{enctype}">{fields}'
        '<button id="go" type="submit">go</button></form>'
    )
    before = _counts(server)
    with attacker_site(html) as url:
        page.goto(url)
        with page.expect_response(lambda r: r.url == target and r.request.method == "POST") as answer:
            page.click("#go")
    response = answer.value
    assert response.status == 403
    assert "refused" in response.text()
    assert _counts(server) == before


def test_a_cross_origin_fetch_changes_nothing(page: Any, server: Server) -> None:
    """``no-cors`` fetches reach the server but the answer is unreadable: the server must refuse them."""
    before = _counts(server)
    html = f"""<script>
      window.done = Promise.all([
        fetch("{server.url}/v1/triage", {{method: "POST", mode: "no-cors", body: "{{}}",
                                        headers: {{"Content-Type": "text/plain"}}}}),
        fetch("{server.url}/v1/batches", {{method: "POST", mode: "no-cors", body: "{{}}"}}),
      ]).then(() => "sent", e => "failed: " + e);
    </script>"""
    with attacker_site(html) as url:
        page.goto(url)
        assert page.evaluate("window.done") == "sent"
    assert _counts(server) == before
