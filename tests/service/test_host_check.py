"""Without API keys only known Host names are answered: a DNS-rebinding page gets a 400, not the data."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from app.service.api import create_app
from app.service.security import HostCheckMiddleware, host_name
from app.settings import Settings
from tests.service.helpers import Server


def _get(app: ASGIApp, host: str, path: str = "/") -> httpx.Response:
    """One GET through the app in process, with ``host`` sent as it is (UTF-8 bytes)."""

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.get(path, headers={"host": host.encode("utf-8")})

    with ThreadPoolExecutor(1) as thread:  # a thread of its own: never inside another test's event loop
        return thread.submit(asyncio.run, go()).result()


def _app(allowed: tuple[str, ...] = ()) -> ASGIApp:
    async def hello(_request: object) -> PlainTextResponse:
        return PlainTextResponse("hello")

    return HostCheckMiddleware(Starlette(routes=[Route("/", hello)]), allowed=allowed)


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "LOCALHOST:8000",
        "app.localhost",
        "127.0.0.1",
        "127.0.0.1:8000",
        "10.1.2.3:80",
        "[::1]:8000",
        "[::1]",
    ],
)
def test_loopback_names_and_addresses_are_answered(host: str) -> None:
    assert _get(_app(), host).status_code == 200


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:8000",
        "localhost.evil.example",
        "testserver",
        "a b",
        "x:y",
        "[::1",
        "",
        "é.example",
    ],
)
def test_other_names_are_400_naming_the_setting(host: str) -> None:
    response = _get(_app(), host)
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "TCFL_ALLOWED_HOSTS" in detail and "DNS rebinding" in detail


@pytest.mark.parametrize(
    ("allowed", "host", "status"),
    [
        (("ci.example",), "ci.example:8000", 200),
        (("ci.example",), "www.ci.example", 400),
        ((".corp.example",), "tcfl.corp.example", 200),
        ((".corp.example",), "corp.example", 200),
        ((".corp.example",), "evilcorp.example", 400),
        (("*",), "anything.example", 200),
        (("Testserver",), "testserver", 200),
    ],
)
def test_the_setting_adds_names(allowed: tuple[str, ...], host: str, status: int) -> None:
    assert _get(_app(allowed), host).status_code == status


def test_host_names_are_parsed_without_their_port() -> None:
    assert host_name("Example.COM.:443") == "example.com"
    assert host_name("[2001:db8::1]:8080") == "2001:db8::1"
    assert host_name("a:b") is None and host_name("[::1]x") is None and host_name("") is None


def _reached_health(response: httpx.Response) -> bool:
    """The request passed the host check and got the health route's answer (200, or 503 where the
    new database took longer than the health check waits for: the first request migrates it)."""
    return response.status_code in (200, 503) and "version" in response.json()


def test_the_app_checks_the_host_only_without_keys(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 't.db'}"
    open_app = create_app(Settings(database_url=url))
    refused = _get(open_app, "rebound.example", "/healthz")
    assert refused.status_code == 400
    assert refused.headers["x-frame-options"] == "DENY" and refused.headers["x-request-id"]
    assert _reached_health(_get(open_app, "127.0.0.1:8000", "/healthz"))
    named = create_app(Settings(database_url=url, allowed_hosts="tcfl.internal,testserver"))
    assert _reached_health(_get(named, "tcfl.internal", "/healthz"))
    keyed = create_app(Settings(database_url=url, service_api_keys="k1"))
    assert _reached_health(_get(keyed, "rebound.example", "/healthz"))


def test_a_real_server_refuses_a_rebound_host(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        assert client.get("/healthz").status_code == 200  # Host: 127.0.0.1:port
        refused = client.get("/healthz", headers={"Host": f"rebound.example:{server.port}"})
        assert refused.status_code == 400 and "TCFL_ALLOWED_HOSTS" in refused.json()["detail"]
        posted = client.post(
            "/v1/ingest", json={"results": {"content": "x"}}, headers={"Host": "rebound.example"}
        )
        assert posted.status_code == 400
        assert client.get("/healthz", headers={"Host": f"localhost:{server.port}"}).status_code == 200
