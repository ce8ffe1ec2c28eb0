"""Fixtures for the service tests: fresh databases on both backends and shared real servers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from app.store.store import Store
from tests.service.helpers import LIMITS, Server, pg_available, pg_schema


@pytest.fixture(scope="session")
def pg_user() -> str:
    user, reason = pg_available()
    if user is None:
        pytest.skip(reason)
    return user


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database per test, on each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'tcfl.db'}"
    else:
        with pg_schema(request.getfixturevalue("pg_user")) as url:
            yield url


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    """A store opened (and migrated) on a fresh database, closed after the test."""
    opened = Store.open(database_url)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One shared server per backend for the API tests (heuristic ranker, small limits)."""
    workdir = tmp_path_factory.mktemp(f"serve-{request.param}")
    with _database(request, workdir) as url:
        srv = Server(url, workdir, env=dict(LIMITS)).start()
        try:
            yield srv
        finally:
            srv.stop()
        assert "unhandled error" not in srv.log_text(), "the server logged an unhandled error (a 500)"


@contextmanager
def _database(request: pytest.FixtureRequest, workdir: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{workdir / 'tcfl.db'}"
    else:
        with pg_schema(request.getfixturevalue("pg_user")) as url:
            yield url


@pytest.fixture
def api(server: Server) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client
