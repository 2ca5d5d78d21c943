"""The full-text side of the store: the rows of chunk_fts and chunk_cjk (built, added and removed only
here, inside the writer's transaction), and BM25 candidates from them: query normalisation, a bounded
candidate set, weighted columns.

FTS5 scores every row an OR-query matches before it can sort them (about 1-2 µs a row here), so a
question made of common words would score most of a million-chunk collection. Two steps keep the work
bounded while changing BM25 as little as possible:
1. English stop words are dropped (unless the question has nothing else);
2. each remaining term's document frequency is counted (capped, cached) and terms are kept rarest
   first until the rows they can match would exceed `budget`. The dropped terms are the most frequent
   ones, whose inverse document frequency - their weight in BM25 - is the lowest.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from indexes.lexical import cjk
from indexes.db import driver, read_rows
from indexes.retrieval.filters import SearchFilters

WORD = re.compile(r"\w+", re.UNICODE)

# Function words of English: they match most chunks and carry almost no relevance signal.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves""".split()
)


_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def identifier_words(name: str) -> str:
    """snake_case, CamelCase and dotted names as their words: `Flask.make_response`, `HTTPError` ->
    `flask make response`, `http error` (what a searcher types; the name itself is indexed too)."""
    return " ".join(w.lower() for part in re.split(r"[^0-9A-Za-z]+", name) for w in _CAMEL.findall(part))


def path_terms(path: str) -> str:
    """A path as words for the lexical index: `src/flask/app.py` -> `src flask app py`; words inside
    names are split too (`JsonProvider.py` -> `JsonProvider json provider py`)."""
    parts = [t for t in re.split(r"[^0-9A-Za-z]+", path) if t]
    extra = [w for t in parts if (w := identifier_words(t)) and w != t.lower()]
    return " ".join(parts + extra)


@dataclass(frozen=True)
class ChunkText:
    """What the full-text tables index of one chunk; `CHUNK_TEXT_SQL` reads it back from the store."""

    chunk_id: int
    collection_id: int
    title: str
    heading_path: str
    symbol: str
    body: str
    path: str


CHUNK_TEXT_SQL = (
    "SELECT c.id, c.collection_id, d.title, c.heading_path, c.symbol, c.text, d.path "
    "FROM chunk c JOIN document d ON d.id = c.document_id"
)


def fts_row(c: ChunkText, path_words: str | None = None) -> tuple:
    """The chunk_fts row: title, headings (the heading path, the symbol and its words), body, path words."""
    headings = " ".join(filter(None, [c.heading_path, c.symbol, identifier_words(c.symbol) if c.symbol else ""]))
    return (c.chunk_id, c.title, headings, c.body, path_terms(c.path) if path_words is None else path_words,
            c.collection_id)


def add_rows(raw, chunks: list[ChunkText], *, fts: bool = True) -> int:
    """Index chunks in both full-text tables (the trigram table only takes those with CJK text), on a
    DB-API connection inside the caller's transaction; returns the CJK rows written. `fts=False` fills
    the trigram table alone."""
    if fts and chunks:
        path_words: dict[str, str] = {}  # the chunks of one document share their path
        rows = [fts_row(c, path_words.setdefault(c.path, path_terms(c.path))) for c in chunks]
        raw.executemany(
            "INSERT INTO chunk_fts(rowid, title, headings, body, path, collection_id) VALUES (?,?,?,?,?,?)", rows
        )
    cjk_rows = [r for c in chunks if (r := cjk.row(c.chunk_id, c.title, c.heading_path, c.body, c.collection_id))]
    if cjk_rows:
        raw.executemany("INSERT INTO chunk_cjk(rowid, body, collection_id) VALUES (?,?,?)", cjk_rows)
    return len(cjk_rows)


def remove_rows(raw, chunk_ids: list[int], *, tables: tuple[str, ...] = ("chunk_fts", "chunk_cjk")) -> None:
    """Remove chunks from the full-text tables, inside the caller's transaction."""
    for start in range(0, len(chunk_ids), 500):
        marks = ",".join(str(int(i)) for i in chunk_ids[start : start + 500])
        for table in tables:
            raw.execute(f"DELETE FROM {table} WHERE rowid IN ({marks})")


def remove_collection_rows(raw, collection_id: int) -> None:
    for table in ("chunk_fts", "chunk_cjk"):
        raw.execute(f"DELETE FROM {table} WHERE collection_id = ?", (int(collection_id),))


def normalise_query(query: str) -> str:
    """Unicode-normalised (NFKC), whitespace collapsed: the form both retrievers see."""
    return " ".join(unicodedata.normalize("NFKC", query).split())


def query_terms(query: str, *, drop_stopwords: bool = True) -> list[str]:
    """Distinct lower-case words of a query, in order; stop words dropped unless nothing else is left."""
    words = [w for w in WORD.findall(normalise_query(query).lower()) if len(w) > 1 or not w.isascii()]
    seen: list[str] = []
    for w in words:
        if w not in seen:
            seen.append(w)
    if drop_stopwords:
        content = [w for w in seen if w not in STOPWORDS]
        if content:
            seen = content
    return seen[:64]


def phrase(term: str) -> str:
    """A term as an FTS5 string (quoted, so operators and column names in it are just words)."""
    return '"' + term.replace('"', '""') + '"'


@dataclass(frozen=True)
class Weights:
    """BM25 column weights of the FTS5 table (title, headings, body, path)."""

    title: float = 3.0
    headings: float = 1.5
    body: float = 1.0
    path: float = 1.0

    def bm25(self) -> str:
        """The FTS5 ranking call; called as a function it costs less per row than `rank MATCH`."""
        return f"bm25(chunk_fts, {self.title!r}, {self.headings!r}, {self.body!r}, {self.path!r})"


@dataclass
class LexicalResult:
    """Top hits, every score that was read, the FTS5 expression, and whether all matches were read."""

    top: list[tuple[int, float]]
    scores: dict[int, float]
    match: str
    complete: bool

    def score_of(self, chunk_id: int) -> float | None:
        """BM25 of a chunk: read, 0.0 when it matched nothing, None when it lies beyond what was read."""
        if chunk_id in self.scores:
            return self.scores[chunk_id]
        return 0.0 if self.complete else None


class Lexical:
    """BM25 search over the store's FTS5 table with a bounded candidate set."""

    def __init__(self, engine: Engine, *, cache_size: int = 50_000) -> None:
        self.engine = engine
        self._df: dict[str, tuple[int, int]] = {}  # term -> (rows counted, the cap it was counted to)
        self._df_scale = 0  # max chunk id when the cache was filled: it is cleared when that grows 10%
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def document_frequency(self, conn, terms: list[str], cap: int) -> dict[str, int]:
        """Rows matching each term, counted up to cap + 1 (exact below cap), cached per term."""
        raw = driver(conn)
        scale = int(raw.execute("SELECT coalesce(max(id), 0) FROM chunk").fetchone()[0])
        with self._lock:
            if scale < self._df_scale or scale > 1.1 * self._df_scale or len(self._df) > self._cache_size:
                self._df.clear()
                self._df_scale = scale
            cached = {t: self._df.get(t) for t in terms}
        out: dict[str, int] = {}
        for t in terms:
            hit = cached[t]
            if hit is not None and (hit[0] <= hit[1] or hit[1] >= cap):  # exact, or counted at least as far
                out[t] = min(hit[0], cap + 1)
                continue
            out[t] = self.count_matches(raw, t, cap + 1)
            with self._lock:
                self._df[t] = (out[t], cap)
        return out

    def count_matches(self, raw, term: str, limit: int) -> int:
        """Rows the term matches, counted up to limit."""
        sql = "SELECT count(*) FROM (SELECT 1 FROM chunk_fts WHERE chunk_fts MATCH :t LIMIT :cap)"
        return int(raw.execute(sql, {"t": phrase(term), "cap": limit}).fetchone()[0])

    def rows_matching(self, collection_ids: list[int], terms: list[str], cap: int) -> dict[str, int]:
        """Rows of these collections matching each term, counted up to cap + 1 (exact below cap)."""
        marks = ",".join(str(int(c)) for c in collection_ids)
        sql = ("SELECT count(*) FROM (SELECT 1 FROM chunk_fts WHERE chunk_fts MATCH :t "
               f"AND collection_id IN ({marks}) LIMIT :cap)")
        with self.engine.connect() as conn:
            raw = driver(conn)
            return {t: int(raw.execute(sql, {"t": phrase(t), "cap": cap + 1}).fetchone()[0]) for t in terms}

    def heading_matches(self, collection_ids: list[int], name: str, limit: int) -> list[int]:
        """Chunks of these collections whose headings (heading path, symbol and its words) hold the name's
        words in a row, the best BM25 first: where to look for the chunk that defines it."""
        if not collection_ids or not WORD.search(name):
            return []
        marks = ",".join(str(int(c)) for c in collection_ids)
        sql = (f"SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH :q AND collection_id IN ({marks}) "
               "ORDER BY rank LIMIT :n")
        return [int(r[0]) for r in read_rows(self.engine, sql, {"q": f"headings : {phrase(name)}", "n": limit})]

    def plan(self, conn, terms: list[str], budget: int) -> str:
        """The FTS5 expression for these terms: all of them OR-ed, or the rarest ones within budget."""
        if not terms:
            return ""
        if budget <= 0 or len(terms) == 1:
            return " OR ".join(phrase(t) for t in terms)
        df = self.document_frequency(conn, terms, budget)
        by_rarity = sorted(terms, key=lambda t: (df[t], terms.index(t)))
        by_rarity = [t for t in by_rarity if df[t] > 0] or by_rarity[:1]
        chosen: list[str] = []
        total = 0
        for t in by_rarity:
            if chosen and total + df[t] > budget:
                break
            chosen.append(t)
            total += df[t]
        if total > budget and len(by_rarity) > 1:
            # Even the rarest term matches too much: ask for rows with the two rarest together,
            # ranking the terms by counts taken further than the budget.
            df = self.document_frequency(conn, by_rarity, 4 * budget)
            a, b = sorted(by_rarity, key=lambda t: (df[t], terms.index(t)))[:2]
            return f"{phrase(a)} AND {phrase(b)}"
        return " OR ".join(phrase(t) for t in chosen)

    def search(
        self,
        collection_ids: list[int],
        terms: list[str],
        limit: int,
        *,
        weights: Weights = Weights(),
        budget: int = 0,
        filters: SearchFilters | None = None,
    ) -> "LexicalResult":
        """The best `limit` chunks by BM25, plus the scores of every other row FTS5 ranked anyway.

        FTS5 computes the rank of every matching row before it sorts them, so with a budget the
        whole ranked list (at most about `budget` rows) is read: the fusion then knows the exact
        BM25 of any dense candidate without a second query.
        """
        if not terms or not collection_ids or limit <= 0:
            return LexicalResult([], {}, "", complete=True)
        with self.engine.connect() as conn:
            match = self.plan(conn, terms, budget)
            read = max(limit, budget + limit) if budget > 0 else limit
            params: dict = {"q": match, "n": read}
            where = "chunk_fts MATCH :q"
            if not self._covers_all(conn, collection_ids):
                # Reading the unindexed collection column costs a row lookup per match (2-3x the
                # query), so it is only asked where other collections have rows too.
                where += f" AND collection_id IN ({','.join(str(int(c)) for c in collection_ids)})"
            if filters is not None and not filters.is_empty:
                sub, sub_params = filters.chunk_subquery(collection_ids)
                where += f" AND +rowid IN ({sub})"  # '+': test membership per match, no per-id lookups
                params.update(sub_params)
            sql = f"SELECT rowid, -{weights.bm25()} AS score FROM chunk_fts WHERE {where} ORDER BY score DESC LIMIT :n"
            rows = conn.connection.driver_connection.execute(sql, params).fetchall()
            # The trigram table only for a query with CJK text: a Latin one skips it (no grams to match).
            cjk_hits = cjk.search(conn, collection_ids, terms, read) if any(map(cjk.CJK_RUN.search, terms)) else []
        ranked = rows  # (rowid, score) tuples of int and float already: up to `budget` rows, no copy
        if cjk_hits:  # CJK words matched by trigrams (indexes/lexical/cjk.py): their scores add to BM25's
            merged = dict(ranked)
            for cid, score in cjk_hits:
                merged[cid] = merged.get(cid, 0.0) + score
            if filters is not None and not filters.is_empty:
                allowed = {cid for cid, _ in ranked} | self._allowed(collection_ids, filters, [c for c, _ in cjk_hits])
                merged = {c: v for c, v in merged.items() if c in allowed}
            ranked = sorted(merged.items(), key=lambda kv: -kv[1])
            return LexicalResult(ranked[:limit], dict(ranked), match, complete=False)
        return LexicalResult(ranked[:limit], dict(ranked), match, complete=len(ranked) < read)

    @staticmethod
    def _covers_all(conn, collection_ids: list[int]) -> bool:
        """Whether these are all the store's collections (then no row needs its collection checked)."""
        every = {int(r[0]) for r in conn.connection.driver_connection.execute("SELECT id FROM collection").fetchall()}
        return every <= {int(c) for c in collection_ids}

    def _allowed(self, collection_ids: list[int], filters: SearchFilters, ids: list[int]) -> set[int]:
        """Which of these chunk ids pass the filters."""
        if not ids:
            return set()
        sub, params = filters.chunk_subquery(collection_ids)
        marks = ",".join(str(int(i)) for i in ids)
        rows = read_rows(self.engine, f"SELECT id FROM chunk WHERE id IN ({marks}) AND id IN ({sub})", params)
        return {int(r[0]) for r in rows}

    def scores(self, chunk_ids: list[int], match: str, *, weights: Weights = Weights()) -> dict[int, float]:
        """BM25 of given chunks for an FTS5 expression (0.0 where a chunk does not match it)."""
        if not chunk_ids or not match:
            return {int(c): 0.0 for c in chunk_ids}
        marks = ",".join(str(int(c)) for c in chunk_ids)
        sql = f"SELECT rowid, -{weights.bm25()} FROM chunk_fts WHERE chunk_fts MATCH :q AND rowid IN ({marks})"
        found = {int(r[0]): float(r[1]) for r in read_rows(self.engine, sql, {"q": match})}
        return {int(c): found.get(int(c), 0.0) for c in chunk_ids}
