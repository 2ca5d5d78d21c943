"""What must not leave the server as it is: absolute server paths, API keys, credentials inside URLs.

Jobs and errors name files relative to the folder they came from; settings and logs show `***` where a
key or password was. A URL keeps its scheme, host, port and path (so that it still says which server
is meant) and loses its user, password, every query value and its fragment.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from assistant.settings import Settings

HIDDEN = "***"
URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/@\s]+)@")
# A URL inside free text: it ends at whitespace, a quote, or a comma that starts the next URL (replicas
# given as one comma-separated setting); punctuation at its end belongs to the sentence around it.
SCHEME = r"[a-zA-Z][a-zA-Z0-9+.-]*://"
URL_IN_TEXT = re.compile(SCHEME + r"(?:[^\s'\"<>`,]|,(?!\s*" + SCHEME + r"))+")
SENTENCE_END = ".,;:!?)]}"
BEARER = re.compile(r"(?i)\b(bearer\s+)\S+")
BASIC = re.compile(r"(?i)\b(basic\s+)([A-Za-z0-9+/=_-]{4,})")  # Basic auth: base64 of user:password
OUR_KEYS = re.compile(r"\brag_[A-Za-z0-9_-]{8,}")
SECRET_FLAGS = re.compile(r"(?i)(--?(?:api[-_]?key|token|password|secret)[= ]+)(\S+)")
SK_KEYS = re.compile(r"\bsk-[A-Za-z0-9_*-]{3,}")  # OpenAI-style keys (sk-..., sk-proj-...), also half-masked
# A long token-shaped word (an API key, a session token): 32+ letters, digits, `_` and `-`, mixing upper
# case, lower case and at least three digits. Hex digests (no upper case), words and paths do not match.
TOKEN_CHAR = r"[A-Za-z0-9_-]"
LONG_TOKEN = re.compile(rf"(?<!{TOKEN_CHAR})(?=[A-Za-z0-9_-]*[a-z])(?=[A-Za-z0-9_-]*[A-Z])"
                        rf"(?=(?:[A-Za-z_-]*[0-9]){{3}}){TOKEN_CHAR}{{32,}}(?!{TOKEN_CHAR})")


def redact_url(url: str) -> str:
    """The URL as it may be shown: `user:password@` becomes `***@`, each query value `***`, a fragment `***`.

    Every query value is hidden, not only those with known secret names (token, key, sig, ...): servers
    name their tokens as they like (`X-Amz-Signature`, `code`, `k`), and a list would always miss one.
    The parameter names stay, so the URL still reads as the one that was configured.
    """
    try:
        parts = urlsplit(url)
    except ValueError:  # not parsable (an unclosed IPv6 bracket): everything after `?` goes
        base, question, _ = url.partition("?")
        return URL_CREDENTIALS.sub(lambda m: m["scheme"] + HIDDEN + "@", base) + (question and question + HIDDEN)
    _, at, host = parts.netloc.rpartition("@")  # a password may itself hold an `@`
    if not (at or parts.query or parts.fragment):
        return url
    query = "&".join(hide_query_value(item) for item in parts.query.split("&"))
    fragment = HIDDEN if parts.fragment else ""
    return urlunsplit((parts.scheme, f"{HIDDEN}@{host}" if at else host, parts.path, query, fragment))


def hide_query_value(item: str) -> str:
    """`name=value` -> `name=***`; a value without a name is hidden whole."""
    name, eq, value = item.partition("=")
    if not eq:
        return HIDDEN if item else item
    return f"{name}={HIDDEN}" if value else item


def redact_urls(text: str) -> str:
    """Free text with every URL in it shown as `redact_url` shows it."""

    def one(match: re.Match[str]) -> str:
        url = match[0]
        url_part = url.rstrip(SENTENCE_END)
        return redact_url(url_part) + url[len(url_part):]

    return URL_IN_TEXT.sub(one, text)


def redact_text(text: str) -> str:
    """Free text (a log line, an error, a command line) with keys, Bearer and Basic credentials, `sk-` and
    other long token shapes, URL credentials and URL query values hidden."""
    text = redact_urls(text)
    text = URL_CREDENTIALS.sub(lambda m: m["scheme"] + HIDDEN + "@", text)
    text = BEARER.sub(lambda m: m[1] + HIDDEN, text)
    text = BASIC.sub(lambda m: m[1] + HIDDEN if is_basic_credential(m[2]) else m[0], text)
    text = SK_KEYS.sub("sk-" + HIDDEN, text)
    text = LONG_TOKEN.sub(HIDDEN, text)
    text = SECRET_FLAGS.sub(lambda m: m[1] + HIDDEN, text)
    return OUR_KEYS.sub("rag_" + HIDDEN, text)


def is_basic_credential(value: str) -> bool:
    """Whether a word after `Basic` is base64 of `user:password` (not the word of "a basic setup")."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_" if "-" in value or "_" in value else None,
                                   validate=True)
    except (ValueError, binascii.Error):
        return False
    return b":" in decoded


SECRET_FLAG_ALONE = re.compile(r"(?i)--?(?:api[-_]?key|token|password|secret)")
SECRET_NAMES = re.compile(r"(?i)(api_?key|password|passwd|secret|token)")


def redact_settings(value: Any, name: str = "") -> Any:
    """Settings as `assistant config` shows them: secrets as ***, URLs and arguments without credentials."""
    if isinstance(value, dict):
        return {k: redact_settings(v, k) for k, v in value.items()}
    if isinstance(value, list):  # also a command line: `--api-key`, then the key as the next item
        return [HIDDEN if i and isinstance(v, str) and SECRET_FLAG_ALONE.fullmatch(str(value[i - 1]))
                else redact_settings(v, name) for i, v in enumerate(value)]
    if isinstance(value, str):
        if SECRET_NAMES.search(name) and value not in ("", "none"):
            return HIDDEN
        return redact_text(value)
    return value


class RedactedLogRecord(logging.LogRecord):
    """A log record whose message never shows a key, a bearer token or a URL's password."""

    def getMessage(self) -> str:
        return redact_text(super().getMessage())


def redact_logs() -> None:
    """Every log record of this process, from any library, is redacted when formatted."""
    logging.setLogRecordFactory(RedactedLogRecord)


def server_roots(settings: Settings) -> list[tuple[Path, str]]:
    """The server folders a client may see named, each with the name it is shown by."""
    data = Path(settings.data_dir).expanduser().resolve()
    roots = [(data / "uploads", "uploads"), (data, "data")]
    roots += [(Path(r).expanduser().resolve(), Path(r).name or "root") for r in settings.ingest.allowed_roots]
    return sorted(roots, key=lambda r: len(str(r[0])), reverse=True)


def client_path(path: str, settings: Settings) -> str:
    """A server path as a client may see it: relative to a known folder (named), else only its last part."""
    p = Path(path)
    for root, name in server_roots(settings):
        if p == root or p.is_relative_to(root):
            rel = p.relative_to(root).as_posix()
            return name if rel == "." else f"{name}/{rel}"
    return p.name


def strip_server_paths(text: str, settings: Settings) -> str:
    """Free text with every known server folder replaced by its shown name."""
    for root, name in server_roots(settings):
        text = text.replace(str(root), name)
    home = str(Path.home())
    return text.replace(home, "~") if len(home) > 1 else text
