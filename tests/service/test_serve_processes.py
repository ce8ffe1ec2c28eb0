"""``tcfl serve --processes N``: real server processes sharing one port, one set of metrics."""

from __future__ import annotations

import os
import re
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.service.helpers import Server, clean_env, example_body, tcfl_command

pytestmark = pytest.mark.slow  # starts multi-process servers


def _servers_under(parent: int) -> set[int]:
    """Forked server processes: children of ``parent`` running the same command line."""
    cmdline = Path(f"/proc/{parent}/cmdline").read_bytes()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[1]) == parent and Path(f"/proc/{entry}/cmdline").read_bytes() == cmdline:
                found.add(int(entry))
        except (OSError, IndexError):
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _gone(pids: set[int], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def _started(tmp_path: Path, processes: int, env: dict[str, str] | None = None) -> Server:
    """``tcfl serve --processes N`` over one SQLite file, one analysis worker per server."""
    args = ("--processes", str(processes), "--workers", "1")
    return Server(f"sqlite:///{tmp_path / 'tcfl.db'}", tmp_path, env=env or {}, extra_args=args).start()


def test_processes_share_the_port_and_metrics_add_up_over_all_of_them(tmp_path: Path) -> None:
    srv = _started(tmp_path, 3)
    try:
        assert srv.proc is not None
        children = _servers_under(srv.proc.pid)
        assert len(children) == 3  # the process started serves none itself: it keeps them up
        body = example_body()

        def post(_: int) -> int:
            with httpx.Client(base_url=srv.url, timeout=120) as client:  # a connection each
                return client.post("/v1/triage", json=body).status_code

        with ThreadPoolExecutor(12) as pool:
            assert set(pool.map(post, range(36))) == {200}
        text = httpx.get(f"{srv.url}/metrics", timeout=30).text
        triages = re.search(r'^tcfl_triages_total\{ranker="heuristic"\} (\S+)$', text, re.MULTILINE)
        assert triages is not None and float(triages.group(1)) == 36
        served = re.findall(
            r'^tcfl_http_requests_total\{method="POST",route="/v1/triage",status="200"\} (\S+)$', text, re.M
        )
        assert [float(v) for v in served] == [36]
        listed = httpx.get(f"{srv.url}/v1/triage", params={"limit": 100}, timeout=30).json()["items"]
        assert len(listed) == 36  # one database behind every process
    finally:
        srv.stop()
    assert srv.proc is not None and srv.proc.returncode == -signal.SIGTERM  # as a single process ends
    assert _gone(children, 15), "a server process outlived the stop"


def test_the_servers_stop_when_their_supervisor_is_killed(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    srv = _started(tmp_path, 2, env={"TMPDIR": str(temp)})
    assert srv.proc is not None
    children = _servers_under(srv.proc.pid)
    assert len(children) == 2
    srv.kill()
    assert _gone(children, 20), "a server process outlived its killed parent"

    def ours() -> list[str]:  # (multiprocessing's own pymp-* folders are not ours to remove)
        return [p.name for p in temp.glob("tcfl-metrics-*")]

    left = ours()
    assert len(left) == 1 and left[0].startswith(f"tcfl-metrics-{srv.proc.pid}-")  # left by kill -9
    again = _started(tmp_path, 2, env={"TMPDIR": str(temp)})
    try:
        assert again.proc is not None
        now = ours()
        assert len(now) == 1 and now[0].startswith(f"tcfl-metrics-{again.proc.pid}-")  # the dead one's gone
    finally:
        again.stop()
    assert ours() == []


def _replaced(parent: int, before: set[int], within_s: float) -> set[int]:
    """The server processes under ``parent`` once as many as ``before`` run again, none of them new."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        now = {p for p in _servers_under(parent) if _alive(p)}
        if len(now) == len(before) and now != before:
            return now
        time.sleep(0.1)
    return set()


def test_a_server_process_that_dies_is_started_again_and_the_service_goes_on(tmp_path: Path) -> None:
    srv = _started(tmp_path, 2)
    try:
        assert srv.proc is not None
        before = _servers_under(srv.proc.pid)
        assert len(before) == 2
        body = example_body()
        for victim in sorted(before):  # the batch worker's server among them
            os.kill(victim, signal.SIGKILL)
            now = _replaced(srv.proc.pid, before, 60)
            assert now and victim not in now, "no server process took the killed one's place"
            before = now
            with httpx.Client(base_url=srv.url, timeout=120) as client:
                for _ in range(4):  # new connections: whichever process accepts answers
                    assert (
                        client.post("/v1/triage", json=body, headers={"Connection": "close"}).status_code
                        == 200
                    )
            assert srv.proc.poll() is None
        assert "was killed by SIGKILL" in srv.log_text() and "starting another" in srv.log_text()
        text = httpx.get(f"{srv.url}/metrics", timeout=30).text
        triages = re.search(r'^tcfl_triages_total\{ranker="heuristic"\} (\S+)$', text, re.MULTILINE)
        assert triages is not None and float(triages.group(1)) == 8  # the dead processes' counts kept
    finally:
        srv.stop()
    assert srv.proc is not None and srv.proc.returncode == -signal.SIGTERM
    assert _gone(before, 15), "a server process outlived the stop"


def test_a_server_process_dying_again_and_again_at_start_stops_the_whole_server(tmp_path: Path) -> None:
    srv = _started(tmp_path, 2)
    assert srv.proc is not None
    try:
        servers = _servers_under(srv.proc.pid)
        victim = min(servers)
        for _ in range(4):  # the same server, each time killed as soon as it is back
            os.kill(victim, signal.SIGKILL)
            now = _replaced(srv.proc.pid, servers, 60)
            assert now, "the killed server process was not started again"
            (victim,) = now - servers
            servers = now
        os.kill(victim, signal.SIGKILL)  # the fifth death in a row within seconds of its start
        srv.proc.wait(timeout=60)
    finally:
        srv.stop()
    assert srv.proc.returncode == 1
    assert "5 times in a row; stopping" in srv.log_text()
    assert _gone(servers, 15), "a server process outlived the supervisor giving up"


def test_zero_processes_is_a_usage_error(tmp_path: Path) -> None:
    import subprocess

    env = clean_env(TCFL_DATABASE_URL=f"sqlite:///{tmp_path / 'tcfl.db'}")
    done = subprocess.run(
        tcfl_command("serve", "--port", "0", "--processes", "0"),
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--processes must be >= 1" in done.stderr
