"""Words of a question that the documents never use: the sign that they cannot answer it.

Small models answer every question from the sources they are shown, whatever those are about: asked
for the Sydney office's Wi-Fi password they give one, asked for a tuition allowance they quote a
contractor's hourly rate, and the answer check passes it, since the source does say that. A question
names its subject, though, and when a word of it is in none of the sources the prompt holds and in
almost no passage of the collections asked (at most RARE_SHARE of them), the documents are about
something else: the answer is then the statement that they do not contain it, naming the words, with
no model asked. A misspelt word is reported the same way, which tells the reader what to fix.

Only Latin-script words are weighed (an English question, or the English terms of a Chinese one):
a Chinese question has no spaces between its words, and a pair of its characters that occurs nowhere (one
across two words, "么命" of "怎么命名", or a word cut otherwise than the documents cut it) says nothing.
Numbers are not weighed: a number the documents lack is a wrong detail, which the answer check after
generation judges.

A question that names an identifier the sources hold (`stream_with_context`, `Blueprint.register`) is
about that symbol, whatever other words it uses: code rarely says "alive", "turns" or "refuses", which
such a question may. It is not stopped.

A collection of fewer than MIN_PASSAGES passages is too small for a word's absence to say anything:
over a four-page handbook "How early must flights be booked?" lacks "early" and is answered by "Book
flights at least 14 days before departure". The rule weighs no word there.

RARE_SHARE was chosen on the tune halves of the answer sets (tests/fixtures/eval/*-questions.jsonl): of
their unanswerable questions it stops 7 of 8 about the handbook and 2 of 2 about Flask, and none of the
29 answerable English ones.
"""

from __future__ import annotations

import re
from typing import Callable

from assistant.answers.statements import NOT_IN_DOCUMENTS
from assistant.answers.text_units import LATIN_LETTER, TOKEN, normalise, units

INNER_CAPITAL = re.compile(r"[a-z][A-Z]")
RARE_SHARE = 0.002  # 4 passages of the handbook's 2,466; none of a collection under 500
MIN_PASSAGES = 1000  # the handbook's 2,466 and Flask's 2,341 are weighed; a folder of a few documents is not

NONE_MENTIONS = {
    "en": "None of them mentions {words}.",
    "zh": "没有文档提到{words}。",
}

# (words, share) -> (passages, {word: passages holding it, counted until the count exceeds share of them})
Counter = Callable[[list[str], float], tuple[int, dict[str, int]]]


def question_words(question: str) -> dict[str, frozenset[str]]:
    """The question's Latin-script words (as written, possessive dropped), each with its content units;
    stop words, numbers and CJK left out."""
    out: dict[str, frozenset[str]] = {}
    for m in TOKEN.finditer(question):
        word = m.group("word")
        if not word or not LATIN_LETTER.search(word):
            continue
        word = re.sub(r"['’]s$", "", word)
        found = frozenset(u for u in units(word) if not u[0].isdigit())
        if found and normalise(word) not in {normalise(w) for w in out}:
            out[word] = found
    return out


def is_identifier(word: str) -> bool:
    """A name from code: snake_case, dotted (`Blueprint.register`) or with a capital inside a word
    (`stream_with_context`, `DispatchingJinjaLoader`, `GitHub`)."""
    bare = word.strip("_")
    return "_" in bare or "." in bare or bool(INNER_CAPITAL.search(bare))


def unmatched_words(question: str, shown: list[str]) -> list[str]:
    """The question's words of which no unit occurs in the texts shown (the sources and their places);
    none when the question names an identifier that they hold: it asks about that symbol, in words its
    code need not use ("...keeps the request context alive")."""
    held = {u for text in shown for u in units(text)}
    words = question_words(question)
    if any(is_identifier(w) and us & held for w, us in words.items()):
        return []
    return [w for w, us in words.items() if not us & held]


def absent_words(question: str, shown: list[str], count: Counter) -> list[str]:
    """The question's words that the sources shown lack and that at most RARE_SHARE of the collections'
    passages hold, as `count` finds them in the collections asked; none when those hold fewer than
    MIN_PASSAGES passages."""
    missing = unmatched_words(question, shown)
    if not missing:
        return []
    passages, held = count([w.lower() for w in missing], RARE_SHARE)
    if passages < MIN_PASSAGES:
        return []
    limit = int(RARE_SHARE * passages)
    return [w for w in missing if held.get(w.lower(), 0) <= limit]


def not_in_documents(language: str, words: list[str]) -> str:
    """The abstention, naming the words no document uses."""
    quoted = "、".join(f"“{w}”" for w in words) if language == "zh" else ", ".join(f"“{w}”" for w in words)
    gap = "" if language == "zh" else " "
    return f"{NOT_IN_DOCUMENTS[language]}{gap}{NONE_MENTIONS[language].format(words=quoted)}"
