"""A name of the source put aside for another name in a claim that otherwise repeats it: "Pay processes new
badges every Wednesday" against "GSA processes new badges every Wednesday". The key-unit test of `support` sees
a wrong name only where the claim writes it as one (a capital inside the sentence); a name first in its
sentence passes it, and the rest of the sentence carries the score. Aligning the two sentences' units finds
the place where they differ, whatever the names are: no list of names or words is involved."""

from __future__ import annotations

from collections import Counter
from difflib import SequenceMatcher

from assistant.answers.text_units import TOKEN, key_units, language_of, plain, units

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
    ours, theirs = units(claim), units(sentence)
    said, held = Counter(ours), Counter(theirs)
    dropped = {k for k in key_units(sentence) if not k[0].isdigit() and said[k] < held[k]}
    if not dropped:
        return False
    named = written_as_names(claim)
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, ours, theirs, autojunk=False).get_opcodes():
        if tag != "replace" or i2 - i1 > MAX_SWAP_UNITS or j2 - j1 > MAX_SWAP_UNITS:
            continue
        new, old = ours[i1:i2], theirs[j1:j2]
        if (dropped & set(old) and all(said[u] > held[u] for u in new) and named & set(new)
                and SequenceMatcher(None, "".join(new), "".join(old)).ratio() < SAME_SPELLING):
            return True
    return False
