"""Derived question sets: code docstrings and headed sections -> questions, and the split rules."""

import json
from pathlib import Path

import pytest

from assistant.cli import main
from evals.derive_questions import code_questions, strip_name
from evals.derive_sections import document_splits, markdown_sections, read_sections, section_questions
from evals.eval_questions import Question, choose_split, load_questions
from tests.support.stores import write_pages

CORE = '''
"""The core."""


def url_for(endpoint, **values):
    """Generate a URL to the given endpoint with the given values, as url_for() always did."""


def _private_helper():
    """Return the private helper value for internal callers only."""


def tiny():
    """Return nothing useful."""


def see_other():
    """See other_function."""


class SecureCookieSession:
    """Base class for sessions based on signed cookies, a secure cookie session."""

    def get_expiration_time(self, app, session):
        """Return the date the session should expire, or None for a browser session."""

    @property
    def modified(self):
        """Whether the session was changed during this request by the view."""

    def _hidden(self):
        """A private method that nothing outside this class should ever call."""
'''


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def packages(tmp_path):
    root = tmp_path / "root"
    write(root / "webkit-1.0/src/webkit/__init__.py", '"""webkit."""\n')
    write(root / "webkit-1.0/src/webkit/core.py", CORE)
    write(root / "webkit-1.0/src/webkit/_internal.py", 'def public_in_private():\n    """Return a value from inside a private module of the package."""\n')
    write(root / "webkit-1.0/tests/test_core.py", 'def test_url():\n    """Check that the generated URL of an endpoint is right."""\n')
    write(root / "webkit-1.0/tests/__init__.py", "")
    write(root / "other-2.0/other/__init__.py",
          'def copied():\n    """Generate a URL to the given endpoint with the given values, as url_for() always did."""\n\n\n'
          'def render(template):\n    """Render a template with the given context and return the resulting string."""\n')
    return root


def test_code_questions_from_a_synthetic_package(packages):
    rows = code_questions(packages, tune=("webkit",))
    got = [(r.package, r.split, r.source, r.symbol, r.question) for r in rows]
    assert got == [
        ("other", "report", "other-2.0/other/__init__.py", "render",
         "Which function renders a template with the given context and return the resulting string?"),
        ("webkit", "tune", "webkit-1.0/src/webkit/core.py", "SecureCookieSession",
         "Which class is described as: Base class for sessions based on signed cookies, a?"),
        ("webkit", "tune", "webkit-1.0/src/webkit/core.py", "SecureCookieSession.get_expiration_time",
         "Which method returns the date the session should expire, or None for a browser session?"),
        ("webkit", "tune", "webkit-1.0/src/webkit/core.py", "SecureCookieSession.modified",
         "Which property is described as: Whether the session was changed during this request by the view?"),
    ]
    # url_for's docstring also sits on other.copied: a question with two answers is left out, both times.
    # Left out too: private names and modules, tests, docstrings under 6 words, "See X".
    assert code_questions(packages, tune=("webkit",)) == rows  # deterministic
    with pytest.raises(ValueError, match="no package named nope"):
        code_questions(packages, ["nope"])


def test_a_package_alone_keeps_its_own_questions(packages):
    rows = code_questions(packages, ["webkit"], tune=())
    assert [r.symbol for r in rows] == ["url_for", "SecureCookieSession", "SecureCookieSession.get_expiration_time",
                                        "SecureCookieSession.modified"]
    assert {r.split for r in rows} == {"report"}
    assert rows[0].question == "Which function generates a URL to the given endpoint with the given values, as always did?"


def test_the_symbol_name_is_taken_out_in_its_obvious_spellings():
    assert strip_name("Sets up the SecureCookieSession, a secure cookie session.", "SecureCookieSession") == "Sets up the, a."
    assert strip_name("Calls url_for() or url for.", "Flask.url_for") == "Calls or."
    assert strip_name("Remove a header from the set, unless remove is off.", "HeaderSet.remove") == \
        "Remove a header from the set, unless is off."


def test_document_split_is_every_third_by_hash_and_deterministic():
    sources = [f"doc{i}.md" for i in range(30)]
    splits = document_splits(sources)
    assert list(splits.values()).count("tune") == 10
    assert document_splits(list(reversed(sources))) == splits
    assert set(splits.values()) == {"tune", "report"}


ZH = """# GPU 现场报告

## 硬件环境

这次用的是 Intel Xeon Gold 6248R 处理器，内存 768 GB。服务器型号是浪潮 NF5468M5。

## 驱动版本

驱动装的是 525.147.05，CUDA 工具包用 12.0。
"""


def test_section_questions_keep_distinctive_terms_and_drop_the_heading(tmp_path):
    write(tmp_path / "zh/a.md", ZH)
    write(tmp_path / "zh/b.md", "# 其他\n\n## 会议\n\n周会在周四下午三点，地点 502 会议室。讨论 roadmap 和跨组依赖。\n")
    sections = read_sections([tmp_path / "zh"])
    assert [(s.source, s.heading) for s in sections] == [("a.md", "硬件环境"), ("a.md", "驱动版本"), ("b.md", "会议")]
    rows = section_questions(sections, set_name="zh")
    by_heading: dict[str, list[str]] = {}
    for r in rows:
        by_heading.setdefault(r.heading, []).append(r.question)
    assert by_heading["驱动版本"] == ["关于525.147.05、CUDA、工具包，对应的数值是多少？"]  # 12.0, the last number, is asked for
    first, second = by_heading["硬件环境"]  # two sentences, the one with more distinctive terms first
    assert "Xeon" in first and "6248R" in first and "NF5468M5" in second
    assert not any("驱动" in q or "硬件" in q for qs in by_heading.values() for q in qs)
    assert {r.set for r in rows} == {"zh"} and all(r.split in ("tune", "report") for r in rows)
    assert section_questions(sections, set_name="zh") == rows


def test_markdown_sections_skip_front_matter_code_and_markup():
    text = "---\ntitle: T\n---\n# T\n\n## Leave\n\nSee [the form](http://x) {% raw %}now.\n\n```\n## not a heading\n```\n"
    [section] = markdown_sections(text, "p.md")
    assert section.heading == "Leave" and section.lines == ("See the form now.",)


def test_questions_carry_their_split(tmp_path):
    path = tmp_path / "q.jsonl"
    rows = [{"question": "a?", "source": "a.md", "split": "tune"}, {"question": "b?", "source": "b.md", "split": "report"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    questions = load_questions(path)
    assert [q.question for q in choose_split(questions, "report")] == ["b?"]
    assert len(choose_split(questions, "all")) == 2
    with pytest.raises(ValueError, match="carry no 'split'"):
        choose_split([Question("a?", "a.md")], "tune")
    path.write_text(json.dumps({"question": "Who is the CEO of Mars?", "unanswerable": True, "split": "tune"}) + "\n")
    assert load_questions(path) == []  # nothing to find; `eval answers` scores the abstention
    path.write_text(json.dumps({"question": "a?", "source": "a.md", "split": "dev"}) + "\n")
    with pytest.raises(ValueError, match="q.jsonl:1: split must be"):
        load_questions(path)


PAGES = {
    "leave.md": ("Parental leave", "Employees get twelve weeks of paid parental leave after a birth or adoption."),
    "passwords.md": ("Passwords", "Use a password manager such as KeePassXC and a unique password for every service."),
    "travel.md": ("Booking travel", "Book flights through the travel desk at least 14 days before departure."),
}


def test_eval_questions_reports_the_split_it_ran(tmp_path, embedder, capsys):
    from indexes.store import Store

    data = tmp_path / "data"
    store = Store(data)
    write_pages(store, embedder, "docs", PAGES)
    store.close()
    qfile = tmp_path / "derived.jsonl"
    rows = [{"question": "How many weeks of parental leave?", "source": "leave.md", "split": "tune", "set": "hr"},
            {"question": "Which password manager should I use?", "source": "passwords.md", "split": "report", "set": "hr"},
            {"question": "How early must flights be booked?", "source": "travel.md", "split": "report", "set": "hr"}]
    qfile.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    code = main(["eval", "questions", str(qfile), "--collection", "docs", "--data-dir", str(data), "--split", "report", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["split"], out["set"], out["questions"]) == ("report", "hr", 2)
    assert [d["source"] for d in out["details"]] == ["passwords.md", "travel.md"] and out["hit@1"] == 1.0


def test_eval_derive_writes_the_set(packages, tmp_path, capsys):
    out_file = tmp_path / "code.jsonl"
    code = main(["eval", "derive", "code", str(packages), "--tune", "webkit", "--out", str(out_file),
                 "--data-dir", str(tmp_path / "data")])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["questions"] == 4 and summary["by_split"] == {"report": 1, "tune": 3}
    loaded = load_questions(out_file)
    assert [q.split for q in loaded] == ["report", "tune", "tune", "tune"]
    assert (loaded[1].set, loaded[1].package, loaded[1].symbol) == ("code", "webkit", "SecureCookieSession")


def test_the_shipped_chinese_set_is_what_the_method_derives_from_the_shipped_documents(tmp_path, capsys):
    """The frozen set is the method's output, not a hand-edited one: re-deriving it gives the same lines."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    out = tmp_path / "zh.jsonl"
    assert main(["eval", "derive", "sections", str(fixtures / "zh-handbook"), str(fixtures / "zh-reports"),
                 "--set", "zh", "--out", str(out)]) == 0
    capsys.readouterr()
    assert out.read_text(encoding="utf-8") == (fixtures / "eval" / "derived-zh.jsonl").read_text(encoding="utf-8")
