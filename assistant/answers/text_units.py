"""Text as the answer check reads it: normalised, cut into content units, key units (numbers and names),
sentences and segments, and its language. Pure and deterministic (support.py's docstring says how the
units are used)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import rjieba

from assistant.answers.citations import MARKER

LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)、])\s+")  # "- ", "2. ", "3) ": no part of the claim


@dataclass(frozen=True)
class Sentence:
    """One sentence of an answer: its text, where it lies in the answer, and the [n] numbers it carries."""

    text: str
    start: int
    end: int
    cited: list[int]


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
CJK_STOP_RUN = re.compile("[" + "".join(sorted(CJK_STOP)) + "]+")


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
# "one" is a pronoun and a determiner as often as a count ("allowing one to handle errors", "one of the
# loaders"): it is read as 1 (it matches a source's "1") but is no number a source must state.
EN_COUNT = re.compile(r"\b(?:" + "|".join(w for w in EN_NUMBERS if w != "one") + r")\b", re.IGNORECASE)
NOT_KEYS = STOP_WORDS | {"one"}  # "One" inside a sentence is no name either (a source's "One" reads as 1)


def plain(text: str, *, counts: re.Pattern[str] = EN_NUMBER) -> str:
    """NFKC, citation markers removed, number words (English up to twenty and the tens, Chinese below
    100) as digits; case kept: names are told by it."""
    text = unicodedata.normalize("NFKC", MARKER.sub(" ", text))
    return CN_NUMBER.sub(_cn_number, counts.sub(lambda m: EN_NUMBERS[m.group(0).lower()], text))


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


def _pieces(run: str) -> list[str]:
    """A CJK run cut where its words end (rjieba: jieba's dictionary), one-character words kept together: "酒店每晚
    最多能报销" is 酒店, 每晚, 最多能, 报销. Character pairs across two words ("店每", "能报") are in no
    paraphrase of them, and made a right Chinese answer in other words look unsupported. A run the dictionary
    does not know (Japanese, Korean, traditional characters) comes out as one-character words, kept as one piece:
    read by its character pairs, as every run was before."""
    out: list[str] = []
    single = ""
    for word in rjieba.cut(run):
        if len(word) == 1:
            single += word
            continue
        if single:
            out.append(single)
            single = ""
        out.append(word)
    return out + [single] if single else out


def _cjk_units(run: str) -> list[str]:
    """The character pairs inside each piece of a run (`_pieces`), cut at function characters (CJK_STOP); a lone
    character is a unit of its own."""
    out: list[str] = []
    for piece in _pieces(run):
        for part in CJK_STOP_RUN.split(piece):
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


# The parts of a CamelCase name: `HTTPException` is `HTTP` and `Exception`, `getFlashedMessages` three words.
CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


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


@lru_cache(maxsize=4096)
def camel_words(text: str) -> frozenset[str]:
    """The words inside the CamelCase names of text, as units: code names a thing `HTTPException` where prose
    says "an HTTP exception". Read where a claim is looked for, not in the claim (a name found would
    count as three of its units)."""
    out: set[str] = set()
    for m in TOKEN.finditer(plain(text)):
        for piece in re.split(r"[._'’-]+", m.group("word") or ""):
            if any(c.isupper() for c in piece[1:]) and any(c.islower() for c in piece):
                out.update(stem(p.casefold()) for p in CAMEL_PART.findall(piece)
                           if len(p) > 1 and p.casefold() not in STOP_WORDS)
    return frozenset(out)


def held_words(text: str) -> set[str]:
    """What a source (or its place) holds for a question's or an answer's words: its units and the words inside
    its CamelCase names (a page about `HTTPException` speaks of HTTP)."""
    return set(units(text)) | camel_words(text)


def joined(seq: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """Two adjacent word units written as one (`debug helpers` is `debughelpers`, `file name` is `filename`):
    the compound, and the two it is made of. Numbers and CJK units are never joined."""
    out: dict[str, tuple[str, str]] = {}
    for a, b in zip(seq, seq[1:]):
        if a.isalpha() and b.isalpha() and a.isascii() and b.isascii() and len(a) > 1 and len(b) > 1:
            out.setdefault(stem(a + b), (a, b))
    return out


def written_as_code(word: str) -> bool:
    """Whether a word is written as code: an underscore or a dot inside, a capital after the first letter
    (`send_file`, `app.run`, `HTTPException`)."""
    return "_" in word or "." in word.strip(".") or any(c.isupper() for c in word[1:])


@lru_cache(maxsize=1024)  # a claim is scored against every source
def key_units(claim: str) -> frozenset[str]:
    """The claim's numbers and names: the units a supporting source must hold exactly (names as their
    first unit: `app.run` is `run`)."""
    text = plain(claim, counts=EN_COUNT)
    keys: set[str] = set()
    first = True
    for m in TOKEN.finditer(text):
        token = m.group(0)
        if m.group("num") is not None:
            keys.add(token.replace(",", "").replace("_", ""))
        elif m.group("word") is not None:
            named = written_as_code(token) or any(c.isdigit() for c in token) or (token[0].isupper() and not first)
            if named and token.casefold() not in NOT_KEYS:
                keys.update(_name_key(token, first))
        first = False
    return frozenset(keys)


def _name_key(token: str, first: bool) -> list[str]:
    """The key of a name: its first unit (`app.run` is `run`, `app.py` is `app`); a hyphenated one is keyed by
    its capitalised parts and its parts with digits ("Tock-specific" is `tock`, "GSA-issued" is `gsa`,
    "Self-Service" is `self` and `servic`, "SF-182" is `sf` and `182`): its other parts are plain words."""
    parts = token.split("-")
    named = [p for i, p in enumerate(parts) if any(c.isupper() for c in p[1:]) or any(c.isdigit() for c in p)
             or (p[:1].isupper() and not (first and i == 0))]
    if len(parts) > 1 and named:
        return [u for p in named for u in _word_units(p.casefold())[:1]]
    return _word_units(file_name(token) or token.casefold())[:1]


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


def language_of(text: str) -> str:
    """"zh" when CJK characters make up at least a quarter of the letters (a CJK character says as much
    as a Latin word, so a Chinese question with English names stays Chinese), else "en"."""
    cjk = len(CJK_CHAR.findall(text))
    latin = len(LATIN_LETTER.findall(text))
    return "zh" if cjk and cjk / (cjk + latin) >= 0.25 else "en"


# A negation cue: English words (and n't, and what forbids), Chinese characters that negate what follows (and 禁,
# forbid; 没有 "there is no", 不要, 不得, 不能, 不可, 不用, 不必 each one cue where no excluded character follows, so
# that what it says no to is the thing, not 有 or 要), without the common
# words they only begin (非常 "very", 未来 "future", 不同 "different", 无论 "whatever", 不过 "but", 别的 "other").
NEGATION_EN = re.compile(r"\b(?:not|no|never|none|nothing|nobody|neither|nor|cannot|without|prohibited|forbidden)\b"
                         r"|n['’]t\b")
NEGATION_ZH = re.compile(r"(?:没有|不要|不得|不能|不可以|不可|不用|不必|不|没|未|无|非|勿|别)(?!同|过|仅|但|久|少|断|管|论|常|来|限|外|然|如|妨|止|错|的)|禁")
# "Yes, ..." / "No, ...": the answer to a yes-no question, not a negation of what follows.
ANSWER_PARTICLE = re.compile(r"^\W*(?:yes|no|是的|不是|对|不)\s*[,，.。!！:：]\s*")


# Python's `None` as a value (`-> None`, `= None`, `is not None`, `f(None)`): code saying what a thing holds, not no.
CODE_NONE = re.compile(r"(?:\bis\s+(?:not\s+)?|->\s*|[=(\[,]\s*|\breturn\s+)None\b|\bNone(?=\s*(?:[),:\]=]|$))")


# "Not" in a name written in capitals inside a sentence: "405 Method Not Allowed", "404 Not Found", "Do Not
# Disturb". A name says what a thing is called; "not" in a sentence's words, or "NOT" for emphasis, still negates.
TITLE_NOT = re.compile(r"(?:(?<=[\w,] )|(?<=[(\"'“‘`]))Not(?= [A-Z])")


@lru_cache(maxsize=4096)
def said_no(text: str) -> str | None:
    """What the statement says no to: its text after its first negation cue, once a leading yes/no, code's `None`
    values (CODE_NONE) and "Not" inside a name (TITLE_NOT) are set aside; None when it holds no cue."""
    text = TITLE_NOT.sub(" ", CODE_NONE.sub(" ", text))
    plain_text = unicodedata.normalize("NFKC", MARKER.sub(" ", text)).casefold()
    plain_text = ANSWER_PARTICLE.sub("", plain_text)
    cues = [m for m in (NEGATION_EN.search(plain_text), NEGATION_ZH.search(plain_text)) if m]
    return plain_text[min(m.end() for m in cues):] if cues else None


def negated(text: str) -> bool:
    """Whether the statement says no: it holds a negation cue (`said_no`)."""
    return said_no(text) is not None


# A comma or colon between two digits is part of a number or a time ("3,400", "10:00"), no clause's end.
CLAUSE_END = re.compile(r"[，；：]\s*|(?<!\d)[,;:]\s*|[,;:](?!\d)\s*|\s+(?:and|but|however|while|whereas|although)\s+"
                        r"|(?:但是|但|而|不过|然而)")


def clauses(text: str) -> list[str]:
    """The clauses of a sentence: cut at commas, semicolons and colons, and at "and", "but" and their kin."""
    return [c for c in CLAUSE_END.split(text) if c.strip()] or [text]
