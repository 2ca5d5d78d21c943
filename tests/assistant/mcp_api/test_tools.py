"""How an MCP tool names a place for an editor or agent (fast: no server, no store)."""

from __future__ import annotations

from assistant.mcp_api.tools import mcp_location
from indexes.location import Location


def test_lines_then_page_then_the_path_alone():
    assert mcp_location("src/app.py", Location(line_start=120, line_end=180, page=3)) == "src/app.py:L120-L180"
    assert mcp_location("src/app.py", Location(line_start=7)) == "src/app.py:L7-L7"
    assert mcp_location("manual.pdf", Location(page=2)) == "manual.pdf#page=2"
    assert mcp_location("notes.md", Location(heading_path="Intro", anchor="intro")) == "notes.md"


def test_line_one_and_page_one_count():
    assert mcp_location("a.txt", Location(line_start=1, line_end=1)) == "a.txt:L1-L1"
    assert mcp_location("a.pdf", Location(page=1)) == "a.pdf#page=1"
