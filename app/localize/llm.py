"""Client for an OpenAI-compatible chat-completions server (vLLM in production).

The one module in ``app/localize`` that does I/O. It owns what a caller should not have to think
about: the wire format for structured output, bounded concurrency, timeouts, and retries with
backoff. It raises exactly two errors so that callers can decide what to do: ``ModelUnavailable``
(the server is down or keeps failing: fall back to the heuristic ranker) and ``ModelError`` (the
server refused this request: retrying it would not help).

Base URL rule: the URL must be ``http(s)://host[:port]/<path>`` where the path ends in ``/v1``
(a trailing slash is accepted and dropped). A URL with no path at all, such as
``http://localhost:8000``, gets ``/v1`` appended with a logged warning, because that is the
common slip; any other path is rejected with ``ValueError`` rather than guessed at.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx

from app.localize.inflight import OVERLOAD_STATUS, AdaptiveLimit

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

    from app.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")

RETRY_AFTER_CAP_S = 30.0
HEALTH_TIMEOUT_S = 5.0
BREAKER_FAILURES = 3  # consecutive failed calls that open the circuit
BREAKER_COOLDOWN_S = 30.0
MIN_ATTEMPT_S = 0.5  # no retry starts with less of the budget left than this
_RETRYABLE_STATUS = frozenset({408, 429})


@dataclass(frozen=True)
class Completion:
    """One model answer. ``latency_ms`` is the whole ``complete`` call: queueing, retries, backoff."""

    text: str
    finish_reason: str | None
    input_tokens: int | None
    output_tokens: int | None
    model: str
    latency_ms: float
    attempts: int = 1


class ModelUnavailable(Exception):
    """The server could not be reached or kept failing after every retry."""


class ModelError(Exception):
    """The server rejected the request (4xx other than 408/429); the same request would fail again."""

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class CircuitBreaker:
    """Stops calling a server that keeps failing, for a cool-down, then lets one trial call through.

    Why: without it every triage waits out the full deadline against a dead server, each of the
    concurrent requests in turn; with it they fall back to the heuristic at once, and say why.
    """

    def __init__(self, failures: int = BREAKER_FAILURES, cooldown_s: float = BREAKER_COOLDOWN_S) -> None:
        self.threshold = failures
        self.cooldown_s = cooldown_s
        self.failures = 0
        self.opened_at: float | None = None
        self.last_error = ""
        self.trial = False  # a half-open trial call is in flight
        self.opened = 0  # times the circuit opened, for /metrics

    def state(self, now: float | None = None) -> str:
        """``closed``, ``open`` (cooling down) or ``half-open`` (the next call is a trial)."""
        if self.opened_at is None:
            return "closed"
        now = time.monotonic() if now is None else now
        return "open" if now - self.opened_at < self.cooldown_s else "half-open"

    def retry_in_s(self) -> float:
        if self.opened_at is None:
            return 0.0
        return max(0.0, self.cooldown_s - (time.monotonic() - self.opened_at))

    def check(self) -> None:
        """``ModelUnavailable`` without calling when the circuit is open (or a trial is under way)."""
        state = self.state()
        if state == "closed":
            return
        if state == "half-open" and not self.trial:
            self.trial = True
            return
        raise ModelUnavailable(
            f"circuit open: the model server failed {self.failures} call(s) in a row "
            f"(last: {self.last_error}); not called for another {self.retry_in_s():.0f} s"
        )

    def success(self) -> None:
        self.failures = 0
        self.opened_at = None
        self.trial = False

    def failure(self, reason: str) -> None:
        self.failures += 1
        self.last_error = reason[:200]
        was_trial, self.trial = self.trial, False
        if was_trial or self.failures >= self.threshold:
            if self.opened_at is None or was_trial:
                self.opened += 1
            self.opened_at = time.monotonic()

    def describe(self) -> str:
        """For /healthz: ``ok``, or why the server is not being called."""
        state = self.state()
        if state == "closed":
            return "ok" if self.failures == 0 else f"failing ({self.failures} in a row: {self.last_error})"
        if state == "open":
            return f"circuit open for {self.retry_in_s():.0f} s more ({self.last_error})"
        return f"circuit half-open: the next call is a trial ({self.last_error})"


class _Retryable(Exception):
    """One failed attempt worth retrying; ``retry_after`` is the server's hint in seconds."""

    def __init__(self, reason: str, retry_after: float | None = None, status: int | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after
        self.status = status


def normalize_base_url(url: str) -> str:
    """Apply the module's base URL rule; returns the URL ending in ``/v1`` without a trailing slash."""
    raw = url.strip()
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"model URL must be an http(s) URL such as http://127.0.0.1:8000/v1, got {url!r}")
    if parts.query or parts.fragment:
        raise ValueError(f"model URL must not carry a query or fragment, got {url!r}")
    path = parts.path.rstrip("/")
    if not path:
        log.warning("model URL %s has no path; using %s/v1", raw, raw.rstrip("/"))
        path = "/v1"
    elif not path.endswith("/v1"):
        raise ValueError(f"model URL must end in /v1 (an OpenAI-compatible base URL), got {url!r}")
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


class ModelClient:
    """Chat completions with structured output, bounded concurrency and retries.

    Use it from one event loop; close it with ``aclose`` or ``async with``.
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120,
        retries: int = 3,
        concurrency: int = 8,
        max_tokens: int = 2048,
        temperature: float = 0.0,
        top_p: float = 1.0,
        top_k: int | None = None,
        backoff_s: float = 0.5,
        max_retry_after_s: float = RETRY_AFTER_CAP_S,
        breaker_failures: int = BREAKER_FAILURES,
        breaker_cooldown_s: float = BREAKER_COOLDOWN_S,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries!r}")
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency!r}")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens!r}")
        if backoff_s < 0 or max_retry_after_s < 0:
            raise ValueError("backoff_s and max_retry_after_s must be >= 0")
        self.base_url = normalize_base_url(base_url)
        self.retries = retries
        self.timeout_s = float(timeout_s)
        self.concurrency = concurrency
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.backoff_s = backoff_s
        self.max_retry_after_s = max_retry_after_s
        self._model = model or None
        self.breaker = CircuitBreaker(breaker_failures, breaker_cooldown_s)
        self._calls: set[asyncio.Task[Any]] = set()
        self._closing = False
        self._model_lock = asyncio.Lock()
        self._slots = AdaptiveLimit(concurrency)  # backs off on 429/503 and rising latency
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(self.timeout_s),
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
            follow_redirects=False,
        )

    @classmethod
    def from_settings(cls, settings: Settings, *, model_url: str | None = None) -> ModelClient | None:
        """A client built from settings, or None when no URL is set; ``model_url`` (``--model-url``) wins."""
        url = (model_url or settings.model_url or "").strip()
        if not url:
            return None
        return cls(
            url,
            model=settings.model,
            api_key=settings.api_key,
            timeout_s=settings.model_timeout_s,
            retries=settings.model_retries,
            concurrency=settings.model_concurrency,
            max_tokens=settings.max_output_tokens,
            temperature=settings.temperature,
            top_p=settings.top_p,
            top_k=settings.top_k,
            breaker_failures=settings.model_breaker_failures,
            breaker_cooldown_s=settings.model_breaker_cooldown_s,
        )

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self.cancel_calls()
        await self._http.aclose()

    def cancel_calls(self) -> None:
        """Shutting down: calls in flight end now with ``ModelUnavailable``; new ones fail at once."""
        self._closing = True
        for task in list(self._calls):
            task.cancel()

    def status(self) -> str:
        """What the client knows of the server without calling it (for /healthz, never waits)."""
        return "shutting down" if self._closing else self.breaker.describe()

    async def health(self) -> bool:
        """Whether ``GET {base_url}/models`` answers 200 within a few seconds; never raises."""
        limit = min(self.timeout_s, HEALTH_TIMEOUT_S)
        try:
            async with asyncio.timeout(limit):  # a whole-request deadline: a trickle cannot stretch it
                response = await self._http.get(f"{self.base_url}/models", timeout=limit)
        except (httpx.HTTPError, RuntimeError, TimeoutError):
            return False
        return response.status_code == 200

    async def model_name(self) -> str:
        """The configured model, else the first ID listed by ``GET /models`` (asked once, then cached)."""
        if self._model:
            return self._model
        async with self._model_lock:
            if not self._model:
                self._model, _ = await self._with_retries("GET", "/models", None, _first_model_id)
        return self._model

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        schema: dict[str, Any] | None = None,
        schema_name: str = "ranking",
    ) -> Completion:
        """One chat completion; with ``schema`` the server must answer JSON matching it.

        The whole call, retries and backoff included, ends within ``timeout_s``: one overall
        deadline (connect, queueing and the total read), so a server that trickles bytes is cut.
        """
        _check_messages(messages)
        if self._closing:
            raise ModelUnavailable("the service is shutting down; the model was not called")
        self.breaker.check()
        call = asyncio.ensure_future(self._complete(messages, schema, schema_name))
        self._calls.add(call)
        try:
            completion = await asyncio.wait_for(asyncio.shield(call), self.timeout_s)
        except TimeoutError:
            call.cancel()
            self.breaker.failure(f"no complete answer within {self.timeout_s:g} s")
            raise ModelUnavailable(
                f"model server {self.base_url} unavailable: no answer within {self.timeout_s:g} s "
                "(one deadline for the whole call: connect, read and retries)"
            ) from None
        except asyncio.CancelledError:
            call.cancel()
            current = asyncio.current_task()
            if self._closing and (current is None or not current.cancelling()):
                self.breaker.trial = False
                raise ModelUnavailable("the service is shutting down; the model call was cancelled") from None
            raise
        except ModelUnavailable as exc:
            self.breaker.failure(str(exc))
            raise
        except ModelError:
            self.breaker.success()  # it answered: it is up
            raise
        finally:
            self._calls.discard(call)
        self.breaker.success()
        return completion

    async def _complete(
        self, messages: list[dict[str, str]], schema: dict[str, Any] | None, schema_name: str
    ) -> Completion:
        started = time.perf_counter()
        deadline = time.monotonic() + self.timeout_s
        model = await self.model_name()
        payload: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
        }
        if self.top_k is not None:
            payload["top_k"] = self.top_k
        if schema is not None:
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": schema, "strict": True},
            }
        body, attempts = await self._with_retries(
            "POST", "/chat/completions", payload, _checked_completion, deadline=deadline
        )
        text, finish_reason = _first_choice(body)
        usage = body["usage"] if isinstance(body.get("usage"), dict) else {}
        return Completion(
            text=text,
            finish_reason=finish_reason,
            input_tokens=_int_or_none(usage.get("prompt_tokens")),
            output_tokens=_int_or_none(usage.get("completion_tokens")),
            model=str(body.get("model") or model),
            latency_ms=(time.perf_counter() - started) * 1000.0,
            attempts=attempts,
        )

    async def _with_retries(
        self,
        method: str,
        path: str,
        payload: dict[str, Any] | None,
        read: Callable[[dict[str, Any]], T],
        *,
        deadline: float | None = None,
    ) -> tuple[T, int]:
        """``read`` of the decoded JSON body, and the attempts it took; raises the module's two errors.

        ``read`` raises ``_Retryable`` for a body that is malformed, so it is retried like a 5xx.
        Retries spend the budget up to ``deadline`` (monotonic) and no further.
        """
        if deadline is None:
            deadline = time.monotonic() + self.timeout_s
        attempts = self.retries + 1
        reason = "no attempt made"
        for attempt in range(attempts):
            try:
                async with self._slots:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise _Retryable(f"no answer within {self.timeout_s:g} s")
                    sent = time.perf_counter()
                    try:
                        async with asyncio.timeout(left):
                            body = await self._attempt(method, path, payload)
                    except TimeoutError:
                        raise _Retryable(f"no complete answer within {self.timeout_s:g} s") from None
                    if method == "POST":  # completions only: a model listing says nothing of load
                        self._slots.observed(time.perf_counter() - sent)
                    return read(body), attempt + 1
            except _Retryable as exc:
                if exc.status in OVERLOAD_STATUS:
                    self._slots.overloaded()
                reason = str(exc)
                if attempt + 1 == attempts:
                    break
                delay = self._delay(attempt, exc.retry_after)
                if deadline - time.monotonic() - delay < MIN_ATTEMPT_S:
                    reason += " (the retry budget is spent)"
                    break
                log.warning(
                    "model server %s%s: %s; retry %d/%d in %.2f s",
                    self.base_url,
                    path,
                    reason,
                    attempt + 1,
                    self.retries,
                    delay,
                )
                await asyncio.sleep(delay)
        raise ModelUnavailable(
            f"model server {self.base_url} unavailable: {method} {path} failed "
            f"{attempts} time{'s' if attempts != 1 else ''}; last error: {reason}"
        )

    async def _attempt(self, method: str, path: str, payload: dict[str, Any] | None) -> dict[str, Any]:
        url = f"{self.base_url}{path}"
        try:
            response = await self._http.request(method, url, json=payload)
        except httpx.TimeoutException as exc:
            raise _Retryable(f"no answer within {self.timeout_s:g} s ({type(exc).__name__})") from exc
        except httpx.RequestError as exc:
            raise _Retryable(f"cannot reach {url}: {type(exc).__name__}: {exc}") from exc
        status = response.status_code
        if status in _RETRYABLE_STATUS or status >= 500:
            raise _Retryable(
                f"HTTP {status}: {_error_text(response)}",
                _retry_after(response.headers.get("retry-after")),
                status,
            )
        if status == 400 and "context length" in _error_text(response).lower():
            # vLLM: prompt + max_tokens over --max-model-len; say so, the server's words follow
            raise ModelError(
                "the prompt and the answer's max_tokens do not fit the model's context window "
                f"(the server's max_model_len): {_error_text(response)}",
                status,
            )
        if status != 200:
            raise ModelError(
                f"model server rejected {method} {path}: HTTP {status}: {_error_text(response)}", status
            )
        try:
            body = response.json()
        except ValueError as exc:
            raise _Retryable(f"HTTP 200 with a body that is not JSON: {response.text[:200]!r}") from exc
        if not isinstance(body, dict):
            raise _Retryable(f"HTTP 200 with JSON that is not an object: {response.text[:200]!r}")
        return body

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter, or the server's Retry-After (capped) when it gave one."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after_s)
        return self.backoff_s * (2**attempt) * (0.5 + random.random())


def _check_messages(messages: list[dict[str, str]]) -> None:
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list of {'role', 'content'} dicts")
    for i, message in enumerate(messages):
        if (
            not isinstance(message, dict)
            or not isinstance(message.get("role"), str)
            or not isinstance(message.get("content"), str)
        ):
            raise ValueError(f"messages[{i}] must be a dict with string 'role' and 'content'")


def _checked_completion(body: dict[str, Any]) -> dict[str, Any]:
    """The body itself when it holds a first choice; a body without one is a server fault."""
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _Retryable(f"HTTP 200 without choices: {str(body)[:200]}")
    return body


def _first_choice(body: dict[str, Any]) -> tuple[str, str | None]:
    choice = body["choices"][0]
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    content = message.get("content")
    finish = choice.get("finish_reason")
    return (content if isinstance(content, str) else ""), (finish if isinstance(finish, str) else None)


def _first_model_id(body: dict[str, Any]) -> str:
    data = body.get("data")
    if isinstance(data, list):
        for entry in data:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str) and entry["id"]:
                return entry["id"]
    raise _Retryable("GET /models lists no models (set TCFL_MODEL to name one)")


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _error_text(response: httpx.Response) -> str:
    """The server's own error message when it sent one (OpenAI and vLLM shapes), else the raw body."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
        for key in ("message", "detail", "error"):
            if body.get(key):
                return str(body[key])[:300]
    return response.text[:300]


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date); None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())
