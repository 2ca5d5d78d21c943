"""Hybrid retrieval: dense (FAISS) and lexical (FTS5 BM25) candidates fused into ranked hits."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from indexes.embed import Embedder
from indexes.store import ChunkRecord, Store, StoreError

WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class Hit:
    """One retrieved chunk with everything needed to show and cite it."""

    chunk_id: int
    document_id: int
    collection: str
    path: str
    title: str
    kind: str
    text: str
    snippet: str
    heading_path: str
    anchor: str
    page: int | None
    line_start: int | None
    line_end: int | None
    symbol: str
    score: float
    dense_rank: int | None = None
    lexical_rank: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def fts_query(query: str) -> str:
    """A free-text question as an FTS5 expression: every word quoted, any word may match (OR)."""
    words = [w for w in WORD.findall(query.lower()) if len(w) > 1 or not w.isascii()]
    seen: list[str] = []
    for w in words:
        if w not in seen:
            seen.append(w)
    return " OR ".join(f'"{w}"' for w in seen[:64])


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


def rrf(rankings: list[list[int]], k: float) -> dict[int, float]:
    """Reciprocal-rank fusion: sum of 1 / (k + rank) over the rankings an id appears in."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, cid in enumerate(ranking, start=1):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (k + rank)
    return scores


class Retriever:
    """`search(query, collections, k)`: dense + BM25 candidates, reciprocal-rank fusion, top k hits."""

    def __init__(self, store: Store, embedder: Embedder, *, candidates: int = 50, rrf_k: float = 60.0) -> None:
        self.store = store
        self.embedder = embedder
        self.candidates = candidates
        self.rrf_k = rrf_k

    def search(self, query: str, collections: str | list[str], k: int = 5) -> list[Hit]:
        names = [collections] if isinstance(collections, str) else list(collections)
        colls = []
        for name in names:
            coll = self.store.get_collection(name)
            if coll is None:
                raise StoreError(f"unknown collection: {name!r}")
            colls.append(coll)
        query = " ".join(query.split())
        if not query or k <= 0:
            return []
        n = max(self.candidates, k)

        dense: list[tuple[int, float]] = []
        if any(c.dim for c in colls):
            qvec = self.embedder.embed_query(query)
            for coll in colls:
                if coll.dim:
                    dense.extend(self.store.vector_index(coll).search(qvec, n))
            dense.sort(key=lambda t: -t[1])
            dense = dense[:n]
        lexical = self.store.lexical_search([c.id for c in colls], fts_query(query), n)

        dense_ids = [cid for cid, _ in dense]
        lexical_ids = [cid for cid, _ in lexical]
        fused = rrf([dense_ids, lexical_ids], self.rrf_k)
        top = sorted(fused, key=lambda cid: -fused[cid])[:k]
        records = self.store.chunk_records(top)
        dense_rank = {cid: r for r, cid in enumerate(dense_ids, start=1)}
        lexical_rank = {cid: r for r, cid in enumerate(lexical_ids, start=1)}
        return [
            self._hit(records[cid], query, fused[cid], dense_rank.get(cid), lexical_rank.get(cid))
            for cid in top
            if cid in records
        ]

    @staticmethod
    def _hit(rec: ChunkRecord, query: str, score: float, dr: int | None, lr: int | None) -> Hit:
        return Hit(
            chunk_id=rec.chunk_id,
            document_id=rec.document_id,
            collection=rec.collection,
            path=rec.path,
            title=rec.title or rec.path.rsplit("/", 1)[-1],
            kind=rec.kind,
            text=rec.text,
            snippet=snippet_of(rec.text, query),
            heading_path=rec.heading_path,
            anchor=rec.anchor,
            page=rec.page,
            line_start=rec.line_start,
            line_end=rec.line_end,
            symbol=rec.symbol,
            score=round(score, 6),
            dense_rank=dr,
            lexical_rank=lr,
        )
