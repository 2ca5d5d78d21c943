"""Whether an answer's citations are supported by the sources they cite: pure, deterministic, no model.

An answer is split into sentences (`split_sentences`); a citation marker right after a sentence's end
punctuation ("Foo is 3. [1]") belongs to that sentence. Each cited source is scored against the sentence
with `support()`:

1. Normalise both texts: NFKC, casefold, citation markers removed, number words as digits (English
   up to twenty and the tens, Chinese below 100: "three days" = "3 days", "十三天" = "13 天").
2. Cut them into content units. Latin-script text: words without a small stop-word list, lightly
   stemmed (plural `s`/`es`/`ies`, `ing`, `ed`, a final `e`), identifiers kept whole (`send_file`).
   CJK text: character bigrams of each run of CJK characters, runs cut at common function characters
   (的, 是, 了, ...); a run of one character is a unit of its own. Numbers are kept exactly ("13",
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
   the source's words ("15 vacation days" against "13 days").
5. The best window (highest score, then most units found, then the shortest, then the first) is
   the supporting span (-1, -1 when no unit is found anywhere); the claim is supported when the score
   is at least SUPPORT_THRESHOLD, chosen on the hand-labelled pairs of
   tests/fixtures/eval/support-labels.jsonl (split `dev`; the `held_out` pairs were labelled after)
   where `python -m assistant.answers.support [LABELS]` prints the agreement at that threshold and
   at others.

A sentence is a claim when it has at least MIN_CLAIM_UNITS content units (or states a number: small
models answer "[1] 15"), is not a question and does not abstain. `abstained()` recognises English and Chinese ways of saying the documents do not hold the
answer.

`attribute()` runs before the check: a claim citing nothing, or only sources that do not support it,
is given the source that supports it best.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from assistant.answers.citations import MARKER

SUPPORT_THRESHOLD = 0.6
MIN_CLAIM_UNITS = 2
WINDOW_SEGMENTS = 3
WINDOW_UNITS = 24

NOT_IN_DOCUMENTS = {
    "en": "The documents do not contain the answer to this question.",
    "zh": "文档中没有这个问题的答案。",
}

# What an answer says when the model ended without a word (a small model may stop at once).
NO_ANSWER = {
    "en": "The model gave no answer. Regenerate it, or ask the question in other words.",
    "zh": "模型没有给出回答。请重新生成，或换一种说法提问。",
}


@dataclass(frozen=True)
class Sentence:
    """One sentence of an answer: its text, where it lies in the answer, and the [n] numbers it carries."""

    text: str
    start: int
    end: int
    cited: list[int]


@dataclass(frozen=True)
class Support:
    """How much of a claim's content one source text holds, and where (-1, -1 when nowhere)."""

    score: float
    supported: bool
    char_start: int
    char_end: int


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
        }


# --- text into units ---------------------------------------------------------------------------

CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
CJK_CHAR = re.compile(f"[{CJK}]")
LATIN_LETTER = re.compile(r"[^\W\d_" + CJK + "]")
# A number ("13", "3.5", "1,000", "v2"), a CJK run, or a word/identifier (dots and underscores inside).
TOKEN = re.compile(
    rf"(?P<num>\d+(?:[.,_]\d+)*)|(?P<cjk>[{CJK}]+)|(?P<word>[^\W{CJK}]+(?:[._'’-][^\W{CJK}]+)*)"
)
STOP_WORDS = frozenset(
    """a an the and or but nor so if then than that this these those there here it its it's they them
    their he she his her we our you your i me my is are was were be been being am do does did done has have
    had having to of in on at by for from with as into onto about over under between through per via
    can could may might must shall should will would not no yes also just only very too more most less
    such each any all both either neither some other which who whom whose what when where why how
    up down out off again further once own same s t don doesn didn isn aren wasn weren use used using""".split()
)
# A file name's key is its name: `app.py` is `app` (a dotted name's key is its last part, `app.run` is `run`).
FILE_EXTENSIONS = frozenset("""py pyi md rst txt html htm js ts tsx jsx css json yaml yml toml cfg ini sh go rs java c h
    cpp hpp pdf docx xlsx pptx csv tsv xml sql""".split())
# The words of "X is defined in file F, lines a-b" that a source's place supports (as units: stemmed).
PLACE_WORDS = frozenset({"file", "line", "page", "section", "defin", "implement", "locat"})
# Function characters a CJK run is cut at: their bigrams ("的是", "了在") say nothing about content.
CJK_STOP = frozenset("的了是在和与及或也都就把被对于之其这那个吗呢吧啊呀着过将并而从以为所")


CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
CN_NUMBER = re.compile("[零〇一二两三四五六七八九十]+")


def _cn_number(m: re.Match[str]) -> str:
    """A Chinese numeral below 100 in digits ("十三" = 13, "二十" = 20, "五" = 5, "二〇二四" = 2024), spaced
    so that it stands as a number of its own."""
    text = m.group(0)
    if "十" in text:
        tens, _, ones = text.partition("十")
        if len(tens) > 1 or len(ones) > 1 or "十" in ones:
            return text
        value = CN_DIGITS.get(tens, 1) * 10 + CN_DIGITS.get(ones, 0)
    else:
        value = int("".join(str(CN_DIGITS[c]) for c in text))
    return f" {value} "


EN_NUMBERS = {
    w: str(n) for n, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
} | {w: str(n) for n, w in zip(range(30, 100, 10), "thirty forty fifty sixty seventy eighty ninety".split())}
EN_NUMBER = re.compile(r"\b(?:" + "|".join(EN_NUMBERS) + r")\b", re.IGNORECASE)


def plain(text: str) -> str:
    """NFKC, citation markers removed, number words (English up to twenty and the tens, Chinese below
    100) as digits; case kept: names are told by it."""
    text = unicodedata.normalize("NFKC", MARKER.sub(" ", text))
    return CN_NUMBER.sub(_cn_number, EN_NUMBER.sub(lambda m: EN_NUMBERS[m.group(0).lower()], text))


def normalise(text: str) -> str:
    """`plain`, casefolded."""
    return plain(text).casefold()


def stem(word: str) -> str:
    """A light, deterministic suffix stripper: enough for plurals and simple verb forms."""
    w = word.replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    if len(w) <= 3 or not w.isalpha():
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if w.endswith("ing") and len(w) > 5:
        w = w[:-3]
    elif w.endswith("ed") and len(w) > 4:
        w = w[:-2]
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":  # "stopp(ed)" = "stop"
        w = w[:-1]
    return w


def _cjk_units(run: str) -> list[str]:
    out: list[str] = []
    for part in re.split("[" + "".join(CJK_STOP) + "]+", run):
        if len(part) == 1:
            out.append(part)
        out.extend(part[i : i + 2] for i in range(len(part) - 1))
    return out


def _word_units(word: str) -> list[str]:
    """A word's units: itself (stemmed) unless a stop word. A snake_case identifier is itself and its
    parts; a dotted or hyphenated name (`app.run`, `werkzeug.utils.redirect`, `built-in`) is its parts,
    the last one first."""
    word = re.sub(r"['’]s$", "", word).strip("_")  # Markdown's `_1874_` emphasis; `__init__` is `init` on both sides
    if not word or word in STOP_WORDS:
        return []
    if "." in word or "-" in word or "'" in word or "’" in word:  # dotted names, built-in, don't
        parts = [p for p in re.split(r"[.'’-]+", word) if p]
        return [u for p in reversed(parts) for u in _word_units(p)]
    parts = [p for p in word.split("_") if p]
    if len(parts) > 1:
        return [word] + [stem(p) for p in parts if p not in STOP_WORDS and len(p) > 1]
    return [stem(word)] if len(word) > 1 or word.isdigit() else []


@lru_cache(maxsize=4096)
def units(text: str) -> tuple[str, ...]:
    """The content units of text, in order, with repeats (see the module docstring)."""
    out: list[str] = []
    for m in TOKEN.finditer(normalise(text)):
        if m.group("num") is not None:
            out.append(m.group("num").replace(",", "").replace("_", ""))
        elif m.group("cjk") is not None:
            out.extend(_cjk_units(m.group("cjk")))
        else:
            out.extend(_word_units(m.group("word")))
    return tuple(out)


@lru_cache(maxsize=1024)  # a claim is scored against every source
def key_units(claim: str) -> frozenset[str]:
    """The claim's numbers and names: the units a supporting source must hold exactly (names as their
    first unit: `app.run` is `run`)."""
    text = plain(claim)
    keys: set[str] = set()
    first = True
    for m in TOKEN.finditer(text):
        token = m.group(0)
        if m.group("num") is not None:
            keys.add(token.replace(",", "").replace("_", ""))
        elif m.group("word") is not None:
            inner_capital = any(c.isupper() for c in token[1:])
            shaped = any(c.isdigit() for c in token) or "_" in token or "." in token.strip(".")
            if (inner_capital or shaped or (token[0].isupper() and not first)) and token.casefold() not in STOP_WORDS:
                keys.update(_word_units(file_name(token) or token.casefold())[:1])
        first = False
    return frozenset(keys)


def file_name(token: str) -> str | None:
    """`app` for `app.py` (a name with a known file extension), else None."""
    name, dot, extension = token.casefold().rpartition(".")
    return name if dot and name and extension in FILE_EXTENSIONS else None


@lru_cache(maxsize=1024)
def file_keys(claim: str) -> frozenset[str]:
    """The files a claim names, as key units (`src/flask/ctx.py` gives `ctx`)."""
    found = (file_name(m.group(0)) for m in TOKEN.finditer(plain(claim)) if m.group("word") is not None)
    return frozenset(u for name in found if name for u in _word_units(name)[:1])


# --- sentences ---------------------------------------------------------------------------------

# The end of a sentence: end punctuation (with closing quotes/brackets), then any citation markers.
SENTENCE_END = re.compile(
    r"(?:(?<![A-Za-z]\.[A-Za-z])(?<!\be\.g)(?<!\bi\.e)(?<!\betc)[.!?](?=[\s\[\"'”’)]|$)|[。！？；]|\n)"
    r"[\"'”’)\]]*?(?:\s*\[\s*\d{1,6}(?:\s*,\s*\d{1,6})*\s*\])*"
)
SEGMENT_END = re.compile(r"(?<!\d)[.!?](?=\s|$)|[。！？；]|\n")


def split_sentences(answer: str) -> list[Sentence]:
    """The sentences of an answer: cut after end punctuation and at line breaks; markers stay with the
    sentence they follow. Blank pieces are left out; offsets point into the answer as given."""
    out: list[Sentence] = []
    start = 0
    for m in SENTENCE_END.finditer(answer):
        _add_sentence(out, answer, start, m.end())
        start = m.end()
    _add_sentence(out, answer, start, len(answer))
    return out


def _add_sentence(out: list[Sentence], answer: str, start: int, end: int) -> None:
    piece = answer[start:end]
    stripped = piece.strip()
    if not stripped or not any(c.isalnum() for c in stripped):
        return
    s = start + (len(piece) - len(piece.lstrip()))
    e = s + len(stripped)
    cited: dict[int, None] = {}
    for m in MARKER.finditer(stripped):
        for n in re.findall(r"\d+", m.group(1)):
            cited.setdefault(int(n), None)
    out.append(Sentence(stripped, s, e, list(cited)))


def segments(source: str) -> list[tuple[int, int]]:
    """The source's lines, and sentences within lines, as (start, end) character ranges (trimmed)."""
    out: list[tuple[int, int]] = []
    start = 0
    for m in list(SEGMENT_END.finditer(source)) + [None]:
        end = m.end() if m else len(source)
        piece = source[start:end]
        if piece.strip():
            s = start + (len(piece) - len(piece.lstrip()))
            out.append((s, s + len(piece.strip())))
        start = end
    return out


@lru_cache(maxsize=256)
def _segments(source: str) -> tuple[tuple[int, int], ...]:
    return tuple(segments(source))


@lru_cache(maxsize=256)
def _segment_units(source: str) -> tuple[tuple[str, ...], ...]:
    """The units of each segment, read once per source: an answer's every claim is scored against it."""
    return tuple(units(source[s:e]) for s, e in _segments(source))


# --- support -----------------------------------------------------------------------------------


def _score(claim_units: frozenset[str], keys: frozenset[str], window: set[str]) -> tuple[float, float]:
    """(score, share of units found): the second picks the span when a missing key unit zeroes the first."""
    found = len(claim_units & window) / len(claim_units)
    key_share = len(keys & window) / len(keys) if keys else 1.0
    return found * key_share, found


LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)、])\s+")  # "- ", "2. ", "3) ": no part of the claim


def support(claim: str, source_text: str, place: str = "") -> Support:
    """How well source_text, shown under `place`, supports claim, and the window of the text that does
    (see the module docstring)."""
    claim = LIST_ITEM.sub("", claim)
    claim_units = frozenset(units(claim))
    if not claim_units or not source_text.strip():
        return Support(0.0, False, -1, -1)
    keys = key_units(claim) & claim_units
    segs = _segments(source_text)
    # Only the claim's units matter in a segment: small sets keep the window loop cheap.
    all_units = _segment_units(source_text)
    seg_units = [claim_units.intersection(u) for u in all_units]
    # A name the source holds anywhere counts in every window: a chunk names its subject once
    # (`def send_file(`), its sentences then speak of it without repeating it.
    names = {k for k in keys if not k[0].isdigit() and any(k in u for u in seg_units)}
    elsewhere: set[str] = set()  # files the claim names that are not this source's file
    if place.strip():
        place_units = claim_units.intersection(units(place))
        if not claim_units & {"line", "page"}:  # a place's numbers are its lines or page: only such a claim uses them
            place_units = {u for u in place_units if not u[0].isdigit()}
        names |= place_units | (claim_units & PLACE_WORDS)
        elsewhere = set(file_keys(claim) & claim_units) - place_units
    best_span = (-1, -1)
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
                best_key, best_span = key, (segs[i][0], segs[j][1])
    score = round(best_key[0], 4)
    return Support(score, score >= SUPPORT_THRESHOLD, best_span[0], best_span[1])


# --- abstaining --------------------------------------------------------------------------------

_EN_SOURCES = r"(?:provided |given |above |supplied |available |retrieved )?(?:documents?|sources?|context|passages?|texts?|excerpts?|snippets?|materials?|information|documentation|docs|handbook)"
ABSTAIN_EN = re.compile(
    "|".join(
        [
            rf"\b{_EN_SOURCES}(?: provided| given| above| below| available)? (?:do|does|did)(?: not|n't|n’t) (?:\w+ )?(?:contain|mention|say|include|provide|specify|state|cover|discuss|describe|address|have|give|explain|tell|answer|list|offer|indicate)",
            rf"\b{_EN_SOURCES}(?: provided| given| above)? (?:is|are) (?:silent|unclear)",
            r"\bi (?:could|can|was|am)(?: not|n't|n’t| unable to) (?:\w+ )?(?:find|locate|determine|see|answer|tell)",
            r"\bi (?:do|did)(?: not|n't|n’t) (?:know|find|see)\b",
            r"\b(?:not|never) (?:mentioned|found|stated|specified|described|covered|addressed|provided|included|given) (?:in|by) the (?:provided |given )?(?:documents?|sources?|context|passages?|texts?)",
            r"\bthere (?:is|are) no (?:\w+ )?(?:information|mention|details?|data|reference)",
            r"\bno (?:\w+ )?(?:information|mention|details?) (?:about|on|regarding|of|is|was|in)\b",
            r"\b(?:cannot|can't|can’t|could not|couldn't) be (?:determined|found|answered|inferred) (?:from|in|with|based)",
            r"\b(?:unable|not able) to (?:find|determine|answer|locate)",
            r"\b(?:does|do)(?: not|n't|n’t) (?:contain|include|provide) (?:any |enough )?(?:information|details|answer)",
        ]
    )
)
ABSTAIN_ZH = re.compile(
    "|".join(
        [
            r"没有(?:提到|提及|说明|涉及|给出|介绍|写明|包含|相关|关于|找到|明确|具体)",
            r"未(?:提到|提及|说明|涉及|给出|包含|找到|写明|明确)",
            r"(?:文档|资料|上下文|材料|来源|文本|手册|内容)(?:中|里|里面|内)?(?:没有|并没有|并未|未|不包含|不含|无)",
            r"无法(?:从|根据|在|确定|找到|得知|回答|判断|获知)",
            r"(?:找不到|查不到|不知道|不清楚|无从得知|无相关信息)",
            r"不(?:包含|包括)(?:相关|这个|该|此)?(?:信息|内容|答案)",
        ]
    )
)


def _abstains(sentence: str) -> bool:
    text = unicodedata.normalize("NFKC", sentence).casefold()
    return bool(ABSTAIN_EN.search(text) or ABSTAIN_ZH.search(text))


def abstained(answer: str) -> bool:
    """Whether the answer says the documents do not hold its answer: its first sentence says so, or
    some sentence says so and no other sentence states anything."""
    sentences = split_sentences(answer)
    if not sentences:
        return False
    flags = [_abstains(s.text) for s in sentences]
    if flags[0]:
        return True
    return any(flags) and not any(
        _is_claim(s.text) for s, f in zip(sentences, flags) if not f
    )


def _is_claim(text: str) -> bool:
    bare = LIST_ITEM.sub("", MARKER.sub("", text)).strip()
    if bare.endswith(("?", "？")):
        return False
    found = set(units(bare))
    enough = len(found) >= MIN_CLAIM_UNITS or any(u[0].isdigit() for u in found)  # "[1] 5" states a number
    return enough and not _abstains(bare)


# --- a whole answer ----------------------------------------------------------------------------


def check_answer(answer: str, sources: dict[int, str], places: dict[int, str] | None = None) -> AnswerCheck:
    """Every sentence of answer checked against the sources it cites (number -> source text, and the
    place the prompt showed it under).

    A citation of a number missing from `sources` counts as unsupported. `unsupported` is true when
    the answer makes claims and none of them is supported by a source shown: by one it cites, or, for
    a claim that cites nothing, by any of them (a model that forgets its markers is not wrong for it).
    """
    places = places or {}
    checks: list[SentenceCheck] = []
    citations = supported_citations = 0
    any_supported = False
    for sentence in split_sentences(answer):
        claim = _is_claim(sentence.text)
        supports: dict[int, Support] = {}
        for n in sentence.cited:
            text = sources.get(n)
            supports[n] = support(sentence.text, text, places.get(n, "")) if text else Support(0.0, False, -1, -1)
        ok = any(s.supported for s in supports.values()) if supports else None
        if claim:
            citations += len(supports)
            supported_citations += sum(s.supported for s in supports.values())
            any_supported = any_supported or bool(ok) or (
                ok is None and any(support(sentence.text, t, places.get(m, "")).supported for m, t in sources.items() if t)
            )
        checks.append(SentenceCheck(sentence, claim, supports, ok))
    claims = [c for c in checks if c.claim]
    return AnswerCheck(
        sentences=checks,
        citation_precision=round(supported_citations / citations, 4) if citations else None,
        citation_coverage=round(sum(bool(c.sentence.cited) for c in claims) / len(claims), 4) if claims else None,
        abstained=abstained(answer),
        unsupported=bool(claims) and not any_supported,
    )


@dataclass(frozen=True)
class Attribution:
    """An answer with its citations put where the sources support them (see `attribute`)."""

    answer: str  # the answer with markers added or corrected
    changes: list[dict]  # per changed sentence: {"start", "end", "was", "now"} (offsets into `answer`)


def _set_markers(text: str, numbers: list[int]) -> str:
    """A sentence with its own markers replaced by `numbers`, placed before its end punctuation."""
    bare = MARKER.sub("", text).rstrip()
    bare = re.sub(r"\s+([.!?。！？；])$", r"\1", bare)
    markers = "".join(f"[{n}]" for n in numbers)
    m = re.search(r"[.!?。！？；][\"'”’)]*$", bare)
    if m is None:
        return f"{bare} {markers}"
    gap = "" if CJK_CHAR.search(bare[m.start() - 1: m.start()] or "") else " "
    return f"{bare[:m.start()]}{gap}{markers}{bare[m.start():]}"


def attribute(answer: str, sources: dict[int, str], places: dict[int, str] | None = None) -> Attribution:
    """Citations where the sources support them: a claim that cites nothing, or cites only sources that
    do not support it, is given the source that supports it best, when one does (score at least
    SUPPORT_THRESHOLD; ties go to the lower number). Supported citations are never touched, nor are
    claims no source supports: the check then reports them as unsupported. Small models often forget
    their markers or cite the neighbour of the source they copied from; the reader should still see
    which source says it."""
    places = places or {}
    out: list[str] = []
    changes: list[dict] = []
    at = 0
    for sentence in split_sentences(answer):
        if not _is_claim(sentence.text):
            continue
        scores = {n: support(sentence.text, text, places.get(n, "")) for n, text in sources.items() if text}  # each source once
        if any(scores[n].supported for n in sentence.cited if n in scores):
            continue
        best = max(((s.score, -n, n) for n, s in scores.items()), default=None)
        if best is None or best[0] < SUPPORT_THRESHOLD:
            continue
        out.append(answer[at:sentence.start])
        start = sum(len(piece) for piece in out)
        fixed = _set_markers(sentence.text, [best[2]])
        out.append(fixed)
        changes.append({"start": start, "end": start + len(fixed), "was": list(sentence.cited), "now": [best[2]]})
        at = sentence.end
    out.append(answer[at:])
    return Attribution("".join(out), changes)


def language_of(text: str) -> str:
    """"zh" when CJK characters make up at least a quarter of the letters (a CJK character says as much
    as a Latin word, so a Chinese question with English names stays Chinese), else "en"."""
    cjk = len(CJK_CHAR.findall(text))
    latin = len(LATIN_LETTER.findall(text))
    return "zh" if cjk and cjk / (cjk + latin) >= 0.25 else "en"


# --- agreement with hand labels ----------------------------------------------------------------


def load_labels(path: str) -> list[dict]:
    """The labelled pairs: one JSON object a line with `claim`, `source`, `supported` (bool), and the
    source's `place` where the claim is about it."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def agreement(labels: list[dict], threshold: float = SUPPORT_THRESHOLD) -> float:
    """The share of labelled pairs where `score >= threshold` agrees with the hand label."""
    hits = sum((support(r["claim"], r["source"], r.get("place", "")).score >= threshold) == bool(r["supported"])
               for r in labels)
    return hits / len(labels) if labels else 0.0


def main(argv: list[str]) -> None:
    """Print, as JSON, the agreement at the chosen threshold (in all and per `split` of the pairs: `dev`
    the scorer was built on, `held_out` labelled after) and at other thresholds."""
    labels = load_labels(argv[0] if argv else "tests/fixtures/eval/support-labels.jsonl")
    splits = sorted({str(r.get("split", "")) for r in labels})
    by_split = {name: round(agreement([r for r in labels if str(r.get("split", "")) == name]), 4) for name in splits}
    sweep = {f"{t / 20:.2f}": round(agreement(labels, t / 20), 4) for t in range(4, 19)}
    print(json.dumps({"pairs": len(labels), "threshold": SUPPORT_THRESHOLD, "agreement": round(agreement(labels), 4),
                      "by_split": by_split, "by_threshold": sweep}))


if __name__ == "__main__":
    main(sys.argv[1:])
