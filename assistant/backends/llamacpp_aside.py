"""What the in-process llama.cpp context holds, put aside for a short request and put back after it.

The context holds one prompt: the last answer's, whose start (the instructions and the worked example,
the same bytes every time) the next answer reuses instead of reading again. A short request beside the
answers, such as a follow-up's rewrite, would replace it, and the follow-up's answer would then read
its whole prompt. So the answers' cache is copied out before such a request and back after it, and the
request finds what the last one of its kind left (a rewrite's instructions and examples are the same
bytes every time too). A copy costs milliseconds (6 MB, about 10 ms, for 217 tokens of the packaged
model), against seconds of prompt reading on a CPU.
"""

from __future__ import annotations

import ctypes
import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

log = logging.getLogger(__name__)
SEQUENCE = 0  # llama-cpp-python keeps every prompt in sequence 0


@dataclass
class Held:
    """A copy of the context's cache and of the tokens it stands for."""

    data: Any  # a ctypes byte array
    size: int
    tokens: Any  # the numpy array of the token ids held


def put_aside(llm: Any) -> Held | None:
    """A copy of what llm holds now, or None when it holds nothing (or the copy failed)."""
    import llama_cpp

    held = llm.n_tokens
    if held == 0:
        return None
    try:
        ctx = llm._ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, SEQUENCE)
        data = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(ctx, data, size, SEQUENCE)
    except Exception:
        log.exception("could not copy the llama.cpp cache; its prompt will be read again")
        return None
    if not written:
        log.warning("could not copy the llama.cpp cache; its prompt will be read again")
        return None
    return Held(data, written, llm.input_ids[:held].copy())


def put_back(llm: Any, held: Held) -> bool:
    """llm holds again what `held` copied (True), else nothing (False: the next prompt is read whole).
    Never raises: it runs before the model is handed to the next request."""
    import llama_cpp

    try:
        llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        if llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, held.data, held.size, SEQUENCE) == held.size:
            n = len(held.tokens)
            llm.input_ids[:n] = held.tokens
            llm.n_tokens = n
            return True
        log.warning("could not restore the llama.cpp cache; the next prompt is read whole")
    except Exception:
        log.exception("could not restore the llama.cpp cache; the next prompt is read whole")
    llm.reset()
    llm._ctx.kv_cache_seq_rm(-1, 0, -1)
    return False


class Asides:
    """The requests put aside, taking turns with the answers in one context."""

    def __init__(self) -> None:
        self.last: Held | None = None  # what the last request put aside left

    @contextmanager
    def taking_turns(self, llm: Any) -> Iterator[None]:
        """Inside: llm holds what the last request put aside left. After: what it held before."""
        answers = put_aside(llm)
        if self.last is not None:
            put_back(llm, self.last)
        try:
            yield
        finally:
            self.last = put_aside(llm)
            if answers is not None:
                put_back(llm, answers)
