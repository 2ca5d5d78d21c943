"""`assistant eval`: a tiny BEIR set and question files, with the real embedder and real stores."""

import json

import pytest

from assistant.cli import main
from evals.eval_retrieval import BeirSet, evaluate_retrieval, ingest_corpus
from evals.eval_questions import Question, evaluate_questions, fact_recall, load_questions
from indexes.retrieval.retriever import Retriever
from tests.support.stores import write_pages

CORPUS = [
    {"_id": "d1", "title": "Volcanic eruptions", "text": "Magma rises through the crust and erupts as lava, ash and gas from a volcano."},
    {"_id": "d2", "title": "Violin making", "text": "Luthiers carve spruce tops and maple backs to build violins, then varnish them."},
    {"_id": "d3", "title": "Income tax deadlines", "text": "Individual income tax returns are due in April; extensions move the deadline to October."},
    {"_id": "d4", "title": "Honey bees", "text": "Worker bees collect nectar and pollen, and the colony stores honey in wax combs."},
    {"_id": "d5", "title": "Tidal forces", "text": "The gravitational pull of the moon raises two tidal bulges in the oceans each day."},
    {"_id": "d6", "title": "Sourdough bread", "text": "A sourdough starter of wild yeast and lactic bacteria leavens the bread dough."},
]
QUERIES = {"q1": "why does lava come out of a volcano", "q2": "when are income tax returns due", "q3": "what causes ocean tides",
           "q4": "how are violins built"}
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t2\nq3\td5\t1\nq4\td2\t1\n"


@pytest.fixture
def beir_dir(tmp_path):
    root = tmp_path / "tiny"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in CORPUS) + "\n")
    (root / "queries.jsonl").write_text("\n".join(json.dumps({"_id": k, "text": v}) for k, v in QUERIES.items()) + "\n")
    (root / "qrels" / "test.tsv").write_text(QRELS)
    return root


def test_beir_files_are_read_with_the_header_skipped(beir_dir):
    beir = BeirSet(beir_dir)
    beir.check("test")
    assert beir.qrels("test") == {"q1": {"d1": 1}, "q2": {"d3": 2}, "q3": {"d5": 1}, "q4": {"d2": 1}}
    assert beir.queries()["q3"] == "what causes ocean tides"
    with pytest.raises(FileNotFoundError, match="qrels/dev.tsv"):
        beir.check("dev")


def test_ingest_keeps_ids_as_paths_and_resumes(beir_dir, store, embedder):
    beir = BeirSet(beir_dir)
    written = ingest_corpus(store, "tiny", beir.corpus(), embedder.embed, embedder_name=embedder.name, dim=embedder.dim)
    assert written == len(CORPUS)
    coll = store.get_collection("tiny")
    docs = {d.path: d for d in store.list_documents(coll)}
    assert set(docs) == {d["_id"] for d in CORPUS}
    assert docs["d2"].title == "Violin making"
    # A second run over a kept store embeds nothing again.
    assert ingest_corpus(store, "tiny", beir.corpus(), embedder.embed, embedder_name=embedder.name, dim=embedder.dim) == 0


def test_every_method_scores_the_same_candidates(beir_dir, store, embedder):
    beir = BeirSet(beir_dir)
    ingest_corpus(store, "tiny", beir.corpus(), embedder.embed, embedder_name=embedder.name, dim=embedder.dim)
    retriever = Retriever(store, embedder)
    report = evaluate_retrieval(retriever, "tiny", beir.queries(), beir.qrels("test"))
    assert report.queries == 4
    assert set(report.methods) == {"linear", "rrf", "dense", "bm25"}
    # Each query names its document unambiguously: every method ranks it first.
    for method, m in report.methods.items():
        assert m == {"ndcg@10": 1.0, "recall@10": 1.0, "recall@100": 1.0, "mrr@10": 1.0}, method
    assert report.timings["candidates_ms_p50"] > 0


def test_eval_retrieval_command_json(beir_dir, tmp_path, capsys):
    keep = tmp_path / "evalstore"
    code = main(["eval", "retrieval", "--beir", str(beir_dir), "--split", "test", "--json", "--store", str(keep),
                 "--data-dir", str(tmp_path / "data"), "--fusion", "linear,bm25"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert {"ndcg@10", "recall@10", "recall@100", "mrr@10", "timings"} <= set(out)
    assert out["ndcg@10"] == out["methods"]["linear"]["ndcg@10"] == 1.0
    assert set(out["methods"]) == {"linear", "bm25"} and out["queries"] == 4
    assert out["documents_embedded"] == len(CORPUS) and (keep / "store.db").is_file()


def test_eval_retrieval_rejects_unknown_fusion(beir_dir, tmp_path, capsys):
    assert main(["eval", "retrieval", "--beir", str(beir_dir), "--split", "test", "--fusion", "magic",
                 "--data-dir", str(tmp_path / "data")]) == 2
    assert "magic" in capsys.readouterr().err


DOCS = {
    "leave/parental.md": ("Parental leave", "You are entitled to 12 weeks of paid parental leave after a birth or adoption."),
    "tools/passwords.md": ("Passwords", "Use a password manager such as KeePassXC and a unique password for every service."),
    "travel/booking.md": ("Booking travel", "Book flights through the travel desk at least 14 days before departure."),
}


@pytest.fixture
def questions_file(tmp_path):
    path = tmp_path / "questions.jsonl"
    rows = [
        {"question": "How many weeks of parental leave do I get?", "source": "leave/parental.md", "answer_facts": ["weeks", "12 weeks"]},
        {"question": "Which password manager should I use?", "source": "tools/passwords.md", "answer_facts": ["password manager"]},
        {"question": "How early must flights be booked?", "source": "travel/booking.md"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def fill(store, embedder):
    write_pages(store, embedder, "docs", DOCS)


def test_questions_hit_rates(store, embedder, questions_file):
    fill(store, embedder)
    questions = load_questions(questions_file)
    metrics, details = evaluate_questions(Retriever(store, embedder), "docs", questions)
    assert metrics["hit@1"] == metrics["hit@5"] == metrics["hit@10"] == 1.0
    assert [d["rank"] for d in details] == [1, 1, 1]
    missing = [Question("Which password manager should I use?", "nowhere.md")]
    metrics, _ = evaluate_questions(Retriever(store, embedder), "docs", missing)
    assert metrics["hit@10"] == 0.0


def test_file_mrr_and_whether_the_cited_lines_hold_the_symbol(store, embedder, tmp_path):
    from indexes.location import Location
    from indexes.store import NewChunk, SourceInfo

    from evals.eval_questions import definition_lines

    source = "import os\n\n\ndef helper():\n    return 1\n\n\ndef make_response(rv):\n    return rv\n"
    (tmp_path / "app.py").write_text(source)
    assert definition_lines(source, "Flask.make_response") == [8]
    coll = store.ensure_collection("code", embedder.name, embedder.dim)
    chunks = [NewChunk(text="def helper():\n    return 1", location=Location(line_start=4, line_end=5, symbol="helper")),
              NewChunk(text="def make_response(rv):\n    return rv",
                       location=Location(line_start=8, line_end=9, symbol="make_response"))]
    store.write_document(coll, SourceInfo(path="app.py", title="app.py", kind="py"), chunks,
                         embedder.embed([c.text for c in chunks]))
    questions = [Question("make_response", "app.py", symbol="make_response"),
                 Question("helper", "app.py", symbol="make_response"),
                 Question("make_response", "other.py")]
    metrics, details = evaluate_questions(Retriever(store, embedder), "code", questions, root=tmp_path)
    assert [d.get("symbol_in_range") for d in details] == [True, False, None]
    assert metrics["symbol_in_range"] == 0.5 and metrics["symbol_questions"] == 2
    assert metrics["file_mrr@10"] == round(2 / 3, 4)


def test_the_top_chunk_is_scored_for_its_facts_and_for_holding_them_on_one_line(store, embedder):
    from indexes.location import Location
    from indexes.store import NewChunk, SourceInfo

    coll = store.ensure_collection("tables", embedder.name, embedder.dim)
    pages = {"rows.md": "| Network | Band |\n|---|---|\n| Harbor-Guest | 2.4 GHz |",
             "cells.md": "Courier\n\nParcels to Norway\n\nBring"}
    for path, text in pages.items():
        store.write_document(coll, SourceInfo(path=path, title=path, kind="md"),
                             [NewChunk(text=text, location=Location())], embedder.embed([text]))
    questions = [Question("Which band does Harbor-Guest use?", "rows.md", ["Harbor-Guest", "2.4 GHz"]),
                 Question("Which courier takes parcels to Norway?", "cells.md", ["Norway", "Bring", "DHL"])]
    metrics, details = evaluate_questions(Retriever(store, embedder), "tables", questions)
    assert [d["rank"] for d in details] == [1, 1]
    assert [(d["chunk_facts_found"], d["chunk_row"]) for d in details] == [(2, True), (2, False)]
    assert metrics["chunk_fact_recall"] == round(4 / 5, 4) and metrics["chunk_row_recall"] == 0.5


def test_fact_recall_is_case_and_space_insensitive():
    assert fact_recall("Take  TWELVE weeks", ["twelve weeks", "paid"]) == (1, 2)


def test_questions_file_needs_question_and_source(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "no source"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        load_questions(bad)


def test_eval_questions_on_a_collection_with_answers(tmp_path, questions_file, embedder, capsys):
    from indexes.store import Store

    data = tmp_path / "data"
    store = Store(data)
    fill(store, embedder)
    store.close()
    code = main(["eval", "questions", str(questions_file), "--collection", "docs", "--data-dir", str(data),
                 "--answers", "--backend", "echo", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hit@1"] == 1.0 and out["questions"] == 3
    # The echo backend repeats the question: "weeks" and "password manager" are in it, "12 weeks" is not.
    assert out["facts_expected"] == 3 and out["fact_recall"] == pytest.approx(2 / 3, abs=1e-4)


@pytest.mark.slow
def test_eval_questions_ingests_the_root_in_a_subprocess(tmp_path, questions_file, capsys):
    root = tmp_path / "root"
    for path, (title, text) in DOCS.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(f"# {title}\n\n{text}\n")
    code = main(["eval", "questions", str(questions_file), "--root", str(root), "--json", "--data-dir", str(tmp_path / "data")])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hit@1"] == 1.0 and out["ingest"]["files_ingested"] == 3
