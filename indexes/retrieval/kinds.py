"""A result list that shows the best of each kind of text: in a collection of source files and the pages
that document them, the best page and the best source file both stand among the first places.

A question about a codebase is answered by the page that explains a behaviour or by the code that
does it, and which of the two ranks first is a close call (`PathPrior`). When one kind fills the first
places, the other kind's best candidate is moved up to the last of them, so a reader (and the model)
sees both; the first place is never changed. A where-is-it-implemented question is left alone: it asks
for the symbol's file, not for a page about it (the retriever decides by `question_form`).
"""

from __future__ import annotations

from typing import Callable

from indexes.retrieval.code_query import ChunkMeta


def each_kind_by(order: list[int], meta: dict[int, ChunkMeta], is_source: Callable[[ChunkMeta], bool],
                 by: int) -> list[int]:
    """The ranking with the best chunk of a kind (source file or page; tests are neither) moved up to
    the `by`-th document when the first `by` documents hold none of that kind and a later chunk is of
    it. `by` < 2 leaves the order as it is."""
    if by < 2:
        return order
    docs: list[int] = []  # documents in order of their best chunk
    kinds_seen: set[str] = set()
    cut = len(order)  # index of the by-th document's first chunk
    for i, cid in enumerate(order):
        m = meta.get(cid)
        if m is None or m.document_id in docs:
            continue
        docs.append(m.document_id)
        if len(docs) == by:
            cut = i
            break
        kinds_seen.add(_kind(m, is_source))
    if len(docs) < by:
        return order
    kinds_seen.add(_kind(meta[order[cut]], is_source))
    for wanted in ("source", "page"):
        if wanted in kinds_seen:
            continue
        later = next((i for i in range(cut + 1, len(order))
                      if order[i] in meta and _kind(meta[order[i]], is_source) == wanted), None)
        if later is not None:
            return order[:cut] + [order[later]] + order[cut:later] + order[later + 1:]
    return order


def _kind(m: ChunkMeta, is_source: Callable[[ChunkMeta], bool]) -> str:
    if is_source(m):
        return "source"
    return "test" if m.line_cited else "page"
