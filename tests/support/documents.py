"""A store for questions about one document: a short guide that fits a window whole, a long policy that
does not, a page of the same collection that retrieval would also find, and another collection's page."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from indexes.location import Location
from indexes.store import NewChunk, SourceInfo, Store

GUIDE = "guide/onboarding.md"
LONG = "policy/parking.md"
OTHER = "travel/booking.md"
SECRET = "vault/plans.md"
GUIDE_CHUNKS = [  # (heading path, text, first line, last line)
    ("Onboarding", "New staff receive a laptop on their first day from the IT help desk.", 1, 4),
    ("Onboarding", "Badges are printed at reception; bring an identity document.", 5, 8),
    ("Onboarding › Accounts", "Your email account is ready by nine on the first morning.", 9, 14),
    ("Onboarding › Accounts", "Change the first password within a week.", 15, 18),
]
PERMIT = "Parking permits are renewed every March at the security office on the ground floor."
TOPICS = ["bicycles", "visitors", "motorcycles", "loading bays", "electric chargers", "night shifts", "car pools",
          "disabled bays", "contractors", "snow clearing"]


def long_chunks(n: int = 80) -> list[tuple[str, str, int, int]]:
    """The long policy: n paragraphs of about 25 words, one of them the permit rule."""
    out = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        text = PERMIT if i == n // 2 else (
            f"Rule {i} covers {topic} in zone {i % 7}: requests go through form P-{100 + i}, reviewed weekly by the "
            f"facilities desk, and answered within {i % 5 + 2} working days with a written decision.")
        out.append((f"Parking policy › Rule {i}", text, 1 + 4 * i, 4 + 4 * i))
    return out


@dataclass
class DocumentIds:
    guide: int
    long: int
    other: int
    secret: int


def write_document(store: Store, embedder, collection: str, path: str, title: str,
                   chunks: list[tuple[str, str, int, int]]) -> int:
    """One Markdown document of these chunks, embedded by the real embedder; its id."""
    coll = store.get_collection(collection) or store.ensure_collection(collection, embedder.name, embedder.dim)
    records = [NewChunk(text=t, location=Location(heading_path=h, line_start=a, line_end=b)) for h, t, a, b in chunks]
    store.write_document(coll, SourceInfo(path=path, title=title, kind="md"), records,
                         embedder.embed([c.text for c in records]))
    doc = store.get_document(store.require_collection(collection), path)
    assert doc is not None
    return doc.id


def fill_documents(store: Store, embedder) -> DocumentIds:
    """`handbook` (the guide, the long policy and a travel page that also speaks of parking) and `secret`."""
    return DocumentIds(
        guide=write_document(store, embedder, "handbook", GUIDE, "Onboarding", GUIDE_CHUNKS),
        long=write_document(store, embedder, "handbook", LONG, "Parking policy", long_chunks()),
        other=write_document(store, embedder, "handbook", OTHER, "Booking travel", [
            ("Booking travel", "Parking at the airport is paid by the traveller; permits are not renewed there.", 1, 3)]),
        secret=write_document(store, embedder, "secret", SECRET, "Plans", [
            ("Plans", "The parking garage is sold in March; permits end then.", 1, 2)]),
    )


def documents_template(folder: Path, embedder) -> Path:
    """A data dir holding `fill_documents`'s store, written once (a module's tests copy it: `copy_store`)."""
    store = Store(folder)
    fill_documents(store, embedder)
    store.close()
    return folder


def copy_store(template: Path, data_dir: Path) -> Path:
    """A test's own copy of a template data dir."""
    shutil.copytree(template, data_dir)
    return data_dir
