"""Small real stores for tests: pages written straight into a collection with their real embeddings."""

from __future__ import annotations

from indexes.location import Location
from indexes.models import Collection
from indexes.store import NewChunk, SourceInfo, Store

# path -> (title, body); a body may be a list of texts, one chunk each
Pages = dict[str, tuple[str, "str | list[str]"]]


def write_pages(store: Store, embedder, collection: str, pages: Pages, *, headings: bool = False) -> Collection:
    """A collection holding these pages (Markdown), each chunk embedded by the real embedder. With
    `headings`, each chunk carries its page title as heading path and an anchor (`s0`, `s1`, ...)."""
    coll = store.ensure_collection(collection, embedder.name, embedder.dim)
    for path, (title, body) in pages.items():
        texts = [body] if isinstance(body, str) else list(body)
        chunks = [NewChunk(text=t, location=Location(heading_path=title, anchor=f"s{i}") if headings else Location())
                  for i, t in enumerate(texts)]
        store.write_document(coll, SourceInfo(path=path, title=title, kind="md"), chunks, embedder.embed(texts))
    return coll
