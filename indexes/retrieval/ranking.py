"""The steps that reorder a question's candidates once both retrievers have scored them, in the order the
retriever takes them: fusion into one ranking, the prior for source files on questions about code, the best
of each kind of text among the first places, and document-diverse places.

Fusion (pure functions, no I/O). Two methods, both measured on SciFact train (see `assistant eval retrieval`):
- reciprocal-rank fusion: needs ranks only, robust, but ignores how far apart scores are;
- a linear mix of normalised scores: `w * dense + (1 - w) * lexical` after min-max or z-score
  normalisation over the candidate pool. It needs both scores for every candidate, which the
  retriever provides (exact cosine from the stored vectors, BM25 from a second FTS5 lookup).

The prior. "Where is … implemented" questions are answered best by source files, yet documentation and tests
repeat the same names in more words. `PathPrior` adds a measured bonus to the fused score of chunks
that the ingester cited by line (source code and plain text files) outside test paths, and to chunks
whose symbol is one of the question's identifiers. The test paths are globs in the settings, not a
list of files. Which questions get the source bonus is read from the question's form
(`question_form`) and from how well each kind of text matches its words: where-is-it questions get
it; how-do-I questions do not (the page written for users explains it, source files show it in
pieces); how-does-it-behave questions get it unless a page matches their words far better than any
source file. A constant bonus on every question, chosen on questions about symbols (hit@1 0.87 on
the first 30 Flask questions), put source files first for questions documentation answers: derived
behaviour questions (Flask, tune split) hit@1 0.548 with it against 0.827 by form and words.

A page can also state a behaviour question outright: one of the best pages holds most of the
question's words (`page_cover`), more than any of the best source chunks. A share of words, not a
score, so long code chunks full of the same names do not outweigh it; such a question goes without the
source bonus and pages get `page` instead. Derived behaviour questions (tune split of the seven
packages): hit@1 0.776 -> 0.842 without the page bonus, 0.890 with it; code and error-message
questions unchanged.

Each kind of text. A question about a codebase is answered by the page that explains a behaviour or by the
code that does it, and which of the two ranks first is a close call (`PathPrior`). When one kind fills the
first places, the other kind's best candidate is moved up to the last of them, so a reader (and the model)
sees both; the first place is never changed. A where-is-it-implemented question is left alone: it asks
for the symbol's file, not for a page about it (the retriever decides by `question_form`).

Document-diverse top-k: no document takes more than `per_document` places, and the chunks of one
document that follow each other are merged into one place. Without it one long page that matches a
question everywhere fills the sources (three sections of the same `.rst` file ahead of the source file the
question was about), and the model reads the same document three times. Pure functions over chunk ids and
their `ChunkMeta`.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from typing import Callable, Literal

from indexes.lexical.fts5 import query_terms
from indexes.retrieval.hits import ChunkMeta, Place
from indexes.retrieval.question_form import identifiers, is_code_question, question_form, quoted_phrases, words_of

Normalisation = Literal["minmax", "zscore"]


def rrf(rankings: list[list[int]], k: float) -> dict[int, float]:
    """Reciprocal-rank fusion: sum of 1 / (k + rank) over the rankings an id appears in."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, cid in enumerate(ranking, start=1):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (k + rank)
    return scores


def normalise(scores: dict[int, float], method: Normalisation = "minmax") -> dict[int, float]:
    """Scores mapped onto a common scale: [0, 1] (min-max) or mean 0 / sd 1 (z-score).

    A constant list (one candidate, or all tied) maps to 1.0 (min-max) or 0.0 (z-score): the side
    then cannot reorder anything, which is the honest outcome.
    """
    if not scores:
        return {}
    values = list(scores.values())
    if method == "minmax":
        lo, hi = min(values), max(values)
        span = hi - lo
        return {cid: ((s - lo) / span if span > 0 else 1.0) for cid, s in scores.items()}
    if method == "zscore":
        mean = sum(values) / len(values)
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        return {cid: ((s - mean) / sd if sd > 0 else 0.0) for cid, s in scores.items()}
    raise ValueError(f"unknown normalisation {method!r}: use 'minmax' or 'zscore'")


def linear_mix(
    dense: dict[int, float],
    lexical: dict[int, float],
    dense_weight: float,
    method: Normalisation = "minmax",
) -> dict[int, float]:
    """`w * norm(dense) + (1 - w) * norm(lexical)` over the union of candidates.

    Callers should give every candidate a score on both sides; a candidate missing from one side gets
    that side's minimum (after normalisation), i.e. it is treated as the least relevant there.
    """
    if not 0.0 <= dense_weight <= 1.0:
        raise ValueError("dense_weight must be between 0 and 1")
    nd, nl = normalise(dense, method), normalise(lexical, method)
    floor_d = min(nd.values(), default=0.0)
    floor_l = min(nl.values(), default=0.0)
    ids = set(nd) | set(nl)
    return {
        cid: dense_weight * nd.get(cid, floor_d) + (1.0 - dense_weight) * nl.get(cid, floor_l) for cid in ids
    }


def ranked(scores: dict[int, float]) -> list[int]:
    """Ids best first; ties broken by id so results are deterministic."""
    return sorted(scores, key=lambda cid: (-scores[cid], cid))


DEFAULT_TEST_PATHS = ("tests/*", "test/*", "*/tests/*", "*/test/*", "test_*", "*/test_*", "*_test.*", "*.test.*",
                      "*.spec.*", "conftest.py", "*/conftest.py")


@dataclass(frozen=True)
class PathPrior:
    """Bonuses added to fused scores (which lie in [0, 1] for the linear mix) on code questions."""

    source: float = 0.0  # a line-cited chunk outside the test paths
    words_ratio: float = 1.25  # how much better a page must match a behaviour question's words to go without it
    page_cover: float = 0.0  # a page holding this share of a behaviour question's words (and more than code) goes first
    page: float = 0.0  # added to pages where such a page states a behaviour question
    symbol: float = 0.0  # a chunk whose symbol is one of the question's identifiers
    test_paths: tuple[str, ...] = field(default=DEFAULT_TEST_PATHS)
    scope: Literal["all", "code-questions", "by-form"] = "by-form"  # which questions the source bonus applies to
    # Whether any bonus is on: decided once, read by every search (several times each).
    active: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "active", bool(self.source or self.symbol))

    def bonuses(self, query: str, doc_words: float, code_words: float,
                cover: Callable[[], tuple[float, float]] | None = None) -> tuple[float, float]:
        """The bonuses of source chunks and of pages this question gets under the scope. By form
        (`question_form`): `source` where it asks where something is implemented; none where it asks
        how the user does something; where it asks how the system behaves, `source` while the best
        source candidate matches the question's words about as well as the best documentation one (its
        BM25 score at least 1 / `words_ratio` of theirs) and no page states the question in its own
        words. `cover()` gives the share of the question's words in the best page and in the best source
        chunk: a page holding at least `page_cover` of them, more than the source does, states it, and
        then pages get `page` and source none (a question quoting a message is left to the words
        ratio: the message is raised in the code)."""
        if self.scope == "all":
            return self.source, 0.0
        if self.scope == "code-questions":
            return (self.source if is_code_question(query) else 0.0), 0.0
        form = question_form(query)
        if form == "behaviour":
            if self.page_cover and cover is not None and not quoted_phrases(query):
                page, code = cover()
                if page >= self.page_cover and page > code:
                    return 0.0, self.page
            return (0.0 if doc_words > self.words_ratio * code_words else self.source), 0.0
        return (self.source if form == "implementation" else 0.0), 0.0

    def cover(self, query: str, scores: dict[int, float], meta: dict[int, ChunkMeta],
              texts: Callable[[list[int]], dict[int, str]], best: int = 3) -> tuple[float, float]:
        """The largest share of the question's words held by one of the `best` pages, and by one of the
        `best` source chunks (identifiers counted by their parts too)."""
        pages = sorted((c for c, m in meta.items() if c in scores and not m.line_cited), key=lambda c: -scores[c])[:best]
        code = sorted((c for c, m in meta.items() if c in scores and self.is_source(m)), key=lambda c: -scores[c])[:best]
        terms = set(query_terms(query))
        if not terms:
            return 0.0, 0.0
        read = texts(pages + code)

        def share(ids: list[int]) -> float:
            return max((len(terms & words_of(read[c])) / len(terms) for c in ids if c in read), default=0.0)
        return share(pages), share(code)

    def is_test(self, path: str) -> bool:
        return any(fnmatch.fnmatchcase(path, pattern) for pattern in self.test_paths)

    def is_source(self, m: ChunkMeta) -> bool:
        """A line-cited chunk outside the test paths: source code (or a plain text file)."""
        return m.line_cited and not self.is_test(m.path)

    def apply(self, query: str, scores: dict[int, float], meta: dict[int, ChunkMeta],
              lexical: dict[int, float] | None = None,
              texts: Callable[[list[int]], dict[int, str]] | None = None) -> dict[int, float]:
        """Scores with the bonuses added. The source bonus goes to every question (scope "all": in a
        collection without code nothing is line-cited, so nothing changes), only to code questions, or
        (scope "by-form") by the question's form (`bonuses`). The symbol bonus goes to chunks
        whose symbol is named in the question. `texts` reads chunk texts, for the words a page and a
        source file share with the question (read only when that decides)."""
        if not self.active:
            return scores
        lexical = lexical or {}
        doc_words = max((lexical.get(cid, 0.0) for cid, m in meta.items() if not m.line_cited and cid in scores), default=0.0)
        code_words = max((lexical.get(cid, 0.0) for cid, m in meta.items() if self.is_source(m) and cid in scores),
                         default=0.0)
        read = texts if code_words > 0 else None  # without source candidates there is nothing to weigh
        cover = (lambda: self.cover(query, scores, meta, read)) if read is not None else None
        source, page = self.bonuses(query, doc_words, code_words, cover)
        names = {n.rsplit(".", 1)[-1].lower() for n in identifiers(query)}
        out = dict(scores)
        for cid, m in meta.items():
            if cid not in out:
                continue
            if source and self.is_source(m):
                out[cid] += source
            elif page and not m.line_cited:
                out[cid] += page
            if self.symbol and names and m.symbol and m.symbol.rsplit(".", 1)[-1].lower() in names:
                out[cid] += self.symbol
        return out


def each_kind_by(order: list[int], meta: dict[int, ChunkMeta], is_source: Callable[[ChunkMeta], bool],
                 by: int) -> list[int]:
    """The ranking with the best chunk of a kind (source file or page; tests are neither) moved up to
    the `by`-th document when the first `by` documents hold none of that kind and a later chunk is of
    it. `by` < 2 leaves the order as it is."""
    if by < 2:
        return order
    docs: list[int] = []  # documents in order of their best chunk
    kinds_seen: set[str] = set()
    cut = len(order)  # index of the by-th document's first chunk
    for i, cid in enumerate(order):
        m = meta.get(cid)
        if m is None or m.document_id in docs:
            continue
        docs.append(m.document_id)
        if len(docs) == by:
            cut = i
            break
        kinds_seen.add(_kind(m, is_source))
    if len(docs) < by:
        return order
    kinds_seen.add(_kind(meta[order[cut]], is_source))
    for wanted in ("source", "page"):
        if wanted in kinds_seen:
            continue
        later = next((i for i in range(cut + 1, len(order))
                      if order[i] in meta and _kind(meta[order[i]], is_source) == wanted), None)
        if later is not None:
            return order[:cut] + [order[later]] + order[cut:later] + order[later + 1:]
    return order


def _kind(m: ChunkMeta, is_source: Callable[[ChunkMeta], bool]) -> str:
    if is_source(m):
        return "source"
    return "test" if m.line_cited else "page"


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
            near = next((p for p in mine if len(p.ordinals) < max_merged and p.adjacent(m.ordinal, m.sheet)), None)
            if near is not None:
                near.ordinals[cid] = m.ordinal
                continue
        if len(places) >= k:
            continue  # full: only merges into places already taken can follow
        if per_document and len(mine) >= per_document:
            continue
        place = Place(best=cid, document_id=m.document_id, ordinals={cid: m.ordinal}, sheet=m.sheet)
        mine.append(place)
        places.append(place)
    return places
