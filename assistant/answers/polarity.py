"""Whether a claim says the opposite of its source: the same words with the other polarity ("GSA IT can provide
a wireless keyboard" against "GSA IT does not provide wireless peripherals") are a contradiction, not support.
Pure and lexical, like the rest of the check (support.py calls `contradicts` on the window it found)."""

from __future__ import annotations

import re

from assistant.answers.text_units import clauses, negated, said_no, units

CONDITION = re.compile(r"\b(?:if|unless|when|whenever|as long as|provided that)\b|如果|假如|除非|只要", re.IGNORECASE)
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
        conditions.append(clause[m.start():])
    return stated, conditions


def contradicts(claim: str, source_text: str, segs: tuple[tuple[int, int], ...], window: tuple[int, int]) -> bool:
    """Whether the source says no where the claim says yes, or yes where it says no ("GSA IT can provide a
    wireless keyboard" against "GSA IT does not provide wireless peripherals"): the same words with the
    opposite polarity are a contradiction, not support. Compared clause to clause, the claim's against those of
    every sentence of the window (the one holding most of the claim's words may list the things, "a monitor,
    keyboard, mouse", and the next say what is not provided): two clauses that are each other's best match and
    share at least half of the shorter one's units, one negated and the other not. What a clause states and its
    "if"/"unless"/"when" condition are compared apart (`stated_clauses`): "raises a RuntimeError if it has no
    static folder" states no negation against `raise RuntimeError(...)`."""
    first, last = window
    stated, conditions = stated_clauses(claim)
    theirs = [stated_clauses(source_text[start:end]) for start, end in segs[first:last + 1]]
    return (_flipped(stated, [(k, c) for k, (said, _) in enumerate(theirs) for c in said])
            or _flipped(conditions, [(k, c) for k, (_, when) in enumerate(theirs) for c in when]))


def _flipped(ours: list[str], theirs: list[tuple[int, str]]) -> bool:
    """Whether a clause of ours and one of theirs (with the number of its sentence) are each other's best match,
    share at least half of the shorter one's units, and one of them is negated, unless the sentence says ours in
    two clauses (`_no_said_beside`)."""
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
                if not negated(c) and _no_said_to_ours(u, v, beside):
                    return True
                continue
            if _bound_against_value(c, d):
                continue
            if not _no_said_beside(c, v, frozenset(x for x in u - v if not negated(x)), beside):
                return True
    return False


def _no_said_to_ours(ours: frozenset[str], matched: frozenset[str], beside: list[tuple[str, frozenset[str]]]) -> bool:
    """Whether, our clause and its match both saying yes, another clause of the matched one's sentence says no to
    what ours adds to the match: every unit of what it says no to is ours, and not all of them the match's. "春节前一周
    可以发布新版本" against "春节前一周和年底最后两周是发布冻结期，除紧急安全修复外不发布新版本": the weeks in one clause, the "no
    release" in the next. A "no" to something ours does not state is no answer to it ("Interns get sick leave"
    against "Interns do not get vacation days, but they get sick leave"), nor is a bound ("其他城市不超过 500 元")."""
    for e, _ in beside:
        said = said_no(e)
        if said is None or (BOUND.search(e) and not negated(BOUND.sub(" ", e))):
            continue
        no_to = frozenset(units(said))
        if no_to and no_to <= ours and not no_to <= matched:
            return True
    return False


def _no_said_beside(clause: str, matched: frozenset[str], lacking: frozenset[str],
                    beside: list[tuple[str, frozenset[str]]]) -> bool:
    """Whether our clause says no to what the matched clause (`matched`, its units) does not state, and another
    clause of its sentence (`beside`) says no too, holding at least half of what the matched one lacks of ours
    (`lacking`, negations aside): the sentence says ours in two clauses. "春节前一周和年底最后两周不允许发布新版本"
    against "春节前一周和年底最后两周是发布冻结期，除紧急安全修复外不发布新版本": the weeks in one clause, the "no release" in
    the next. A "yes" is never so read ("周末可以发布新版本" against "周末是发布冻结期，不发布新版本"), nor a "no" to what the
    matched clause states ("Interns don't get sick leave" against "Interns do not get vacation days, but they get
    sick leave")."""
    first = units(said_no(clause) or "")[:1]  # the word it says no to
    return (bool(first) and first[0] not in matched and bool(lacking)
            and any(negated(e) and len(lacking & w) * 2 >= len(lacking) for e, w in beside))


def _bound_against_value(one: str, other: str) -> bool:
    """Whether one of two clauses is negated only by a bound ("不超过 4 小时") and the other compares nothing ("4
    小时"): a limit and the value it limits say the same."""
    bound, value = (one, other) if negated(one) else (other, one)
    return bool(BOUND.search(bound)) and not negated(BOUND.sub(" ", bound)) and not COMPARED.search(value)
