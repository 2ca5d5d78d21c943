"""The citation support check: sentences, scores and spans, abstentions, languages, and its agreement
with the hand-labelled pairs it was tuned on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.answers.attribution import attribute
from assistant.answers.support import (
    NOT_IN_DOCUMENTS,
    SUPPORT_THRESHOLD,
    abstained,
    check_answer,
    key_units,
    language_of,
    split_sentences,
    support,
    units,
)
from assistant.answers.text_units import camel_words
from evals.support_agreement import agreement, load_labels

ROOT = Path(__file__).resolve().parents[3]
LABELS = ROOT / "tests" / "fixtures" / "eval" / "support-labels.jsonl"
LEAVE_ZH = (ROOT / "tests" / "fixtures" / "zh-handbook" / "leave.md").read_text(encoding="utf-8")
LEAVE_EN = (
    "# Leave\n\nNew employees get 13 vacation days per year. Days not taken carry over to the next year.\n"
    "Sick leave is separate: 10 days a year, with a note from a doctor after three days.\n"
    "Ask your supervisor before booking travel."
)


def test_a_marker_after_end_punctuation_belongs_to_the_sentence_before() -> None:
    answer = "Vacation is 13 days. [1] Sick leave is 10 days [2].\n- Ask your supervisor [1][3]"
    sentences = split_sentences(answer)
    assert [s.text for s in sentences] == [
        "Vacation is 13 days. [1]", "Sick leave is 10 days [2].", "- Ask your supervisor [1][3]"
    ]
    assert [s.cited for s in sentences] == [[1], [2], [1, 3]]
    for s in sentences:
        assert answer[s.start : s.end] == s.text


def test_decimals_and_abbreviations_do_not_end_a_sentence() -> None:
    sentences = split_sentences("Version 3.5 of e.g. the tool runs. It works.")
    assert [s.text for s in sentences] == ["Version 3.5 of e.g. the tool runs.", "It works."]


def test_chinese_sentences_split_at_full_width_punctuation() -> None:
    sentences = split_sentences("正式员工每年有 15 天年假。[1]病假是 10 天。[2]")
    assert [(s.text, s.cited) for s in sentences] == [("正式员工每年有 15 天年假。[1]", [1]), ("病假是 10 天。[2]", [2])]


def test_units_drop_stop_words_stem_plurals_and_keep_numbers_exactly() -> None:
    assert units("The employees get 1,000 Vacation days [2].") == ("employe", "get", "1000", "vacation", "day")
    assert "send_file" in units("Call send_file()")
    assert units("年假") == ("年假",) and "年假" in units("带薪年假")
    assert key_units("New employees in Austin get 13 days") == {"austin", "13"}


def test_a_paraphrase_is_supported_with_its_span() -> None:
    s = support("Employees receive 13 vacation days each year [1].", LEAVE_EN)
    assert s.supported and s.score >= SUPPORT_THRESHOLD
    assert LEAVE_EN[s.char_start : s.char_end] == "New employees get 13 vacation days per year."


def test_a_list_item_s_number_is_not_part_of_the_claim() -> None:
    assert support("2. Employees receive 13 vacation days each year.", LEAVE_EN).supported
    assert support("- Employees receive 13 vacation days each year.", LEAVE_EN).supported


def test_markdown_emphasis_is_not_part_of_a_word() -> None:
    assert units("It opened in _1874_ and __init__ runs") == units("It opened in 1874 and init runs")
    assert support("The lighthouse was built in _1874_.", "The lighthouse was built in 1874.").supported


def test_number_words_are_numbers() -> None:
    assert support("A doctor's note is needed after 3 days of sick leave.", LEAVE_EN).supported
    assert not support("A doctor's note is needed after five days of sick leave.", LEAVE_EN).supported
    assert support("入职满5年后，年假增加到二十天。", LEAVE_ZH).supported


def test_a_wrong_number_is_not_supported_but_points_at_the_passage() -> None:
    s = support("Employees receive 15 vacation days each year.", LEAVE_EN)
    assert not s.supported and s.score == 0.0
    assert "13 vacation days" in LEAVE_EN[s.char_start : s.char_end]


def test_an_unrelated_claim_has_no_span() -> None:
    assert support("The cafeteria serves lunch.", LEAVE_EN) == support("The cafeteria serves lunch.", LEAVE_EN)
    s = support("The cafeteria serves lunch.", LEAVE_EN)
    assert (s.score, s.supported, s.char_start, s.char_end) == (0.0, False, -1, -1)


CTX_CHUNK = ('def copy_current_request_context(f: F) -> F:\n    """A helper function that decorates a function to retain '
             'the current\n    request context.  This is useful when working with greenlets."""\n    ctx = _cv_request.get(None)')
CTX_PLACE = "ctx.py — src/flask/ctx.py:155-179\nSymbol: copy_current_request_context"


def test_a_claim_about_where_a_thing_is_is_read_from_the_source_s_place() -> None:
    claim = "copy_current_request_context is implemented in the file src/flask/ctx.py, lines 155-179 [1]."
    assert not support(claim, CTX_CHUNK).supported, "the chunk's text alone does not say where it is"
    assert support(claim, CTX_CHUNK, CTX_PLACE).score == 1.0
    assert support(claim, CTX_CHUNK, CTX_PLACE).char_start >= 0, "the span stays within the text"
    # the wrong lines, or another file (though the code says `ctx`), are not supported by the place
    assert not support("copy_current_request_context is defined in src/flask/ctx.py, lines 10-20.", CTX_CHUNK, CTX_PLACE).supported
    assert not support("copy_current_request_context is implemented in src/flask/app.py.", CTX_CHUNK, CTX_PLACE).supported


def test_a_place_s_line_numbers_support_only_a_claim_about_lines() -> None:
    leave = "Paid parental leave gives up to 12 weeks of paid time off after the birth or adoption of a child."
    place = "Paid parental leave — pages/leave/ppl.md:5-14\nSection: About PPL"
    made_up = "You can take up to 12 weeks of paid sabbatical after 5 years at TTS [1]."
    assert support(made_up, leave, place).score == support(made_up, leave, "Paid parental leave — pages/leave/ppl.md").score
    assert support("Paid parental leave is described in ppl.md, lines 5-14.", leave, place).supported


def test_check_answer_and_attribute_read_each_source_s_place() -> None:
    answer = "It is implemented in src/flask/ctx.py, lines 155-179 [2]."
    sources, places = {1: LEAVE_EN, 2: CTX_CHUNK}, {1: "Leave — leave.md", 2: CTX_PLACE}
    assert check_answer(answer, sources).unsupported
    assert check_answer(answer, sources, places).citation_precision == 1.0
    moved = attribute("It is implemented in src/flask/ctx.py, lines 155-179 [1].", sources, places)
    assert moved.changes and moved.changes[0]["now"] == [2]


def test_a_file_name_is_a_key_by_its_name() -> None:
    assert key_units("See src/flask/app.py and app.run.") == {"app", "run"}


ERRORHANDLER_CHUNK = ('def errorhandler(self, code_or_exception):\n    """Register a function to handle errors by code or exception '
                      'class.\n\n    Custom exception types need not be a subclass of the\n    :class:`~werkzeug.exceptions.'
                      'HTTPException` class.\n    """\n    self.register_error_handler(code_or_exception, f)')


def test_a_camel_case_name_holds_its_words() -> None:
    assert camel_words("raise werkzeug.exceptions.HTTPException here") == {"http", "exception"}
    assert camel_words("getFlashedMessages") == {"get", "flash", "messag"}
    assert camel_words("HTTP Werkzeug") == frozenset()  # no inner capital: one word each
    assert units("HTTPException") == ("httpexception",)  # the claim's own units: a name is one
    claim = "The errorhandler decorator registers a function for an exception class or an HTTP status code."
    assert support(claim, ERRORHANDLER_CHUNK).supported
    question = "How does the errorhandler decorator register a function for an HTTP status code?"
    check = check_answer(f"{claim[:-1]} [1].", {1: ERRORHANDLER_CHUNK}, question=question)
    assert check.citation_precision == 1.0 and check.unknown_names == []  # the source speaks of HTTP
    # the parts are words of the source, not names it states: another name is still another thing
    assert not support("The errorhandler decorator registers a function for an HTTP or a Kerberos code.",
                       ERRORHANDLER_CHUNK).supported


def test_two_words_written_as_one_by_the_source_are_found() -> None:
    place = "debughelpers.py — src/flask/debughelpers.py:124-178\nSymbol: explain_template_loading_attempts"
    text = 'def explain_template_loading_attempts(app, template, attempts):\n    """This should help developers understand what failed"""'
    assert support("The explanations are printed by the debug helpers [1].", text, place,
                   asked=frozenset({"explanation", "print"})).supported
    # and one word of the claim written as two by the source
    assert support("Set the filename of the log.", "Set the file name of the log.").supported
    assert not support("The explanations are printed by the debug toolbar [1].", text, place,
                       asked=frozenset({"explanation", "print"})).supported


def test_one_as_a_pronoun_is_no_number_the_source_must_state() -> None:
    chunk = "This is available on both app and blueprint objects. It can handle errors from every request."
    assert "1" not in key_units("It is available on app and blueprint objects, allowing one to handle errors.")
    assert support("It is available on app and blueprint objects, allowing one to handle errors.", chunk).supported
    assert units("one day") == units("1 day")  # still the number where a source writes it so
    assert support("Meet us at One World Trade Center.", "Meet us at One World Trade Center on Monday.").supported
    assert not support("A doctor's note is needed after two days of sick leave.", LEAVE_EN).supported


def test_chinese_claims_are_scored_by_character_bigrams() -> None:
    good = support("员工每年有 15 天带薪年假。", LEAVE_ZH)
    assert good.supported and "15 天带薪年假" in LEAVE_ZH[good.char_start : good.char_end]
    assert not support("员工每年有 12 天带薪年假。", LEAVE_ZH).supported
    assert not support("公司每月组织一次团建活动。", LEAVE_ZH).supported


def test_a_chinese_claim_in_other_words_is_scored_on_the_words_it_shares() -> None:
    # Character pairs across two words ("时市", "天最") are in no paraphrase: pairs are taken inside words.
    source = "差旅期间，市内交通费每天不超过 100 元，需凭发票报销。"
    assert support("出差时市内交通每天最多可以报销 100 元。", source).supported
    assert not support("出差时市内交通每天最多可以报销 300 元。", source).supported
    assert not support("出差时住宿每天最多可以报销 100 元。", source).supported
    assert not support("会议室每天最多可以预订 100 次。", source).supported


def test_runs_the_dictionary_does_not_know_are_still_read_as_character_pairs() -> None:
    assert {"東京", "京駅"} <= set(units("東京駅で会いましょう"))
    assert {"안녕", "세요"} <= set(units("안녕하세요"))


@pytest.mark.parametrize(
    "text",
    [
        "The provided documents do not mention the parking policy.",
        "The context doesn't say how long the trial lasts.",
        "I could not find this in the sources.",
        "There is no information about parking in the documents.",
        NOT_IN_DOCUMENTS["en"],
        NOT_IN_DOCUMENTS["zh"],
        "文档中没有提到停车政策。",
        "资料里没有相关信息。",
        "无法从提供的文档中找到答案。",
        "上下文没有提到这一点。",
    ],
)
def test_abstentions_are_recognised(text: str) -> None:
    assert abstained(text)


@pytest.mark.parametrize(
    "text",
    [
        "Employees get 13 vacation days [1].",
        "Flask does not contain a database layer [2].",
        "正式员工每年有 15 天带薪年假 [1]。",
        "Vacation is 13 days [1]. The documents do not mention parking.",
    ],
)
def test_answers_that_state_something_do_not_abstain(text: str) -> None:
    assert not abstained(text)


def test_language_is_chinese_when_cjk_dominates() -> None:
    assert language_of("年假有几天？") == "zh"
    assert language_of("Flask 的 send_file 函数怎么用？") == "zh"
    assert language_of("How many vacation days do I get?") == "en"
    assert language_of("What does 张三 do in the team?") == "en"
    assert language_of("") == "en"


def test_check_answer_counts_precision_coverage_and_unsupported() -> None:
    answer = "Employees get 13 vacation days a year [1]. Sick leave needs a doctor's note [2]. Ask your supervisor first."
    check = check_answer(answer, {1: LEAVE_EN, 2: "Expense reports are due monthly."})
    assert [c.supported for c in check.sentences] == [True, False, None]
    assert [c.claim for c in check.sentences] == [True, True, True]
    assert check.citation_precision == 0.5
    assert check.citation_coverage == pytest.approx(2 / 3, abs=1e-3)
    assert not check.unsupported and not check.abstained

    wrong = check_answer("Employees get 20 vacation days a year [1].", {1: LEAVE_EN})
    assert wrong.unsupported and wrong.citation_precision == 0.0

    unknown = check_answer("Employees get 13 vacation days a year [4].", {1: LEAVE_EN})
    assert unknown.sentences[0].supports[4].supported is False

    uncited = check_answer("Employees get 13 vacation days a year.", {1: "Expenses are due monthly.", 2: LEAVE_EN})
    assert uncited.sentences[0].supported is None and uncited.citation_coverage == 0.0
    assert not uncited.unsupported  # a shown source holds it, though it cites none
    assert check_answer("Employees get 20 vacation days a year.", {1: LEAVE_EN}).unsupported


def test_a_bare_number_is_a_claim_and_a_leading_marker_cites_it() -> None:
    check = check_answer("[1] 15", {1: "P0 incidents are acknowledged within 15 minutes."})
    assert check.sentences[0].sentence.cited == [1] and check.sentences[0].claim and check.sentences[0].supported
    assert check_answer("[1] 5", {1: "P0 incidents are acknowledged within 15 minutes."}).unsupported
    assert not check_answer("Yes. [1]", {1: LEAVE_EN}).sentences[0].claim


def test_attribute_cites_the_source_that_supports_an_uncited_or_miscited_claim() -> None:
    sources = {1: "Expense reports are due monthly.", 2: LEAVE_EN}
    answer = "Employees get 13 vacation days a year. Expense reports are due monthly [2]. Ask first [1]."
    out = attribute(answer, sources)
    assert out.answer == "Employees get 13 vacation days a year [2]. Expense reports are due monthly [1]. Ask first [1]."
    assert [(c["was"], c["now"]) for c in out.changes] == [([], [2]), ([2], [1])]
    assert [out.answer[c["start"]:c["end"]] for c in out.changes] == [
        "Employees get 13 vacation days a year [2].", "Expense reports are due monthly [1]."]
    check = check_answer(out.answer, sources)
    assert check.citation_coverage == 1.0 and check.sentences[0].supported and check.sentences[1].supported

    # a supported citation, a claim no source holds and a sentence that states nothing stay as they are
    kept = "Employees get 13 vacation days a year [2]. Interns get 40 days. Yes."
    assert attribute(kept, sources).answer == kept and not attribute(kept, sources).changes
    # nothing changed: the attribution hands its sentences on, and the check given them finds what it finds alone
    assert out.sentences is None and attribute(kept, sources).sentences == split_sentences(kept)
    assert check_answer(kept, sources, sentences=attribute(kept, sources).sentences) == check_answer(kept, sources)
    # Chinese: the marker goes before the full stop, with no space
    zh = attribute("员工每年有13天年假。", {1: "员工每年有13天年假，未休完的可以结转。"})
    assert zh.answer == "员工每年有13天年假[1]。"


def test_an_abstaining_answer_has_no_claims() -> None:
    check = check_answer("The documents do not mention parking.", {1: LEAVE_EN})
    assert check.abstained and not check.unsupported
    assert check.citation_coverage is None and check.citation_precision is None


def test_agreement_with_the_hand_labels() -> None:
    labels = load_labels(str(LABELS))
    assert len(labels) >= 40
    assert {bool(r["supported"]) for r in labels} == {True, False}
    figure = agreement(labels)
    held_out = [r for r in labels if r["split"] == "held_out"]
    print(f"support agreement: {figure:.3f} over {len(labels)} pairs at threshold {SUPPORT_THRESHOLD}, "
          f"{agreement(held_out):.3f} over the {len(held_out)} held out")
    assert figure >= 0.85 and len(held_out) >= 20 and agreement(held_out) >= 0.85


def test_the_agreement_command_prints_json() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "evals.support_agreement", str(LABELS)], capture_output=True, text=True,
        check=True, cwd=ROOT,
    )
    report = json.loads(out.stdout)
    assert report["pairs"] >= 40 and report["threshold"] == SUPPORT_THRESHOLD
    assert report["agreement"] == round(agreement(load_labels(str(LABELS))), 4)
    assert set(report["by_split"]) == {"dev", "held_out", "place"}


# --- meaning, not shared words -------------------------------------------------------------------

WIRELESS = "GSA IT does not provide wireless peripherals. You can request a standard keyboard and mouse from the IT desk."


def test_a_claim_that_says_the_opposite_of_its_source_is_not_supported() -> None:
    flipped = support("Yes, GSA IT can provide a wireless keyboard and mouse [1]", WIRELESS)
    assert not flipped.supported and flipped.contradicted
    assert support("No, GSA IT does not provide wireless peripherals [1].", WIRELESS).supported
    check = check_answer("Yes, GSA IT can provide a wireless keyboard and mouse [1].", {1: WIRELESS})
    assert check.unsupported and check.contradicted
    assert support("V100 支持 bfloat16。", "启动时必须加 --dtype half，V100 不支持 bfloat16。").contradicted
    assert support("V100 不支持 bfloat16。", "启动时必须加 --dtype half，V100 不支持 bfloat16。").supported


def test_the_opposite_said_by_the_next_sentence_of_the_window_is_a_contradiction() -> None:
    """The sentence holding most of the claim's words lists the things; the one after it says what is not provided
    (equipment.md as the handbook writes it)."""
    kit = ("The kit typically includes: a monitor, keyboard, mouse, headset, and hub to provide additional "
           "connectivity.\n\nPlease note, GSA IT does not provide wireless peripherals.")
    flipped = support("Yes, GSA IT can provide a wireless keyboard and mouse [1].", kit)
    assert flipped.contradicted and not flipped.supported
    assert support("The kit includes a monitor, keyboard, mouse, headset and hub [1].", kit).supported


def test_a_negated_condition_is_compared_with_conditions_not_with_the_statement() -> None:
    """"raises a RuntimeError if it has no static folder" against the code line that raises it: the "no" is the
    condition's (stated on the line above, outside the window); a condition of the other polarity still is one."""
    code = "        if not self.has_static_folder:\n            raise RuntimeError(\"'static_folder' must be set.\")"
    assert support("A blueprint raises a RuntimeError if it has no static folder [1].", code).supported
    rule = "Call the help desk if your laptop does not start."
    assert support("Call the help desk if your laptop does not start [1].", rule).supported
    assert support("Call the help desk if your laptop starts [1].", rule).contradicted
    assert support("Do not call the help desk if your laptop does not start [1].", rule).contradicted
    # "when" and "whenever" open a condition too, after markup as well as after a space
    assert support("A blueprint raises a RuntimeError when it has no static folder [1].", code).supported
    feedback = "**Whenever you are offered feedback, it can be jarring even when you are prepared for it**."
    assert support("Whenever you are not offered feedback, it can be jarring even when you are prepared for it.",
                   feedback).contradicted


def test_a_clause_of_the_other_polarity_elsewhere_in_the_sentence_is_no_contradiction() -> None:
    source = "vLLM 选的是 0.4.0.post1，因为更新的版本在 V100 上默认走的 attention backend 不支持 compute capability 7.0。"
    assert support("vLLM 使用 0.4.0.post1 版本。", source).supported
    assert support("You can request a keyboard and mouse from the IT desk, but not wireless ones.", WIRELESS).supported


def test_another_number_or_a_name_the_source_never_uses_is_not_supported() -> None:
    assert not support("New employees get 15 vacation days per year.", LEAVE_EN).supported
    assert support("New employees get 13 vacation days per year.", LEAVE_EN).supported
    assert not support("Ask your supervisor in Workday before booking travel.", LEAVE_EN).supported


def test_a_sentence_joining_two_sources_is_supported_clause_by_clause() -> None:
    report = (ROOT / "tests" / "fixtures" / "zh-reports" / "v100-vllm-deploy.md").read_text(encoding="utf-8")
    vllm = report[report.index("## vLLM 的版本与启动参数"):report.index("## 显存占用")]
    driver = report[report.index("## 驱动与 CUDA 版本"):report.index("## vLLM 的版本与启动参数")]
    right = check_answer("在 V100 上部署时，vLLM 使用 0.4.0.post1 版本 [1]，NVIDIA 驱动使用 525.147.05 [2]。",
                         {1: vllm, 2: driver}, question="V100 上部署 vLLM 用的是哪个版本，驱动是什么版本？")
    assert not right.unsupported and right.sentences[0].supported, "the right Chinese answer is kept"
    wrong = check_answer("在 V100 上部署时，vLLM 使用 0.5.0 版本 [1]，NVIDIA 驱动使用 525.147.05 [2]。",
                         {1: vllm, 2: driver})
    assert wrong.unsupported


def test_an_answer_about_another_topic_than_the_question_is_flagged() -> None:
    faq = ("#### How can I get reimbursed for professional liability insurance?\n\nTTS will reimburse professional "
           "liability insurance, up to $150. In order to claim reimbursement, get an email from your supervisor and "
           "attach the receipt you received after purchasing the insurance.")
    answer = "To get reimbursed, attach the receipt you received after purchasing the insurance [1]."
    taxi = check_answer(answer, {1: faq}, {1: "Travel guide FAQ"}, "How do I get reimbursed for a taxi to the airport?")
    assert taxi.off_topic and not taxi.unsupported, "supported by its source, but not what was asked"
    asked = check_answer(answer, {1: faq}, {1: "Travel guide FAQ"}, "How do I get reimbursed for liability insurance?")
    assert not asked.off_topic


def test_an_answer_about_a_name_no_source_holds_is_flagged() -> None:
    wifi = "The guest Wi-Fi password changes monthly. To obtain it, type GSA Wireless in the search box."
    sydney = check_answer('The Wi-Fi password at the Sydney office is "GSA Wireless" [1]. Type GSA Wireless to get it [1].',
                          {1: wifi}, question="What is the Wi-Fi password at the Sydney office?")
    assert sydney.unknown_names == ["sydney"] and not sydney.unsupported, "the second claim is supported"
    plain = check_answer("It is not OK to delete a Slack message [1].", {1: "Do not delete Slack messages."},
                         question="Is it OK to delete a Slack message I regret posting?")
    assert plain.unknown_names == [], "two letters and plain words name nothing"


def test_an_acronym_of_the_question_is_a_word_not_a_name() -> None:
    """Developers ask in acronyms their sources may not write ("POSTing a form", "the canonical URL"); an answer that
    repeats them is not about something its sources do not cover. A name in words still is."""
    source = ("A request was sent to this address, but routing issued a redirect to the canonical address. Send "
              "requests to the canonical address, or use 307 or 308 for routing redirects. Otherwise, browsers will "
              "drop form data.")
    question = "In debug mode, POSTing a form to /submit raises an exception about a redirect to the canonical URL. Why?"
    answer = ("In debug mode, POSTing a form raises an exception about a redirect to the canonical URL [1]. Use 307 or "
              "308 for routing redirects [1].")
    assert check_answer(answer, {1: source}, question=question).unknown_names == []
    sydney = check_answer(answer.replace("In debug mode,", "At the Sydney office,"), {1: source},
                          question=question.replace("In debug mode,", "At the Sydney office,"))
    assert sydney.unknown_names == ["sydney"]


def test_a_name_held_only_by_a_source_the_answer_does_not_cite_is_flagged() -> None:
    dc = ("The guest wireless network in the building is GSA Guest. The password changes monthly. To obtain the "
          "current password, type guest wifi into any room on Slack.")
    chicago = "In Chicago, you can book rooms using BookIt.\n\nConnect to the Wi-Fi: see Logging in & Networks."
    places = {1: "Washington DC — pages/washington-dc.md", 2: "Chicago — pages/chicago.md"}
    question = "What is this month's password for the guest Wi-Fi in the Chicago office?"
    answer = ("The guest Wi-Fi password in the Chicago office changes monthly [1]. To obtain the current password, "
              "type guest wifi into any room on Slack [1].")
    other = check_answer(answer, {1: dc, 2: chicago}, places, question)
    assert other.unknown_names == ["chicago"], "Chicago is named only by the page the answer does not cite"
    own = check_answer(answer.replace("[1]", "[2]", 1), {1: dc, 2: chicago}, places, question)
    assert own.unknown_names == [], "an answer citing the Chicago page speaks of a name its sources hold"


def test_an_uncited_first_claim_is_judged_by_the_sources_that_support_it() -> None:
    """A model that forgets the marker of its first sentence is not wrong for it: the names of that sentence are
    looked for in the sources that support it, not only in those the later sentences cite."""
    code = "    def __init_subclass__(cls, **kwargs):\n        for key in method_names: ...\n        cls.methods = methods"
    docs = ("A MethodView sets the methods the route accepts from the methods attribute of the class: methods is "
            "set automatically from the methods defined on the class.")
    places = {1: "views.py — src/flask/views.py", 2: "Class-based Views — docs/views.rst"}
    question = "For a class-based view that subclasses MethodView, how does Flask work out which methods the route accepts?"
    answer = ("A MethodView works out which methods the route accepts from the methods attribute of the class. "
              "It is set from the methods defined in the class [1].")
    check = check_answer(answer, {1: code, 2: docs}, places, question)
    assert check.unknown_names == [], "the uncited sentence stands on the docs, which name MethodView"
    unheld = check_answer(answer, {1: code, 2: "Views can be registered on blueprints."}, places, question)
    assert unheld.unknown_names == ["methodview"], "no source that supports it, or is cited, holds the name"


def test_a_how_many_question_answered_without_an_amount_is_flagged() -> None:
    rooms = "There are locker rooms with showers. Lockers are available throughout the building for day use."
    lockers = check_answer("There are lockers available throughout the building [1].", {1: rooms},
                           question="How many lockers are there in the San Francisco office's locker rooms?")
    assert lockers.no_quantity and not lockers.unsupported, "supported, but it says no amount"
    banked = check_answer("You can bank up to twenty-four credit hours at one time [1].",
                          {1: "Employees may bank up to 24 credit hours at one time."},
                          question="How many extra hours can I bank, and do they ever expire?")
    assert not banked.no_quantity, "a number word is an amount"
    free = check_answer("The locker rooms are free for everyone in the building [1].", {1: rooms + " They are free."},
                        question="How much does the locker room cost?")
    assert not free.no_quantity
    other = check_answer("There are lockers available throughout the building [1].", {1: rooms},
                         question="Where are the lockers in the San Francisco office?")
    assert not other.no_quantity, "only a question asking how many or how much needs an amount"
    zh = check_answer("大楼里有储物柜 [1]。", {1: "大楼里有储物柜和淋浴间。"}, question="旧金山办公室有多少个储物柜？")
    assert zh.no_quantity
