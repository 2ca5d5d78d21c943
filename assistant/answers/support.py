"""Whether an answer's citations are supported by the sources they cite: pure, deterministic, no model.

An answer is split into sentences (`split_sentences`); a citation marker right after a sentence's end
punctuation ("Foo is 3. [1]") belongs to that sentence. Each cited source is scored against the sentence
with `support()`:

1. Normalise both texts: NFKC, casefold, citation markers removed, number words as digits (English
   up to twenty and the tens, Chinese below 100: "three days" = "3 days", "十三天" = "13 天").
2. Cut them into content units. Latin-script text: words without a small stop-word list, lightly
   stemmed (plural `s`/`es`/`ies`, `ing`, `ed`, a final `e`), identifiers kept whole (`send_file`) and
   also as their words (`send`, `file`). In a source (not in the claim), a CamelCase name holds its
   words too (`HTTPException` holds `http` and `exception`), and two adjacent words of either text that
   the other writes as one are found ("the debug helpers" in `debughelpers.py`, "file name" and
   "filename"). "one" reads as 1 but, a pronoun as often as a count, is no key unit (3.).
   CJK text: the character bigrams inside each word of a run of CJK characters (words as jieba's
   dictionary cuts them, `rjieba`; one-character words taken together), cut at common function
   characters (的, 是, 了, ...); a lone character is a unit of its own. A pair across two words ("店每"
   of "酒店每晚") is in no paraphrase. Numbers are kept exactly ("13",
   "3.5", "1,000" = "1000").
3. Key units are the claim's numbers and names (a word with a capital letter inside the sentence, a
   digit, an underscore or a dot inside it: `Werkzeug`, `SECRET_KEY`, `app.run`; a file name counts by
   its name, not its extension: `ctx.py` is `ctx`).
4. The source is cut into segments (its lines, and its sentences within lines); a window is 1–3
   adjacent segments, grown further while it holds at most WINDOW_UNITS content units (short code
   lines).
   For each window: score = (share of the claim's units found in the window)
   × (share of its key units found in the window, 1 when it has none); a name counts as found in
   every window when the source holds it anywhere (a chunk names its subject once), and so does each
   unit of the source's place as the prompt showed it (`prompts.source_place`: title, path, lines or
   page, section, symbol), with the words that say where a thing is (PLACE_WORDS: file, line, page,
   section, defined, implemented, located): "copy_current_request_context is implemented in
   src/flask/ctx.py, lines 155-193" is read from the place, not from the code (the place's numbers
   only for a claim that speaks of lines or a page: "12 weeks" is not line 12). A file the claim names
   counts only when it is the source's own ("...in app.py" against a chunk of ctx.py whose code says
   `current_app` is not found). A wrong number or name therefore sinks a claim that otherwise reuses
   the source's words ("15 vacation days" against "13 days"). A name the key units cannot see (first in the
   claim's sentence: "Pay processes new badges" against "GSA processes new badges") is found by aligning the
   claim with the source's sentence most like it (`name_swaps.swapped_name`); so is a number put in place of
   another that the sentence states elsewhere (`swapped_number`, contradicted), and so is a number of the
   source said with the words of another of its numbers (`moved_number`: "单实例吞吐 3,400 tokens/s" where
   the source's 3,400 is the whole machine's, contradicted). With the question known
   (`check_answer`), the words of it that no source shown holds (the asker's own) are left out of a claim's
   units, names and numbers kept (but for the names the asker introduces, `asked.own_names`: "my `logout_user`
   view", "/api/v2/orders"), when at least half of its units remain: an answer that repeats the question is
   judged on what it adds.
5. The best window (highest score, then most units found, then the shortest, then the first) is
   the supporting span (-1, -1 when no unit is found anywhere); the claim is supported when the score
   is at least SUPPORT_THRESHOLD, chosen on the hand-labelled pairs of
   tests/fixtures/eval/support-labels.jsonl (split `dev`; the `held_out` pairs were labelled after)
   where `python -m evals.support_agreement [LABELS]` prints the agreement at that threshold and
   at others.

A sentence is a claim when it has at least MIN_CLAIM_UNITS content units (or states a number: small
models answer "[1] 15"), is not a question and does not abstain. `abstained()` recognises English and Chinese ways of saying the documents do not hold the
answer.

`attribution.attribute()` runs before the check: a claim citing nothing, or only sources that do not
support it, is given the source that supports it best.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from assistant.answers.asked import asks_open, asks_quantity, off_topic, own_names, states_quantity, unknown_names
from assistant.answers.citations import MARKER
from assistant.answers.name_swaps import moved_number, swapped_name, swapped_number
from assistant.answers.statements import NO_ANSWER, NOT_IN_DOCUMENTS, abstained, is_claim
from assistant.answers.text_units import (
    CJK_CHAR, LIST_ITEM, PLACE_WORDS, Sentence, clauses, file_keys, held_words, joined, key_units,
    language_of, segments, split_sentences, units,
)
from assistant.answers.polarity import contradicts

__all__ = ["NO_ANSWER", "NOT_IN_DOCUMENTS", "SUPPORT_THRESHOLD", "AnswerCheck", "Support", "abstained",
           "check_answer", "key_units", "language_of", "split_sentences", "support", "units"]

SUPPORT_THRESHOLD = 0.6
WINDOW_SEGMENTS = 3
WINDOW_UNITS = 24

@dataclass(frozen=True)
class Support:
    """How much of a claim's content one source text holds, and where (-1, -1 when nowhere)."""

    score: float
    supported: bool
    char_start: int
    char_end: int
    contradicted: bool = False  # the span holds the claim's words with the opposite polarity


@dataclass(frozen=True)
class SentenceCheck:
    sentence: Sentence
    claim: bool  # it states something that needs a source
    supports: dict[int, Support]  # per cited number
    supported: bool | None  # None when it cites nothing


@dataclass(frozen=True)
class AnswerCheck:
    sentences: list[SentenceCheck]
    citation_precision: float | None  # supported citations / citations (None when none)
    citation_coverage: float | None  # claims that cite something / claims (None when no claims)
    abstained: bool  # the answer says the documents do not contain it
    unsupported: bool  # it makes claims and none of them is supported by any source shown
    off_topic: bool = False  # neither the answer nor what it cites speaks of what the question asks
    unknown_names: list[str] = field(default_factory=list)  # names the question and the answer's first claim share
    # that no source shown holds: the answer speaks of something the documents never mention
    contradicted: bool = False  # a claim says the opposite of a source shown (cited or not) that holds its words
    no_quantity: bool = False  # the question asks how many or how much and no claim states an amount

    def best_supports(self) -> dict[int, Support]:
        """Per cited number, the support of the best-scoring sentence that cites it (the first on ties)."""
        best: dict[int, Support] = {}
        for check in self.sentences:
            for n, s in check.supports.items():
                if n not in best or s.score > best[n].score:
                    best[n] = s
        return best

    def to_dict(self) -> dict:
        """The check as the `done` event carries it (a sentence's score: its best citation's)."""
        return {
            "sentences": [
                {
                    "start": c.sentence.start,
                    "end": c.sentence.end,
                    "cited": list(c.sentence.cited),
                    "claim": c.claim,
                    "supported": c.supported,
                    "score": max(s.score for s in c.supports.values()) if c.supports else None,
                }
                for c in self.sentences
            ],
            "citation_precision": self.citation_precision,
            "citation_coverage": self.citation_coverage,
            "abstained": self.abstained,
            "unsupported": self.unsupported,
            "off_topic": self.off_topic,
            "contradicted": self.contradicted,
            "unknown_names": self.unknown_names,
            "no_quantity": self.no_quantity,
        }


@lru_cache(maxsize=256)
def _segments(source: str) -> tuple[tuple[int, int], ...]:
    return tuple(segments(source))


@lru_cache(maxsize=256)
def _segment_units(source: str) -> tuple[tuple[str, ...], ...]:
    """The units of each segment, read once per source: an answer's every claim is scored against it."""
    return tuple(units(source[s:e]) for s, e in _segments(source))


@lru_cache(maxsize=1024)
def _findable(text: str) -> frozenset[str]:
    """What a claim's units are looked for in: `held_words`, and adjacent pairs written as one (`debughelper`)."""
    return frozenset(held_words(text)) | frozenset(joined(units(text)))


@lru_cache(maxsize=256)
def _segment_words(source: str) -> tuple[frozenset[str], ...]:
    """`_findable` of each segment, read once per source: an answer's every claim is scored against it."""
    return tuple(_findable(source[s:e]) for s, e in _segments(source))


def _held(claim_units: frozenset[str], compounds: dict[str, tuple[str, str]], held: frozenset[str]) -> set[str]:
    """The claim's units a text holds: as they are, two of them as one word there ("the debug helpers" where the
    code writes `debughelpers`), or one of them as two words there (`held` has the pairs joined)."""
    found = set(claim_units & held)
    for compound, pair in compounds.items():
        if compound in held:
            found.update(claim_units.intersection(pair))
    return found


# --- support -----------------------------------------------------------------------------------


def _score(claim_units: frozenset[str], keys: frozenset[str], window: set[str]) -> tuple[float, float]:
    """(score, share of units found): the second picks the span when a missing key unit zeroes the first."""
    found = len(claim_units & window) / len(claim_units)
    key_share = len(keys & window) / len(keys) if keys else 1.0
    return found * key_share, found


def support(claim: str, source_text: str, place: str = "", asked: frozenset[str] = frozenset(),
            own: frozenset[str] = frozenset()) -> Support:
    """How well source_text, shown under `place`, supports claim, and the window of the text that does
    (see the module docstring). `asked`: the asker's own words (`asker_words`); a claim that repeats them is
    judged on the rest. `own`: the names the asker introduces (`asked.own_names`: "my `logout_user` view",
    "/api/v2/orders"), which a claim may repeat as it repeats the asker's words, names though they are."""
    return _support(claim, source_text, place, asked, own)  # one cache key however the caller passes them


@lru_cache(maxsize=512)  # one answer scores a claim against a source in attribute, the check and its quotes
def _support(claim: str, source_text: str, place: str, asked: frozenset[str], own: frozenset[str]) -> Support:
    claim = LIST_ITEM.sub("", claim)
    claim_units = frozenset(units(claim))
    if not claim_units or not source_text.strip():
        return Support(0.0, False, -1, -1)
    keys = (key_units(claim) & claim_units) - own
    claim_units = _without_asker_words(claim_units, keys, asked | own)
    segs = _segments(source_text)
    # Only the claim's units matter in a segment: small sets keep the window loop cheap.
    all_units = _segment_units(source_text)
    compounds = joined(units(claim))
    seg_units = [_held(claim_units, compounds, u) for u in _segment_words(source_text)]
    # A name the source holds anywhere counts in every window: a chunk names its subject once
    # (`def send_file(`), its sentences then speak of it without repeating it.
    names = {k for k in keys if not k[0].isdigit() and any(k in u for u in seg_units)}
    elsewhere: set[str] = set()  # files the claim names that are not this source's file
    if place.strip():
        place_units = _held(claim_units, compounds, _findable(place))
        if not claim_units & {"line", "page"}:  # a place's numbers are its lines or page: only such a claim uses them
            place_units = {u for u in place_units if not u[0].isdigit()}
        names |= place_units | (claim_units & PLACE_WORDS)
        elsewhere = set(file_keys(claim) & claim_units) - place_units
    best_span, best_segs = (-1, -1), (0, -1)
    best_key: tuple[float, float, int, int] = (0.0, 0.0, 0, 0)  # score, units found, then shorter, earlier
    for i in range(len(segs)):
        window: set[str] = set()
        size = 0
        for j in range(i, len(segs)):
            length = segs[j][1] - segs[i][0]
            size += len(all_units[j])
            if j - i >= WINDOW_SEGMENTS and size > WINDOW_UNITS:
                break
            window |= seg_units[j]
            score, found = _score(claim_units, keys, (window | names) - elsewhere)
            key = (score, found, -length, -segs[i][0])
            if found > 0 and key > best_key:
                best_key, best_span, best_segs = key, (segs[i][0], segs[j][1]), (i, j)
    score = round(best_key[0], 4)
    if score < SUPPORT_THRESHOLD:
        return Support(score, False, best_span[0], best_span[1])
    first, last = best_segs
    window = set().union(*seg_units[first:last + 1]) | names
    numbers = {k for k in keys if k[0].isdigit()}
    if numbers - window or (keys - numbers) - window:
        # A number the window does not state, or a name the source never uses: another fact, not this one
        # ("15 days" against "13 days", "Okta" against a page about Login.gov). Contradicted when the
        # window states another number in its place.
        other = any(u[0].isdigit() for k in range(first, last + 1) for u in all_units[k]) and bool(numbers - window)
        return Support(min(score, SUPPORT_THRESHOLD / 2), False, best_span[0], best_span[1], contradicted=other)
    if contradicts(claim, source_text, segs, best_segs):
        return Support(0.0, False, best_span[0], best_span[1], contradicted=True)
    # Against the source's sentence most like the claim: the window may be a neighbour that holds its names.
    main = max(range(len(segs)), key=lambda k: (len(seg_units[k]), -k))
    if swapped_name(claim, source_text[segs[main][0]:segs[main][1]]):
        return Support(min(score, SUPPORT_THRESHOLD / 2), False, best_span[0], best_span[1])
    if swapped_number(claim, source_text[segs[main][0]:segs[main][1]]) or moved_number(claim, source_text):
        return Support(min(score, SUPPORT_THRESHOLD / 2), False, best_span[0], best_span[1], contradicted=True)
    return Support(score, True, best_span[0], best_span[1])


def unheld_units(question: str, sources: dict[int, str], places: dict[int, str]) -> frozenset[str]:
    """The units of the question that no source shown holds, in its text or its place."""
    held = set().union(*(held_words(t) for t in sources.values()), *(held_words(p) for p in places.values()))
    return frozenset(set(units(question)) - held)


def asker_words(unheld: frozenset[str]) -> frozenset[str]:
    """The asker's own words among the question's `unheld_units` ("pick a plan", "the annual enrollment period" for
    a page that says "enroll" and "Open Season"): an answer that repeats the question in them states nothing a
    source could hold there. Words, not CJK units: in Chinese a name is not told by its writing, and "食堂" (the
    canteen) missing from every source is what makes "食堂午餐每餐补贴 150 元" an invention (but for the phrase the
    asker calls theirs, `asked.own_names`)."""
    return frozenset(u for u in unheld if not CJK_CHAR.search(u))


def askers(question: str, sources: dict[int, str], places: dict[int, str]) -> tuple[frozenset[str], frozenset[str]]:
    """The asker's words and the names the asker introduces (`asked.own_names`), which no source shown holds."""
    unheld = unheld_units(question, sources, places) if question else frozenset()
    return asker_words(unheld), own_names(question, unheld)


def _without_asker_words(claim_units: frozenset[str], keys: frozenset[str], asked: frozenset[str]) -> frozenset[str]:
    """The claim's units less the asker's words it repeats, names and numbers kept (a name no source holds is
    another thing, whoever said it first), when at least half of its units remain: a claim made mostly of the
    question's words is judged on all of them."""
    rest = claim_units - (asked - keys)
    return rest if len(rest) * 2 >= len(claim_units) else claim_units


# --- a whole answer ----------------------------------------------------------------------------


def check_answer(answer: str, sources: dict[int, str], places: dict[int, str] | None = None,
                 question: str = "", sentences: list[Sentence] | None = None) -> AnswerCheck:
    """Every sentence of answer checked against the sources it cites (number -> source text, and the
    place the prompt showed it under).

    A citation of a number missing from `sources` counts as unsupported. `unsupported` is true when
    the answer makes claims and none of them is supported by a source shown: by one it cites, or, for
    a claim that cites nothing, by any of them (a model that forgets its markers is not wrong for it).
    """
    places = places or {}
    asked, own = askers(question, sources, places)
    scene = frozenset(units(question)) if asks_open(question) else frozenset()
    checks: list[SentenceCheck] = []
    citations = supported_citations = 0
    any_supported = False
    sentences = split_sentences(answer) if sentences is None else sentences  # given: split already (attribute)
    for sentence in sentences:
        claim = is_claim(sentence.text)
        supports: dict[int, Support] = {}
        for n in sentence.cited:
            text = sources.get(n)
            supports[n] = (support(sentence.text, text, places.get(n, ""), asked, own) if text
                           else Support(0.0, False, -1, -1))
        ok = any(s.supported for s in supports.values()) if supports else None
        by_clause = (clause_supports(sentence.text, sentence.cited, sources, places, asked, own, scene)
                     if claim and ok is False else None)
        if by_clause:
            supports, ok = by_clause, True
        if claim:
            citations += len(supports)
            supported_citations += sum(s.supported for s in supports.values())
            any_supported = any_supported or bool(ok) or (
                ok is None and any(support(sentence.text, t, places.get(m, ""), asked, own).supported
                                   for m, t in sources.items() if t)
            )
        checks.append(SentenceCheck(sentence, claim, supports, ok))
    claims = [c for c in checks if c.claim]
    said = abstained(answer, sentences)
    cited = {n for c in claims for n in c.sentence.cited}
    backing = _backing(claims[0], cited, sources, places, asked, own) if claims and not said and question else None
    return AnswerCheck(
        sentences=checks,
        citation_precision=round(supported_citations / citations, 4) if citations else None,
        citation_coverage=round(sum(bool(c.sentence.cited) for c in claims) / len(claims), 4) if claims else None,
        abstained=said,
        unsupported=bool(claims) and not any_supported,
        off_topic=bool(claims) and not said and off_topic(question, answer, [sources.get(n, "") + "\n" + places.get(n, "")
                                                                          for n in cited or sources]),
        contradicted=any(s.contradicted for c in claims for s in c.supports.values())
        or any(opposed(c.sentence.text, set(c.supports), sources, places) for c in claims),
        unknown_names=unknown_names(question, claims[0].sentence.text,
                                    [sources.get(n, "") + "\n" + places.get(n, "") for n in backing], own)
        if backing is not None else [],
        no_quantity=bool(claims) and not said and asks_quantity(question) and not states_quantity([c.sentence.text for c in claims]),
    )


def opposed(claim: str, cited: set[int], sources: dict[int, str], places: dict[int, str]) -> tuple[int, Support] | None:
    """A source shown and not cited that says the opposite of the claim (the first): pages of one collection
    disagree ("GSA can provide a wireless keyboard" on one, "GSA IT does not provide wireless peripherals" on
    another), and the reader should see both; a claim that cites nothing is opposed by any source shown."""
    for n, text in sorted(sources.items()):
        if n not in cited and text and (s := support(claim, text, places.get(n, ""))).contradicted and s.char_start >= 0:
            return n, s
    return None


def _backing(claim: SentenceCheck, cited: set[int], sources: dict[int, str], places: dict[int, str],
             asked: frozenset[str], own: frozenset[str]) -> set[int]:
    """The sources a claim stands on, for its names: those the answer cites, and, when this claim cites none, those
    that support it (a model that forgets a marker is not wrong for it); all sources shown when neither."""
    if claim.sentence.cited:
        return cited
    supporting = {n for n, t in sources.items()
                  if t and support(claim.sentence.text, t, places.get(n, ""), asked, own).supported}
    return (cited | supporting) or set(sources)


def clause_supports(text: str, cited: list[int], sources: dict[int, str],
                    places: dict[int, str], asked: frozenset[str] = frozenset(),
                    own: frozenset[str] = frozenset(), scene: frozenset[str] = frozenset()) -> dict[int, Support] | None:
    """A sentence that joins facts of several places ("vLLM is 0.4.0.post1 [1], the driver 525.147.05 [2]"),
    judged clause by clause: supported when each clause that states something is supported by one of the
    sources the sentence cites (its own markers first); per source, the best support of a clause (None when
    some clause is not supported, or the sentence has a single clause). A clause made only of `scene`'s units
    (an open question's, `asked.asks_open`) states nothing: "在3月份那次72b多机推理全挂了，最后查出来是…NCCL_IB_HCA…"
    retells the asker's story before its answer, which is judged alone."""
    parts = [c for c in clauses(text) if is_claim(c)]
    if len(parts) < 2:
        return None
    parts = [c for c in parts if not set(units(MARKER.sub("", c))) <= scene]
    if not parts:
        return None
    # The clauses that cite or state a number carry the facts; the rest set the scene ("On the V100s, ...").
    parts = [c for c in parts if MARKER.search(c) or any(u[0].isdigit() for u in key_units(c))] or parts
    best: dict[int, Support] = {}
    for part in parts:
        marked = [n for n in cited if f"[{n}]" in part.replace(" ", "")] or cited
        found = {n: support(part, sources[n], places.get(n, ""), asked, own) for n in marked if sources.get(n)}
        if not any(s.supported for s in found.values()):
            return None
        for n, s in found.items():
            if n not in best or s.score > best[n].score:
                best[n] = s
    return {n: best.get(n, Support(0.0, False, -1, -1)) for n in cited}
