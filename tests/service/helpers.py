"""Helpers for the service tests: `tcfl serve` subprocesses on loopback, SQLite files, PostgreSQL schemas.

PostgreSQL tests use 127.0.0.1:5432, database ``test`` (user postgres, else root; trust auth), each in
a fresh schema dropped afterwards; they skip, saying why, where no server answers.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "tests" / "data" / "running-example"
PG_HOST, PG_PORT, PG_DB = "127.0.0.1", 5432, "test"
START_TIMEOUT_S = 60.0

# Small limits, so that limit tests need no huge payloads.
LIMITS = {
    "TCFL_MAX_SCRIPT_BYTES": "60000",
    "TCFL_MAX_LOG_BYTES": "120000",
    "TCFL_MAX_FILES_PER_CASE": "4",
    "TCFL_MAX_CASES_PER_BATCH": "60",
    "TCFL_MAX_UNPACKED_BYTES": "5000000",
}


def example_body(**overrides: Any) -> dict[str, Any]:
    """The paper's running example as a POST /v1/triage body (heuristic ranker unless overridden)."""
    body: dict[str, Any] = {
        "scripts": [{"path": "test_example.py", "content": (EXAMPLE / "test_example.py").read_text()}],
        "log": (EXAMPLE / "failure.log").read_text(),
        "log_functions": ["Log.log"],
        "ranker": "heuristic",
        "level": "block",
        "k": 3,
    }
    body.update(overrides)
    return body


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


CI_MARKERS = ("GITHUB_ACTIONS", "GITLAB_CI", "JENKINS_URL")  # a CI's variables name the job tcfl records


def clean_env(**extra: str) -> dict[str, str]:
    """The parent's environment without any TCFL_ setting nor the marks of a CI job (a test that
    runs in CI must not record its jobs as the CI's job), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCFL_") and k not in CI_MARKERS}
    env.update(extra)
    return env


def tcfl_command(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from app.cli import main; sys.exit(main())", *args]


# --------------------------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------------------------


def pg_available() -> tuple[str | None, str]:
    try:
        import psycopg
    except ImportError:
        return None, "psycopg is not installed"
    reason = ""
    for user in ("postgres", "root"):
        try:
            with psycopg.connect(host=PG_HOST, port=PG_PORT, dbname=PG_DB, user=user, connect_timeout=2):
                return user, ""
        except psycopg.Error as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return None, f"no PostgreSQL at {PG_HOST}:{PG_PORT}/{PG_DB} for user postgres or root ({reason})"


@contextmanager
def pg_schema(user: str) -> Iterator[str]:
    """A fresh schema; yields a SQLAlchemy URL whose search_path is that schema."""
    import psycopg

    schema = f"tcfl_test_{uuid.uuid4().hex[:12]}"
    conninfo = {"host": PG_HOST, "port": PG_PORT, "dbname": PG_DB, "user": user}
    with psycopg.connect(**conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield f"postgresql+psycopg://{user}@{PG_HOST}:{PG_PORT}/{PG_DB}?options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(**conninfo, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


# --------------------------------------------------------------------------------------------
# Servers
# --------------------------------------------------------------------------------------------


@dataclass
class Server:
    """A ``tcfl serve`` subprocess on 127.0.0.1."""

    database_url: str
    workdir: Path
    env: dict[str, str] = field(default_factory=dict)
    worker_id: str = "test-worker"
    workers_off: bool = False
    log_level: str = "warning"
    port: int = 0
    extra_args: tuple[str, ...] = ()
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Server:
        self.port = free_port()
        args = [
            "serve",
            "--port",
            str(self.port),
            "--worker-id",
            self.worker_id,
            "--log-level",
            self.log_level,
        ]
        if self.workers_off:
            args.append("--workers-off")
        args.extend(self.extra_args)
        env = clean_env(TCFL_DATABASE_URL=self.database_url, **self.env)
        self.log_path = self.workdir / f"server-{self.port}.log"
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                tcfl_command(*args), cwd=self.workdir, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tcfl serve exited {self.proc.returncode}:\n{self.log_path.read_text()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"tcfl serve did not answer /healthz in {START_TIMEOUT_S}s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill(self) -> None:
        """kill -9: no shutdown code runs."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def client(self, **headers: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60, headers=headers)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


# --------------------------------------------------------------------------------------------
# The stand-in model server, as its own process (a real socket, a real delay)
# --------------------------------------------------------------------------------------------


@dataclass
class Standin:
    url: str
    proc: subprocess.Popen[str]
    served: int | None = None


@contextmanager
def standin(delay_s: float, mode: str = "answer", *, gate: Path | None = None) -> Iterator[Standin]:
    """The stand-in model server process, answering every chat request after ``delay_s``.

    ``mode``: answer validly, trickle (one byte a second), silent (never answer), fail (HTTP 500).
    With ``gate``, no chat request is answered before that file exists.
    """
    gate_args = [] if gate is None else ["--gate-file", str(gate)]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.openai_standin",
            "--delay",
            str(delay_s),
            "--mode",
            mode,
            *gate_args,
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise RuntimeError(f"stand-in model server did not start: {url!r}")
    handle = Standin(url=url, proc=proc)
    try:
        yield handle
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=15)
        found = re.search(r"served (\d+) chat requests", out)
        handle.served = int(found.group(1)) if found else None


def wait_for(
    predicate: Any, *, timeout: float = 120.0, interval: float = 0.2, what: str = "condition"
) -> Any:
    """Poll until ``predicate()`` is truthy; fail the test (not hang) after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout}s waiting for {what}")


def jsonl(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()
