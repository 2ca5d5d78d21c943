"""Any OpenAI-compatible server (vLLM, llama.cpp's server, SGLang, Ollama...) through the `openai` client.

The server batches concurrent requests itself, so nothing here serializes them. What the server
reports is used when it reports it: the model (the first of /v1/models when none is configured), the
context window (vLLM's `max_model_len`), and exact prompt token counts from a tokenize endpoint:
vLLM's `POST /tokenize` (chat messages through the chat template, or a plain prompt), or, for
completion prompts, llama-cpp-python's `POST /extras/tokenize/count`. Without one, tokens are
estimated conservatively: one per 3 UTF-8 bytes plus 8 per message and 8 for the reply's start.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncIterator, Literal

from assistant.backends.base import (
    BackendBusy,
    BackendError,
    BackendHealth,
    GenParams,
    Message,
    completion_text,
    register,
)

if TYPE_CHECKING:
    from assistant.settings import OpenAISettings, Settings

log = logging.getLogger(__name__)
REDISCOVER_S = 5.0  # after a failed /v1/models, wait this long before asking again
HEALTH_TIMEOUT_S = 5.0


def estimate_tokens(messages: list[Message]) -> int:
    """An upper-leaning guess for servers that cannot count: 1 token per 3 UTF-8 bytes + framing."""
    return sum(math.ceil(len(m["content"].encode("utf-8")) / 3) + 8 for m in messages) + 8


@dataclass
class ServerInfo:
    models: list[str]
    model: str
    max_model_len: int | None


class OpenAIBackend:
    name = "openai"

    def __init__(self, cfg: "OpenAISettings") -> None:
        import httpx
        import openai

        self._openai = openai
        self.cfg = cfg
        self.base_url = cfg.base_url.rstrip("/")
        self.root = self.base_url.removesuffix("/v1")
        self.prompt_style: Literal["chat", "completion"] = cfg.prompt_style
        timeout = httpx.Timeout(cfg.timeout_s, connect=cfg.connect_timeout_s)
        limits = httpx.Limits(max_connections=cfg.max_connections, max_keepalive_connections=cfg.max_connections)
        self.client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=cfg.api_key,
            timeout=timeout,
            max_retries=0,  # fail fast; the caller shows the error and the user may ask again
            http_client=openai.DefaultAsyncHttpxClient(timeout=timeout, limits=limits),
        )
        # Model discovery and token counting are called from worker threads (prompt building): sync client.
        self._http = httpx.Client(
            timeout=httpx.Timeout(min(cfg.timeout_s, 30.0), connect=cfg.connect_timeout_s),
            headers={"Authorization": f"Bearer {cfg.api_key}"},
        )
        self._info: ServerInfo | None = None
        self._failed_at = -math.inf
        self._tokenize_route: str | None = None  # "vllm", "llamacpp" or "estimate", found on first count

    # --- what the server reports ----------------------------------------------------------------

    def _remember(self, entries: list[dict]) -> ServerInfo:
        ids = [str(e.get("id")) for e in entries if e.get("id")]
        if not ids and not self.cfg.model:
            raise BackendError(f"the server at {self.base_url} lists no models")
        model = self.cfg.model or ids[0]
        entry = next((e for e in entries if e.get("id") == model), {})
        length = entry.get("max_model_len")
        self._info = ServerInfo(ids, model, int(length) if isinstance(length, int) and length > 0 else None)
        return self._info

    def _discover(self) -> ServerInfo | None:
        """The server's models (sync, cached; retried at most every few seconds while it is down)."""
        if self._info is not None or time.monotonic() - self._failed_at < REDISCOVER_S:
            return self._info
        try:
            r = self._http.get(f"{self.base_url}/models", timeout=HEALTH_TIMEOUT_S)
            r.raise_for_status()
            return self._remember(r.json().get("data", []))
        except Exception as exc:
            self._failed_at = time.monotonic()
            log.warning("could not list the models of %s: %s", self.base_url, exc)
            return None

    @property
    def model(self) -> str:
        if self.cfg.model:
            return self.cfg.model
        info = self._discover()
        return info.model if info else ""

    @property
    def context_window(self) -> int:
        info = self._discover()
        return info.max_model_len if info and info.max_model_len else self.cfg.context_window

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
                log.warning("token count from %s failed: %s", self.root, exc)
                return estimate_tokens(messages)
            if count is not None:
                self._tokenize_route = route
                return count
        self._tokenize_route = "estimate"
        return estimate_tokens(messages)

    def _count_with(self, route: str, messages: list[Message]) -> int | None:
        if route == "vllm":
            body: dict[str, Any] = {"model": self.model}
            if self.prompt_style == "chat":
                body.update(messages=messages, add_generation_prompt=True)
            else:
                body.update(prompt=completion_text(messages))
            r = self._http.post(f"{self.root}/tokenize", json=body)
        elif route == "llamacpp" and self.prompt_style == "completion":
            r = self._http.post(f"{self.root}/extras/tokenize/count", json={"input": completion_text(messages)})
        else:
            return None  # llama-cpp-python's server tokenizes raw text only: chat prompts cannot be counted
        if r.status_code in (404, 405):
            return None
        r.raise_for_status()
        data = r.json()
        if isinstance(data.get("max_model_len"), int) and self._info is not None:
            self._info.max_model_len = data["max_model_len"]
        return int(data["count"]) if "count" in data else None

    # --- generation -----------------------------------------------------------------------------

    def _error(self, exc: Exception) -> BackendError:
        o = self._openai
        if isinstance(exc, o.APITimeoutError):
            return BackendError(f"backend timed out at {self.base_url}")
        if isinstance(exc, o.APIConnectionError):
            return BackendError(f"backend unreachable at {self.base_url}: {exc.__cause__ or exc}")
        if isinstance(exc, o.APIStatusError):
            if exc.status_code in (429, 503):
                retry = exc.response.headers.get("retry-after", "")
                return BackendBusy(f"backend busy at {self.base_url}", retry_after=int(retry) if retry.isdigit() else 5)
            return BackendError(f"backend at {self.base_url} answered {exc.status_code}: {exc.message}")
        return BackendError(f"backend error at {self.base_url}: {exc}")

    async def _amodel(self) -> str:
        if self.cfg.model:
            return self.cfg.model
        if self._info is None:
            try:
                page = await self.client.models.list(timeout=HEALTH_TIMEOUT_S)
            except self._openai.APIError as exc:
                raise self._error(exc) from exc
            self._remember([m.model_dump() for m in page.data])
        assert self._info is not None
        return self._info.model

    async def stream(self, messages: list[Message], params: GenParams) -> AsyncIterator[str]:
        model = await self._amodel()
        args: dict[str, Any] = dict(model=model, max_tokens=params.max_tokens, temperature=params.temperature, stream=True)
        if params.stop:
            args["stop"] = params.stop[:4]  # the OpenAI API accepts at most four
        chat = self.prompt_style == "chat"
        try:
            if chat:
                response = await self.client.chat.completions.create(messages=messages, **args)
            else:
                response = await self.client.completions.create(prompt=completion_text(messages), **args)
        except self._openai.APIError as exc:
            raise self._error(exc) from exc
        try:
            async for chunk in response:
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                text = choice.delta.content if chat else choice.text
                if text:
                    yield text
        except self._openai.APIError as exc:
            raise self._error(exc) from exc
        finally:
            await response.close()  # on early close too: the server sees the disconnect and aborts

    async def health(self) -> BackendHealth:
        """GET /v1/models with a short timeout; BackendError when the server cannot be reached."""
        try:
            page = await self.client.models.list(timeout=HEALTH_TIMEOUT_S)
        except self._openai.APIError as exc:
            raise self._error(exc) from exc
        info = self._remember([m.model_dump() for m in page.data])
        if self.cfg.model and self.cfg.model not in info.models:
            return BackendHealth(ok=False, model=info.model, detail=f"model {info.model!r} not served by {self.base_url} (it serves: {', '.join(info.models)})")
        return BackendHealth(ok=True, model=info.model, detail=f"{self.base_url}, {self.prompt_style} prompts")

    async def aclose(self) -> None:
        self._http.close()
        try:
            await self.client.close()
        except RuntimeError:  # its connections belonged to an event loop that is already closed
            pass


@register("openai")
def create_openai(settings: "Settings") -> OpenAIBackend:
    try:
        import httpx  # noqa: F401
        import openai  # noqa: F401
    except ImportError:
        raise BackendError("the openai backend needs the `openai` package: pip install openai") from None
    return OpenAIBackend(settings.openai)
