"""Where a name the question gives is defined: a question that names `render_template` or `SECRET_KEY`
sees the chunk that defines it (the function's code, the reference entry headed by the key) among its
first documents, beside the pages that only use the name.

A definition is a chunk whose symbol ends in the name (`DispatchingJinjaLoader`, `Flask.run` for
`app.run()`) or whose last heading is the name (a reference page's entry, `.. py:data:: SECRET_KEY`).
They are found through the full-text index's headings column, which holds both (the best matches first,
LOOKUP_ROWS of them), and need not be among the question's candidates: a page that names a function
often outranks the function's own code, whose text shares few of the question's words. The definition
goes to the last of the first places, never the first: at the first place the derived questions' hit@1
fell (docs/configuration.md, `definitions_by`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexes.db import read_rows
from indexes.lexical.fts5 import identifier_words
from indexes.retrieval.hits import HEADING_SEP, LINE_CITED, ChunkMeta
from indexes.retrieval.question_form import identifiers

if TYPE_CHECKING:
    from indexes.store import Store

# Heading matches read per name: a common name is in many headings ("request": 724 of the seven packages'
# 12,446 chunks; at 200 rows 23 of its 49 definitions were found, at 1000 all, in 2-6 ms).
LOOKUP_ROWS = 1000


def heading_name(heading_path: str) -> str:
    """The last heading without its signature: `url_for` of "API › url_for(endpoint, **values)"."""
    return heading_path.rsplit(HEADING_SEP, 1)[-1].strip().split("(", 1)[0].strip()


def defines(symbol: str, heading_path: str, name: str) -> bool:
    """Whether a chunk with this symbol and heading path defines the name (compared without case)."""
    name = name.lower()
    if symbol and symbol.rsplit(".", 1)[-1].lower() == name:
        return True
    last = heading_name(heading_path)
    return bool(last) and last.rsplit(".", 1)[-1].lower() == name


def definition_ids(store: Store, collection_ids: list[int], names: list[str]) -> list[int]:
    """The chunks of these collections that define one of the names, in chunk order (the store's
    lexical index finds the chunks whose headings hold the name; their rows say which define it)."""
    if not names or not collection_ids:
        return []
    found: set[int] = set()
    for name in names:
        ids = store.lexical.heading_matches(collection_ids, name, LOOKUP_ROWS)
        if ids:
            rows = read_rows(store.engine, f"SELECT id, symbol, heading_path FROM chunk WHERE id IN ({','.join(map(str, ids))})")
            found.update(int(r[0]) for r in rows if defines(r[1] or "", r[2] or "", name))
    return sorted(found)


# Heading matches read per word of a how-do-I question when looking for the setting it is about.
ENTRY_ROWS = 200


def entry_name(heading_path: str) -> str:
    """The code name a reference entry is headed by (`TRUSTED_HOSTS`, `url_for` of `url_for(endpoint)`), or ""
    when the last heading is a title in words."""
    last = heading_name(heading_path)
    return last if last and identifiers(last) == [last] else ""


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def named_entries(store: Store, collection_ids: list[int], words: list[str]) -> list[int]:
    """Reference entries of these collections whose name holds one of the words (`TRUSTED_HOSTS` for
    "host", `SESSION_COOKIE_NAME` for "cookie"): a page's section headed by a code name, which is how
    settings and other described values are documented. A how-do-I question ("make Flask reject requests
    whose Host header …") asks what to set, in words the entry's name is made of, while its description
    says it in others (`Validate Request.host against these trusted values`)."""
    if not words or not collection_ids:
        return []
    wanted = {_stem(w.lower()) for w in words}
    ids = {i for word in words for i in store.lexical.heading_matches(collection_ids, word, ENTRY_ROWS)}
    if not ids:
        return []
    rows = read_rows(store.engine, "SELECT c.id, c.heading_path FROM chunk c JOIN document d ON d.id = c.document_id "
                     f"WHERE c.id IN ({','.join(map(str, sorted(ids)))}) AND NOT ({LINE_CITED})")
    found: set[int] = set()
    for cid, heading_path in rows:
        name = entry_name(heading_path or "")
        if name and wanted & {_stem(w) for w in identifier_words(name).split()}:
            found.add(int(cid))
    return sorted(found)


def definition_by(order: list[int], meta: dict[int, ChunkMeta], definitions: list[int], by: int) -> list[int]:
    """The ranking with the first of `definitions` (best first) moved up to the `by`-th document when
    none of the first `by` documents holds one; `by` < 1 or no definition leaves it as it is."""
    if by < 1 or not definitions:
        return order
    homes = {meta[d].document_id for d in definitions if d in meta}
    docs: list[int] = []
    cut = len(order)  # index of the by-th document's first chunk
    for i, cid in enumerate(order):
        m = meta.get(cid)
        if m is None or m.document_id in docs:
            continue
        if m.document_id in homes:
            return order  # a defining file already stands among the first documents
        docs.append(m.document_id)
        if len(docs) == by:
            cut = i
            break
    best = definitions[0]
    if best not in meta:
        return order
    rest = [c for c in order if c != best]
    at = min(cut, len(rest))
    return rest[:at] + [best] + rest[at:]

