"""Wiki exports: where a page sits in its wiki, as the page's title ("Team Wiki › Onboarding › Laptops").

Notion exports Markdown pages and CSV databases, each page's children in a folder named like the page,
every name ending in the page's 32-hex id ("Onboarding 0123….md" beside the folder "Onboarding 0123…/"):
the names of the folders above a page, ids dropped, are its ancestors, and its first heading (else its
own name, id dropped) the page itself. Confluence exports HTML pages side by side in one folder: a page
lists its ancestors in its breadcrumbs (`<ol id="breadcrumbs">`, the space first) and names itself
"Space : Page" in its heading; a page without breadcrumbs finds its place in the nested list of pages
of the export's index.html, beside it.

The path, joined by " › " like heading paths, becomes the document's title, so a source shows where its
page lies, and the words of the path are searched (the title weighs most) and embedded with every
chunk. Other files keep the title their format gives them.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path, PurePosixPath

from indexes.records import real_path_inside
from ingest.elements import Parsed
from ingest.sources import SourceFile

SEP = " › "
NOTION_NAME = re.compile(r"^(.*\S)\s+[0-9a-f]{32}(?:_all)?$")  # "Tasks 0123…cdef" (a database's "…_all" too)
CONFLUENCE_MARK = re.compile(rb"id=[\"'](?:breadcrumbs|title-text|breadcrumb-section)[\"']")
MAX_INDEX_BYTES = 16 * 1024 * 1024  # an index.html larger than this is not read for page places


def notion_name(name: str) -> str | None:
    """A Notion export's file or folder name without its id; None when it carries none."""
    m = NOTION_NAME.match(name)
    return m.group(1) if m else None


def notion_path(rel_path: str, title: str) -> list[str] | None:
    """A Notion page's place: its folders' names, then its own title; None for a file Notion did not name."""
    parts = rel_path.split("/")
    stem = PurePosixPath(parts[-1]).stem
    own = notion_name(stem)
    if own is None:
        return None
    ancestors = [name for part in parts[:-1] if (name := notion_name(part))]
    page = title if title and title not in (stem, parts[-1]) and notion_name(title) is None else own
    return [*ancestors, page]


def _text(el) -> str:
    return " ".join((el.text_content() or "").split())


def _page_title(tree) -> tuple[str, str]:
    """(space, page) from the page's heading ("Team Wiki : Laptops"), else its <title>."""
    found = tree.xpath("//*[@id='title-text']") or tree.xpath("//title")
    heading = _text(found[0]) if found else ""
    space, sep, page = heading.partition(" : ")
    return (space.strip(), page.strip()) if sep else ("", heading)


def confluence_path(html: bytes, name: str, index: Path | None) -> list[str] | None:
    """A Confluence page's place: its breadcrumbs, then its own title; or, without breadcrumbs, its
    place in the index's list of pages. None for HTML that is not a Confluence export's page."""
    if not CONFLUENCE_MARK.search(html[:200_000]):
        return None
    import lxml.html

    try:
        tree = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return None
    space, page = _page_title(tree)
    crumbs = [_text(a) for a in tree.xpath("//*[@id='breadcrumbs']//a")]
    crumbs = [c for c in crumbs if c]
    if crumbs:
        return [*crumbs, page] if page else crumbs
    placed = index_places(str(index), os.stat(index).st_mtime_ns).get(name) if index is not None else None
    if placed:
        return list(placed)
    return [p for p in (space, page) if p] or None


@lru_cache(maxsize=8)
def index_places(index: str, _mtime: int) -> dict[str, tuple[str, ...]]:
    """Each page of a Confluence index.html's nested list by its file name -> its path (the space first).
    Cached per file and modification time: every page of an export asks the same index."""
    import lxml.html

    path = Path(index)
    if path.stat().st_size > MAX_INDEX_BYTES:
        return {}
    try:
        tree = lxml.html.fromstring(path.read_bytes())
    except (ValueError, lxml.etree.ParserError):
        return {}
    space = _page_title(tree)[0] or _page_title(tree)[1]
    places: dict[str, tuple[str, ...]] = {}
    for link in tree.xpath("//li/a[@href]"):
        href = link.get("href", "").split("#")[0]
        if not href or "/" in href or ":" in href:
            continue
        chain = [_text(a) for li in link.xpath("ancestor::li") for a in li.xpath("./a[1]")]  # outermost first
        places.setdefault(href, tuple(p for p in ([space] if space else []) + chain if p))
    return places


def sibling_index(source: SourceFile) -> Path | None:
    """The index.html beside a page, when there is one inside the page's root."""
    candidate = source.abs_path.parent / "index.html"
    if candidate == source.abs_path or not candidate.is_file():
        return None
    return real_path_inside(candidate, source.root)


def place_in_wiki(source: SourceFile, parsed: Parsed, data: bytes) -> None:
    """Give a wiki export's page its path as its title (and in `meta["wiki"]`); other files are left as
    they are."""
    if parsed.kind in ("md", "csv"):
        path, kind = notion_path(source.rel_path, parsed.title), "notion"
    elif parsed.kind == "html":
        path, kind = confluence_path(data, source.abs_path.name, sibling_index(source)), "confluence"
    else:
        return
    if path:
        parsed.title = SEP.join(path)
        parsed.meta["wiki"] = {"export": kind, "path": path}
