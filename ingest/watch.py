"""`assistant ingest --watch`: keep a collection in sync with a folder as files change.

watchfiles (inotify on Linux) reports changes; they are gathered until the folder has been quiet for
the debounce time, then applied as one batch: changed and added files are re-ingested, deleted ones
removed, a renamed file is a removal plus an addition, and a folder added or removed (moved in or
out) stands for every file under it. Only the files named in a batch are read.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable

from indexes.store import Store
from ingest.chunking import EmbedderLike
from ingest.pipeline import IngestReport, sync_changes
from ingest.prepare import IngestOptions
from ingest.sources import is_hidden, resolve_root


def relative(path: str, base: Path) -> str | None:
    """path relative to base ('/'-separated), or None when it is outside it or hidden."""
    try:
        rel = Path(path).relative_to(base).as_posix()
    except ValueError:
        return None
    if rel in ("", ".") or any(is_hidden(part) for part in rel.split("/")):
        return None
    return rel


def batch_of(changes: set[tuple[int, str]], base: Path) -> tuple[set[str], set[str]]:
    """watchfiles changes as (changed, removed) relative paths; folders stand for what they hold."""
    from watchfiles import Change

    changed: set[str] = set()
    removed: set[str] = set()
    for change, path in changes:
        rel = relative(path, base)
        if rel is None:
            continue
        if change == Change.deleted or not os.path.lexists(path):
            removed.add(rel)
            changed.discard(rel)
        elif os.path.isdir(path) and not os.path.islink(path):
            for folder, dirs, files in os.walk(path):
                dirs[:] = [d for d in dirs if not is_hidden(d)]
                for name in files:
                    inner = relative(os.path.join(folder, name), base)
                    if inner is not None:
                        changed.add(inner)
        else:
            changed.add(rel)
            removed.discard(rel)
    return changed, removed


def watch_folder(
    store: Store,
    embedder: EmbedderLike,
    root: str | os.PathLike[str],
    collection: str,
    *,
    options: IngestOptions,
    debounce_ms: int,
    on_batch: Callable[[IngestReport], None],
    stop: threading.Event,
    ready: threading.Event | None = None,
) -> None:
    """Apply each quiet batch of changes under root to the collection until stop is set."""
    from watchfiles import watch

    base = resolve_root(root)
    step = max(debounce_ms, 10)
    watcher = watch(base, step=step, debounce=max(4 * step, 1600), stop_event=stop, recursive=True,
                    ignore_permission_denied=True, yield_on_timeout=True, rust_timeout=500)
    for changes in watcher:
        if ready is not None:
            ready.set()
        if not changes:
            continue
        changed, removed = batch_of(changes, base)
        if changed or removed:
            on_batch(sync_changes(store, embedder, base, collection, sorted(changed), sorted(removed), options=options))
