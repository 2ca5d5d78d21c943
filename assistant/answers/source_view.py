"""How a retrieved chunk is shown to clients: the source dict of search results and answers."""

from __future__ import annotations

from indexes.retrieve import Hit


def hit_to_source(hit: Hit) -> dict:
    """A Hit without its full text, plus a URL the UI can open to read the chunk."""
    data = hit.to_dict()
    data.pop("text", None)
    data["url"] = f"/api/chunks/{hit.chunk_id}"
    return data
