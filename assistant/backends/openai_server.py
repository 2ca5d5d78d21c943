"""An OpenAI-compatible server as the backends know it: its replicas and the connections to them, the
model it serves, its context window, how many tokens a prompt is, and whether it is up.

What the server reports is used when it reports it: the model (the first of /v1/models when none is
configured), the context window (vLLM's `max_model_len` in /v1/models, else llama.cpp's /props or
Ollama's /api/show), and exact prompt token counts from a tokenize endpoint: vLLM's `POST /tokenize`
(chat messages through the chat template, or a plain prompt), or, for completion prompts,
llama-cpp-python's `POST /extras/tokenize/count`. Without one, tokens are estimated conservatively: one
per 3 UTF-8 bytes plus 8 per message and 8 for the reply's start.

Discovery and counting are called from the worker threads that build prompts, so they go through a sync
HTTP client; health checks and answers go through each replica's async `openai` client, made here too.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from assistant.backends.base import BackendBusy, BackendError, BackendHealth, Message, completion_text
from assistant.backends.http_clients import pool_limits
from assistant.backends.replicas import Replica, Replicas
from assistant.security.redaction import redact_text, redact_url

if TYPE_CHECKING:
    from assistant.settings import OpenAISettings

log = logging.getLogger(__name__)
REDISCOVER_S = 5.0  # after a failed /v1/models, wait this long before asking again
HEALTH_TIMEOUT_S = 5.0
LIKELY_SLACK = 1.1  # likely_tokens: a tenth more than the densest prompt counted so far
LIKELY_MIN_BYTES = 512  # a shorter prompt is mostly its template: its tokens per byte say nothing of sources


def estimate_tokens(messages: list[Message]) -> int:
    """An upper-leaning guess for servers that cannot count: 1 token per 3 UTF-8 bytes + framing."""
    return sum(math.ceil(len(m["content"].encode("utf-8")) / 3) + 8 for m in messages) + 8


def content_bytes(messages: list[Message]) -> int:
    return sum(len(m["content"].encode("utf-8")) for m in messages)


def base_urls(cfg: "OpenAISettings") -> list[str]:
    """`base_urls`, else `base_url` (which may itself be a comma-separated list)."""
    urls = list(cfg.base_urls) or [u for u in cfg.base_url.split(",")]
    return [u.strip().rstrip("/") for u in urls if u.strip()]


def request_error(exc: Exception, where: str) -> BackendError:
    """The error to raise for a failed request to the server; `where` is a shown URL, and the exception's
    own text (which may hold the request's URL) is redacted too."""
    import httpx
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return BackendError(f"backend timed out at {where}")
    if isinstance(exc, openai.APIConnectionError):
        return BackendError(redact_text(f"backend unreachable at {where}: {exc.__cause__ or exc}"))
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code in (429, 503):
            retry = exc.response.headers.get("retry-after", "")
            return BackendBusy(f"backend busy at {where}", retry_after=int(retry) if retry.isdigit() else 5)
        return upstream_refusal(where, exc.status_code, exc.message)
    if isinstance(exc, httpx.TimeoutException):  # a read that outlasted the timeout mid-stream
        return BackendError(f"backend timed out at {where}")
    if isinstance(exc, httpx.HTTPError):  # raised while reading a stream: the connection broke
        return BackendError(redact_text(f"backend connection lost at {where}: {type(exc).__name__}: {exc}"))
    return BackendError(redact_text(f"backend error at {where}: {exc}"))


def upstream_refusal(where: str, status: int | None, body: Any) -> BackendError:
    """The error a client is shown for a server's refusal: its status and a generic reason. The server's
    own words (which may quote the key or the credentials it was sent) go to this server's log only,
    redacted."""
    log.warning("the backend at %s answered %s: %s", where, status if status is not None else "an error", redact_text(str(body)))
    if status is None:
        return BackendError(f"backend error at {where} while answering (the server log has its message)")
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "error"
    return BackendError(f"backend at {where} answered {status} {reason} (the server log has its message)")


@dataclass
class ServerInfo:
    models: list[str]
    model: str
    max_model_len: int | None


class OpenAIServer:
    """One OpenAI-compatible server (one or several replicas of one model): what it serves and how it
    counts, asked once and remembered, so that the backend built on it only streams answers."""

    def __init__(self, cfg: "OpenAISettings", tokenize_route: str | None = None) -> None:
        """`tokenize_route`: how the server counts prompts, when the caller knows (a managed llama-server)."""
        import httpx
        import openai

        self._httpx = httpx
        self.cfg = cfg
        self.replicas = Replicas(base_urls(cfg), cfg.retry_unhealthy_s, cfg.api_key)
        timeout = httpx.Timeout(cfg.timeout_s, connect=cfg.connect_timeout_s)
        limits = pool_limits(cfg.max_connections)
        for replica in self.replicas.all:
            replica.client = openai.AsyncOpenAI(
                base_url=replica.base_url,
                api_key=cfg.api_key,
                default_headers={"Authorization": replica.authorization},  # the one rule: upstream_auth.py
                timeout=timeout,
                max_retries=0,  # fail fast; the caller shows the error and the user may ask again
                http_client=openai.DefaultAsyncHttpxClient(timeout=timeout, limits=limits),
            )
        self._http = httpx.Client(
            timeout=httpx.Timeout(min(cfg.timeout_s, 30.0), connect=cfg.connect_timeout_s),
            auth=self._authorize,
            limits=limits,
        )
        self._info: ServerInfo | None = None
        self._failed_at = -math.inf
        # "vllm", "llama-server", "llamacpp" or "estimate": found on the first count unless given
        self._tokenize_route: str | None = tokenize_route
        self._context_probed = False  # asked the server's own endpoints for its window (once)
        self._probed_window: int | None = None
        self._probe_lock = threading.Lock()
        self._tokens_per_byte = 0.0  # the most seen in an exact count (template included); 0 before one

    def _authorize(self, request: Any) -> Any:
        """The sync client's requests carry the Authorization of the replica they go to."""
        url = str(request.url)
        replica = next((r for r in self.replicas.all if url.startswith(r.root)), self.replicas.all[0])
        request.headers["Authorization"] = replica.authorization
        return request

    @property
    def tokenize_route(self) -> str | None:
        """How prompts are counted: "vllm", "llama-server" or "llamacpp" (the server's endpoint),
        "estimate", or None before the first count."""
        return self._tokenize_route

    # --- which model, what window ---------------------------------------------------------------

    def remember(self, entries: list[dict], where: str = "") -> ServerInfo:
        """Keep what a /v1/models listing says: the model to ask for and its window, when given."""
        ids = [str(e.get("id")) for e in entries if e.get("id")]
        if not ids and not self.cfg.model:
            raise BackendError(f"the server at {where or self.replicas.all[0].shown_url} lists no models")
        model = self.cfg.model or ids[0]
        entry = next((e for e in entries if e.get("id") == model), {})
        length = entry.get("max_model_len")
        self._info = ServerInfo(ids, model, int(length) if isinstance(length, int) and length > 0 else None)
        return self._info

    def _discover(self) -> ServerInfo | None:
        """The server's models (sync, cached; retried at most every few seconds while it is down)."""
        if self._info is not None or time.monotonic() - self._failed_at < REDISCOVER_S:
            return self._info
        for replica in self.replicas.candidates():
            try:
                r = self._http.get(f"{replica.base_url}/models", timeout=HEALTH_TIMEOUT_S)
                r.raise_for_status()
                return self.remember(r.json().get("data", []), replica.shown_url)
            except Exception as exc:
                log.warning("could not list the models of %s: %s", replica.shown_url, redact_text(str(exc)))
        self._failed_at = time.monotonic()
        return None

    def _probe_context_window(self, root: str, model: str) -> int | None:
        """The context window from a server that does not put it in /v1/models: llama.cpp's
        `llama-server` (GET /props: `default_generation_settings.n_ctx`, or `n_ctx`), Ollama (POST
        /api/show: a `num_ctx` parameter). Without one, the configured window is assumed and said once."""
        found: Any = None
        try:
            r = self._http.get(f"{root}/props", timeout=HEALTH_TIMEOUT_S)
            if r.status_code == 200:
                props = r.json()
                found = (props.get("default_generation_settings") or {}).get("n_ctx") or props.get("n_ctx")
            if not found:
                r = self._http.post(f"{root}/api/show", json={"model": model}, timeout=HEALTH_TIMEOUT_S)
                if r.status_code == 200:
                    params = str(r.json().get("parameters") or "")
                    match = next((line.split()[1] for line in params.splitlines() if line.split()[:1] == ["num_ctx"]), None)
                    found = int(match) if match and match.isdigit() else None
        except (self._httpx.HTTPError, ValueError, AttributeError) as exc:
            log.debug("context window probe at %s failed: %s", redact_url(root), redact_text(str(exc)))
        if isinstance(found, int) and found > 0:
            return found
        log.warning(
            "the server at %s does not report its context window; assuming %d tokens "
            "(set openai.context_window to the server's real one)", redact_url(root), self.cfg.context_window,
        )
        return None

    @property
    def model(self) -> str:
        if self.cfg.model:
            return self.cfg.model
        info = self._discover()
        return info.model if info else ""

    async def served_model(self, replica: Replica) -> str:
        """The model to ask for, from the event loop: listed through this replica's client if not known yet."""
        if self.cfg.model:
            return self.cfg.model
        if self._info is None:
            page = await replica.client.models.list(timeout=HEALTH_TIMEOUT_S)
            return self.remember([m.model_dump() for m in page.data], replica.shown_url).model
        return self._info.model

    @property
    def context_window(self) -> int:
        info = self._discover()
        if info is not None and info.max_model_len:
            return info.max_model_len
        if info is not None:
            with self._probe_lock:  # prompts are built in several threads at once: probe (and warn) once
                if not self._context_probed:
                    self._probed_window = self._probe_context_window(self.replicas.all[0].root, info.model)
                    self._context_probed = True
        return self._probed_window or self.cfg.context_window

    # --- tokens ---------------------------------------------------------------------------------

    def count_tokens(self, messages: list[Message]) -> int:
        """Exact when the server has a tokenize endpoint that fits the prompt style, else estimated."""
        routes = [self._tokenize_route] if self._tokenize_route else ["vllm", "llamacpp"]
        for route in routes:
            if route == "estimate":
                break
            try:
                count = self._count_with(route, messages)
            except Exception as exc:  # server down: estimate now, ask again next time
                log.warning("token count from %s failed: %s", self.replicas.shown, redact_text(str(exc)))
                return estimate_tokens(messages)
            if count is not None:
                self._tokenize_route = route
                size = content_bytes(messages)
                if size >= LIKELY_MIN_BYTES:
                    self._tokens_per_byte = max(self._tokens_per_byte, count / size)
                return count
        self._tokenize_route = "estimate"
        return estimate_tokens(messages)

    def likely_tokens(self, messages: list[Message]) -> int | None:
        """The prompt's size at the most tokens per byte an exact count of a prompt of 512 bytes or more
        found, plus a tenth; None before such a count. A guess, not a bound: a caller that sends on it
        counts exactly too."""
        if not self._tokens_per_byte:
            return None
        return math.ceil(content_bytes(messages) * self._tokens_per_byte * LIKELY_SLACK)

    def _count_with(self, route: str, messages: list[Message]) -> int | None:
        """Ask the replicas in turn (an unreachable one is set aside); the first answer counts."""
        error: Exception | None = None
        for replica in self.replicas.candidates():
            try:
                return self._count_at(replica.root, route, messages)
            except self._httpx.TransportError as exc:
                self.replicas.mark_down(replica, redact_text(f"{type(exc).__name__}: {exc}"))
                error = exc
        assert error is not None
        raise error

    def _count_at(self, root: str, route: str, messages: list[Message]) -> int | None:
        if route == "vllm":
            body: dict[str, Any] = {"model": self.model}
            if self.cfg.prompt_style == "chat":
                body.update(messages=messages, add_generation_prompt=True)
            else:
                body.update(prompt=completion_text(messages))
            r = self._http.post(f"{root}/tokenize", json=body)
        elif route == "llama-server":
            return self._count_llama_server(root, messages)
        elif route == "llamacpp" and self.cfg.prompt_style == "completion":
            r = self._http.post(f"{root}/extras/tokenize/count", json={"input": completion_text(messages)})
        else:
            return None  # llama-cpp-python's server tokenizes raw text only: chat prompts cannot be counted
        if r.status_code in (404, 405):
            return None
        r.raise_for_status()
        data = r.json()
        if isinstance(data.get("max_model_len"), int) and self._info is not None:
            self._info.max_model_len = data["max_model_len"]
        return int(data["count"]) if "count" in data else None

    def _count_llama_server(self, root: str, messages: list[Message]) -> int:
        """llama.cpp's llama-server: the chat template applied by the server (/apply-template), then
        /tokenize with the special tokens, as its chat endpoint tokenizes a prompt."""
        if self.cfg.prompt_style == "chat":
            r = self._http.post(f"{root}/apply-template", json={"messages": messages})
            r.raise_for_status()
            text = r.json()["prompt"]
        else:
            text = completion_text(messages)
        r = self._http.post(f"{root}/tokenize", json={"content": text, "add_special": True, "parse_special": True})
        r.raise_for_status()
        return len(r.json()["tokens"])

    # --- health ---------------------------------------------------------------------------------

    async def _check(self, replica: Replica) -> tuple[Replica, Any]:
        import openai

        try:
            page = await replica.client.models.list(timeout=HEALTH_TIMEOUT_S)
        except openai.APIError as exc:
            self.replicas.mark_down(replica, str(request_error(exc, replica.shown_url)))
            return replica, request_error(exc, replica.shown_url)
        self.replicas.mark_up(replica)
        return replica, page

    async def health(self) -> BackendHealth:
        """GET /v1/models of every replica with a short timeout; BackendError when none can be reached."""
        checks = await asyncio.gather(*(self._check(r) for r in self.replicas.all))
        up = [(r, page) for r, page in checks if not isinstance(page, BackendError)]
        down = [(r, err) for r, err in checks if isinstance(err, BackendError)]
        if not up:
            if len(down) == 1:
                raise down[0][1]
            raise BackendError("no replica can be reached: " + "; ".join(str(e) for _, e in down))
        replica, page = up[0]
        info = self.remember([m.model_dump() for m in page.data], replica.shown_url)
        style = self.cfg.prompt_style
        if self.cfg.model and self.cfg.model not in info.models:
            return BackendHealth(ok=False, model=info.model, detail=f"model {info.model!r} not served by {replica.shown_url} (it serves: {', '.join(info.models)})")
        detail = f"{replica.shown_url}, {style} prompts"
        if len(self.replicas.all) > 1:
            detail = f"{len(up)} of {len(self.replicas.all)} replicas up, {style} prompts"
            if down:
                detail += "; down: " + "; ".join(str(e) for _, e in down)
        return BackendHealth(ok=True, model=info.model, detail=detail)

    # --- closing --------------------------------------------------------------------------------

    def close_sync_client(self) -> None:
        """Close the discovery and counting client: what can be closed outside an event loop."""
        self._http.close()

    async def aclose(self) -> None:
        self._http.close()
        for replica in self.replicas.all:
            try:
                await replica.client.close()
            except RuntimeError:  # its connections belonged to an event loop that is already closed
                pass
