"""Document-diverse top-k: no document takes more than `per_document` places, and the chunks of one
document that follow each other are merged into one place.

Without it one long page that matches a question everywhere fills the sources (three sections of the
same `.rst` file ahead of the source file the question was about), and the model reads the same
document three times. Pure functions over chunk ids and their `ChunkMeta`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from indexes.retrieval.code_query import ChunkMeta


@dataclass
class Place:
    """One place in the results: the best chunk and the adjacent chunks of its document merged with it."""

    best: int
    document_id: int
    ordinals: dict[int, int] = field(default_factory=dict)  # chunk id -> ordinal

    @property
    def chunk_ids(self) -> list[int]:
        """The chunks in document order."""
        return sorted(self.ordinals, key=self.ordinals.__getitem__)

    def adjacent(self, ordinal: int) -> bool:
        return ordinal == min(self.ordinals.values()) - 1 or ordinal == max(self.ordinals.values()) + 1


def diverse_places(order: list[int], meta: dict[int, ChunkMeta], k: int, *, per_document: int = 0,
                   merge_adjacent: bool = True, max_merged: int = 3) -> list[Place]:
    """The first k places of a ranking: at most `per_document` places a document (0 = no cap), a
    chunk next to one already placed merged into that place (it takes no place of its own), up to
    `max_merged` chunks a place."""
    places: list[Place] = []
    by_document: dict[int, list[Place]] = {}
    for cid in order:
        m = meta.get(cid)
        if m is None:
            continue
        mine = by_document.setdefault(m.document_id, [])
        if merge_adjacent:
            near = next((p for p in mine if len(p.ordinals) < max_merged and p.adjacent(m.ordinal)), None)
            if near is not None:
                near.ordinals[cid] = m.ordinal
                continue
        if len(places) >= k:
            continue  # full: only merges into places already taken can follow
        if per_document and len(mine) >= per_document:
            continue
        place = Place(best=cid, document_id=m.document_id, ordinals={cid: m.ordinal})
        mine.append(place)
        places.append(place)
    return places


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
