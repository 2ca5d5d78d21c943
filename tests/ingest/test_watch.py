"""`--watch`: edits, deletions, renames and folders moved in show up in search within 5 seconds."""

from __future__ import annotations

import threading
import time

import pytest

from indexes.retrieve import Retriever
from indexes.store import Store
from ingest.pipeline import ingest_paths
from ingest.prepare import IngestOptions
from ingest.watch import watch_folder

pytestmark = pytest.mark.slow
LIMIT_S = 5.0


def wait_for(check, what: str) -> float:
    started = time.monotonic()
    while time.monotonic() - started < LIMIT_S:
        if check():
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"{what}: not visible in search after {LIMIT_S} s")


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
    thread.start()
    try:
        assert ready.wait(30)
        timings = {}
        (root / "apples.md").write_text("# Apples\n\nZebracorns graze between the apple trees at dawn.\n")
        timings["edit"] = wait_for(lambda: paths_for("zebracorns grazing") == {"apples.md"}, "an edit")

        (root / "bananas.md").unlink()
        timings["delete"] = wait_for(lambda: "bananas.md" not in paths_for("bananas ripen warehouse"), "a deletion")

        (root / "apples.md").rename(root / "orchard.md")
        timings["rename"] = wait_for(lambda: paths_for("zebracorns grazing") == {"orchard.md"}, "a rename")

        moved = tmp_path / "outside"
        (moved / "sub").mkdir(parents=True)
        (moved / "sub" / "kiwis.md").write_text("# Kiwis\n\nKiwifruit vines need a trellis and shelter from wind.\n")
        moved.rename(root / "fruit")
        timings["folder moved in"] = wait_for(lambda: paths_for("kiwifruit trellis") == {"fruit/sub/kiwis.md"},
                                              "a folder moved in")
        (root / "fruit").rename(tmp_path / "gone")
        timings["folder moved out"] = wait_for(lambda: not paths_for("kiwifruit trellis"), "a folder moved out")
    finally:
        stop.set()
        thread.join(10)
        reader.close()
        store.close()
    assert all(t < LIMIT_S for t in timings.values()), timings
    assert sum(b.files_removed for b in batches) >= 3 and not any(b.failures for b in batches)
