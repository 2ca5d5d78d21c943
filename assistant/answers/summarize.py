"""Long-document summaries: map-reduce over a document's chunks, sized to the backend's context window.

Map: consecutive chunks are packed into pieces whose prompt fits `context window - summary tokens -
margin`, counted with the backend's own tokenizer (never assumed); the pieces are summarised
concurrently, up to `summary.concurrency` at once, so a batching engine (vLLM, llama.cpp server
slots) runs them together. Reduce: the partial summaries, each labelled with the lines or pages it
covers (`[lines 120-340]`, `[p. 3-5]`), are packed the same way and combined, level after level, until
one prompt holds them all; that prompt gives the overview. The final text is the overview followed by
the labelled parts it was made from, so every statement can be traced back to the document. Prose
whose chunks carry neither line ranges nor pages is labelled by its headings (`[§ Setup – Usage]`).

`summary_events()` streams `progress` {stage, level, done, total}..., then `summary` {...}, then `done`;
a failure is one `error` {message, code} event. A summary is cached per content hash + model + prompt
version (indexes/summaries.py).

A question about one document (document_question.py) reads all of it only when it fits one prompt; "summarise
this" about a longer one is answered there from the passages retrieval finds, which cover part of it. This
map-reduce, asked for by POST /api/documents/{id}/summary, is what reads every chunk of such a document.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, AsyncIterator, Callable

import anyio
from sqlalchemy.engine import Engine

from indexes.summaries import DocumentInfo, Section, document_sections, get_summary, put_summary

from assistant.backends.base import Backend, BackendBusy, GenParams, Message
from assistant.answers.rag import error_event
from assistant.settings import SummarySettings

PROMPT_VERSION = "2"
MAP_INSTRUCTION = (
    "Summarise this part of a document in a few sentences. "
    "Keep the names, numbers, rules and deadlines it states."
)
REDUCE_INSTRUCTION = (
    "These are summaries of consecutive parts of one document, each marked with where it is, like [lines 1-80]. "
    "Write one short summary of the whole document, and keep those marks after the statements they support."
)
COMPLETION_STOP = ["\n\n\n", "\nDocument:"]
BUSY_RETRIES = 30  # a full backend queue is waited out, not reported: the map step fills it on purpose
MIN_PIECE_TOKENS = 32  # a window that leaves less than this for the document cannot summarise it


@dataclass(frozen=True)
class SummaryEvent:
    """An event of a summary's stream: `progress`, `summary`, `done` or `error`, with its data."""

    type: str
    data: dict


class SummaryError(ValueError):
    """The document cannot be summarised with this backend (empty, window too small); says why."""

    def __init__(self, message: str, code: str = "summary_failed") -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Part:
    """Text of the document (map input) or a summary of some of it, with the span it covers."""

    text: str
    line_start: int | None = None
    line_end: int | None = None
    page_start: int | None = None
    page_end: int | None = None
    ordinal: int = 0  # position, for labels of documents without lines, pages or headings
    first_heading: str | None = None  # headings where the span starts and ends (prose without line ranges)
    last_heading: str | None = None

    @property
    def label(self) -> str:
        if self.page_start:
            return f"p. {self.page_start}" + (f"-{self.page_end}" if self.page_end != self.page_start else "")
        if self.line_start:
            return f"lines {self.line_start}-{self.line_end or self.line_start}"
        if self.first_heading is not None and (self.first_heading or self.last_heading):
            first, last = self.first_heading or "opening", self.last_heading or "opening"
            return f"§ {first}" + (f" – {last}" if last != first else "")
        return f"part {self.ordinal + 1}"

    def span(self) -> dict:
        return {"label": self.label, "line_start": self.line_start, "line_end": self.line_end,
                "page_start": self.page_start, "page_end": self.page_end}  # fmt: skip


def merged(parts: list[Part], text: str) -> Part:
    """A part covering all of `parts` (consecutive), carrying `text`."""
    lines = [p for p in parts if p.line_start]
    pages = [p for p in parts if p.page_start]
    return Part(
        text,
        line_start=min(p.line_start for p in lines) if lines else None,
        line_end=max(p.line_end or p.line_start for p in lines) if lines else None,
        page_start=min(p.page_start for p in pages) if pages else None,
        page_end=max(p.page_end or p.page_start for p in pages) if pages else None,
        ordinal=parts[0].ordinal,
        first_heading=parts[0].first_heading,
        last_heading=parts[-1].last_heading,
    )


def section_part(i: int, s: Section, previous: Section | None) -> Part:
    text = s.text.strip() if previous is None else without_overlap(previous.text.strip(), s.text.strip())
    heading = s.heading_path.split(" › ")[-1].strip()
    return Part(text, s.line_start, s.line_end or s.line_start, s.page, s.page, ordinal=i, first_heading=heading,
                last_heading=heading)  # fmt: skip


def without_overlap(previous: str, text: str) -> str:
    """`text` without its opening when that repeats the end of `previous`: consecutive chunks share a
    few trailing sentences (for retrieval), which a summary would otherwise read twice."""
    probe = text[:16]
    if len(probe) < 16:
        return text
    at = previous.find(probe)
    while at != -1:
        if text.startswith(previous[at:]):
            return text[len(previous) - at :].strip()
        at = previous.find(probe, at + 1)
    return text


@dataclass
class RequestTiming:
    """One backend request of a summary: wall-clock (epoch) seconds, so overlap can be shown."""

    stage: str  # map | reduce
    level: int
    index: int
    sent: float
    first_token: float | None = None
    end: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int | None = None


@dataclass
class SummaryResult:
    text: str  # the overview, then the labelled parts
    overview: str
    parts: list[dict]  # [{label, line_start, ..., summary}] that the overview was made from
    pieces: int  # pieces the map step summarised
    levels: int  # reduce levels (0: the document fitted one piece)
    model: str
    cached: bool = False
    requests: list[RequestTiming] = field(default_factory=list)
    seconds: float = 0.0

    def data(self) -> dict:
        out = asdict(self)
        out["requests"] = [asdict(r) for r in self.requests]
        return out


def render(style: str, instruction: str, title: str, body: str) -> list[Message]:
    """The prompt for one map or reduce step; a base model gets one plain completion prompt."""
    if style == "completion":
        return [Message(role="user", content=f"{instruction}\n\nDocument: {title}\n\n{body}\n\nSummary:")]
    return [Message(role="system", content=instruction), Message(role="user", content=f"Document: {title}\n\n{body}")]


def map_body(part: Part) -> str:
    return f"[{part.label}]\n{part.text}"


def reduce_body(parts: list[Part]) -> str:
    return "\n\n".join(f"[{p.label}] {p.text}" for p in parts)


class Planner:
    """Sizes pieces and reduce groups with the backend's own token counts (CPU work: run in a thread)."""

    def __init__(self, backend: Backend, title: str, max_tokens: int, margin: int) -> None:
        self.backend, self.title = backend, title
        self.style = backend.prompt_style
        self.budget = backend.context_window - max_tokens - margin
        self.map_overhead = self.count(MAP_INSTRUCTION, "")
        self.reduce_overhead = self.count(REDUCE_INSTRUCTION, "")
        if self.budget - self.map_overhead < MIN_PIECE_TOKENS:
            raise SummaryError(
                f"the context window ({backend.context_window} tokens) leaves no room for the document after the "
                f"summary ({max_tokens}), the margin ({margin}) and the instructions ({self.map_overhead})",
                code="window_too_small",
            )
        # Two summaries of the longest allowed length (plus their labels) must fit one reduce prompt,
        # or the reduce step could never shrink the list.
        if self.budget - self.reduce_overhead < 2 * (max_tokens + 16):
            raise SummaryError(
                f"the context window ({backend.context_window} tokens) cannot hold two partial summaries of "
                f"{max_tokens} tokens: lower summary.max_tokens or use a larger window",
                code="window_too_small",
            )

    def count(self, instruction: str, body: str) -> int:
        return self.backend.count_tokens(render(self.style, instruction, self.title, body))

    def map_fits(self, parts: list[Part]) -> bool:
        return self.count(MAP_INSTRUCTION, "\n\n".join(map_body(p) for p in parts)) <= self.budget

    def reduce_fits(self, parts: list[Part]) -> bool:
        return self.count(REDUCE_INSTRUCTION, reduce_body(parts)) <= self.budget

    def split_to_fit(self, part: Part) -> list[Part]:
        """A part too long for one prompt, cut in halves (at a line or word break) until each fits."""
        if self.map_fits([part]):
            return [part]
        text = part.text
        mid = len(text) // 2
        cut = text.rfind("\n", 0, mid)
        if cut < len(text) // 4:
            cut = text.rfind(" ", 0, mid)
        if cut < len(text) // 4:
            cut = mid
        if cut <= 0:
            raise SummaryError("a piece of the document does not fit the context window", code="window_too_small")
        halves = [replace(part, text=text[:cut].strip()), replace(part, text=text[cut:].strip())]
        return [p for half in halves if half.text for p in self.split_to_fit(half)]

    def pack(self, parts: list[Part], overhead: int, body: Callable[[Part], str], fits: Callable[[list[Part]], bool]) -> list[list[Part]]:
        """Consecutive parts grouped greedily: each part's own tokens estimate a group's size (one
        count per part), then each group is counted whole and shortened until it really fits."""
        sizes = [max(1, self.count("", body(p)) - self.count("", "")) for p in parts]
        room = self.budget - overhead
        groups: list[list[Part]] = []
        current: list[Part] = []
        used = 0
        for part, size in zip(parts, sizes):
            if current and used + size > room:
                groups.append(current)
                current, used = [], 0
            current.append(part)
            used += size
        if current:
            groups.append(current)
        exact: list[list[Part]] = []
        for group in groups:
            while group:
                take = len(group)
                while take > 1 and not fits(group[:take]):
                    take -= 1
                exact.append(group[:take])
                group = group[take:]
        return exact

    def pieces(self, sections: list[Section]) -> list[Part]:
        kept = [s for s in sections if s.text.strip()]
        parts = [piece for i, s in enumerate(kept) for piece in self.split_to_fit(section_part(i, s, kept[i - 1] if i else None))
                 if piece.text]  # fmt: skip
        groups = self.pack(parts, self.map_overhead, map_body, self.map_fits)
        return [merged(g, "\n\n".join(p.text for p in g)) for g in groups]

    def reduce_groups(self, parts: list[Part]) -> list[list[Part]]:
        return self.pack(parts, self.reduce_overhead, lambda p: f"[{p.label}] {p.text}\n\n", self.reduce_fits)


class Summarizer:
    """One document's summary run: the backend, the settings and the record of every request."""

    def __init__(self, backend: Backend, cfg: SummarySettings, margin: int, progress: Callable[[dict], None] | None = None) -> None:
        self.backend, self.cfg, self.margin = backend, cfg, margin
        self.progress = progress or (lambda _: None)
        self.requests: list[RequestTiming] = []
        self.semaphore = asyncio.Semaphore(cfg.concurrency)
        self.params = GenParams(max_tokens=cfg.max_tokens, temperature=0.0,
                                stop=list(COMPLETION_STOP) if backend.prompt_style == "completion" else [])  # fmt: skip

    async def generate(self, messages: list[Message], stage: str, level: int, index: int) -> str:
        """One request, bounded by the semaphore; a full queue is waited out and tried again."""
        async with self.semaphore:
            prompt_tokens = await anyio.to_thread.run_sync(self.backend.count_tokens, messages)
            for attempt in range(BUSY_RETRIES):
                record = RequestTiming(stage, level, index, sent=time.time(), prompt_tokens=prompt_tokens)
                pieces: list[str] = []
                stream: Any = None
                try:
                    stream = self.backend.stream(messages, self.params)
                    async for piece in stream:
                        if record.first_token is None and piece:
                            record.first_token = time.time()
                        pieces.append(piece)
                except BackendBusy as exc:
                    if pieces or attempt == BUSY_RETRIES - 1:
                        raise
                    await asyncio.sleep(min(max(exc.retry_after, 0.2), 2.0))
                    continue
                finally:
                    close = getattr(stream, "aclose", None)
                    if close is not None:
                        await close()
                record.end = time.time()
                tokens = getattr(stream, "completion_tokens", None)
                record.completion_tokens = tokens if isinstance(tokens, int) else None
                self.requests.append(record)
                return "".join(pieces).strip()
        raise AssertionError("unreachable")  # pragma: no cover

    async def run(self, doc: DocumentInfo, sections: list[Section]) -> SummaryResult:
        started = time.perf_counter()
        title = doc.title or doc.path
        style = self.backend.prompt_style
        if not any(s.text.strip() for s in sections):
            raise SummaryError(f"{doc.path} has no text to summarise", code="empty_document")
        planner = await anyio.to_thread.run_sync(Planner, self.backend, title, self.cfg.max_tokens, self.margin)
        pieces = await anyio.to_thread.run_sync(planner.pieces, sections)

        done = 0
        self.progress({"stage": "map", "level": 0, "done": 0, "total": len(pieces)})

        async def summarise_piece(i: int, piece: Part) -> Part:
            nonlocal done
            text = await self.generate(render(style, MAP_INSTRUCTION, title, map_body(piece)), "map", 0, i)
            done += 1
            self.progress({"stage": "map", "level": 0, "done": done, "total": len(pieces)})
            return merged([piece], text)

        parts = list(await asyncio.gather(*(summarise_piece(i, p) for i, p in enumerate(pieces))))
        if len(parts) == 1:
            only = parts[0]
            return self.result(f"[{only.label}] {only.text}", only.text, parts, len(pieces), 0, started)

        level = 0
        while True:
            level += 1
            groups = await anyio.to_thread.run_sync(planner.reduce_groups, parts)
            final = len(groups) == 1
            if not final and len(groups) == len(parts):
                raise SummaryError("the partial summaries are too long to combine in this context window", code="window_too_small")
            todo = [g for g in groups if len(g) > 1]
            done = 0
            self.progress({"stage": "reduce", "level": level, "done": 0, "total": len(todo)})

            async def combine(i: int, group: list[Part]) -> Part:
                nonlocal done
                if len(group) == 1:
                    return group[0]
                text = await self.generate(render(style, REDUCE_INSTRUCTION, title, reduce_body(group)), "reduce", level, i)
                done += 1
                self.progress({"stage": "reduce", "level": level, "done": done, "total": len(todo)})
                return merged(group, text)

            combined = list(await asyncio.gather(*(combine(i, g) for i, g in enumerate(groups))))
            if final:
                overview = combined[0].text
                text = overview + "\n\n" + "\n".join(f"[{p.label}] {p.text}" for p in parts)
                return self.result(text, overview, parts, len(pieces), level, started)
            parts = combined

    def result(self, text: str, overview: str, parts: list[Part], pieces: int, levels: int, started: float) -> SummaryResult:
        return SummaryResult(
            text=text, overview=overview, parts=[dict(p.span(), summary=p.text) for p in parts], pieces=pieces,
            levels=levels, model=self.backend.model, requests=sorted(self.requests, key=lambda r: r.sent),
            seconds=round(time.perf_counter() - started, 3),
        )


def prompt_version(backend: Backend, cfg: SummarySettings) -> str:
    """What, besides the content and the model, decides the summary: prompts, window, length, style."""
    return f"{PROMPT_VERSION}/ctx{backend.context_window}/out{cfg.max_tokens}/{backend.prompt_style}"


async def summarize_document(
    engine: Engine, doc: DocumentInfo, backend: Backend, cfg: SummarySettings, margin: int, *,
    refresh: bool = False, progress: Callable[[dict], None] | None = None,
) -> SummaryResult:
    """The document's summary: from the cache unless `refresh`, otherwise made and cached."""
    version = prompt_version(backend, cfg)
    if not refresh and doc.sha256:
        hit = await anyio.to_thread.run_sync(get_summary, engine, doc.sha256, backend.model, version)
        if hit is not None:
            return SummaryResult(hit.text, hit.overview, json.loads(hit.parts), hit.pieces, 0, hit.model, cached=True)
    sections = await anyio.to_thread.run_sync(document_sections, engine, doc.id)
    result = await Summarizer(backend, cfg, margin, progress).run(doc, sections)
    if doc.sha256:
        await anyio.to_thread.run_sync(put_summary, engine, doc.sha256, backend.model, version, result.text, result.overview,
                                   result.parts, result.pieces)  # fmt: skip
    return result


def document_dict(doc: DocumentInfo) -> dict:
    return {"id": doc.id, "collection": doc.collection, "path": doc.path, "title": doc.title, "sha256": doc.sha256}


async def summary_events(
    engine: Engine, doc: DocumentInfo, backend: Backend, cfg: SummarySettings, margin: int, *, refresh: bool = False,
) -> AsyncIterator[SummaryEvent]:
    """`progress`..., `summary`, `done` (or one `error`); closing the iterator cancels the requests."""
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    async def run() -> None:
        try:
            result = await summarize_document(engine, doc, backend, cfg, margin, refresh=refresh,
                                              progress=lambda p: queue.put_nowait(("progress", p)))  # fmt: skip
            queue.put_nowait(("result", result))
        except Exception as exc:  # reported as the error event
            queue.put_nowait(("error", exc))

    task = asyncio.create_task(run())
    try:
        while True:
            kind, payload = await queue.get()
            if kind == "progress":
                yield SummaryEvent("progress", payload)
            elif kind == "result":
                yield SummaryEvent("summary", dict(payload.data(), document=document_dict(doc)))
                yield SummaryEvent("done", {"cached": payload.cached, "seconds": payload.seconds})
                return
            else:
                if isinstance(payload, SummaryError):
                    yield SummaryEvent("error", {"message": str(payload), "code": payload.code})
                else:
                    failed = error_event(payload)
                    yield SummaryEvent(failed.type, failed.data)
                return
    finally:
        if not task.done():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
