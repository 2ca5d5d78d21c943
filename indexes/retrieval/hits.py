"""A retrieved chunk as the answer and the page see it: what both retrievers found (`Candidates`, with each
candidate's `ChunkMeta`), each hit with its scores, ranks and a snippet that starts past the repeated
headings, and a place's adjacent chunks (`Place`) merged into one hit, their overlap written once."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from indexes.location import Located, Location
from indexes.store import ChunkRecord

WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class Hit(Located):
    """One retrieved chunk with everything needed to show and cite it."""

    chunk_id: int
    document_id: int
    collection: str
    path: str
    title: str
    kind: str
    text: str
    snippet: str
    location: Location
    score: float
    dense_rank: int | None = None
    lexical_rank: int | None = None
    dense_score: float | None = None
    lexical_score: float | None = None
    chunk_ids: list[int] = field(default_factory=list)  # the chunks shown as this hit (adjacent ones merged)

    def to_dict(self) -> dict:
        # Scalars, a frozen Location spelled out flat and one list of ints: a shallow copy and a copy of the
        # list are a full one (asdict deep-copies field by field: a few hundred microseconds per answer's
        # sources, under the loop's lock).
        return self.flat_dict() | {"chunk_ids": list(self.chunk_ids)}


@dataclass
class Candidates:
    """What both retrievers found for one query, each candidate scored on both sides."""

    query: str
    dense: list[int] = field(default_factory=list)  # ids in dense rank order
    lexical: list[int] = field(default_factory=list)  # ids in BM25 rank order
    dense_scores: dict[int, float] = field(default_factory=dict)  # cosine, every candidate
    lexical_scores: dict[int, float] = field(default_factory=dict)  # BM25 (0 = no term matched), every candidate
    match: str = ""  # the FTS5 expression that was run
    meta: dict[int, ChunkMeta] = field(default_factory=dict)  # when asked: each candidate's document, path, ...


HEADING_SEP = " › "  # between the headings of a chunk's heading path (ingest/split.py writes it)


def without_headings(text: str, heading_path: str) -> str:
    """The text without the paragraphs that only repeat a heading of its path: a chunk starts with its
    section's headings, each a paragraph of its own, and a snippet should start at what the section says
    (the card shows the heading apart). The text itself when nothing else would be left."""
    titles = {" ".join(h.split()) for h in heading_path.split(HEADING_SEP) if h.strip()}
    if not titles:
        return text
    kept = [p for p in text.split("\n\n") if " ".join(p.split()) not in titles]
    return "\n\n".join(kept) if any(p.strip() for p in kept) else text


def snippet_of(text: str, query: str, width: int = 280) -> str:
    """A window of text around the first query word found, for showing a source at a glance."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    lower = flat.lower()
    positions = [lower.find(w) for w in WORD.findall(query.lower()) if len(w) > 2]
    positions = [p for p in positions if p >= 0]
    start = max(0, min(positions) - width // 4) if positions else 0
    start = flat.rfind(" ", 0, start) + 1 if start else 0
    end = min(len(flat), start + width)
    return ("…" if start else "") + flat[start:end].strip() + ("…" if end < len(flat) else "")


def place_hits(cands: Candidates, places: list[Place], records: dict[int, ChunkRecord],
               scores: dict[int, float]) -> list[Hit]:
    """One hit per place: its best chunk's scores and ranks, the text of its chunks merged."""
    out: list[Hit] = []
    places = [p for p in places if p.best in records]  # a chunk deleted since it was found is left out
    kept = [[cid for cid in p.chunk_ids if cid in records] for p in places]
    # A merged place keeps its best chunk's snippet: the card shows that chunk's headings.
    for hit, ids in zip(hits_in_order(cands, [p.best for p in places], records, scores), kept):
        hit.chunk_ids = ids
        if len(ids) > 1:
            parts = [records[cid] for cid in ids]
            hit.text = merge_texts([r.text for r in parts])
            starts = [r.line_start for r in parts if r.line_start is not None]
            ends = [r.line_end for r in parts if r.line_end is not None]
            if starts and ends:
                hit.location = hit.location.with_lines(min(starts), max(ends))
        out.append(hit)
    return out


def hits_in_order(cands: Candidates, order: list[int], records: dict[int, ChunkRecord], scores: dict[int, float]) -> list[Hit]:
    """Hits in this order."""
    dense_rank = {cid: r for r, cid in enumerate(cands.dense, start=1)}
    lexical_rank = {cid: r for r, cid in enumerate(cands.lexical, start=1)}
    return [
        hit_of(records[cid], cands, scores[cid], dense_rank.get(cid), lexical_rank.get(cid))
        for cid in order
        if cid in records
    ]


def hit_of(rec: ChunkRecord, cands: Candidates, score: float, dr: int | None, lr: int | None) -> Hit:
    ds, ls = cands.dense_scores.get(rec.chunk_id), cands.lexical_scores.get(rec.chunk_id)
    return Hit(
        chunk_ids=[rec.chunk_id],
        chunk_id=rec.chunk_id,
        document_id=rec.document_id,
        collection=rec.collection,
        path=rec.path,
        title=rec.title or rec.path.rsplit("/", 1)[-1],
        kind=rec.kind,
        text=rec.text,
        snippet=snippet_of(without_headings(rec.text, rec.location.heading_path), cands.query),
        location=rec.location,
        score=round(float(score), 6),
        dense_rank=dr,
        lexical_rank=lr,
        dense_score=None if ds is None else round(ds, 6),
        lexical_score=None if ls is None else round(ls, 6),
    )


# Whether a chunk (`c`, of document `d`) is cited by its lines: code and plain text; Markdown, reST and HTML
# chunks have lines too, but are prose, cited by their headings.
LINE_CITED = "c.line_start IS NOT NULL AND d.kind NOT IN ('md', 'rst', 'html')"


@dataclass(frozen=True)
class ChunkMeta:
    """What a prior or the diversity pass needs of a candidate, read in one query."""

    document_id: int
    ordinal: int
    path: str
    symbol: str
    line_cited: bool  # the ingester cites it by line numbers (code, plain text), not by heading or page
    sheet: int | None = None  # a workbook's sheet: chunks of two sheets are never one place


@dataclass
class Place:
    """One place in the results: the best chunk and the adjacent chunks of its document merged with it."""

    best: int
    document_id: int
    ordinals: dict[int, int] = field(default_factory=dict)  # chunk id -> ordinal
    sheet: int | None = None  # a workbook's sheet, which the place does not leave

    @property
    def chunk_ids(self) -> list[int]:
        """The chunks in document order."""
        return sorted(self.ordinals, key=self.ordinals.__getitem__)

    def adjacent(self, ordinal: int, sheet: int | None = None) -> bool:
        """Whether a chunk at `ordinal` (of `sheet`) continues this place at either end."""
        if sheet != self.sheet:
            return False
        return ordinal == min(self.ordinals.values()) - 1 or ordinal == max(self.ordinals.values()) + 1


@dataclass
class MergedPart:
    """Where one text lies in a merged text: `merged[start:end]` is its own text from `skip` on. The
    `skip` characters before are either shared with the text before it (`shared`: they are
    `merged[start - skip:start]`) or leading whitespace that was dropped."""

    start: int
    end: int
    skip: int
    shared: bool


def merge_parts(texts: list[str]) -> tuple[str, list[MergedPart]]:
    """Consecutive chunk texts as one, the overlap between neighbours (a shared tail/head) written once,
    and where each text's part of it lies. Neighbours that share nothing are joined by one line break,
    the whitespace between them dropped."""
    out = texts[0] if texts else ""
    parts = [MergedPart(0, len(out), 0, False)] if texts else []
    for text in texts[1:]:
        overlap = _overlap(out, text)
        if overlap:
            parts.append(MergedPart(len(out), len(out) + len(text) - overlap, overlap, True))
            out += text[overlap:]
            continue
        out = out.rstrip()
        for p in parts:
            p.end = min(p.end, len(out))
            p.start = min(p.start, p.end)
        body = text.lstrip()
        out += "\n"
        parts.append(MergedPart(len(out), len(out) + len(body), len(text) - len(body), False))
        out += body
    return out, parts


def merge_texts(texts: list[str]) -> str:
    """Consecutive chunk texts as one, the overlap between neighbours (a shared tail/head) written once."""
    return merge_parts(texts)[0]


def _overlap(left: str, right: str, longest: int = 4000, shortest: int = 20) -> int:
    """Length of the longest suffix of left that is a prefix of right (at least `shortest` chars), or 0."""
    if len(left) < shortest or len(right) < shortest:
        return 0
    tail = left[-longest:]
    head = right[:shortest]
    start = tail.find(head)
    while start != -1:
        n = len(tail) - start
        if n <= len(right) and right.startswith(tail[start:]):
            return n
        start = tail.find(head, start + 1)
    return 0
