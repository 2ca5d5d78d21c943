"""backends/capped.py: answers at once capped, and the place in the gate given back however a stream ends
(read to its end, its first piece taken apart as the early send does, left between pieces, cancelled,
dropped unread)."""

from __future__ import annotations

import gc
import inspect

import anyio
import pytest

from assistant.backends.base import BackendBusy, GenParams
from assistant.backends.capped import capped
from assistant.backends.echo import EchoBackend

MESSAGES = [{"role": "user", "content": "where are the laptops kept"}]
PIECES = ["Echo:", " where", " are", " the", " laptops", " kept"]


def gated(limit: int = 1):
    return capped(EchoBackend(), limit)


async def test_a_stream_read_to_its_end_gives_its_place_back():
    backend = gated(limit=1)
    stream = backend.stream(MESSAGES, GenParams())
    assert backend.answer_gate.held == 1
    with pytest.raises(BackendBusy, match="1 answers at once"):
        backend.stream(MESSAGES, GenParams())
    assert backend.answer_gate.held == 1, "a refused stream takes no place"
    assert [piece async for piece in stream] == PIECES
    assert backend.answer_gate.held == 0
    assert [piece async for piece in backend.stream(MESSAGES, GenParams())] == PIECES


async def test_the_first_piece_taken_alone_then_the_rest_read_in_one_loop():
    backend = gated()
    stream = backend.stream(MESSAGES, GenParams())
    first = await stream.__anext__()  # as the early send awaits it while the route replies
    rest = [piece async for piece in stream]
    assert [first, *rest] == PIECES
    assert inspect.isasyncgen(aiter(stream)) and aiter(stream) is aiter(stream), \
        "one generator, resumed at each piece: no call through the gate per token"
    assert backend.answer_gate.held == 0


async def test_a_reader_left_between_pieces_is_closed_with_the_stream():
    backend = gated()
    stream = backend.stream(MESSAGES, GenParams())
    async for piece in stream:
        if piece == " are":
            break
    reader = aiter(stream)
    assert backend.answer_gate.held == 1, "left, not yet closed: the answer may still be read"
    await stream.aclose()
    assert backend.answer_gate.held == 0
    assert reader.ag_frame is None, "the generator left at a piece is finished by the close"
    await stream.aclose()  # twice is harmless
    assert backend.answer_gate.held == 0


async def test_a_stream_cancelled_while_it_waits_for_a_piece_gives_its_place_back():
    backend = gated()
    stream = backend.stream(MESSAGES, GenParams())
    got = []
    with anyio.CancelScope() as scope:
        async for piece in stream:
            got.append(piece)
            scope.cancel()  # delivered while the next piece is awaited (the backend's checkpoint)
    assert got == PIECES[:1]
    assert backend.answer_gate.held == 0


async def test_a_stream_dropped_unread_gives_its_place_back():
    backend = gated()
    stream = backend.stream(MESSAGES, GenParams())
    assert backend.answer_gate.held == 1
    del stream
    gc.collect()
    assert backend.answer_gate.held == 0


async def test_a_stream_left_while_read_and_dropped_gives_its_place_back_at_once():
    backend = gated()
    stream = backend.stream(MESSAGES, GenParams())
    async for _ in stream:
        break
    del stream  # no collector run: its reader holds the place, not the stream, so nothing keeps it alive
    assert backend.answer_gate.held == 0


async def test_the_backend_itself_is_capped_and_capped_again_gets_a_new_gate_not_a_second_one():
    echo = EchoBackend(context_window=1234)
    backend = capped(echo, 1)
    assert backend is echo and backend.context_window == 1234, "no wrapper between the path and the backend"
    again = capped(echo, 2)
    first, second = again.stream(MESSAGES, GenParams()), again.stream(MESSAGES, GenParams())
    assert again.answer_gate.limit == 2 and again.answer_gate.held == 2, "one gate, the new one"
    with pytest.raises(BackendBusy):
        again.stream(MESSAGES, GenParams())
    await first.aclose()
    await second.aclose()
    assert again.answer_gate.held == 0


def test_no_backend_stays_none():
    assert capped(None, 4) is None
