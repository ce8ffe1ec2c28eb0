"""scripts/loadbench.py against a real server: both clients count what the server answered."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from tests.service.helpers import Server

pytestmark = pytest.mark.slow  # triages the running example a dozen times over HTTP


def _loadbench() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "scripts" / "loadbench.py"
    spec = importlib.util.spec_from_file_location("loadbench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("client", ["raw", "httpx"])
def test_both_clients_post_every_request_and_read_every_answer(server: Server, client: str) -> None:
    bench = _loadbench()
    stats = asyncio.run(bench.fire(server.url, bench.body("heuristic"), 6, 3, 120, client_kind=client))
    assert stats["ok"] == 6 and stats["statuses"] == {"200": 6} and stats["client"] == client
    assert stats["errors"] == 0 and stats["p50_ms"] > 0


def test_the_raw_client_reports_a_refused_connection_as_an_error() -> None:
    bench = _loadbench()
    stats = asyncio.run(bench.fire("http://127.0.0.1:9", bench.body("heuristic"), 2, 1, 30))
    assert stats["ok"] == 0 and stats["errors"] == 2
