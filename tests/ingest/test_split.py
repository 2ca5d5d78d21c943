"""The splitter with the real embedder's tokenizer: sizes, overlap, heading paths, anchors, lines."""

from __future__ import annotations

import pytest

from ingest.parse import Element
from ingest.pieces import sentence_spans
from ingest.split import slugify, split

pytestmark = pytest.mark.slow

PROSE = (
    "The committee met on a rainy Tuesday to review the annual budget. Each department presented its "
    "figures in turn, and the finance office answered questions about travel costs! Was the training "
    "budget large enough for the new hires? Most members thought it was not, so a revision was ordered. "
)


def sentences_of(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


def test_sentence_ends_latin_and_cjk():
    assert sentences_of("One. Two! Three? Four") == ["One.", "Two!", "Three?", "Four"]
    assert sentences_of("今日は晴れです。明日は雨ですか？そうです！次；最後") == [
        "今日は晴れです。", "明日は雨ですか？", "そうです！", "次；", "最後",
    ]
    # a dot inside a number or a file name is not a sentence end
    assert sentences_of("Version 3.11 of app.py works. Done") == ["Version 3.11 of app.py works.", "Done"]


def test_chunks_never_exceed_the_budget_and_overlap(embedder):
    count = embedder.count_tokens
    elements = [Element("Budget review", "title", heading_level=1)] + [Element(PROSE) for _ in range(12)]
    chunks = split(elements, count, chunk_tokens=64, overlap_tokens=16)
    assert len(chunks) > 5
    for c in chunks:
        assert c.n_tokens == count(c.text)
        assert c.n_tokens <= 64
        assert c.heading_path == "Budget review"
        assert c.anchor == "budget-review"
    # consecutive chunks of one section share text: the next one starts with the end of the previous
    for a, b in zip(chunks, chunks[1:]):
        first_sentence = sentences_of(b.text)[0]
        assert first_sentence in a.text, (a.text, b.text)
    # every sentence of the input survives somewhere
    joined = "\n".join(c.text for c in chunks)
    for sentence in sentences_of(PROSE):
        assert sentence in joined


def test_cuts_at_sentence_ends_not_mid_word(embedder):
    count = embedder.count_tokens
    chunks = split([Element(PROSE * 4)], count, chunk_tokens=48, overlap_tokens=0)
    words = set(PROSE.split())
    for c in chunks:
        assert c.text.split()[0] in words and c.text.split()[-1] in words
        assert c.text.rstrip()[-1] in ".!?", c.text  # whole sentences only


def test_long_sentence_splits_between_words(embedder):
    count = embedder.count_tokens
    long_sentence = " ".join(f"word{i}" for i in range(300))  # no sentence end at all
    chunks = split([Element(long_sentence)], count, chunk_tokens=50, overlap_tokens=8)
    assert len(chunks) > 10
    for c in chunks:
        assert c.n_tokens <= 50
        assert all(w.startswith("word") and w[4:].isdigit() for w in c.text.split())  # never inside a word
    # overlap by words when no whole sentence fits: each chunk starts with the previous one's last words
    for a, b in zip(chunks, chunks[1:]):
        assert a.text.split()[-1] in b.text.split()[:8]


def test_a_word_longer_than_a_chunk_is_cut_inside(embedder):
    count = embedder.count_tokens
    giant = "-".join(f"w{i}" for i in range(200))  # one "word" of some 600 tokens
    chunks = split([Element(giant)], count, chunk_tokens=50, overlap_tokens=0)
    assert len(chunks) > 5
    assert all(c.n_tokens <= 50 for c in chunks)
    assert "".join(c.text for c in chunks) == giant  # nothing lost, nothing added


def test_heading_paths_and_github_anchors(embedder):
    elements = [
        Element("Guide", "title", heading_level=1),
        Element("An introduction that is long enough to stand on its own as a chunk of text. " * 3),
        Element("Getting Started!", "title", heading_level=2),
        Element("Install the tool, then run it once to create the configuration. " * 3),
        Element("Linux & macOS", "title", heading_level=3),
        Element("Use the package manager of your system to install the dependencies first. " * 3),
        Element("Getting Started!", "title", heading_level=2),
        Element("A second section with the same title gets a numbered anchor like on GitHub. " * 3),
        Element("FAQ", "title", heading_level=2),
        Element("Questions come here, with their answers, in no particular order at all. " * 3),
    ]
    chunks = split(elements, embedder.count_tokens, chunk_tokens=200, overlap_tokens=0)
    got = [(c.heading_path, c.anchor) for c in chunks]
    assert got == [
        ("Guide", "guide"),
        ("Guide › Getting Started!", "getting-started"),
        ("Guide › Getting Started! › Linux & macOS", "linux--macos"),
        ("Guide › Getting Started!", "getting-started-1"),
        ("Guide › FAQ", "faq"),
    ]
    assert chunks[1].text.startswith("Getting Started!\n\nInstall the tool")
    assert slugify("Übersicht: Café 2.0") == "übersicht-café-20"


def test_heading_only_parent_joins_its_first_child(embedder):
    elements = [
        Element("Leave", "title", heading_level=2),
        Element("Eligibility", "title", heading_level=3),
        Element("You must have exhausted all leave balances before applying for donated hours."),
    ]
    [chunk] = split(elements, embedder.count_tokens)
    assert chunk.heading_path == "Leave › Eligibility"
    assert chunk.anchor == "eligibility"
    assert chunk.text.startswith("Leave\n\nEligibility\n\nYou must")


def test_cjk_text_without_spaces(embedder):
    text = "東京は日本の首都であり、多くの人が住んでいます。" * 40
    chunks = split([Element(text)], embedder.count_tokens, chunk_tokens=64, overlap_tokens=16)
    assert len(chunks) > 3
    for c in chunks:
        assert c.n_tokens <= 64
        assert c.text.endswith("。")


def test_code_line_ranges_and_anchors(embedder):
    lines = [f"def f{i}(x):\n    return x + {i}\n" for i in range(60)]
    elements, line = [], 1
    for block in lines:
        n = block.count("\n")
        elements.append(Element(block.rstrip("\n"), "code", line_start=line, line_end=line + n - 1))
        line += n + 1  # a blank line between functions
    chunks = split(elements, embedder.count_tokens, chunk_tokens=60, overlap_tokens=10, anchors="lines")
    assert len(chunks) > 3
    source = "\n\n".join(b.rstrip("\n") for b in lines).split("\n")
    for c in chunks:
        assert c.n_tokens <= 60
        assert c.anchor == f"L{c.line_start}-L{c.line_end}"
        # the chunk's text is exactly what those lines hold (blank lines collapse to one)
        expected = [ln for ln in source[c.line_start - 1 : c.line_end]]
        assert [ln for ln in c.text.split("\n") if ln] == [ln for ln in expected if ln]
    assert chunks[0].line_start == 1
    assert chunks[-1].line_end == len(source)


def test_a_chunk_never_spans_two_pages_nor_carries_one_into_the_next(embedder):
    elements = [Element("Membership grew to 412 families this year.", page=1),
                Element("The cider press was repaired for 2,300 dollars.", page=2),
                Element("A second tractor will be leased.", page=2)]
    chunks = split(elements, embedder.count_tokens, chunk_tokens=200, overlap_tokens=32, anchors="page")
    assert [(c.page, c.anchor, c.text) for c in chunks] == [
        (1, "page=1", "Membership grew to 412 families this year."),
        (2, "page=2", "The cider press was repaired for 2,300 dollars.\n\nA second tractor will be leased.")]


def test_pages_and_page_anchors(embedder):
    elements = [Element(f"Text of page {p}. " * 30, page=p) for p in (1, 2, 3)]
    chunks = split(elements, embedder.count_tokens, chunk_tokens=60, overlap_tokens=0, anchors="page")
    assert [c.page for c in chunks] == sorted(c.page for c in chunks)
    assert {c.page for c in chunks} == {1, 2, 3}
    for c in chunks:
        assert c.anchor == f"page={c.page}"
        assert f"page {c.page}." in c.text.split("\n")[0]


def test_plain_text_lines_follow_sentences(embedder):
    # a paragraph wrapped over lines 3-8: a chunk's lines are those of its own sentences
    text = "\n".join(f"Line {i} says something short." for i in range(3, 9))
    chunks = split([Element(text, line_start=3, line_end=8)], embedder.count_tokens, chunk_tokens=16, overlap_tokens=0,
                   anchors="lines")
    assert len(chunks) >= 2
    for c in chunks:
        first = int(c.text.split()[1])
        assert c.line_start == first
        assert c.anchor == f"L{c.line_start}-L{c.line_end}"
    assert chunks[-1].line_end == 8
