"""Whether a claim says the opposite of its source: the same words with the other polarity ("GSA IT can provide
a wireless keyboard" against "GSA IT does not provide wireless peripherals") are a contradiction, not support.
Pure and lexical, like the rest of the check (support.py calls `contradicts` on the window it found)."""

from __future__ import annotations

import re
from functools import lru_cache

import rjieba

from assistant.answers.text_units import clauses, negated, said_no, units

CONDITION = re.compile(r"\b(?:if|unless|when|whenever|as long as|provided that)\b|如果|假如|除非|只要(?!求)", re.IGNORECASE)
UNLESS = re.compile(r"^\W*unless\b", re.IGNORECASE)  # "unless X" is "if not X" (除非 holds its own 非)
THEN_ZH = frozenset({"就", "则", "便"})  # where a Chinese condition ends, as words: 只要没有违规就可以保留电脑
# A question put in a sentence says neither yes nor no: "whether or not", "no matter", and in Chinese a word said
# with its negation (有没有, 是不是, 紧 不 紧急), found as words: the 能不能 of 功能不能 is a "cannot", and so, the
# words being cut as they are (差旅费 用 不用), is the 能 不能 of 能不能用.
ASKED_EN = re.compile(r"\bwhether or not\b|\bor not\b|\bno matter\b", re.IGNORECASE)
A_NOT_A = re.compile(r"^(.+?)[不没]\1")
# What leads a clause into its sentence ("while contractors get no phone"), and an exception it makes (除紧急安全修复外,
# "except for hotfixes"): neither is the subject its "no" is said of.
LEAD = re.compile(r"^\W*(?:and|but|however|while|whereas|although|yet)\b|^\W*(?:但是|但|而|不过|然而)", re.I)
EXCEPT_ZH = r"除(?:了)?[^，,。]*?外"
EXCEPT = re.compile(rf"{EXCEPT_ZH}|\b(?:except|other than|apart from|besides)\b[^,;]*", re.I)
# Words before a "no" that say how or when it is said, not of whom: "make sure you do not", "currently does not",
# 尽量不要, 确认没有, 暂时不, 一律不.
MODAL_WORDS = ("make sure", "please", "ensure", "always", "check", "confirm", "verify", "currently", "still", "yet",
               "generally", "尽量", "确认", "确保", "检查", "请", "务必", "千万", "应该", "应当", "必须", "需要", "要",
               "目前", "暂时", "暂", "还", "仍", "一律", "均", "都", "也")
# What a clause says no to after "instead of", "except" (its own "no"): not what it says yes to.
INSTEAD = re.compile(r"\b(?:instead of|rather than|as opposed to|in place of|except|excluding|other than|apart from)\b.*"
                     rf"|(?:代替|取代|替代|而非|而不是).*|{EXCEPT_ZH}", re.IGNORECASE)
# A claim about all of them is contradicted by a "no" of any one ("All plans include audit logs").
UNIVERSAL = re.compile(r"\b(?:all|every|any|each)\b|所有|任何|一切|全部|每个", re.IGNORECASE)
# A bound: "no more than 4 hours", "must not exceed $800", 不超过 800 元, 不晚于. Against a clause that states the
# value without comparing ("the RTO is 4 hours", "RTO 目标是 4 小时") it agrees; against the comparison without the
# "not" ("more than 4 hours", 超过 800 元) it is the opposite.
EN_COMPARISON = r"(?:more|less|later|earlier|fewer|greater|longer|higher|lower)\s+than\b"
ZH_COMPARISON = r"超过|高于|低于|多于|大于|小于|晚于|早于"
BOUND = re.compile(rf"\b(?:no|not)\s+{EN_COMPARISON}|\bnot\s+(?:to\s+)?exceed|(?:不|没有?)(?={ZH_COMPARISON})",
                   re.IGNORECASE)
COMPARED = re.compile(rf"\b{EN_COMPARISON}|\bexceed|{ZH_COMPARISON}", re.IGNORECASE)

Clauses = list[tuple[str, frozenset[str]]]  # clauses with their units


def stated_clauses(text: str) -> tuple[list[str], list[str]]:
    """The clauses of a sentence, what they state apart from their conditions: "A blueprint raises a RuntimeError
    if it has no static folder" states that it raises one (its "no" says when), under the condition "if it has
    no static folder". Polarity is compared statement to statement and condition to condition."""
    stated: list[str] = []
    conditions: list[str] = []
    for clause in clauses(text):
        m = CONDITION.search(clause)
        if m is None:
            stated.append(clause)
            continue
        if clause[:m.start()].strip():
            stated.append(clause[:m.start()])
        then = _then_at(clause, m.end())
        conditions.append(clause[m.start():then if then is not None else len(clause)])
        if then is not None and clause[then + 1:].strip():
            stated.append(clause[then + 1:])
    return stated, conditions


def _then_at(clause: str, start: int) -> int | None:
    """Where, after `start`, the word 就, 则 or 便 ends a Chinese condition (not the 则 of 规则, the 便 of 方便)."""
    at = start
    for word in rjieba.cut(clause[start:]):
        if word in THEN_ZH:
            return at
        at += len(word)
    return None


def contradicts(claim: str, source_text: str, segs: tuple[tuple[int, int], ...], window: tuple[int, int]) -> bool:
    """Whether the source says no where the claim says yes, or yes where it says no ("GSA IT can provide a
    wireless keyboard" against "GSA IT does not provide wireless peripherals"): the same words with the
    opposite polarity are a contradiction, not support. Compared clause to clause, the claim's against those of
    every sentence of the window (the one holding most of the claim's words may list the things, "a monitor,
    keyboard, mouse", and the next say what is not provided), by `_flips`. What a clause states and its condition
    ("if", "unless", "when", "as long as", 如果, 只要…就) are compared apart (`stated_clauses`): "raises a
    RuntimeError if it has no static folder" states no negation against `raise RuntimeError(...)`. A claim whose
    statement and condition are both the opposite of one sentence's states the rule's other case ("You can use the
    VPN as long as your laptop is not jailbroken" against "You cannot use the VPN if your laptop is jailbroken"):
    no contradiction."""
    first, last = window
    stated, conditions = stated_clauses(claim)
    theirs = [stated_clauses(source_text[start:end]) for start, end in segs[first:last + 1]]
    said = _flips(stated, [(k, c) for k, (states, _) in enumerate(theirs) for c in states])
    when = _flips(conditions, [(k, c) for k, (_, whens) in enumerate(theirs) for c in whens], whole=True)
    return bool((said | when) - (said & when))


def _says_no(clause: str) -> bool:
    """Whether the clause says no, the questions it puts aside (`_asked_out`); "unless" is "if not"."""
    text = _asked_out(clause)
    return (said_no(text) is not None) != bool(UNLESS.match(text))


def _no_to(clause: str) -> frozenset[str]:
    """What the clause says no to: the units after its negation (after "unless" when it has none)."""
    return frozenset(_said_no_units(clause))


def _said_no_units(clause: str) -> tuple[str, ...]:
    """What the clause says no to, its units in order."""
    text = _asked_out(clause)
    said = said_no(text)
    if said is None and (m := UNLESS.match(text)):
        said = text[m.end():]
    return units(said or "")


@lru_cache(maxsize=4096)
def _asked_out(clause: str) -> str:
    """The clause without the questions it puts ("whether or not they are urgent", 是不是紧急修复); cached, being read
    for every pair of clauses compared."""
    text = ASKED_EN.sub(" ", clause)
    if not re.search(r"[不没]", text):
        return text
    words = rjieba.cut(text)
    kept: list[str] = []
    i = 0
    while i < len(words):
        word, after = words[i], "".join(words[i + 1:i + 3])
        if A_NOT_A.match(word):  # 有没有, 是不是, 可不可以
            i += 1
        elif words[i + 1:i + 2] in (["不"], ["没"]) and word.strip() and after[1:].startswith(word):  # 紧 不 紧急
            i += 3
        else:
            kept.append(word)
            i += 1
    return "".join(kept)


def _flips(ours: list[str], theirs: list[tuple[int, str]], whole: bool = False) -> set[int]:
    """The sentences (their numbers in `theirs`) where a clause of ours and one of theirs are each other's best
    match, share at least half of the shorter one's units, and say the opposite: one says no and the other does
    not (not a bound against its value, `_no_said_beside`, "instead of", another subject's "no"), or both say yes
    and another clause of that sentence says no to what ours adds (`_no_said_to_ours`). With `whole` (conditions),
    a "no" must deny all the other states: "if the change is unreviewed" and "if the change has not been reviewed"
    are no opposites."""
    mine = [(c, frozenset(units(c))) for c in ours]
    other = [(k, d, frozenset(units(d))) for k, d in theirs]
    found: set[int] = set()
    if not mine or not other:
        return found
    shared = [[len(u & v) for _, _, v in other] for _, u in mine]
    for i, (c, u) in enumerate(mine):
        for j, (k, d, v) in enumerate(other):
            mutual = shared[i][j] == max(shared[i]) == max(row[j] for row in shared)
            enough = shared[i][j] >= max(1, min(len(u), len(v)) / 2)
            if not (mutual and enough):
                continue
            beside = [(e, w) for m, (n, e, w) in enumerate(other) if n == k and m != j]
            if _says_no(c) == _says_no(d):
                if not _says_no(c) and _no_said_to_ours(c, u, v, beside):
                    found.add(k)
                continue
            yes, no = (d, c) if _says_no(c) else (c, d)
            if (_bound_against_value(c, d) or (yes is c and (_instead(c, d) or _another_subjects_no(c, u, d, beside)))
                    or (whole and not _no_to(no) <= frozenset(units(yes)))
                    or (no is c and _no_said_beside(c, v, frozenset(x for x in u - v if not negated(x)), beside))):
                continue
            found.add(k)
    return found


def _no_said_to_ours(clause: str, ours: frozenset[str], matched: frozenset[str], beside: Clauses) -> bool:
    """Whether, our clause and its match both saying yes, another clause of the matched one's sentence (before or
    after it) says no to what ours adds to the match: every unit of what it says no to is ours, and not all of them
    the match's. "春节前一周可以发布新版本" against "春节前一周和年底最后两周是发布冻结期，除紧急安全修复外不发布新版本": the weeks in
    one clause, the "no release" in the next. Not a "no":
    - to something ours does not state ("Interns get sick leave" against "Interns do not get vacation days, but
      they get sick leave"), or says no to itself ("Deploys happen daily except weekends", INSTEAD);
    - said of a subject of its own ("工作日晚上可以部署到预发环境" against "工作日晚上可以部署，周末不部署到预发环境",
      `_other_subject`), or to what another clause of the sentence says yes to ("The stipend covers phone bills"
      against "… covers internet and phone bills, but not phones");
    - a bound ("其他城市不超过 500 元") or a question put in the sentence ("whether or not they are urgent")."""
    if (m := INSTEAD.search(clause)) and clause[:m.start()].strip():
        ours = ours - frozenset(units(m.group(0)))
    for e, _ in beside:
        if not _says_no(e) or _bound_only(e):
            continue
        no_to = _no_to(e)
        yes = [w for f, w in beside if f != e and not _says_no(f)]
        if (no_to and no_to <= ours and not no_to <= matched and not _other_subject(e, ours, matched.union(*yes))
                and not any(no_to <= w for w in yes)):
            return True
    return False


def _other_subject(clause: str, ours: frozenset[str], yes: frozenset[str]) -> bool:
    """Whether the clause says its "no" of a subject of its own: a word before its negation that `ours` lacks, and
    none of ours that the clauses of its sentence saying yes (`yes`, their units) lack, which would name the subject
    the "no" is of ("the mobile app currently does not support SSO" against "The mobile app supports SSO", where
    "The web app supports SSO").
    What leads the clause in (LEAD), an exception it makes (EXCEPT: "除紧急安全修复外不发布新版本" says no of what its
    sentence's first clause names) and the words of manner (MODAL_WORDS: 尽量不要, "currently does not") are no
    subject."""
    bare = _asked_out(EXCEPT.sub(" ", LEAD.sub(" ", clause)))
    said = said_no(bare)
    if said is None:
        return False
    before = frozenset(u for u in units(bare) if not negated(u)) - frozenset(units(said)) - _modal_units()
    return bool(before - ours) and not before & (ours - yes)


@lru_cache(maxsize=1)
def _modal_units() -> frozenset[str]:
    return frozenset(u for w in MODAL_WORDS for u in units(w))


def _instead(yes: str, no: str) -> bool:
    """Whether our clause, which says yes, says no after "instead of", "rather than" or "except" (not at its start,
    where the phrase is the whole clause) to all the source's clause says no to: "Backups are stored in S3 rather
    than on local disk" against "…stored in S3, not on local disk"."""
    m = INSTEAD.search(yes)
    no_to = _no_to(no)
    return (m is not None and bool(yes[:m.start()].strip()) and bool(no_to)
            and no_to <= frozenset(units(m.group(0))))


def _another_subjects_no(clause: str, ours: frozenset[str], no: str, beside: Clauses) -> bool:
    """Whether the source's clause that says no (`no`) says it of a subject of its own, about what another clause of
    its sentence says yes to: "Admins can delete projects and export data, but viewers cannot export data" against
    "Admins can export data". Not against a claim about all of them ("All users can export data")."""
    if UNIVERSAL.search(clause):
        return False
    no_to = _no_to(no)
    yes = [w for e, w in beside if not _says_no(e)]
    return bool(no_to) and any(no_to <= w for w in yes) and _other_subject(no, ours, frozenset().union(*yes))


def _no_said_beside(clause: str, matched: frozenset[str], lacking: frozenset[str], beside: Clauses) -> bool:
    """Whether our clause, which says no, says it in two clauses of the source's sentence: another clause of it
    (`beside`) says no too, to all that ours says no to and the matched clause (`matched`, its units) states, and
    holds at least half of what the matched one lacks of ours (`lacking`, negations aside), where what ours says no to
    first the matched clause does not state, or all else it states of it the other clause denies too ("Interns do not
    get paid vacation" against "Interns get paid sick leave, but no paid vacation").
    "春节前一周和年底最后两周不允许发布新版本" against "春节前一周和年底最后两周是发布冻结期，除紧急安全修复外不发布新版本"; "实习生没有带薪年假"
    against "实习生享有带薪病假，但没有带薪年假". A "yes" is never so read ("周末可以发布新版本" against "周末是发布冻结期，不发布新版本"),
    nor a "no" to what the matched clause states and no other denies ("Interns don't get sick leave" against
    "Interns do not get vacation days, but they get sick leave"; "Interns do not get sick leave or vacation days"
    against "Interns get sick leave, but no vacation days")."""
    said = _said_no_units(clause)
    no_to, first = frozenset(said), said[:1]  # all it says no to, and the word it says no to first
    return (bool(no_to) and bool(lacking)
            and any(_says_no(e) and (first[0] not in matched or (no_to & matched) - {first[0]} <= w)
                    and len(lacking & w) * 2 >= len(lacking) for e, w in beside))


def _bound_against_value(one: str, other: str) -> bool:
    """Whether one of two clauses is negated only by a bound ("不超过 4 小时") and the other compares nothing ("4
    小时"): a limit and the value it limits say the same."""
    bound, value = (one, other) if negated(one) else (other, one)
    return _bound_only(bound) and not COMPARED.search(value)


def _bound_only(clause: str) -> bool:
    """Whether a bound ("不超过 4 小时", "no more than 4 hours") is all the clause's negation: it limits, it denies nothing."""
    return bool(BOUND.search(clause)) and not negated(BOUND.sub(" ", clause))
