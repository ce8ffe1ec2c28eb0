"""A real OpenAI-compatible HTTP server on 127.0.0.1 that records requests and plays scripted replies.

Tests talk to it over a real socket, so the client's wire format, headers, timeouts and retries are
exercised exactly as against vLLM. Two uses:

- scripted: ``srv.enqueue(Reply(status=500), Reply(content='{"x": 1}'))``; replies are played in
  order per path, then ``default`` answers;
- load stand-in: ``OpenAIStandin(default=Reply(rank=True, delay_s=0.5))`` answers every chat request,
  after the delay, with a valid ranking for the JSON schema it was sent (the first k enum values).
  ``python -m tests.support.openai_standin --delay 0.5`` runs that mode as its own process and
  prints its base URL.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"
DEFAULT_MODEL = "standin-model"


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    ``body`` (a JSON value, or a str sent verbatim as text/plain) replaces the generated body;
    otherwise a 200 chat answer wraps ``content`` (or, with ``rank``, a ranking for the request's
    schema) and an error status gets an OpenAI-style error body. ``usage=None`` leaves usage out.
    """

    status: int = 200
    content: str = "{}"
    finish_reason: str | None = "stop"
    usage: dict[str, int] | None = field(
        default_factory=lambda: {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    )
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    rank: bool = False
    trickle_s: float = 0.0  # > 0: send the body one byte at a time, this long apart (a slow-drip server)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes
    received_at: float


def ranking_answer(body: Any) -> str:
    """A JSON answer satisfying the request's ``response_format`` schema: the first k enum values per key."""
    try:
        schema = body["response_format"]["json_schema"]["schema"]
        properties = schema["properties"]
    except (KeyError, TypeError):
        return "{}"
    answer: dict[str, list[str]] = {}
    for key in schema.get("required", list(properties)):
        prop = properties.get(key, {})
        enum = prop.get("items", {}).get("enum", [])
        k = prop.get("minItems", prop.get("maxItems", 1))
        answer[key] = list(enum[:k])
    return json.dumps(answer)


class OpenAIStandin:
    """Threaded HTTP server; use as a context manager. ``url`` ends in ``/v1``."""

    def __init__(
        self,
        *,
        default: Reply | None = None,
        model: str = DEFAULT_MODEL,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.default = default or Reply()
        self.model = model
        self._queues: dict[str, deque[Reply]] = defaultdict(deque)
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        # chat answers wait while the gate is closed (open by default): lets a test hold every
        # answer until the state it needs exists, instead of hoping a delay is long enough
        self.gate = threading.Event()
        self.gate.set()
        self._in_flight = 0
        self._max_in_flight = 0
        self._server = _Server((host, port), _handler_for(self))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == CHAT_PATH]

    @property
    def max_in_flight(self) -> int:
        """The most requests that were being answered at the same moment."""
        with self._lock:
            return self._max_in_flight

    def enqueue(self, *replies: Reply, path: str = CHAT_PATH) -> None:
        with self._lock:
            self._queues[path].extend(replies)

    def pending(self, path: str = CHAT_PATH) -> int:
        with self._lock:
            return len(self._queues[path])

    def start(self) -> OpenAIStandin:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIStandin:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _begin(self, request: RecordedRequest) -> Reply | None:
        """Record the request and pick its reply; None for a path this server does not serve."""
        with self._lock:
            self._requests.append(request)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            queue = self._queues[request.path]
            if queue:
                return queue.popleft()
        if request.path == MODELS_PATH and request.method == "GET":
            return Reply(body={"object": "list", "data": [{"id": self.model, "object": "model"}]})
        if request.path == CHAT_PATH and request.method == "POST":
            return self.default
        return None

    def _end(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _render(self, reply: Reply, request: RecordedRequest) -> tuple[bytes, str]:
        """Body bytes and content type for a reply to this request."""
        if isinstance(reply.body, str):
            return reply.body.encode(), "text/plain; charset=utf-8"
        if reply.body is not None:
            return json.dumps(reply.body).encode(), "application/json"
        if reply.status != 200:
            error = {"message": f"scripted HTTP {reply.status}", "type": "error", "code": reply.status}
            return json.dumps({"error": error}).encode(), "application/json"
        content = ranking_answer(request.body) if reply.rank else reply.content
        model = request.body.get("model") if isinstance(request.body, dict) else None
        answer: dict[str, Any] = {
            "id": f"chatcmpl-{int(request.received_at * 1e6)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model or self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": reply.finish_reason,
                }
            ],
        }
        if reply.usage is not None:
            answer["usage"] = reply.usage
        return json.dumps(answer).encode(), "application/json"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True


def _handler_for(standin: OpenAIStandin) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            request = RecordedRequest(
                method=self.command,
                path=self.path.split("?", 1)[0],
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                raw=raw,
                received_at=time.monotonic(),
            )
            reply = standin._begin(request)
            try:
                if reply is None:
                    self._send(404, b'{"error": {"message": "not found"}}', "application/json", {})
                    return
                if request.path == CHAT_PATH:
                    while not standin.gate.wait(0.05):
                        if standin._stop.is_set():
                            return
                if reply.delay_s > 0 and standin._stop.wait(reply.delay_s):
                    return
                payload, content_type = standin._render(reply, request)
                self._send(reply.status, payload, content_type, reply.headers, reply.trickle_s)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            finally:
                standin._end()

        def _send(
            self,
            status: int,
            payload: bytes,
            content_type: str,
            headers: dict[str, str],
            trickle_s: float = 0.0,
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            if trickle_s <= 0:
                self.wfile.write(payload)
                return
            self.wfile.flush()
            for i in range(len(payload)):
                if standin._stop.wait(trickle_s):
                    return
                self.wfile.write(payload[i : i + 1])
                self.wfile.flush()

    return Handler


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens, for connection-refused tests."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _open_when_present(srv: OpenAIStandin, path: str, done: threading.Event) -> None:
    while not done.wait(0.05):
        if os.path.exists(path):
            srv.gate.set()
            return


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Delayed-answer OpenAI-compatible stand-in (valid rankings)."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each chat answer")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument(
        "--gate-file", help="hold every chat answer until this file exists (then answer as usual)"
    )
    parser.add_argument(
        "--mode",
        choices=("answer", "trickle", "silent", "fail"),
        default="answer",
        help="answer validly; send one byte a second; never answer; or answer HTTP 500",
    )
    args = parser.parse_args(argv)
    default = {
        "answer": Reply(rank=True, delay_s=args.delay),
        "trickle": Reply(rank=True, delay_s=args.delay, trickle_s=1.0),
        "silent": Reply(rank=True, delay_s=24 * 3600.0),
        "fail": Reply(status=500, delay_s=args.delay),
    }[args.mode]
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    with OpenAIStandin(default=default, model=args.model, host=args.host, port=args.port) as srv:
        if args.gate_file:
            srv.gate.clear()
            threading.Thread(target=_open_when_present, args=(srv, args.gate_file, done), daemon=True).start()
        print(srv.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            done.wait()
        print(
            f"served {len(srv.chat_requests())} chat requests, at most {srv.max_in_flight} at once",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
