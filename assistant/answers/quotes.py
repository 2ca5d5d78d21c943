"""The sources' own words under an answer: for each claim the check found a source saying (or saying the
opposite of), that source's span, when it says more than the claim does.

A small model answers in its own words and drops what it did not think asked for: "You have 60 days to pick a
health insurance plan before you'd have to wait until the annual enrollment period [1]" where the source says
"within 60 days of their start date and prior to October 1" and calls that period "Open Season". The check
already found the span of the source that each claim stands on (`support.Support.char_start`/`char_end`);
quoting it under the answer shows the reader the condition, the exact name, or the sentence that says
otherwise ("GSA IT does not provide wireless peripherals" under an answer that says it does, from the source
it cites or another one shown), without asking the model for anything more. A span whose words the claim
already states is not quoted: the answer says it.

The block is plain Markdown appended to the answer (`quote_block`), so that every door shows it: the page,
`/v1` (content), MCP and the CLI. `without_quotes` takes it off again where an answer is read back as
conversation history: the model is not to copy the block's shape, and its tokens are better spent on sources.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assistant.answers.support import AnswerCheck, Support, opposed
from assistant.answers.text_units import LIST_ITEM, units

MAX_QUOTES = 3
MAX_QUOTE_CHARS = 320
SAID_SHARE = 0.95  # a span of which the claim states at least this share of the units is not quoted
HEADING = {"en": "From the sources:", "zh": "资料原文："}
OTHERWISE = {"en": "says otherwise", "zh": "说法与此不同"}  # after the marker of a quote that says the opposite
BLOCK = re.compile(r"\n\n(?:" + "|".join(map(re.escape, HEADING.values())) + r")\n(?:>[^\n]*(?:\n|$))+\s*$")


@dataclass(frozen=True)
class Quote:
    n: int  # the source's number in the prompt
    text: str
    start: int  # the span's offsets in the source's text
    end: int
    contradicts: bool  # the claim says the opposite of it


def _tidy(span: str) -> str:
    """A span as one quoted line: list markers and runs of white space folded, cut at a sentence end (else a
    word) when longer than MAX_QUOTE_CHARS."""
    lines = [LIST_ITEM.sub("", line).strip() for line in span.splitlines()]
    text = " ".join(line for line in lines if line)
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= MAX_QUOTE_CHARS:
        return text
    cut = text[:MAX_QUOTE_CHARS]
    end = max(cut.rfind(". "), cut.rfind("。"), cut.rfind("; "))
    return cut[:end + 1] if end >= MAX_QUOTE_CHARS // 2 else cut.rsplit(" ", 1)[0] + " …"


def _best(supports: dict[int, Support]) -> tuple[int, Support] | None:
    """The cited source a claim stands on (or is contradicted by): the highest score among those that hold a span."""
    held = [(n, s) for n, s in supports.items() if (s.supported or s.contradicted) and s.char_start >= 0]
    return max(held, key=lambda item: (item[1].contradicted, item[1].score, -item[0]), default=None)


def quotes(check: AnswerCheck, sources: dict[int, str], places: dict[int, str] | None = None) -> list[Quote]:
    """At most MAX_QUOTES spans, in the answer's order: per claim, the cited source's span it stands on unless the
    claim already says it, and a shown source's span that says the opposite; none twice."""
    places = places or {}
    out: list[Quote] = []
    for sentence in check.sentences:
        if not sentence.claim:
            continue
        claim = sentence.sentence.text
        for found in (_best(sentence.supports), opposed(claim, set(sentence.supports), sources, places)):
            if found is None or len(out) == MAX_QUOTES:
                continue
            n, support_ = found
            span = sources.get(n, "")[support_.char_start:support_.char_end]
            span_units = set(units(span))
            if not span_units:
                continue
            said = len(span_units & set(units(claim))) / len(span_units)
            if said >= SAID_SHARE and not support_.contradicted:
                continue  # the claim says it
            if any(q.n == n and q.start < support_.char_end and support_.char_start < q.end for q in out):
                continue  # the same words of the same source, quoted already
            out.append(Quote(n, _tidy(span), support_.char_start, support_.char_end, support_.contradicted))
    return out


def quote_block(found: list[Quote], language: str) -> str:
    """The quotes as Markdown to append to an answer ("" when none): a heading, then one quoted line each,
    ending with the source's marker so that the reader sees (and the page links) where it is from, and saying
    so when the source says the opposite of the answer."""
    if not found:
        return ""
    lang = language if language in HEADING else "en"
    lines = [f"> “{q.text}” [{q.n}]" + (f" — {OTHERWISE[lang]}" if q.contradicts else "") for q in found]
    return f"\n\n{HEADING[lang]}\n" + "\n>\n".join(lines)


def without_quotes(answer: str) -> str:
    """An answer without its quote block, as the model wrote it (with its checked markers)."""
    return BLOCK.sub("", answer)


def quote_tail(answer: str) -> str:
    """The quote block an answer ends with ("" when none): what a stream sends after the model's text."""
    m = BLOCK.search(answer)
    return answer[m.start():] if m else ""
