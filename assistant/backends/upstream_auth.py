"""The one rule for the credentials an OpenAI-compatible server is sent.

- `openai.api_key` set (anything but empty or `none`): `Authorization: Bearer <api key>`, and nothing else.
- else, credentials in the base URL (`http://user:password@host/v1`): `Authorization: Basic` of them
  (a server behind a proxy that asks for a password).
- else `Authorization: Bearer none`, the placeholder OpenAI clients send.

The credentials never stay in the URL the clients are given: an HTTP client turns a URL's `user:password`
into Basic auth that replaces the Bearer header, so the server would get the URL's password instead of
the key.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit

NO_KEY = ("", "none")


@dataclass(frozen=True)
class UpstreamAuth:
    url: str  # the base URL without credentials
    authorization: str  # the Authorization header's value


def upstream_auth(url: str, api_key: str) -> UpstreamAuth:
    """The URL to call and the Authorization header to send, by the rule above."""
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    clean = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)) if at else url
    if api_key.strip() not in NO_KEY:
        return UpstreamAuth(clean, f"Bearer {api_key.strip()}")
    if at:
        user, _, password = userinfo.partition(":")
        pair = f"{unquote(user)}:{unquote(password)}".encode()
        return UpstreamAuth(clean, "Basic " + base64.b64encode(pair).decode("ascii"))
    return UpstreamAuth(clean, f"Bearer {api_key.strip() or 'none'}")
