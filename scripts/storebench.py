"""Storage-fault benchmark: acknowledged uploads against stored rows, through faults under load.

Starts its own ``tcfl serve`` on 127.0.0.1 and keeps a bounded load of ``POST /v1/ingest`` going
(a few client threads, each upload a small JUnit file of one failing and two passing tests, each
naming its own CI job), while the storage fails under it:

- ``pg-restart``: a private PostgreSQL (``initdb`` in a temporary folder, a free port, trust
  auth; as the ``postgres`` user when run as root) restarted twice (``pg_ctl restart -m fast``);
- ``sqlite-removed``: the SQLite file removed (a hard link kept to count from); ``/healthz`` is
  polled every 50 ms for the time to "degraded", the load goes on a while, and a restart on the
  missing file must refuse to start;
- ``disk-full``: SQLite on a small tmpfs (needs root to mount) filled until the server answers
  507.

Afterwards every acknowledged upload (a 2xx answer) is looked up: its ingest, its launch, its
three history runs and its triage, once each; stored uploads are checked whole (no ingest without
its launch, runs and triage). Everything goes to loopback and temporary folders. Run from the
repository root:

    PYTHONPATH=$PWD .venv/bin/python scripts/storebench.py                 # all three faults
    PYTHONPATH=$PWD .venv/bin/python scripts/storebench.py --faults sqlite-removed --json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

FAULTS = ("pg-restart", "sqlite-removed", "disk-full")
START_TIMEOUT_S = 60
SCRIPT = """import socket


def ping(host):
    return socket.create_connection((host, 7), timeout=1)


def test_ping():
    reply = ping("10.0.0.1")
    assert reply is not None, "no reply from 10.0.0.1"


def test_mtu():
    assert 1500 > 0


def test_speed():
    assert 1000 > 0
"""
LOG = """test_net.py:9: in test_ping
    reply = ping("10.0.0.1")
test_net.py:5: in ping
    return socket.create_connection((host, 7), timeout=1)
E   TimeoutError: timed out"""
RESULTS = f"""<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="3" failures="1" errors="0" skipped="0">
<testcase classname="test_net" name="test_ping" file="test_net.py" line="7" time="1.01">
<failure message="TimeoutError: timed out">{LOG}</failure></testcase>
<testcase classname="test_net" name="test_mtu" file="test_net.py" line="12" time="0.01"/>
<testcase classname="test_net" name="test_speed" file="test_net.py" line="15" time="0.01"/>
</testsuite></testsuites>"""
TESTS_PER_UPLOAD = 3
FAILURES_PER_UPLOAD = 1


def upload(job: int) -> dict[str, Any]:
    """One CI job's upload: the results, the script, a job URL of its own."""
    return {
        "results": {"name": "junit.xml", "content": RESULTS},
        "scripts": [{"path": "test_net.py", "content": SCRIPT}],
        "ranker": "heuristic",
        "job_url": job_url(job),
    }


def job_url(job: int) -> str:
    return f"https://ci.example.test/jobs/{job}"


# --------------------------------------------------------------------------------------------
# Servers and databases
# --------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """A ``tcfl serve`` subprocess (batch worker off) on a free loopback port."""

    database_url: str
    workdir: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def launch(self) -> subprocess.Popen[bytes]:
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("TCFL_")}
        env.update(TCFL_DATABASE_URL=self.database_url, TCFL_ANALYSIS_WORKERS="1")
        self.log_path = self.workdir / f"server-{self.port}.log"
        command = [sys.executable, "-c", "import sys; from app.cli import main; sys.exit(main())"]
        args = ["serve", "--port", str(self.port), "--workers-off", "--log-level", "warning"]
        with self.log_path.open("wb") as out:
            self.proc = subprocess.Popen(
                [*command, *args], cwd=self.workdir, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        return self.proc

    def start(self) -> Server:
        proc = self.launch()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"tcfl serve exited {proc.returncode}:\n{self.log_text()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"tcfl serve did not answer /healthz in {START_TIMEOUT_S} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""


def _as_postgres(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run its tools as the ``postgres`` user then."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


def pg_bin(tool: str) -> str | None:
    """A PostgreSQL server tool (``initdb``, ``pg_ctl``) on the PATH or in the usual place."""
    found = shutil.which(tool)
    if found:
        return found
    for folder in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (folder / tool).exists():
            return str(folder / tool)
    return None


@dataclass
class PrivatePostgres:
    """A PostgreSQL instance of our own: a temporary data folder, a free port, trust auth."""

    folder: Path
    port: int = 0
    pg_ctl: str = ""

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _ctl(self, *args: str) -> None:
        # the server's output goes to its log file: a pipe here would stay open as long as it runs
        subprocess.run(
            _as_postgres([self.pg_ctl, "-D", str(self.folder / "data"), "-w", "-t", "60", *args]),
            check=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=120,
        )

    def restart(self) -> float:
        """A fast restart (open connections cut, no crash recovery); its seconds."""
        started = time.monotonic()
        self._ctl("restart", "-m", "fast", "-l", str(self.folder / "log"))
        return time.monotonic() - started


def postgres_missing() -> str | None:
    """Why a private PostgreSQL cannot be started here, or None."""
    if pg_bin("initdb") is None or pg_bin("pg_ctl") is None:
        return "no initdb/pg_ctl found (PostgreSQL server tools)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser to start PostgreSQL as postgres"
    return None


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    initdb, pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
    assert initdb is not None and pg_ctl is not None
    folder = Path(tempfile.mkdtemp(prefix="tcfl-pg-"))
    folder.chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    pg = PrivatePostgres(folder, free_port(), pg_ctl)
    try:
        subprocess.run(
            _as_postgres(
                [initdb, "-D", str(folder / "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8"]
            ),
            check=True,
            capture_output=True,
            timeout=120,
        )
        options = f"-p {pg.port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        pg._ctl("-o", options, "-l", str(folder / "log"), "start")
        yield pg
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            pg._ctl("stop", "-m", "immediate")
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def small_tmpfs(size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted on a temporary folder (root only): a disk that fills."""
    folder = Path(tempfile.mkdtemp(prefix="tcfl-full-"))
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        folder.rmdir()
        raise RuntimeError(f"cannot mount a tmpfs: {exc}") from None
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def tmpfs_missing() -> str | None:
    if os.geteuid() != 0:
        return "mounting a small tmpfs needs root"
    if shutil.which("mount") is None:
        return "no mount command"
    return None


# --------------------------------------------------------------------------------------------
# Load and counting
# --------------------------------------------------------------------------------------------


@dataclass
class Load:
    """``clients`` threads posting uploads, each a new job, until stopped (or ``limit`` sent)."""

    url: str
    clients: int = 3
    limit: int = 2_000
    acked: dict[str, int] = field(default_factory=dict)  # job URL -> ingest id answered
    asked_at: dict[str, float] = field(default_factory=dict)  # job URL -> when its upload was sent
    statuses: Counter[str] = field(default_factory=Counter)
    details: Counter[str] = field(default_factory=Counter)  # the messages of refusals
    _next: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Load:
        for _ in range(self.clients):
            thread = threading.Thread(target=self._run, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def sent(self) -> int:
        return sum(self.statuses.values())

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=120) as client:
            while not self._stop.is_set():
                with self._lock:
                    if self._next >= self.limit:
                        return
                    job = self._next
                    self._next += 1
                asked = time.monotonic()
                try:
                    answer = client.post("/v1/ingest", json=upload(job))
                except httpx.HTTPError as exc:
                    with self._lock:
                        self.statuses[type(exc).__name__] += 1
                    time.sleep(0.05)
                    continue
                with self._lock:
                    self.statuses[str(answer.status_code)] += 1
                    if 200 <= answer.status_code < 300:
                        self.acked[job_url(job)] = int(answer.json()["id"])
                        self.asked_at[job_url(job)] = asked
                    else:
                        self.details[_detail(answer)] += 1
                if answer.status_code >= 500:
                    time.sleep(0.05)  # a refusing server is not hammered


def _detail(answer: httpx.Response) -> str:
    try:
        detail = answer.json().get("detail")
    except ValueError:
        detail = answer.text
    return f"{answer.status_code} {str(detail)[:90]}"


def count(database_url: str, acked: dict[str, int]) -> dict[str, Any]:
    """Each acknowledged upload looked up in the database, and every stored upload checked whole."""
    import sqlalchemy as sa

    from app.ingest.job import Job

    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as conn:
            launches = {
                identity: (launch_id, ingest_id)
                for identity, launch_id, ingest_id in conn.execute(
                    sa.text("SELECT identity, id, ingest_id FROM launches")
                )
            }
            ingests = {r[0] for r in conn.execute(sa.text("SELECT id FROM ci_runs"))}
            tests = Counter(r[0] for r in conn.execute(sa.text("SELECT run_id FROM ci_run_tests")))
            triaged = {
                r[0]
                for r in conn.execute(
                    sa.text(
                        "SELECT t.run_id FROM ci_run_tests t JOIN results r ON r.request_id = t.triage_id"
                    )
                )
            }
            runs = Counter(r[0] for r in conn.execute(sa.text("SELECT job_url FROM runs")))
            triages = conn.execute(sa.text("SELECT count(*) FROM triage_requests")).scalar_one()
    finally:
        engine.dispose()
    present = missing = partial = 0
    for url, ingest_id in acked.items():
        found = launches.get(Job(job_url=url).identity)
        if found is None or found[1] != ingest_id or ingest_id not in ingests:
            missing += 1
        elif (
            tests[ingest_id] != FAILURES_PER_UPLOAD
            or ingest_id not in triaged
            or runs[url] != TESTS_PER_UPLOAD
        ):
            partial += 1
        else:
            present += 1
    linked = {ingest_id for _, ingest_id in launches.values() if ingest_id is not None}
    return {
        "acknowledged": len(acked),
        "present_whole": present,
        "missing": missing,
        "partial": partial,
        "stored_uploads": len(ingests),
        "ingests_without_launch": len(ingests - linked),
        "runs_not_once": sum(1 for n in runs.values() if n != TESTS_PER_UPLOAD),
        "triages_not_once": triages - len(ingests) * FAILURES_PER_UPLOAD,
    }


def wait_for(predicate: Any, timeout_s: float, every_s: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every_s)
    return False


def healthz(url: str) -> tuple[int, str]:
    try:
        answer = httpx.get(f"{url}/healthz", timeout=5)
    except httpx.HTTPError as exc:
        return 0, type(exc).__name__
    return answer.status_code, str(answer.json().get("database", ""))


# --------------------------------------------------------------------------------------------
# The faults
# --------------------------------------------------------------------------------------------


def pg_restarts(restarts: int = 2, *, clients: int = 3, between_s: float = 3.0) -> dict[str, Any]:
    """Uploads acknowledged while a private PostgreSQL restarts ``restarts`` times, all counted."""
    with private_postgres() as pg, tempfile.TemporaryDirectory(prefix="tcfl-storebench-") as tmp:
        server = Server(pg.url, Path(tmp)).start()
        try:
            load = Load(server.url, clients=clients).start()
            took = []
            for _ in range(restarts):
                wait_for(lambda: False, between_s)
                took.append(round(pg.restart(), 2))
            wait_for(lambda: False, between_s)
            load.stop()
            health = healthz(server.url)
        finally:
            server.stop()
        out = count(pg.url, load.acked)
    return {
        "fault": "pg-restart",
        "restarts": restarts,
        "restart_s": took,
        "sent": load.sent(),
        "statuses": dict(load.statuses),
        "refusals": dict(load.details.most_common(3)),
        "healthz_after": health,
        **out,
    }


def sqlite_removed(*, clients: int = 3, before_s: float = 3.0, after_s: float = 3.0) -> dict[str, Any]:
    """The SQLite file removed under load: time to "degraded", writes refused after it, every
    upload acknowledged before it in the removed file, and a restart on the missing file refused."""
    with tempfile.TemporaryDirectory(prefix="tcfl-storebench-") as tmp:
        folder = Path(tmp)
        db = folder / "tcfl.db"
        url = f"sqlite:///{db}"
        server = Server(url, folder).start()
        kept = folder / "kept.db"
        restart: dict[str, Any] = {}
        try:
            load = Load(server.url, clients=clients).start()
            wait_for(lambda: False, before_s)
            os.link(db, kept)  # the removed file's data, to count from
            db.unlink()
            removed_at = time.monotonic()
            degraded = wait_for(lambda: healthz(server.url)[0] == 503, 30)
            to_degraded = time.monotonic() - removed_at if degraded else None
            reason = healthz(server.url)[1]
            wait_for(lambda: False, after_s)
            load.stop()
        finally:
            server.stop()
        again = Server(url, folder)
        proc = again.launch()
        try:
            proc.wait(timeout=60)
            restart = {"exit": proc.returncode, "said": _last_line(again.log_text())}
        except subprocess.TimeoutExpired:
            restart = {"exit": None, "said": "started on the missing file"}
            again.stop()
        created = db.exists()
        for suffix in ("-wal", "-shm"):  # the removed file's log goes with it to be counted
            side = folder / f"tcfl.db{suffix}"
            if side.exists():
                side.rename(folder / f"kept.db{suffix}")
        out = count(f"sqlite:///{kept}", load.acked)
    return {
        "fault": "sqlite-removed",
        "sent": load.sent(),
        "statuses": dict(load.statuses),
        "refusals": dict(load.details.most_common(3)),
        "to_degraded_s": None if to_degraded is None else round(to_degraded, 3),
        "healthz_reason": reason,
        # sent after the file was removed, and acknowledged all the same: written into no file
        "acked_after_removal": sum(1 for u in load.acked if load.asked_at[u] > removed_at),
        "restart_exit": restart.get("exit"),
        "restart_said": restart.get("said"),
        "empty_database_created": created,
        **out,
    }


def disk_full(*, size: str = "3m", clients: int = 3, limit_s: float = 60.0) -> dict[str, Any]:
    """SQLite on a small tmpfs, filled by uploads until the server answers 507, all counted."""
    with small_tmpfs(size) as folder, tempfile.TemporaryDirectory(prefix="tcfl-storebench-") as tmp:
        url = f"sqlite:///{folder / 'tcfl.db'}"
        server = Server(url, Path(tmp)).start()
        try:
            load = Load(server.url, clients=clients).start()
            wait_for(lambda: load.statuses["507"] >= 3, limit_s)
            health = healthz(server.url)
            load.stop()
        finally:
            server.stop()
        out = count(url, load.acked)
    return {
        "fault": "disk-full",
        "tmpfs": size,
        "sent": load.sent(),
        "statuses": dict(load.statuses),
        "refusals": dict(load.details.most_common(3)),
        "healthz_when_full": health,
        **out,
    }


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--faults", default=",".join(FAULTS), help=f"comma-separated: {', '.join(FAULTS)}")
    parser.add_argument("--clients", type=int, default=3, help="upload threads")
    parser.add_argument("--json", action="store_true", help="one JSON object per fault")
    args = parser.parse_args()
    rows = []
    for fault in args.faults.split(","):
        if fault == "pg-restart":
            why = postgres_missing()
            row = {"fault": fault, "skipped": why} if why else pg_restarts(clients=args.clients)
        elif fault == "sqlite-removed":
            row = sqlite_removed(clients=args.clients)
        elif fault == "disk-full":
            why = tmpfs_missing()
            row = {"fault": fault, "skipped": why} if why else disk_full(clients=args.clients)
        else:
            parser.error(f"unknown fault {fault!r}")
        rows.append(row)
        print(json.dumps(row) if args.json else _text(row), flush=True)
    bad = [r for r in rows if r.get("missing") or r.get("partial") or r.get("acked_after_removal")]
    return 1 if bad else 0


def _text(row: dict[str, Any]) -> str:
    if row.get("skipped"):
        return f"{row['fault']}: skipped ({row['skipped']})"
    lines = [
        f"{row['fault']}: acknowledged {row['acknowledged']}, present whole {row['present_whole']}, "
        f"missing {row['missing']}, partial {row['partial']} (sent {row['sent']}: {row['statuses']})"
    ]
    for key, value in row.items():
        if key not in ("fault", "acknowledged", "present_whole", "missing", "partial", "sent", "statuses"):
            lines.append(f"  {key}: {value}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
