"""What a question about a codebase asks for, read from its form: where something is implemented, how
the user does something, or how the system behaves.

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
from typing import Literal

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


def question_form(question: str) -> Form:
    """The form of a question: implementation when it asks where something lives, else usage when one
    of its sentences opens with the asker acting, else behaviour."""
    if IMPLEMENTATION_INTENT.search(question):
        return "implementation"
    if any(_USAGE.match(s) for s in sentences_of(question)):
        return "usage"
    return "behaviour"
