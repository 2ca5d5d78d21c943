"""Lexical search for Chinese, Japanese and Korean: an FTS5 trigram table beside the unicode61 one.

unicode61 splits words at spaces and punctuation; CJK text has neither between words, so a whole
clause becomes one token and a query word inside it never matches. Chunks that contain CJK text are
also written to `chunk_cjk` (trigram tokenizer: every 3-character substring is a term); a query's CJK
runs are searched there by their trigrams (BM25 ranks chunks by how many they share), and two-character
words, too short for a trigram, by substring. The table only holds chunks with CJK text.
"""

from __future__ import annotations

import re

CJK_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS chunk_cjk USING fts5(body, collection_id UNINDEXED, tokenize='trigram')"
)
# Han, Hiragana, Katakana, Hangul (syllables and jamo), CJK punctuation-free runs
CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]+")
MAX_TRIGRAMS = 48


def has_cjk(text: str) -> bool:
    return CJK_RUN.search(text) is not None


def cjk_runs(text: str) -> list[str]:
    return CJK_RUN.findall(text)


def row(chunk_id: int, title: str, headings: str, body: str, collection_id: int) -> tuple | None:
    """The chunk_cjk row of a chunk, or None when it holds no CJK text."""
    joined = "\n".join(x for x in (title, headings, body) if x)
    return (chunk_id, joined, collection_id) if has_cjk(joined) else None


def query_grams(query_terms: list[str]) -> tuple[list[str], list[str]]:
    """A query's CJK runs as distinct trigrams (at most MAX_TRIGRAMS) and the runs too short for one."""
    grams: list[str] = []
    pairs: list[str] = []
    for run in (r for t in query_terms for r in cjk_runs(t)):
        if len(run) >= 3:
            grams.extend(g for g in (run[i : i + 3] for i in range(len(run) - 2)) if g not in grams)
        else:
            pairs.append(run)
    return grams[:MAX_TRIGRAMS], pairs


def search(conn, collection_ids: list[int], query_terms: list[str], limit: int) -> list[tuple[int, float]]:
    """(chunk id, score) of chunks sharing the query's CJK text, best first; [] for a query without any."""
    grams, pairs = query_grams(query_terms)
    if not (grams or pairs) or not collection_ids or limit <= 0:
        return []
    marks = ",".join(str(int(c)) for c in collection_ids)
    raw = conn.connection.driver_connection
    scores: dict[int, float] = {}
    if grams:
        match = " OR ".join('"' + g + '"' for g in grams)
        for rowid, score in raw.execute(
            f"SELECT rowid, -bm25(chunk_cjk) FROM chunk_cjk WHERE chunk_cjk MATCH ? AND collection_id IN ({marks}) "
            "ORDER BY rank LIMIT ?", (match, limit)).fetchall():
            scores[int(rowid)] = float(score)
    for pair in pairs:  # too short for a trigram: a substring test over the (CJK-only) table
        for (rowid,) in raw.execute(
            f"SELECT rowid FROM chunk_cjk WHERE body LIKE ? AND collection_id IN ({marks}) LIMIT ?",
            (f"%{pair}%", limit)).fetchall():
            scores[int(rowid)] = scores.get(int(rowid), 0.0) + 1.0
    return sorted(scores.items(), key=lambda kv: -kv[1])[:limit]
