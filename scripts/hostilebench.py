"""Hostile-input benchmark: per input class, time, answer, peak server memory and /healthz latency.

Starts its own ``tcfl serve`` on 127.0.0.1 (temporary SQLite file, batch worker off), sends each
hostile input once while a thread polls ``/healthz`` every 20 ms, and samples the resident memory
of the server and its analysis workers (from /proc). Then a mixed load: small requests alone,
then beside large clients, and the small requests' throughput and p99 in both. Everything is
bounded in count and time and goes to loopback only. Run from the repository root:

    .venv/bin/python scripts/hostilebench.py                  # every class, then the mixed load
    .venv/bin/python scripts/hostilebench.py --classes elif-10000,log-a-dot-80k --json
    .venv/bin/python scripts/hostilebench.py --workers 2 --load-seconds 20
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "tests" / "data" / "running-example"
TRACEBACK = 'Traceback (most recent call last):\n  File "t.py", line 3, in test_x\nZeroDivisionError: x\n'


def _case(script: str, log: str = TRACEBACK) -> dict[str, Any]:
    return {"scripts": [{"path": "t.py", "content": script}], "log": log, "ranker": "heuristic"}


def nested(header: str, depth: int) -> str:
    lines = ["def test_x():"] + ["    " * (i + 1) + header.format(i=i) for i in range(depth)]
    return "\n".join([*lines, "    " * (depth + 1) + "print('deep')"]) + "\n"


def nested_defs(depth: int) -> str:
    lines = ["    " * i + f"def f{i}():" for i in range(depth)]
    return "\n".join([*lines, "    " * depth + "print('deep')"]) + "\n"


def elif_chain(branches: int) -> str:
    head = "def test_x(v):\n    if v == 0:\n        print('0')\n"
    return head + "".join(f"    elif v == {i}:\n        print('{i}')\n" for i in range(1, branches))


def example() -> dict[str, Any]:
    return {
        "scripts": [{"path": "test_example.py", "content": (EXAMPLE / "test_example.py").read_text()}],
        "log": (EXAMPLE / "failure.log").read_text(),
        "log_functions": ["Log.log"],
        "ranker": "heuristic",
    }


def _with_log(log: str) -> dict[str, Any]:
    case = example()
    case["log"] = log
    return case


CLASSES: dict[str, Callable[[], Any]] = {
    "example": example,
    "if-330": lambda: _case(nested("if x{i}:", 330)),
    "for-330": lambda: _case(nested("for a{i} in b:", 330)),
    "def-400": lambda: _case(nested_defs(400)),
    "calls-5000": lambda: _case("def test_x():\n    x = " + "f(" * 5000 + "1" + ")" * 5000 + "\n"),
    "calls-20000": lambda: _case("def test_x():\n    x = " + "f(" * 20000 + "1" + ")" * 20000 + "\n"),
    "elif-2500": lambda: _case(elif_chain(2500)),
    "elif-10000": lambda: _case(elif_chain(10000)),
    "elif-40000": lambda: _case(elif_chain(40000)),
    "log-a-dot-80k": lambda: _with_log("a." * 40000),
    "log-100k-lines": lambda: _with_log("\n".join(f"INFO step {i} done" for i in range(100_000))),
    "json-brackets-100k": lambda: b"[" * 100_000 + b"]" * 100_000,
}


# --------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def server(
    workers: int,
    env_extra: dict[str, str] | None = None,
    args_extra: tuple[str, ...] = (),
    prefix: str = "hostilebench-",
    stop_s: float = 20,
) -> Iterator[tuple[str, int]]:
    """``tcfl serve`` on a free loopback port with a temporary SQLite file and ``workers`` analysis
    workers (and the given settings and flags): its URL and process id."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TCFL_")}
        env.update(
            TCFL_DATABASE_URL=f"sqlite:///{Path(tmp) / 'bench.db'}",
            TCFL_ANALYSIS_WORKERS=str(workers),
            **(env_extra or {}),
        )
        command = [sys.executable, "-c", "import sys; from app.cli import main; sys.exit(main())"]
        args = ["serve", "--port", str(port), *args_extra, "--log-level", "error"]
        proc = subprocess.Popen([*command, *args], cwd=tmp, env=env)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.2)
            else:
                raise SystemExit("tcfl serve did not start within 60 s")
            yield url, proc.pid
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=stop_s)
            except subprocess.TimeoutExpired:
                proc.kill()


def _tree(root: int) -> list[int]:
    """The server and every descendant (the fork server and its analysis workers)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Watch:
    """Polls /healthz every 20 ms and samples the process tree's memory every 50 ms."""

    def __init__(self, url: str, pid: int) -> None:
        self.url, self.pid = url, pid
        self.latencies: list[float] = []
        self.failures = 0
        self.peak_server_kb = 0
        self.peak_tree_kb = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._health), threading.Thread(target=self._memory)]

    def __enter__(self) -> Watch:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def _health(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self._stop.is_set():
                started = time.perf_counter()
                try:
                    ok = client.get(f"{self.url}/healthz").status_code == 200
                except httpx.HTTPError:
                    ok = False
                self.latencies.append((time.perf_counter() - started) * 1000)
                self.failures += not ok
                self._stop.wait(0.02)

    def _memory(self) -> None:
        while not self._stop.is_set():
            pids = _tree(self.pid)
            self.peak_server_kb = max(self.peak_server_kb, _rss_kb(self.pid))
            self.peak_tree_kb = max(self.peak_tree_kb, sum(_rss_kb(p) for p in pids))
            self._stop.wait(0.05)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def run_class(url: str, pid: int, name: str, timeout: float) -> dict[str, Any]:
    payload = CLASSES[name]()
    content = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    with Watch(url, pid) as watch:
        started = time.perf_counter()
        try:
            response = httpx.post(
                f"{url}/v1/triage",
                content=content,
                headers={"Content-Type": "application/json"},
                timeout=timeout,
            )
            status, detail = response.status_code, _detail(response)
        except httpx.HTTPError as exc:
            status, detail = -1, type(exc).__name__
        seconds = time.perf_counter() - started
    return {
        "class": name,
        "bytes": len(content),
        "status": status,
        "seconds": round(seconds, 3),
        "detail": detail,
        "peak_server_mb": round(watch.peak_server_kb / 1024, 1),
        "peak_total_mb": round(watch.peak_tree_kb / 1024, 1),
        "healthz_p50_ms": round(percentile(watch.latencies, 0.5), 1),
        "healthz_p99_ms": round(percentile(watch.latencies, 0.99), 1),
        "healthz_max_ms": round(max(watch.latencies, default=float("nan")), 1),
        "healthz_failed": watch.failures,
    }


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:80]
    if response.status_code == 200:
        return f"ranked {len(body.get('ranking', []))}, static {body['timings']['static_ms']:.0f} ms"
    detail = body.get("detail")
    return (detail if isinstance(detail, str) else json.dumps(detail))[:80]


def mixed_load(url: str, seconds: float, small_clients: int, large_clients: int) -> dict[str, Any]:
    """Small requests alone, then beside large ones: throughput, p99, and every status seen."""

    def run(large: int) -> dict[str, Any]:
        stop = time.monotonic() + seconds
        small_latencies: list[float] = []
        statuses: dict[str, int] = {}
        lock = threading.Lock()

        def client(payload: dict[str, Any], record: bool) -> None:
            with httpx.Client(timeout=120) as http:
                while time.monotonic() < stop:
                    started = time.perf_counter()
                    try:
                        code = str(http.post(f"{url}/v1/triage", json=payload).status_code)
                    except httpx.HTTPError as exc:
                        code = type(exc).__name__
                    with lock:
                        statuses[code] = statuses.get(code, 0) + 1
                        if record and code == "200":
                            small_latencies.append((time.perf_counter() - started) * 1000)

        threads = [threading.Thread(target=client, args=(example(), True)) for _ in range(small_clients)]
        threads += [
            threading.Thread(target=client, args=(_case(elif_chain(2500)), False)) for _ in range(large)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return {
            "small_per_s": round(len(small_latencies) / seconds, 2),
            "small_p50_ms": round(percentile(small_latencies, 0.5), 1),
            "small_p99_ms": round(percentile(small_latencies, 0.99), 1),
            "statuses": statuses,
        }

    alone = run(0)
    loaded = run(large_clients)
    ratio = loaded["small_per_s"] / alone["small_per_s"] if alone["small_per_s"] else float("nan")
    return {"alone": alone, "beside_large": loaded, "small_throughput_kept": round(ratio, 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--classes", default=",".join(CLASSES), help="comma-separated input classes")
    parser.add_argument("--workers", type=int, default=0, help="analysis workers (0 = one per CPU)")
    parser.add_argument("--cpu-s", type=float, default=60.0, help="CPU-time deadline per analysis")
    parser.add_argument("--memory-mb", type=int, default=2048, help="memory ceiling per analysis worker")
    parser.add_argument("--timeout", type=float, default=300.0, help="client timeout per request")
    parser.add_argument("--load-seconds", type=float, default=10.0, help="each mixed-load phase (0 = skip)")
    parser.add_argument("--small-clients", type=int, default=20)
    parser.add_argument("--large-clients", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.classes.split(",") if n.strip()]
    unknown = [n for n in names if n not in CLASSES]
    if unknown:
        parser.error(f"unknown classes {unknown}; known: {', '.join(CLASSES)}")
    workers = args.workers or len(os.sched_getaffinity(0))
    rows: list[dict[str, Any]] = []
    limits = {
        "TCFL_ANALYSIS_CPU_S": str(args.cpu_s),
        "TCFL_ANALYSIS_MEMORY_BYTES": str(args.memory_mb * 1024 * 1024),
    }
    with server(workers, limits, ("--workers-off",)) as (url, pid):
        for name in names:
            rows.append(run_class(url, pid, name, args.timeout))
            if not args.json:
                row = rows[-1]
                print(
                    f"{row['class']:<20} {row['bytes']:>9} B  {row['status']:>4}  {row['seconds']:>8.2f} s  "
                    f"server {row['peak_server_mb']:>7.1f} MB  all {row['peak_total_mb']:>7.1f} MB  "
                    f"healthz p50 {row['healthz_p50_ms']:>6.1f} p99 {row['healthz_p99_ms']:>7.1f} "
                    f"max {row['healthz_max_ms']:>7.1f} ms  {row['detail']}",
                    flush=True,
                )
        load = None
        if args.load_seconds > 0:
            load = mixed_load(url, args.load_seconds, args.small_clients, args.large_clients)
            if not args.json:
                print(f"mixed load ({args.small_clients} small, {args.large_clients} large clients): {load}")
    if args.json:
        print(json.dumps({"workers": workers, "classes": rows, "mixed_load": load}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
