"""A backend request on its way before anything else is done, and a prompt counted beside its answer.

`Started` opens the request at once: the engine begins while the server writes the `retrieved` event
(and counts the prompt). An exact count over a server (llama-server's /apply-template and /tokenize)
is a round trip and a tokenization, 5-10 ms on the path to every first token; when the counts so far
say that every source fits with room to spare (prompts.early_prompt), `counted_beside` runs the count
meanwhile and passes the answer on only once the count confirms the fit. A prompt the count finds too
long is taken back (the request is aborted, and the engine stops at the disconnect) and the prompt
built to fit is sent instead, so no answer comes from a prompt that did not fit.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

import anyio

from assistant.answers.prompts import Prompt

END = object()  # the stream ended before its first piece


async def _first_piece(stream: Any) -> Any:
    try:
        return await stream.__anext__()
    except StopAsyncIteration:
        return END


class Started:
    """A backend stream whose request has been sent; its first piece is being awaited."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self._first: asyncio.Future | None = asyncio.ensure_future(_first_piece(stream))

    @property
    def completion_tokens(self) -> int | None:
        return getattr(self.stream, "completion_tokens", None)

    def __aiter__(self) -> "Started":
        return self

    async def first(self) -> Any:
        """The first piece, or END when the stream ended without one. The pieces after it are `stream`'s own:
        a reader may take them there, not through this wrapper."""
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            return END

    async def __anext__(self) -> Any:
        if self._first is None:
            return await self.stream.__anext__()
        first, self._first = self._first, None
        piece = await first
        if piece is END:
            raise StopAsyncIteration
        return piece

    async def aclose(self) -> None:
        """Abort the request, also while its first piece is awaited."""
        if self._first is not None:
            first, self._first = self._first, None
            first.cancel()
            await asyncio.wait({first})
            if not first.cancelled():
                first.exception()  # retrieved: a failure of an abandoned request is no one's to report
        close = getattr(self.stream, "aclose", None)
        if close is not None:
            await close()


async def counted_beside(
    sent: Started, prompt: Prompt, count: Callable[[list], int], rebuild: Callable[[], Prompt], resend: Callable[[Prompt], Any]
) -> tuple[Prompt, Any]:
    """The prompt counted while the engine works on it, and the stream to read: `sent` when it fits its
    budget; else `sent` aborted, and what `resend` opens for the prompt `rebuild` makes in a worker thread."""
    try:
        exact = await anyio.to_thread.run_sync(count, prompt.messages)
    except BaseException:
        await sent.aclose()
        raise
    if exact <= prompt.budget:
        prompt.prompt_tokens, prompt.counted = exact, True
        return prompt, sent
    await sent.aclose()
    fitted = await anyio.to_thread.run_sync(rebuild)
    return fitted, resend(fitted)
