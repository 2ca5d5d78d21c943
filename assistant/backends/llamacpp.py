"""The in-process llama.cpp backend (llama-cpp-python): a GGUF model on this machine, one request at a time.

Prompts are rendered and tokenized here, and the very tokens counted are the tokens sent, so
`count_tokens` is exact. Models whose GGUF carries no chat template (the packaged Gemma-3-270M is a
base model) get plain completion prompts; the packaged default, Qwen2.5-Coder-1.5B-Instruct, brings its
own template. Generation runs in a worker thread that pushes text pieces to the event loop; closing the
stream stops it at the next token. Requests beyond the one running wait in a bounded queue; when that
is full, `stream()` raises BackendBusy at once.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import threading
import time
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from assistant.backends.base import (
    BackendError,
    BackendHealth,
    GenParams,
    Message,
    PromptProgress,
    completion_text,
)
from assistant.backends.llamacpp_aside import Asides
from assistant.backends.packaged_models import ensure_joined, packaged_model
from assistant.backends.repetition import LineRepeatGuard
from assistant.backends.slot import Slot, Ticket

if TYPE_CHECKING:
    from assistant.settings import LlamaCppSettings, Settings

log = logging.getLogger(__name__)
_END = object()
# The prompt's cap on a CPU, where every prompt token is read before the first word: the smallest budget
# whose prompts hold as many of the expected facts of the handbook questions' tune half as the window's
# (the report half: as many too), about 40 % fewer tokens than the window's at the median
# (`assistant bench budgets`, docs/benchmarks.md).
CPU_PROMPT_TOKENS = 1024


def packaged_model_path(name: str | None = None, cache_dir: Path | None = None) -> Path:
    """A packaged GGUF (the default one when `name` is None), joined from its part packages once."""
    return ensure_joined(packaged_model(name), cache_dir)


def named_formatter(name: str) -> Any:
    """The text formatter behind a llama-cpp-python chat format name (e.g. "chatml", "gemma")."""
    from llama_cpp import llama_chat_format

    try:
        handler = llama_chat_format.get_chat_completion_handler(name)
    except Exception as exc:
        raise BackendError(f"unknown llama.cpp chat format {name!r}: {exc}") from None
    formatter = inspect.getclosurevars(handler).nonlocals.get("chat_formatter")
    if formatter is None:
        raise BackendError(f"llama.cpp chat format {name!r} is not a plain text template; its prompts cannot be counted")
    return formatter


class LlamaCppBackend:
    name = "llamacpp"

    def __init__(
        self, llm: Any, *, model: str, chat_format: str | None = None, max_queue: int = 8, seed: int = 0,
        repeat_penalty: float = 1.0, max_line_repeats: int = 0, max_tokens: int | None = None,
        max_prompt_tokens: int | None = None, n_batch: int | None = None,
    ) -> None:
        self.llm = llm
        self.model = model
        self.repeat_penalty = repeat_penalty
        self.max_line_repeats = max_line_repeats  # 0 = no line guard
        self.max_tokens = max_tokens  # a cap below each request's own, or None
        self.max_prompt_tokens = max_prompt_tokens  # the prompt's cap below the window's (prompts.prompt_budget), or None
        self.n_batch = n_batch or getattr(llm, "n_batch", 512)  # prompt tokens evaluated between progress reports
        # llama.cpp rounds the context up to a multiple of 256 and reports that, while llama-cpp-python keeps
        # the tokens in an array of the size asked for: past that, evaluation fails. The smaller one holds.
        self.context_window: int = min(llm.n_ctx(), len(llm.input_ids))
        self.seed = seed
        self._slot = Slot(max_queue)
        self._closed = False
        self._running: _Generation | None = None
        self.asides = Asides()
        self._formatter = self._choose_formatter(chat_format)
        self.prompt_style: Literal["chat", "completion"] = "chat" if self._formatter else "completion"

    def _choose_formatter(self, chat_format: str | None) -> Any:
        if chat_format:
            return named_formatter(chat_format)
        template = self.llm.metadata.get("tokenizer.chat_template")
        if not template:
            return None  # a base model: completion prompts
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        model = self.llm._model
        eos, bos = self.llm.token_eos(), self.llm.token_bos()
        return Jinja2ChatFormatter(
            template=template,
            eos_token=model.token_get_text(eos) if eos != -1 else "",
            bos_token=model.token_get_text(bos) if bos != -1 else "",
            stop_token_ids=[eos],
        )

    def render(self, messages: list[Message]) -> tuple[list[int], list[str], Any]:
        """The prompt tokens exactly as they will be evaluated, the template's stop strings and criteria."""
        if self._formatter is None:
            return self.llm.tokenize(completion_text(messages).encode("utf-8"), add_bos=True, special=True), [], None
        result = self._formatter(messages=messages)
        tokens = self.llm.tokenize(result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True)
        stop = [] if result.stop is None else [result.stop] if isinstance(result.stop, str) else list(result.stop)
        return tokens, stop, result.stopping_criteria

    def count_tokens(self, messages: list[Message]) -> int:
        return len(self.render(messages)[0])

    def likely_tokens(self, messages: list[Message]) -> int | None:
        return None  # counted in this process, and one answer runs at a time anyway

    @property
    def queued(self) -> int:
        """Requests admitted: the running one and those waiting."""
        return self._slot.admitted

    def stream(self, messages: list[Message], params: GenParams) -> "_Generation":
        """Take a place in the queue now (BackendBusy when full); generation starts when iterated."""
        if self._closed:
            raise BackendError("the llama.cpp backend is closed")
        tokens, stop, criteria = self.render(messages)
        if len(tokens) >= self.context_window:
            raise BackendError(f"the prompt has {len(tokens)} tokens; the context window is {self.context_window}")
        return _Generation(self, self._slot.admit(), tokens, params, stop, criteria)

    async def health(self) -> BackendHealth:
        if self._closed:
            return BackendHealth(ok=False, detail="closed", model=self.model)
        return BackendHealth(
            ok=True,
            model=self.model,
            detail=f"llama.cpp in-process, {self.prompt_style} prompts, n_ctx={self.context_window}, "
            f"{max(0, self.queued - 1)} waiting",
        )

    async def aclose(self) -> None:
        """Stop the running generation, wait for its thread, and free the model."""
        self._closed = True
        running = self._running
        if running is not None:
            running.stop_event.set()
            if running.thread is not None:
                await asyncio.get_running_loop().run_in_executor(None, running.thread.join, 30)
        close = getattr(self.llm, "close", None)
        if close is not None:
            close()


class _Generation:
    """An async iterator of text pieces for one request; `aclose()` aborts it."""

    def __init__(self, backend: LlamaCppBackend, ticket: Ticket, tokens: list[int], params: GenParams, stop: list[str], criteria: Any) -> None:
        self.backend = backend
        self.ticket = ticket
        self.prompt_tokens = len(tokens)
        self.completion_tokens = 0
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None
        self._tokens = tokens
        self._params = params
        self._stop = list(dict.fromkeys([*params.stop, *stop]))
        self._criteria = criteria
        self._queue: asyncio.Queue | None = None
        self._finished = False

    def __aiter__(self) -> "_Generation":
        return self

    async def __anext__(self) -> str | PromptProgress:
        if self._finished:
            raise StopAsyncIteration
        if self._queue is None:
            await self._start()
        assert self._queue is not None
        item = await self._queue.get()
        if item is _END:
            self._finished = True
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            self._finished = True
            raise BackendError(f"llama.cpp generation failed: {item}") from item
        return item

    async def _start(self) -> None:
        try:
            await self.ticket.acquire()  # waits for the running request to finish
        except BaseException:
            self._finished = True
            raise
        loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        self.backend._running = self
        self.thread = threading.Thread(target=self._run, args=(loop,), name="llamacpp-generate", daemon=True)
        self.thread.start()

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        from llama_cpp import StoppingCriteriaList

        started = time.monotonic()
        p = self._params
        # Checked after every sampled token, even while text is held back to match a stop string.
        criteria = StoppingCriteriaList([lambda ids, logits: self.stop_event.is_set()])
        if self._criteria is not None:
            criteria.extend(self._criteria)
        guard = LineRepeatGuard(self.backend.max_line_repeats)
        try:
            with self.backend.asides.taking_turns(self.backend.llm) if p.aside else nullcontext():
                self._generate(loop, criteria, guard)
        except Exception as exc:  # reported to the reader as a BackendError
            log.exception("llama.cpp generation failed")
            self._put(loop, exc)
        finally:
            if self.backend._running is self:
                self.backend._running = None
            self.backend._slot.record_duration(time.monotonic() - started)
            self.ticket.release()  # only now may the next request use the model
            self._put(loop, _END)

    def _generate(self, loop: asyncio.AbstractEventLoop, criteria: Any, guard: LineRepeatGuard) -> None:
        p = self._params
        if p.progress:
            self._read_prompt(loop)
            if self.stop_event.is_set():  # stopped while reading: the rest of the prompt is not read either
                return
        pieces = self.backend.llm.create_completion(
            self._tokens,
            # never past the window (llama-cpp-python would clamp to the padded one, past its own array)
            max_tokens=min(p.max_tokens, self.backend.max_tokens or p.max_tokens,
                           self.backend.context_window - len(self._tokens)),
            temperature=p.temperature,
            stop=self._stop or None,
            repeat_penalty=self.backend.repeat_penalty,
            stopping_criteria=criteria,
            seed=self.backend.seed,
            stream=True,
        )
        try:
            for chunk in pieces:
                if self.stop_event.is_set():
                    break
                choice = chunk["choices"][0]
                if choice["finish_reason"] is None:
                    self.completion_tokens += 1  # one streamed chunk per generated token
                if choice["text"] and (shown := guard.feed(choice["text"])):
                    self._put(loop, shown)
                if guard.stopped:  # the answer began to loop on a line: end it there
                    break
        finally:
            pieces.close()  # now, while this request has the model, not whenever it is collected
        if rest := guard.finish():
            self._put(loop, rest)

    def _read_prompt(self, loop: asyncio.AbstractEventLoop) -> None:
        """The prompt evaluated here `n_batch` tokens at a time, its progress reported between batches.

        What the model holds from the last prompt is kept as far as both agree (the stable prefix of every
        question, a conversation's earlier turns). The last token is left out: create_completion keeps the
        longest prefix of the tokens the model holds (llama-cpp-python's `generate`), so it then evaluates
        that one token alone, for the logits it samples from, and nothing is read twice."""
        llm = self.backend.llm
        tokens, total = self._tokens, len(self._tokens)
        kept = llm.longest_token_prefix(llm._input_ids, tokens[:-1])
        if kept < llm.n_tokens and not llm._ctx.kv_cache_seq_rm(-1, kept, -1):
            llm.reset()  # this model's cache cannot be cut: read it all
            kept = 0
        llm.n_tokens = kept
        self._put(loop, PromptProgress(kept, total, kept))
        step = max(1, self.backend.n_batch)
        for start in range(kept, total - 1, step):
            if self.stop_event.is_set():
                return
            end = min(start + step, total - 1)
            llm.eval(tokens[start:end])
            # the one token left is read with the first one generated: the prompt is then read
            self._put(loop, PromptProgress(total if end == total - 1 else end, total, kept))

    def _put(self, loop: asyncio.AbstractEventLoop, item: object) -> None:
        if self._queue is None:
            return
        try:
            loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the reader's loop is gone; nobody is listening
            self.stop_event.set()

    async def aclose(self) -> None:
        """Stop at the next token (the worker thread then frees the model), or leave the queue."""
        self._finished = True
        self.stop_event.set()
        if self.thread is None:
            self.ticket.release()


def gpu_layers(setting: int | None) -> int:
    """The layers to offload: as set, else all of them (-1) when this llama.cpp build can offload to a GPU."""
    if setting is not None:
        return setting
    from llama_cpp import llama_supports_gpu_offload

    return -1 if llama_supports_gpu_offload() else 0


def prompt_cap(setting: int | None, offloaded_layers: int) -> int | None:
    """The prompt's cap: as set (0 = none), else CPU_PROMPT_TOKENS when the model runs on the CPU alone."""
    if setting is not None:
        return setting or None
    return CPU_PROMPT_TOKENS if offloaded_layers == 0 else None


def create_llamacpp(settings: "Settings") -> LlamaCppBackend:
    try:
        from llama_cpp import Llama
    except ImportError:
        raise BackendError("the llamacpp backend needs llama-cpp-python: pip install llama-cpp-python") from None
    cfg: LlamaCppSettings = settings.llamacpp
    packaged = None if cfg.model_path else packaged_model(cfg.packaged_model)
    path = Path(cfg.model_path).expanduser() if cfg.model_path else ensure_joined(packaged)
    if not path.is_file():
        raise BackendError(f"llama.cpp model file not found: {path}")
    threads = cfg.n_threads or os.cpu_count() or 1
    try:
        llm = Llama(
            model_path=str(path),
            n_ctx=cfg.n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            n_gpu_layers=gpu_layers(cfg.n_gpu_layers),
            main_gpu=cfg.main_gpu,
            tensor_split=cfg.tensor_split,
            flash_attn=cfg.flash_attn,
            n_batch=cfg.n_batch,
            seed=cfg.seed,
            chat_format=cfg.chat_format,
            verbose=False,
        )
    except Exception as exc:
        raise BackendError(f"could not load the llama.cpp model {path}: {exc}") from exc
    name = path.name.removesuffix(".gguf")
    return LlamaCppBackend(
        llm, model=name, chat_format=cfg.chat_format, max_queue=cfg.max_queue, seed=cfg.seed,
        repeat_penalty=cfg.repeat_penalty, max_line_repeats=cfg.max_line_repeats,
        max_tokens=cfg.max_tokens or (packaged.max_tokens if packaged else None),
        max_prompt_tokens=prompt_cap(cfg.max_prompt_tokens, gpu_layers(cfg.n_gpu_layers)), n_batch=cfg.n_batch,
    )
