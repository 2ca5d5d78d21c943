"""The asker's words and names: what an answer may repeat of the question without a source holding it."""

from __future__ import annotations

from pathlib import Path

from assistant.answers.attribution import attribute
from assistant.answers.asked import own_names
from assistant.answers.support import check_answer, support, unheld_units

ROOT = Path(__file__).resolve().parents[3]


def test_a_name_of_code_the_asker_calls_theirs_is_their_word_not_the_documents() -> None:
    """Developers name their own functions when they ask how a library treats them: "my `logout_user` view" is in
    no document, and an answer that repeats it is still about what its source says. A name of code the asker does
    not call theirs is the library's, which the source must hold; a name in words is never the asker's."""
    source = ("def redirect(location: str, code: int = 302, Response: type[BaseResponse] | None = None) -> BaseResponse:\n"
              '    """Create a redirect response object. If current_app is available, it will use its redirect method.\n'
              "    :param code: The status code for the redirect.\n")
    places = {1: "helpers.py — src/flask/helpers.py, lines 240-263"}
    question = "What status code does redirect() send from my `logout_user` view when I don't pass one?"
    answer = "When your `logout_user` view calls redirect() without a code, the status code for the redirect is 302 [1]."
    mine = check_answer(answer, {1: source}, places, question)
    assert mine.unknown_names == [] and not mine.unsupported
    module = check_answer(answer.replace("`logout_user` view", "billing.views module"), {1: source}, places,
                          question.replace("`logout_user` view", "billing.views module"))
    assert module.unknown_names == [] and not module.unsupported, "a module of the asker's, named with a dot"
    library = check_answer("Yes, `flask.cache_manager` does it: " + answer, {1: source}, places,
                           "In my app, " + question.replace("my `logout_user` view", "a view") + " Does `flask.cache_manager` do it?")
    assert library.unsupported or library.unknown_names, "a library name no source holds, in a first-person question"
    sydney = check_answer(answer.replace("your `logout_user` view", "the Sydney office"), {1: source}, places,
                          question.replace("my `logout_user` view", "my Sydney office"))
    assert sydney.unknown_names == ["sydney"], "a name in words is never the asker's own"


def test_the_paths_acronyms_and_pasted_code_of_the_question_are_the_askers() -> None:
    """A route, an address or an acronym the asker writes ("/api/v2/orders", "localhost:5000", "JSON"), and what the
    code they paste defines (`def create_order():`), is theirs: an answer that repeats it is judged on the rest, as
    for the asker's words."""
    source = ("def add_url_rule(self, rule, endpoint=None, view_func=None, **options):\n    \"\"\"Register a rule for "
              "routing incoming requests. The methods argument defaults to GET; a request with another method gets 405 "
              "Method Not Allowed.\"\"\"")
    for question, answer in [
        ("Why does sending JSON to /api/v2/orders return a 405 error?",
         "Sending JSON to /api/v2/orders gets a 405 because the methods argument of the rule defaults to GET [1]."),
        ("Why does http://localhost:5000/orders give me a 405 when I send a form to it?",
         "A request to http://localhost:5000/orders gets a 405 because the methods argument of the rule defaults to GET [1]."),
    ]:
        check = check_answer(answer, {1: source}, {1: "scaffold.py — src/flask/sansio/scaffold.py"}, question)
        assert not check.unsupported and check.unknown_names == [], question
    pasted = ("Why does this return a 405 error?\n```python\n@app.route('/orders')\ndef create_order():\n"
              "    return request.get_json()\n```")
    check = check_answer("Your `create_order` view gets a 405 because the methods argument of the rule defaults to "
                         "GET [1].", {1: source}, {1: "scaffold.py — src/flask/sansio/scaffold.py"}, pasted)
    assert not check.unsupported and check.unknown_names == [], "what pasted code defines is the asker's"
    other = check_answer("The methods argument defaults to POST for /api/v2/orders [1].", {1: source}, question=
                         "What does the methods argument default to for /api/v2/orders?")
    assert other.unsupported, "the rest of the claim still has to be what the source says"


BENEFITS = (
    "## Health insurance\n\n"
    "New and newly eligible employees who wish to enroll in this program must do so within 60 days of their start "
    "date and prior to October 1. If you miss this deadline, you must wait until Open Season (mid-November) to enroll "
    "for the following calendar year."
)


def test_an_answer_that_repeats_the_askers_own_words_is_judged_on_the_rest() -> None:
    question = ("I just started at TTS. How long do I have to pick a health insurance plan before I'd have to wait "
                "until the annual enrollment period?")
    answer = "You have 60 days to pick a health insurance plan before you'd have to wait until the annual enrollment period [1]."
    assert not support(answer, BENEFITS).supported, "on all its words, half of them are the asker's"
    check = check_answer(answer, {1: BENEFITS}, question=question)
    assert not check.unsupported and check.sentences[0].supported
    # The amount is still the source's to state, and so is a name.
    assert check_answer(answer.replace("60", "90"), {1: BENEFITS}, question=question).unsupported
    sydney = "What is the health insurance deadline at the Sydney office before the annual enrollment period?"
    assert check_answer("At the Sydney office you have 60 days before the annual enrollment period [1].",
                        {1: BENEFITS}, question=sydney).unsupported


def test_a_claim_made_mostly_of_the_question_is_judged_on_all_its_words() -> None:
    question = "Can GSA IT send me a wireless keyboard and mouse for my home office?"
    source = "Equipment: GSA IT provides a laptop and a monitor. Ask TTS leadership before buying other equipment."
    check = check_answer("Yes, GSA IT can send you a wireless keyboard and mouse for your home office [1].",
                         {1: source}, question=question)
    assert check.unsupported, "only GSA would be left of it: the source would support an invention"


def test_chinese_words_of_the_question_missing_from_the_sources_still_count() -> None:
    expenses = ("标准\n\n- 出差住宿：一线城市每晚不超过 800 元，其他城市不超过 500 元。\n- 餐补：出差期间每天 150 元，无需发票。\n"
                "- 打车：晚上十点以后加班回家的打车费可以全额报销。")
    check = check_answer("食堂午餐每餐补贴 150 元，无需发票。[1]", {1: expenses}, question="食堂午餐每餐补贴多少钱？")
    assert check.unsupported, "the canteen is what the documents never mention"


def test_the_words_of_the_thing_the_asker_names_as_theirs_are_the_askers_in_chinese_too() -> None:
    """"在我的 `order_tracker.xlsx` 表格里": the spreadsheet is the asker's, named as code, and 表格 is what it is, in a
    word no source holds. An answer that repeats the frame is judged, and given its source, on the rest; a small
    model cites a neighbour of that source as often as not."""
    onboarding = ("入职伙伴（buddy）\n\n每位新同事都会分配一名 buddy。 buddy 负责在前两周回答日常问题，并在第一周结束时和你做一次 "
                  "30 分钟的 1:1 回顾。")
    performance = "评级分为“超出预期”“符合预期”“待改进”三档。 连续两次“待改进”的员工会进入绩效改进计划（PIP）。"
    sources = {1: onboarding, 2: performance}
    question = "在我的 `order_tracker.xlsx` 表格里，新同事的 buddy 要负责哪些事情？"
    answer = "在 `order_tracker.xlsx` 表格里，新同事的 buddy 要负责回答日常问题，并在第一周结束时和你做一次 30 分钟的 1:1 回顾。[2]"
    assert attribute(answer, sources).answer == answer, "on all its words the claim is nobody's"
    moved = attribute(answer, sources, question=question)
    assert [(c["was"], c["now"]) for c in moved.changes] == [([2], [1])]
    check = check_answer(moved.answer, sources, question=question, sentences=moved.sentences)
    assert not check.unsupported and check.unknown_names == []
    assert own_names(question, unheld_units(question, sources, {})) >= {"表格"}
    assert not own_names(question, unheld_units(question, sources, {})) & {"新同", "同事"}, "the frame ends at its comma"
    # Only the first word after a name of code: the canteen of "我的食堂", or of "我的 `budget.xlsx` 里食堂…" with no
    # comma or space between, is a thing the documents must hold.
    meals = {1: "- 餐补：出差期间每天 150 元，无需发票。"}
    for asked in ("我的食堂午餐每餐补贴多少钱？", "在我的 `budget.xlsx` 里食堂午餐每餐补贴多少钱？", "在我的`budget.xlsx`里食堂午餐每餐补贴多少钱？"):
        assert check_answer("食堂午餐每餐补贴 150 元，无需发票。[1]", meals, question=asked).unsupported, asked
        assert attribute("食堂午餐每餐补贴 150 元，无需发票。[2]", meals, question=asked).changes == [], asked


def test_attribution_does_not_move_a_claim_on_the_rest_of_the_askers_words() -> None:
    """The asker's words left out, "the cafeteria gives 2 free lunches per week" would hold in a page that says the
    cafeteria closes at 2 pm: moved there it would be an invention with a citation."""
    sources = {1: "Staff may bring guests to the office after signing them in at the front desk.",
               2: "There's a cafeteria located on the first floor, serving breakfast and lunch. They say they close at 2 pm."}
    question = "How many free lunches per week does the cafeteria give each employee?"
    answer = "The cafeteria gives each employee 2 free lunches per week [1]."
    out = attribute(answer, sources, question=question)
    assert out.answer == answer and not out.changes
    assert check_answer(out.answer, sources, question=question, sentences=out.sentences).unsupported


def test_a_clause_that_retells_the_question_is_not_what_the_source_must_hold() -> None:
    """A small model retells the asker's story before its answer, in the question's words: the clause made only of
    them states nothing, and the answer after it is judged alone. An answer that only retells the question still
    states nothing a source holds, and a yes-no question retold is the answer."""
    report = (ROOT / "tests" / "fixtures" / "zh-reports" / "nccl-timeout-postmortem.md").read_text(encoding="utf-8")
    cause = report[report.index("## 排查过程"):report.index("## 改进项")]
    question = "3月份那次72b多机推理全挂了 最后查出来是启动脚本里哪个环境变量写死导致的"
    answer = "在3月份那次72b多机推理全挂了，最后查出来是启动脚本里NCCL_IB_HCA环境变量写死导致的。[1]"
    assert check_answer(answer, {1: cause}).unsupported, "without the question, the story is a claim of its own"
    assert not check_answer(answer, {1: cause}, question=question).unsupported
    parrot = "3月份那次72b多机推理全挂了，最后查出来是启动脚本里哪个环境变量写死导致的。[1]"
    assert check_answer(parrot, {1: cause}, question=question).unsupported
    # A yes-no question repeated is its answer, which the source must hold.
    equipment = "Equipment: GSA IT provides a laptop and a monitor to every employee working from home."
    stipend = ("GSA IT gives each remote employee a $500 stipend, and provides a laptop and a monitor to every employee "
               "working from home [1].")
    assert check_answer(stipend, {1: equipment}, question="Does GSA IT give each remote employee a $500 stipend?").unsupported
