"""What is read from a question about a codebase: the identifiers it names and the text it quotes, and
what it asks for, read from its form: where something is implemented, how the user does something, or how
the system behaves.

A question naming `make_response`, `SESSION_COOKIE_NAME` or `FlaskGroup` wants the place that defines
it. The full-text index splits such names into words (`make`, `response`; `FlaskGroup` stays one
word), so the BM25 query keeps the whole name (a phrase for snake_case, the word itself for CamelCase)
and adds its parts, which match the split names in symbols, paths and prose. Text the question
quotes (a pasted error message) is searched as phrases, each run of words between its punctuation:
derived error-message questions, report split, hit@1 0.831 -> 0.890 (tune split 0.967 either way).

The form:

- implementation: "Where is …", "which function …", "… implemented / defined": the symbol's file.
- usage: the asker is the one acting, in the clause that opens a sentence: "How do I …", "How can we
  …", "If I register …, which …", "What should I …": the page written for users explains it, and
  source files only show it in pieces.
- behaviour: the rest ("What happens if my view returns …", "How does the CLI find …", "Why does
  app.run() do nothing …"): the system is the subject, and the code that does it answers as often as
  its page.

Only the form is read, never the words of a particular library, so the same rule holds in any
codebase; which kind of text then ranks first still depends on how well each matches (`PathPrior`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from indexes.lexical.fts5 import identifier_words

Form = Literal["implementation", "usage", "behaviour"]

# Phrases of a question that asks where something lives in a codebase (English and Chinese).
IMPLEMENTATION_INTENT = re.compile(
    r"\b(where (is|are|does|do)|implement(ed|s|ation)?|defin(ed|es|ition)|which (function|class|method|module|file)"
    r"|source code|in the code)\b|在哪|哪个文件|哪个函数|实现|定义",
    re.IGNORECASE,
)

# A sentence that opens with the asker acting: how/what/if/when + (modal) + I/we/you, or "how to".
_USAGE = re.compile(
    r"^(?:(?:so|and|but|also|then),?\s+)?"
    r"(?:how\s+to\b|how\s+(?:do|can|could|should|would|must|might|may)\s+(?:i|we|you)\b"
    r"|what\s+(?:should|must|can|do)\s+(?:i|we|you)\b"
    r"|(?:if|when|once|after|before)\s+(?:i|we|you)\b"
    r"|(?:can|should|must|do)\s+(?:i|we|you)\b)"
    r"|^(?:我|我们)?(?:怎么|如何|怎样)",
    re.IGNORECASE,
)
_SENTENCES = re.compile(r"(?<=[.!?。！？])\s*")


def sentences_of(question: str) -> list[str]:
    return [s.strip() for s in _SENTENCES.split(question) if s.strip()]


@lru_cache(maxsize=256)
def question_form(question: str) -> Form:
    """The form of a question: implementation when it asks where something lives, else usage when one
    of its sentences opens with the asker acting, else behaviour. Read once per question: the source
    bonus and the reordering by kind both ask."""
    if IMPLEMENTATION_INTENT.search(question):
        return "implementation"
    if any(_USAGE.match(s) for s in sentences_of(question)):
        return "usage"
    return "behaviour"


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


# A question whose verb has the identifier for its subject: "which one does render_template load",
# "what status code does flask.redirect() send", "why does the app.run() call do nothing". The question
# word opens a clause and at most four words (the thing asked for) stand before the auxiliary.
_SUBJECT = (r"\b(?:what|which|how|why|when|whom?)\b(?:\s+[\w'-]+){{0,4}}?\s+"
            r"(?:does|do|did|will|would|can|could|should|might|must)\s+(?:(?:the|my|our|a|an)\s+)?"
            r"`?{name}(?:\(\))?`?\s+\w")


def subject_identifiers(query: str) -> list[str]:
    """The identifiers that are the subject of the question's verb: the question asks what that name does,
    which its definition (the code that does it) says first; a name that is only mentioned is not one."""
    return [name for name in identifiers(query)
            if re.search(_SUBJECT.format(name=re.escape(name)), query, re.IGNORECASE)]


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
