"""A passage as the preview shows it: each line or sentence once, in the form its document allows."""

from __future__ import annotations

from indexes.location import Location
from indexes.reading import PassageChunk

from assistant.answers.passage_view import passage_view

FILE = "\n".join([
    "# Teas",                         # 1
    "",                               # 2
    "Green tea wants cool water. Black tea wants boiling water.",  # 3
    "",                               # 4
    "| Tea | Water |",                # 5
    "|-----|-------|",                # 6
    "| Green | 80 |",                 # 7
    "",                               # 8
])


def chunk(cid: int, text: str, lines: tuple[int, int] | None = None, page: int | None = None,
          heading: str = "") -> PassageChunk:
    a, b = lines or (None, None)
    return PassageChunk(cid, cid, text, Location(heading_path=heading, page=page, line_start=a, line_end=b))


# Rewritten Markdown chunks: the parser's words, the second one repeating the first one's last sentence.
MD_CHUNKS = [
    chunk(1, "Teas\n\nGreen tea wants cool water. Black tea wants boiling water.", (1, 3)),
    chunk(2, "Black tea wants boiling water.\n\nTea Water Green 80", (3, 7)),
]


def test_a_markdown_file_still_as_ingested_is_shown_as_its_own_lines():
    view = passage_view(MD_CHUNKS, {2}, "md", FILE)
    assert view["format"] == "markdown" and view["line_start"] == 1
    assert view["text"] == "\n".join(FILE.split("\n")[0:7])  # the table as written, every line once
    assert view["target_lines"] == [3, 7]


def test_without_its_file_a_passage_is_its_chunks_merged_with_the_overlap_once():
    view = passage_view(MD_CHUNKS, {1, 2}, "md", None)
    assert view["format"] == "text"
    text = view["text"]
    assert text.count("Black tea wants boiling water.") == 1
    parts = view["parts"]
    assert [p["chunk_id"] for p in parts] == [1, 2] and all(p["target"] for p in parts)
    assert text[parts[0]["start"]:parts[0]["end"]] == MD_CHUNKS[0].text
    assert text[parts[1]["start"]:parts[1]["end"]] == "\n\nTea Water Green 80"


def test_code_is_shown_as_numbered_lines_from_its_chunks_when_the_file_is_gone():
    code = [chunk(1, "def a():\n    return 1", (1, 2)), chunk(2, "def b():\n    return 2", (4, 5)),
            chunk(3, "def b():\n    return 2\n# end", (4, 6))]
    view = passage_view(code, {2, 3}, "py", None)
    assert view["format"] == "lines" and view["line_start"] == 1
    assert view["text"].split("\n") == ["def a():", "    return 1", "", "def b():", "    return 2", "# end"]
    assert view["target_lines"] == [4, 6]
    from_file = passage_view(code, {1}, "py", "def a():\r\n    return 1\r\n\r\ndef b():\r\n    return 2\r\n# end\r\n")
    assert from_file["text"] == "def a():\n    return 1\n\ndef b():\n    return 2\n# end"


def test_chunks_that_are_not_their_lines_pages_and_rewritten_kinds_are_merged_text():
    prose = [chunk(1, "One sentence. Two sentence joined from two lines.", (1, 3))]  # 1 line of text for 3
    assert passage_view(prose, {1}, "txt", None)["format"] == "text"
    pdf = [chunk(1, "Page one text.", page=1), chunk(2, "Page two text.", page=2)]
    view = passage_view(pdf, {2}, "pdf", None)
    assert view["format"] == "text" and [p["page"] for p in view["parts"]] == [1, 2]
    assert view["text"] == "Page one text.\nPage two text."
    html = [chunk(1, "Title text here.", (1, 4))]
    assert passage_view(html, {1}, "html", "<h1>Title</h1>\n<p>text</p>\n<p>here.</p>\n")["format"] == "text"


def test_a_text_without_line_breaks_is_shown_as_its_parts_not_one_line():
    wall = "".join(f"第{i}句：长江流经这座城市。" for i in range(400))  # 5,000+ characters on line 1
    chunks = [chunk(1, wall[:1500], (1, 1)), chunk(2, wall[1400:3000], (1, 1)), chunk(3, wall[2900:4400], (1, 1))]
    view = passage_view(chunks, {2}, "txt", wall)
    assert view["format"] == "text" and view["line_start"] is None
    assert [p["target"] for p in view["parts"]] == [False, True, False]
    assert view["text"].count(wall[1400:1500]) == 1  # each overlap written once
    short = passage_view([chunk(1, "a short line", (1, 1))], {1}, "txt", "a short line")
    assert short["format"] == "lines"  # an ordinary line stays a numbered line
