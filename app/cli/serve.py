"""``tcfl serve``: the HTTP API (and, unless turned off, the batch worker) under uvicorn."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from app.cli import UsageError

SHUTDOWN_GRACE_S = 5  # open requests get this long after SIGTERM; the model calls are cancelled at once
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"  # where prometheus_client keeps each process's values
METRICS_PREFIX = "tcfl-metrics-"  # then the supervisor's pid: a folder whose server died is found
PR_SET_PDEATHSIG = 1

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("serve", help="run the HTTP API and the batch worker")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    parser.add_argument(
        "--workers-off", action="store_true", help="do not run the batch worker in this process"
    )
    parser.add_argument(
        "--worker-id",
        help="stable name of this process's batch worker; items it left running are requeued when "
        "it starts again (default HOST:PORT)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="analysis worker processes (default TCFL_ANALYSIS_WORKERS, else one per CPU)",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        metavar="N",
        help="HTTP server processes sharing the port, each with its own analysis pool (of CPUs/N "
        "workers unless --workers says), started again if one dies; the first runs the batch "
        "worker; /metrics adds them up (default 1)",
    )
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    parser.add_argument(
        "--db", metavar="URL", help="database to serve (default: TCFL_DATABASE_URL, else the per-user one)"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="log JSON lines (the default when stderr is not a terminal; text on a terminal)",
    )
    parser.set_defaults(func=run)


def check_port(host: str, port: int) -> None:
    """Bind and release the address as uvicorn will, so a busy port is a usage error up front."""
    if port == 0:
        return
    try:
        family, _, _, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise UsageError(f"--host {host}: {exc.strerror}") from None
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            raise UsageError(
                f"cannot listen on {host}:{port}: {exc.strerror} (another server there? pick another --port)"
            ) from None


def _remove_stale_metrics_dirs() -> None:
    """The metrics folders of servers that died without cleaning up (kill -9): their
    supervisor's pid is in the name, and no process has it any more."""
    folder = Path(tempfile.gettempdir())
    for path in folder.glob(f"{METRICS_PREFIX}*-*"):
        pid = path.name[len(METRICS_PREFIX) :].split("-", 1)[0]
        if not pid.isdigit() or not path.is_dir():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except PermissionError:  # alive, another user's
            continue


def run(args: argparse.Namespace) -> int:
    if args.processes < 1:
        raise UsageError(f"--processes must be >= 1, got {args.processes}")
    metrics_dir = None
    if args.processes > 1 and not os.environ.get(MULTIPROC_ENV):
        # before prometheus_client is imported: it picks per-process value files then
        _remove_stale_metrics_dirs()
        metrics_dir = tempfile.mkdtemp(prefix=f"{METRICS_PREFIX}{os.getpid()}-")
        os.environ[MULTIPROC_ENV] = metrics_dir
    try:
        return _run(args)
    except _Stopped as stop:
        signum = stop.signum
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    # the supervisor of several processes, stopped by a signal: the servers are stopped and the
    # metrics folder is gone; now end as a single uvicorn process does
    if signum != signal.SIGTERM:
        return 130  # Ctrl-C
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
    return 1  # pragma: no cover - not reached


def _run(args: argparse.Namespace) -> int:
    import uvicorn

    from app.service.logs import configure_logging
    from app.settings import Settings, SettingsError
    from app.store.store import make_engine, migrate, safe_url

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0-65535, got {args.port}")
    check_port(args.host, args.port)  # before the database, the logs or the app are touched
    try:
        settings = Settings()
    except SettingsError as exc:
        raise UsageError(
            f"invalid TCFL_ setting: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}"
        ) from None
    if args.db:
        settings = settings.model_copy(update={"database_url": args.db})
    if args.workers is not None:
        if args.workers < 1:
            raise UsageError(f"--workers must be >= 1, got {args.workers}")
        settings = settings.model_copy(update={"analysis_workers": args.workers})
    if args.workers_off:
        settings = settings.model_copy(update={"worker_enabled": False})
    if args.processes > 1 and settings.analysis_workers == 0:
        # one machine's CPUs shared out: N processes with a pool of CPUs/N each (at least one)
        from app.service.pool import default_size

        settings = settings.model_copy(update={"analysis_workers": max(1, default_size(0) // args.processes)})
    configure_logging(args.log_level, json_lines=args.json or not sys.stderr.isatty())
    try:
        engine = make_engine(settings.database_url)
        migrate(engine)
        engine.dispose()
    except Exception as exc:
        raise UsageError(f"cannot open the database {safe_url(settings.database_url)}: {exc}") from None
    worker_id = args.worker_id or f"{socket.gethostname()}:{args.port}"

    def config_for(app: Any) -> Any:
        return uvicorn.Config(
            app,
            host=args.host,
            port=args.port,
            access_log=False,
            log_config=None,
            log_level=args.log_level,
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        )

    if args.processes == 1:
        _serve_one(settings, worker_id, config_for, None)
        return 0
    return _serve_processes(args.processes, settings, worker_id, config_for)


def _serve_one(settings: Any, worker_id: str, config_for: Callable[[Any], Any], sock: Any) -> None:
    from app.service.api import create_app

    server = _make_server(config_for(create_app(settings, worker_id=worker_id)))
    server.run(sockets=None if sock is None else [sock])


def _serve_processes(n: int, settings: Any, worker_id: str, config_for: Callable[[Any], Any]) -> int:
    """``n`` server processes accepting on one listening socket, kept up by this one.

    Why: one process answers HTTP, validates, stores and hands jobs to its analysis pool on one
    event loop, and under load that loop, not the CPUs, is the limit. This process binds the
    socket and forks the servers before any app, thread or event loop exists, and stays so: it
    only forks, watches and stops them, so it can fork a server again at any time. A server that
    dies (killed, out of memory, a crash) is replaced under the same id; one dying within
    ``_QUICK_DEATH_S`` of its start waits longer each time, and ``_GIVE_UP`` of those in a row
    stop the whole server (a broken deployment, not bad luck). Server 0 runs the batch worker
    (the others' ids end in /1, /2, ...). A stop (SIGTERM, Ctrl-C) is passed on to every server.
    """
    sock = config_for("app.service.api:create_app").bind_socket()
    servers: dict[int, int] = {}  # pid -> index
    started: dict[int, float] = {}  # index -> when its current process was forked
    quick: dict[int, int] = {}  # index -> deaths in a row within _QUICK_DEATH_S of the start

    def fork(index: int) -> None:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the server process; the tests watch it from outside
            code = 1
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the supervisor's handlers are not ours
                signal.signal(signal.SIGINT, signal.default_int_handler)
                _die_with_parent()
                if index == 0:
                    _serve_one(settings, worker_id, config_for, sock)
                else:
                    others = settings.model_copy(update={"worker_enabled": False})
                    _serve_one(others, f"{worker_id}/{index}", config_for, sock)
                code = 0
            finally:
                os._exit(code)
        servers[pid] = index
        started[index] = time.monotonic()

    previous = {sig: signal.signal(sig, _raise_stopped) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for index in range(n):
            fork(index)
        while True:
            pid, status = os.waitpid(-1, 0)
            index = servers.pop(pid, None)
            if index is None:
                continue
            _mark_dead(pid)
            lived = time.monotonic() - started[index]
            quick[index] = quick.get(index, 0) + 1 if lived < _QUICK_DEATH_S else 0
            how = _ended(status)
            if quick[index] >= _GIVE_UP:
                log.error(
                    "server process %d (pid %d) %s within %.0f s of its start %d times in a row; stopping",
                    index,
                    pid,
                    how,
                    _QUICK_DEATH_S,
                    quick[index],
                )
                return 1
            pause = min(_MAX_PAUSE_S, 0.5 * 2 ** (quick[index] - 1)) if quick[index] else 0.0
            log.warning(
                "server process %d (pid %d) %s after %.1f s; starting another in %.1f s",
                index,
                pid,
                how,
                lived,
                pause,
            )
            time.sleep(pause)
            fork(index)
    finally:
        for sig in previous:  # a second signal while the servers stop must not cut the stop short
            signal.signal(sig, signal.SIG_IGN)
        _stop_children(list(servers))
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sock.close()


_QUICK_DEATH_S = 10.0  # a server ending sooner after its start counts towards giving up
_GIVE_UP = 5  # quick deaths in a row of one server that stop the whole server
_MAX_PAUSE_S = 30.0


def _ended(status: int) -> str:
    """How a waited-for process ended, in words."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"was killed by {name}"
    return f"exited with code {os.WEXITSTATUS(status)}"


def _mark_dead(pid: int) -> None:
    """Drop a dead server's live gauges from /metrics (its counters still add up)."""
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        with contextlib.suppress(OSError):
            multiprocess.mark_process_dead(pid)


class _Stopped(Exception):
    """A stop asked of this process by a signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, _frame: FrameType | None) -> None:
    raise _Stopped(signum)


def _die_with_parent() -> None:
    """Linux: SIGTERM this process when its parent dies, so a killed server leaves no orphans."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def _stop_children(children: list[int]) -> None:
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + SHUTDOWN_GRACE_S + 5
    waiting = set(children)
    while waiting and time.monotonic() < deadline:
        for pid in list(waiting):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                waiting.discard(pid)
        time.sleep(0.05)
    for pid in waiting:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _server_class() -> type:
    import uvicorn

    from app.service.api import begin_shutdown

    class Server(uvicorn.Server):
        """uvicorn's server, cancelling model calls as soon as a stop is asked for.

        Why: uvicorn waits for open requests before the app's shutdown runs, and a request waiting
        on a hung model server would hold the stop for the model deadline (minutes).
        """

        async def serve(self, sockets: Any = None) -> None:
            self._loop = asyncio.get_running_loop()
            await super().serve(sockets)

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            super().handle_exit(sig, frame)
            loop = getattr(self, "_loop", None)
            runtime = getattr(self.config.app.state, "runtime", None)
            if loop is not None and runtime is not None and not getattr(self, "_stopping", False):
                self._stopping = True
                loop.call_soon_threadsafe(lambda: loop.create_task(begin_shutdown(runtime)))

    return Server


def _make_server(config: Any) -> Any:
    return _server_class()(config)
