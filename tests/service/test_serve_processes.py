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


def test_processes_share_the_port_and_metrics_add_up_over_all_of_them(tmp_path: Path) -> None:
    srv = Server(
        f"sqlite:///{tmp_path / 'tcfl.db'}", tmp_path, extra_args=("--processes", "3", "--workers", "1")
    )
    srv.start()
    try:
        assert srv.proc is not None
        children = _servers_under(srv.proc.pid)
        assert len(children) == 2
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


def test_the_other_processes_stop_when_the_first_is_killed(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    args = ("--processes", "2", "--workers", "1")
    srv = Server(f"sqlite:///{tmp_path / 'tcfl.db'}", tmp_path, env={"TMPDIR": str(temp)}, extra_args=args)
    srv.start()
    assert srv.proc is not None
    children = _servers_under(srv.proc.pid)
    assert len(children) == 1
    srv.kill()
    assert _gone(children, 20), "a server process outlived its killed parent"

    def ours() -> list[str]:  # (multiprocessing's own pymp-* folders are not ours to remove)
        return [p.name for p in temp.glob("tcfl-metrics-*")]

    left = ours()
    assert len(left) == 1 and left[0].startswith(f"tcfl-metrics-{srv.proc.pid}-")  # left by kill -9
    again = Server(f"sqlite:///{tmp_path / 'tcfl.db'}", tmp_path, env={"TMPDIR": str(temp)}, extra_args=args)
    again.start()
    try:
        assert again.proc is not None
        now = ours()
        assert len(now) == 1 and now[0].startswith(f"tcfl-metrics-{again.proc.pid}-")  # the dead one's gone
    finally:
        again.stop()
    assert ours() == []


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
