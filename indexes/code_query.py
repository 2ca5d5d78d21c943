"""Questions about code: identifiers matched whole and by their parts, and a prior for source files.

A question naming `make_response`, `SESSION_COOKIE_NAME` or `FlaskGroup` wants the place that defines
it. The full-text index splits such names into words (`make`, `response`; `FlaskGroup` stays one
word), so the BM25 query keeps the whole name (a phrase for snake_case, the word itself for CamelCase)
and adds its parts, which match the split names in symbols, paths and prose.

"Where is … implemented" questions (or any question naming an identifier) are answered best by
source files, yet documentation and tests repeat the same names in more words. `PathPrior` adds a
measured bonus to the fused score of chunks that the ingester cited by line (source code and plain
text files) outside test paths, and to chunks whose symbol is one of the question's identifiers.
The test paths are globs in the settings, not a list of files. Measured on 30 questions about Flask
3.1.3 (sdist: src, docs, tests): the bonus on every question beat the bonus on code questions only
(hit@1 0.87 against 0.73 at 0.3), since "how does X work" asks about code as often as "where is X".
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Literal

from indexes.lexical import identifier_words

# snake_case / SCREAMING_CASE (an inner underscore), CamelCase / camelCase (a lower-case letter
# followed by an upper-case one that starts a word: not `mRNA`), dotted names (`app.config`)
_SNAKE = re.compile(r"\b[A-Za-z_][A-Za-z0-9]*_[A-Za-z0-9_]*[A-Za-z0-9]\b")
_CAMEL = re.compile(r"\b[A-Za-z][a-z0-9]*[a-z0-9][A-Z][a-z][A-Za-z0-9]*\b")
_DOTTED = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b")
_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\(\)")

# Phrases of a question that asks where something lives in a codebase (English and Chinese).
IMPLEMENTATION_INTENT = re.compile(
    r"\b(where (is|are|does|do)|implement(ed|s|ation)?|defin(ed|es|ition)|which (function|class|method|module|file)"
    r"|source code|in the code)\b|在哪|哪个文件|哪个函数|实现|定义",
    re.IGNORECASE,
)


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


def expand_terms(terms: list[str], query: str) -> list[str]:
    """BM25 terms with each identifier kept whole and its parts added after the question's own words."""
    names = identifiers(query)
    if not names:
        return terms
    out = list(terms)
    for name in names:  # the whole name: dotted names by their last part, which is what a chunk defines
        whole = name.rsplit(".", 1)[-1].lower()
        if whole not in out:
            out.append(whole)
    for w in identifier_parts(names):
        if w not in out:
            out.append(w)
    return out[:64]


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
    symbol: float = 0.0  # a chunk whose symbol is one of the question's identifiers
    test_paths: tuple[str, ...] = field(default=DEFAULT_TEST_PATHS)
    scope: Literal["all", "code-questions"] = "all"  # which questions the source bonus applies to

    @property
    def active(self) -> bool:
        return bool(self.source or self.symbol)

    def is_test(self, path: str) -> bool:
        return any(fnmatch.fnmatchcase(path, pattern) for pattern in self.test_paths)

    def apply(self, query: str, scores: dict[int, float], meta: dict[int, ChunkMeta]) -> dict[int, float]:
        """Scores with the bonuses added. The source bonus goes to every question (scope "all": in a
        collection without code nothing is line-cited, so nothing changes) or only to code questions."""
        if not self.active:
            return scores
        source = self.source if self.scope == "all" or is_code_question(query) else 0.0
        names = {n.rsplit(".", 1)[-1].lower() for n in identifiers(query)}
        out = dict(scores)
        for cid, m in meta.items():
            if cid not in out:
                continue
            if source and m.line_cited and not self.is_test(m.path):
                out[cid] += self.source
            if self.symbol and names and m.symbol and m.symbol.rsplit(".", 1)[-1].lower() in names:
                out[cid] += self.symbol
        return out
