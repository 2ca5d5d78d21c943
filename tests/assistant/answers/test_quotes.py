"""The sources' words quoted under an answer (answers/quotes.py): what a claim stands on, when it says more than
the claim; nothing when the claim already says it or no source does; the block taken off again for history."""

from __future__ import annotations

from assistant.answers.quotes import HEADING, MAX_QUOTE_CHARS, MAX_QUOTES, quote_block, quote_tail, quotes, without_quotes
from assistant.answers.rag import checked_answer
from assistant.answers.support import NOT_IN_DOCUMENTS, check_answer

LAUNDRY = ("Laundry expenses\n\n- May only be reimbursed if travel involves at least 4 consecutive nights.\n"
           "Vouchers\n\nFile your voucher within 5 business days of getting back.")
CAR = "GSA employees are required to use the lowest cost compact car unless approved for a larger vehicle."
KEYBOARD = ("The kit includes a monitor, keyboard, mouse and headset.\n"
            "GSA IT does not provide a wireless keyboard or a wireless mouse.")


def quoted(answer: str, sources: dict[int, str], question: str = "") -> list:
    return quotes(check_answer(answer, sources, question=question), sources)


def test_a_claim_that_drops_the_source_s_condition_gets_the_source_s_sentence():
    (q,) = quoted("Laundry expenses may be reimbursed when you travel [1].", {1: LAUNDRY})
    assert q.n == 1 and "at least 4 consecutive nights" in q.text and not q.contradicts
    assert "voucher" not in q.text.casefold()  # the span the claim stands on, not the whole source


def test_a_claim_in_its_own_words_gets_the_source_s_words():
    (q,) = quoted("You can book a compact car, the cheapest option, unless a larger vehicle is approved [1].", {1: CAR})
    assert "lowest cost compact car" in q.text


def test_a_claim_that_already_says_the_source_s_sentence_gets_no_quote():
    assert quoted(f"{CAR[:-1]} [1].", {1: CAR}) == []


def test_a_claim_that_says_the_opposite_of_its_source_gets_the_sentence_that_says_so():
    (q,) = quoted("GSA IT can provide a wireless keyboard and a wireless mouse [1].", {1: KEYBOARD})
    assert q.contradicts and "does not provide a wireless keyboard" in q.text


def test_another_source_shown_that_says_the_opposite_is_quoted_too():
    """Pages of one collection disagree: the claim stands on the page it cites, and the reader sees the other."""
    sources = {1: KEYBOARD, 2: "Remote staff: GSA can also provide a wireless keyboard and a wireless mouse on request."}
    answer = "GSA IT can provide a wireless keyboard and a wireless mouse [2]."
    stands, opposed = quotes(check_answer(answer, sources), sources)
    assert (stands.n, stands.contradicts, opposed.n, opposed.contradicts) == (2, False, 1, True)
    block = quote_block([stands, opposed], "en")
    assert block.endswith("does not provide a wireless keyboard or a wireless mouse.” [1] — says otherwise")
    assert "[2]\n>\n> “" in block and without_quotes(answer + block) == answer


def test_the_check_says_contradicted_whenever_a_quote_says_otherwise():
    """What the page quotes as "says otherwise" and what `check.contradicted` says for scripts are one thing: a
    claim citing nothing, or citing another page, that a source shown contradicts."""
    sources = {1: KEYBOARD, 2: "Remote staff: GSA can also provide a wireless keyboard and a wireless mouse on request."}
    for answer in ("GSA IT can provide a wireless keyboard and a wireless mouse.",
                   "GSA IT can provide a wireless keyboard and a wireless mouse [2]."):
        check = check_answer(answer, sources)
        assert check.contradicted and any(q.contradicts for q in quotes(check, sources))
    assert not check_answer("The kit includes a monitor, keyboard, mouse and headset [1].", {1: KEYBOARD}).contradicted


def test_no_quote_from_a_source_that_does_not_support_the_claim():
    assert quoted("The canteen serves pizza on Fridays [1].", {1: LAUNDRY}) == []


def test_one_quote_a_span_at_most_three_and_in_the_answer_s_order():
    sources = {n: f"Rule {n}: badge type {n} is printed on Wednesday {n} of each month for the new staff." for n in range(1, 6)}
    answer = " ".join(f"Badge type {n} is printed on Wednesday {n} [{n}]." for n in range(1, 6))
    found = quoted(answer, sources)
    assert [q.n for q in found] == list(range(1, MAX_QUOTES + 1))
    twice = quoted("Laundry is reimbursed for trips [1]. Laundry is reimbursed for long trips [1].", {1: LAUNDRY})
    assert len(twice) == 1


def test_a_long_span_is_cut_at_a_sentence_end():
    long = " ".join(f"Clause {i} of the travel rules says laundry is reimbursed after {i} nights." for i in range(1, 30))
    found = quoted("Laundry is reimbursed after 3 nights [1].", {1: long})
    assert found and all(len(q.text) <= MAX_QUOTE_CHARS for q in found) and found[0].text.endswith(".")


def test_the_block_ends_the_answer_and_comes_off_again():
    answer = "Laundry expenses may be reimbursed when you travel [1]."
    found = quoted(answer, {1: LAUNDRY})
    shown = answer + quote_block(found, "en")
    assert shown.startswith(answer + "\n\n" + HEADING["en"] + "\n> “") and shown.endswith("” [1]")
    assert without_quotes(shown) == answer and quote_tail(shown) == shown[len(answer):]
    assert without_quotes(answer) == answer and quote_tail(answer) == ""
    assert quote_block([], "en") == ""
    zh = quote_block(found, "zh")
    assert zh.startswith("\n\n" + HEADING["zh"]) and without_quotes("回答 [1]。" + zh) == "回答 [1]。"


def test_an_answer_quoting_itself_in_its_text_keeps_it():
    """Only a block at the very end, under its heading, is the quotes: a quotation inside the answer stays."""
    answer = f"{HEADING['en']}\n> “a line the model wrote” [1]\n\nThen more of the answer [1]."
    assert without_quotes(answer) == answer


def test_checked_answer_quotes_a_kept_answer_only():
    question = "Will laundry be reimbursed on my trip?"
    answer = "Laundry expenses may be reimbursed when you travel [1]."
    _, check, fields = checked_answer(question, answer, {1: LAUNDRY}, {1: "Travel — travel.md"}, True, True)
    assert fields["answer"].startswith(answer) and fields["model_answer"] == answer
    assert [q["n"] for q in check["quotes"]] == [1] and "4 consecutive nights" in fields["answer"]
    _, check, fields = checked_answer(question, answer, {1: LAUNDRY}, {1: "Travel — travel.md"}, True, False)
    assert fields == {"answer": answer} and check["quotes"] == []
    # replaced, or abstaining: nothing to stand on, nothing quoted
    _, check, fields = checked_answer("What does the canteen serve?", "The canteen serves pizza [1].", {1: LAUNDRY},
                                      {}, True, True)
    assert check["replaced"] and fields["answer"] == NOT_IN_DOCUMENTS["en"] and check["quotes"] == []
    _, check, fields = checked_answer("How do I order a new laptop for the office?", answer, {1: LAUNDRY}, {}, True, True)
    assert check["off_topic"] and check["replaced"] and check["quotes"] == []  # true of its source, not what was asked
    _, check, fields = checked_answer(question, NOT_IN_DOCUMENTS["en"], {1: LAUNDRY}, {}, True, True)
    assert check["abstained"] and fields["answer"] == NOT_IN_DOCUMENTS["en"] and check["quotes"] == []
