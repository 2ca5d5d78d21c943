"""unstructured runs offline: no telemetry, its spaCy pipeline from an installed package."""

from __future__ import annotations

import os
import subprocess
import sys


def test_prepare_sets_the_environment_and_loads_spacy_from_the_package():
    from ingest import offline

    offline.prepare()
    assert os.environ["DO_NOT_TRACK"] == "1"
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    from unstructured.nlp import tokenize

    nlp = tokenize._get_nlp()
    assert nlp.meta["version"] == "3.8.0"
    assert {"tagger", "sentencizer"} <= set(nlp.pipe_names) and "parser" not in nlp.pipe_names  # rules find sentences
    assert tokenize.sent_tokenize("One sentence here. And another one.") == ["One sentence here.", "And another one."]
    assert [tag for _, tag in tokenize.pos_tag("The council approved the budget")][2] == "VBD"  # verbs still tagged


def test_a_fresh_process_parses_markdown_without_network(tmp_path):
    """In a clean process with the network unreachable and no env vars set, parsing still works."""
    doc = tmp_path / "a.md"
    doc.write_text("# Title\n\nThe council approved the new budget for the library on Monday.\n")
    code = (
        "import os, socket\n"
        "def refuse(*a, **k): raise OSError('network disabled in this test')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from pathlib import Path\n"
        "from ingest.parse import parse\n"
        "from ingest.sources import walk\n"
        f"[sf] = walk({str(doc)!r})\n"
        "p = parse(sf)\n"
        "assert os.environ['DO_NOT_TRACK'] == '1'\n"
        "print(p.title, [e.kind for e in p.elements])\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("DO_NOT_TRACK", "HF_HUB_OFFLINE", "SCARF_NO_ANALYTICS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "Title ['title', 'text']"
