"""The fixed statements an answer can be replaced by, and how an answer that abstains is recognised
(English and Chinese ways of saying the documents do not hold the answer)."""

from __future__ import annotations

import re
import unicodedata

from assistant.answers.citations import MARKER
from assistant.answers.text_units import LIST_ITEM, Sentence, split_sentences, units

MIN_CLAIM_UNITS = 2

NOT_IN_DOCUMENTS = {
    "en": "The documents do not contain the answer to this question.",
    "zh": "文档中没有这个问题的答案。",
}

# What an answer says when the model ended without a word (a small model may stop at once).
NO_ANSWER = {
    "en": "The model gave no answer. Regenerate it, or ask the question in other words.",
    "zh": "模型没有给出回答。请重新生成，或换一种说法提问。",
}


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


def abstained(answer: str, sentences: list[Sentence] | None = None) -> bool:
    """Whether the answer says the documents do not hold its answer: its first sentence says so, or
    some sentence says so and no other sentence states anything (`sentences`: the answer's, split already)."""
    sentences = split_sentences(answer) if sentences is None else sentences
    if not sentences:
        return False
    flags = [_abstains(s.text) for s in sentences]
    if flags[0]:
        return True
    return any(flags) and not any(
        is_claim(s.text) for s, f in zip(sentences, flags) if not f
    )


def is_claim(text: str) -> bool:
    bare = LIST_ITEM.sub("", MARKER.sub("", text)).strip()
    if bare.endswith(("?", "？")):
        return False
    found = set(units(bare))
    enough = len(found) >= MIN_CLAIM_UNITS or any(u[0].isdigit() for u in found)  # "[1] 5" states a number
    return enough and not _abstains(bare)
