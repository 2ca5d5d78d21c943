"""A passage as the preview shows it: one text in which every line or sentence appears once, and the
part of it the source stands for.

Consecutive chunks of a section share up to `overlap_tokens` of text, so chunk texts laid end to end
say the overlap twice; and a Markdown file's chunks are the parser's rewritten words (a table becomes a
run of cells). So a passage is shown in one of three forms:

- "markdown": the Markdown file's own lines from the passage's first line to its last, to be rendered
  as Markdown, when the file on disk is still the one ingested (same sha256);
- "lines": the lines of a code or plain text file, from the file as above or else from the chunks,
  where each chunk's text is exactly its lines;
- "text": the chunks' texts merged with each overlap written once (PDFs, office files, reST, HTML,
  uploads, a file changed since, a text whose lines run for pages), with where each chunk's part lies in it.
"""

from __future__ import annotations

from indexes.retrieval.hits import merge_parts
from indexes.reading import PassageChunk

MARKDOWN_KINDS = frozenset({"md", "markdown"})
# Kinds whose chunk texts are rewritten by their parser (markup dropped, lines joined), not the file's lines.
REWRITTEN_KINDS = frozenset({"md", "markdown", "rst", "html", "htm", "xhtml"})
MAX_LINES = 5000  # a passage longer than this many lines is shown as its chunks' text
# A line this long is a text without line breaks (a paragraph per line, or none at all): shown as its chunks'
# parts, each a paragraph, rather than as one "line 1" wall whose highlight lies screens below.
LONG_LINE_CHARS = 2000


def line_range(chunks: list[PassageChunk]) -> tuple[int, int] | None:
    """(first, last) line of these chunks when each has lines and none a page; else None."""
    if not chunks or any(c.line_start is None or c.page for c in chunks):
        return None
    return min(c.line_start for c in chunks), max(c.line_end or c.line_start for c in chunks)


def reads_file(kind: str, chunks: list[PassageChunk]) -> bool:
    """Whether the passage would be shown from its file's own lines (so the file is worth reading)."""
    span = line_range(chunks)
    return span is not None and span[1] - span[0] < MAX_LINES and (kind in MARKDOWN_KINDS or kind not in REWRITTEN_KINDS)


def file_lines(text: str, first: int, last: int) -> str:
    """Lines first..last (1-based) of a file's text, line breaks as the chunks count them ("\\n")."""
    return "\n".join(line.removesuffix("\r") for line in text.split("\n")[first - 1 : last])


def chunk_lines(chunks: list[PassageChunk], first: int, last: int) -> str | None:
    """Lines first..last put together from chunks whose texts are their lines (each line once, a line no
    chunk holds left blank); None when a chunk's text does not have as many lines as its range."""
    lines: dict[int, str] = {}
    for c in chunks:
        own = c.text.split("\n")
        if c.line_start is None or len(own) != (c.line_end or c.line_start) - c.line_start + 1:
            return None
        for n, line in enumerate(own, start=c.line_start):
            lines.setdefault(n, line)
    return "\n".join(lines.get(n, "") for n in range(first, last + 1))


def merged_view(chunks: list[PassageChunk], targets: set[int]) -> dict:
    """The "text" form: the chunks' texts merged, and each chunk's part of it (offsets in code points)."""
    text, parts = merge_parts([c.text for c in chunks])
    return {
        "format": "text", "text": text, "line_start": None, "target_lines": None,
        "parts": [
            {"chunk_id": c.chunk_id, "start": p.start, "end": p.end, "target": c.chunk_id in targets,
             "heading_path": c.heading_path, "page": c.page}
            for c, p in zip(chunks, parts)
        ],
    }


def passage_view(chunks: list[PassageChunk], targets: set[int], kind: str, file_text: str | None) -> dict:
    """The passage of these chunks (in reading order; `targets` the ids of those the source stands for)
    in the form its document allows; `file_text` is the original file's text when it is still the one
    ingested (None otherwise)."""
    span = line_range(chunks)
    if span is None or span[1] - span[0] >= MAX_LINES or (kind in REWRITTEN_KINDS and kind not in MARKDOWN_KINDS):
        return merged_view(chunks, targets)
    first, last = span
    if file_text is not None:
        text = file_lines(file_text, first, last)
    elif kind in REWRITTEN_KINDS or (text := chunk_lines(chunks, first, last)) is None:
        return merged_view(chunks, targets)
    if kind not in MARKDOWN_KINDS and any(len(line) > LONG_LINE_CHARS for line in text.split("\n")):
        return merged_view(chunks, targets)
    cited = line_range([c for c in chunks if c.chunk_id in targets])
    return {
        "format": "markdown" if kind in MARKDOWN_KINDS else "lines",
        "text": text, "line_start": first, "target_lines": list(cited) if cited else None, "parts": [],
    }
