"""HTML exports: site chrome stripped, the page's own heading ids kept as chunk anchors."""

from __future__ import annotations

from ingest.formats.html import clean_html
from ingest.parse import parse
from ingest.sources import SourceFile

PAGE = """<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE html>
<html><head><title>Travel policy - Team wiki</title><script>track()</script><style>p{}</style></head>
<body>
<header class="site-header"><a href="/">Team wiki</a> <form role="search"><input name="q"></form></header>
<div id="breadcrumb-section"><ol><li>Home</li><li>Policies</li></ol></div>
<nav class="sidebar"><ul><li>Onboarding</li><li>Travel</li><li>Leave</li></ul></nav>
<div id="main-content">
  <h1 id="travel-policy">Travel policy</h1>
  <p>Book flights through the travel desk at least fourteen days before departure.</p>
  <section id="per-diem"><h2>Per diem<a class="headerlink" href="#per-diem">¶</a></h2>
  <p>The daily allowance covers meals and local transport in the city you visit.</p></section>
  <div class="page-metadata">Last edited by someone</div>
</div>
<div id="footer"><p>Powered by the wiki engine. Report a bug.</p></div>
</body></html>"""


def test_clean_html_keeps_the_content_and_heading_ids():
    page = clean_html(PAGE)
    assert page.title == "Travel policy - Team wiki"
    assert page.heading_ids == [("travel policy", "travel-policy"), ("per diem", "per-diem")]
    for chrome in ("track()", "Onboarding", "Home", "Powered by", "Last edited", "¶", "site-header"):
        assert chrome not in page.html
    assert "fourteen days" in page.html and "daily allowance" in page.html


def test_html_export_chunks_link_to_the_page_anchors(tmp_path, embedder):
    from ingest.split import split

    path = tmp_path / "travel.html"
    path.write_text(PAGE)
    parsed = parse(SourceFile(path, "travel.html", tmp_path, path.stat().st_size, 0.0))
    text = "\n".join(e.text for e in parsed.elements)
    assert "Onboarding" not in text and "Powered by" not in text
    chunks = split(parsed.elements, embedder.count_tokens, chunk_tokens=40, overlap_tokens=0, anchors=parsed.anchors)
    by_heading = {c.heading_path: c.anchor for c in chunks}
    assert by_heading["Travel policy › Per diem"] == "per-diem"
    assert any(c.anchor == "travel-policy" and "fourteen days" in c.text for c in chunks)


def test_rst_sections_keep_docutils_ids(tmp_path):
    path = tmp_path / "guide.rst"
    path.write_text("User guide\n==========\n\nIntro text here.\n\nGetting started\n---------------\n\nInstall it first.\n")
    parsed = parse(SourceFile(path, "guide.rst", tmp_path, path.stat().st_size, 0.0))
    anchors = {e.text: e.anchor for e in parsed.elements if e.kind == "title"}
    assert anchors["Getting started"] == "getting-started"
