"""Browser safety: no cross-site writes, a CSRF token on dashboard forms, security headers everywhere,
and, without API keys, only the Host names the service is known by.

Why all of them: without API keys (the default) the browser of anyone who can reach the service
is the only gate, and a page on another origin could otherwise make it post feedback, submissions
or batches. The Origin / Sec-Fetch-Site check refuses such posts from every modern browser; the
CSRF token (double-submit: a cookie and the same value in the form) also covers old browsers
and same-site pages; the headers keep pages from being framed, sniffed or leaking URLs. DNS
rebinding gets around all three: a page on ``evil.example`` whose name then resolves to
127.0.0.1 is same-origin with itself and reads the service's answers. Its requests carry
``Host: evil.example``, so the Host check refuses them (``HostCheckMiddleware``).
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fastapi import HTTPException, Request
from markupsafe import Markup
from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_HOSTS_REMEMBERED = 1024
CSRF_COOKIE = "tcfl_csrf"
CSRF_FIELD = "csrf_token"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{32,128}$")
# bounded repetitions: linear in the body whatever it holds
_MULTIPART_TOKEN = re.compile(
    rb'name="csrf_token"\r\n(?:[^\r\n]{0,200}\r\n){0,4}\r\n([A-Za-z0-9_-]{32,128})\r\n'
)

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)
# The OpenAPI pages load Swagger UI / ReDoc from their CDN and start them with an inline script.
DOCS_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
    "style-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; img-src 'self' data: https:; "
    "worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "object-src 'none'"
)
DOCS_PATHS = frozenset({"/docs", "/redoc", "/docs/oauth2-redirect"})
HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def _encoded(csp: str) -> tuple[tuple[bytes, bytes], ...]:
    pairs = {"Content-Security-Policy": csp, **HEADERS}
    return tuple((name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in pairs.items())


_HEADERS = _encoded(CSP)
_DOCS_HEADERS = _encoded(DOCS_CSP)
_ADDED = frozenset(name for name, _ in _HEADERS)


class BrowserSafetyMiddleware:
    """Refuses cross-origin state-changing requests (403) and adds the security headers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        added = _DOCS_HEADERS if scope.get("path") in DOCS_PATHS else _HEADERS

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                # as MutableHeaders' item assignment sets them (lower-case names, any earlier value
                # replaced), in one pass over the response's headers
                message["headers"] = [
                    *(item for item in message.get("headers", ()) if item[0].lower() not in _ADDED),
                    *added,
                ]
                issued = scope.get("state", {}).get("csrf_issue")
                if issued:
                    MutableHeaders(scope=message).append("Set-Cookie", _cookie(issued))
            await send(message)

        refusal = cross_origin_refusal(scope) if scope.get("method") in UNSAFE_METHODS else None
        if refusal is not None:
            await JSONResponse({"detail": refusal}, status_code=403)(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)


class HostCheckMiddleware:
    """Answers 400 to a request whose Host is not one this service is known by (DNS rebinding).

    Allowed always: IP addresses (rebinding needs a DNS name; a browser that typed an address
    sends it as the Host), ``localhost`` and ``*.localhost`` (RFC 6761: always loopback), and a
    request without a Host (not a browser). Allowed besides: the ``allowed_hosts`` setting's
    names, ``.example.com`` for a domain and its subdomains, ``*`` for any. ``create_app`` adds
    it only when no API keys are set: with keys, a rebound page has no key to send.
    """

    def __init__(self, app: ASGIApp, *, allowed: Iterable[str] = ()) -> None:
        self.app = app
        names = [name.strip().lower().rstrip(".") for name in allowed if name.strip()]
        self.any = "*" in names
        self.exact = frozenset(n for n in names if not n.startswith("."))
        self.domains = tuple(n for n in names if n.startswith(".") and len(n) > 1)
        self._verdicts: dict[str, bool] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.any:
            await self.app(scope, receive, send)
            return
        host = next((v.decode("latin-1") for k, v in scope["headers"] if k.lower() == b"host"), None)
        if host is None or self.allows(host):
            await self.app(scope, receive, send)
            return
        shown = host[:100].encode("ascii", "backslashreplace").decode("ascii")
        detail = (
            f"Host {shown!r} is not a name this service answers to without API keys (a guard against "
            "DNS rebinding): add it to TCFL_ALLOWED_HOSTS, or set TCFL_SERVICE_API_KEYS"
        )
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await JSONResponse({"detail": detail}, status_code=400)(scope, receive, send)

    def allows(self, host: str) -> bool:
        """Whether ``host`` is a name this service answers to (remembered: clients repeat theirs)."""
        verdict = self._verdicts.get(host)
        if verdict is None:
            verdict = self._allows(host)
            if len(self._verdicts) >= MAX_HOSTS_REMEMBERED:  # any Host can be sent: bounded
                self._verdicts.clear()
            self._verdicts[host] = verdict
        return verdict

    def _allows(self, host: str) -> bool:
        name = host_name(host)
        if name is None:
            return False
        if name == "localhost" or name.endswith(".localhost") or _is_ip(name):
            return True
        return name in self.exact or any(name.endswith(d) or name == d[1:] for d in self.domains)


def host_name(host: str) -> str | None:
    """The name of a Host header without its port, lower-case; None when it is not a host at all."""
    value = host.strip().lower()
    if value.startswith("["):  # an IPv6 literal: [::1]:8000
        end = value.find("]")
        if end < 0 or (value[end + 1 :] and not _PORT.match(value[end + 1 :])):
            return None
        return value[1:end]
    name, _, port = value.partition(":")
    if port and not port.isdigit():
        return None
    name = name.rstrip(".")
    return name if name and _HOST_NAME.match(name) else None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


_HOST_NAME = re.compile(r"^[a-z0-9_]([a-z0-9_.-]{0,252})$")
_PORT = re.compile(r"^:\d{1,5}$")


def cross_origin_refusal(scope: Scope) -> str | None:
    """Why this request comes from another site (and must be refused), or None when it does not.

    Browsers send ``Sec-Fetch-Site`` and ``Origin`` on cross-origin posts; clients that are not
    browsers (curl, scripts, CI) send neither and are let through (API keys guard them).
    """
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"cross-site request refused (Sec-Fetch-Site: {site[:40]})"
    origin = headers.get("origin")
    if origin is None:
        return None
    host = headers.get("host", "")
    parts = urlsplit(origin)
    if origin == "null" or not parts.netloc or parts.netloc.lower() != host.lower():
        return f"cross-origin request refused (Origin {origin[:100]!r} is not this service)"
    return None


def _cookie(token: str) -> str:
    return f"{CSRF_COOKIE}={token}; Path=/; SameSite=Strict; HttpOnly"


def csrf_token(request: Request) -> str:
    """This browser's token: from its cookie, or a new one that the response sets as the cookie."""
    current = request.cookies.get(CSRF_COOKIE, "")
    if _TOKEN.match(current):
        return current
    issued = getattr(request.state, "csrf_issue", None)
    if not issued:
        issued = secrets.token_urlsafe(32)
        request.state.csrf_issue = issued
    return issued


def csrf_field(context: Any) -> Markup:
    """``{{ csrf_field() }}`` in a template: the hidden input every dashboard form must carry."""
    request = context["request"]
    return Markup('<input type="hidden" name="{}" value="{}">').format(CSRF_FIELD, csrf_token(request))


async def require_csrf(request: Request) -> None:
    """Dashboard routes: a state-changing request must carry the cookie's token in its form."""
    if request.method not in UNSAFE_METHODS:
        return
    cookie = request.cookies.get(CSRF_COOKIE, "")
    given = await _form_token(request)
    if not (_TOKEN.match(cookie) and given and hmac.compare_digest(cookie.encode(), given.encode())):
        raise HTTPException(
            403, "the form's CSRF token is missing or stale: reload the page and send the form again"
        )


async def _form_token(request: Request) -> str | None:
    """The form's token, read from the raw body (cached for the route, which parses it its own way)."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    try:
        body = await request.body()
    except RuntimeError:  # FastAPI already parsed the form for the route's Form() parameters
        value = (await request.form()).get(CSRF_FIELD)
        return value if isinstance(value, str) else None
    if media == "application/x-www-form-urlencoded":
        try:
            values = parse_qs(body.decode("latin-1"), max_num_fields=100_000).get(CSRF_FIELD, [])
        except ValueError:
            return None
        return values[0] if values else None
    if media == "multipart/form-data":
        found = _MULTIPART_TOKEN.search(body)
        return found.group(1).decode("ascii") if found else None
    return None
