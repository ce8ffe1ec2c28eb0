"""``tcfl serve``: the HTTP API (and, unless turned off, the batch worker) under uvicorn."""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
from types import FrameType
from typing import Any

from app.cli import UsageError

SHUTDOWN_GRACE_S = 5  # open requests get this long after SIGTERM; the model calls are cancelled at once


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


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from app.service.api import create_app
    from app.service.logs import configure_logging
    from app.service.store import make_engine, migrate, safe_url
    from app.settings import Settings, SettingsError

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
    configure_logging(args.log_level, json_lines=args.json or not sys.stderr.isatty())
    try:
        engine = make_engine(settings.database_url)
        migrate(engine)
        engine.dispose()
    except Exception as exc:
        raise UsageError(f"cannot open the database {safe_url(settings.database_url)}: {exc}") from None
    worker_id = args.worker_id or f"{socket.gethostname()}:{args.port}"
    app = create_app(settings, worker_id=worker_id)
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        access_log=False,
        log_config=None,
        log_level=args.log_level,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
    )
    _make_server(config).run()
    return 0


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
