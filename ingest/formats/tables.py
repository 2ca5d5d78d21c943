"""Tables as Markdown tables: a header row, a `|---|` line, one line per row.

A table is what a question about one of its cells needs whole: which row and which column a value
stands in. The partitioners keep a table's structure as HTML (`metadata.text_as_html` of a Table
element, from PDF, DOCX, HTML, PPTX, XLSX and Markdown alike) while its text is a run of cell words;
the HTML becomes a Markdown table here, so the chunk text (embedded, indexed, put in the prompt and
shown in the preview) keeps the rows. A caption goes on a line of its own above the table. The
splitter (`ingest.split`) cuts a long table between rows and repeats the lines before the first row
(caption, header, `|---|`) in every piece: `table_parts` says which lines those are.
"""

from __future__ import annotations

import re
from html import escape

from ingest.elements import Element

_SEPARATOR = re.compile(r"^\|(?:\s*:?-{3,}:?\s*\|)+$")
# A paragraph that names the table after it: "Table 3: Rates", "Tab. 2 -", "表 1".
_CAPTION = re.compile(r"^(?:table|tab\.|表)\s*[0-9IVXLC一二三四五六七八九十]+\b", re.I)
MAX_CAPTION_CHARS = 200


def html_rows(html: str) -> tuple[str, list[list[str]]]:
    """(caption, rows of cell texts) of the first table of an HTML fragment; rowspan and colspan
    repeat the cell's text in each place it covers, so every row stands on its own."""
    from lxml import html as lxml_html

    try:
        root = lxml_html.fragment_fromstring(html, create_parent="div")
    except Exception:  # lxml's own errors and ValueError: a fragment it cannot read has no table
        return "", []
    table = next(root.iter("table"), None)
    if table is None:
        return "", []
    caption_el = table.find("caption")
    caption = _cell_text(caption_el.text_content()) if caption_el is not None else ""
    rows: list[list[str]] = []
    pending: dict[int, tuple[str, int]] = {}  # column -> (text, rows still covered) from a rowspan above
    for tr in table.xpath("./tr|./thead/tr|./tbody/tr|./tfoot/tr"):
        row: list[str] = []
        cells = iter(tr.xpath("./th|./td"))
        while True:
            if len(row) in pending:
                text, left = pending.pop(len(row))
                row.append(text)
                if left > 1:
                    pending[len(row) - 1] = (text, left - 1)
                continue
            cell = next(cells, None)
            if cell is None:
                break
            text = _cell_text(cell.text_content())
            span_cols, span_rows = _span(cell, "colspan"), _span(cell, "rowspan")
            for _ in range(span_cols):
                if span_rows > 1:
                    pending[len(row)] = (text, span_rows - 1)
                row.append(text)
        for col in sorted(c for c in pending if c >= len(row)):  # rowspans right of this row's cells
            text, left = pending.pop(col)
            row.extend([""] * (col - len(row)) + [text])
            if left > 1:
                pending[col] = (text, left - 1)
        rows.append(row)
    return caption, _trim(rows)


def _span(cell, name: str) -> int:
    try:
        return max(1, min(int(cell.get(name, "1")), 1000))
    except ValueError:
        return 1


def _cell_text(text: str) -> str:
    return " ".join(text.split())


def _trim(rows: list[list[str]]) -> list[list[str]]:
    """Rows of one width, without rows or columns that are empty throughout (a sheet's unused cells)."""
    rows = [r for r in rows if any(c for c in r)]
    if not rows:
        return []
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    keep = [c for c in range(width) if any(r[c] for r in rows)]
    return [[r[c] for c in keep] for r in rows]


def markdown_table(rows: list[list[str]], caption: str = "") -> str:
    """Rows as a Markdown table, the first row its header; the caption, when given, on a line above."""
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    out = [caption, ""] if caption else []
    out += [line(rows[0]), "|" + "---|" * len(rows[0])]
    out += [line(r) for r in rows[1:]]
    return "\n".join(out)


def html_to_markdown(html: str) -> str | None:
    """The first table of an HTML fragment as a Markdown table; None when it holds no cell text."""
    caption, rows = html_rows(html)
    titles = [caption] if caption else []
    # Leading rows with one filled cell across a wider table are its title ("Budget 2025" atop a sheet).
    while len(rows) > 2 and len(rows[0]) > 1 and sum(1 for c in rows[0] if c) == 1:
        titles.append(next(c for c in rows[0] if c))
        rows = _trim(rows[1:])
    if not rows or (len(rows) == 1 and len(rows[0]) == 1):  # one cell: a box around text, not a table
        return None
    return markdown_table(rows, " ".join(titles))


def rows_to_html(rows: list[list[str]]) -> str:
    """Rows (the first the header) as an HTML table: what a Table element carries as text_as_html."""
    head = "".join(f"<th>{escape(c)}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows[1:])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def table_parts(text: str) -> tuple[str, list[str]] | None:
    """(head, rows) of a Markdown table's text: head is every line up to its `|---|` line (caption,
    header), rows the lines after it; None when the text is not such a table."""
    lines = text.split("\n")
    sep = next((i for i, line in enumerate(lines) if _SEPARATOR.match(line.strip())), None)
    if sep is None or sep == 0 or not lines[sep - 1].lstrip().startswith("|"):
        return None
    rows = lines[sep + 1 :]
    if not rows or not all(r.lstrip().startswith("|") for r in rows):
        return None
    return "\n".join(lines[: sep + 1]), rows


def attach_captions(elements: list[Element]) -> list[Element]:
    """A short paragraph that names the table right after it ("Table 2: Rates") becomes the table's
    caption line, so it stays with the table when the table is split."""
    out: list[Element] = []
    for el in elements:
        prev = out[-1] if out else None
        if (el.kind == "table" and prev is not None and prev.kind == "text" and prev.page == el.page
                and "\n" not in prev.text and len(prev.text) <= MAX_CAPTION_CHARS and _CAPTION.match(prev.text)
                and table_parts(el.text) is not None and not el.text.startswith(prev.text)):
            el.text = f"{prev.text}\n\n{el.text}"
            out[-1] = el
            continue
        out.append(el)
    return out


def delimited_table(text: str, delimiter: str) -> Element | None:
    """A CSV or TSV file's rows as one Markdown table element (the first row its header), each table
    line marked with the file line its row starts on, so a piece of it is cited by its lines; None when
    the text has fewer than two rows or is not delimited text (the file is then read as plain text)."""
    import csv
    import io

    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows: list[list[str]] = []
    starts: list[int] = []
    line = 1
    try:
        for cells in reader:
            if any(c.strip() for c in cells):
                rows.append([_cell_text(c) for c in cells])
                starts.append(line)
            line = reader.line_num + 1
    except csv.Error:
        return None
    if len(rows) < 2 or max(len(r) for r in rows) < 2:
        return None
    width = max(len(r) for r in rows)
    table = markdown_table([r + [""] * (width - len(r)) for r in rows])
    lines = table.split("\n")  # header, |---|, then one line per row
    marks, offset = [], 0
    for i, piece in enumerate(lines):
        marks.append((offset, starts[max(i - 1, 0)]))
        offset += len(piece) + 1
    return Element(table, "table", line_start=starts[0], line_end=starts[-1], marks=marks)
