"""Which language a new collection's documents are in, enough to pick its embedder: the share of CJK
letters in the parsed text of a sample of its files.

The sample is a few text files spread over the scanned list (not only the first ones, which in a
checkout are often an English README and licence before the documents themselves), each cut to a
bounded amount of text, decoded as ingestion decodes them (their markup is punctuation or tags, not
letters). PDF, Office and e-mail files are left out of the sample: they are parsed only in the parser's
child process, under its time and memory limits, never in the process that holds the store. A
collection of such documents alone gets the configured default (set `embedder.model`, or
`assistant reembed` it). The look costs milliseconds.
"""

from __future__ import annotations

import re
from typing import Iterable

from ingest.parse import EMAIL, HTML, OFFICE, ParseError
from ingest.sources import Scan, SourceFile, read_inside_root
from ingest.formats.text import TextDecodeError, decode_text, looks_binary

SAMPLE_FILES = 12
SAMPLE_FILE_BYTES = 4 * 1024 * 1024  # larger files are left out of the sample (a big PDF parses slowly)
SAMPLE_CHARS = 4000  # characters taken from each sampled file

DOCUMENTS = {".pdf", *OFFICE, *EMAIL}  # parsed in the child process only: not sampled
_TAG = re.compile(r"<[^>]*>")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")


def cjk_share(text: str) -> float:
    """CJK characters over all letters (Latin, CJK, any script); 0.0 for text without letters."""
    letters = sum(1 for ch in text if ch.isalpha())
    return len(_CJK.findall(text)) / letters if letters else 0.0


def spread(files: list[SourceFile], n: int = SAMPLE_FILES) -> list[SourceFile]:
    """n files evenly spread over the list, in its order (all of them when there are fewer)."""
    if len(files) <= n:
        return list(files)
    step = len(files) / n
    return [files[int(i * step)] for i in range(n)]


def file_text(source: SourceFile) -> str:
    """The text of one text file as far as its language goes (tags dropped). Raises ParseError for a
    document or binary file, OSError when it cannot be read."""
    if source.suffix in DOCUMENTS:
        raise ParseError("documents are parsed in the parser's child process only")
    data = read_inside_root(source)
    if looks_binary(data):
        raise ParseError("binary file")
    text = decode_text(data)  # whole: a cut could split a character and change the encoding guessed
    return _TAG.sub(" ", text) if source.suffix in HTML else text


def sample_text(scans: Iterable[Scan], *, max_file_bytes: int = SAMPLE_FILE_BYTES) -> str:
    """The text of a spread of the scanned files (files that cannot be read are passed over)."""
    files = [f for sc in scans for f in sc.files if f.size <= max_file_bytes and f.suffix not in DOCUMENTS]
    parts: list[str] = []
    for source in spread(files):
        try:
            parts.append(file_text(source)[:SAMPLE_CHARS])
        except (ParseError, TextDecodeError, OSError):
            continue
    return "\n".join(parts)
