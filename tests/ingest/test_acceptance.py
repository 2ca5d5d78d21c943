"""Codebase and wiki questions land on the right place: a method's chunk with its line range, a
heading's chunk with the anchor of that heading."""

from __future__ import annotations

import ast
import shutil

import pytest

from indexes.retrieval.retriever import Retriever
from ingest.pipeline import ingest_paths
from ingest.split import slugify
from tests.conftest import shared_path

pytestmark = pytest.mark.slow


def test_flask_make_response_is_found_as_its_method_with_lines(flask_src, store, embedder):
    report = ingest_paths(store, embedder, [flask_src], "flask")
    assert report.files_failed == 0, report.failures
    source = (flask_src / "src" / "flask" / "app.py").read_text()
    method = next(n for c in ast.parse(source).body if isinstance(c, ast.ClassDef) and c.name == "Flask"
                  for n in c.body if isinstance(n, ast.FunctionDef) and n.name == "make_response")

    hits = Retriever(store, embedder).search("make_response", "flask", k=5)
    match = [h for h in hits if h.path == "src/flask/app.py" and h.symbol == "Flask.make_response"]
    assert match, [(h.path, h.symbol) for h in hits]
    assert hits.index(match[0]) <= 2
    hit = match[0]
    assert method.lineno <= hit.line_start <= hit.line_end <= method.end_lineno
    assert hit.anchor == f"L{hit.line_start}-L{hit.line_end}"
    lines = source.splitlines()[hit.line_start - 1 : hit.line_end]
    assert hit.text == "\n".join(line.rstrip() for line in lines)


HEADINGS = [  # (page, heading, its anchor when the page names one)
    ("tools/git-signing.md", "Using GitHub on the web does not require signing", None),
    ("general-information-and-resources/conflict-feedback-additional-frameworks.md",
     "ACE: appreciation, coaching, evaluation", None),
    ("about-us/tts-consulting/operations/delivery-assurance.md", "18F working groups", "18f-working-groups"),
]


def test_wiki_heading_search_returns_the_chunk_anchored_at_it(tmp_path, store, embedder):
    pages = shared_path("corpora", "wiki-18f-handbook", "pages")
    root = tmp_path / "wiki"
    for rel in ("tools", "general-information-and-resources", "about-us/tts-consulting/operations"):
        shutil.copytree(pages / rel, root / rel)
    ingest_paths(store, embedder, [root], "wiki")
    retriever = Retriever(store, embedder)
    for page, heading, anchor in HEADINGS:
        hits = retriever.search(heading, "wiki", k=5)
        assert hits[0].path == page, (heading, [(h.path, h.heading_path) for h in hits])
        assert hits[0].anchor == (anchor or slugify(heading))
        assert hits[0].heading_path.endswith(heading)
