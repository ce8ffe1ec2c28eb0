"""API keys for the dashboard: asked for once, kept in an HttpOnly cookie, checked like the API's.

The API (``deps.require_api_key``, applied to the dashboard router by ``create_app``) reads the
key from ``X-API-Key`` only. Browsers navigating pages send no such header, so every dashboard
route uses ``KeyedRoute``: before the dependencies run it copies a valid cookie into
``X-API-Key``, and where there is no valid key it answers with the key form instead. The cookie
is SameSite=Strict, so forms posted from other sites arrive without it and are asked for a key.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any
from urllib.parse import urlsplit

from fastapi import Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.types import Message, Receive

from app.service.dashboard.pages import render
from app.service.deps import key_matches

COOKIE = "tcfl_api_key"
COOKIE_MAX_AGE_S = 30 * 24 * 3600
KEY_FIELD = "api_key"
KEY_ROUTE = "dashboard_key"  # POST /key: the form's own route
JSON_ROUTES = frozenset({"dashboard_batch_progress"})
MAX_KEY_FORM_BYTES = 16_384


def safe_next(target: str | None) -> str:
    """Only paths on this site: an open redirect would hand the key form to anyone's page."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return "/"
    return target


def set_key_cookie(response: Response, request: Request, key: str) -> None:
    response.set_cookie(
        COOKIE,
        key,
        max_age=COOKIE_MAX_AGE_S,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def key_form(request: Request, *, next_url: str, error: str | None = None) -> Response:
    return render(
        request, "key.html", {"next_url": safe_next(next_url), "error": error, "title": "API key"}, 401
    )


class KeyedRoute(APIRoute):
    """A dashboard route: turns the key cookie into ``X-API-Key`` and asks for a key when there is none."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        route_name = self.name

        async def keyed(request: Request) -> Response:
            keys = request.app.state.runtime.settings.service_keys()
            if not keys:
                return await handler(request)
            headers = Headers(scope=request.scope)
            if headers.get("x-api-key") or headers.get("authorization", "").lower().startswith("bearer "):
                return await handler(request)
            if route_name == KEY_ROUTE:
                return await _key_post(request, handler, keys)
            cookie = cookie_parser(headers.get("cookie", "")).get(COOKIE)
            if key_matches(cookie, keys):
                _add_key_header(request, cookie or "")
                return await handler(request)
            if route_name in JSON_ROUTES:
                return JSONResponse({"detail": "missing or invalid API key"}, status_code=401)
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            if request.method != "GET":
                target = request.headers.get("referer", "") and urlsplit(request.headers["referer"]).path
            message = None if cookie is None else "the stored API key is no longer valid; enter a current one"
            return key_form(request, next_url=target or "/", error=message)

        return keyed


def _add_key_header(request: Request, key: str) -> None:
    request.scope["headers"] = [
        *request.scope["headers"],
        (b"x-api-key", key.encode("utf-8", "surrogateescape")),
    ]


def _replayer(body: bytes, receive: Receive) -> Receive:
    """A receive channel that hands over an already-read body once, then the real channel."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


async def _key_post(
    request: Request, handler: Callable[[Request], Coroutine[Any, Any, Response]], keys: Sequence[str]
) -> Response:
    """Read the (small) key form first, then replay its body to the real handler."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in Request(request.scope, request.receive).stream():
        size += len(chunk)
        if size > MAX_KEY_FORM_BYTES:
            return key_form(request, next_url="/", error="the form is too large")
        chunks.append(chunk)
    body = b"".join(chunks)
    form = await Request(request.scope, _replayer(body, request.receive)).form(max_files=0)
    given = form.get(KEY_FIELD)
    next_url = str(form.get("next") or "/")
    if not isinstance(given, str) or not key_matches(given.strip(), keys):
        return key_form(request, next_url=next_url, error="that key is not valid; check it and try again")
    _add_key_header(request, given.strip())
    return await handler(Request(request.scope, _replayer(body, request.receive)))
