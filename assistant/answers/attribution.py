"""Citations put where the sources support them, before the answer is checked (`attribute`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from assistant.answers.citations import MARKER
from assistant.answers.statements import is_claim
from assistant.answers.support import SUPPORT_THRESHOLD, askers, support
from assistant.answers.text_units import CJK_CHAR, Sentence, split_sentences


@dataclass(frozen=True)
class Attribution:
    """An answer with its citations put where the sources support them (see `attribute`)."""

    answer: str  # the answer with markers added or corrected
    changes: list[dict]  # per changed sentence: {"start", "end", "was", "now"} (offsets into `answer`)
    sentences: list[Sentence] | None = None  # `answer`'s sentences when nothing changed: the check splits it once


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


def attribute(answer: str, sources: dict[int, str], places: dict[int, str] | None = None,
              question: str = "") -> Attribution:
    """Citations where the sources support them: a claim that cites nothing, or cites only sources that
    do not support it, is given the source that supports it best, when one does (score at least
    SUPPORT_THRESHOLD; ties go to the lower number). Supported citations are never touched, nor are
    claims no source supports: the check then reports them as unsupported. Small models often forget
    their markers or cite the neighbour of the source they copied from; the reader should still see
    which source says it. With the question, the names the asker introduces are left out of a claim (`asked.
    own_names`: "在你的 `order_tracker.xlsx` 表格里" holds nothing a source could), but not the asker's other words: a
    claim moved to a source on the rest of its words ("the cafeteria gives 2 free lunches" to a page with "2 pm")
    is an invention given a citation."""
    places = places or {}
    own = askers(question, sources, places)[1]
    out: list[str] = []
    changes: list[dict] = []
    at = 0
    sentences = split_sentences(answer)
    for sentence in sentences:
        if not is_claim(sentence.text):
            continue
        scores = {n: support(sentence.text, text, places.get(n, ""), own=own)  # each source once
                  for n, text in sources.items() if text}
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
    return Attribution("".join(out), changes, None if changes else sentences)
