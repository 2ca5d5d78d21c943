"""Defences against other web pages the user visits: DNS rebinding, cross-site requests, framing.

- Host: only loopback names, the address bound, and `server.allowed_hosts` (a rebinding page sends its own
  name). Checked here rather than with Litestar's AllowedHostsConfig, which compares the Host header
  with its port and so would need every port listed.
- State-changing requests (POST, PUT, PATCH, DELETE): an `Origin` (or `Sec-Fetch-Site: cross-site`) from
  another site is refused; a body must be `application/json` (415 otherwise), which a cross-site page
  cannot send without a CORS preflight the server does not grant; the one multipart route (uploads)
  also needs the `X-Requested-By` header, which a cross-site form cannot set.
- Every response carries a Content-Security-Policy (`default-src 'self'`, no remote images, no framing),
  `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`: added by the app's `before_send`
  hook, which sees every response (404, 405 and refusals too), where a middleware sees only its routes'.
  The API docs page allows its own inline script by hash, and nothing more.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Mapping
from urllib.parse import urlsplit

from litestar import Response
from litestar.datastructures import MutableScopeHeaders
from litestar.enums import ScopeType
from litestar.middleware import AbstractMiddleware, DefineMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from assistant.error_codes import code_of
from assistant.security.access import LOOPBACK_NAMES
from assistant.settings import Settings

# The one header a page must send with a multipart upload (any non-empty value). Documented in docs/usage.md.
CSRF_HEADER = "X-Requested-By"
MULTIPART_OPT = "multipart"  # route opt: the route takes multipart/form-data (with CSRF_HEADER)
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
JSON_TYPES = ("application/json",)

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
}
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})


def host_name(host: str) -> str:
    """The name of a Host header, without its port (`[::1]:8000` -> `::1`), lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class HostRules:
    def __init__(self, settings: Settings) -> None:
        names = set(LOOPBACK_NAMES) | {h.lower() for h in settings.server.allowed_hosts if not h.startswith("*.")}
        if settings.server.host not in WILDCARD_BINDS:
            names.add(host_name(settings.server.host))
        self.names = frozenset(names)
        self.suffixes = tuple(h.lower()[1:] for h in settings.server.allowed_hosts if h.startswith("*."))

    def allows(self, host: str) -> bool:
        name = host_name(host)
        return bool(name) and (name in self.names or (bool(self.suffixes) and name.endswith(self.suffixes)))


def body_of(headers: Mapping[str, str]) -> tuple[str, bool]:
    """The request's media type (lower case, no parameters) and whether it announces a body."""
    media_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    has_body = headers.get("transfer-encoding") is not None or headers.get("content-length", "0") not in ("", "0")
    return media_type, has_body


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class BrowserDefences(AbstractMiddleware):
    scopes = {ScopeType.HTTP}

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        super().__init__(app)
        self.hosts = HostRules(settings)
        self.origins = frozenset(origin_of(o) for o in settings.server.cors_origins if o != "*")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = MutableScopeHeaders(scope=scope)
        refusal = self.refusal(scope, headers)
        if refusal is not None:
            await self.refuse(*refusal, send)
            return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope, headers: MutableScopeHeaders) -> tuple[int, str] | None:
        """(status, reason) when the request must be refused, else None."""
        host = headers.get("host", "")
        if not self.hosts.allows(host):
            return 421, f"this server does not answer to the host {host_name(host)!r} (see server.allowed_hosts)"
        if scope["method"] not in STATE_CHANGING:
            return None
        origin = headers.get("origin")
        if origin is not None and origin_of(origin) != f"{scope.get('scheme', 'http')}://{host}".lower() \
                and origin_of(origin) not in self.origins:
            return 403, f"cross-origin request from {origin[:100]!r} refused"
        if headers.get("sec-fetch-site", "") == "cross-site":
            return 403, "cross-site request refused"
        media_type, has_body = body_of(headers)
        route = scope.get("route_handler")
        if media_type == "multipart/form-data" and route is not None and route.opt.get(MULTIPART_OPT):
            if not headers.get(CSRF_HEADER.lower(), "").strip():
                return 403, f"a multipart upload needs the {CSRF_HEADER} header"
            return None
        if (media_type or has_body) and media_type not in JSON_TYPES:
            return 415, f"send the body as application/json, not {media_type or 'without a Content-Type'}"
        return None

    @staticmethod
    async def refuse(status: int, reason: str, send: Send) -> None:
        body = json.dumps({"status_code": status, "detail": reason, "code": code_of(status)}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def browser_defences(settings: Settings) -> DefineMiddleware:
    return DefineMiddleware(BrowserDefences, settings=settings)


async def security_headers(message: Message, scope: Scope) -> None:
    """The app's `before_send` hook: the security headers on every response, a route's own stricter policy
    kept (the original file's sandbox)."""
    if message["type"] == "http.response.start":
        headers = MutableScopeHeaders(message)
        for key, value in SECURITY_HEADERS.items():
            if key not in headers:
                headers[key] = value


INLINE_SCRIPT = re.compile(rb"<script\b(?![^>]*\bsrc\s*=)[^>]*>(.*?)</script\s*>", re.DOTALL | re.IGNORECASE)


def allow_own_inline_scripts(response: Response) -> Response:
    """An `after_request` hook for the API docs page, whose UI starts from an inline script (the schema in
    it): the policy allows that script by its SHA-256, and still no other inline script or remote source."""
    if response.media_type == "text/html" and isinstance(response.content, bytes):
        hashes = "".join(f" 'sha256-{base64.b64encode(hashlib.sha256(script).digest()).decode()}'"
                         for script in INLINE_SCRIPT.findall(response.content))
        response.headers["content-security-policy"] = f"{CONTENT_SECURITY_POLICY}; script-src 'self'{hashes}"
    return response
