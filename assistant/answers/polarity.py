"""Whether a claim says the opposite of its source: the same words with the other polarity ("GSA IT can provide
a wireless keyboard" against "GSA IT does not provide wireless peripherals") are a contradiction, not support.
Pure and lexical, like the rest of the check (support.py calls `contradicts` on the window it found)."""

from __future__ import annotations

import re
from functools import lru_cache

from assistant.answers.text_units import clauses, negated, said_no, units

CONDITION = re.compile(r"\b(?:if|unless|when|whenever|as long as|provided that)\b|如果|假如|除非|只要(?!求)", re.IGNORECASE)
# Where a Chinese condition ends and what it conditions begins, in one clause: 只要没有违规就可以保留电脑.
THEN_ZH = re.compile(r"就|则|便")
# A question put inside a sentence says neither yes nor no: 有没有阻碍, 是不是, "whether or not", "no matter".
EITHER = re.compile(r"([\u4e00-\u9fff])[不没]\1|有没有|\bor not\b|\bno matter\b", re.I)
# What leads a clause into its sentence ("while contractors get no phone"), and an exception it makes (除紧急安全修复外,
# "except for hotfixes"): neither is the subject its "no" is said of.
LEAD = re.compile(r"^\W*(?:and|but|however|while|whereas|although|yet)\b|^\W*(?:但是|但|而|不过|然而)", re.I)
# Words before a "no" that say how it is said, not of whom: "make sure you do not", "please do not", 尽量不要, 确认没有.
MODAL_WORDS = ("make sure", "please", "ensure", "always", "check", "confirm", "verify", "尽量", "确认", "确保", "检查", "请",
               "务必", "千万", "应该", "应当", "必须", "需要", "要")
EXCEPT = re.compile(r"除(?:了)?[^，,。]*?外|\b(?:except|other than|apart from|besides)\b[^,;]*", re.I)
# "A instead of B" says no to B: what follows is not what the claim says yes to.
INSTEAD = re.compile(r"\b(?:instead of|rather than|as opposed to|in place of)\b.*|(?:代替|取代|替代|而非|而不是).*", re.I)
# A bound: "no more than 4 hours", "must not exceed $800", 不超过 800 元, 不晚于. Against a clause that states the
# value without comparing ("the RTO is 4 hours", "RTO 目标是 4 小时") it agrees; against the comparison without the
# "not" ("more than 4 hours", 超过 800 元) it is the opposite.
EN_COMPARISON = r"(?:more|less|later|earlier|fewer|greater|longer|higher|lower)\s+than\b"
ZH_COMPARISON = r"超过|高于|低于|多于|大于|小于|晚于|早于"
BOUND = re.compile(rf"\b(?:no|not)\s+{EN_COMPARISON}|\bnot\s+(?:to\s+)?exceed|(?:不|没有?)(?={ZH_COMPARISON})",
                   re.IGNORECASE)
COMPARED = re.compile(rf"\b{EN_COMPARISON}|\bexceed|{ZH_COMPARISON}", re.IGNORECASE)


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
        then = THEN_ZH.search(clause, m.end())
        conditions.append(clause[m.start():then.start() if then else len(clause)])
        if then and clause[then.end():].strip():
            stated.append(clause[then.end():])
    return stated, conditions


def contradicts(claim: str, source_text: str, segs: tuple[tuple[int, int], ...], window: tuple[int, int]) -> bool:
    """Whether the source says no where the claim says yes, or yes where it says no ("GSA IT can provide a
    wireless keyboard" against "GSA IT does not provide wireless peripherals"): the same words with the
    opposite polarity are a contradiction, not support. Compared clause to clause, the claim's against those of
    every sentence of the window (the one holding most of the claim's words may list the things, "a monitor,
    keyboard, mouse", and the next say what is not provided): two clauses that are each other's best match and
    share at least half of the shorter one's units, one negated and the other not, or both saying yes while
    another clause of that sentence says no to what ours adds (`_flipped`). What a clause states and its condition
    ("if", "unless", "when", "as long as", 如果, 只要…就) are compared apart (`stated_clauses`): "raises a
    RuntimeError if it has no static folder" states no negation against `raise RuntimeError(...)`. A claim whose
    statement and condition are both the opposite states the rule's other case ("You can use the VPN as long as
    your laptop is not jailbroken" against "You cannot use the VPN if your laptop is jailbroken"): no contradiction."""
    first, last = window
    stated, conditions = stated_clauses(claim)
    theirs = [stated_clauses(source_text[start:end]) for start, end in segs[first:last + 1]]
    said = _flipped(stated, [(k, c) for k, (states, _) in enumerate(theirs) for c in states])
    when = _flipped(conditions, [(k, c) for k, (_, whens) in enumerate(theirs) for c in whens])
    return said != when


def _flipped(ours: list[str], theirs: list[tuple[int, str]]) -> bool:
    """Whether a clause of ours and one of theirs (with the number of its sentence) are each other's best match,
    share at least half of the shorter one's units, and either one of them is negated, unless the sentence says
    ours in two clauses (`_no_said_beside`), or both say yes and another clause of that sentence says no to what
    ours adds (`_no_said_to_ours`)."""
    mine = [(c, frozenset(units(c))) for c in ours]
    other = [(k, d, frozenset(units(d))) for k, d in theirs]
    if not mine or not other:
        return False
    shared = [[len(u & v) for _, _, v in other] for _, u in mine]
    for i, (c, u) in enumerate(mine):
        for j, (k, d, v) in enumerate(other):
            mutual = shared[i][j] == max(shared[i]) == max(row[j] for row in shared)
            enough = shared[i][j] >= max(1, min(len(u), len(v)) / 2)
            if not (mutual and enough):
                continue
            beside = [(e, w) for m, (n, e, w) in enumerate(other) if n == k and m != j]
            if negated(c) == negated(d):
                if not negated(c) and _no_said_to_ours(c, u, v, beside):
                    return True
                continue
            yes, no = (d, c) if negated(c) else (c, d)
            if _bound_against_value(c, d) or EITHER.search(no) or (yes is c and _instead(c, d)) or (
                    yes is c and _another_subjects_no(d, beside) and _own_subject(d, u)):
                continue
            if not _no_said_beside(c, v, frozenset(x for x in u - v if not negated(x)), beside):
                return True
    return False


def _no_said_to_ours(clause: str, ours: frozenset[str], matched: frozenset[str],
                     beside: list[tuple[str, frozenset[str]]]) -> bool:
    """Whether, our clause and its match both saying yes, another clause of the matched one's sentence (before or
    after it) says no to what ours adds to the match: every unit of what it says no to is ours, and not all of them
    the match's. "春节前一周可以发布新版本" against "春节前一周和年底最后两周是发布冻结期，除紧急安全修复外不发布新版本": the weeks in
    one clause, the "no release" in the next. Not a "no":
    - to something ours does not state ("Interns get sick leave" against "Interns do not get vacation days, but
      they get sick leave");
    - said of a subject of its own ("工作日晚上可以部署到预发环境" against "工作日晚上可以部署，周末不部署到预发环境",
      `_own_subject`), or to what another clause of the sentence says yes to ("The stipend covers phone bills"
      against "… covers internet and phone bills, but not phones", `_another_subjects_no`);
    - a bound ("其他城市不超过 500 元") or a question put in the sentence (EITHER: "whether or not they are urgent");
    - to what ours says no to itself ("Staff sign in with Okta instead of passwords", INSTEAD)."""
    if (m := INSTEAD.search(clause)) and clause[:m.start()].strip():
        ours = ours - frozenset(units(m.group(0)))
    for e, _ in beside:
        said = said_no(e)
        if said is None or EITHER.search(e) or (BOUND.search(e) and not negated(BOUND.sub(" ", e))):
            continue
        no_to = frozenset(units(said))
        if (no_to and no_to <= ours and not no_to <= matched and not _own_subject(e, ours)
                and not _another_subjects_no(e, beside)):
            return True
    return False


def _own_subject(clause: str, ours: frozenset[str]) -> bool:
    """Whether the clause says its "no" of a subject of its own, a word before its negation that `ours` lacks:
    "周末不部署到预发环境" against "工作日晚上可以部署到预发环境", "while contractors get no phone" against "Full-time staff
    get a phone". What leads the clause in (LEAD) and an exception it makes (EXCEPT) are no subject:
    "除紧急安全修复外不发布新版本" says no of what its sentence's first clause names; nor are the words that say how
    (MODAL_WORDS: "尽量不要安排远程", "make sure you do not")."""
    bare = EXCEPT.sub(" ", LEAD.sub(" ", clause))
    said = said_no(bare)
    if said is None:
        return False
    before = frozenset(u for u in units(bare) if not negated(u)) - frozenset(units(said)) - _modal_units()
    return bool(before - ours)


@lru_cache(maxsize=1)
def _modal_units() -> frozenset[str]:
    return frozenset(u for w in MODAL_WORDS for u in units(w))


def _instead(yes: str, no: str) -> bool:
    """Whether our clause, which says yes, says no after "instead of" or "rather than" (not at its start, where the
    phrase is the whole clause) to all the source's clause says no to: "Backups are stored in S3 rather than on
    local disk" against "…stored in S3, not on local disk"."""
    m = INSTEAD.search(yes)
    no_to = frozenset(units(said_no(no) or ""))
    return (m is not None and bool(yes[:m.start()].strip()) and bool(no_to)
            and no_to <= frozenset(units(m.group(0))))


def _another_subjects_no(clause: str, beside: list[tuple[str, frozenset[str]]]) -> bool:
    """Whether what the clause says no to, another clause of its sentence that says yes states too: with a subject
    of its own (`_own_subject`), the "no" is another subject's ("Admins can delete projects and export data, but
    viewers cannot export data")."""
    no_to = frozenset(units(said_no(clause) or ""))
    return bool(no_to) and any(no_to <= w for e, w in beside if e != clause and not negated(e))


def _no_said_beside(clause: str, matched: frozenset[str], lacking: frozenset[str],
                    beside: list[tuple[str, frozenset[str]]]) -> bool:
    """Whether our clause says no to what the matched clause (`matched`, its units) does not state, and another
    clause of its sentence (`beside`) says no too, holding at least half of what the matched one lacks of ours
    (`lacking`, negations aside): the sentence says ours in two clauses. "春节前一周和年底最后两周不允许发布新版本"
    against "春节前一周和年底最后两周是发布冻结期，除紧急安全修复外不发布新版本": the weeks in one clause, the "no release" in
    the next. A "yes" is never so read ("周末可以发布新版本" against "周末是发布冻结期，不发布新版本"), nor a "no" to what the
    matched clause states ("Interns don't get sick leave" against "Interns do not get vacation days, but they get
    sick leave"), nor a "no" to what the matched clause and a parallel clause state ("实习生没有带薪年假" against
    "实习生享有带薪病假，但没有带薪年假": 带薪 of 带薪病假 is not all it says no to)."""
    no_to = frozenset(units(said_no(clause) or ""))  # what it says no to
    return (bool(no_to) and not no_to <= matched and bool(lacking)
            and any(negated(e) and len(lacking & w) * 2 >= len(lacking) for e, w in beside))


def _bound_against_value(one: str, other: str) -> bool:
    """Whether one of two clauses is negated only by a bound ("不超过 4 小时") and the other compares nothing ("4
    小时"): a limit and the value it limits say the same."""
    bound, value = (one, other) if negated(one) else (other, one)
    return bool(BOUND.search(bound)) and not negated(BOUND.sub(" ", bound)) and not COMPARED.search(value)
