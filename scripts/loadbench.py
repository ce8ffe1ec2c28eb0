"""Bounded load benchmark for ``POST /v1/triage`` on loopback.

Starts its own ``tcfl serve`` (temporary SQLite file, batch worker off) and, for the model mode,
the stand-in model server from ``tests/support/openai_standin.py`` answering after a delay; fires
N requests with at most C in flight; prints requests/s, latency percentiles, errors and the
CPU per request of the server (its process and its analysis workers, from /proc; the main
process alone beside) and of the client; the timed requests go over raw keep-alive sockets
unless ``--client httpx`` (httpx took 3.7 ms of the shared CPU a request here, raw 0.45); stops
everything it started. ``--mode mixed`` times the small requests while ``--large-clients``
clients (default 20) keep sending large cases (a 2,500-line script, a 1.2 MB log), one after
another. Run from the repository root:

    .venv/bin/python scripts/loadbench.py                   # heuristic and model, 200 requests
    .venv/bin/python scripts/loadbench.py --mode model --model-delay 0.2 --json
    .venv/bin/python scripts/loadbench.py --mode mixed --requests 200 --concurrency 8
    .venv/bin/python scripts/loadbench.py --url http://127.0.0.1:8000 --mode heuristic
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
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


def large_body() -> dict[str, Any]:
    """A large case: the running example with 500 more test functions and a 1.2 MB log (large lane)."""
    script = (EXAMPLE / "test_example.py").read_text()
    extra = "".join(
        f"\n\ndef test_extra_{i}(value):\n    total = value + {i}\n    print('extra {i}', total)\n"
        f"    assert total >= 0\n"
        for i in range(500)
    )
    log = (EXAMPLE / "failure.log").read_text()
    padding = "".join(f"[DEBUG] poll {i} of the device: status ok, nothing new\n" for i in range(22_000))
    return {
        **body("heuristic"),
        "scripts": [{"path": "test_example.py", "content": script + extra}],
        "log": padding + log,
        "test_id": "loadbench-large",
    }


def tree_cpu_s(pid: int) -> tuple[float, float]:
    """User+system CPU seconds of ``pid`` and every live descendant (the analysis workers), and of
    the children they already reaped (cutime/cstime), from /proc; and of ``pid`` alone."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        stats[int(entry)] = fields
    family, frontier = {pid}, [pid]
    while frontier:
        current = frontier.pop()
        for child, parent in parents.items():
            if parent == current and child not in family:
                family.add(child)
                frontier.append(child)
    total = 0
    for member in family:
        fields = stats.get(member)
        if fields is not None:
            total += sum(int(fields[i]) for i in (11, 12, 13, 14))
    own = sum(int(stats[pid][i]) for i in (11, 12)) if pid in stats else 0
    return total / tick, own / tick


class RawClient:
    """Keep-alive HTTP/1.1 POSTs of pre-encoded JSON over plain asyncio streams.

    The benchmark's own client shares the machine's cores with the server it measures: httpx
    costs several milliseconds of CPU a request here, this a fraction of one, so the figures say
    more about the server. ``post`` returns the status code; a connection the server closed is
    opened again.
    """

    def __init__(self, url: str, connections: int) -> None:
        parsed = httpx.URL(url)
        self.host, self.port = parsed.host, parsed.port or 80
        self.free: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter] | None] = asyncio.Queue()
        for _ in range(connections):
            self.free.put_nowait(None)

    @staticmethod
    def encode(path: str, payload: dict[str, Any], host: str) -> bytes:
        body = json.dumps(payload).encode("utf-8")
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        return head.encode("ascii") + body

    async def post(self, request: bytes) -> int:
        conn = await self.free.get()
        try:
            if conn is None:
                conn = await asyncio.open_connection(self.host, self.port)
            reader, writer = conn
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length, close = 0, False
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"connection" and value.strip().lower() == b"close":
                    close = True
            await reader.readexactly(length)
            if close:
                writer.close()
                conn = None
            return status
        except BaseException:
            if conn is not None:
                conn[1].close()
            conn = None
            raise
        finally:
            self.free.put_nowait(conn)

    async def aclose(self) -> None:
        while not self.free.empty():
            conn = self.free.get_nowait()
            if conn is not None:
                conn[1].close()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


async def fire(
    url: str,
    payload: dict[str, Any],
    requests: int,
    concurrency: int,
    timeout: float,
    *,
    server_pid: int | None = None,
    large_clients: int = 0,
    client_kind: str = "raw",
    distinct_scripts: bool = False,
) -> dict[str, Any]:
    """``requests`` POSTs, at most ``concurrency`` in flight; the whole run is cut off at ``timeout``.

    With ``large_clients``, that many clients post large cases back to back for the whole run
    (started, and given time to fill the server, before the timed requests). With
    ``distinct_scripts`` every request's script differs by a comment, so that no analysis worker
    has parsed it before (the cost of a script seen for the first time).
    """
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    stop = asyncio.Event()
    large_done: dict[str, int] = {}

    async def large_client(client: httpx.AsyncClient, big: dict[str, Any]) -> None:
        while not stop.is_set():
            try:
                response = await client.post("/v1/triage", json=big)
                key = str(response.status_code)
            except httpx.HTTPError as exc:
                key = type(exc).__name__
            large_done[key] = large_done.get(key, 0) + 1

    latencies: list[float] = []
    statuses: dict[str, int] = {}
    gate = asyncio.Semaphore(concurrency)

    raw = RawClient(url, concurrency)
    host = f"{raw.host}:{raw.port}"
    request = RawClient.encode("/v1/triage", payload, host)
    sent = itertools.count()

    def unique(n: int) -> dict[str, Any]:
        first = payload["scripts"][0]
        script = {**first, "content": f"{first['content']}\n# loadbench request {n}\n"}
        return {**payload, "scripts": [script, *payload["scripts"][1:]]}

    async def one(client: httpx.AsyncClient) -> None:
        async with gate:
            this = unique(next(sent)) if distinct_scripts else payload
            started = time.perf_counter()
            try:
                if client_kind == "raw":
                    key = str(
                        await raw.post(
                            RawClient.encode("/v1/triage", this, host) if distinct_scripts else request
                        )
                    )
                else:
                    key = str((await client.post("/v1/triage", json=this)).status_code)
            except (httpx.HTTPError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
                key = type(exc).__name__
            latencies.append(time.perf_counter() - started)
            statuses[key] = statuses.get(key, 0) + 1

    large_limits = httpx.Limits(max_connections=max(1, large_clients))
    async with (
        httpx.AsyncClient(base_url=url, limits=limits, timeout=timeout) as client,
        httpx.AsyncClient(base_url=url, limits=large_limits, timeout=timeout) as large,
    ):
        for _ in range(3):  # warm-up: imports, first connection, SQLite file creation
            await one(client)
        background = []
        if large_clients:
            big = large_body()
            background = [asyncio.create_task(large_client(large, big)) for _ in range(large_clients)]
            await asyncio.sleep(2.0)  # every large client has posted and the large lane is busy
        latencies.clear()
        statuses.clear()
        cpu_before = tree_cpu_s(server_pid) if server_pid else None
        client_before = time.process_time()
        started = time.perf_counter()
        tasks = [asyncio.create_task(one(client)) for _ in range(requests)]
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
        wall = time.perf_counter() - started
        client_cpu = time.process_time() - client_before
        cpu_after = tree_cpu_s(server_pid) if server_pid and cpu_before is not None else None
        stop.set()
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
    await raw.aclose()
    ok = statuses.get("200", 0)
    extra: dict[str, Any] = {"client_cpu_ms_per_request": round(client_cpu * 1000 / max(ok, 1), 2)}
    if cpu_before is not None and cpu_after is not None:
        # with large clients running the CPU is shared: per small request is then an upper bound
        cpu_used, main_used = cpu_after[0] - cpu_before[0], cpu_after[1] - cpu_before[1]
        extra["server_cpu_ms_per_request"] = round(cpu_used * 1000 / max(ok, 1), 2)
        extra["server_main_cpu_ms_per_request"] = round(main_used * 1000 / max(ok, 1), 2)
        extra["server_cpu_s"] = round(cpu_used, 2)
    if large_clients:
        extra["large_clients"] = large_clients
        extra["large_statuses"] = large_done
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
        "client": client_kind,
        "scripts": "distinct" if distinct_scripts else "same",
        **extra,
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
        stop(proc)


def stop(proc: subprocess.Popen[Any], timeout: float = 10) -> None:
    """SIGTERM, then SIGKILL if ``proc`` has not ended within ``timeout`` seconds."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()


@contextmanager
def server(
    workdir: Path, env_extra: dict[str, str], processes: int = 1, workers: int | None = None
) -> Iterator[tuple[str, int]]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCFL_")}
    env.update({"TCFL_DATABASE_URL": f"sqlite:///{workdir / f'bench-{port}.db'}", **env_extra})
    command = [sys.executable, "-c", "import sys; from app.cli import main; sys.exit(main())"]
    args = ["serve", "--port", str(port), "--workers-off", "--log-level", "warning"]
    args += ["--processes", str(processes)] + ([] if workers is None else ["--workers", str(workers)])
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
        yield url, proc.pid
    finally:
        stop(proc, 15)
        log.close()


def run_mode(mode: str, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    payload = body("llm" if mode == "model" else "heuristic")
    large = args.large_clients if mode == "mixed" else 0

    def go(url: str, pid: int | None) -> dict[str, Any]:
        return asyncio.run(
            fire(
                url,
                payload,
                args.requests,
                args.concurrency,
                args.timeout,
                server_pid=pid,
                large_clients=large,
                client_kind=args.client,
                distinct_scripts=args.distinct_scripts,
            )
        )

    if args.url:
        stats = go(args.url, None)
    elif mode != "model":
        with server(workdir, {}, args.processes, args.workers) as (url, pid):
            stats = go(url, pid)
    else:
        with standin(args.model_delay) as model_url:
            extra = {"TCFL_MODEL_URL": model_url, "TCFL_MODEL_CONCURRENCY": str(args.model_concurrency)}
            with server(workdir, extra, args.processes, args.workers) as (url, pid):
                stats = go(url, pid)
    stats["mode"] = mode
    stats["processes"] = None if args.url else args.processes
    if mode == "model":
        stats["model_delay_ms"] = round(args.model_delay * 1000)
        stats["model_concurrency"] = args.model_concurrency
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("heuristic", "model", "mixed", "both"), default="both")
    parser.add_argument(
        "--large-clients", type=int, default=20, help="mixed mode: clients sending large cases meanwhile"
    )
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--model-delay", type=float, default=0.2, help="stand-in answer delay in seconds")
    parser.add_argument(
        "--model-concurrency", type=int, default=64, help="TCFL_MODEL_CONCURRENCY for the server"
    )
    parser.add_argument("--timeout", type=float, default=300, help="cut-off for one mode's run, seconds")
    parser.add_argument("--url", help="benchmark this running server instead of starting one")
    parser.add_argument("--json", action="store_true", help="print one JSON object per mode")
    parser.add_argument(
        "--processes", type=int, default=1, help="tcfl serve --processes for the server it starts"
    )
    parser.add_argument("--workers", type=int, help="tcfl serve --workers (analysis workers per process)")
    parser.add_argument(
        "--client",
        choices=("raw", "httpx"),
        default="raw",
        help="the timed requests' client: raw keep-alive sockets (light on the shared CPU) or httpx",
    )
    parser.add_argument(
        "--distinct-scripts",
        action="store_true",
        help="a different script in every request (by a comment): no worker has parsed it before",
    )
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
                if mode == "mixed":
                    extra = f" beside {stats['large_clients']} large-case clients {stats['large_statuses']}"
                if stats["scripts"] == "distinct":
                    extra += "; a new script each request"
                if stats["processes"]:
                    extra += f"; {stats['processes']} server process(es)"
                if "server_cpu_ms_per_request" in stats:
                    extra += f"; CPU ms/request: server {stats['server_cpu_ms_per_request']}"
                    if (stats["processes"] or 1) == 1:  # several: the process started only supervises
                        extra += f" (main process {stats['server_main_cpu_ms_per_request']})"
                    extra += f", client {stats['client_cpu_ms_per_request']}"
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
