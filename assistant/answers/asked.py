"""Whether an answer is about what was asked, beyond whether its sources support it: a name of the question
that none of the answer's sources holds (`unknown_names`; the names the asker introduces are not such names,
`own_names`), an amount asked for and not stated (`asks_quantity`, `states_quantity`), an answer whose words
miss the question's topic (`off_topic`). Pure, no model; `support.check_answer` reports each."""

from __future__ import annotations

import re

import rjieba

from assistant.answers.citations import MARKER
from assistant.answers.text_units import CJK, LIST_ITEM, TOKEN, held_words, key_units, plain, units, written_as_code


# A word in capitals, with a small inflection at most ("URLs", "POSTing").
ACRONYM = re.compile(r"(?<![\w.])([A-Z]{2,})(?:s|es|ed|ing)?(?!\w|\.\w)")


# Where the asker introduces a thing of their own: "my view", "our app", "a route named", "我的项目".
OWNER = re.compile(r"\b(?:my|our|called|named)\b|我的|我们的|咱们的", re.IGNORECASE)
# The end of the phrase an owner word opens: a clause's punctuation before a space (full-width: wherever it is), or
# a dash between spaces.
PHRASE_END = re.compile(r"[,;:?!](?:\s|$)|[，；：？！。]|\s[-–—]\s")
OWNED_WORDS = 3  # the words after an owner word that its phrase may name: "my project's `views.py` module"
# A name of code right after an owner word, and the CJK run after it: "我的 `order_tracker.xlsx` 表格里", whose first
# word says what the asker's thing is.
OWN_KIND = re.compile(rf"\s*`?([^\s`{CJK}]+)`?\s*([{CJK}]+)")
# A path or an address the asker writes: "/api/v2/orders", "./config/dev.py", "http://localhost:5000/login".
PATH = re.compile(r"(?:\b[a-z][a-z0-9+.-]*://|(?<![\w.])(?:~|\.{1,2})?/)[^\s`'\"<>()\[\]]+", re.IGNORECASE)
# The code the asker pastes: a fenced block, or a span in backticks.
CODE = re.compile(r"```[^\n]*\n(.*?)(?:```|$)|`([^`\n]+)`", re.DOTALL)
# What pasted code names for itself: a string it writes ('show_invoice', "/orders") and what it defines.
PASTED = re.compile(r"(['\"])([^'\"\n]{1,80})\1|\b(?:def|class)\s+(\w+)|^[ \t]*(\w+)\s*=(?!=)", re.MULTILINE)


def own_names(question: str, new: frozenset[str]) -> frozenset[str]:
    """The units of the names the asker introduces, with a unit in `new` (the question's units that no source
    shown holds, `support.unheld_units`): the paths and addresses the question writes ("/api/v2/orders",
    "http://localhost:5000"), its acronyms ("sending JSON", see `unknown_names`), the names of code
    (`written_as_code`) among the OWNED_WORDS words after "my", "our", "called", "named" (我的, 我们的): "my
    `logout_user` view", "our invoices.wsgi module", "a route named `show_invoice`", and what the code it pastes
    writes as a string or defines (`url_for('show_invoice')`, `def create_order():`). A developer names their own
    routes, functions and modules when asking how a library treats them, and no document holds those. A name of code
    the asker does not call theirs ("how does `flask.cache_manager` work in my app?") is the library's, which its
    documents must hold; names written as words (Sydney, Tokyo, Kubernetes) are never the asker's. Right after an
    owner word, a name of code of the asker's and the first CJK word after it, when no source holds that word, say
    what the asker's thing is: "我的 `order_tracker.xlsx` 表格里" (an English "spreadsheet" there is one of the asker's
    words already, `support.asker_words`)."""
    named = [m.group(0) for m in PATH.finditer(question)] + [m.group(1) for m in ACRONYM.finditer(question)]
    for code in CODE.finditer(question):
        named.extend(next(g for g in p.groups()[1:] if g) for p in PASTED.finditer(code.group(1) or code.group(2)))
    out: set[str] = set()
    for m in OWNER.finditer(question):
        phrase = PHRASE_END.split(question[m.end():], maxsplit=1)[0]
        for word in phrase.split()[:OWNED_WORDS]:
            named.extend(w for t in TOKEN.finditer(plain(word)) if (w := t.group("word")) and written_as_code(w))
        kind = OWN_KIND.match(phrase)
        if kind and written_as_code(kind.group(1)) and set(units(kind.group(1))) & new:
            out.update(u for u in units(rjieba.cut(kind.group(2))[0]) if u in new)
    for name in named:
        parts = set(units(name))
        if parts & new:
            out.update(parts | key_units(name))
    return frozenset(out)


def unknown_names(question: str, claim: str, shown: list[str], own: frozenset[str] = frozenset()) -> list[str]:
    """The names (capitalised words inside a sentence, identifiers, numbers with letters) that the question and
    the answer's first claim both hold and none of `shown` does (the text and place of the sources the claim
    stands on; `support.check_answer` passes those the answer cites, and those that support the claim when it
    cites none): "the Wi-Fi password at the Sydney office is ..." over sources that never name Sydney, and "the
    guest Wi-Fi password in the Chicago office ..." citing only the Washington DC page while the Chicago page was
    shown too: the answer is about what its sources do not cover. Plain words never count, however rare: people
    ask in words the documents do not use, and introduce names of their own (`own`, see `own_names`)."""
    # Two letters name nothing for sure ("OK", "IT", "HR" are words as often as names), and an acronym is a word
    # to whoever uses it ("POSTing a form", "the canonical URL", "HTTP methods"): names are written in words.
    acronyms = {u for m in ACRONYM.finditer(question) for u in units(m.group(1))}
    asked = ({k for k in key_units(question) if not k[0].isdigit() and len(k) > 2} & set(units(question))
             - acronyms - own)
    said = asked & key_units(claim) & set(units(claim))
    if not said:
        return []
    held = set().union(*(held_words(text) for text in shown)) if shown else set()
    return sorted(said - held)


# A question that asks for an amount: "how many", "how much"; 多少, 几 with a measure word.
QUANTITY_ASKED = re.compile(r"\bhow (?:many|much)\b|多少|几(?:个|天|次|年|月|周|小时|位|名|种|台|张|点|层|岁)", re.IGNORECASE)
# Words that state an amount without a digit ("it is free", "there is no limit").
AMOUNT_WORDS = frozenset("free unlimited none zero nothing half twice double all every no".split())


# A question that asks for a thing, not for a yes or a no: "which variable", "how do I", 哪个, 怎么, 为什么.
OPEN_ASKED = re.compile(r"\b(?:what|which|how|why|where|when|who|whom|whose)\b"
                        r"|什么|哪|怎么|怎样|如何|为什么|为何|多少|几|谁|多久|何时", re.IGNORECASE)


def asks_open(question: str) -> bool:
    """Whether the question asks for a thing (what, which, how...): then a clause of the answer that only repeats
    it sets the scene; a yes-no question repeated is its answer ("GSA IT gives each remote employee a $500 stipend")."""
    return bool(OPEN_ASKED.search(question))


def asks_quantity(question: str) -> bool:
    return bool(QUANTITY_ASKED.search(question))


def states_quantity(claims: list[str]) -> bool:
    """Whether some claim states an amount: a number (number words count, see `units`) or a word of AMOUNT_WORDS.
    "There are lockers available throughout the building [2]" answers no "how many" (markers and list numbers
    are no amounts)."""
    for text in claims:
        bare = LIST_ITEM.sub("", MARKER.sub("", text))
        if any(u[0].isdigit() for u in units(bare)) or AMOUNT_WORDS & set(re.findall(r"\w+", bare.casefold())):
            return True
    return False


# Verbs every question may use that say nothing of its topic ("how do I get...", "what happens if...").
GENERIC_UNITS = frozenset(units("get got need want know tell find happen work make take give go ask please "
                                "anyone someone something thing way kind help"))
OFF_TOPIC_MIN_UNITS = 3


def off_topic(question: str, answer: str, cited: list[str]) -> bool:
    """Whether an answer misses what was asked: the question names at least OFF_TOPIC_MIN_UNITS units of its
    topic and the answer and the sources it cites (their text and place) hold at most one of them (an
    answer about insurance receipts to "How do I get reimbursed for a taxi to the airport?")."""
    topic = set(units(question)) - GENERIC_UNITS
    if len(topic) < OFF_TOPIC_MIN_UNITS:
        return False
    seen = set(units(answer)).union(*(held_words(text) for text in cited))
    return len(topic & seen) <= 1
