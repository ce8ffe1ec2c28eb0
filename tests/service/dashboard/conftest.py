"""Fixtures for the dashboard tests: real ``tcfl serve`` processes on loopback, and headless Chromium.

Browser tests drive Debian's Chromium (/usr/bin/chromium) through the ``playwright`` package's
bundled driver; ``playwright install`` is never run. When Chromium is missing,
scripts/install-browser.sh is tried (root only); if that fails the browser tests skip, saying why.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from tests.service.helpers import EXAMPLE, REPO, Server, example_body

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = REPO / "test-artifacts" / "screenshots"
API_KEY = "dash-key-7f3a"
T = TypeVar("T")


def start_server(tmp: Path, **env: str) -> Server:
    return Server(f"sqlite:///{tmp / 'tcfl.db'}", tmp, env=dict(env)).start()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """An open server (no API keys) with a fresh SQLite database, shared by one test module."""
    srv = start_server(tmp_path_factory.mktemp("dash"))
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server that requires an API key on every route but /healthz and /static."""
    srv = start_server(tmp_path_factory.mktemp("dash-keyed"), TCFL_SERVICE_API_KEYS=f"other-key,{API_KEY}")
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def http(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60, follow_redirects=False) as client:
        yield client


def post_example(client: httpx.Client, **overrides: Any) -> dict[str, Any]:
    response = client.post("/v1/triage", json=example_body(**overrides))
    assert response.status_code == 200, response.text
    return response.json()


def example_files() -> tuple[str, str]:
    return (EXAMPLE / "test_example.py").read_text(), (EXAMPLE / "failure.log").read_text()


def run_async(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine on a fresh loop in its own thread: playwright's sync API keeps a loop running here."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def _chromium_reason() -> str | None:
    """None when the browser tests can run, else why not."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install 'playwright>=1.40')"
    if not CHROMIUM.exists():
        script = REPO / "scripts" / "install-browser.sh"
        done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=900, check=False)
        if done.returncode != 0 or not CHROMIUM.exists():
            return f"no Chromium at {CHROMIUM} and install-browser.sh failed: {done.stderr.strip()[:300]}"
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    reason = _chromium_reason()
    if reason is not None:
        print(f"\nbrowser tests skipped: {reason}")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    page.screenshot(path=str(path), full_page=True)
    return path


_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf(client: httpx.Client, page: str = "/submit") -> str:
    """The form token a browser would send: read from a page (its cookie stays in the client's jar)."""
    found = _CSRF.search(client.get(page).text)
    assert found, f"no CSRF field on {page}"
    return found.group(1)
