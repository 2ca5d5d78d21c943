"""Lexical search inside PostgreSQL: a weighted `tsvector` per chunk ranked by `ts_rank_cd`, and
`pg_trgm` trigrams for Chinese, Japanese and Korean text.

The alternative to each replica's FTS5 copy (indexes/lexical/replica_copy.py): nothing is kept per replica,
the chunk row carries its own search columns, written by the store in the statement that inserts the
row (so they are in step in the same transaction) and read by every replica alike.

- `lexical_vector`: title (weight A), heading path and code symbol with its words (B), body and path
  words (C), under the `english` configuration (Snowball stemming, stop words dropped). Text is split
  at every non-word character first, as FTS5's unicode61 tokenizer does: PostgreSQL's parser would
  otherwise keep `flask.Flask` or `src/app.py` as one host or file token that no question matches.
- `lexical_cjk`: title, headings and body of chunks that hold CJK text (NULL otherwise), with a GIN
  trigram index: a question's CJK runs are searched by their 3-character substrings (`LIKE`, which the
  trigram index serves), as the FTS5 trigram table is (indexes/lexical/cjk.py).

A question's terms are OR-ed (`websearch_to_tsquery` would AND them and find almost nothing for a
natural-language question), kept within the same budget of matched rows as FTS5 (the rarest terms
first, indexes/lexical/fts5.py), and the filters run inside the statement.
"""

from __future__ import annotations

import math
import re

from sqlalchemy.engine import Engine

from indexes.lexical import cjk
from indexes.db import driver
from indexes.retrieval.filters import SearchFilters
from indexes.lexical.fts5 import (CHUNK_TEXT_SQL, WORD, ChunkText, Lexical, LexicalResult, Weights, identifier_words,
                             path_terms)

CONFIG = "english"
# The two columns' values in an INSERT or UPDATE, sqlite3 placeholders (indexes/pg.py rewrites them).
VALUES_SQL = (
    f"setweight(to_tsvector('{CONFIG}', ?), 'A') || setweight(to_tsvector('{CONFIG}', ?), 'B') || "
    f"setweight(to_tsvector('{CONFIG}', ?), 'C'), ?"
)
_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)
_PHRASE = re.compile(r'"((?:[^"]|"")*)"')
BATCH = 1000
RANKS = ("ts_rank_cd", "idf", "bm25")
K1, B = 1.2, 0.75  # BM25's usual constants (FTS5 uses the same)


def _words(text: str) -> str:
    return _NON_WORD.sub(" ", text or "").strip()


def column_values(c: ChunkText, path_words: str | None = None) -> tuple:
    """The parameters of VALUES_SQL for one chunk: title, headings, body + path words, CJK text."""
    headings = " ".join(filter(None, [c.heading_path, c.symbol, identifier_words(c.symbol) if c.symbol else ""]))
    body = _words(c.body) + " " + (path_terms(c.path) if path_words is None else path_words)
    row = cjk.row(c.chunk_id, c.title, c.heading_path, c.body, c.collection_id)
    return (_words(c.title), _words(headings), body, row[1] if row else None)


def fill_missing(raw) -> int:
    """Write the search columns of every chunk that lacks them (rows copied or made before the columns
    existed), in the caller's transaction; returns the chunks written."""
    done = 0
    last = 0
    while True:
        rows = raw.execute(
            f"{CHUNK_TEXT_SQL} WHERE c.lexical_vector IS NULL AND c.id > ? ORDER BY c.id LIMIT ?", (last, BATCH)
        ).fetchall()
        if not rows:
            return done
        texts = [ChunkText(*r) for r in rows]
        raw.executemany(f"UPDATE chunk SET (lexical_vector, lexical_cjk) = ({VALUES_SQL}) WHERE id = ?",
                        [(*column_values(t), t.chunk_id) for t in texts])
        done += len(texts)
        last = texts[-1].chunk_id


def tsquery_text(terms: list[str], op: str = "|") -> str:
    """Terms as `to_tsquery` input, joined by op; a term of several words (`make_response`) is a phrase."""
    parts = []
    for term in terms:
        words = WORD.findall(term)
        if words:
            parts.append(words[0] if len(words) == 1 else "(" + " <-> ".join(words) + ")")
    return f" {op} ".join(parts)


def rank_weights(w: Weights) -> str:
    """ts_rank_cd's {D, C, B, A} weights (each at most 1): title, headings and body in FTS5's ratios."""
    top = max(w.title, w.headings, w.body, 1e-9)
    return "{" + ",".join(f"{v / top:.6g}" for v in (0.0, w.body, w.headings, w.title)) + "}"


class PgLexical(Lexical):
    """Lexical candidates from the store's own PostgreSQL tables (see the module docstring).

    `normalisation` is ts_rank_cd's (0 = none, 1 = divided by 1 + log(length), 2 = by length,
    4 = by the mean harmonic distance of extents, 8 = by unique words, 32 = rank / (rank + 1)).
    `rank` (see `_rank_sql`): ts_rank_cd alone has no inverse document frequency (a common word counts
    as much as a rare one) and no saturation; `idf` and `bm25` add them from the counts the budget
    already takes.
    """

    def __init__(self, engine: Engine, *, rank: str = "bm25", normalisation: int = 0, **kwargs) -> None:
        super().__init__(engine, **kwargs)
        if rank not in RANKS:
            raise ValueError(f"unknown PostgreSQL ranking {rank!r}: use {', '.join(RANKS)}")
        self.rank = rank
        self.normalisation = int(normalisation)
        self._stats_cache: tuple[int, int, float] = (0, 0, 1.0)

    def count_matches(self, raw, term: str, limit: int) -> int:
        """Rows whose search vector matches the term, counted up to limit."""
        q = tsquery_text([term])
        if not q:
            return 0
        sql = (f"SELECT count(*) FROM (SELECT 1 FROM chunk WHERE lexical_vector @@ to_tsquery('{CONFIG}', :t) "
               "LIMIT :cap) AS m")
        return int(raw.execute(sql, {"t": q, "cap": limit}).fetchone()[0])

    def rows_matching(self, collection_ids: list[int], terms: list[str], cap: int) -> dict[str, int]:
        """Rows of these collections whose search vector matches each term, counted up to cap + 1."""
        marks = ",".join(str(int(c)) for c in collection_ids)
        sql = (f"SELECT count(*) FROM (SELECT 1 FROM chunk WHERE collection_id IN ({marks}) AND "
               f"lexical_vector @@ to_tsquery('{CONFIG}', :t) LIMIT :cap) AS m")
        out: dict[str, int] = {}
        with self.engine.connect() as conn:
            raw = driver(conn)
            for t in terms:
                q = tsquery_text([t])
                out[t] = int(raw.execute(sql, {"t": q, "cap": cap + 1}).fetchone()[0]) if q else 0
        return out

    def heading_matches(self, collection_ids: list[int], name: str, limit: int) -> list[int]:
        """Chunks whose headings (weight B: heading path, symbol and its words) hold the name's words in a row,
        the shortest headings first (where the name is most of the heading)."""
        words = [w for w in _words(identifier_words(name)).split() if w]
        if not words or not collection_ids:
            return []
        marks = ",".join(str(int(c)) for c in collection_ids)
        sql = (f"SELECT id FROM chunk WHERE collection_id IN ({marks}) AND "
               f"lexical_vector @@ to_tsquery('{CONFIG}', :q) "
               "ORDER BY length(coalesce(heading_path, '')) + length(coalesce(symbol, '')), id LIMIT :n")
        q = " <-> ".join(f"'{w}':B" for w in words)
        with self.engine.connect() as conn:
            return [int(r[0]) for r in driver(conn).execute(sql, {"q": q, "n": limit}).fetchall()]

    def plan(self, conn, terms: list[str], budget: int) -> str:
        """The tsquery text for these terms: all OR-ed, or the rarest within budget (as FTS5's plan)."""
        expr = super().plan(conn, terms, budget)
        chosen = [m.replace('""', '"') for m in _PHRASE.findall(expr)]
        return tsquery_text(chosen, "&" if " AND " in expr else "|")

    def _exact_frequency(self, conn, terms: list[str], total: int) -> dict[str, int]:
        """Exact matching rows of each term: from the cache where the budget's count was exact (the
        terms a budgeted plan keeps always are), else counted."""
        with self._lock:
            cached = {t: self._df.get(t) for t in terms}
        exact = {t: hit[0] for t, hit in cached.items() if hit is not None and hit[0] <= hit[1]}
        missing = [t for t in terms if t not in exact]
        if missing:
            exact.update(self.document_frequency(conn, missing, total))
        return exact

    def _stats(self, conn) -> tuple[int, float]:
        """(chunks, mean distinct lexemes per chunk) for IDF and length normalisation; refreshed with the
        term counts' cache (when the store grows by a tenth)."""
        with self._lock:
            cached = self._stats_cache if self._stats_cache[0] == self._df_scale and self._df_scale else None
        if cached is None:
            n, mean = driver(conn).execute(
                "SELECT count(*), coalesce(avg(length(lexical_vector)), 1) FROM chunk").fetchone()
            cached = (self._df_scale, int(n), max(float(mean), 1.0))
            with self._lock:
                self._stats_cache = cached
        return cached[1], cached[2]

    def _rank_sql(self, conn, match: str, weights: Weights) -> tuple[str, dict, str]:
        """The score expression over `lexical_vector`: ts_rank_cd of the whole query (`ts_rank_cd`), or a
        sum over its terms of ts_rank_cd weighted by the term's IDF (`idf`), or with BM25's saturation and
        length normalisation besides (`bm25`: a single term's ts_rank_cd is the sum of its occurrences'
        weights, i.e. a weighted term frequency). Returns the expression, its parameters and what to
        join to `FROM chunk` (bm25 computes each term's ts_rank_cd once per row in a LATERAL)."""
        w = rank_weights(weights)
        norm = self.normalisation
        terms = [t.strip("() ") for t in match.split(" | ")] if self.rank != "ts_rank_cd" else []
        if not terms or " & " in match:
            return f"ts_rank_cd('{w}', lexical_vector, to_tsquery('{CONFIG}', :q), {norm})", {}, ""
        total, mean_len = self._stats(conn)
        df = self._exact_frequency(conn, terms, total)
        body = max(weights.body / max(weights.title, weights.headings, weights.body, 1e-9), 1e-9)
        params: dict = {}
        parts, ranks = [], []
        for i, t in enumerate(terms):
            d = min(df.get(t, 0), total)
            idf = math.log(1.0 + (total - d + 0.5) / (d + 0.5))
            params[f"t{i}"] = t
            rank = f"ts_rank_cd('{w}', lexical_vector, to_tsquery('{CONFIG}', :t{i}), {norm})"
            if self.rank == "bm25":
                ranks.append(f"{rank} / {body:.6g} AS r{i}")
                parts.append(f"{idf:.6f} * r.r{i} * {K1 + 1} / (r.r{i} + r.k)")
            else:
                parts.append(f"{idf:.6f} * {rank}")
        if not ranks:
            return " + ".join(parts), params, ""
        k = f"{K1} * (1 - {B} + {B} * length(lexical_vector) / {mean_len:.4f}) AS k"
        # OFFSET 0 keeps the planner from pulling the subquery up (which would repeat each ts_rank_cd)
        return " + ".join(parts), params, f" CROSS JOIN LATERAL (SELECT {', '.join(ranks)}, {k} OFFSET 0) AS r"

    def search(
        self,
        collection_ids: list[int],
        terms: list[str],
        limit: int,
        *,
        weights: Weights = Weights(),
        budget: int = 0,
        filters: SearchFilters | None = None,
    ) -> LexicalResult:
        """The best `limit` chunks, plus the scores of every other matched row that was read."""
        if not terms or not collection_ids or limit <= 0:
            return LexicalResult([], {}, "", complete=True)
        marks = ",".join(str(int(c)) for c in collection_ids)
        read = max(limit, budget + limit) if budget > 0 else limit
        with self.engine.connect() as conn:
            match = self.plan(conn, terms, budget)
            rows: list = []
            if match:
                score, params, join = self._rank_sql(conn, match, weights)
                where = f"collection_id IN ({marks}) AND lexical_vector @@ to_tsquery('{CONFIG}', :q)"
                params.update(q=match, n=read)
                if filters is not None and not filters.is_empty:
                    sub, sub_params = filters.chunk_subquery(collection_ids, postgres=True)
                    where += f" AND id IN ({sub})"
                    params.update(sub_params)
                rows = driver(conn).execute(
                    f"SELECT id, {score} AS score FROM chunk{join} WHERE {where} ORDER BY score DESC, id LIMIT :n",
                    params,
                ).fetchall()
            cjk_hits = search_cjk(conn, collection_ids, terms, read, filters)
        ranked = [(int(r[0]), float(r[1])) for r in rows]
        if cjk_hits:  # as on SQLite: CJK scores add to the full-text ones
            merged = dict(ranked)
            for cid, s in cjk_hits:
                merged[cid] = merged.get(cid, 0.0) + s
            ranked = sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))
            return LexicalResult(ranked[:limit], dict(ranked), match, complete=False)
        return LexicalResult(ranked[:limit], dict(ranked), match, complete=len(ranked) < read)

    def scores(self, chunk_ids: list[int], match: str, *, weights: Weights = Weights()) -> dict[int, float]:
        """Scores of given chunks for a tsquery text (0.0 where a chunk does not match it)."""
        if not chunk_ids or not match:
            return {int(c): 0.0 for c in chunk_ids}
        marks = ",".join(str(int(c)) for c in chunk_ids)
        with self.engine.connect() as conn:
            score, params, join = self._rank_sql(conn, match, weights)
            params["q"] = match
            rows = driver(conn).execute(
                f"SELECT id, {score} FROM chunk{join} "
                f"WHERE id IN ({marks}) AND lexical_vector @@ to_tsquery('{CONFIG}', :q)",
                params,
            ).fetchall()
        found = {int(r[0]): float(r[1]) for r in rows}
        return {int(c): found.get(int(c), 0.0) for c in chunk_ids}


def search_cjk(conn, collection_ids: list[int], query_terms: list[str], limit: int,
               filters: SearchFilters | None = None) -> list[tuple[int, float]]:
    """(chunk id, score) of chunks sharing the query's CJK text, best first; [] for a query without any.

    Each query trigram a chunk contains adds its inverse document frequency among the CJK chunks (the
    part of BM25 that matters for a handful of trigrams); a two- or one-character word, too short for
    a trigram, adds 1.0 when it occurs, as on SQLite.
    """
    grams, pairs = cjk.query_grams(query_terms)
    if not (grams or pairs) or not collection_ids or limit <= 0:
        return []
    raw = driver(conn)
    marks = ",".join(str(int(c)) for c in collection_ids)
    params: dict = {}
    where = f"collection_id IN ({marks}) AND lexical_cjk IS NOT NULL"
    if filters is not None and not filters.is_empty:
        sub, sub_params = filters.chunk_subquery(collection_ids, postgres=True)
        where += f" AND id IN ({sub})"
        params.update(sub_params)
    scores: dict[int, float] = {}
    if grams:
        likes = []
        for i, g in enumerate(grams):
            params[f"g{i}"] = "%" + g + "%"
            likes.append(f"lexical_cjk LIKE :g{i}")
        total = max(1, int(raw.execute("SELECT count(*) FROM chunk WHERE lexical_cjk IS NOT NULL").fetchone()[0]))
        rows = raw.execute(
            f"SELECT id, ARRAY[{', '.join(likes)}] FROM chunk WHERE {where} AND ({' OR '.join(likes)}) LIMIT :n",
            {**params, "n": max(limit, 5 * limit)},
        ).fetchall()
        df = [sum(1 for r in rows if r[1][i]) for i in range(len(grams))]
        idf = [math.log(1.0 + (total - d + 0.5) / (d + 0.5)) for d in df]
        for cid, has in rows:
            scores[int(cid)] = sum(w for w, h in zip(idf, has) if h)
    for i, pair in enumerate(pairs):  # too short for a trigram: a substring test over the CJK rows
        for (cid,) in raw.execute(f"SELECT id FROM chunk WHERE {where} AND lexical_cjk LIKE :p LIMIT :n",
                                  {**params, "p": "%" + pair + "%", "n": limit}).fetchall():
            scores[int(cid)] = scores.get(int(cid), 0.0) + 1.0
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]

