"""`--watch`: edits, deletions, renames and folders moved in and out show up in search; how long each
took is printed (a few seconds on an idle machine; the deadline leaves room for a loaded one)."""

from __future__ import annotations

import threading
import time

import pytest

from indexes.retrieval.retriever import Retriever
from indexes.store import Store
from ingest.pipeline import ingest_paths
from ingest.prepare import IngestOptions
from ingest.watch import watch_folder
from tests.support.wait import wait_until

pytestmark = pytest.mark.slow
DEADLINE_S = 60.0


def test_watch_keeps_search_in_sync(tmp_path, embedder):
    root, data = tmp_path / "wiki", tmp_path / "data"
    root.mkdir()
    (root / "apples.md").write_text("# Apples\n\nThe orchard grows apples on the southern slope.\n")
    (root / "bananas.md").write_text("# Bananas\n\nBananas ripen in the warehouse over one week.\n")
    store = Store(data)
    ingest_paths(store, embedder, [root], "wiki")
    reader = Store(data)  # another process's view of the store, as the server has
    retriever = Retriever(reader, embedder)

    def paths_for(query: str) -> set[str]:
        return {h.path for h in retriever.search(query, "wiki", k=5) if query.split()[0].lower() in h.text.lower()}

    stop, ready = threading.Event(), threading.Event()
    batches = []
    thread = threading.Thread(target=watch_folder, args=(store, embedder, root, "wiki"), daemon=True,
                              kwargs=dict(options=IngestOptions(), debounce_ms=200, on_batch=batches.append,
                                          stop=stop, ready=ready))
    timings = {}

    def shows(change: str, query: str, accept) -> None:
        started = time.monotonic()
        wait_until(lambda: paths_for(query), accept=accept, timeout=DEADLINE_S, what=f"{change} showing in search")
        timings[change] = round(time.monotonic() - started, 2)

    thread.start()
    try:
        assert ready.wait(30)
        (root / "apples.md").write_text("# Apples\n\nZebracorns graze between the apple trees at dawn.\n")
        shows("an edit", "zebracorns grazing", lambda paths: paths == {"apples.md"})

        (root / "bananas.md").unlink()
        shows("a deletion", "bananas ripen warehouse", lambda paths: "bananas.md" not in paths)

        (root / "apples.md").rename(root / "orchard.md")
        shows("a rename", "zebracorns grazing", lambda paths: paths == {"orchard.md"})

        moved = tmp_path / "outside"
        (moved / "sub").mkdir(parents=True)
        (moved / "sub" / "kiwis.md").write_text("# Kiwis\n\nKiwifruit vines need a trellis and shelter from wind.\n")
        moved.rename(root / "fruit")
        shows("a folder moved in", "kiwifruit trellis", lambda paths: paths == {"fruit/sub/kiwis.md"})
        (root / "fruit").rename(tmp_path / "gone")
        shows("a folder moved out", "kiwifruit trellis", lambda paths: not paths)
    finally:
        stop.set()
        thread.join(10)
        reader.close()
        store.close()
    print(f"\nseconds until search showed each change: {timings}")
    assert sum(b.files_removed for b in batches) >= 3 and not any(b.failures for b in batches)
