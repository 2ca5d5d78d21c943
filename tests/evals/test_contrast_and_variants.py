"""Evaluation sets made by a method: claim/source contrast pairs for the answer check, questions reworded the
ways people ask, saved answers with a name of code put in, and the one-line headline of an answers report."""

from __future__ import annotations

import json
from pathlib import Path

from evals import contrast_pairs, own_name_pairs, question_variants
from evals.eval_answers import headline, outcome

ROOT = Path(__file__).resolve().parents[2]
ZH = ROOT / "tests" / "fixtures" / "zh-reports"


def test_contrast_pairs_of_every_kind_with_their_verdicts(tmp_path):
    (tmp_path / "leave.md").write_text(
        "# Leave\n\nNew employees get 13 vacation days per year and they can carry them over to the next year.\n"
        "Sick leave is separate, and a note from a doctor is needed after three days of absence from Workday.\n",
        encoding="utf-8")
    (tmp_path / "travel.md").write_text(
        "# Travel\n\nBook flights at least 14 days ahead in Concur, and ask your supervisor before booking them.\n",
        encoding="utf-8")
    pairs = contrast_pairs.derive([tmp_path])
    kinds = {p.kind for p in pairs}
    assert {"same", "paraphrase", "negation", "number", "source_swap"} <= kinds
    assert all(p.supported == (p.kind in ("same", "paraphrase", "clause")) for p in pairs)
    negated = next(p for p in pairs if p.kind == "negation")
    assert " not " in negated.claim or "n't" not in negated.claim
    report = contrast_pairs.agreement(pairs)
    assert report["by_kind"]["negation"]["en"]["agreement"] == 1.0, report["misses"]
    assert report["by_kind"]["number"]["en"]["agreement"] == 1.0, report["misses"]


def test_a_number_moved_to_another_clause_of_its_passage_is_a_contrast_pair(tmp_path):
    (tmp_path / "leave.md").write_text(
        "# Leave\n\nNew employees get 13 vacation days in their first three years, and staff get 20 vacation days "
        "after fifteen years.\n", encoding="utf-8")
    pairs = {p.kind: p for p in contrast_pairs.derive([tmp_path])}
    assert pairs["clause"].claim == "New employees get 13 vacation days in their first three years"
    assert pairs["moved_number"].claim.startswith("New employees get 20 vacation days")
    assert pairs["clause"].supported and not pairs["moved_number"].supported
    report = contrast_pairs.agreement(list(contrast_pairs.derive([tmp_path])))
    assert report["by_kind"]["moved_number"]["en"]["agreement"] == 1.0, report["misses"]
    assert report["by_kind"]["clause"]["en"]["agreement"] == 1.0, report["misses"]


def test_a_chinese_verb_is_negated_where_it_is_a_word():
    assert contrast_pairs.negate("员工可以申请调休。", True) == "员工不可以申请调休。"
    assert contrast_pairs.negate("否则新内核模块可能写不进去。", True) is None  # 能 of 可能 is no verb of its own


def test_contrast_pairs_of_chinese_reports_are_judged_by_kind_and_language():
    pairs = contrast_pairs.derive([ZH])
    report = contrast_pairs.agreement(pairs)
    assert "zh" in {p.language for p in pairs}  # a sentence of commands and names reads as English
    for kind in ("same", "paraphrase", "negation", "number"):
        assert report["by_kind"][kind]["zh"]["pairs"] >= 5


def test_each_answerable_question_is_reworded_six_ways(tmp_path):
    rows = [{"id": "a", "question": "How many vacation days does a new employee get?", "source": "leave.md",
             "answer_facts": ["13"]},
            {"id": "b", "question": "What is the Wi-Fi password in Sydney?", "unanswerable": True}]
    made = question_variants.variants(rows)
    assert {r["variant"] for r in made} == set(question_variants.KINDS)
    assert all(r["from"] == "a" and r["answer_facts"] == ["13"] and r["source"] == "leave.md" for r in made)
    by_kind = {r["variant"]: r["question"] for r in made}
    assert "I've" in by_kind["first_person"] or "I'm" in by_kind["first_person"]
    assert by_kind["run_on"] == "how many vacation days does a new employee get"
    assert "staffer" in by_kind["synonym"] and by_kind["typo"] != rows[0]["question"]
    assert by_kind["own_name"].startswith("In my `") and "spreadsheet, how many vacation days" in by_kind["own_name"]
    code = question_variants.variants([{"question": "What does `send_file` return?", "source": "src/flask/helpers.py"}])
    assert next(r for r in code if r["variant"] == "own_name")["question"].split("`")[2].split(",")[0].strip() in \
        own_name_pairs.STYLES, "a question about code is asked of a function, module or class of the asker's"
    out = tmp_path / "variants.jsonl"
    args = type("Args", (), {"file": tmp_path / "q.jsonl", "out": out})()
    args.file.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    assert question_variants.run(args) == 0 and len(out.read_text().splitlines()) == len(made)


def test_a_chinese_question_is_reworded_in_chinese():
    made = question_variants.variants([{"question": "出差去一线城市，酒店每晚最多能报销多少钱？", "answer_facts": ["800"]}])
    by_kind = {r["variant"]: r["question"] for r in made}
    assert set(by_kind) == {"first_person", "synonym", "run_on", "story", "own_name"}  # no 的/在/做 to mistype
    assert by_kind["first_person"].endswith("出差去一线城市，酒店每晚最多能报销多少钱？") and "I" not in by_kind["first_person"]
    assert "报账" in by_kind["synonym"] and by_kind["run_on"] == "出差去一线城市 酒店每晚最多能报销多少钱"
    assert by_kind["own_name"].startswith("在我的 `") and "表格里，" in by_kind["own_name"]
    typo = question_variants.variants([{"question": "入职第一天要先配置什么才能访问内部的 GitLab？"}])
    assert next(r["question"] for r in typo if r["variant"] == "typo") == "入职第一天要先配置什么才能访问内部得 GitLab？"


def test_saved_answers_with_a_name_of_code_put_in(tmp_path):
    """A kept answer gives, per style of name, an `own` pair (the asker's name, to keep) and a `library` pair (a
    name of code the asker does not call theirs and no source holds, to flag); a replaced answer gives none."""
    source = ("def redirect(location: str, code: int = 302) -> BaseResponse:\n"
              '    """Create a redirect response object.\n    :param code: The status code for the redirect.\n')
    kept = {"question": "What status code does redirect() send when I don't pass one?", "unanswerable": False,
            "model_text": "Without a code, the status code for the redirect is 302 [1].",
            "prompt_sources": [{"n": 1, "path": "src/flask/helpers.py", "place": "helpers.py — src/flask/helpers.py",
                                "text": source}]}
    made = own_name_pairs.pairs_of(kept)
    assert [k for k, _, _ in made].count("own") == 5 and [k for k, _, _ in made].count("library") == 5
    own = [q for k, q, _ in made if k == "own"][2]
    assert own.startswith("In my `") and own.endswith("when I don't pass one?")
    assert own_name_pairs.pairs_of({**kept, "model_text": "The documents do not say."}) == []
    result = own_name_pairs.agreement([kept])
    assert result == {"own": {"pairs": 5, "agreement": 1.0}, "library": {"pairs": 5, "agreement": 1.0}}
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"details": [kept]}), encoding="utf-8")
    args = type("Args", (), {"reports": [report]})()
    assert own_name_pairs.run(args) == 0
    args.reports = [tmp_path / "missing.json"]
    assert own_name_pairs.run(args) == 2
    broken = tmp_path / "broken.json"  # a saved answer whose sources lost their text
    broken.write_text(json.dumps({"details": [{**kept, "prompt_sources": [{"n": 1}]}]}), encoding="utf-8")
    args.reports = [broken]
    assert own_name_pairs.run(args) == 2


def test_the_headline_counts_outcomes_and_the_crag_score():
    rows = [
        {"unanswerable": False, "abstained": False, "facts_found": 1},  # right answer
        {"unanswerable": False, "abstained": True, "facts_found": 0},   # false abstention
        {"unanswerable": False, "abstained": False, "facts_found": 0},  # answer without the facts
        {"unanswerable": True, "abstained": True, "facts_found": 0},    # right abstention
        {"unanswerable": True, "abstained": False, "facts_found": 0},   # invention
    ]
    assert [outcome(r) for r in rows] == ["right_answer", "false_abstention", "answer_without_facts",
                                          "right_abstention", "invention"]
    line = headline(rows)
    assert line["crag_score"] == round((1 + 0 - 1 + 1 - 1) / 5, 4)
    assert line["right_answer"] == line["invention"] == 1


def test_a_yes_made_of_a_clause_and_what_the_next_clause_says_no_to_is_a_contrast_pair(tmp_path):
    (tmp_path / "release.md").write_text(
        "# 发布\n\n春节前一周和年底最后两周是发布冻结期，除紧急安全修复外不发布新版本。\n", encoding="utf-8")
    (tmp_path / "kit.md").write_text(
        "# Kit\n\nGSA IT provides a monitor for the home office, but it does not provide a wireless keyboard.\n",
        encoding="utf-8")
    pairs = {(p.kind, p.language): p for p in contrast_pairs.derive([tmp_path])}
    assert pairs[("no_beside", "zh")].claim == "春节前一周和年底最后两周是发布冻结期可以发布新版本。"
    assert pairs[("yes_beside", "zh")].claim == "春节前一周和年底最后两周是发布冻结期。"
    assert pairs[("no_beside", "en")].claim == ("GSA IT provides a monitor for the home office to provide a wireless "
                                                "keyboard.")
    assert not pairs[("no_beside", "en")].supported and pairs[("yes_beside", "en")].supported
    assert contrast_pairs.yes_beside_no("每人只说三件事：今天计划做什么、有没有阻碍（blocker）。", True) is None
    assert contrast_pairs.yes_beside_no("启动时必须加 --dtype half，V100 不支持 bfloat16。", True) is None  # V100's own "no"
    report = contrast_pairs.agreement(list(pairs.values()))
    for kind in ("yes_beside", "no_beside"):
        for language in ("en", "zh"):
            assert report["by_kind"][kind][language]["agreement"] == 1.0, report["misses"]
