"""Questions about code: identifiers matched whole and by their parts, and a prior for source files.

A question naming `make_response`, `SESSION_COOKIE_NAME` or `FlaskGroup` wants the place that defines
it. The full-text index splits such names into words (`make`, `response`; `FlaskGroup` stays one
word), so the BM25 query keeps the whole name (a phrase for snake_case, the word itself for CamelCase)
and adds its parts, which match the split names in symbols, paths and prose. Text the question
quotes (a pasted error message) is searched as phrases, each run of words between its punctuation:
derived error-message questions, report split, hit@1 0.831 -> 0.890 (tune split 0.967 either way).

"Where is … implemented" questions are answered best by source files, yet documentation and tests
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
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Callable, Literal

from indexes.lexical.fts5 import identifier_words, query_terms
from indexes.retrieval.question_form import IMPLEMENTATION_INTENT, question_form

# snake_case / SCREAMING_CASE (an inner underscore), CamelCase / camelCase (a lower-case letter
# followed by an upper-case one that starts a word: not `mRNA`), dotted names (`app.config`)
_SNAKE = re.compile(r"\b[A-Za-z_][A-Za-z0-9]*_[A-Za-z0-9_]*[A-Za-z0-9]\b")
_CAMEL = re.compile(r"\b[A-Za-z][a-z0-9]*[a-z0-9][A-Z][a-z][A-Za-z0-9]*\b")
_DOTTED = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b")
_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\(\)")

def identifiers(query: str) -> list[str]:
    """Code identifiers named in a question, in order, without repeats."""
    found: list[str] = []
    for pattern in (_DOTTED, _SNAKE, _CAMEL, _CALL):
        for m in pattern.finditer(query):
            name = m.group(1) if pattern is _CALL else m.group(0)
            if pattern is _DOTTED and not any(_SNAKE.fullmatch(p) or _CAMEL.fullmatch(p) for p in name.split(".")) \
                    and not re.search(r"[a-z]\.[a-z_]+\(", query[m.start():m.end() + 1]):
                continue  # "e.g" or a sentence's full stop, not a dotted name
            if name not in found:
                found.append(name)
    return found


def identifier_parts(names: list[str]) -> list[str]:
    """The words inside identifiers (`make_response` -> make, response), lower-case, without repeats."""
    out: list[str] = []
    for name in names:
        for w in identifier_words(name).split():
            if len(w) > 1 and w not in out:
                out.append(w)
    return out


# Text a question quotes: what the asker pasted (an error message, a log line), to be found as written.
_QUOTED = re.compile(r"\"([^\"]{8,300})\"|“([^”]{8,300})”|`([^`]{8,300})`")
_PHRASE_BREAK = re.compile(r"[^\w\s'-]+|'(?=\W|$)|(?<=\W)'")


def quoted_phrases(query: str, min_words: int = 3) -> list[str]:
    """The runs of at least min_words words inside the question's quotes, cut where punctuation
    stands (`"TypeError: no loader for this environment specified"` -> the message without its
    exception's name): a pasted message keeps the values it was given, which the code that raises it
    does not hold, so each run between them is matched as a phrase on its own."""
    out: list[str] = []
    for m in _QUOTED.finditer(query):
        text = next(g for g in m.groups() if g)
        for run in _PHRASE_BREAK.split(text):
            words = run.split()
            if len(words) >= min_words and " ".join(words).lower() not in out:
                out.append(" ".join(words).lower())
    return out


def expand_terms(terms: list[str], query: str) -> list[str]:
    """BM25 terms with each identifier kept whole and its parts added after the question's own words,
    and the runs of words it quotes as phrases (before the parts: they are what identifies it)."""
    names = identifiers(query)
    phrases = quoted_phrases(query)
    if not names and not phrases:
        return terms
    out = list(terms) + [p for p in phrases if p not in terms]
    for name in names:  # the whole name: dotted names by their last part, which is what a chunk defines
        whole = name.rsplit(".", 1)[-1].lower()
        if whole not in out:
            out.append(whole)
    for w in identifier_parts(names):
        if w not in out:
            out.append(w)
    return out[:64]


_WORDS = re.compile(r"\w+")


def words_of(text: str) -> set[str]:
    """The lower-case words of a text, identifiers also by their parts (`make_response` -> make, response)."""
    return set(_WORDS.findall(text.lower())) | set(identifier_words(text).split())


def is_code_question(query: str) -> bool:
    """Whether a question asks about code: it names an identifier or asks where something is implemented."""
    return bool(identifiers(query)) or IMPLEMENTATION_INTENT.search(query) is not None


DEFAULT_TEST_PATHS = ("tests/*", "test/*", "*/tests/*", "*/test/*", "test_*", "*/test_*", "*_test.*", "*.test.*",
                      "*.spec.*", "conftest.py", "*/conftest.py")


@dataclass(frozen=True)
class ChunkMeta:
    """What a prior or the diversity pass needs of a candidate, read in one query."""

    document_id: int
    ordinal: int
    path: str
    symbol: str
    line_cited: bool  # the ingester cites it by line numbers (code, plain text), not by heading or page


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

    @property
    def active(self) -> bool:
        return bool(self.source or self.symbol)

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
