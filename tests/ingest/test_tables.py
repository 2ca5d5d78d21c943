"""Tables reach the chunk text as Markdown tables, from every format, and a long one is split between
rows under its repeated header; a workbook gives one table per sheet under the sheet's name."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.elements import Element
from ingest.parse import parse
from ingest.sources import SourceFile
from ingest.split import split
from ingest.formats.tables import html_to_markdown, table_parts
from tests.support import table_fixtures as fx

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tables"
CHUNK, OVERLAP = 120, 24


def source(path: Path) -> SourceFile:
    return SourceFile(path, path.name, path.parent, path.stat().st_size, 0.0)


def chunks_of(path: Path, count, chunk_tokens: int = CHUNK):
    parsed = parse(source(path))
    return split(parsed.elements, count, chunk_tokens=chunk_tokens, overlap_tokens=OVERLAP, anchors=parsed.anchors)


def row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def table_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.startswith("|")]


@pytest.mark.parametrize(("name", "rows"), [
    ("network.md", fx.NETWORKS),
    ("rooms.html", fx.ROOMS),
    ("shipping.docx", fx.SHIPPING),
    ("roadmap.pptx", fx.TIERS),
    ("inventory.xlsx", fx.MONITORS),
    ("prices.pdf", fx.PRICES),
])
def test_each_format_s_table_arrives_as_a_markdown_table(embedder, name, rows):
    chunks = chunks_of(FIXTURES / name, embedder.count_tokens)
    holding = [c for c in chunks if row(rows[0]) in c.text]
    assert holding, [c.text for c in chunks]
    lines = table_lines(holding[0].text)
    header = lines.index(row(rows[0]))
    assert lines[header + 1] == "|" + "---|" * len(rows[0])
    assert row(rows[1]) in lines  # a row keeps its cells together, in their columns
    body = "\n".join(c.text for c in chunks)
    assert all(row(r) in body for r in rows[1:])


def test_the_pdf_table_replaces_its_cell_fragments(embedder):
    chunks = chunks_of(FIXTURES / "prices.pdf", embedder.count_tokens)
    text = "\n".join(c.text for c in chunks)
    assert text.count("Incident response") == 1  # in its row, not again as a paragraph of its own
    assert "Prices are per month unless the unit says otherwise, before VAT." in text


def test_a_long_table_is_split_between_rows_each_piece_under_its_header(embedder):
    count = embedder.count_tokens
    chunks = chunks_of(FIXTURES / "network.md", count)
    header = row(fx.EXTENSIONS[0])
    pieces = [c for c in chunks if c.heading_path == "Office networks › Extension directory"]
    assert len(pieces) >= 3
    seen: list[str] = []
    for c in pieces:
        assert c.n_tokens <= CHUNK
        lines = table_lines(c.text)
        assert lines[:2] == [header, "|---|---|---|---|"], c.text
        assert all(line.endswith(" |") and line.count(" | ") == 3 for line in lines[2:])  # never a row cut inside
        seen += lines[2:]
    assert seen == [row(r) for r in fx.EXTENSIONS[1:]]  # every row once, in order: no overlap repeats rows
    assert pieces[0].text.startswith("Extension directory")
    # In a Markdown file each piece's lines run from the header line, so its preview renders as a table.
    assert pieces[0].line_start == 15 and {c.line_start for c in pieces[1:]} == {19} and pieces[-1].line_end == 80


def test_a_caption_paragraph_goes_with_every_piece_of_its_table(embedder, tmp_path):
    page = tmp_path / "people.md"
    page.write_text("# People\n\nTable 4: Desk phones\n\n" + fx.markdown_table(fx.EXTENSIONS) + "\n")
    chunks = chunks_of(page, embedder.count_tokens)
    assert len(chunks) >= 3
    for c in chunks:
        assert "Table 4: Desk phones\n\n" + row(fx.EXTENSIONS[0]) in c.text


def test_a_workbook_gives_one_table_per_sheet_headed_by_the_sheet_name(embedder, tmp_path):
    book = tmp_path / "stock.xlsx"
    fx.write_xlsx(book, {"Chairs": [["Model", "Count"], ["Aeron", "12"], ["Mirra", "7"]],
                         "Desks": [["Desk", "Height"], ["Bekant", "72 cm"], ["Idasen", "adjustable"]]})
    parsed = parse(source(book))
    assert [(e.kind, e.text.split("\n")[0]) for e in parsed.elements] == [
        ("title", "Chairs"), ("table", "| Model | Count |"), ("title", "Desks"), ("table", "| Desk | Height |")]
    chunks = split(parsed.elements, embedder.count_tokens, chunk_tokens=CHUNK, overlap_tokens=OVERLAP)
    assert [(c.heading_path, c.text) for c in chunks] == [
        ("Chairs", "Chairs\n\n| Model | Count |\n|---|---|\n| Aeron | 12 |\n| Mirra | 7 |"),
        ("Desks", "Desks\n\n| Desk | Height |\n|---|---|\n| Bekant | 72 cm |\n| Idasen | adjustable |"),
    ]


def test_a_long_sheet_is_split_under_its_name_and_header(embedder):
    chunks = chunks_of(FIXTURES / "inventory.xlsx", embedder.count_tokens)
    laptops = [c for c in chunks if c.heading_path == "Laptops"]
    assert len(laptops) >= 2 and laptops[0].text.startswith("Laptops\n\n")
    assert all(table_lines(c.text)[0] == row(fx.LAPTOPS[0]) for c in laptops)


def test_html_spans_captions_pipes_and_empty_columns():
    html = ("<table><caption>Q1 results</caption><tr><th>Region</th><th colspan='2'>Sales</th><th></th></tr>"
            "<tr><td rowspan='2'>North</td><td>Jan</td><td>10 | 12</td><td></td></tr>"
            "<tr><td>Feb</td><td>11</td><td></td></tr></table>")
    assert html_to_markdown(html) == ("Q1 results\n\n| Region | Sales | Sales |\n|---|---|---|\n"
                                      "| North | Jan | 10 \\| 12 |\n| North | Feb | 11 |")
    # a sheet's title row above its header is the caption, not the header
    sheet = "<table><tr><td>Budget 2025</td><td></td></tr><tr><td>Item</td><td>Cost</td></tr><tr><td>Rent</td><td>9</td></tr></table>"
    assert html_to_markdown(sheet) == "Budget 2025\n\n| Item | Cost |\n|---|---|\n| Rent | 9 |"
    assert html_to_markdown("<table><tr><td>just a boxed paragraph</td></tr></table>") is None
    assert table_parts("| a |\n|---|\n| 1 |") == ("| a |\n|---|", ["| 1 |"])
    assert table_parts("a run of words") is None


def test_a_row_longer_than_a_chunk_is_the_only_thing_cut(embedder):
    count = embedder.count_tokens
    long_cell = "word " * 200
    table = Element(fx.markdown_table([["Key", "Note"], ["a", "short"], ["b", long_cell.strip()], ["c", "short"]]), "table")
    chunks = split([table], count, chunk_tokens=64, overlap_tokens=8)
    assert all(c.n_tokens <= 64 for c in chunks)
    assert table_lines(chunks[0].text) == ["| Key | Note |", "|---|---|", "| a | short |"]
    assert table_lines(chunks[-1].text) == ["| Key | Note |", "|---|---|", "| c | short |"]


def test_the_fixture_set_is_what_its_writer_writes(tmp_path):
    """The committed files hold the writer's rows (the Markdown, HTML and PDF byte for byte)."""
    fx.write_all(tmp_path)
    for name in ("network.md", "rooms.html", "prices.pdf"):
        assert (tmp_path / name).read_bytes() == (FIXTURES / name).read_bytes(), name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in FIXTURES.iterdir())


def test_a_csv_file_is_one_table_split_between_rows_each_piece_cited_by_its_own_lines(embedder, tmp_path):
    sheet = tmp_path / "extensions.csv"
    rows = [["Extension", "Person", "Team"]] + [[str(1000 + i), f"Person number {i}", f"Team {i % 7}"] for i in range(60)]
    sheet.write_text("\n".join(",".join(r) for r in rows) + "\n")
    parsed = parse(source(sheet))
    assert (parsed.kind, parsed.anchors, [e.kind for e in parsed.elements]) == ("csv", "lines", ["table"])
    chunks = split(parsed.elements, embedder.count_tokens, chunk_tokens=CHUNK, overlap_tokens=OVERLAP, anchors=parsed.anchors)
    assert len(chunks) >= 3
    seen: list[str] = []
    for c in chunks:
        lines = table_lines(c.text)
        assert lines[:2] == [row(rows[0]), "|---|---|---|"], c.text
        body = lines[2:]
        # the piece's lines in the file are its rows' (file line = data row + 1, below the header)
        assert (c.line_start, c.line_end) == (int(body[0].split(" | ")[0][2:]) - 998, int(body[-1].split(" | ")[0][2:]) - 998)
        assert c.anchor == f"L{c.line_start}-L{c.line_end}"
        seen += body
    assert seen == [row(r) for r in rows[1:]]


def test_tsv_quoted_cells_blank_lines_and_ragged_rows(tmp_path):
    sheet = tmp_path / "rooms.tsv"
    sheet.write_text('Room\tFloor\tNote\n4.12\t4\t"two\nlines"\n\n2.01\t2\n')
    [table] = parse(source(sheet)).elements
    assert table.text == "| Room | Floor | Note |\n|---|---|---|\n| 4.12 | 4 | two lines |\n| 2.01 | 2 |  |"
    assert (table.line_start, table.line_end) == (1, 5)  # the last row is on line 5, after the quoted line break


def test_a_csv_that_is_not_a_table_is_read_as_text(tmp_path):
    notes = tmp_path / "notes.csv"
    notes.write_text("just one line of prose without any separators\nand another one\n")
    parsed = parse(source(notes))
    assert [e.kind for e in parsed.elements] == ["text"] and parsed.kind == "csv"
    broken = tmp_path / "broken.csv"
    broken.write_text('a,b\n"unterminated,quote\n')
    assert "unterminated" in parse(source(broken)).elements[0].text
