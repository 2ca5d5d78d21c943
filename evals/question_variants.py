"""`assistant eval variants`: every answerable question of a file asked again the ways people ask, by rules.

Each answerable question gives one variant of each kind (when the rule applies to it):
- `first_person`: a first-person frame with contractions ("I'm new here and I've got a question: ...");
- `typo`: two neighbouring letters of its longest content word swapped;
- `synonym`: one word replaced by an everyday word for it that documents seldom use (a fixed table of
  common words, not taken from any question set);
- `run_on`: lower case, no punctuation;
- `story`: the question after a sentence about the asker's situation;
- `own_name`: the question asked of a thing of the asker's that no document names ("In my `load_invoice`
  function, ...", "In my `order_tracker.xlsx` spreadsheet, ..."; code for a question about a code file).

A question in Chinese gets the same kinds in Chinese: frames and stories in Chinese, a typo of the characters
input methods put for each other (的/得/地, 在/再, 做/作), a synonym from a table of everyday Chinese words
(报销 → 报账, 电脑 → 笔记本, ...), "在我的 `load_invoice` 函数里，..." for its own name.

A variant keeps the question's `source` and `answer_facts`, and says its `variant` kind and the question it
came `from`, so that `assistant eval answers` reports false abstentions and facts per kind. The split is the
original question's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys

from assistant.answers.text_units import language_of
from evals.eval_answers import split_of
from evals.own_name_pairs import STYLES, name_of

KINDS = ("first_person", "typo", "synonym", "run_on", "story", "own_name")
# Everyday words for words documents use (the left side as the documents say it).
SYNONYMS = {
    "employee": "staffer", "employees": "staff", "vacation": "holiday", "reimbursed": "paid back",
    "reimbursement": "payback", "laptop": "computer", "manager": "boss", "supervisor": "boss",
    "travel": "trip", "purchase": "buy", "purchased": "bought", "receive": "get", "require": "need",
    "required": "needed", "request": "ask for", "approval": "sign-off", "approve": "sign off on",
    "colleague": "coworker", "colleagues": "coworkers", "position": "job", "salary": "pay",
    "meeting": "call", "office": "workplace", "schedule": "calendar", "document": "paper",
    "documents": "papers", "submit": "send in", "obtain": "get", "assistance": "help", "contact": "reach",
    "expire": "run out", "hours": "hrs", "minimum": "least", "maximum": "most", "allowed": "ok",
    "permitted": "ok", "eligible": "able to get", "install": "set up", "account": "login",
}
FRAMES = ("I'm new here and I've got a question: {q}", "I've been wondering, {q}")
STORIES = (
    "My situation is a bit unusual and my team lead wasn't sure either. {q}",
    "I just started last month and nobody on my team knows. {q}",
)
WORD = re.compile(r"[A-Za-z]{5,}")
# The same, for a question in Chinese.
ZH_FRAMES = ("我想问一下，{q}", "请问一下，{q}")
ZH_STORIES = ("我刚入职一个月，组里的人也不太清楚。{q}", "我的情况有点特殊，主管也拿不准。{q}")
ZH_SYNONYMS = {
    "报销": "报账", "审批": "批", "电脑": "笔记本", "同事": "同组的人", "补贴": "补助", "年假": "带薪假",
    "发布": "上线", "配置": "设置", "申请": "提", "远程办公": "在家上班", "密码": "口令", "多长时间": "多久",
    "经理": "领导", "工资": "薪水", "合并": "合进去", "要求": "规定",
}
# The characters Chinese input methods put for each other most often (的/得/地, 在/再, 做/作).
ZH_TYPOS = (("的", "得"), ("在", "再"), ("做", "作"), ("得", "的"), ("地", "的"), ("再", "在"), ("作", "做"))
ZH_THINGS = {"function": "函数", "module": "模块", "class": "类"}


def _pick(items: tuple[str, ...], text: str) -> str:
    return items[hashlib.sha256(text.encode()).digest()[0] % len(items)]


def _zh(q: str) -> bool:
    return language_of(q) == "zh"


def _continued(q: str) -> str:
    """The question as the rest of a sentence: its first letter in lower case ("I" kept)."""
    return q[0].lower() + q[1:] if q[:2] != "I " else q


def first_person(q: str) -> str:
    if _zh(q):
        return _pick(ZH_FRAMES, q).format(q=q)
    return _pick(FRAMES, q).format(q=_continued(q))


def typo(q: str) -> str | None:
    if _zh(q):
        return next((q.replace(a, b, 1) for a, b in ZH_TYPOS if a in q), None)
    words = sorted(WORD.findall(q), key=lambda w: (-len(w), w))
    if not words:
        return None
    w = words[0]
    i = len(w) // 2
    return q.replace(w, w[:i - 1] + w[i] + w[i - 1] + w[i + 1:], 1)


def synonym(q: str) -> str | None:
    if _zh(q):
        return next((q.replace(word, other, 1) for word, other in ZH_SYNONYMS.items() if word in q), None)
    for word, other in SYNONYMS.items():
        if re.search(rf"\b{word}\b", q, re.I):
            return re.sub(rf"\b{word}\b", other, q, count=1, flags=re.I)
    return None


def run_on(q: str) -> str:
    return " ".join(re.sub(r"[^\w\s'’-]", " ", q).lower().split())


def story(q: str) -> str:
    return _pick(ZH_STORIES if _zh(q) else STORIES, q).format(q=q)


CODE_FILE = re.compile(r"\.(?:py|pyi|js|jsx|ts|tsx|go|rs|java|kt|rb|php|c|cc|cpp|h|hpp|cs|swift|scala|sh)$")
CODE_WORDS = re.compile(r"`|\w\(\)|[a-z]_[a-z]|[a-z]\.[a-z]|[a-z][A-Z]")  # a question that names code


def own_name(q: str, source: str = "") -> str:
    """The question asked of a thing of the asker's: a function, module or class for a question about code (its
    source a code file, or code named in it), a spreadsheet otherwise."""
    code = bool(CODE_FILE.search(source) or CODE_WORDS.search(q))
    style = _pick(STYLES, q)
    name = f"`{name_of(q, style)}`" if code else f"`{name_of(q, 'function').split('_')[1]}_tracker.xlsx`"
    if _zh(q):
        return f"在我的 {name} {ZH_THINGS[style] if code else '表格'}里，{q}"
    return f"In my {name} {style if code else 'spreadsheet'}, {_continued(q)}"


RULES = {"first_person": first_person, "typo": typo, "synonym": synonym, "run_on": run_on, "story": story,
         "own_name": own_name}


def variants(rows: list[dict]) -> list[dict]:
    """One variant of each kind per answerable question (where its rule applies)."""
    out = []
    for row in rows:
        if row.get("unanswerable"):
            continue
        question = str(row["question"]).strip()
        for kind, rule in RULES.items():
            text = own_name(question, str(row.get("source") or "")) if kind == "own_name" else rule(question)
            if text and text != question:
                out.append({**row, "question": text, "variant": kind, "from": row.get("id") or question,
                            "split": row.get("split") or split_of(question)})
    return out


def run(args: argparse.Namespace, _settings: object = None) -> int:
    try:
        rows = [json.loads(line) for line in args.file.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, json.JSONDecodeError) as exc:
        print(f"assistant eval variants: {args.file}: {exc}", file=sys.stderr)
        return 2
    made = variants(rows)
    with open(args.out, "w", encoding="utf-8") as f:
        for row in made:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    counts = {kind: sum(r["variant"] == kind for r in made) for kind in KINDS}
    print(json.dumps({"out": str(args.out), "questions": len(made), "by_kind": counts}))
    return 0
