"""`assistant eval contrast`: the answer check measured on claim/source pairs made by a method, not by hand.

From every Markdown or text file under the roots, the sentences that state something (at least six content
units, not a heading, link list or code) are taken as claims against the passage they stand in (the
sentence with its neighbours). Each gives pairs of known verdicts:

- `same`: the sentence itself (supported);
- `paraphrase`: the sentence reworded by rules that keep its meaning (supported): its clauses reordered
  around "and"/"，", number words and digits exchanged, contractions expanded or made, a leading "Note
  that"/"请注意" style frame added;
- `clause`: a clause of the sentence that counts something, alone, as an answer states one fact of a sentence
  (supported; the clause that `moved_number` below changes);
- `negation`: the polarity flipped (not supported): "is"/"can"/"must"/… gain or lose "not", 是/可以/能/会/需要/
  支持/有 gain or lose 不/没;
- `number`: its first number changed (not supported);
- `moved_number`: that clause with its number replaced by another number the passage states of the same thing
  (the word or character after it) outside it: "一线城市每晚不超过 500 元" from "一线城市每晚不超过 800 元，其他城市不超过
  500 元". Every number is in the source, said of other words (not supported);
- `name`: a name it holds (a capitalised word, an identifier, a Latin word in Chinese text) replaced by a name
  of another file of the corpus that this passage never uses (not supported);
- `source_swap`: the sentence against a passage of another file that shares the most words with it without
  stating it (less than 60 % of its units: pages that repeat a sentence are no swap; not supported);
- `yes_beside` and `no_beside`, from every sentence (not only the six a file) whose first clause says yes and a later
  clause begins with its "no" ("春节前一周和年底最后两周是发布冻结期，除紧急安全修复外不发布新版本"): the first clause alone
  (supported: the "no" beside it is not said of it), and that clause made one with what the later one says no to,
  joined by "to" or 可以 ("…是发布冻结期可以发布新版本"; not supported: the sentence says the opposite).

The agreement of `support()` with the known verdict is reported per kind and language, on the split of the
files that was not used to shape the check (a file is `tune` when the first byte of the SHA-256 of its path
is even, else `report`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import rjieba

from assistant.answers.support import support
from assistant.answers.text_units import clauses, language_of, negated, segments, units

KINDS = ("same", "paraphrase", "clause", "negation", "number", "moved_number", "name", "source_swap", "yes_beside",
         "no_beside")
MIN_UNITS = 6
MAX_PER_FILE = 6

EN_ADD = re.compile(r"\b(is|are|was|were|can|must|will|should|may|could)\b(?! not)", re.I)
ZH_FLIP = [("不可以", "可以"), ("不能", "能"), ("不会", "会"), ("不需要", "需要"), ("不支持", "支持"), ("没有", "有"), ("不是", "是")]
ZH_ADD = [("可以", "不可以"), ("需要", "不需要"), ("支持", "不支持"), ("能", "不能"), ("会", "不会"), ("必须", "不必"),
          ("是", "不是"), ("有", "没有")]
NUMBER = re.compile(r"(?<![\w.])(\d+)(?:[.,]\d+)?(?![\w.])")
COUNTED = re.compile(r"(?<![\w.,])(\d+(?:[.,]\d+)*)\s*([A-Za-z]+|[\u4e00-\u9fff])")  # "13 days", "800 元"
EN_NUMBER_WORDS = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
                   "eight": "8", "nine": "9", "ten": "10", "twelve": "12", "fourteen": "14", "thirty": "30"}
CONTRACTIONS = [("do not", "don't"), ("does not", "doesn't"), ("cannot", "can't"), ("is not", "isn't"),
                ("are not", "aren't"), ("will not", "won't"), ("it is", "it's"), ("you are", "you're")]
# A name: CamelCase, an acronym, a snake_case identifier, a letters-and-digits model name, or (in English, not
# first in its sentence) a capitalised word.
NAME = re.compile(r"(?<![\w.])(?:[A-Za-z]+[A-Z]\w*|[A-Z]{2,}\w*|\w+_\w+|[A-Za-z]+\d\w*|[A-Z][a-z]{2,})(?![\w.])")
STRICT_NAME = re.compile(r"(?<![\w.])(?:[A-Za-z]+[A-Z]\w*|[A-Z]{2,}\w*|\w+_\w+|[A-Za-z]+\d\w*)(?![\w.])")
LEAD = re.compile(r"^[\s\d.)*#>_`\-]*\w+")  # a sentence's first word, after list marks and emphasis


@dataclass(frozen=True)
class Pair:
    kind: str
    language: str
    claim: str
    source: str
    supported: bool
    file: str
    split: str


def split_of(path: str) -> str:
    return "tune" if hashlib.sha256(path.encode("utf-8")).digest()[0] % 2 == 0 else "report"


def sentences_of(text: str) -> list[tuple[str, str]]:
    """(sentence, its passage: the sentence with one segment each side, line breaks kept) for the sentences that state
    something: prose lines, not headings, lists of links, tables or code."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"^---\n.*?\n---\n", "", text, flags=re.S)
    # A paragraph wrapped over lines is one text; a list item, heading or table row starts a line of its own.
    text = re.sub(r"(?<=\S)\n(?=[^\S\n]*[^\s\-*+>#|\d])", " ", text)
    spans = segments(text)
    segs = [text[s:e] for s, e in spans]
    out = []
    for i, seg in enumerate(segs):
        bare = seg.strip()
        if (bare.startswith(("#", "|", "<", "{", "!", "[")) or "](" in bare or "{%" in bare or len(bare) > 400
                or len(set(units(bare))) < MIN_UNITS):
            continue
        # The passage as the file has it: a heading or list item keeps its own line, as in a chunk of the store.
        passage = text[spans[max(0, i - 1)][0]: spans[min(len(spans), i + 2) - 1][1]]
        out.append((bare.lstrip("-*> ").strip(), passage))
    return out


EN_CUES = [(re.compile(r"\b(can)not\b", re.I), r"\1"), (re.compile(r"\b(\w+)n['’]t\b", re.I), r"\1"),
           (re.compile(r"\b(is|are|was|were|can|must|will|should|may|does|do|did|could|would) not\b", re.I), r"\1"),
           (re.compile(r"\bnever\b", re.I), "always"), (re.compile(r"\bno\s+(?=\w)", re.I), "")]


def negate(claim: str, zh: bool) -> str | None:
    """The claim with its polarity flipped: a negation it holds taken away, else one added after its first
    auxiliary (English) or before its first verb of a known set (Chinese); None where no rule applies."""
    if zh:
        for old, new in ZH_FLIP:
            # Not inside a question put in the sentence (有没有, 是不是, 可不可以): it says neither yes nor no.
            at = next((i for i in range(len(claim)) if claim.startswith(old, i) and not (i and claim[i - 1] == old[1])),
                      None)
            if at is not None:
                return claim[:at] + new + claim[at + len(old):]
        words = rjieba.cut(claim, False)  # a verb is negated where it is a word: not the 能 of 可能
        for old, new in ZH_ADD:
            if old in words:
                i = words.index(old)
                return "".join(words[:i] + [new] + words[i + 1:])
        return None
    if negated(claim):
        for pattern, plain in EN_CUES:
            if pattern.search(claim):
                out = pattern.sub(plain, claim, count=1)
                return out if not negated(out) else None
        return None
    m = EN_ADD.search(claim)
    return claim[: m.end()] + " not" + claim[m.end():] if m else None


# A clause that says no, and what it says no to; a bound ("no more than 4 hours", 不超过) limits, it does not deny;
# a condition ("if it is not signed") says when. Read apart from the check's own reading of negation. Chinese: not
# the words a negation character only begins (不同 "different", 不断, 不仅, 无论).
NO_SAID_EN = re.compile(r"(?:\b(?:not|never|no)\b|n['’]t\b)\s*(?P<rest>.+)", re.I)
NO_SAID_ZH = re.compile(r"(?:不得|不要|不能|不可以|不可|不用|不必|没有|不|没|无|未)"
                        r"(?!同|过|仅|但|久|少|断|管|论|常|来|限|外|然|如|妨|止|错|的)(?P<rest>.+)")
# A later clause whose "no" is said of the sentence's own subject begins with it: after a connective, an exception
# ("除紧急安全修复外", "except for hotfixes"), a pronoun and its auxiliary ("it does not"), or a word of manner (尽量).
NO_FIRST_EN = re.compile(r"^(?:(?:and|but|so|yet|while)\s+)?(?:except\b[^,]*\s+)?(?:(?:it|they|we|you|this|these)\s+)?"
                         r"(?:(?:do|does|did|is|are|was|were|can|will|should|must|may|has|have)\s*)?"
                         r"(?:not|never|no)\b|^(?:(?:it|they|we|you)\s+)?(?:do|does|did|is|are|can|should|must)n['’]t\b",
                         re.I)
NO_FIRST_ZH = re.compile(r"^(?:但是|但|而且|而|并且|并)?(?:除(?:了)?[^，,]*?外)?(?:尽量|务必|千万|请)?(?:不|没|无|未)")
# A question put inside a sentence says neither yes nor no: 有没有阻碍 "whether there are blockers", "may or may not".
EITHER = re.compile(r"(.)[不没]\1|\bor (?:may |do |does |is |are )?not\b|\bno matter\b|\bnot only\b", re.I)
BOUND_OR_CONDITION = re.compile(r"\b(?:no|not)\s+(?:more|less|later|earlier|fewer|greater|longer)\s+than\b"
                                r"|\bexceed|\b(?:if|unless|when|whenever)\b|不(?:超过|高于|低于|多于|少于|晚于|早于)|如果|除非",
                                re.I)


def yes_beside_no(claim: str, zh: bool) -> tuple[str, str] | None:
    """The sentence's first clause that says yes (alone, as an answer states one fact of a sentence), and that clause
    made one with what a later clause that begins with its "no" says no to, said as a yes; None where the sentence
    has no such pair of clauses."""
    said, first = (NO_SAID_ZH, NO_FIRST_ZH) if zh else (NO_SAID_EN, NO_FIRST_EN)
    parts = [c.strip(" ，,;；:：。.") for c in clauses(claim) if not EITHER.search(c)]
    plain = [i for i, c in enumerate(parts) if c and not said.search(c) and not BOUND_OR_CONDITION.search(c)]
    if not plain:
        return None
    for later in parts[plain[0] + 1:]:
        m = said.search(later)
        if (m and first.search(later) and not BOUND_OR_CONDITION.search(later)
                and len(set(units(m.group("rest")))) >= 2):
            rest = m.group("rest").strip(" ，,;；。.")
            yes = parts[plain[0]]
            return (f"{yes}。", f"{yes}可以{rest}。") if zh else (f"{yes}.", f"{yes} to {rest}.")
    return None


def change_number(claim: str) -> str | None:
    m = NUMBER.search(claim)
    if not m:
        return None
    value = int(m.group(1))
    return claim[: m.start(1)] + str(value + 1 if value < 10 else value * 2) + claim[m.end(1):]


def move_number(claim: str, passage: str) -> tuple[str, str] | None:
    """A clause of the claim that counts something (COUNTED), as an answer states one fact of a sentence, and the
    same clause with its number replaced by another number that the passage states of the same thing (the same
    unit after it: "days" and "day") outside this clause; None where the passage has none."""
    for part in clauses(claim):
        if len(set(units(part))) < 3:
            continue
        rest = passage.replace(part, " ")
        for m in COUNTED.finditer(part):
            for other in COUNTED.finditer(rest):
                if units(other.group(2)) == units(m.group(2)) and other.group(1) != m.group(1):
                    return part.strip(), (part[: m.start(1)] + other.group(1) + part[m.end(1):]).strip()
    return None


def paraphrase(claim: str, zh: bool, rng: random.Random) -> str | None:
    """The claim reworded by the first rule that applies, the rules taken in a random order."""
    def reorder() -> str | None:
        sep = "，" if zh else ", and "
        if sep in claim:
            a, b = claim.rstrip("。.").split(sep, 1)
            return f"{b}{sep}{a}" + ("。" if zh else ".")
        return None

    def numbers() -> str | None:
        if zh:
            return None
        for word, digit in EN_NUMBER_WORDS.items():
            if re.search(rf"\b{word}\b", claim, re.I):
                return re.sub(rf"\b{word}\b", digit, claim, count=1, flags=re.I)
        return None

    def contract() -> str | None:
        for full, short in CONTRACTIONS:
            if full in claim:
                return claim.replace(full, short, 1)
            if short in claim:
                return claim.replace(short, full, 1)
        return None

    def frame() -> str:
        return ("请注意，" + claim) if zh else "Note that " + claim[0].lower() + claim[1:]

    rules = [reorder, numbers, contract]
    rng.shuffle(rules)
    for rule in rules:
        if (out := rule()) and out != claim:
            return out
    return frame()


def names_in(text: str, zh: bool) -> list[str]:
    """The names of a sentence: STRICT_NAME shapes anywhere; in English also capitalised words after the first."""
    if zh:
        return STRICT_NAME.findall(text)
    lead = LEAD.match(text)
    rest = text[lead.end():] if lead else text
    return STRICT_NAME.findall(text[:lead.end()] if lead else "") + NAME.findall(rest)


def swap_name(claim: str, passage: str, names: list[str], zh: bool, rng: random.Random) -> str | None:
    found = names_in(claim, zh)
    others = [n for n in names if n.casefold() not in passage.casefold()]
    if not found or not others:
        return None
    old = found[0]
    return claim.replace(old, rng.choice(others), 1)


def derive(roots: list[Path], seed: int = 0) -> list[Pair]:
    """The pairs of every kind from the files under roots (see the module docstring)."""
    rng = random.Random(seed)
    files = sorted(p for root in roots for p in root.rglob("*") if p.suffix in (".md", ".txt", ".rst") and p.is_file())
    texts = {str(p.relative_to(root)): p.read_text(encoding="utf-8", errors="replace")
             for root in roots for p in files if p.is_relative_to(root)}
    names_by_file = {f: sorted({n for sentence, _ in sentences_of(t) for n in names_in(sentence, language_of(t) == "zh")})
                     for f, t in texts.items()}
    language = {f: language_of(t) for f, t in texts.items()}
    passages = [(f, passage, frozenset(units(passage))) for f, t in texts.items() for _, passage in sentences_of(t)]
    pairs: list[Pair] = []
    for name, text in texts.items():
        found = sentences_of(text)
        rng.shuffle(found)
        others = [n for f, ns in names_by_file.items() if f != name and language[f] == language[name] for n in ns]
        for claim, passage in found[:MAX_PER_FILE]:
            zh = language_of(claim) == "zh"
            lang, split = ("zh" if zh else "en"), split_of(name)

            def add(kind: str, text_: str | None, supported: bool, source: str = passage) -> None:
                if text_ and (text_ != claim or kind in ("same", "source_swap")):
                    pairs.append(Pair(kind, lang, text_ or claim, source, supported, name, split))

            add("same", claim, True)
            add("paraphrase", paraphrase(claim, zh, rng), True)
            add("negation", negate(claim, zh), False)
            add("number", change_number(claim), False)
            if moved := move_number(claim, passage):
                add("clause", moved[0], True)
                add("moved_number", moved[1], False)
            add("name", swap_name(claim, passage, others, zh, rng), False)
            claim_units = set(units(claim))
            # Another file's closest passage that does not state the sentence itself (pages repeat sentences).
            elsewhere = [(len(claim_units & pu), p) for f, p, pu in passages
                         if f != name and len(claim_units & pu) < 0.6 * len(claim_units)]
            if elsewhere:
                add("source_swap", claim, False, max(elsewhere, key=lambda x: x[0])[1])
        # A yes beside a no is rare: every sentence of the file that has one gives its two pairs.
        for claim, passage in found:
            if beside := yes_beside_no(claim, language_of(claim) == "zh"):
                lang = "zh" if language_of(claim) == "zh" else "en"
                pairs.append(Pair("yes_beside", lang, beside[0], passage, True, name, split_of(name)))
                pairs.append(Pair("no_beside", lang, beside[1], passage, False, name, split_of(name)))
    return pairs


def agreement(pairs: list[Pair]) -> dict:
    """The share of pairs where the check's verdict is the known one, per kind and language."""
    table: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    misses: list[dict] = []
    for p in pairs:
        verdict = support(p.claim, p.source).supported
        table[p.kind][p.language].append(verdict == p.supported)
        if verdict != p.supported and len(misses) < 40:
            misses.append({"kind": p.kind, "claim": p.claim, "file": p.file, "expected": p.supported})
    by_kind = {kind: {lang: {"pairs": len(v), "agreement": round(sum(v) / len(v), 4)} for lang, v in sorted(langs.items())}
               for kind, langs in table.items()}
    return {"pairs": len(pairs), "by_kind": {k: by_kind[k] for k in KINDS if k in by_kind}, "misses": misses}


def run(args: argparse.Namespace, _settings: object = None) -> int:
    roots = [r.resolve() for r in args.root]
    for root in roots:
        if not root.is_dir():
            print(f"assistant eval contrast: no such folder: {root}", file=sys.stderr)
            return 2
    pairs = [p for p in derive(roots, args.seed) if args.split == "all" or p.split == args.split]
    if not pairs:
        print("assistant eval contrast: no sentence to make pairs of under the roots", file=sys.stderr)
        return 2
    report = {"roots": [str(r) for r in roots], "split": args.split, **agreement(pairs)}
    if not args.misses:
        report.pop("misses")
    print(json.dumps(report, ensure_ascii=False, indent=None if args.json else 2))
    return 0
