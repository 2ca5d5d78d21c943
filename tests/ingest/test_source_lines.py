"""Line ranges of Markdown, reStructuredText, plain text and HTML chunks: each chunk's words lie on
the lines it names in the file, through real parsing (unstructured, docutils) and splitting."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.parse import parse
from ingest.source_lines import SourceLines, add_lines, words
from ingest.elements import Element
from ingest.sources import SourceFile
from ingest.split import split

pytestmark = pytest.mark.slow  # the real embedder's tokenizer

MARKDOWN = """---
title: Operations guide
tags: [ops]
---
# Operations guide

The service answers questions from **your own documents** and
shows where each answer came from. See [the manual](https://example.com/manual/run_book.html)
for details. Backups cost &amp; nothing when they run at night.

## Install

1. Download the release archive from the internal mirror.
2. Run `pip install service` on the host
   with the same Python as the scheduler.

- the first bullet about disks
- the second bullet about memory

```python
def restart(service):
    return service.stop() and service.start()
```

| setting | default |
|---------|---------|
| workers | four    |

Setext rollback heading
-----------------------

> A quoted warning that spans
> two lines of the file.

To roll back a bad release, redeploy the previous image tag. The scheduler keeps the last five
image tags for this reason. Rollbacks are logged with the operator's name and the time. Nobody needs
to restart the database for a rollback. 回滚之后请检查日志，确认服务已经恢复。
"""

RST = """==================
Operations guide
==================

The service answers questions from *your own documents* and
shows where each answer came from. See `the manual <https://example.com/manual>`_
for details.

Install
=======

#. Download the release archive from the internal mirror.
#. Run ``pip install service`` on the host
   with the same Python as the scheduler.

.. note::

   Backups run at night and cost nothing.

Rollback
--------

To roll back a bad release, redeploy the previous image tag. The scheduler keeps the last five
image tags for this reason. Rollbacks are logged with the operator's name and the time.

.. versionadded:: 2.1
   Rollbacks of configuration alone.
"""

TEXT = """Operations notes

The service answers questions from your own documents and
shows where each answer came from.

To roll back a bad release, redeploy the previous image tag. The scheduler keeps the last five
image tags for this reason. Rollbacks are logged with the operator's name and the time.
"""

HTML = """<!DOCTYPE html>
<html>
<head><title>Operations guide</title>
<style>body { color: black; }</style>
<script>var analytics = "the service answers nothing";</script>
</head>
<body>
<nav class="sidebar"><a href="/">Home</a> <a href="/ops">Operations</a></nav>
<main>
<h1 id="guide">Operations guide</h1>
<p>The service answers questions from <strong>your own
documents</strong> and shows where each answer came from. See
<a href="https://example.com/manual/run_book.html" class="external link">the manual</a> for details.
Backups cost &amp; nothing.</p>
<h2 id="rollback">Rollback</h2>
<ul>
<li>Redeploy the previous image tag.</li>
<li>Check the logs of the
scheduler afterwards.</li>
</ul>
<p>To roll back a bad release, redeploy the previous image tag. The scheduler keeps the last five
image tags for this reason. Rollbacks are logged with the operator's name and the time.</p>
<pre><code>deploy --tag previous
deploy --verify</code></pre>
</main>
<footer class="footer">Copyright the operations team</footer>
</body>
</html>
"""


def source(tmp_path: Path, name: str, text: str) -> SourceFile:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    st = path.stat()
    return SourceFile(path, name, tmp_path, st.st_size, st.st_mtime)


def check_chunks(sf: SourceFile, text: str, count, chunk_tokens: int) -> list:
    """Split the file and check that every chunk has lines and that its words are on those lines."""
    parsed = parse(sf)
    chunks = split(parsed.elements, count, chunk_tokens=chunk_tokens, overlap_tokens=8, anchors=parsed.anchors)
    lines = text.split("\n")
    assert chunks
    for c in chunks:
        a, b = c.line_start, c.line_end
        assert a is not None and b is not None and 1 <= a <= b <= len(lines), (c.text, a, b)
        on_lines = {w for w, _ in words("\n".join(lines[a - 1 : b]))}
        missing = [w for w, _ in words(c.text) if w not in on_lines]
        assert not missing, (c.text, a, b, missing)
    return chunks


@pytest.mark.parametrize("name, text", [("guide.md", MARKDOWN), ("guide.rst", RST), ("notes.txt", TEXT),
                                        ("guide.html", HTML)])
def test_every_chunk_names_the_lines_its_words_lie_on(tmp_path, embedder, name, text):
    for budget in (24, 64, 200):  # one sentence a chunk (with overlap), a few, the whole document
        check_chunks(source(tmp_path, name, text), text, embedder.count_tokens, budget)


def test_markdown_lines_are_those_of_the_file_front_matter_included(tmp_path, embedder):
    chunks = check_chunks(source(tmp_path, "guide.md", MARKDOWN), MARKDOWN, embedder.count_tokens, 24)
    lines = MARKDOWN.split("\n")
    rollback = next(c for c in chunks if "To roll back" in c.text)
    on_lines = lines[rollback.line_start - 1 : rollback.line_end]  # counted from the file's first line
    assert any(line.startswith("To roll back") for line in on_lines) and len(on_lines) <= 4, on_lines
    assert rollback.anchor == "setext-rollback-heading"  # Markdown keeps linking by heading
    code = next(c for c in chunks if "def restart" in c.text)
    assert lines[code.line_end - 1] == "    return service.stop() and service.start()"
    zh = next(c for c in chunks if "回滚" in c.text)
    assert zh.line_end == len(lines) - 1


def test_html_outside_the_main_content_is_not_matched(tmp_path, embedder):
    chunks = check_chunks(source(tmp_path, "guide.html", HTML), HTML, embedder.count_tokens, 24)
    lines = HTML.split("\n")
    first = next(c for c in chunks if "answers questions" in c.text)
    assert lines[first.line_start - 1] == '<h1 id="guide">Operations guide</h1>'  # not <title>, nor the menu


def test_words_the_source_lacks_leave_the_element_without_lines_and_the_next_found():
    source = SourceLines("alpha beta gamma\n\ndelta epsilon zeta\n\neta theta iota kappa\n")
    elements = [Element("alpha beta gamma"), Element("Note"), Element("delta epsilon zeta"),
                Element("something generated entirely elsewhere"), Element("eta theta iota kappa")]
    add_lines(elements, source)
    assert [(e.line_start, e.line_end) for e in elements] == [(1, 1), (None, None), (3, 3), (None, None), (5, 5)]
