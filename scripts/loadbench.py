"""Bounded load benchmark for ``POST /v1/triage`` on loopback.

Starts its own ``tcfl serve`` (temporary SQLite file, batch worker off) and, for the model mode,
the stand-in model server from ``tests/support/openai_standin.py`` answering after a delay; fires
N requests with at most C in flight; prints requests/s, latency percentiles and errors; stops
everything it started. Run from the repository root:

    .venv/bin/python scripts/loadbench.py                   # both modes, 200 requests, 200 at once
    .venv/bin/python scripts/loadbench.py --mode model --model-delay 0.2 --json
    .venv/bin/python scripts/loadbench.py --url http://127.0.0.1:8000 --mode heuristic
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "tests" / "data" / "running-example"


def body(ranker: str) -> dict[str, Any]:
    return {
        "scripts": [{"path": "test_example.py", "content": (EXAMPLE / "test_example.py").read_text()}],
        "log": (EXAMPLE / "failure.log").read_text(),
        "log_functions": ["Log.log"],
        "ranker": ranker,
        "test_id": "loadbench",
    }


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


async def fire(
    url: str, payload: dict[str, Any], requests: int, concurrency: int, timeout: float
) -> dict[str, Any]:
    """``requests`` POSTs, at most ``concurrency`` in flight; the whole run is cut off at ``timeout``."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    gate = asyncio.Semaphore(concurrency)

    async def one(client: httpx.AsyncClient) -> None:
        async with gate:
            started = time.perf_counter()
            try:
                response = await client.post("/v1/triage", json=payload)
                key = str(response.status_code)
            except httpx.HTTPError as exc:
                key = type(exc).__name__
            latencies.append(time.perf_counter() - started)
            statuses[key] = statuses.get(key, 0) + 1

    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=timeout) as client:
        for _ in range(3):  # warm-up: imports, first connection, SQLite file creation
            await one(client)
        latencies.clear()
        statuses.clear()
        started = time.perf_counter()
        tasks = [asyncio.create_task(one(client)) for _ in range(requests)]
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
        wall = time.perf_counter() - started
    ok = statuses.get("200", 0)
    return {
        "requests": requests,
        "concurrency": concurrency,
        "completed": len(latencies),
        "ok": ok,
        "errors": requests - ok,
        "statuses": statuses,
        "wall_s": round(wall, 3),
        "requests_per_s": round(ok / wall, 1) if wall else 0.0,
        "p50_ms": round(percentile(latencies, 0.50) * 1000, 1),
        "p90_ms": round(percentile(latencies, 0.90) * 1000, 1),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
        "max_ms": round(max(latencies, default=float("nan")) * 1000, 1),
        "mean_ms": round(statistics.fmean(latencies) * 1000, 1) if latencies else float("nan"),
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def standin(delay_s: float) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.openai_standin", "--delay", str(delay_s)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http"):
            raise SystemExit(f"loadbench: the stand-in model server did not start ({url!r})")
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def server(workdir: Path, env_extra: dict[str, str]) -> Iterator[str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCFL_")}
    env.update({"TCFL_DATABASE_URL": f"sqlite:///{workdir / f'bench-{port}.db'}", **env_extra})
    command = [sys.executable, "-c", "import sys; from app.cli import main; sys.exit(main())"]
    args = ["serve", "--port", str(port), "--workers-off", "--log-level", "warning"]
    log = (workdir / f"serve-{port}.log").open("wb")
    proc = subprocess.Popen([*command, *args], env=env, cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                tail = Path(log.name).read_text(errors="replace")[-2000:]
                raise SystemExit(f"loadbench: tcfl serve did not start:\n{tail}")
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def run_mode(mode: str, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    payload = body("heuristic" if mode == "heuristic" else "llm")
    if args.url:
        stats = asyncio.run(fire(args.url, payload, args.requests, args.concurrency, args.timeout))
    elif mode == "heuristic":
        with server(workdir, {}) as url:
            stats = asyncio.run(fire(url, payload, args.requests, args.concurrency, args.timeout))
    else:
        with standin(args.model_delay) as model_url:
            extra = {"TCFL_MODEL_URL": model_url, "TCFL_MODEL_CONCURRENCY": str(args.model_concurrency)}
            with server(workdir, extra) as url:
                stats = asyncio.run(fire(url, payload, args.requests, args.concurrency, args.timeout))
    stats["mode"] = mode
    if mode == "model":
        stats["model_delay_ms"] = round(args.model_delay * 1000)
        stats["model_concurrency"] = args.model_concurrency
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("heuristic", "model", "both"), default="both")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--model-delay", type=float, default=0.2, help="stand-in answer delay in seconds")
    parser.add_argument(
        "--model-concurrency", type=int, default=64, help="TCFL_MODEL_CONCURRENCY for the server"
    )
    parser.add_argument("--timeout", type=float, default=300, help="cut-off for one mode's run, seconds")
    parser.add_argument("--url", help="benchmark this running server instead of starting one")
    parser.add_argument("--json", action="store_true", help="print one JSON object per mode")
    args = parser.parse_args(argv)
    if args.requests < 1 or args.concurrency < 1:
        parser.error("--requests and --concurrency must be >= 1")
    modes = ("heuristic", "model") if args.mode == "both" else (args.mode,)
    with tempfile.TemporaryDirectory(prefix="tcfl-loadbench-") as tmp:
        for mode in modes:
            stats = run_mode(mode, args, Path(tmp))
            if args.json:
                print(json.dumps(stats), flush=True)
            else:
                extra = ""
                if mode == "model":
                    extra = f" (stand-in delay {stats['model_delay_ms']} ms, TCFL_MODEL_CONCURRENCY "
                    extra += f"{stats['model_concurrency']})"
                print(
                    f"{mode:9s} {stats['ok']}/{stats['requests']} ok, {stats['concurrency']} at once{extra}: "
                    f"{stats['requests_per_s']} req/s, p50 {stats['p50_ms']} ms, p90 {stats['p90_ms']} ms, "
                    f"p99 {stats['p99_ms']} ms, max {stats['max_ms']} ms, errors {stats['errors']} "
                    f"{stats['statuses']}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
