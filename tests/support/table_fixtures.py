"""Documents with tables in every format ingestion reads them from, written from plain rows.

`python -m tests.support.table_fixtures DIR` writes the committed set of tests/fixtures/tables/ (the
table questions of tests/fixtures/eval/table-questions.jsonl ask about its cells); tests call the
writers to make their own variants. The PDF is written by hand (no PDF writer is installed): text
in Helvetica drawn cell by cell and the table's ruling lines, so it has a real text layer and a
ruled table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

Rows = list[list[str]]

# The fixed tables are data (tests/fixtures/table_rows.json); the long ones below are made by a rule.
_FIXED: dict[str, Rows] = json.loads((Path(__file__).parents[1] / "fixtures" / "table_rows.json").read_text("utf-8"))
NETWORKS, ROOMS, PARKING, SHIPPING, CUSTOMS = (_FIXED[n] for n in ("networks", "rooms", "parking", "shipping", "customs"))
RELEASES, TIERS, MONITORS, PRICES = (_FIXED[n] for n in ("releases", "tiers", "monitors", "prices"))

_FIRST = ["Amara", "Bruno", "Chen", "Dalia", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Jonas", "Kemal", "Lena",
          "Mateo", "Nadia", "Oskar", "Priya", "Quinn", "Rosa", "Soren", "Tomas"]
_LAST = ["Okafor", "Lindqvist", "Marchetti", "Raman", "Novak"]
_TEAMS = ["Platform", "Payments", "Design", "Support", "Finance", "Legal"]

# 60 people: a table longer than one chunk.
EXTENSIONS: Rows = [["Name", "Team", "Extension", "Room"]] + [
    [f"{_FIRST[i % 20]} {_LAST[(i % 20 + i // 20) % 5]}", _TEAMS[(i * 7) % 6], str(4100 + i * 3 + (i % 3)),
     f"{2 + i % 4}.{10 + (i * 5) % 37}"]
    for i in range(60)
]

LAPTOPS: Rows = [["Asset tag", "Model", "Assigned to", "Purchased"]] + [
    [f"HL-{1000 + i * 17}", ["ThinkPad T14", "MacBook Air 13", "Latitude 7440", "XPS 13"][i % 4],
     f"{_FIRST[(i * 3) % 20]} {_LAST[(i + i // 20) % 5]}", f"20{22 + i % 3}-{1 + i % 12:02d}-{5 + i % 20:02d}"]
    for i in range(30)
]

def markdown_table(rows: Rows) -> str:
    """Rows as a Markdown table, the first row its header."""
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def write_markdown(path: Path) -> None:
    path.write_text(
        "# Office networks\n\n"
        "Every office has three wireless networks. Staff devices join the staff network; visitors get the "
        "guest network from reception.\n\n"
        f"{markdown_table(NETWORKS)}\n\n"
        "## Printer queues\n\n"
        "Print jobs wait in the queue of the floor they were sent from and are deleted after 24 hours.\n\n"
        "## Extension directory\n\n"
        "Desk phone extensions by person. Dial the four digits from any desk phone.\n\n"
        f"{markdown_table(EXTENSIONS)}\n",
        encoding="utf-8",
    )


def _html_table(rows: Rows, caption: str) -> str:
    head = "".join(f"<th>{c}</th>" for c in rows[0])
    body = "\n".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows[1:])
    return f"<table>\n<caption>{caption}</caption>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def write_html(path: Path) -> None:
    path.write_text(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Rooms and parking</title></head>\n"
        "<body><main>\n<h1>Rooms and parking</h1>\n"
        "<h2>Meeting rooms</h2>\n<p>Book rooms in the calendar; a room left empty for 15 minutes is released.</p>\n"
        f"{_html_table(ROOMS, 'Meeting rooms on each floor')}\n"
        "<h2>Parking</h2>\n<p>The garage under the building has three levels.</p>\n"
        f"{_html_table(PARKING, 'Garage levels')}\n"
        "</main></body></html>\n",
        encoding="utf-8",
    )


def write_docx(path: Path) -> None:
    from docx import Document

    doc = Document()
    doc.add_heading("Shipping rates", level=1)
    doc.add_paragraph("Parcels leave the warehouse every weekday at 15:00. Prices include fuel surcharges.")
    _docx_table(doc, SHIPPING)
    doc.add_heading("Customs", level=2)
    doc.add_paragraph("Parcels outside the European Union need a customs form above the duty-free limit.")
    _docx_table(doc, CUSTOMS)
    doc.core_properties.title = "Shipping rates"
    doc.save(path)


def _docx_table(doc, rows: Rows) -> None:
    table = doc.add_table(rows=len(rows), cols=len(rows[0]))
    table.style = "Table Grid"
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.cell(r, c).text = value


def write_pptx(path: Path) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    for title, rows in (("Release plan", RELEASES), ("Support tiers", TIERS)):
        slide = prs.slides.add_slide(prs.slide_layouts[5])  # title only
        slide.shapes.title.text = title
        shape = slide.shapes.add_table(len(rows), len(rows[0]), Inches(0.5), Inches(1.6), Inches(9), Inches(3))
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                shape.table.cell(r, c).text = value
    prs.save(path)


def write_xlsx(path: Path, sheets: dict[str, Rows] | None = None) -> None:
    from openpyxl import Workbook

    book = Workbook()
    book.remove(book.active)
    for name, rows in (sheets or {"Laptops": LAPTOPS, "Monitors": MONITORS}).items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    book.save(path)


def write_pdf(path: Path, title: str = "Service price list", rows: Rows = PRICES) -> None:
    """A one-page PDF: a title, a sentence and a ruled table, all in Helvetica."""
    widths = [130, 150, 80, 110]
    left, top, height = 60, 640, 24
    ops = [f"BT /F2 18 Tf {left} 740 Td ({_pdf_text(title)}) Tj ET",
           f"BT /F1 11 Tf {left} 705 Td (Prices are per month unless the unit says otherwise, before VAT.) Tj ET"]
    right = left + sum(widths)
    bottom = top - height * len(rows)
    ops.append("0.6 w")
    for r in range(len(rows) + 1):
        y = top - r * height
        ops.append(f"{left} {y} m {right} {y} l S")
    x = left
    for w in [0] + widths:
        x += w
        ops.append(f"{x} {top} m {x} {bottom} l S")
    for r, row in enumerate(rows):
        y = top - (r + 1) * height + 8
        x = left
        for w, value in zip(widths, row):
            font = "/F2" if r == 0 else "/F1"
            ops.append(f"BT {font} 10 Tf {x + 5} {y} Td ({_pdf_text(value)}) Tj ET")
            x += w
    content = "\n".join(ops).encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R /F2 6 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>",
        b"<< /Title (" + _pdf_text(title).encode("latin-1") + b") >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, len(objects), xref)
    path.write_bytes(bytes(out))


def _pdf_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def write_all(folder: Path) -> None:
    """The committed fixture set: one file per format."""
    folder.mkdir(parents=True, exist_ok=True)
    write_markdown(folder / "network.md")
    write_html(folder / "rooms.html")
    write_docx(folder / "shipping.docx")
    write_pptx(folder / "roadmap.pptx")
    write_xlsx(folder / "inventory.xlsx")
    write_pdf(folder / "prices.pdf")


if __name__ == "__main__":
    write_all(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/tables"))
