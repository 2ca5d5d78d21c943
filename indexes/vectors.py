"""FAISS vector indexes, one per collection, derived from the embeddings stored in SQLite.

A saved index file is named after the store generation it reflects (`<collection>.g<generation>.faiss`),
written to a temporary file, fsynced and renamed, so a reader finds either a complete file for the
current generation or none, in which case it rebuilds from SQLite without re-embedding anything.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable

import faiss
import numpy as np


class VectorIndex:
    """Inner-product search over normalized vectors keyed by chunk id (IndexIDMap2 over a flat index)."""

    def __init__(self, dim: int, index: faiss.Index | None = None, generation: int = -1) -> None:
        self.dim = dim
        self.index = index if index is not None else faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self.generation = generation

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        if len(ids):
            self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids, dtype=np.int64))

    def remove(self, ids: np.ndarray | list[int]) -> None:
        if len(ids):
            self.index.remove_ids(np.asarray(ids, dtype=np.int64))

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The k nearest chunk ids with their cosine similarity, best first."""
        if len(self) == 0 or k <= 0:
            return []
        scores, ids = self.index.search(np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32), min(k, len(self)))
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i != -1]

    def save(self, path: Path) -> None:
        """Write atomically: a temporary file, fsync, rename, fsync of the directory."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        faiss.write_index(self.index, str(tmp))
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    @classmethod
    def load(cls, path: Path, generation: int) -> "VectorIndex":
        index = faiss.read_index(str(path))
        return cls(index.d, index, generation)


EmbeddingLoader = Callable[[int], tuple[np.ndarray, np.ndarray]]  # collection id -> (ids, vectors)


class VectorIndexes:
    """The per-collection indexes of one data directory, loaded lazily and kept in step with the store."""

    def __init__(self, directory: Path, load_embeddings: EmbeddingLoader) -> None:
        self.directory = directory
        self._load_embeddings = load_embeddings
        self._indexes: dict[int, VectorIndex] = {}
        self._lock = threading.RLock()
        self.rebuilds = 0  # how many times an index was rebuilt from SQLite (observable in tests)

    def path_for(self, collection_id: int, generation: int) -> Path:
        return self.directory / f"{collection_id}.g{generation}.faiss"

    def get(self, collection_id: int, generation: int, dim: int) -> VectorIndex:
        """The index for this collection at this store generation: cached, loaded or rebuilt."""
        with self._lock:
            cached = self._indexes.get(collection_id)
            if cached is not None and cached.generation == generation:
                return cached
            path = self.path_for(collection_id, generation)
            if path.exists():
                try:
                    index = VectorIndex.load(path, generation)
                except RuntimeError:
                    index = self._rebuild(collection_id, generation, dim)
            else:
                index = self._rebuild(collection_id, generation, dim)
            self._indexes[collection_id] = index
            return index

    def _rebuild(self, collection_id: int, generation: int, dim: int) -> VectorIndex:
        ids, vectors = self._load_embeddings(collection_id)
        index = VectorIndex(vectors.shape[1] if len(ids) else dim, generation=generation)
        index.add(ids, vectors)
        self.rebuilds += 1
        return index

    def apply(
        self,
        collection_id: int,
        dim: int,
        old_generation: int,
        new_generation: int,
        removed: list[int],
        added_ids: np.ndarray,
        added_vectors: np.ndarray,
    ) -> None:
        """Bring the cached index from old_generation to new_generation after one committed write.

        When the cache was not at old_generation (another writer, or nothing loaded yet) it is
        dropped and the next `get` loads or rebuilds it.
        """
        with self._lock:
            index = self._indexes.get(collection_id)
            if index is None or index.generation != old_generation:
                self._indexes.pop(collection_id, None)
                return
            index.remove(removed)
            index.add(added_ids, added_vectors)
            index.generation = new_generation

    def save(self, collection_id: int) -> None:
        """Persist the cached index under its generation and remove older files of the collection."""
        with self._lock:
            index = self._indexes.get(collection_id)
            if index is None:
                return
            path = self.path_for(collection_id, index.generation)
            if not path.exists():
                index.save(path)
            for old in self.directory.glob(f"{collection_id}.g*.faiss"):
                if old != path:
                    old.unlink(missing_ok=True)

    def drop(self, collection_id: int) -> None:
        with self._lock:
            self._indexes.pop(collection_id, None)
            for old in self.directory.glob(f"{collection_id}.g*.faiss*"):
                old.unlink(missing_ok=True)
