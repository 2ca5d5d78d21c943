"""A name of the source put aside for another name in a claim that otherwise repeats it: "Pay processes new
badges every Wednesday" against "GSA processes new badges every Wednesday". The key-unit test of `support` sees
a wrong name only where the claim writes it as one (a capital inside the sentence); a name first in its
sentence passes it, and the rest of the sentence carries the score. Aligning the two sentences' units finds
the place where they differ, whatever the names are: no list of names or words is involved.

A number put in place of another is found the same way where the key-unit test cannot see it: the claim's
number stands elsewhere in the source ("调薪和晋升在每年 2 月根据全年两次考核的结果决定" against "每年 1 月 …
两次考核", "并发 32 时单实例吞吐约 610" against "并发 16 时单实例吞吐约 610，并发 32 时约 890"), and a number of
the source put with the words of another of its numbers (`moved_number`)."""

from __future__ import annotations

from collections import Counter
from difflib import SequenceMatcher
from functools import lru_cache

from assistant.answers.text_units import (
    CJK_CHAR, CJK_STOP, TOKEN, clauses, key_units, language_of, plain, segments, units,
)

# A swap is a local difference: at most this many units on each side between parts that match. A longer
# difference is a rewording, which the share of units found already weighs.
MAX_SWAP_UNITS = 2
# Two spellings of one name ("HR Links" and "HRLinks", "Login.gov" and "login gov"): letters this alike.
SAME_SPELLING = 0.8


def written_as_names(claim: str) -> frozenset[str]:
    """The units of the claim's words written as names: with a capital letter anywhere (the first word of a
    sentence too), a digit or an underscore. A lower-case word is a plain description ("the help desk" for
    "the GSA IT Service Desk" is less precise, not wrong)."""
    out: set[str] = set()
    for m in TOKEN.finditer(plain(claim)):
        word = m.group("word")
        if word is not None and (any(c.isupper() or c.isdigit() for c in word) or "_" in word):
            out.update(units(word))
    return frozenset(out)


def swapped_name(claim: str, sentence: str) -> bool:
    """Whether the claim repeats the source sentence with one of its names replaced by another: the two
    aligned (difflib's opcodes over their content units), some difference of at most MAX_SWAP_UNITS units a
    side holds a name of the sentence that the claim says fewer times than the sentence (not a number: the
    number test weighs those), in place of units the claim says more often than the sentence and writes as a
    name, spelled otherwise than the name it replaces. A name only left out ("staff members" for "TTS staff
    members"), a name kept, a name respelled, and a claim in Chinese (its character bigrams change at every
    rewording, so an alignment says nothing) are no swap."""
    if language_of(claim) == "zh":
        return False
    said, held, replaced = _aligned(claim, sentence)
    dropped = {k for k in key_units(sentence) if not k[0].isdigit() and said[k] < held[k]}
    if not dropped:
        return False
    named = written_as_names(claim)
    for new, old in replaced:
        if len(new) > MAX_SWAP_UNITS or len(old) > MAX_SWAP_UNITS:
            continue
        if (dropped & set(old) and all(said[u] > held[u] for u in new) and named & set(new)
                and SequenceMatcher(None, "".join(new), "".join(old)).ratio() < SAME_SPELLING):
            return True
    return False


def swapped_number(claim: str, sentence: str) -> bool:
    """Whether the claim repeats the source sentence with one of its numbers replaced by another that the
    sentence states elsewhere: the two aligned as for names, some difference of one unit a side is a number
    the claim says fewer times than the sentence, in place of a number the claim says more often. In Chinese
    too: a number's neighbours are the same character pairs when the rest of the sentence is copied. Numbers
    merely reordered ("A 3, B 5" for "B 5, A 3") are said as often on both sides: no swap."""
    said, held, replaced = _aligned(claim, sentence)
    for new, old in replaced:
        if (len(new) == len(old) == 1 and new[0][0].isdigit() and old[0][0].isdigit()
                and said[new[0]] > held[new[0]] and said[old[0]] < held[old[0]]):
            return True
    return False


@lru_cache(maxsize=256)  # a claim is tried for a swapped name, then a swapped number, against one sentence
def _aligned(claim: str, sentence: str) -> tuple[Counter, Counter, tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]]:
    """How often each unit is said in the claim and held by the sentence (read only: the result is shared), and
    the differences of their alignment (difflib's `replace` opcodes over their content units) as pairs of
    (the claim's units, the sentence's units in their place)."""
    ours, theirs = units(claim), units(sentence)
    opcodes = SequenceMatcher(None, ours, theirs, autojunk=False).get_opcodes()
    replaced = tuple((ours[i1:i2], theirs[j1:j2]) for tag, i1, i2, j1, j2 in opcodes if tag == "replace")
    return Counter(ours), Counter(theirs), replaced


def _measure(clause: tuple[str, ...], i: int) -> str | None:
    """What the number at `clause[i]` counts: the unit after it ("3400 token", "500 元", "13 vacation"), else the unit
    before it ("RTO ... 4"); None when the clause has no other unit."""
    after = [u for u in clause[i + 1:] if not u[0].isdigit()]
    before = [u for u in clause[:i] if not u[0].isdigit()]
    return after[0] if after else before[-1] if before else None


def _words(clause: str, clause_units: tuple[str, ...]) -> frozenset[str]:
    """What a clause says, to compare one with another whatever their numbers: its units but numbers, and for
    Chinese its characters (the dictionary cuts one phrase into other words in another sentence: "单实例" and
    "时单实例")."""
    return frozenset({u for u in clause_units if not u[0].isdigit() and not CJK_CHAR.search(u)}
                     | {c for c in CJK_CHAR.findall(plain(clause)) if c not in CJK_STOP})


@lru_cache(maxsize=256)
def _source_clauses(source: str) -> tuple[tuple[frozenset[str], frozenset[str], frozenset[tuple[str, str]]], ...]:
    """Each clause of the source that states a number, read once for every claim checked against it: its units,
    its words (`_words`) and the numbers it states with their measures. The clauses of its sentence that state
    no number say what its numbers are too: "输入 1024 token、输出 256 token，作为标准档位" is the standard tier's."""
    out = []
    for start, end in segments(source):
        read = [(found, _words(c, found)) for c in clauses(source[start:end]) if (found := units(c))]
        numbered = [(u, w) for u, w in read if any(x[0].isdigit() for x in u)]
        scene = [(u, w) for u, w in read if not any(x[0].isdigit() for x in u)]
        extra_units = frozenset().union(*(u for u, _ in scene))
        extra_words = frozenset().union(*(w for _, w in scene))
        for found, words in numbered:
            counted = frozenset((u, m) for k, u in enumerate(found) if u[0].isdigit() and (m := _measure(found, k)))
            out.append((frozenset(found) | extra_units, words | extra_words, counted))
    return tuple(out)


def moved_number(claim: str, source: str) -> bool:
    """Whether the claim states a number of the source with the words the source says of another of its numbers:
    some clause of the claim shares more of its words (`_words`) with a source clause that states another number
    of the same measure (`_measure`) than with any source clause that states the claim's number. "单实例吞吐大概能到
    3,400 tokens/s" against "并发 16 时单实例吞吐约 610 tokens/s … 整机 4 个实例合计吞吐约 3,400 tokens/s" (3,400 is
    the whole machine's); "RPO 是 4 小时" against "RTO 不超过 4 小时，RPO 不超过 1 小时". Every number of such a claim
    is in its source, so the key-unit test passes it."""
    theirs = _source_clauses(source)
    for part in clauses(claim):
        ours = units(part)
        words = _words(part, ours)
        names = {k for k in key_units(part) if not k[0].isdigit()}
        if len(words) < 2:
            continue
        for i, number in enumerate(ours):
            if not number[0].isdigit() or (measure := _measure(ours, i)) is None:
                continue
            # Names say what a number is of before other words do ("RTO 目标是 4 小时" is RTO's 4 hours, not the
            # 24 hours of "目标是 RPO 不超过 24 小时"): clauses are compared by the names, then the words they share.
            holders = [(len(names & u), len(words & w)) for u, w, _ in theirs if number in u]
            rivals = [(len(names & u), len(words & w)) for u, w, counted in theirs if number not in u
                      and any(m == measure and x != number for x, m in counted)]
            if holders and rivals and max(rivals) > max(holders):
                return True
    return False
