"""Ruled tables of a PDF's text layer, found with pdfplumber, in place of the cell fragments.

unstructured's `fast` strategy (pdfminer's text boxes) finds no tables: each cell comes out as a
paragraph of its own, column by column, so a row's values end up apart. pdfplumber finds the tables
a PDF draws with ruling lines and reads their cells; the elements whose middle lies inside such a
table are replaced by one Table element, at the place of the first of them, whose `text_as_html`
holds the rows, so it becomes a Markdown table like every other format's (`ingest.formats.tables`).
Tables without ruling lines are left as text: telling them from columns of prose by alignment alone
is a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ingest.formats.tables import rows_to_html

MIN_ROWS, MIN_COLUMNS = 2, 2
RUN_ON_GAP = 12.0  # points: closer than a column gutter, wider than the space between a word and a rule


@dataclass
class FoundTable:
    page: int
    bbox: tuple[float, float, float, float]  # x0, top, x1, bottom in points from the page's top left
    rows: list[list[str]]
    page_size: tuple[float, float]  # width, height in points


def drawn_pages(path: Path) -> list[int]:
    """The numbers of the pages that draw anything (a path): only those can hold a ruled table. pdfium
    tells in milliseconds what pdfplumber would need the whole page's objects for."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    pdf = pdfium.PdfDocument(str(path))
    try:
        out = []
        for number, page in enumerate(pdf, start=1):
            if next(page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_PATH], max_depth=2), None) is not None:
                out.append(number)
            page.close()
        return out
    finally:
        pdf.close()


def find_tables(path: Path) -> list[FoundTable]:
    """The ruled tables of each page with at least two rows and two columns of text."""
    import pdfplumber

    pages = drawn_pages(path)
    if not pages:
        return []
    found: list[FoundTable] = []
    with pdfplumber.open(str(path), pages=pages) as pdf:
        for page in pdf.pages:
            number = page.page_number
            if not (page.lines or page.rects):  # no rules: no ruled table, and no cell search
                continue
            words = None
            for table in page.find_tables():
                rows = [[" ".join((cell or "").split()) for cell in row] for row in table.extract()]
                rows = [r for r in rows if any(r)]
                if len(rows) < MIN_ROWS or max(sum(1 for c in r if c) for r in rows) < MIN_COLUMNS:
                    continue
                words = page.extract_words() if words is None else words
                if not _runs_on(table.bbox, words):
                    found.append(FoundTable(number, tuple(table.bbox), rows, (float(page.width), float(page.height))))
            page.close()  # its parsed objects are held until then
    return found


def _runs_on(bbox: tuple[float, float, float, float], words: list[dict]) -> bool:
    """Whether text on the table's lines goes on just past its left or right rule: then the rules
    frame only some columns of a larger table (rules between a few columns), and its cells are pieces."""
    x0, top, x1, bottom = bbox
    for w in words:
        middle = (w["top"] + w["bottom"]) / 2
        if top < middle < bottom and (x0 - RUN_ON_GAP <= w["x1"] <= x0 or x1 <= w["x0"] <= x1 + RUN_ON_GAP):
            return True
    return False


def with_tables(raw: list, path: Path) -> list:
    """The partitioner's elements with each ruled table's fragments replaced by one Table element; the
    elements as they are when the tables cannot be read (the text is there either way)."""
    try:
        tables = find_tables(path)
    except MemoryError:  # the parser process's limit: it says which (parse_pool.py)
        raise
    except Exception:  # pdfium or pdfplumber failing on an odd file: no better than the text it has
        return raw
    if not tables:
        return raw
    out: list = []
    placed: set[int] = set()
    for el in raw:
        index = next((i for i, t in enumerate(tables) if _inside(el, t)), None)
        if index is None:
            out.append(el)
            continue
        if index not in placed:
            placed.add(index)
            out.append(_table_element(tables[index]))
    for i, t in enumerate(tables):  # a table none of whose text the partitioner kept: after its page's elements
        if i not in placed:
            at = max((k + 1 for k, el in enumerate(out) if (getattr(el.metadata, "page_number", None) or 0) <= t.page),
                     default=0)
            out.insert(at, _table_element(t))
    return out


def _table_element(table: FoundTable):
    """An unstructured Table element of the rows, as the partitioners make them."""
    from unstructured.documents.elements import ElementMetadata, Table

    text = " ".join(c for r in table.rows for c in r if c)
    return Table(text=text, metadata=ElementMetadata(text_as_html=rows_to_html(table.rows), page_number=table.page))


def _inside(el, table: FoundTable) -> bool:
    """Whether the middle of the element's box lies inside the table, on the table's page."""
    meta = el.metadata
    coords = getattr(meta, "coordinates", None)
    if getattr(meta, "page_number", None) != table.page or coords is None or not coords.points:
        return False
    xs = [p[0] for p in coords.points]
    ys = [p[1] for p in coords.points]
    system = coords.system
    sx = sy = 1.0
    if getattr(system, "width", None) and getattr(system, "height", None):
        # pdfminer's boxes come in points already; a system of another size (a rendered page) is scaled
        sx, sy = table.page_size[0] / system.width, table.page_size[1] / system.height
    x, y = (min(xs) + max(xs)) / 2 * sx, (min(ys) + max(ys)) / 2 * sy
    x0, top, x1, bottom = table.bbox
    return x0 <= x <= x1 and top <= y <= bottom
