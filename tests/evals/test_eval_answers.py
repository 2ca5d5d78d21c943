"""`assistant eval answers`: the metric plumbing with the echo backend, the question sets' shape, and one
real run of the command with the packaged Gemma model."""

import json
from collections import Counter
from pathlib import Path

import pytest

from assistant.answers.support import NOT_IN_DOCUMENTS
from assistant.cli import main
from evals.eval_answers import AnswerQuestion, choose, load_answer_questions, score_answer, split_of, summarise
from evals.eval_questions import fact_found, fact_recall
from indexes.store import Store
from tests.support.stores import write_pages

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "eval"
PAGES = {
    "leave/parental.md": ("Parental leave", "You are entitled to 12 weeks of paid parental leave after a birth or adoption."),
    "tools/passwords.md": ("Passwords", "Use a password manager such as KeePassXC and a unique password for every service."),
    "travel/booking.md": ("Booking travel", "Book flights through the travel desk at least 14 days before departure."),
}
DONE = {"timings": {"first_token_ms": 200.0, "total_ms": 1200.0}, "completion_tokens": 21}


def test_facts_are_compared_normalised_with_alternatives():
    assert fact_found("年假有１５天。", "15 天")  # fullwidth digits, no space in Chinese
    assert fact_found("Use KEEPASSXC", "keepassxc")
    assert fact_found("within one hour", "1 hour|one hour")
    assert not fact_found("within two hours", "1 hour|one hour")
    assert fact_recall("Take  TWELVE weeks", ["twelve weeks", "paid"]) == (1, 2)


@pytest.mark.parametrize("name, answerable, unanswerable", [
    ("handbook", 30, 10), ("flask", 30, 5), ("zh-handbook", 27, 10), ("zh-reports", 15, 5), ("docs", 1, 0),
])
def test_question_sets_have_their_size_and_the_written_split(name, answerable, unanswerable):
    questions = load_answer_questions(FIXTURES / f"{name}-questions.jsonl")
    kinds = Counter(q.unanswerable for q in questions)
    assert kinds[False] >= answerable and kinds[True] >= unanswerable
    assert all(q.facts for q in questions if not q.unanswerable)
    rows = [json.loads(line) for line in (FIXTURES / f"{name}-questions.jsonl").read_text().splitlines()]
    if name != "docs":  # the one-question file is on the report side by choice
        assert [r["split"] for r in rows] == [split_of(r["question"]) for r in rows]
        assert {"tune", "report"} == {q.split for q in questions}


def test_a_line_without_a_source_must_say_it_is_unanswerable(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "Where is it?"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1: an answerable question needs 'source'"):
        load_answer_questions(bad)
    bad.write_text('{"question": "Where is it?", "unanswerable": true, "split": "dev"}\n')
    with pytest.raises(ValueError, match="split must be"):
        load_answer_questions(bad)


def test_split_and_limit_choose_questions():
    qs = [AnswerQuestion(f"q{i}", ["a.md"], split="tune" if i % 2 else "report") for i in range(6)]
    assert [q.question for q in choose(qs, "tune", None)] == ["q1", "q3", "q5"]
    assert [q.question for q in choose(qs, "all", 2)] == ["q0", "q1"]


def test_a_supported_cited_answer_scores_well():
    q = AnswerQuestion("How many weeks of parental leave do I get?", ["leave/parental.md"], ["12 weeks"])
    answer = "You get 12 weeks of paid parental leave after a birth or adoption [1]."
    row = score_answer(q, answer, ["leave/parental.md"], {1: PAGES["leave/parental.md"][1]}, DONE)
    assert row["facts_found"] == row["facts_expected"] == 1
    assert row["right_file_cited"] is True and row["citation_precision"] == 1.0 and row["citation_coverage"] == 1.0
    assert row["language_match"] and not row["abstained"] and not row["empty"] and not row["template_leak"]
    assert row["ttft_ms"] == 200.0 and row["tokens_per_s"] == 20.0  # 20 tokens after the first in one second


def test_abstention_leaks_and_language_are_seen():
    q = AnswerQuestion("公司健身房几点关门？", unanswerable=True)
    row = score_answer(q, NOT_IN_DOCUMENTS["zh"], [], {}, {"check": {"replaced": True}})
    assert row["abstained"] and row["language_match"] and row["replaced"] and row["right_file_cited"] is None
    english = score_answer(q, NOT_IN_DOCUMENTS["en"], [], {}, {})
    assert english["abstained"] and not english["language_match"]
    leaked = score_answer(AnswerQuestion("Which manager?", ["a.md"], ["KeePassXC"]), "Answer: KeePassXC [1]", [],
                          {1: PAGES["tools/passwords.md"][1]}, {})
    assert leaked["template_leak"] and leaked["right_file_cited"] is False and leaked["facts_found"] == 1
    header = score_answer(AnswerQuestion("Which manager?", ["a.md"], ["KeePassXC"]),
                          "[1] Passwords — tools/passwords.md:3-9 Use KeePassXC.", [], {}, {})
    assert header["template_leak"]  # a source's header line copied into the answer


def test_totals_keep_answerable_and_unanswerable_apart():
    rows = [
        {"unanswerable": False, "facts_found": 1, "facts_expected": 2, "right_file_cited": True, "abstained": False,
         "citation_precision": 1.0, "citation_coverage": 0.5, "language_match": True, "empty": False,
         "template_leak": False, "replaced": False, "ttft_ms": 100.0, "tokens_per_s": 10.0},
        {"unanswerable": False, "facts_found": 0, "facts_expected": 1, "right_file_cited": False, "abstained": True,
         "citation_precision": None, "citation_coverage": None, "language_match": True, "empty": False,
         "template_leak": False, "replaced": True, "ttft_ms": 300.0, "tokens_per_s": 20.0},
        {"unanswerable": True, "facts_found": 0, "facts_expected": 0, "right_file_cited": None, "abstained": True,
         "citation_precision": None, "citation_coverage": None, "language_match": False, "empty": True,
         "template_leak": True, "replaced": False, "ttft_ms": None, "tokens_per_s": None, "error": "x"},
    ]
    t = summarise(rows)
    assert t["fact_recall"] == round(1 / 3, 4) and t["right_file_cited"] == 0.5 and t["false_abstentions"] == 0.5
    assert t["abstained_when_unanswerable"] == 1.0 and t["citation_precision"] == 1.0 and t["language_match"] == round(2 / 3, 4)
    assert (t["empty_answers"], t["template_leaks"], t["replaced"], t["errors"]) == (1, 1, 1, 1)
    assert t["ttft_ms_p50"] == 200.0 and t["tokens_per_s_p50"] == 15.0


@pytest.fixture
def questions_file(tmp_path):
    rows = [
        {"question": "How many weeks of parental leave do I get?", "source": "leave/parental.md",
         "answer_facts": ["parental leave", "12 weeks"], "split": "tune"},
        {"question": "Which password manager should I use?", "source": "tools/passwords.md|x.md",
         "answer_facts": ["password manager"], "split": "report"},
        {"question": "How much is the home office stipend?", "source": "", "unanswerable": True, "split": "report"},
    ]
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_the_command_runs_the_answer_path_with_the_echo_backend(tmp_path, questions_file, embedder, capsys, monkeypatch):
    data = tmp_path / "data"
    store = Store(data)
    write_pages(store, embedder, "docs", PAGES)
    store.close()
    out_file = tmp_path / "report.json"
    code = main(["eval", "answers", str(questions_file), "--collection", "docs", "--data-dir", str(data),
                 "--backend", "echo", "--json", "--out", str(out_file)])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out == json.loads(out_file.read_text())
    assert (out["split"], out["questions"], out["answerable"], out["unanswerable"]) == ("all", 3, 2, 1)
    # The echo backend repeats the question and cites [1], the best source: the question's own page.
    assert out["fact_recall"] == pytest.approx(2 / 3, abs=1e-4) and out["right_file_cited"] == 1.0
    assert out["right_file_shown"] == 1.0, "the question's page was among the passages of the prompt"
    assert out["abstained_when_unanswerable"] == 0.0 and out["false_abstentions"] == 0.0
    assert out["language_match"] == 1.0 and out["empty_answers"] == 0 and out["errors"] == 0
    assert out["details"][0]["answer"].startswith("Echo: How many weeks") and out["details"][0]["cited"] == ["leave/parental.md"]

    monkeypatch.setenv("COLUMNS", "240")  # the table's cells unwrapped
    assert main(["eval", "answers", str(questions_file), "--collection", "docs", "--data-dir", str(data),
                 "--backend", "echo", "--split", "report", "--limit", "1"]) == 0
    printed = capsys.readouterr().out
    assert "report split" in printed and "Which password manager" in printed and "parental" not in printed

    # --rescore judges the saved answers again from their model texts and prompt sources, with no model
    row = out["details"][0]
    assert row["model_text"].startswith("Echo:") and row["prompt_sources"][0]["path"] == "leave/parental.md"
    saved = json.loads(out_file.read_text())
    saved["details"][0]["model_text"] = "Parental leave is 12 weeks."  # a model that forgot its marker
    assert saved["settings"]["quote_sources"] is False  # the echo backend's answers: no quotes (`auto`)
    saved["settings"]["quote_sources"] = True  # as the packaged model's answers are shown
    out_file.write_text(json.dumps(saved))
    assert main(["eval", "answers", str(questions_file), "--rescore", str(out_file), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    first = again["details"][0]
    # shown as the saved run showed them: the source's sentence quoted under the answer that rewords it
    assert first["answer"].startswith("Parental leave is 12 weeks [1].\n\nFrom the sources:\n> “You are entitled to")
    assert first["cited"] == ["leave/parental.md"] and first["quoted"] and again["quoted"] >= 1
    assert first["model_answer"] == "Parental leave is 12 weeks." and first["facts_found"] == first["facts_unquoted"] == 2
    assert again["questions"] == 3 and again["rescored"] == str(out_file)
    del saved["details"][1]["model_text"]
    out_file.write_text(json.dumps(saved))
    assert main(["eval", "answers", str(questions_file), "--rescore", str(out_file)]) == 2
    assert "holds no model texts" in capsys.readouterr().err


def test_the_command_refuses_bad_input(tmp_path, questions_file, capsys):
    assert main(["eval", "answers", str(tmp_path / "none.jsonl"), "--collection", "docs", "--data-dir", str(tmp_path)]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["eval", "answers", str(questions_file), "--collection", "nope", "--data-dir", str(tmp_path / "d"),
                 "--backend", "echo"]) == 2
    assert "unknown collection 'nope'" in capsys.readouterr().err


@pytest.mark.slow
def test_the_command_with_the_packaged_gemma_model(tmp_path, questions_file, gguf_path, monkeypatch, capsys):
    root = tmp_path / "root"
    for path, (title, text) in PAGES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(f"# {title}\n\n{text}\n")
    monkeypatch.setenv("ASSISTANT_LLAMACPP_MODEL_PATH", str(gguf_path))
    monkeypatch.setenv("ASSISTANT_LLAMACPP_N_CTX", "1024")
    code = main(["eval", "answers", str(questions_file), "--root", str(root), "--data-dir", str(tmp_path / "data"),
                 "--backend", "llamacpp", "--limit", "2", "--max-tokens", "16", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["questions"], out["errors"], out["backend"]) == (2, 0, "llamacpp") and out["model"]
    for row in out["details"]:
        assert 1 <= row["completion_tokens"] <= 16 and row["ttft_ms"] > 0
        assert set(row["cited"]) <= set(PAGES) and isinstance(row["abstained"], bool)
    assert out["ttft_ms_p50"] > 0 and out["facts_expected"] == 3


def test_a_peer_s_report_is_scored_as_it_answered_never_replaced(tmp_path, questions_file, capsys):
    """A peer (scripts/peer_llamaindex.py) writes its model texts and the passages its prompt held, with
    `replace_unsupported: false`: our scorer judges its answers as given, without citations."""
    passages = [{"n": 1, "path": "tools/passwords.md", "place": "tools/passwords.md", "text": "Use the password manager."}]
    rows = [
        {"question": "How many weeks of parental leave do I get?", "split": "tune", "unanswerable": False,
         "source": "leave/parental.md", "model_text": "You get 12 weeks of parental leave.", "prompt_sources": passages,
         "variant": "typo"},
        {"question": "How much is the home office stipend?", "split": "report", "unanswerable": True, "source": "",
         "model_text": "The stipend is $500 a year.", "prompt_sources": passages},
    ]
    report = tmp_path / "peer.json"
    report.write_text(json.dumps({"backend": "llamaindex", "settings": {"k": 2, "replace_unsupported": False},
                                  "details": rows}))
    assert main(["eval", "answers", str(questions_file), "--rescore", str(report), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    leave, stipend = out["details"]
    assert leave["answer"] == rows[0]["model_text"] and leave["facts_found"] == 2 and not leave["replaced"]
    assert stipend["answer"] == rows[1]["model_text"] and not stipend["abstained"], "an invention stays one"
    assert out["right_file_shown"] == 0.0 and out["right_file_cited"] == 0.0
    assert out["headline"] | {"crag_score": None} == {"right_answer": 1, "right_abstention": 0, "false_abstention": 0,
                                                      "invention": 1, "answer_without_facts": 0, "crag_score": None}
    assert out["by_variant"]["typo"]["right_answer"] == 1, "a rescored variant keeps its kind"
